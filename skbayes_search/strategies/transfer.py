"""TransferBayesSearchCV: warm-started BO from earlier datasets (Yogatama & Mann 2014).

Every search with a :class:`~skbayes_search.TrialStore` leaves its run there.
A transfer search reads the finished runs of the same estimator over the same
search space, turns each dataset's scores into deviations from that
dataset's mean divided by its standard deviation, and fits one GP on all of
them together with the current dataset's own (re-standardised every
iteration) observations.
"""

from __future__ import annotations

import math
import numbers
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import BaseBayesSearchCV, shared_params
from .._journal import as_store
from .._numerics import single_blas_thread
from .._trial import SearchContext, Trial
from ..acquisition import make_acquisition
from ..gp import GPSurrogate
from ..gp.transfer_kernels import mkl_kernel, sqe_kernel
from ..optimize import maximize
from ..storage import TrialStore

__all__ = ["TransferBayesSearchCV"]

# Best points (of the current dataset, and of the transferred datasets) around
# which the acquisition optimiser searches besides its Sobol candidates.
_N_SEEDS = 5
# Standard deviations below this (relative to the mean's magnitude) mean the
# dataset's observations are all equal: its responses are then all zero.
_STD_TOL = 1e-12
_META_KEYS = ("n_samples", "n_features", "n_classes")
# Acquisition candidates; a small finite space needs far fewer (they all snap
# onto its few points).
_N_CANDIDATES = 2048
# Weight, in trials, of the prior datasets' typical std in the current
# dataset's scale estimate (see estimate_location_scale).
_N_PSEUDO = 2.0


# ----------------------------------------------------------------------------
# Response surface (the paper's section 3.2)
# ----------------------------------------------------------------------------
def standardise(losses: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Deviations from the mean divided by the standard deviation.

    The paper's maximum-likelihood estimates: ``mean = sum(f) / t`` and
    ``std = sqrt(sum((f - mean)^2) / t)``. With fewer than two distinct
    values the std is taken as 1 (the responses are then all zero).

    Parameters
    ----------
    losses : ndarray of shape (t,)
        Finite losses of one dataset.

    Returns
    -------
    responses : ndarray of shape (t,)
    mean, std : float
    """
    losses = np.asarray(losses, dtype=float)
    if losses.size == 0:
        return losses.copy(), math.nan, math.nan
    mean = float(np.mean(losses))
    std = float(np.std(losses))
    if not std > _STD_TOL * max(1.0, abs(mean)):
        # no spread: the rounding residue of the mean is not a deviation
        return np.zeros_like(losses), mean, 1.0
    return (losses - mean) / std, mean, std


def estimate_location_scale(
    losses: np.ndarray,
    predicted: np.ndarray,
    prior_std: float,
    residual_var: float,
    n_pseudo: float = _N_PSEUDO,
) -> tuple[float, float]:
    """Current dataset's mean and std given the transferred prediction.

    The paper's model is ``f_d(x) = mu_d + sigma_d y(x)`` with ``y`` the common
    (standardised) response surface. Its plain moment estimates of ``mu_d``
    and ``sigma_d`` assume the trials are a random sample of the space; they
    are not (the first trial is the best predicted point, the next ones
    maximise EI), so with few trials the good first point is declared
    "average" (response 0) and two close scores become -1 and +1. Here the
    transferred surface's prediction ``m_t`` of ``y`` at each trial (from the
    prior datasets only, computed once per trial) is used instead: the
    estimates maximise the posterior of the regression ``f_t = mu + sigma
    m_t + e_t``, ``e_t ~ N(0, sigma0^2 r)``, with a flat prior on ``mu`` and
    ``sigma ~ N(sigma0, sigma0^2 / n_pseudo)`` centred on the prior datasets'
    typical std ``sigma0``::

        sigma = (S_mf / r + n_pseudo sigma0) / (S_mm / r + n_pseudo)
        mu = mean(f) - sigma mean(m)

    (``S`` centred sums of squares and products). One trial gives
    ``sigma = sigma0`` and a response equal to its prediction; with more
    trials the slope of the scores on the predictions takes over. The cost
    stays O(T) per iteration.

    Parameters
    ----------
    losses : ndarray of shape (t,)
        The current dataset's finite losses, ``t >= 1``.
    predicted : ndarray of shape (t,)
        The transferred surface's predicted response at those trials.
    prior_std : float
        ``sigma0`` (> 0), in loss units.
    residual_var : float
        ``r`` (> 0): variance of a response around its prediction.
    n_pseudo : float, default=2
        Weight of ``sigma0`` in trials.

    Returns
    -------
    mean, std : float
        ``std`` is at least ``prior_std / 10`` (a falling slope means the
        transferred prediction is wrong here, not that the scale is negative).
    """
    f = np.asarray(losses, dtype=float)
    m = np.asarray(predicted, dtype=float)
    fc, mc = f - f.mean(), m - m.mean()
    slope = (float(mc @ fc) / residual_var + n_pseudo * prior_std) / (
        float(mc @ mc) / residual_var + n_pseudo
    )
    std = max(slope, 0.1 * prior_std)
    return float(f.mean() - std * m.mean()), float(std)


def meta_feature_vector(meta: Mapping[str, Any]) -> np.ndarray:
    """``(log n_samples, log n_features, n_classes)`` of a run's stored meta.

    ``n_classes`` is 0 for regression (stored as null); an unknown
    ``n_features`` (``X`` without a shape) is nan and left out of distances.
    """
    values = []
    for key in ("n_samples", "n_features"):
        v = meta.get(key)
        values.append(math.log(v) if v is not None and v > 0 else math.nan)
    n_classes = meta.get("n_classes")
    values.append(0.0 if n_classes is None else float(n_classes))
    return np.asarray(values, dtype=float)


def _distances(current: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Euclidean distances over the coordinates known on both sides."""
    if others.shape[0] == 0:
        return np.empty(0)
    diff = others - current[None, :]
    return np.sqrt(np.nansum(diff * diff, axis=1))


