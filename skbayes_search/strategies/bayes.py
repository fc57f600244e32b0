"""BayesSearchCV: GP-EI-MCMC Bayesian optimisation (Snoek, Larochelle, Adams 2012)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import BaseBayesSearchCV, shared_params
from .._response_surface import informative_subset
from .._trial import SearchContext, Trial
from .._validation import warn_if_space_small
from ..acquisition import make_acquisition
from ..gp import GPSurrogate
from ..gp.kernels import Kernel
from ..optimize import QUICK, propose_batch
from ..space._unseen import drop_seen

# best observed points whose neighbourhoods the acquisition search also scans
_N_SEEDS = 5
# scores this close (relative) tie: the same predictions on the same folds
# give the same mean score up to rounding
_TIE = 1e-9


class BayesSearchCV(BaseBayesSearchCV):
    """Bayesian optimisation over hyperparameters with cross-validation.

    A drop-in for :class:`~sklearn.model_selection.GridSearchCV` and
    :class:`~sklearn.model_selection.RandomizedSearchCV`: after a scrambled
    Sobol initial design, every further configuration is the maximiser of an
    acquisition function under a Gaussian-process model of the validation
    score (Matérn 5/2 kernel with one length scale per input, constant mean,
    Gaussian noise). As in Snoek, Larochelle and Adams (2012) the GP's
    hyperparameters are integrated out by slice sampling and the acquisition
    is averaged over the samples; ``acquisition="ei_per_second"`` divides
    expected improvement by the predicted fit time (a second GP on log
    seconds); batches of ``n_points`` proposals for parallel workers come
    from Monte Carlo fantasies of the pending outcomes.

    Every trial is a real cross-validated ``fit`` of ``estimator`` on all
    training rows of each split.

    Parameters
    ----------
    estimator : estimator object
        Object implementing ``fit``; cloned for every fit.
    search_spaces : dict or list of dict
        Parameter names mapped to :class:`~skbayes_search.space.Real`,
        :class:`~skbayes_search.space.Integer`,
        :class:`~skbayes_search.space.Categorical`, lists of values (a
        ``GridSearchCV`` ``param_grid`` works unchanged), scipy.stats frozen
        distributions (a ``RandomizedSearchCV`` ``param_distributions`` works
        unchanged) or ``(low, high[, prior])`` tuples. A list of dicts is a
        conditional space: each trial uses one of the dicts.
    n_iter : int, default=50
        Number of trials (configurations evaluated).
    max_time : float, default=None
        Wall-clock budget in seconds for the whole search, surrogate overhead
        included, and a promise: at ``max_time`` the running trials are
        stopped (and not recorded) and the search ends; ``None`` means no
        time limit. The final refit is not included.
    trial_timeout : float, default=None
        Seconds one trial may run; a trial past it is stopped and recorded as
        failed with the reason (user guide, "Budgets").
    asynchronous : bool, default=True
        Propose whenever a worker would idle, conditioned on the running
        trials; ``False``: synchronous batches, whose trials do not depend on
        which fit finishes first (user guide, "How a search runs").
    n_initial_points : int, default=5
        Trials of the Sobol initial design before the GP proposes.
    acquisition : {"ei", "ei_per_second", "pi", "lcb"}, default="ei"
        Acquisition function, integrated over GP hyperparameter samples.
        ``"ei_per_second"`` models measured fit times, so its trials depend on
        the clock (the machine and its load), even with a fixed
        ``random_state``.
    kappa : float, default=2.0
        Exploration weight of ``acquisition="lcb"`` (``mean - kappa * std`` of
        the loss); larger explores more. Ignored by the other acquisitions.
    hyperparameter_sampling : {"mcmc", "map"}, default="mcmc"
        ``"mcmc"`` integrates the GP hyperparameters out by slice sampling;
        ``"map"`` uses a point estimate (cheaper, less robust early on).
    n_points : int, default=None
        Proposals per batch. ``None`` keeps every parallel worker busy:
        ``ceil(effective n_jobs / n_splits)`` trials per batch.
    scoring : str, callable, list, tuple or dict, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    n_jobs : int, default=None
        Number of jobs running folds in parallel (through joblib, so a
        ``joblib.parallel_backend("dask")`` context moves them to a cluster).
    refit : bool, str or callable, default=True
        As in :class:`~sklearn.model_selection.GridSearchCV`; with several
        metrics the search optimises the ``refit`` metric (the first metric
        when ``refit`` is a callable).
    cv : int, cross-validation generator or iterable, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`. The splits are
        drawn once and reused by every trial.
    verbose : int, default=0
        ``1`` shows a progress bar when tqdm is installed (the ``progress``
        extra) and prints one line per trial otherwise; ``> 1`` prints one
        line per trial and scikit-learn's line per fit.
    pre_dispatch : int or str, default="2*n_jobs"
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial design, the MCMC chains and the acquisition search.
        Results do not depend on ``n_jobs``.
    error_score : "raise" or float, default=np.nan
        Score recorded for a failed fit. A failure never stops the search:
        the GP sees the worst observed score there and one warning counts
        the failed trials. A failed trial ranks with the worst and is never
        the answer, whatever score it records.
    return_train_score : bool, default=False
        Whether ``cv_results_`` includes training scores.
    store : TrialStore, str or path-like, default=None
        A :class:`~skbayes_search.TrialStore` (or the path of one) where every
        trial is committed the moment it finishes.
    run_name : str, default=None
        Name of the run in ``store``. If the run already has trials, ``fit``
        reads them back and continues until the budget is spent, evaluating
        no finished trial again (resume after a crash or a kill). ``None``
        starts a fresh run with a generated name (``run_name_``).

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        scikit-learn's keys (as in ``RandomizedSearchCV``) plus
        ``n_resources`` (training rows per fit), ``resource_fraction``,
        ``iter`` (index of the batch that proposed the trial),
        ``elapsed_time`` (seconds since ``fit`` started when the trial
        finished), ``fit_failed`` (whether a fit of the trial failed: its
        scores are then ``error_score``, and it ranks with the worst) and
        ``acquisition_value`` (nan for the initial design).
        Loads directly into a :class:`pandas.DataFrame`.
    best_estimator_ : estimator
        Refitted on all data with ``best_params_`` (when ``refit``).
    best_score_ : float
        Mean cross-validated score of ``best_estimator_``.
    best_params_ : dict
        Parameters of the best trial.
    best_index_ : int
        Row of ``cv_results_`` of the best trial.
    scorer_ : function or dict
        Scorer(s) used.
    n_splits_ : int
        Number of CV splits.
    refit_time_ : float
        Seconds to refit the best estimator.
    multimetric_ : bool
        Whether several metrics were evaluated.
    classes_ : ndarray
        Class labels (classifiers, when refitted).
    n_features_in_ : int
        Number of features seen during ``fit`` (when refitted).
    feature_names_in_ : ndarray of str
        Feature names seen during ``fit`` (when refitted and ``X`` has them).
    run_name_ : str
        Name of the run in ``store`` (only with a store).

    See Also
    --------
    MultiStageBayesSearchCV : BO on growing subsets of the training data.
    FabolasSearchCV : subset size as a continuous input of the model.

    References
    ----------
    J. Snoek, H. Larochelle, R. P. Adams. Practical Bayesian Optimization of
    Machine Learning Algorithms. NIPS 2012.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC
    >>> from skbayes_search import BayesSearchCV, Real
    >>> X, y = load_iris(return_X_y=True)
    >>> search = BayesSearchCV(
    ...     SVC(),
    ...     {"C": Real(1e-2, 1e2, prior="log-uniform"),
    ...      "gamma": Real(1e-3, 1e1, prior="log-uniform")},
    ...     n_iter=8, n_initial_points=4, cv=3, random_state=0,
    ... ).fit(X, y)
    >>> len(search.cv_results_["params"])
    8
    >>> sorted(search.best_params_)
    ['C', 'gamma']
    """

    _parameter_constraints: dict = {
        **BaseBayesSearchCV._parameter_constraints,
        "n_initial_points": [Interval(numbers.Integral, 1, None, closed="left")],
        "acquisition": [StrOptions({"ei", "ei_per_second", "pi", "lcb"})],
        "kappa": [Interval(numbers.Real, 0, None, closed="left")],
        "hyperparameter_sampling": [StrOptions({"mcmc", "map"})],
        "n_points": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        estimator: Any,
        search_spaces: dict | list,
        *,
        n_iter: int = 50,
        max_time: float | None = None,
        trial_timeout: float | None = None,
        asynchronous: bool = True,
        n_initial_points: int = 5,
        acquisition: str = "ei",
        kappa: float = 2.0,
        hyperparameter_sampling: str = "mcmc",
        n_points: int | None = None,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: bool | str | Any = True,
        cv: Any = None,
        verbose: int = 0,
        pre_dispatch: int | str = "2*n_jobs",
        random_state: Any = None,
        error_score: str | float = np.nan,
        return_train_score: bool = False,
        store: Any = None,
        run_name: str | None = None,
    ) -> None:
        super().__init__(**shared_params(locals()))
        self.n_initial_points = n_initial_points
        self.acquisition = acquisition
        self.kappa = kappa
        self.hyperparameter_sampling = hyperparameter_sampling
        self.n_points = n_points

    def _check_strategy_params(self, ctx: SearchContext) -> None:
        warn_if_space_small(
            ctx.space.cardinality,
            self.n_iter,
            "the search stops once every one has been evaluated.",
        )

    def _init_search(self, ctx: SearchContext) -> None:
        self._proposer = BayesProposer(
            acquisition=self.acquisition,
            kappa=self.kappa,
            hyperparameter_sampling=self.hyperparameter_sampling,
            n_initial_points=self.n_initial_points,
            seed=ctx.seed,
        )

    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        iteration = ctx.trials[-1].iter + 1 if ctx.trials else 0
        return self._proposer.ask(
            ctx,
            ctx.trials,
            n_slots,
            fraction=1.0,
            iteration=iteration,
            pending=ctx.pending,
        )


class BayesProposer:
    """GP-EI proposals over one set of trials: the engine of every BO stage.

    Holds the surrogate(s) so that the MCMC chain continues from one
    proposal to the next. Strategies that run plain BO on some subset of
    their trials (a stage, a fixed fraction) reuse it.

    Parameters
    ----------
    acquisition : str
        One of ``"ei"``, ``"ei_per_second"``, ``"pi"``, ``"lcb"``.
    hyperparameter_sampling : str
        ``"mcmc"`` or ``"map"``.
    n_initial_points : int
        Sobol points before the GP proposes.
    seed : int
        Seeds the initial design and the surrogates.
    kappa : float, default=2.0
        Exploration weight of ``"lcb"``.
    mcmc_until : int or None, default=None
        With ``"mcmc"``: beyond this many observations the GP's
        hyperparameters are a MAP estimate instead, re-optimised whenever the
        observations have grown by a quarter. Sampling them matters while
        few observations leave them uncertain; with many it costs a proposal
        about ten times as much for a posterior that has narrowed (the
        acquisition is then maximised with fewer candidates and one polish,
        as where trials are cheap enough to number in the hundreds). None:
        sampled throughout.
    kernel : Kernel or None, default=None
        The GP's kernel (each surrogate gets its own copy); None: a Matern
        5/2 kernel with the paper's flat prior on its log length scales.
    explore_ties : bool, default=True
        Propose at random, not by the GP, while more than half of the
        successful trials share the best score (a plateau, such as every
        setting predicting the majority class): a GP of tied scores has a
        flat mean, and its EI, driven by the posterior variance alone, sends
        trials to the corners of the space (on SVC's score surfaces, the
        plateau itself).
        False: the GP proposes from two successes, whatever their scores.
    max_observations : int or None, default=None
        Past this many trials the GPs are fitted on this many of them: the
        best half and a spread of the rest
        (:func:`~skbayes_search._response_surface.informative_subset`); every
        trial is still excluded from the proposals. A proposal's cost grows with
        the GP's observations (cubically in its fit), and where trials are
        cheap enough to number in the hundreds it would grow past a trial's.
        None: every trial.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._trial import SearchContext
    >>> from skbayes_search.space import Real, SearchSpace
    >>> from skbayes_search.strategies.bayes import BayesProposer
    >>> ctx = SearchContext(
    ...     space=SearchSpace({"C": Real(0.1, 10.0)}), rng=np.random.default_rng(0),
    ...     seed=0, n_train=100, n_classes=2, n_splits=3, budget=10,
    ...     max_time=None, n_jobs_effective=1, start_time=0.0,
    ... )
    >>> proposer = BayesProposer(
    ...     acquisition="ei", hyperparameter_sampling="map", n_initial_points=3, seed=0
    ... )
    >>> trials = proposer.ask(ctx, ctx.trials, 2, fraction=1.0, iteration=0)
    >>> [(sorted(t.params), t.fraction) for t in trials]  # the first design points
    [(['C'], 1.0), (['C'], 1.0)]
    """

    def __init__(
        self,
        *,
        acquisition: str,
        hyperparameter_sampling: str,
        n_initial_points: int,
        seed: int,
        kappa: float = 2.0,
        mcmc_until: int | None = None,
        kernel: Kernel | None = None,
        explore_ties: bool = True,
        max_observations: int | None = None,
    ) -> None:
        self.acquisition = acquisition
        self.max_observations = max_observations
        self.explore_ties = explore_ties
        self.kernel = kernel
        self.kappa = kappa
        self.hyperparameter_sampling = hyperparameter_sampling
        self.n_initial_points = n_initial_points
        self.seed = seed
        self.mcmc_until = mcmc_until
        self.surrogate = GPSurrogate(
            kernel, hyperparameter_sampling=hyperparameter_sampling, random_state=seed
        )
        self._map_surrogates: dict[str, GPSurrogate] = {}
        self.cost_surrogate = (
            GPSurrogate(
                hyperparameter_sampling=hyperparameter_sampling, random_state=seed + 1
            )
            if acquisition == "ei_per_second"
            else None
        )
        self._design: np.ndarray | None = None

    def initial_design(self, ctx: SearchContext) -> np.ndarray:
        """The Sobol design, fixed by the seed so a resumed search continues it.

        Duplicates (possible after snapping in small discrete spaces) are
        dropped, so the design may be shorter than ``n_initial_points``.
        """
        if self._design is None:
            rng = np.random.default_rng(self.seed)
            self._design = drop_seen(ctx.space.sample(self.n_initial_points, rng))
        return self._design

    def ask(
        self,
        ctx: SearchContext,
        trials: list,
        n_slots: int,
        *,
        fraction: float,
        iteration: int,
        pending: list[Trial] = (),
    ) -> list[Trial]:
        """Propose ``n_slots`` trials at ``fraction`` given ``trials`` so far.

        Configurations already among ``trials`` or running (``pending``, on
        which the proposals are conditioned) are never proposed again; an
        empty list means a finite space is exhausted. ``iteration`` is
        recorded as the trials' ``iter``.
        """
        X = ctx.X(trials)
        P = ctx.space.to_unit([t.params for t in pending])
        seen = np.vstack([X, P])
        n_done = len(seen)
        n_left = ctx.space.cardinality - len(drop_seen(seen))
        if n_left <= 0:
            return []
        n_slots = int(min(n_slots, n_left))
        modelable = bool(trials) and self._modelable(ctx.scores(trials))
        design = self.initial_design(ctx)
        # The design points neither evaluated nor running, not the next ones by
        # count: trials finish in any order, so a search stopped in the middle
        # of the design and resumed must run exactly the points that did not
        # finish.
        U = drop_seen(design, seen, n_slots) if n_done < len(design) else design[:0]
        if n_done >= len(design) and not modelable:
            # Too few successes for a GP, or a plateau: keep exploring.
            U = self._explore(ctx, n_slots, seen)
        if len(U) or not modelable:
            return [
                Trial(p, fraction, iter=iteration)
                for p in ctx.space.from_unit(U[:n_slots])
            ]
        y = ctx.losses(trials)
        # the best trial is always kept, so y_best and the seeds are unchanged
        kept = informative_subset(X, y, self.max_observations)
        surrogate = self._surrogate_for(len(kept))
        surrogate.fit(X[kept], y[kept])
        cost_surrogate = None
        if self.cost_surrogate is not None:
            cost_surrogate = self._surrogate_for(len(kept), cost=True)
            cost_surrogate.fit(X[kept], np.log(ctx.costs(trials))[kept])
        y_best = float(np.min(y))

        def acquisition_for(pending: np.ndarray | None) -> Any:
            return make_acquisition(
                surrogate,
                self.acquisition,
                y_best=y_best,
                cost_surrogate=cost_surrogate,
                X_pending=pending,
                kappa=self.kappa,
                rng=ctx.rng,
            )

        U, values = propose_batch(
            acquisition_for,
            n_slots,
            ctx.space.n_dims,
            rng=ctx.rng,
            snap=ctx.space.snap,
            seeds=X[np.argsort(y, kind="stable")[:_N_SEEDS]],
            exclude=X,
            pending=P if len(P) else None,
            **({} if surrogate is self.surrogate else QUICK),
        )
        return [
            Trial(p, fraction, iter=iteration, extras={"acquisition_value": float(v)})
            for p, v in zip(ctx.space.from_unit(U), values)
        ]

    def _explore(self, ctx: SearchContext, n: int, seen: np.ndarray) -> np.ndarray:
        """Up to ``n`` unseen points where the GP has nothing to rank by."""
        return ctx.space.sample_unseen(n, ctx.rng, seen)

    def _modelable(self, scores: np.ndarray) -> bool:
        """Whether a GP has scores to rank by: two successes at least, not
        more than half of them tied at the best (with ``explore_ties``)."""
        ok = scores[np.isfinite(scores)]
        if len(ok) < 2 or not self.explore_ties:
            return len(ok) >= 2
        best = ok.max()
        tied = np.abs(ok - best) <= _TIE * max(1.0, abs(best))
        return 2 * int(tied.sum()) <= len(ok)

    def _surrogate_for(self, n_observations: int, cost: bool = False) -> GPSurrogate:
        """The sampled GP (of the loss, or with ``cost`` of the log fit
        time), or past ``mcmc_until`` observations its MAP counterpart."""
        sampled = self.cost_surrogate if cost else self.surrogate
        if (
            self.mcmc_until is None
            or self.hyperparameter_sampling != "mcmc"
            or n_observations <= self.mcmc_until
        ):
            return sampled
        key = "cost" if cost else "loss"
        if key not in self._map_surrogates:
            self._map_surrogates[key] = GPSurrogate(
                None if cost else self.kernel,
                hyperparameter_sampling="map",
                random_state=self.seed + int(cost),
                reoptimize_growth=0.25,
            )
        return self._map_surrogates[key]
