"""FabolasSearchCV: Bayesian optimisation with the training-set size as an input.

FABOLAS (Klein, Falkner, Bartels, Hennig, Hutter; AISTATS 2017, paper 001).
"""

from __future__ import annotations

import numbers
import os
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import logsumexp
from sklearn.utils._param_validation import Interval, StrOptions
from threadpoolctl import threadpool_limits

from .._base import BaseBayesSearchCV, shared_params
from .._numerics import standard_normal_draws
from .._trial import SearchContext, Trial
from ..acquisition import log_ei
from ..acquisition.entropy import (
    N_PMIN_SAMPLES,
    N_QUADRATURE,
    RepresenterPosterior,
    fabolas_acquisition,
    sample_representers,
)
from ..gp import BasisKernel, GPSurrogate, Matern52, ProductKernel
from ..optimize import maximize

__all__ = [
    "FabolasSearchCV",
    "cost_curve",
    "full_data_cost",
    "make_kernels",
    "reserve_seconds",
    "slow_cost",
    "slow_full_data_cost",
]

#: ``min_resources="auto"`` for regressors (and unsupervised estimators).
MIN_RESOURCES_REGRESSION = 100
#: Below this ratio of training rows to ``min_resources`` the fraction range
#: is too narrow to be worth modelling and the search runs plain BO.
MIN_RANGE_RATIO = 16
# Paper 001, section 3.4: log length scales uniform on [-10, 2].
_LOG_LENGTH_BOUNDS = (-10.0, 2.0)
# Errors are clipped at this floor before the log (a perfect score would
# otherwise give log 0).
_ERROR_FLOOR = 1e-4
# Pool from which representers are drawn, and Sobol candidates of the
# acquisition search. The entropy-search acquisition costs ~0.5 ms per
# candidate and hyperparameter sample at 1024 Monte Carlo draws (see
# entropy_search), which made the optimiser's own time (~1.7 s per proposal)
# longer than most small-subset fits it was choosing between. So all
# candidates are screened on the first _N_SCREEN_SAMPLES draws and only the
# best _N_REFINE are scored on all of them (about 5x less work); deciding on
# the precise estimate also curbs the winner's curse of maximising a noisy
# one.
_N_POOL = 512
_N_CANDIDATES = 256
_N_SEEDS = 3
_N_SCREEN_SAMPLES = 128
_N_REFINE = 16
# The Monte Carlo estimate is piecewise constant in the candidate, so
# finite-difference gradients are zero or spurious jumps and an L-BFGS-B
# polish only burns evaluations; local refinement comes from the Gaussian
# perturbations of the seeds (the best configurations) instead.
_N_POLISH = 0
# One-sided 95 % normal quantile, for cautious cost predictions near max_time.
_Z95 = 1.6448536269514722
# A fit's cost is c0 (fixed) plus a variable part whose log is modelled as a
# convex function of the log fraction, read off the trials where the variable
# part is at least this share of the cost; extrapolated to all rows, the
# implied exponent is kept in these bounds.
_VARIABLE_SHARE = 0.5
_EXPONENT_BOUNDS = (0.0, 3.0)
# A slope read off few fits or a narrow span of fractions is not trusted below
# linear (a fit reads every row). One read off many fits over a wide span is:
# HistGradientBoosting's cost is mostly set by max_iter, so over 74 fits
# spanning a factor 800 it grew like rows^0.2, and a floor of 1 put a 2 s
# full-data evaluation at 139 s, which ended a 90 s search after 46 s.
_SPARSE_MIN_EXPONENT = 1.0
# Slow configurations steepen faster than the curve all fits trace: for SVC
# incumbents on adult, covertype and connect_4 the actual full-data cost was
# 0.7-1.4 times the extrapolation, so the reserve takes 1.5 times it.
_RESERVE_MARGIN = 1.5
# A curvature read off fewer fits, or a narrower span of fractions, than this
# is mostly the scatter between configurations (the initial design: 10 fits
# over a factor 8), and extrapolated 64-fold it put a 42 s evaluation at 600 s.
_QUADRATIC_MIN_FITS = 10
_QUADRATIC_MIN_SPAN = 16.0
# The final evaluation is of whichever configuration the model prefers at the
# end, which can be slower on all rows than its own small fits show: on SVC
# with credit_default, C ~ 1000 incumbents seen only on 20-300 rows took
# 73-92 s, started with 48-71 s left, and every run overran a 300 s budget.
# So the reserve also covers a slow full-data fit of the population: the
# one-sided 95 % log-normal bound of the configurations tried on the larger
# half of the fractions, each scaled to all rows, once at least this many
# trials read the curve.
_POPULATION_MIN_FITS = 6
# The reserve never takes more than this share of max_time: a larger one is
# more likely an extrapolation from few small fits than a real cost, and
# trusting it ends the search at once (connect_4: after 8.5 s of 300).
_RESERVE_MAX_SHARE = 0.5