@dataclass
class PriorDataset:
    """One finished earlier run, as the transfer GP uses it.

    ``X`` holds the unit-cube points of its full-data trials and ``losses``
    their finite losses (minus the score; failed trials get the run's worst
    loss, as in the current search).
    """

    run_id: int
    name: str
    meta: dict
    features: np.ndarray
    X: np.ndarray
    losses: np.ndarray
    dataset_name: str | None = None


def load_prior_datasets(
    store: TrialStore, run_id: int, n_dims: int
) -> list[PriorDataset]:
    """Finished runs of the current run's estimator class and search space.

    Only trials on all training rows (``fraction == 1``) count, since subset
    trials measure another function; runs with fewer than two such trials with
    a finite score carry no deviation from their mean and are skipped.

    Parameters
    ----------
    store : TrialStore
    run_id : int
        The current run (left out, and the reference for estimator/space).
    n_dims : int
        Width of the unit-cube encoding.

    Returns
    -------
    list of PriorDataset
        Oldest run first.
    """
    current = store.run(run_id)
    runs = store.runs(
        estimator_class=current["estimator_class"],
        space_signature=current["space_signature"],
        finished=True,
        exclude=run_id,
    )
    out = []
    for run in runs:
        xs, scores, names = [], [], set()
        for trial in store.trials(run["id"]):
            x = np.asarray(trial["x"], dtype=float)
            if float(trial["fraction"]) != 1.0 or x.shape != (n_dims,):
                continue
            xs.append(x)
            scores.append(_trial_score(trial))
            name = trial["extras"].get("dataset_name")
            if isinstance(name, str):
                names.add(name)
        scores = np.asarray(scores, dtype=float)
        finite = np.isfinite(scores)
        if finite.sum() < 2:
            continue
        losses = -scores
        losses[~finite] = losses[finite].max()
        meta = dict(run["meta"] or {})
        out.append(
            PriorDataset(
                run_id=int(run["id"]),
                name=run["name"],
                meta=meta,
                features=meta_feature_vector(meta),
                X=np.vstack(xs),
                losses=losses,
                dataset_name=names.pop() if len(names) == 1 else None,
            )
        )
    return out


def _trial_score(trial: dict) -> float:
    if trial["status"] == "failed":
        return math.nan
    score = trial["extras"].get("score")
    if score is None:
        # runs written without the journal's "score" extra: first metric
        test = trial["scores"]["test"]
        score = np.mean(next(iter(test.values())))
    return float(score)


