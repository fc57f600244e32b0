"""MultiStageBayesSearchCV: Bayesian optimisation in stages on growing subsets
of the training data (Wang et al., EMNLP 2015)."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import BaseBayesSearchCV, shared_params
from .._evaluate import subset_size
from .._failures import NO_FULL_SUCCESS, warn_answer_on_subset
from .._trial import SearchContext, Trial, TrialRecord
from .._validation import (
    COUNT,
    check_fractions,
    check_stored_rows,
    on_fractions,
    warn_if_space_small,
)
from .bayes import BayesProposer


class MultiStageBayesSearchCV(BaseBayesSearchCV):
    """Bayesian optimisation in stages on growing subsets of the training data.

    The search runs ``S = len(stages)`` stages. Stage ``s`` fits every
    configuration on the fraction ``stages[s]`` of each split's training rows
    (stratified, nested subsets: a larger stage's subset contains every row
    of a smaller one) and scores it on the split's full validation rows:

    1. Stage 1 is standard Bayesian optimisation (the GP-EI engine of
       :class:`BayesSearchCV`): ``n_initial_points`` Sobol points, then
       ``n_iter[0] - n_initial_points`` proposals of the acquisition.
    2. Every later stage first evaluates, on its own fraction, the ``top_k``
       configurations of the previous stage (ranked by that stage's
       validation score; failed trials rank last), then runs
       ``n_iter[s] - top_k`` Bayesian-optimisation iterations with a fresh
       surrogate fitted on *this stage's observations only*, since scores on
       different amounts of data are not comparable.

    The last stage uses all training rows, so it holds the handed-on top-k:
    nothing promising from the cheap stages is lost, and the result is the
    best configuration *measured on the full data*. With ``stages=(1.0,)``
    the search is exactly :class:`BayesSearchCV` (the same trial sequence
    for the same settings).

    Parameters
    ----------
    estimator : estimator object
        Object implementing ``fit``; cloned for every fit.
    search_spaces : dict or list of dict
        Parameter names mapped to :class:`~skbayes_search.space.Real`,
        :class:`~skbayes_search.space.Integer`,
        :class:`~skbayes_search.space.Categorical`, lists of values,
        scipy.stats frozen distributions or ``(low, high[, prior])`` tuples.
        A list of dicts is a conditional space. See :class:`BayesSearchCV`.
    stages : sequence of float, default=(0.3, 1.0)
        Strictly increasing training fractions in ``(0, 1]``, one per stage;
        the last must be ``1.0``. Stage ``s`` fits on
        ``round(stages[s] * n_train)`` rows of each split's training rows.
        A first stage of fewer than 2 rows per class (classifiers) or 5 rows
        (other estimators) in the smallest split raises a ``UserWarning``.
    n_iter : int or sequence of int, default=(20, 10)
        Trials per stage, hand-offs included (the paper's ``Y_s``). An int
        applies to every stage. The total budget is the sum.
    top_k : int, default=3
        Configurations handed from each stage to the next. With more than
        one stage it must not exceed any stage's ``n_iter``.
    max_time : float, default=None
        Wall-clock budget in seconds for the whole search (all stages,
        overhead included); at ``max_time`` the running trials are stopped
        and not recorded. When it runs out before the last stage has
        evaluated its hand-off, the search still evaluates on the full data
        the ``top_k`` best configurations of the latest stage that has
        results (only those not yet evaluated there), within a grace period
        of 10 % of ``max_time`` (at least 1 s), so a full-data result exists
        whenever those fits finish in it.
    trial_timeout : float, default=None
        Seconds one trial may run; a trial past it is stopped and recorded as
        failed with the reason (user guide, "Budgets").
    asynchronous : bool, default=True
        Propose whenever a worker would idle, conditioned on the running
        trials; ``False``: synchronous batches, whose trials do not depend on
        which fit finishes first (user guide, "How a search runs").
    n_initial_points : int, default=5
        Sobol points of stage 1 before the GP proposes. Later stages start
        from their ``top_k`` hand-offs instead: their proposer's initial
        design is the hand-off itself (``n_initial_points=top_k`` for those
        stages), so no second Sobol design is spent on the expensive data.
        When a stage holds fewer than two successful observations after its
        hand-off (``top_k=1``, or failed hand-offs) a GP cannot be fitted
        and the stage samples uniformly at random until it can.
    acquisition : {"ei", "ei_per_second", "pi", "lcb"}, default="ei"
        Acquisition function, integrated over GP hyperparameter samples.
    kappa : float, default=2.0
        Exploration weight of ``acquisition="lcb"`` (``mean - kappa * std`` of
        the loss); larger explores more. Ignored by the other acquisitions.
    hyperparameter_sampling : {"mcmc", "map"}, default="mcmc"
        ``"mcmc"`` integrates the GP hyperparameters out by slice sampling;
        ``"map"`` uses a point estimate.
    n_points : int, default=None
        Trials per batch (hand-offs included). ``None`` keeps every parallel
        worker busy: ``ceil(effective n_jobs / n_splits)`` trials per batch.
    scoring : str, callable, list, tuple or dict, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    n_jobs : int, default=None
        Number of jobs running folds in parallel (through joblib).
    refit : bool, str or callable, default=True
        As in :class:`~sklearn.model_selection.GridSearchCV`; the search and
        the hand-offs optimise the ``refit`` metric (the first metric when
        ``refit`` is a callable or ``False``). A callable receives the whole
        ``cv_results_``, every stage included, and its returned index is
        used as is, as in scikit-learn: filter on
        ``results["resource_fraction"] == 1.0`` to choose among full-data
        rows.
    cv : int, cross-validation generator or iterable, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`. The splits are
        drawn once and reused by every trial of every stage.
    verbose : int, default=0
        ``1`` shows a progress bar when tqdm is installed (the ``progress``
        extra) and prints one line per trial otherwise; ``> 1`` prints one
        line per trial and scikit-learn's line per fit.
    pre_dispatch : int or str, default="2*n_jobs"
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    random_state : int, RandomState instance or None, default=None
        Seeds the subsets, the initial design, the MCMC chains and the
        acquisition search. Results do not depend on ``n_jobs``.
    error_score : "raise" or float, default=np.nan
        Score recorded for a failed fit. A failure never stops the search:
        the surrogate of its stage sees the worst score observed in that
        stage there, it ranks last for the hand-off, and one warning counts
        the failed trials.
    return_train_score : bool, default=False
        Whether ``cv_results_`` includes training scores.
    store : TrialStore, str or path-like, default=None
        A :class:`~skbayes_search.TrialStore` (or the path of one) where every
        trial is committed the moment it finishes.
    run_name : str, default=None
        Name of the run in ``store``. If the run already has trials, ``fit``
        reads them back and continues the stage they stopped in (the stage
        of every trial is its ``iter``), evaluating no finished trial again.
        ``None`` starts a fresh run with a generated name (``run_name_``).

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        Every trial of every stage, in evaluation order, with
        scikit-learn's keys plus ``n_resources`` (training rows per fit,
        smallest split), ``resource_fraction`` (the stage's fraction),
        ``iter`` (the stage index, from 0), ``elapsed_time`` (seconds since
        ``fit`` started when the trial finished), ``fit_failed`` and
        ``acquisition_value`` (nan for the initial design and the
        hand-offs). The ``rank_test_*`` columns rank all rows together, as
        scikit-learn does, although scores on different fractions are not
        comparable.
    best_index_ : int
        Row of the best trial, chosen among the successful full-data rows
        (``resource_fraction == 1.0``) by the ``refit`` metric, unless
        ``refit`` is a callable (see ``refit``). If no full-data trial
        succeeded, the best successful trial of the stages below, with a
        warning.
    best_score_ : float
        Mean cross-validated score of that row (a measurement on full data,
        but for that warning).
    best_params_ : dict
        Parameters of that row.
    best_estimator_ : estimator
        Refitted on all data with ``best_params_`` (when ``refit``).
    n_stages_ : int
        Number of stages, ``len(stages)``.
    stage_best_params_ : list of dict or None
        Per stage, the parameters of its best successful trial by the
        optimised metric on that stage's fraction; ``None`` for a stage
        without a successful trial (e.g. skipped when ``max_time`` ran out).
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
    BayesSearchCV : the same optimiser on the full data only.
    FabolasSearchCV : subset size as a continuous input of the model.

    References
    ----------
    L. Wang, M. Feng, B. Zhou, B. Xiang, S. Mahadevan. Efficient
    Hyper-parameter Optimization for NLP Applications. EMNLP 2015.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC
    >>> from skbayes_search import MultiStageBayesSearchCV, Real
    >>> X, y = load_iris(return_X_y=True)
    >>> search = MultiStageBayesSearchCV(
    ...     SVC(),
    ...     {"C": Real(1e-2, 1e2, prior="log-uniform"),
    ...      "gamma": Real(1e-3, 1e1, prior="log-uniform")},
    ...     stages=(0.5, 1.0), n_iter=(6, 4), top_k=2, n_initial_points=4,
    ...     cv=3, random_state=0,
    ... ).fit(X, y)
    >>> search.cv_results_["resource_fraction"].tolist()
    [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0]
    >>> search.cv_results_["iter"].tolist()
    [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    >>> float(search.cv_results_["resource_fraction"][search.best_index_])
    1.0
    >>> search.n_stages_, len(search.stage_best_params_)
    (2, 2)
    """

    _parameter_constraints: dict = {
        **BaseBayesSearchCV._parameter_constraints,
        "stages": ["array-like"],
        "n_iter": [COUNT, "array-like"],
        "top_k": [Interval(numbers.Integral, 1, None, closed="left")],
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
        stages: Sequence[float] = (0.3, 1.0),
        n_iter: int | Sequence[int] = (20, 10),
        top_k: int = 3,
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
        self.stages = stages
        self.top_k = top_k
        self.n_initial_points = n_initial_points
        self.acquisition = acquisition
        self.kappa = kappa
        self.hyperparameter_sampling = hyperparameter_sampling
        self.n_points = n_points

    def _end_search(self, ctx: SearchContext, results: dict) -> None:
        self.n_stages_ = len(self._plan()[0])
        self.stage_best_params_ = [
            _best_params(_of_stage(ctx.trials, s)) for s in range(self.n_stages_)
        ]

    # ------------------------------------------------------------------
    # strategy hooks
    # ------------------------------------------------------------------
    def _plan(self) -> tuple[tuple[float, ...], tuple[int, ...]]:
        """Validated ``(stages, n_iter per stage)``; ValueError on bad input."""
        stages = check_fractions(
            self.stages, "stages", increasing=True, last_is_one=True
        )
        n_stages = stages.size
        if isinstance(self.n_iter, numbers.Integral):
            n_iter = (int(self.n_iter),) * n_stages
        else:
            n_iter = tuple(self.n_iter)
            if not all(
                isinstance(n, numbers.Integral)
                and not isinstance(n, (bool, np.bool_))
                and n >= 1
                for n in n_iter
            ):
                raise ValueError(
                    "n_iter must be a positive int or a sequence of positive "
                    f"ints (one per stage), got {self.n_iter!r}."
                )
            if len(n_iter) != n_stages:
                raise ValueError(
                    f"n_iter has {len(n_iter)} entries but stages has "
                    f"{n_stages}; give one n_iter per stage or a single int."
                )
            n_iter = tuple(int(n) for n in n_iter)
        # With one stage nothing is handed on, so top_k plays no part (and
        # the search stays identical to BayesSearchCV for any n_iter).
        if n_stages > 1 and self.top_k > min(n_iter):
            s = int(np.argmin(n_iter))
            raise ValueError(
                f"top_k={self.top_k} is larger than the {n_iter[s]} iterations "
                f"of stage {s} (n_iter={self.n_iter!r}); every stage must be "
                "able to hold the top_k configurations handed to it."
            )
        return tuple(float(f) for f in stages), n_iter

    def _total_budget(self) -> int:
        return int(sum(self._plan()[1]))

    def _check_strategy_params(self, ctx: SearchContext) -> None:
        stages, n_iter = self._plan()
        warn_if_space_small(
            ctx.space.cardinality,
            n_iter,
            "a stage moves on to the next once every one has been evaluated "
            "at its fraction.",
        )
        if len(stages) > 1:
            _warn_if_first_stage_small(stages[0], ctx)

    def _init_search(self, ctx: SearchContext) -> None:
        stages = self._plan()[0]
        check_stored_rows(
            ctx.trials,
            lambda t: t.iter < len(stages) and on_fractions(t.fraction, stages[t.iter]),
            ctx.n_train,
            search=f"stages={self.stages!r}",
            made_with="stages",
        )
        # One proposer per stage, created on first use; dropped after fit.
        self._proposers: dict[int, BayesProposer] = {}

    def _proposer(self, ctx: SearchContext, stage: int) -> BayesProposer:
        """The stage's own proposer: a fresh surrogate and MCMC chain."""
        if stage not in self._proposers:
            if stage == 0:
                # Same seed and design as BayesSearchCV: S = 1 is plain BO.
                seed, n_initial = ctx.seed, self.n_initial_points
            else:
                # A later stage's initial design is its hand-off; BayesProposer
                # skips its Sobol design once a stage holds n_initial_points
                # trials with at least two successes.
                seed = int(np.random.default_rng([ctx.seed, stage]).integers(2**31 - 1))
                n_initial = self.top_k
            self._proposers[stage] = BayesProposer(
                acquisition=self.acquisition,
                kappa=self.kappa,
                hyperparameter_sampling=self.hyperparameter_sampling,
                n_initial_points=n_initial,
                seed=seed,
            )
        return self._proposers[stage]

    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        stages, n_iter = self._plan()
        for stage, budget in enumerate(n_iter):
            done = _of_stage(ctx.trials, stage)
            running = [t for t in ctx.pending if t.iter == stage]
            n_given = len(done) + len(running)
            if n_given >= budget:
                continue
            if stage > 0 and any(t.iter == stage - 1 for t in ctx.pending):
                # the hand-off is the top-k of the whole previous stage
                return []
            n_ask = min(n_slots, budget - n_given)
            fraction = stages[stage]
            if stage > 0:
                handoff = _top_k(_of_stage(ctx.trials, stage - 1), self.top_k)
                if n_given < len(handoff):
                    # The hand-off fills the first batches on its own: a BO
                    # proposal in the same batch would come from an empty
                    # stage.
                    return [
                        Trial(params, fraction, iter=stage)
                        for params in handoff[n_given : n_given + n_ask]
                    ]
            trials = self._proposer(ctx, stage).ask(
                ctx,
                done,
                n_ask,
                fraction=fraction,
                iteration=stage,
                pending=running,
            )
            if trials:
                return trials
            # A finite space is exhausted at this fraction: next stage.
        return []

    def _finalize(self, ctx: SearchContext) -> list[Trial]:
        last = len(self._plan()[0]) - 1
        done = _of_stage(ctx.trials, last)
        if done:
            if last == 0:
                return []
            # The last stage started: finish the hand-off it was given.
            handoff = _top_k(_of_stage(ctx.trials, last - 1), self.top_k)
            return [Trial(p, 1.0, iter=last) for p in handoff[len(done) :]]
        # max_time ran out in an earlier stage: hand the best of the latest
        # stage with results straight to the full data.
        for stage in range(last - 1, -1, -1):
            source = _of_stage(ctx.trials, stage)
            if source:
                handoff = _top_k(source, self.top_k)
                return [Trial(p, 1.0, iter=last) for p in handoff]
        # The base always runs the first batch, so some stage has results.
        return []

    def _select_best(self, results: dict, refit_metric: str) -> int:
        if callable(self.refit):
            return super()._select_best(results, refit_metric)
        # failed trials read nan here (the base's view of the results)
        scored = np.isfinite(np.asarray(results[f"mean_test_{refit_metric}"], float))
        on_all = np.asarray(results["resource_fraction"]) == 1.0
        full = np.flatnonzero(on_all & scored)
        if full.size == 0:
            index = super()._select_best(results, refit_metric)
            if scored.any() and not on_all[index]:
                n_rows = results["n_resources"][index]
                name = "MultiStageBayesSearchCV"
                warn_answer_on_subset(name, n_rows, NO_FULL_SUCCESS)
            return index
        ranks = np.asarray(results[f"rank_test_{refit_metric}"])[full]
        return int(full[np.argmin(ranks)])


#: Fewest rows per class (classifiers), or rows (other estimators), a first
#: stage should fit on in every split before its ranking means anything.
MIN_STAGE_ROWS_PER_CLASS, MIN_STAGE_ROWS = 2, 5


def _warn_if_first_stage_small(fraction: float, ctx: SearchContext) -> None:
    """Warn when the first stage fits on too few rows to rank configurations:
    fewer than 2 rows per class for a classifier, or 5 rows otherwise, in the
    smallest split."""
    min_rows = 1 if ctx.n_classes is None else ctx.n_classes
    rows = subset_size(fraction, ctx.n_train, min_rows)
    if ctx.n_classes is None:
        needed, per = MIN_STAGE_ROWS, ""
    else:
        needed, per = (
            MIN_STAGE_ROWS_PER_CLASS * ctx.n_classes,
            (f" ({MIN_STAGE_ROWS_PER_CLASS} per class for {ctx.n_classes} classes)"),
        )
    if rows < needed:
        warnings.warn(
            f"MultiStageBayesSearchCV: the first stage (stages[0]={fraction:g}) "
            f"fits on {rows} of the {ctx.n_train} training rows of the smallest "
            f"split, fewer than {needed}{per}; its ranking of configurations "
            "is mostly noise. Raise stages[0] or use more data.",
            UserWarning,
            # user code -> fit -> _fit -> prepare_run -> _check_strategy_params
            stacklevel=6,
        )


def _of_stage(trials: list[TrialRecord], stage: int) -> list[TrialRecord]:
    """Trials of one stage, in evaluation order."""
    return [t for t in trials if t.iter == stage]


def _ok(trial: TrialRecord) -> bool:
    return not trial.failed and bool(np.isfinite(trial.score))


def _top_k(trials: list[TrialRecord], k: int) -> list[dict]:
    """Parameters of the ``k`` best trials, best first; failures rank last.

    Ties keep evaluation order (a stable sort), so the hand-off is
    deterministic.
    """
    order = sorted(
        range(len(trials)),
        key=lambda i: (0, -trials[i].score) if _ok(trials[i]) else (1, 0.0),
    )
    # Copies, so that rows of cv_results_ never share a dict.
    return [dict(trials[i].params) for i in order[:k]]


def _best_params(trials: list[TrialRecord]) -> dict | None:
    """Parameters of the best successful trial, ``None`` if there is none."""
    ok = [t for t in trials if _ok(t)]
    return _top_k(ok, 1)[0] if ok else None