def cost_curve(fractions: Any, costs: Any) -> tuple[float, np.ndarray]:
    """Fixed cost and log-log curve of the variable cost of a fit.

    Returns ``c0``, the cheapest cost seen (on the smallest subsets a fit
    costs its fixed overhead), and the coefficients (highest power first) of
    ``log(cost - c0)`` as a polynomial in ``log fraction``, fitted by least
    squares to the trials whose cost is mostly variable: a quadratic when
    they are at least ``_QUADRATIC_MIN_FITS`` and span a factor
    ``_QUADRATIC_MIN_SPAN`` in fraction, unless it comes out concave, then a
    line; with fewer fits or a narrower span, a line whose slope is at least
    ``_SPARSE_MIN_EXPONENT``; the line of slope 1 when they are fewer than 3
    or span less than a factor 2.

    Why not the cost GP: its ``(1, s~)`` basis fits one power law to every
    fraction. Fit time is convex in log rows (fixed costs flatten tiny
    subsets, an SVC's quadratic-or-worse solver steepens large ones) and the
    search spends most trials on tiny subsets, so that power law
    under-predicts a full-data fit several times over (SVC on connect_4:
    under 20 s predicted, about 120 s taken).
    """
    f = np.log(np.asarray(fractions, dtype=float))
    c = np.asarray(costs, dtype=float)
    linear = np.array([0.0, 1.0, 0.0])
    if not c.size:
        return 0.0, linear
    c0 = float(c.min())
    variable = c - c0
    use = variable >= _VARIABLE_SHARE * c
    if use.sum() < 3 or np.ptp(f[use]) < np.log(2.0):
        return c0, linear
    x, y = f[use], np.log(variable[use])
    if use.sum() >= _QUADRATIC_MIN_FITS and np.ptp(x) >= np.log(_QUADRATIC_MIN_SPAN):
        quad = np.polyfit(x, y, 2)
        if quad[0] >= 0.0:
            return c0, quad
        return c0, np.concatenate([[0.0], np.polyfit(x, y, 1)])
    slope, intercept = np.polyfit(x, y, 1)
    return c0, np.array([0.0, max(slope, _SPARSE_MIN_EXPONENT), intercept])


def full_data_cost(c0: float, curve: np.ndarray, fraction: float, cost: float) -> float:
    """A fit's cost on all rows, from its cost on ``fraction`` of them.

    Scales the variable part (at least ``c0``: smaller is noise) by the
    power of ``1 / fraction`` that ``curve`` implies between ``fraction``
    and 1, kept in ``_EXPONENT_BOUNDS``. See :func:`cost_curve`.
    """
    if fraction >= 1.0:
        return float(cost)
    return float(_scaled_cost(c0, curve, fraction, cost, 1.0))


def _scaled_cost(
    c0: float, curve: np.ndarray, fraction: Any, cost: Any, to: Any
) -> np.ndarray:
    """Costs on ``fraction`` scaled to ``to`` (arrays broadcast): the variable
    part (at least ``c0``) times the power of ``to / fraction`` that ``curve``
    implies between them, kept in ``_EXPONENT_BOUNDS``."""
    lf, lt = np.log(fraction), np.log(to)
    gap = lt - lf
    same = np.abs(gap) < 1e-12
    b = (np.polyval(curve, lt) - np.polyval(curve, lf)) / np.where(same, 1.0, gap)
    b = np.clip(b, *_EXPONENT_BOUNDS)
    variable = np.maximum(np.asarray(cost, dtype=float) - c0, c0)
    return np.where(same, cost, c0 + variable * np.exp(b * gap))


def _wall_seconds(summed: float, n_splits: int, n_jobs: int) -> float:
    """Wall seconds of a trial alone on ``n_jobs`` workers, from the seconds
    summed over its ``n_splits`` splits (rounds of one split per worker)."""
    workers = max(1, min(int(n_jobs), n_splits))
    return summed * int(np.ceil(n_splits / workers)) / n_splits


def slow_cost(
    fractions: Any, costs: Any, c0: float, curve: np.ndarray, to: Any
) -> np.ndarray:
    """Seconds (summed over splits) of a slow fit on each fraction in ``to``.

    The configurations tried on the larger half of the fractions (among the
    trials whose cost is mostly variable, see :func:`cost_curve`) are each
    scaled to every fraction in ``to`` as :func:`full_data_cost` scales to
    all rows (the power of the ratio of fractions that ``curve`` implies); the
    result is the one-sided 95 % bound of a log-normal fitted to them. It
    stands for the spread between configurations that fits on the smallest
    subsets do not show (an SVC's cost grows faster with the rows at large
    ``C``). Zeros with fewer than ``_POPULATION_MIN_FITS`` such trials.
    """
    fractions = np.asarray(fractions, dtype=float)
    costs = np.asarray(costs, dtype=float)
    to = np.atleast_1d(np.asarray(to, dtype=float))
    use = costs - c0 >= _VARIABLE_SHARE * costs
    if use.sum() < _POPULATION_MIN_FITS:
        return np.zeros(to.shape)
    f, c = fractions[use], costs[use]
    upper = f >= np.median(f)
    scaled = _scaled_cost(c0, curve, f[upper][:, None], c[upper][:, None], to[None, :])
    logs = np.log(scaled)
    return np.exp(logs.mean(axis=0) + _Z95 * logs.std(axis=0, ddof=1))


def slow_full_data_cost(
    fractions: Any, costs: Any, c0: float, curve: np.ndarray
) -> float:
    """:func:`slow_cost` of a fit on all rows."""
    return float(slow_cost(fractions, costs, c0, curve, 1.0)[0])


def reserve_seconds(
    fractions: Any, costs: Any, own: Any, n_splits: int, n_jobs: int
) -> float:
    """Wall seconds to set aside for one configuration's full-data evaluation.

    ``fractions`` and ``costs`` (seconds summed over splits) are every
    successful trial's; ``own`` marks the configuration's own trials. Each of
    those is scaled to all rows along :func:`cost_curve`, and the smallest
    extrapolation (the largest fit extrapolates least) is taken with a
    ``_RESERVE_MARGIN`` margin; at least :func:`slow_full_data_cost` (the
    configuration evaluated at the end may not be this one, and small fits
    hide how much slower some configurations grow). The result is divided
    among the workers (the final evaluation runs alone). 0 when the
    configuration has no trial.
    """
    costs = np.asarray(costs, dtype=float)
    fractions = np.asarray(fractions, dtype=float)
    own = np.asarray(own, dtype=bool)
    if not own.any():
        return 0.0
    c0, curve = cost_curve(fractions, costs)
    scaled = [
        full_data_cost(c0, curve, f, c) for f, c in zip(fractions[own], costs[own])
    ]
    summed = max(
        _RESERVE_MARGIN * min(scaled),
        slow_full_data_cost(fractions, costs, c0, curve),
    )
    return _wall_seconds(summed, n_splits, n_jobs)