class ResponseSurface:
    """The GP training set of the transfer search, rebuilt in O(T) per iteration.

    Inputs are ``[x, dataset, group]``: the unit-cube point, the dataset index
    (0 for the current dataset, 1, 2, ... for the prior ones) and a flag that
    is 1 for the current dataset and its nearest prior datasets. The prior
    datasets' standardised responses are computed once (their runs are
    finished); :meth:`training_set` only re-standardises the current dataset.

    Parameters
    ----------
    prior : list of PriorDataset
    neighbours : collection of int
        Positions in ``prior`` of the nearest prior datasets.
    n_dims : int
        Width of the unit-cube encoding.
    """

    def __init__(self, prior: list[PriorDataset], neighbours: Any, n_dims: int):
        self.n_dims = int(n_dims)
        neighbours = set(int(i) for i in neighbours)
        blocks, ys, group_stds = [], [], []
        for i, data in enumerate(prior):
            y, _, std = standardise(data.losses)
            flag = 1.0 if i in neighbours else 0.0
            cols = np.tile([i + 1.0, flag], (len(y), 1))
            blocks.append(np.hstack([data.X, cols]))
            ys.append(y)
            if flag and np.any(y != 0.0):
                group_stds.append(std)
        self.X_prior = np.vstack(blocks) if blocks else np.empty((0, self.n_dims + 2))
        self.y_prior = np.concatenate(ys) if ys else np.empty(0)
        self.in_group = self.X_prior[:, -1] == 1.0
        # typical scale of the nearest datasets' losses: the current dataset's
        # scale before its own trials say otherwise
        self.prior_std = float(np.median(group_stds)) if group_stds else math.nan

    def augment(self, U: np.ndarray) -> np.ndarray:
        """Unit-cube points of the current dataset as GP inputs."""
        U = np.atleast_2d(np.asarray(U, dtype=float))
        return np.hstack([U, np.zeros((len(U), 1)), np.ones((len(U), 1))])

    def training_set(
        self,
        X_current: np.ndarray,
        losses_current: np.ndarray,
        predicted: np.ndarray | None = None,
        residual_var: float = 1.0,
    ) -> tuple[np.ndarray, np.ndarray, float, float]:
        """All prior responses plus the current ones, re-standardised.

        Parameters
        ----------
        X_current : ndarray of shape (t, n_dims)
        losses_current : ndarray of shape (t,)
        predicted : ndarray of shape (t,), default=None
            The transferred surface's predicted responses at ``X_current``.
            With them (and prior datasets in the group) the current mean and
            std come from :func:`estimate_location_scale`; without, they are
            the paper's moment estimates (:func:`standardise`).
        residual_var : float, default=1.0
            Variance of a response around its prediction.

        Returns
        -------
        X : ndarray of shape (n_prior + t, n_dims + 2)
        y : ndarray of shape (n_prior + t,)
            Prior responses, then ``(losses_current - mean) / std``.
        mean, std : float
            The current dataset's estimates (nan without current trials).
        """
        losses_current = np.asarray(losses_current, dtype=float)
        if (
            predicted is None
            or not np.isfinite(self.prior_std)
            or not len(losses_current)
        ):
            y_cur, mean, std = standardise(losses_current)
        else:
            mean, std = estimate_location_scale(
                losses_current, predicted, self.prior_std, residual_var
            )
            y_cur = (losses_current - mean) / std
        X = np.vstack([self.X_prior, self.augment(X_current)])
        return X, np.concatenate([self.y_prior, y_cur]), mean, std


def replace_coordinates(
    space: Any, x: np.ndarray, rng: np.random.Generator, probability: float
) -> tuple[np.ndarray, int]:
    """Replace each parameter of ``x`` by a uniform draw with ``probability``.

    A "coordinate" is one parameter (a categorical's one-hot columns move
    together); the draw is uniform over the parameter's range in the space's
    own scale (log scale for log-uniform priors). In a conditional space the
    choice of sub-space is one more coordinate: when it is replaced, the
    parameters of the drawn sub-space are drawn too, except those it shares
    with the proposal, which are replaced with ``probability`` like the
    others. The result is snapped.

    Returns
    -------
    x : ndarray of shape (n_dims,)
    n_replaced : int
        Number of coordinates replaced (the sub-space choice counts as one).
    """
    if probability <= 0.0:
        return x, 0
    proposal = space.from_unit(x[None, :])[0]
    draw = space.from_unit(space.sample(1, rng, "random"))[0]
    switch = bool(space.is_conditional and rng.random() < probability)
    params = dict(draw) if switch else dict(proposal)
    n_replaced = int(switch)
    for name in params:
        if name not in proposal or name not in draw:
            continue
        replace = rng.random() < probability
        params[name] = draw[name] if replace else proposal[name]
        n_replaced += int(replace)
    try:
        return space.to_unit([params])[0], n_replaced
    except ValueError:
        # a kept value lies outside the drawn sub-space's range: all drawn
        return space.to_unit([draw])[0], 1 + len(set(proposal) & set(draw))


