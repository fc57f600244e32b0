"""TradeoffBayesSearchCV: choose a model for accuracy and training time together.

Bayesian optimisation of paper 003's trade-off ``T_alpha = L - alpha * o``
over the estimator's hyperparameters and the share of the training set. The
objective and Pareto analysis live in :mod:`skbayes_search.analysis`, the
acquisition in :mod:`skbayes_search.acquisition.tradeoff`; the design and its
departures from the paper in ``doc/design/tradeoff.rst``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import BaseBayesSearchCV, shared_params
from .._numerics import single_blas_thread
from .._trial import SearchContext, Trial
from .._validation import check_fractions, check_stored_rows, on_fractions
from ..acquisition.tradeoff import make_tradeoff_acquisition
from ..analysis import (
    normalize_times,
    objective_parts,
    results_pareto_front,
    scale_scores,
    time_scale,
    tradeoff_index,
)
from ..gp import GPSurrogate
from ..optimize import propose_batch
from ._tradeoff_grid import FractionGrid

__all__ = ["TradeoffBayesSearchCV"]

# Training times are floored before taking logs, so timer resolution and
# sub-millisecond fits do not give the time GP arbitrary outliers.
_MIN_SECONDS = 1e-4
# Best trials (by the current trade-off) whose neighbourhoods the optimiser
# searches besides its Sobol candidates.
_N_SEEDS = 5


class TradeoffBayesSearchCV(BaseBayesSearchCV):
    """Bayesian search for a model that is both accurate and fast to train.

    Implements the accuracy/efficiency trade-off optimisation of paper 003.
    Every trial is a configuration *and* a share of the training set
    (``fractions``); its objective is

    ``T_alpha = L - alpha * o``

    with ``L`` the mean validation score and ``o`` the normalised training
    time. ``alpha`` says how much score you give up for a model that trains
    in the reference time instead of no time: with the default ``"max"``
    normalisation, ``alpha=0.1`` trades 0.1 of accuracy for the whole range
    from the slowest trial seen to an instant fit. ``alpha=0`` is plain
    Bayesian optimisation of the score (over configurations and fractions).

    The search: ``n_initial_points`` trials from a scrambled Sobol design
    (the paper: 3), then, until ``n_iter`` trials are done (the paper: 20),
    two independent GPs are fitted, one on ``-L`` and one on the log training
    seconds, and the next trial maximises the expected improvement of the
    trade-off itself,

    ``EI_T = E[max(L - alpha * o - T*, 0)]``,

    with ``T*`` the best ``T_alpha`` among the finished trials (see
    :func:`~skbayes_search.acquisition.make_tradeoff_acquisition`). The
    selected trial is the evaluated one with the highest ``T_alpha`` (ties:
    the faster), and ``best_estimator_`` is refitted on that trial's share of
    the data: the point is a cheaper model.

    Parameters
    ----------
    estimator : estimator object
        Object implementing ``fit``; cloned for every fit.
    search_spaces : dict or list of dict
        Parameter names mapped to :class:`~skbayes_search.space.Real`,
        :class:`~skbayes_search.space.Integer`,
        :class:`~skbayes_search.space.Categorical`, lists of values,
        scipy.stats frozen distributions or ``(low, high[, prior])`` tuples;
        a list of dicts is a conditional space (as in
        :class:`~skbayes_search.BayesSearchCV`).
    alpha : float, default=0.1
        Weight of the normalised training time against the score, ``>= 0``.
    fractions : array-like of float or None, default=(0.2, 0.4, 0.6, 0.8, 1.0)
        Shares of each split's training rows a trial may fit on, in (0, 1]
        (duplicates are dropped). The subsets are stratified for classifiers
        and nested. ``None`` does not search the share: every trial uses all
        training rows. For the GPs a fraction is one extra input coordinate,
        linear in ``log(fraction)`` between the smallest and largest allowed
        value (learning curves and log training times are close to linear in
        the log of the sample size); proposals are snapped to the nearest
        allowed fraction.
    n_iter : int, default=20
        Number of trials (configuration and fraction pairs evaluated).
    n_initial_points : int, default=3
        Trials of the initial design before the GPs propose. The
        configurations are scrambled Sobol points; the fractions form a
        Latin-hypercube column over the (log-scaled) fraction range.
    time_normalization : "max" or float, default="max"
        How the training time of a trial (mean fit seconds over the CV
        splits) becomes ``o``: ``"max"`` divides by the longest training time
        among the successful trials so far, recomputed after every trial, so
        ``o`` is in (0, 1]; a positive float divides by that many seconds (a
        fixed reference, e.g. your retraining budget; ``o > 1`` for slower
        trials).
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
    hyperparameter_sampling : {"mcmc", "map"}, default="mcmc"
        ``"mcmc"`` integrates the GP hyperparameters out by slice sampling;
        ``"map"`` uses a point estimate (cheaper, less robust early on).
    n_points : int, default=None
        Proposals per batch; the 2nd and later points of a batch average the
        acquisition over fantasies of the earlier ones. ``None`` keeps every
        parallel worker busy: ``ceil(effective n_jobs / n_splits)``.
    scoring : str, callable, list, tuple or dict, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`; with several
        metrics the trade-off uses the ``refit`` metric (the first metric when
        ``refit`` is a callable). ``L`` is the score itself when every
        observed score lies in [0, 1] (accuracy, F1, ROC AUC, ...); otherwise
        the scores are min-max scaled over the observed successful trials.
    n_jobs : int, default=None
        Number of jobs running folds in parallel. Parallel folds compete for
        cores, which inflates the measured training times; use ``n_jobs=1``
        when the times must be comparable to a deployment.
    refit : bool, str or callable, default=True
        As in :class:`~sklearn.model_selection.GridSearchCV`. A callable
        replaces the trade-off rule for the selection of ``best_index_``.
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
        Seeds the subsets, the initial design, the MCMC chains, the
        acquisition search and the refit subset.
    error_score : "raise" or float, default=np.nan
        Score recorded for a failed fit. Failed trials are never selected,
        the score GP sees the worst observed score there and the time GP
        leaves them out (a failure's duration is no training time).
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
        scikit-learn's keys plus ``n_resources``, ``resource_fraction``,
        ``iter``, ``elapsed_time``, ``fit_failed``, ``acquisition_value``
        (``EI_T`` of the proposal, in units of ``T``; nan for the initial
        design),
        ``mean_train_time`` (mean fit seconds over the splits; nan for failed
        trials),
        ``normalized_train_time`` (``o`` with the normalisation at the end of
        the search) and ``tradeoff_score`` (``T_alpha = L - alpha * o``).
    best_index_ : int
        Row of the trial with the highest ``tradeoff_score``.
    best_params_ : dict
        Estimator parameters of that trial (the fraction is not one of them).
    best_train_fraction_ : float
        Training share of that trial; ``best_estimator_`` is fitted on it.
    best_score_ : float
        Mean validation score of that trial, measured on its fraction.
    best_estimator_ : estimator
        Refitted with ``best_params_`` on a stratified (classifiers),
        reproducible ``best_train_fraction_`` share of ``X``.
    pareto_front_ : ndarray of int
        Rows of the trials not dominated in (score up, training time down),
        ordered by increasing training time. Failed trials are left out.
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
    BayesSearchCV : GP-EI Bayesian optimisation of the score alone.
    skbayes_search.analysis.tradeoff_curve : The trial selected for each of
        several ``alpha``.
    skbayes_search.analysis.pareto_front : Trials not beaten on both score
        and training time.

    Notes
    -----
    ``EI_T`` is computed exactly up to quadrature error (Gauss-Hermite over
    the log-normal time), averaged over the hyperparameter samples of both
    GPs and, for the 2nd and later points of a batch, over fantasies of the
    pending points. The paper's eq. 2, ``a_L - alpha * a_o``, is its
    independence approximation of this quantity; two literal readings of it
    were measured and rejected (``doc/design/tradeoff.rst``).

    Training times are wall-clock measurements and vary from run to run and
    from machine to machine, so with ``alpha > 0`` the trials depend on the
    clock: two runs with the same ``random_state`` may take different paths,
    even with ``asynchronous=False``.

    References
    ----------
    Paper 003 of the project library (``shared/papers/003_*``): a unified
    Bayesian optimisation framework for jointly optimising models for
    effectiveness and training efficiency.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC
    >>> from skbayes_search import TradeoffBayesSearchCV
    >>> from skbayes_search.analysis import tradeoff_curve
    >>> X, y = load_iris(return_X_y=True)
    >>> search = TradeoffBayesSearchCV(
    ...     SVC(),
    ...     {"C": (1e-2, 1e2, "log-uniform"), "gamma": (1e-3, 1e1, "log-uniform")},
    ...     alpha=0.1, n_iter=6, cv=3, random_state=0,
    ... ).fit(X, y)
    >>> len(search.cv_results_["params"])
    6
    >>> sorted(search.best_params_)
    ['C', 'gamma']
    >>> search.best_train_fraction_ in (0.2, 0.4, 0.6, 0.8, 1.0)
    True
    >>> search.best_estimator_.n_features_in_
    4
    >>> # the trials alpha=0 and alpha=1 would have selected among these
    >>> tradeoff_curve(search, [0.0, 1.0]).shape
    (2,)
    """

    _parameter_constraints: dict = {
        **BaseBayesSearchCV._parameter_constraints,
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "fractions": ["array-like", None],
        "n_initial_points": [Interval(numbers.Integral, 1, None, closed="left")],
        "time_normalization": [
            StrOptions({"max"}),
            Interval(numbers.Real, 0, None, closed="neither"),
        ],
        "hyperparameter_sampling": [StrOptions({"mcmc", "map"})],
        "n_points": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        estimator: Any,
        search_spaces: dict | list,
        *,
        alpha: float = 0.1,
        fractions: Any = (0.2, 0.4, 0.6, 0.8, 1.0),
        n_iter: int = 20,
        n_initial_points: int = 3,
        time_normalization: str | float = "max",
        max_time: float | None = None,
        trial_timeout: float | None = None,
        asynchronous: bool = True,
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
        self.alpha = alpha
        self.fractions = fractions
        self.n_initial_points = n_initial_points
        self.time_normalization = time_normalization
        self.hyperparameter_sampling = hyperparameter_sampling
        self.n_points = n_points

    @staticmethod
    def _checked_fractions(fractions: Any) -> np.ndarray:
        """The allowed fractions, sorted and unique; ``None``: all rows."""
        if fractions is None:
            return np.array([1.0])
        return np.unique(check_fractions(fractions, "fractions"))

    def _check_strategy_params(self, ctx: SearchContext) -> None:
        self._checked_fractions(self.fractions)
        if not np.isfinite(self.alpha):
            raise ValueError(f"alpha must be finite, got {self.alpha!r}")

    # ------------------------------------------------------------------
    # setup: the fraction grid (``_tradeoff_grid.py``) and the two GPs
    # ------------------------------------------------------------------
    def _init_search(self, ctx: SearchContext) -> None:
        self._grid = FractionGrid(self._checked_fractions(self.fractions))
        check_stored_rows(
            ctx.trials,
            lambda t: on_fractions(t.fraction, self._grid.fractions),
            ctx.n_train,
            search=f"fractions={self.fractions!r}",
            made_with="fractions",
        )
        self._loss_surrogate = GPSurrogate(
            hyperparameter_sampling=self.hyperparameter_sampling,
            random_state=ctx.seed,
        )
        self._time_surrogate = GPSurrogate(
            hyperparameter_sampling=self.hyperparameter_sampling,
            random_state=ctx.seed + 1,
        )
        self._design: np.ndarray | None = None

    # ------------------------------------------------------------------
    # ask
    # ------------------------------------------------------------------
    def _current_objective(
        self, ctx: SearchContext
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(L, seconds, o)`` of the finished trials, as of now."""
        ok = np.array([not t.failed for t in ctx.trials], dtype=bool)
        seconds = np.array([t.fit_time for t in ctx.trials], float) / ctx.n_splits
        seconds = np.where(ok, seconds, np.nan)
        L = scale_scores(np.where(ok, ctx.scores(), np.nan))
        return L, seconds, normalize_times(seconds, self.time_normalization)

    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        # small GP matrices are far slower with several BLAS threads
        with single_blas_thread():
            return self._propose(ctx, n_slots)

    def _propose(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        iteration = ctx.trials[-1].iter + 1 if ctx.trials else 0
        # running trials count: their design points are taken
        n_done = len(ctx.trials) + len(ctx.pending)
        L, seconds, o = self._current_objective(ctx)
        ok = np.isfinite(L) & np.isfinite(seconds)
        if n_done < self.n_initial_points or ok.sum() < 2:
            if self._design is None:
                self._design = self._grid.initial_design(
                    ctx, int(self.n_initial_points)
                )
            design = self._design
            if n_done < len(design):
                U = design[n_done : n_done + n_slots]
            else:
                # too few successes for the GPs: keep exploring at random
                U = self._grid.random_points(ctx, n_slots)
            return self._grid.decode(ctx, U, iteration)

        X = self._grid.encode(ctx)
        loss = np.where(ok, -L, np.nan)
        loss[~ok] = np.nanmax(loss)  # failures: the worst observed score
        self._loss_surrogate.fit(X, loss)
        time_surrogate = None
        if self.alpha > 0:
            log_t = np.log(np.maximum(seconds[ok], _MIN_SECONDS))
            time_surrogate = self._time_surrogate.fit(X[ok], log_t)
        T = np.where(ok, L - self.alpha * o, -np.inf)
        seeds = X[np.argsort(-T, kind="stable")[: min(_N_SEEDS, int(ok.sum()))]]
        # T* is the incumbent's trade-off, with the times normalised as now
        tradeoff_best = float(T.max())
        scale = time_scale(seconds, self.time_normalization)

        def acquisition_for(pending: np.ndarray | None) -> Callable:
            return make_tradeoff_acquisition(
                self._loss_surrogate,
                time_surrogate,
                tradeoff_best=tradeoff_best,
                time_scale=scale,
                alpha=float(self.alpha),
                X_pending=pending,
                rng=ctx.rng,
            )

        U, log_values = propose_batch(
            acquisition_for,
            n_slots,
            X.shape[1],
            rng=ctx.rng,
            snap=self._grid.snapper(ctx),
            seeds=seeds,
            exclude=X,
            pending=self._grid.encode(ctx, pending=True) if ctx.pending else None,
        )
        if not len(U):
            return []
        return self._grid.decode(ctx, U, iteration, np.exp(log_values))

    # ------------------------------------------------------------------
    # results and selection
    # ------------------------------------------------------------------
    def _more_results(self, ctx: SearchContext) -> dict[str, list]:
        more = super()._more_results(ctx)
        L, seconds, o = self._current_objective(ctx)
        more["mean_train_time"] = seconds.tolist()
        more["normalized_train_time"] = o.tolist()
        more["tradeoff_score"] = (L - self.alpha * o).tolist()
        return more

    def _select_best(self, results: dict, refit_metric: str) -> int:
        if callable(self.refit):
            index = super()._select_best(results, refit_metric)
        else:
            L, o = objective_parts(
                results, f"mean_test_{refit_metric}", self.time_normalization
            )
            index = tradeoff_index(L, o, self.alpha)
        self.best_train_fraction_ = float(results["resource_fraction"][index])
        return index

    def _end_search(self, ctx: SearchContext, results: dict) -> None:
        self.pareto_front_ = results_pareto_front(results, self.refit)

    def _refit_fraction(self) -> float:
        return self.best_train_fraction_