@contextmanager
def _thread_map(n_threads: int) -> Iterator[Callable]:
    """``map``, or a pool's ``map`` over ``n_threads`` threads (same order)."""
    if n_threads <= 1:
        yield map
        return
    with ThreadPoolExecutor(n_threads) as pool:
        yield pool.map


def _error_kind(scores: np.ndarray) -> str:
    """How scores map to a positive error whose log the loss model fits.

    ``"neg"`` (all scores <= 0, e.g. ``neg_mean_squared_error``): error =
    -score; ``"one_minus"`` (all scores <= 1, e.g. accuracy, r2): error =
    1 - score; otherwise ``"linear"``: the model fits -score directly.
    """
    ok = scores[np.isfinite(scores)]
    if ok.size == 0 or np.all(ok <= 0):
        return "neg"
    if np.all(ok <= 1):
        return "one_minus"
    return "linear"


def _to_loss(scores: np.ndarray, kind: str) -> np.ndarray:
    """Surrogate targets (to minimise); failures get the worst finite loss."""
    if kind == "neg":
        loss = np.log(np.maximum(-scores, _ERROR_FLOOR))
    elif kind == "one_minus":
        loss = np.log(np.maximum(1.0 - scores, _ERROR_FLOOR))
    else:
        loss = -scores
    finite = np.isfinite(loss)
    loss[~finite] = loss[finite].max() if finite.any() else 0.0
    return loss


def _to_score(loss: np.ndarray, kind: str) -> np.ndarray:
    """Inverse of :func:`_to_loss` for predicted losses."""
    if kind == "neg":
        return -np.exp(loss)
    if kind == "one_minus":
        return 1.0 - np.exp(loss)
    return -loss


def make_kernels(n_x: int, *, with_fraction: bool = True) -> tuple[Any, Any]:
    """The loss and cost kernels of FABOLAS (paper 001, eq. 6).

    Parameters
    ----------
    n_x : int
        Width of the configuration's unit-cube encoding; the fraction
        ``s~`` is column ``n_x``.
    with_fraction : bool, default=True
        False gives the plain Matern kernel over ``x`` (the fallback to
        BO on all data).

    Returns
    -------
    loss_kernel, cost_kernel : Kernel
        ``Matern52_ARD(x) * BasisKernel(s~, "loss")`` and
        ``Matern52_ARD(x) * BasisKernel(s~, "cost")``, log length scales
        bounded to the paper's [-10, 2].
    """
    x_dims = list(range(int(n_x)))

    def kernel(basis: str) -> Any:
        k = Matern52(dims=x_dims, log_length_bounds=_LOG_LENGTH_BOUNDS)
        if not with_fraction:
            return k
        return ProductKernel(k, BasisKernel(int(n_x), basis=basis))

    return kernel("loss"), kernel("cost")