def _n_candidates(space: Any) -> int:
    if space.cardinality > _N_CANDIDATES // 4:
        return _N_CANDIDATES
    return int(max(64, 4 * space.cardinality))


def _in(x: np.ndarray, points: np.ndarray) -> bool:
    if points.shape[0] == 0:
        return False
    return bool((np.abs(points - x[None, :]).max(axis=1) <= 1e-9).any())


# ----------------------------------------------------------------------------
# The search
# ----------------------------------------------------------------------------
class TransferBayesSearchCV(BaseBayesSearchCV):
    """Bayesian optimisation warm-started from earlier datasets.

    For a team or service tuning the same estimator on dataset after dataset
    (Yogatama and Mann 2014). Every search given a ``store`` leaves its run
    there; this one reads all *finished* runs of the same estimator class over
    the same search space (any strategy, any dataset) and models them together
    with the current dataset:

    - **Response surface.** Each dataset's validation scores become
      deviations from that dataset's mean divided by its standard deviation,
      so datasets with different score levels and spreads share one surface.
      The prior datasets' use the paper's moment estimates over their trials
      and are fixed. The current dataset's mean and std are re-estimated
      from its own trials at every iteration (O(T)) and its responses in the
      GP replaced accordingly. Moments of a handful of trials chosen to be
      good are badly biased (one trial: response 0, "average"; two close
      scores: -1 and +1), so with prior data the estimates are those of the
      paper's own model ``f = mu + sigma y``: the scores are regressed on the
      responses the prior datasets predict at the trials, with the scale
      shrunk towards the nearest datasets' typical std (see
      :func:`estimate_location_scale`). Without prior data (or without a
      neighbour with any spread) the paper's moments are used.
    - **Kernel.** ``"sqe"``: squared-exponential ARD over the hyperparameters
      for all points (one common surface). ``"mkl"``: ``kernel_weights[0]``
      times SE-ARD for pairs from the same dataset plus ``kernel_weights[1]``
      times the nearest-neighbour kernel ``1 - ||x - x'||^2 / B`` (``B`` = the
      number of unit-cube columns, which bounds their squared norm) between
      the current dataset and its ``n_neighbors`` nearest prior datasets in
      meta-feature space (log n_samples, log n_features, n_classes;
      Euclidean). As written that kernel is not positive semi-definite; this
      implementation uses its closest PSD form: the neighbour relation is
      "both points in the group current + neighbours" (rank one) and the
      distance kernel gets the rank-one correction ``a(x) a(x')``,
      ``a = ||x - 1/2||^2 / B`` (at most 1/16 on the cube). Each group dataset
      is then a shared surface plus its own SE deviation; datasets outside the
      group only inform the GP hyperparameters. See
      :mod:`skbayes_search.gp.transfer_kernels`.
    - **Proposals.** Expected improvement over the current dataset's best
      response, maximised by :func:`skbayes_search.optimize.maximize`; GP
      hyperparameters by maximum a posteriori, as the paper maximises the
      likelihood. Each parameter of a proposal is then replaced, with
      probability ``random_replacement``, by a uniform draw over its range
      (the paper: this reduces the bias of the running mean/std estimates).
    - **First trial.** With prior datasets, the configuration tried on them
      (for ``"mkl"``: on the neighbours) whose GP posterior mean for the new
      dataset, given the prior data only, is best (its best predicted point
      among tried ones: minimising the mean over the whole space
      extrapolates into untried corners); without any, the fixed centre of
      the space
      (:meth:`SearchSpace.default_point`: the middle of every numeric range,
      geometric middle for log priors, the first category). No random
      replacement is applied to it.

    The run is written to ``store`` trial by trial (a killed search resumes
    with the same ``run_name``) and marked finished at the end, ready for the
    next dataset.

    Parameters
    ----------
    estimator : estimator object
        Object implementing ``fit``; cloned for every fit.
    search_spaces : dict or list of dict
        As in :class:`~skbayes_search.BayesSearchCV`. Only runs over an equal
        space (same :meth:`SearchSpace.signature`) are transferred.
    store : TrialStore, str or path-like
        Required. The :class:`~skbayes_search.TrialStore` (or its path; the
        directory must exist) to read earlier runs from and write this run to.
    run_name : str, default=None
        Name of this run in ``store``; an existing run of that name is resumed.
        ``None`` creates a fresh run with a generated name (``run_name_``).
    dataset_name : str, default=None
        A label for the dataset, recorded with every trial of the run (the
        ``dataset_name`` column of ``cv_results_`` and the trials' extras in
        the store) and shown for transferred runs in ``transfer_runs_``.
    kernel : {"mkl", "sqe"}, default="mkl"
        Response-surface kernel (see above).
    n_neighbors : int, default=20
        Prior datasets in the nearest-neighbour group (``"mkl"``).
    kernel_weights : tuple of two floats, default=(0.3, 0.7)
        Weights of the same-dataset SE kernel and of the nearest-neighbour
        kernel (``"mkl"``); non-negative, summing to 1.
    random_replacement : float in [0, 1], default=0.25
        Probability with which each parameter of a proposal is replaced by a
        uniform draw.
    meta_features : "auto", dict or array-like of shape (3,), default="auto"
        How the current dataset is placed among the prior ones. ``"auto"``:
        ``(log n_samples, log n_features, n_classes)`` of the data given to
        ``fit`` (``n_classes`` 0 for regression), as stored for every run. A
        dict with some of the keys ``n_samples``, ``n_features``,
        ``n_classes`` overrides those counts (e.g. the size of the full
        dataset when fitting on a sample); an array gives the three features
        directly. Prior datasets always use their stored counts, and the store
        keeps this run's actual counts.
    n_iter : int, default=10
        Number of trials.
    max_time : float, default=None
        Wall-clock budget in seconds, checked between trials.
    scoring : str, callable, list, tuple or dict, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`. Transfer assumes
        comparable metrics across runs (per-dataset standardisation absorbs
        location and scale, not the direction).
    n_jobs : int, default=None
        Number of jobs running folds in parallel.
    refit : bool, str or callable, default=True
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    cv : int, cross-validation generator or iterable, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    verbose : int, default=0
        ``1`` shows a progress bar when tqdm is installed (the ``progress``
        extra) and prints one line per trial otherwise; ``> 1`` prints one
        line per trial and scikit-learn's line per fit.
    pre_dispatch : int or str, default="2*n_jobs"
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    random_state : int, RandomState instance or None, default=None
        Seeds the acquisition search, the random replacements and the GP
        restarts. Given the same store content, results do not depend on
        ``n_jobs``.
    error_score : "raise" or float, default=np.nan
        Score recorded for a failed fit; the GP sees the dataset's worst
        observed loss there.
    return_train_score : bool, default=False
        Whether ``cv_results_`` includes training scores.

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        scikit-learn's keys plus ``n_resources``, ``resource_fraction``,
        ``iter``, ``elapsed_time``, ``acquisition_value`` (log EI at the
        acquisition optimum, before random replacement; nan for the first
        trial), ``dataset_score_mean`` and ``dataset_score_std`` (the
        current dataset's running estimates the proposal was made with; nan
        for the first trial), ``n_replaced`` (parameters replaced by uniform
        draws) and ``dataset_name`` when given.
    best_estimator_, best_score_, best_params_, best_index_, scorer_, \
n_splits_, refit_time_, multimetric_, classes_, n_features_in_, \
feature_names_in_
        As in :class:`~skbayes_search.BayesSearchCV`.
    run_name_ : str
        Name of this run in ``store``.
    meta_features_ : ndarray of shape (3,)
        The current dataset's meta-features.
    transfer_runs_ : list of dict
        The prior runs used, oldest first: ``name``, ``dataset_name``,
        ``meta_features``, ``distance`` (to this dataset), ``neighbor``
        (in the ``"mkl"`` group) and ``n_trials``.

    See Also
    --------
    BayesSearchCV : GP-EI-MCMC on one dataset.

    References
    ----------
    D. Yogatama, G. Mann. Efficient Transfer Learning Method for Automatic
    Hyperparameter Tuning. AISTATS 2014.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn.datasets import load_breast_cancer, load_wine
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skbayes_search import Real, TrialStore
    >>> from skbayes_search.strategies.transfer import TransferBayesSearchCV
    >>> store = TrialStore(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
    >>> model = make_pipeline(StandardScaler(), LogisticRegression())
    >>> space = {"logisticregression__C": Real(1e-3, 1e2, prior="log-uniform")}
    >>> for name, load in [("wine", load_wine), ("cancer", load_breast_cancer)]:
    ...     X, y = load(return_X_y=True)
    ...     search = TransferBayesSearchCV(
    ...         model, space, store=store, dataset_name=name, n_iter=4, cv=3,
    ...         random_state=0,
    ...     ).fit(X, y)
    >>> [run["dataset_name"] for run in search.transfer_runs_]
    ['wine']
    >>> len(store.runs(finished=True))
    2
    """

    _parameter_constraints: dict = {
        **BaseBayesSearchCV._parameter_constraints,
        "dataset_name": [str, None],
        "kernel": [StrOptions({"mkl", "sqe"})],
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left")],
        "kernel_weights": [tuple, list, np.ndarray],
        "random_replacement": [Interval(numbers.Real, 0, 1, closed="both")],
        "meta_features": [StrOptions({"auto"}), dict, "array-like"],
    }

    def __init__(
        self,
        estimator: Any,
        search_spaces: dict | list,
        *,
        store: TrialStore | str | os.PathLike,
        run_name: str | None = None,
        dataset_name: str | None = None,
        kernel: str = "mkl",
        n_neighbors: int = 20,
        kernel_weights: tuple[float, float] = (0.3, 0.7),
        random_replacement: float = 0.25,
        meta_features: Any = "auto",
        n_iter: int = 10,
        max_time: float | None = None,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: bool | str | Any = True,
        cv: Any = None,
        verbose: int = 0,
        pre_dispatch: int | str = "2*n_jobs",
        random_state: Any = None,
        error_score: str | float = np.nan,
        return_train_score: bool = False,
    ) -> None:
        super().__init__(**shared_params(locals()))
        self.dataset_name = dataset_name
        self.kernel = kernel
        self.n_neighbors = n_neighbors
        self.kernel_weights = kernel_weights
        self.random_replacement = random_replacement
        self.meta_features = meta_features

    # ------------------------------------------------------------------
    # validation
    # ------------------------------------------------------------------
    def _check_strategy_params(self, ctx: SearchContext) -> None:
        if self.store is None:
            raise ValueError(
                "TransferBayesSearchCV needs a store (a TrialStore or the path of "
                "one): earlier runs are read from it and this run is added to it. "
                "Got store=None."
            )
        weights = np.asarray(self.kernel_weights, dtype=float).ravel()
        if (
            weights.size != 2
            or not np.all(np.isfinite(weights))
            or np.any(weights < 0)
            or not math.isclose(float(weights.sum()), 1.0, abs_tol=1e-9)
        ):
            raise ValueError(
                "kernel_weights must be two non-negative numbers summing to 1 "
                "(same-dataset SE weight, nearest-neighbour weight), got "
                f"{self.kernel_weights!r}."
            )
        self._check_meta_features()
        if ctx.space.cardinality < self.n_iter:
            warnings.warn(
                f"The search space has only {ctx.space.cardinality} distinct "
                f"configurations, fewer than n_iter={self.n_iter}; the search "
                "stops once every one has been evaluated.",
                UserWarning,
                stacklevel=4,
            )

    def _check_meta_features(self) -> None:
        mf = self.meta_features
        if isinstance(mf, str):
            return
        if isinstance(mf, Mapping):
            unknown = sorted(set(mf) - set(_META_KEYS))
            if unknown:
                raise ValueError(
                    f"meta_features has unknown keys {unknown!r}; use some of "
                    f"{list(_META_KEYS)!r} or an array of the three features."
                )
            for key, value in mf.items():
                ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
                minimum = 0 if key == "n_classes" else 1
                if not ok or not np.isfinite(value) or value < minimum:
                    raise ValueError(
                        f"meta_features[{key!r}] must be a number >= {minimum}, "
                        f"got {value!r}."
                    )
            return
        vec = np.asarray(mf, dtype=float)
        if vec.shape != (3,) or not np.all(np.isfinite(vec)):
            raise ValueError(
                "meta_features must be 'auto', a dict of counts or an array of the "
                "three features (log n_samples, log n_features, n_classes), got "
                f"{mf!r}."
            )

    # ------------------------------------------------------------------
    # search
    # ------------------------------------------------------------------
    def _current_meta_features(self, stored_meta: dict) -> np.ndarray:
        mf = self.meta_features
        if isinstance(mf, str):
            return meta_feature_vector(stored_meta)
        if isinstance(mf, Mapping):
            return meta_feature_vector({**stored_meta, **mf})
        return np.asarray(mf, dtype=float).copy()

    def _init_search(self, ctx: SearchContext) -> None:
        store = as_store(self.store)
        try:
            run_id = store.run_id(self.run_name_)
            prior = load_prior_datasets(store, run_id, ctx.space.n_dims)
            stored_meta = store.run(run_id)["meta"]
        finally:
            if store is not self.store:
                # our own read connection; the journal keeps its own
                store.close()
        self.meta_features_ = self._current_meta_features(stored_meta)
        distances = _distances(
            self.meta_features_,
            np.array([d.features for d in prior]).reshape(len(prior), 3),
        )
        # stable: ties go to the older run
        order = np.argsort(distances, kind="stable")
        neighbours = set(order[: self.n_neighbors].tolist())
        self.transfer_runs_ = [
            {
                "name": d.name,
                "dataset_name": d.dataset_name,
                "meta_features": d.features,
                "distance": float(distances[i]),
                "neighbor": i in neighbours,
                "n_trials": len(d.losses),
            }
            for i, d in enumerate(prior)
        ]
        self._surface = ResponseSurface(prior, neighbours, ctx.space.n_dims)
        n_hyper = ctx.space.n_dims
        if self.kernel == "mkl":
            kernel = mkl_kernel(n_hyper, tuple(self.kernel_weights))
        else:
            kernel = sqe_kernel(n_hyper)
        # MAP hyperparameters: the paper maximises the likelihood
        self._surrogate = GPSurrogate(
            kernel, hyperparameter_sampling="map", random_state=ctx.seed
        )
        # the GP of the prior datasets alone (fitted once, on first use): the
        # first trial's prediction and the current dataset's mean/std estimates
        self._prior_gp = GPSurrogate(
            kernel, hyperparameter_sampling="map", random_state=ctx.seed
        )
        self._prior_gp_fitted = False
        self._predicted: list[float] = []
        self._predicted_var: list[float] = []

    def _extras(self, **values: float) -> dict:
        extras = {
            "acquisition_value": math.nan,
            "dataset_score_mean": math.nan,
            "dataset_score_std": math.nan,
            "n_replaced": 0,
            **values,
        }
        if self.dataset_name is not None:
            extras["dataset_name"] = self.dataset_name
        return extras

    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        space = ctx.space
        X_seen = ctx.X()
        n_left = space.cardinality - len(np.unique(X_seen, axis=0))
        if n_left <= 0:
            return []
        n_slots = int(min(n_slots, n_left))
        iteration = ctx.trials[-1].iter + 1 if ctx.trials else 0
        with single_blas_thread():
            if not ctx.trials:
                points = self._first_points(ctx, n_slots)
            else:
                points = self._propose(ctx, n_slots)
        return [
            Trial(params, 1.0, iter=iteration, extras=extras)
            for params, (_, extras) in zip(
                space.from_unit(np.vstack([x for x, _ in points])), points
            )
        ]

    def _prior_model(self) -> GPSurrogate | None:
        """The GP fitted on the prior datasets only (None without any)."""
        surface = self._surface
        if not len(surface.y_prior):
            return None
        if not self._prior_gp_fitted:
            self._prior_gp.fit(surface.X_prior, surface.y_prior)
            self._prior_gp_fitted = True
        return self._prior_gp

    def _transfer_predictions(self, X_cur: np.ndarray) -> tuple[Any, float]:
        """Prior-only predicted responses at the current trials, and ``r``.

        Each trial is predicted once (the prior GP does not change during
        the search), so rebuilding the response surface stays O(T).
        """
        model = self._prior_model()
        if model is None or not np.isfinite(self._surface.prior_std):
            return None, 1.0
        done = len(self._predicted)
        if done < len(X_cur):
            mean, std = model.predict(self._surface.augment(X_cur[done:]))
            noise = np.mean([m.noise_var_ for m in model.models_]) * model.y_std_**2
            self._predicted.extend(mean.mean(axis=0).tolist())
            self._predicted_var.extend(((std**2).mean(axis=0) + noise).tolist())
        # the spread of a response around its prediction, kept in a sane range
        # (the prior responses have unit variance)
        residual = float(np.clip(np.mean(self._predicted_var), 0.05, 1.0))
        return np.asarray(self._predicted[: len(X_cur)]), residual

    def _first_points(self, ctx: SearchContext, n_slots: int) -> list:
        space, surface = ctx.space, self._surface
        model = self._prior_model()
        if model is not None:
            # The best predicted of the configurations tried on prior
            # datasets. Minimising the prediction over the whole space
            # extrapolates: with few prior datasets the SE mean's minimum sat
            # in untried corners (C=1e-3 with max_iter=2 for logistic
            # regression), and the neighbour kernel's isotropic quadratic
            # always has its minimum on the boundary.
            candidates = self._prior_candidates()
            mean, _ = model.predict(surface.augment(candidates))
            x = candidates[int(np.argmin(mean.mean(axis=0)))]
        else:
            x = space.default_point()
        points = [(x, self._extras())]
        if n_slots > 1:
            # several workers and nothing observed yet: spread the rest
            taken = x[None, :]
            for u in space.sample(16 * n_slots, ctx.rng, "random"):
                if len(points) == n_slots:
                    break
                if not _in(u, taken):
                    points.append((u, self._extras()))
                    taken = np.vstack([taken, u])
        return points

    def _prior_candidates(self) -> np.ndarray:
        """Distinct configurations of the prior datasets the GP predicts from."""
        surface = self._surface
        X = surface.X_prior
        if self.kernel == "mkl" and surface.in_group.any():
            X = X[surface.in_group]
        # sorted unique rows: the choice does not depend on the runs' order
        return np.unique(X[:, : surface.n_dims], axis=0)

    def _prior_seeds(self) -> np.ndarray:
        surface = self._surface
        X, y = surface.X_prior, surface.y_prior
        if self.kernel == "mkl":
            X, y = X[surface.in_group], y[surface.in_group]
        best = np.argsort(y, kind="stable")[:_N_SEEDS]
        return X[best, : surface.n_dims]

    def _propose(self, ctx: SearchContext, n_slots: int) -> list:
        space, surface = ctx.space, self._surface
        X_cur = ctx.X()
        predicted, residual = self._transfer_predictions(X_cur)
        X, y, mean, std = surface.training_set(X_cur, ctx.losses(), predicted, residual)
        self._surrogate.fit(X, y)
        y_cur = y[len(surface.y_prior) :]
        seeds = np.vstack(
            [X_cur[np.argsort(y_cur, kind="stable")[:_N_SEEDS]], self._prior_seeds()]
        )
        stats = {"dataset_score_mean": -mean, "dataset_score_std": std}
        chosen: list[np.ndarray] = []
        points = []
        for _ in range(n_slots):
            pending = np.vstack(chosen) if chosen else None
            acquisition = make_acquisition(
                self._surrogate,
                "ei",
                y_best=float(y_cur.min()),
                X_pending=None if pending is None else surface.augment(pending),
                rng=ctx.rng,
            )
            exclude = X_cur if pending is None else np.vstack([X_cur, pending])
            x, value = maximize(
                lambda U, f=acquisition: f(surface.augment(U)),
                space.n_dims,
                rng=ctx.rng,
                snap=space.snap,
                seeds=seeds,
                exclude=exclude,
                n_candidates=_n_candidates(space),
            )
            x_new, n_replaced = replace_coordinates(
                space, x, ctx.rng, float(self.random_replacement)
            )
            if _in(x_new, exclude):
                # the draw landed on a trial already made: keep the optimum
                x_new, n_replaced = x, 0
            chosen.append(x_new)
            points.append(
                (
                    x_new,
                    self._extras(
                        acquisition_value=float(value), n_replaced=n_replaced, **stats
                    ),
                )
            )
        return points