class FabolasSearchCV(BaseBayesSearchCV):
    """FABOLAS: fast Bayesian optimisation of hyperparameters on large data sets.

    The training-set fraction ``s`` is an extra, continuous input of the
    model: each trial fits on a subset of each split's training rows and is
    scored on the split's full validation rows. Two Gaussian processes model
    the validation loss and the cost (seconds) as functions of the
    configuration ``x`` and of ``s~ = log(s / s_min) / log(1 / s_min)``
    (``s~ = 1`` is all data). The next ``(x, s)`` maximises the information
    gained about the location of the minimum of the loss *on all data*
    (entropy search) per second of predicted cost plus the optimiser's own
    overhead, so cheap small subsets are used while they are informative
    about the full-data optimum and larger ones when they are needed
    (Klein et al. 2017, eq. 7).

    - **Loss model**: log validation error (``1 - score`` for scores bounded
      by one such as accuracy, ``-score`` for ``neg_*`` scorers, clipped at
      1e-4; scores above one are modelled as ``-score`` directly) with kernel
      ``Matern52_ARD(x, x') * phi(s~)^T Sigma phi(s~')`` and
      ``phi(s~) = (1, (1 - s~)^2)``: a loss that changes monotonically with
      the data size and flattens out at ``s = 1``.
    - **Cost model**: log seconds (fit plus score time, summed over splits),
      same form with ``phi(s~) = (1, s~)`` (polynomial complexity).
      ``Sigma`` is a full 2x2 matrix parametrised by its Cholesky factor.
    - **Hyperparameters** are integrated out by slice sampling
      (``n_hyper_samples`` samples) under the paper's priors: log length
      scales uniform on [-10, 2], log-normal amplitude, horseshoe prior
      (scale 0.1) on the noise variance.
    - **Acquisition**: ``p_min`` on ``n_representers`` points at ``s = 1``
      drawn proportionally to expected improvement (plus the incumbent) is
      estimated by Monte Carlo with common random numbers; the effect of a
      fantasised observation at ``(x, s)`` is the exact rank-1 update of the
      representers' joint posterior, averaged over the fantasy value by
      Gauss-Hermite quadrature (see :mod:`skbayes_search.entropy_search`).
      It is averaged over the hyperparameter samples and maximised jointly
      over ``(x, s~)``. Cost: ``O(S N Q)`` per candidate and hyperparameter
      sample (``S`` = 1024 draws, ``N = n_representers``, ``Q`` = 5 nodes);
      about 300 candidates are screened on the first 128 draws and the best
      16 scored on all 1024, which with the defaults takes about 0.4-0.6 CPU
      seconds per proposal (``benchmarks/fabolas_overhead.py``).
    - **Incumbent** after every iteration: the evaluated configuration with
      the lowest predicted loss at ``s = 1``. At the end, if it was never
      evaluated on all data, it is evaluated there once (within ``n_iter``
      and, as far as the cost model can tell, within ``max_time``), so
      ``best_score_`` is a measured full-data score and ``best_index_``
      points to that row.

    Parameters
    ----------
    estimator : estimator object
        Object implementing ``fit``; cloned for every fit.
    search_spaces : dict or list of dict
        Parameter names mapped to :class:`~skbayes_search.space.Real`,
        :class:`~skbayes_search.space.Integer`,
        :class:`~skbayes_search.space.Categorical`, lists, scipy.stats frozen
        distributions or ``(low, high[, prior])`` tuples, as in
        :class:`~skbayes_search.BayesSearchCV`.
    n_iter : int, default=50
        Number of trials, the final full-data evaluation of the incumbent
        included.
    max_time : float, default=None
        Wall-clock budget in seconds, surrogate overhead included. Only
        trials whose cost fits in the time left are proposed (by the cost
        model's one-sided 95 % upper bound, or, if larger, that of a slow fit
        on the trial's fraction; see
        :func:`skbayes_search.strategies.fabolas.slow_cost`), after setting
        aside the duration of one more proposal and the incumbent's final
        full-data evaluation; when none fits the search ends. That evaluation
        is budgeted at the larger of the cost model's bound and the
        incumbent's own fits scaled to all rows along the curve all fits
        trace (a fixed cost plus a variable part convex in log-log, growing
        at most cubically, and at least linearly unless many fits over a wide
        span of fractions show slower growth; see
        :func:`skbayes_search.strategies.fabolas.cost_curve`) with a 1.5x
        margin, or, if larger, a slow full-data fit of the configurations
        tried on the larger subsets (the one-sided 95 % bound of their costs
        scaled to all rows, since the configuration evaluated last may differ
        and small fits hide which configurations grow slowest), divided among
        the workers, and at most half of ``max_time``. It runs even if that
        was too optimistic.
    min_resources : "auto" or int, default="auto"
        Fewest training rows per fit (the smallest fraction ``s_min`` is
        ``min_resources / n_train``, with ``n_train`` the training rows of
        the smallest split). ``"auto"``: for classifiers the larger of
        ``10 * n_classes`` and ``2 * n_splits * n_classes``; otherwise
        ``MIN_RESOURCES_REGRESSION`` (100) rows. When
        ``n_train / min_resources < 16`` the range of fractions is too narrow
        to be useful: a warning is raised and every trial runs on all data
        (plain entropy-search BO through the same code). Raise it when
        subsets this small would rank configurations differently from all
        data (few rows per class): the model cannot foresee learning curves
        that cross above ``s_min``.
    initial_fractions : sequence of float, default=(1/64, 1/32, 1/16, 1/8)
        Training fractions of the initial design, used in turn; each in
        (0, 1] and raised to at least ``min_resources`` rows.
    n_initial_points : int, default=10
        Configurations of the initial design (scrambled Sobol points),
        dispatched as one batch (``max_time`` is checked after it).
    n_representers : int, default=50
        Points at ``s = 1`` on which the distribution of the minimiser is
        represented (at least 2).
    n_hyper_samples : int, default=10
        GP hyperparameter samples kept per iteration, for each model.
    overhead : "measured" or float, default="measured"
        Seconds added to the predicted cost of every candidate.
        ``"measured"`` uses the time the previous proposal took; a float
        fixes it; 0 disables it.
    scoring : str, callable, list, tuple or dict, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    n_jobs : int, default=None
        Number of jobs running folds in parallel (through joblib). The
        workers wait while the search proposes the next trial, so the
        proposal computes the acquisitions of the hyperparameter samples in
        up to ``n_jobs`` threads (same result as with one).
    refit : bool, str or callable, default=True
        As in :class:`~sklearn.model_selection.GridSearchCV`;
        ``best_estimator_`` is refitted on all data.
    cv : int, cross-validation generator or iterable, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`; the splits are
        drawn once and reused by every trial.
    verbose : int, default=0
        ``1`` shows a progress bar when tqdm is installed (the ``progress``
        extra) and prints one line per trial otherwise; ``> 1`` prints one
        line per trial and scikit-learn's line per fit.
    pre_dispatch : int or str, default="2*n_jobs"
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    random_state : int, RandomState instance or None, default=None
        Seeds the subsets, the initial design, the MCMC chains, the
        representers, the Monte Carlo draws and the acquisition search.
    error_score : "raise" or float, default=np.nan
        Score recorded for a failed fit; the loss model sees the worst
        observed loss there.
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
        ``iter``, ``elapsed_time``, ``predicted_full_score`` (the model's
        predicted full-data score of the trial's configuration, from the
        last model fit; nan before the first model) and
        ``acquisition_value`` (information gain per second; nan for the
        initial design and the final evaluation).
    best_index_ : int
        Row of the incumbent's full-data evaluation (with a callable
        ``refit``, whatever it returns; if that evaluation failed,
        scikit-learn's rule over all rows).
    best_score_ : float
        Measured mean cross-validated score of that row.
    best_params_ : dict
        Parameters of the incumbent.
    best_estimator_ : estimator
        Refitted on all data with ``best_params_`` (when ``refit``).
    incumbent_trajectory_ : list of (float, dict, float)
        After every model fit: (seconds since ``fit`` started, incumbent
        parameters, predicted full-data score).
    min_resources_ : int
        Resolved ``min_resources``.
    fallback_ : bool
        Whether the search ran plain BO on all data (too small a data set).
    scorer_ : function or dict
        Scorer(s) used.
    n_splits_ : int
        Number of CV splits.
    refit_time_ : float
        Seconds to refit the best estimator.
    multimetric_ : bool
        Whether several metrics were evaluated.

    See Also
    --------
    BayesSearchCV : GP-EI-MCMC on all data.
    MultiStageBayesSearchCV : BO on growing subsets of the training data.

    References
    ----------
    A. Klein, S. Falkner, S. Bartels, P. Hennig, F. Hutter. Fast Bayesian
    Optimization of Machine Learning Hyperparameters on Large Datasets.
    AISTATS 2017.

    P. Hennig, C. J. Schuler. Entropy Search for Information-Efficient Global
    Optimization. JMLR 13, 2012.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skbayes_search import FabolasSearchCV, Real
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> search = FabolasSearchCV(
    ...     LogisticRegression(),
    ...     {"C": Real(1e-3, 1e2, prior="log-uniform")},
    ...     n_iter=8, n_initial_points=4, n_representers=10, n_hyper_samples=2,
    ...     cv=3, random_state=0,
    ... ).fit(X, y)
    >>> search.cv_results_["resource_fraction"][search.best_index_]
    np.float64(1.0)
    """

    _parameter_constraints: dict = {
        **BaseBayesSearchCV._parameter_constraints,
        "min_resources": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "initial_fractions": ["array-like"],
        "n_initial_points": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_representers": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_hyper_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "overhead": [
            StrOptions({"measured"}),
            Interval(numbers.Real, 0, None, closed="left"),
        ],
    }

    def __init__(
        self,
        estimator: Any,
        search_spaces: dict | list,
        *,
        n_iter: int = 50,
        max_time: float | None = None,
        min_resources: str | int = "auto",
        initial_fractions: Any = (1 / 64, 1 / 32, 1 / 16, 1 / 8),
        n_initial_points: int = 10,
        n_representers: int = 50,
        n_hyper_samples: int = 10,
        overhead: str | float = "measured",
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
        self.min_resources = min_resources
        self.initial_fractions = initial_fractions
        self.n_initial_points = n_initial_points
        self.n_representers = n_representers
        self.n_hyper_samples = n_hyper_samples
        self.overhead = overhead

    # ------------------------------------------------------------------
    # validation and set-up
    # ------------------------------------------------------------------
    def _resolve_min_resources(self, ctx: SearchContext) -> int:
        if self.min_resources != "auto":
            return int(self.min_resources)
        if ctx.n_classes is None:
            return MIN_RESOURCES_REGRESSION
        return max(10 * ctx.n_classes, 2 * ctx.n_splits * ctx.n_classes)

    def _check_strategy_params(self, ctx: SearchContext) -> None:
        fractions = np.asarray(self.initial_fractions, dtype=object).ravel()
        if fractions.size == 0:
            raise ValueError("initial_fractions must contain at least one fraction.")
        for f in fractions:
            if (
                isinstance(f, bool | np.bool_)
                or not isinstance(f, numbers.Real)
                or not 0.0 < float(f) <= 1.0
            ):
                raise ValueError(
                    "initial_fractions must be numbers in (0, 1]; got "
                    f"{list(self.initial_fractions)!r}."
                )
        if self.min_resources != "auto" and int(self.min_resources) > ctx.n_train:
            raise ValueError(
                f"min_resources={self.min_resources} is larger than the "
                f"{ctx.n_train} training rows of the smallest CV split."
            )

    def _init_search(self, ctx: SearchContext) -> None:
        self.min_resources_ = min(self._resolve_min_resources(ctx), ctx.n_train)
        self.fallback_ = ctx.n_train / self.min_resources_ < MIN_RANGE_RATIO
        if self.fallback_:
            warnings.warn(
                f"FabolasSearchCV: {ctx.n_train} training rows per split are "
                f"fewer than {MIN_RANGE_RATIO} x min_resources="
                f"{self.min_resources_}, too narrow a range of subset sizes; "
                "running plain Bayesian optimisation (entropy search) on all "
                "data instead.",
                UserWarning,
                stacklevel=4,
            )
        self.incumbent_trajectory_ = []
        self._log_smin = float(np.log(self.min_resources_ / ctx.n_train))
        self._n_train = ctx.n_train
        self._n_x = ctx.space.n_dims
        # a resumed search (trials read back from a store) keeps counting
        self._n_asks = max((t.iter for t in ctx.trials), default=-1) + 1
        # latest predicted full-data score per cv_results_ row
        self._pred_full: dict[int, float] = {}
        self._last_overhead: float | None = None
        self._best_row: int | None = None
        self._kind = "neg"
        seed = ctx.seed
        loss_kernel, cost_kernel = make_kernels(
            self._n_x, with_fraction=not self.fallback_
        )
        self._loss_gp = GPSurrogate(
            loss_kernel,
            hyperparameter_sampling="mcmc",
            n_samples=self.n_hyper_samples,
            random_state=seed,
        )
        self._cost_gp = GPSurrogate(
            cost_kernel,
            hyperparameter_sampling="mcmc",
            n_samples=self.n_hyper_samples,
            random_state=seed + 1,
        )
        design_rng = np.random.default_rng([seed, 4])
        self._design_params = ctx.space.from_unit(
            ctx.space.sample(self.n_initial_points, design_rng)
        )

    # ------------------------------------------------------------------
    # the fraction axis
    # ------------------------------------------------------------------
    def _fraction_to_s(self, fraction: np.ndarray) -> np.ndarray:
        s = 1.0 - np.log(np.asarray(fraction, dtype=float)) / self._log_smin
        return np.clip(s, 0.0, 1.0)

    def _s_to_fraction(self, s: np.ndarray) -> np.ndarray:
        return np.exp((1.0 - np.asarray(s, dtype=float)) * self._log_smin)

    def _snap_s(self, s: np.ndarray) -> np.ndarray:
        # s~ of the row count a fit will really see
        rows = np.round(self._s_to_fraction(np.clip(s, 0.0, 1.0)) * self._n_train)
        rows = np.clip(rows, self.min_resources_, self._n_train)
        return self._fraction_to_s(rows / self._n_train)

    def _snap(self, ctx: SearchContext, U: np.ndarray) -> np.ndarray:
        U = np.array(U, dtype=float, copy=True)
        U[:, : self._n_x] = ctx.space.snap(U[:, : self._n_x])
        if not self.fallback_:
            U[:, self._n_x] = self._snap_s(U[:, self._n_x])
        return U

    def _with_s(self, X: np.ndarray, s: Any) -> np.ndarray:
        if self.fallback_:
            return np.asarray(X, dtype=float)
        s_col = np.broadcast_to(np.asarray(s, dtype=float), (X.shape[0],))
        return np.column_stack([X, s_col])

    def _inputs(self, ctx: SearchContext) -> np.ndarray:
        fractions = np.array([t.n_resources / ctx.n_train for t in ctx.trials])
        return self._with_s(ctx.X(), self._fraction_to_s(fractions))

    # ------------------------------------------------------------------
    # models and incumbent
    # ------------------------------------------------------------------
    def _fit_models(self, ctx: SearchContext) -> np.ndarray:
        Xin = self._inputs(ctx)
        scores = ctx.scores()
        self._kind = _error_kind(scores)
        self._loss_gp.fit(Xin, _to_loss(scores, self._kind))
        self._cost_gp.fit(Xin, np.log(ctx.costs()))
        return Xin

    @staticmethod
    def _mean(surrogate: GPSurrogate, Xin: np.ndarray) -> np.ndarray:
        """Predictive means (original units) per hyperparameter sample.

        Same as ``surrogate.predict(Xin)[0]`` without entering a thread-pool
        limit per call (the callers already run under one).
        """
        means = [m.predict(Xin)[0] for m in surrogate.models_]
        return surrogate.y_mean_ + surrogate.y_std_ * np.vstack(means)

    def _cost_upper(self, Xin: np.ndarray) -> np.ndarray:
        """A cautious cost in seconds for budgeting: the one-sided 95 % bound
        of the log-cost prediction, averaged over hyperparameter samples.

        Extrapolating the cost to larger fractions is uncertain (fit time is
        often superlinear in the rows and strongly depends on ``x``), and
        overrunning ``max_time`` costs more than stopping a little early.
        """
        gp = self._cost_gp
        bounds = []
        for m in gp.models_:
            mu, var = m.predict(Xin)
            bounds.append(gp.y_mean_ + gp.y_std_ * (mu + _Z95 * np.sqrt(var)))
        return np.exp(np.vstack(bounds)).mean(axis=0)

    @staticmethod
    def _succeeded(ctx: SearchContext) -> list:
        """The finished trials with a finite score: those whose cost the
        budget's cost curve reads."""
        return [t for t in ctx.trials if not t.failed and np.isfinite(t.score)]

    def _full_data_seconds(self, ctx: SearchContext, inc: int) -> float:
        """Cautious wall-clock seconds of the incumbent's full-data evaluation:
        the larger of the cost model's bound and :func:`reserve_seconds`."""
        x = ctx.trials[inc].x
        ok = self._succeeded(ctx)
        scaled = reserve_seconds(
            [t.fraction for t in ok],
            ctx.costs(ok),
            [np.array_equal(t.x, x) for t in ok],
            ctx.n_splits,
            ctx.n_jobs_effective,
        )
        bound = float(self._cost_upper(self._with_s(x[None, :], 1.0))[0])
        return max(scaled, _wall_seconds(bound, ctx.n_splits, ctx.n_jobs_effective))

    def _predict_full_loss(self, X: np.ndarray) -> np.ndarray:
        """Mean predicted loss at s = 1, averaged over hyperparameter samples."""
        return self._mean(self._loss_gp, self._with_s(X, 1.0)).mean(axis=0)

    def _update_incumbent(self, ctx: SearchContext) -> int:
        """Refresh predictions at s = 1; return the incumbent's trial index."""
        X = ctx.X()
        pred = self._predict_full_loss(X)
        scores = _to_score(pred, self._kind)
        self._pred_full.update((i, float(v)) for i, v in enumerate(scores))
        # failed trials are never the incumbent
        ok = np.isfinite(ctx.scores())
        inc = int(np.flatnonzero(ok)[np.argmin(pred[ok])])
        self.incumbent_trajectory_.append(
            (ctx.elapsed(), dict(ctx.trials[inc].params), float(scores[inc]))
        )
        return inc

    def _full_data_row(self, ctx: SearchContext, inc: int) -> int | None:
        """A successful all-data trial of the incumbent's configuration."""
        x = ctx.trials[inc].x
        for i in range(len(ctx.trials) - 1, -1, -1):
            t = ctx.trials[i]
            if (
                t.n_resources >= ctx.n_train
                and not t.failed
                and np.isfinite(t.score)
                and np.array_equal(t.x, x)
            ):
                return i
        return None

    # ------------------------------------------------------------------
    # the acquisition
    # ------------------------------------------------------------------
    def _representers(self, ctx: SearchContext, inc: int) -> np.ndarray:
        """Points at s = 1 where the full-data minimum plausibly lies."""
        rng = ctx.rng
        X_obs = ctx.X()
        pred = self._predict_full_loss(X_obs)
        top = X_obs[np.argsort(pred, kind="stable")[:_N_SEEDS]]
        local = top[:, None, :] + 0.05 * rng.standard_normal((len(top), 32, self._n_x))
        pool = np.vstack(
            [
                X_obs[inc][None, :],
                ctx.space.sample(_N_POOL, rng),
                ctx.space.snap(np.clip(local.reshape(-1, self._n_x), 0.0, 1.0)),
                X_obs,
            ]
        )
        pool_x = np.unique(pool, axis=0)
        inc_idx = int(np.argmin(np.abs(pool_x - X_obs[inc]).max(axis=1)))
        Zin = self._with_s(pool_x, 1.0)
        # EI at s = 1 averaged over hyperparameter samples, each below its own
        # predicted incumbent value
        log_eis = []
        for model in self._loss_gp.models_:
            mu, var = model.predict(Zin)
            best = model.predict(self._with_s(X_obs[inc][None, :], 1.0))[0][0]
            log_eis.append(log_ei(mu, np.sqrt(var), best))
        log_w = logsumexp(np.vstack(log_eis), axis=0) - np.log(len(log_eis))
        idx = sample_representers(log_w, self.n_representers, rng, include=[inc_idx])
        return Zin[idx]

    def _acquisition(
        self,
        ctx: SearchContext,
        Z: np.ndarray,
        models: list,
        overhead: float,
        max_cost: float = np.inf,
        pmap: Callable = map,
    ) -> tuple[Any, Any]:
        """Vectorised information gain per second for a set of loss models.

        Returns a cheap screening version (the first ``_N_SCREEN_SAMPLES``
        common draws) and the precise one (all ``N_PMIN_SAMPLES``).
        Candidates whose cautious cost (the larger of the cost GP's 95 %
        bound and :func:`slow_cost`) exceeds ``max_cost`` seconds get
        ``-inf`` (they would overrun ``max_time``). ``pmap`` maps the work
        of each hyperparameter sample (a thread pool's ``map`` spreads it
        over the cores the search's workers leave idle while it thinks).
        """
        normals = standard_normal_draws(N_PMIN_SAMPLES, len(Z) + 1, ctx.rng)

        def prepare(model: Any) -> tuple:
            mean_z, cov_z = model.predict(Z, full_cov=True)
            post = RepresenterPosterior(mean_z, cov_z, normals)
            theta = model.kernel_theta_
            amp = model.amplitude_
            Vz = solve_triangular(
                model.L_, amp * model.kernel(theta, model.X_, Z), lower=True
            )
            return model, post, Vz

        parts = list(pmap(prepare, models))
        cost_gp = self._cost_gp
        if np.isfinite(max_cost):
            ok = self._succeeded(ctx)
            fractions = [t.fraction for t in ok]
            costs = ctx.costs(ok)
            c0, curve = cost_curve(fractions, costs)

        def func(U: np.ndarray, n_samples: int | None = None) -> np.ndarray:
            # called under the caller's threadpool_limits(1)
            U = np.atleast_2d(U)

            def gain(part: tuple) -> np.ndarray:
                model, post, Vz = part
                theta, amp = model.kernel_theta_, model.amplitude_
                Vu = solve_triangular(
                    model.L_, amp * model.kernel(theta, model.X_, U), lower=True
                )
                cross = amp * model.kernel(theta, U, Z) - Vu.T @ Vz
                var_f = amp * model.kernel.diag(theta, U) - np.einsum(
                    "ij,ij->j", Vu, Vu
                )
                var_y = np.maximum(var_f, 0.0) + model.noise_var_
                return post.information_gain(
                    cross, var_y, N_QUADRATURE, n_samples=n_samples
                )

            gains = np.vstack(list(pmap(gain, parts)))
            log_cost = self._mean(cost_gp, U)
            values = fabolas_acquisition(gains, log_cost, overhead)
            if np.isfinite(max_cost):
                # the cost GP's power law under-predicts large fractions, and
                # small fits hide the slowest configurations: on SVC with
                # credit_default one proposal on 93 % of the rows ran 257 s
                to = (
                    np.ones(len(U))
                    if self.fallback_
                    else self._s_to_fraction(U[:, self._n_x])
                )
                cost = np.maximum(
                    self._cost_upper(U), slow_cost(fractions, costs, c0, curve, to)
                )
                values = np.where(cost > max_cost, -np.inf, values)
            return values

        def screen(U: np.ndarray) -> np.ndarray:
            return func(U, _N_SCREEN_SAMPLES)

        return screen, func

    def _overhead(self, started: float) -> float:
        if self.overhead != "measured":
            return float(self.overhead)
        if self._last_overhead is not None:
            return self._last_overhead
        # first proposal: the time spent so far (model fits) is a lower bound
        return time.perf_counter() - started

    # ------------------------------------------------------------------
    # strategy hooks
    # ------------------------------------------------------------------
    def _pending_design(self, ctx: SearchContext) -> list[int]:
        """Indices of the design points no finished trial has evaluated.

        Matched by configuration, not counted: the design goes out as one
        batch whose trials finish in any order, so a search stopped in the
        middle of it and resumed must run the points that did not finish.
        """
        done = [t.params for t in ctx.trials]
        return [i for i, p in enumerate(self._design_params) if p not in done]

    def _design_trials(
        self, ctx: SearchContext, n_slots: int, it: int, pending: list[int]
    ) -> list[Trial]:
        if pending:
            chosen = pending[:n_slots]
            params_list = [self._design_params[i] for i in chosen]
            # each design point keeps its place in the cycle of fractions
            positions = chosen
        else:
            # too few successes for a model: keep exploring at random
            U = ctx.space.sample(n_slots, ctx.rng, method="random")
            params_list = ctx.space.from_unit(U)
            positions = range(len(ctx.trials), len(ctx.trials) + n_slots)
        fractions = np.asarray(self.initial_fractions, dtype=float).ravel()
        s_min = self.min_resources_ / ctx.n_train
        trials = []
        for params, pos in zip(params_list, positions):
            f = 1.0 if self.fallback_ else fractions[pos % fractions.size]
            trials.append(
                Trial(
                    params,
                    float(min(1.0, max(f, s_min))),
                    iter=it,
                    extras={
                        "predicted_full_score": np.nan,
                        "acquisition_value": np.nan,
                    },
                )
            )
        return trials

    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        started = time.perf_counter()
        it = self._n_asks
        self._n_asks += 1
        n_done = len(ctx.trials)
        # the last trial of the budget is kept for the final full-data
        # evaluation of the incumbent (see _finalize)
        if not self.fallback_ and n_done and ctx.n_remaining() <= 1:
            return []
        if not self.fallback_:
            n_slots = min(n_slots, ctx.n_remaining() - 1)
        pending = self._pending_design(ctx)
        if pending or ctx.n_succeeded() < 2:
            if not self.fallback_:
                # The design points depend neither on each other nor on any
                # result, so they go out as one batch: one small-subset trial
                # at a time leaves workers idle between trials (with 5 folds
                # on 2 cores, every third round). Not in the fallback, where
                # each design point is a full-data fit and max_time must be
                # able to stop between them.
                n_slots = max(n_slots, min(len(pending), ctx.n_remaining() - 1))
            return self._design_trials(ctx, n_slots, it, pending)
        with threadpool_limits(1):
            trials = self._propose(ctx, n_slots, it, started)
        self._last_overhead = time.perf_counter() - started
        return trials

    def _propose(
        self, ctx: SearchContext, n_slots: int, it: int, started: float
    ) -> list[Trial]:
        """One BO iteration: fit, pick the incumbent, maximise eq. 7."""
        Xin = self._fit_models(ctx)
        inc = self._update_incumbent(ctx)
        # seconds a proposed trial may take: with max_time, what is left after
        # this proposal and the incumbent's full-data evaluation
        max_cost = np.inf
        if ctx.max_time is not None:
            reserve = self._last_overhead or 0.0
            if not self.fallback_ and self._full_data_row(ctx, inc) is None:
                reserve += min(
                    self._full_data_seconds(ctx, inc),
                    _RESERVE_MAX_SHARE * ctx.max_time,
                )
            max_cost = ctx.time_left() - reserve
            if max_cost <= 0:
                return []

        Z = self._representers(ctx, inc)
        overhead = self._overhead(started)
        models = list(self._loss_gp.models_)
        X_obs = ctx.X()
        top = np.argsort(self._predict_full_loss(X_obs), kind="stable")[:_N_SEEDS]
        seeds = [Xin[top]]
        if not self.fallback_:
            # the most promising configurations on the cheapest subset too
            seeds.append(self._with_s(X_obs[top], 0.0))
        seeds = np.vstack(seeds)
        exclude = Xin.copy()

        # Trials are proposed only when the previous ones have finished, so
        # the search's workers sit idle while it thinks: the proposal may use
        # as many threads as there are workers (numpy frees the GIL in the
        # array work that dominates it). Never more threads than local
        # cores: with a dask backend the workers may be on other machines.
        n_threads = min(ctx.n_jobs_effective, len(models), os.cpu_count() or 1)
        with _thread_map(n_threads) as pmap:
            trials = []
            for _ in range(n_slots):
                screen, precise = self._acquisition(
                    ctx, Z, models, overhead, max_cost, pmap
                )
                u, value = maximize(
                    screen,
                    Xin.shape[1],
                    rng=ctx.rng,
                    snap=lambda U: self._snap(ctx, U),
                    seeds=seeds,
                    exclude=exclude,
                    n_candidates=_N_CANDIDATES,
                    n_polish=_N_POLISH,
                    refine=precise,
                    n_refine=_N_REFINE,
                )
                if not np.isfinite(value):
                    break  # nothing affordable in the time left
                x = u[: self._n_x]
                fraction = 1.0
                if not self.fallback_:
                    rows = round(float(self._s_to_fraction(u[self._n_x])) * ctx.n_train)
                    fraction = min(1.0, max(rows, self.min_resources_) / ctx.n_train)
                predicted = _to_score(self._predict_full_loss(x[None, :]), self._kind)
                trials.append(
                    Trial(
                        ctx.space.from_unit(x[None, :])[0],
                        float(fraction),
                        iter=it,
                        extras={
                            "predicted_full_score": float(predicted[0]),
                            "acquisition_value": float(value),
                        },
                    )
                )
                exclude = np.vstack([exclude, u])
                if len(trials) < n_slots:
                    # a pending point: condition every loss model on its predicted
                    # mean (a fantasy that only shrinks the variance there), so
                    # the next slot goes where information is still to be had
                    models = [
                        m.condition(u[None, :], m.predict(u[None, :])[0])
                        for m in models
                    ]
        return trials

    def _finalize(self, ctx: SearchContext) -> list[Trial]:
        self._best_row = None
        ok = np.isfinite(ctx.scores()) if ctx.trials else np.zeros(0, bool)
        if not ok.any():
            if ctx.trials:
                return []  # every trial failed; the base reports it
            # no trial at all (n_iter=1): evaluate the first design point
            params = self._design_params[0]
            self._best_row = 0
            return [
                Trial(
                    params,
                    1.0,
                    iter=self._n_asks,
                    extras={
                        "predicted_full_score": np.nan,
                        "acquisition_value": np.nan,
                    },
                )
            ]
        if ok.sum() >= 2:
            with threadpool_limits(1):
                self._fit_models(ctx)
                inc = self._update_incumbent(ctx)
            predicted = self._pred_full[inc]
        else:
            # a single success: nothing to model, it is the incumbent
            inc = int(np.flatnonzero(ok)[0])
            predicted = np.nan
        row = self._full_data_row(ctx, inc)
        if row is not None:
            self._best_row = row
            return []
        self._best_row = len(ctx.trials)
        self._pred_full[self._best_row] = predicted
        return [
            Trial(
                dict(ctx.trials[inc].params),
                1.0,
                iter=self._n_asks,
                extras={"predicted_full_score": predicted, "acquisition_value": np.nan},
            )
        ]

    def _more_results(self, ctx: SearchContext) -> dict[str, list]:
        more = super()._more_results(ctx)
        n = len(ctx.trials)
        # every row gets the last model's prediction, not the one made when
        # the trial was proposed, so the incumbent is the row with the best
        # predicted_full_score among successful trials
        more["predicted_full_score"] = [
            self._pred_full.get(i, np.nan) for i in range(n)
        ]
        more.setdefault("acquisition_value", [np.nan] * n)
        return more

    def _select_best(self, results: dict, refit_metric: str) -> int:
        row = self._best_row
        if (
            callable(self.refit)
            or row is None
            or row >= len(results["params"])
            or not np.isfinite(results[f"mean_test_{refit_metric}"][row])
        ):
            return super()._select_best(results, refit_metric)
        return int(row)
