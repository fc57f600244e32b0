"""The common response surface of the transfer search (Yogatama & Mann 2014).

Every dataset's losses become deviations from that dataset's mean divided by
its standard deviation, so that datasets with different score levels and
spreads share one GP. This module holds that arithmetic, the prior datasets
read from a store, the choice of each prior dataset's trials the GP holds, the
GP training set of
:class:`~skbayes_search.strategies.transfer.TransferBayesSearchCV` and the
random replacement of proposal coordinates (the meta-features that place
datasets are in :mod:`skbayes_search._meta_features`). The reasons behind each
choice are in ``doc/design/transfer.rst``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._journal import trial_score
from ._meta_features import meta_feature_vector

__all__ = [
    "PriorDataset",
    "ResponseSurface",
    "contains",
    "estimate_location_scale",
    "informative_subset",
    "prior_datasets",
    "replace_coordinates",
    "standardise",
]

# A standard deviation below this (relative to the mean's magnitude) is the
# rounding residue of equal values, not a spread.
_STD_TOL = 1e-12
# Weight, in trials, of the prior datasets' typical std in the current scale.
_N_PSEUDO = 2.0
# Two unit-cube points closer than this (max-norm) are the same configuration.
_SAME_POINT_TOL = 1e-9


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
        nan for no losses.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._response_surface import standardise
    >>> y, mean, std = standardise(np.array([1.0, 3.0]))
    >>> y.tolist(), mean, std
    ([-1.0, 1.0], 2.0, 1.0)
    """
    losses = np.asarray(losses, dtype=float)
    if losses.size == 0:
        return losses.copy(), math.nan, math.nan
    mean = float(np.mean(losses))
    std = float(np.std(losses))
    if not std > _STD_TOL * max(1.0, abs(mean)):
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

    The maximum a posteriori estimates of the paper's model ``f_t = mu +
    sigma m_t + e_t``, ``e_t ~ N(0, sigma0^2 r)``, where ``m_t`` is the
    response the prior datasets predict at trial ``t``, with a flat prior on
    ``mu`` and ``sigma ~ N(sigma0, sigma0^2 / n_pseudo)``::

        sigma = (S_mf / r + n_pseudo sigma0) / (S_mm / r + n_pseudo)
        mu = mean(f) - sigma mean(m)

    (``S`` centred sums of squares and products). One trial gives ``sigma =
    sigma0`` and a response equal to its prediction; with more trials the
    slope of the losses on the predictions takes over.

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
        ``std`` is at least ``prior_std / 10``.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._response_surface import estimate_location_scale
    >>> mean, std = estimate_location_scale(
    ...     np.array([0.2]), np.array([-1.5]), prior_std=0.04, residual_var=0.5)
    >>> round(std, 6), round((0.2 - mean) / std, 6)
    (0.04, -1.5)
    """
    f = np.asarray(losses, dtype=float)
    m = np.asarray(predicted, dtype=float)
    fc, mc = f - f.mean(), m - m.mean()
    slope = (float(mc @ fc) / residual_var + n_pseudo * prior_std) / (
        float(mc @ mc) / residual_var + n_pseudo
    )
    # a falling slope says the transfer is wrong here, not that the scale is
    # negative
    std = max(slope, 0.1 * prior_std)
    return float(f.mean() - std * m.mean()), float(std)


def contains(points: np.ndarray, x: np.ndarray) -> bool:
    """Whether ``x`` is one of the unit-cube ``points`` (rows)."""
    if points.shape[0] == 0:
        return False
    return bool((np.abs(points - x[None, :]).max(axis=1) <= _SAME_POINT_TOL).any())


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


def prior_datasets(
    runs: Iterable[Mapping[str, Any]], n_dims: int
) -> list[PriorDataset]:
    """Prior datasets from stored runs, as :meth:`TrialStore.finished_runs` gives them.

    Only trials on all training rows (``fraction == 1``) count, since subset
    trials measure another function; runs with fewer than two such trials with
    a finite score carry no deviation from their mean and are left out.

    Parameters
    ----------
    runs : iterable of dict
        Runs with their ``id``, ``name``, ``meta`` and ``trials`` (each with
        ``x``, ``fraction``, ``status``, ``scores`` and ``extras``).
    n_dims : int
        Width of the unit-cube encoding.

    Returns
    -------
    list of PriorDataset
        In the order of ``runs``.
    """
    out = []
    for run in runs:
        xs, scores, names = [], [], set()
        for trial in run["trials"]:
            x = np.asarray(trial["x"], dtype=float)
            if float(trial["fraction"]) != 1.0 or x.shape != (n_dims,):
                continue
            xs.append(x)
            scores.append(trial_score(trial))
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


def informative_subset(
    X: np.ndarray, responses: np.ndarray, n: int | None
) -> np.ndarray:
    """At most ``n`` trials of one dataset: its best ones and a spread of the rest.

    The ``ceil(n / 2)`` lowest responses locate the dataset's optimum; the
    other trials are then taken one at a time, each the one farthest
    (Euclidean, in the unit cube) from those already kept, so that the kept
    trials still span the dataset's response surface. Ties go to the better
    response.

    Parameters
    ----------
    X : ndarray of shape (t, n_dims)
    responses : ndarray of shape (t,)
    n : int or None
        At most this many; None keeps every trial.

    Returns
    -------
    ndarray of int
        Positions of the kept trials, increasing.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._response_surface import informative_subset
    >>> X = np.array([[0.0], [0.1], [0.2], [1.0]])
    >>> informative_subset(X, np.array([0.0, 0.5, -1.0, 2.0]), 3).tolist()
    [0, 2, 3]
    """
    responses = np.asarray(responses, dtype=float)
    t = len(responses)
    if n is None or t <= n:
        return np.arange(t)
    order = np.argsort(responses, kind="stable")
    n_best = (int(n) + 1) // 2
    keep = list(order[:n_best])
    rest = order[n_best:]
    gap = np.min(
        np.linalg.norm(X[rest][:, None, :] - X[keep][None, :, :], axis=2), axis=1
    )
    while len(keep) < n:
        j = int(np.argmax(gap))
        keep.append(rest[j])
        gap = np.minimum(gap, np.linalg.norm(X[rest] - X[rest[j]], axis=1))
        gap[j] = -np.inf
    return np.sort(np.asarray(keep, dtype=int))


class ResponseSurface:
    """The GP training set of the transfer search, rebuilt in O(T) per iteration.

    Inputs are ``[x, z, dataset, group]``: the unit-cube point, the dataset's
    features ``z`` (none unless ``features`` is given), the dataset index (0
    for the current dataset, 1, 2, ... for the prior ones) and a flag that is
    1 for the current dataset and its nearest prior datasets. The prior
    datasets' standardised responses are computed once (their runs are
    finished); :meth:`training_set` only re-standardises the current dataset.

    Parameters
    ----------
    prior : list of PriorDataset
        The prior datasets whose trials the GP holds.
    neighbours : collection of int
        Positions in ``prior`` of the nearest prior datasets.
    n_dims : int
        Width of the unit-cube encoding.
    features : ndarray of shape (len(prior) + 1, q), default=None
        GP input columns of each dataset, the current one first (the
        standardised meta-features of ``kernel="sqe"``).
    max_per_dataset : int, default=None
        At most this many trials of each prior dataset, chosen by
        :func:`informative_subset` after standardising all of them; None
        keeps every trial.

    Attributes
    ----------
    X_prior : ndarray of shape (n_prior, n_dims + q + 2)
    y_prior : ndarray of shape (n_prior,)
        The prior datasets' responses, oldest run first.
    in_group : ndarray of shape (n_prior,)
        Whether each prior response comes from a neighbour.
    n_used : list of int
        Trials of each prior dataset in the training set.
    prior_std : float
        Median std of the neighbours' losses (nan without a neighbour with
        any spread): the current dataset's scale before its trials say more.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._response_surface import PriorDataset, ResponseSurface
    >>> prior = PriorDataset(1, "run1", {}, np.zeros(3), np.array([[0.1], [0.9]]),
    ...                      np.array([0.2, 0.4]))
    >>> surface = ResponseSurface([prior], neighbours=[0], n_dims=1)
    >>> X, y, mean, std = surface.training_set(np.array([[0.5]]), np.array([0.3]))
    >>> X.tolist()
    [[0.1, 1.0, 1.0], [0.9, 1.0, 1.0], [0.5, 0.0, 1.0]]
    >>> np.round(y, 6).tolist()
    [-1.0, 1.0, 0.0]
    """

    def __init__(
        self,
        prior: list[PriorDataset],
        neighbours: Any,
        n_dims: int,
        *,
        features: np.ndarray | None = None,
        max_per_dataset: int | None = None,
    ) -> None:
        self.n_dims = int(n_dims)
        if features is None:
            features = np.empty((len(prior) + 1, 0))
        self.features = np.asarray(features, dtype=float)
        if self.features.shape[0] != len(prior) + 1:
            raise ValueError(
                f"features must have one row per dataset ({len(prior) + 1}), "
                f"got {self.features.shape[0]}."
            )
        neighbours = set(int(i) for i in neighbours)
        blocks, ys, group_stds, self.n_used = [], [], [], []
        for i, data in enumerate(prior):
            y, _, std = standardise(data.losses)
            keep = informative_subset(data.X, y, max_per_dataset)
            flag = 1.0 if i in neighbours else 0.0
            context = np.r_[self.features[i + 1], i + 1.0, flag]
            blocks.append(np.hstack([data.X[keep], np.tile(context, (len(keep), 1))]))
            ys.append(y[keep])
            self.n_used.append(len(keep))
            if flag and np.any(y != 0.0):
                group_stds.append(std)
        width = self.n_dims + self.features.shape[1] + 2
        self.X_prior = np.vstack(blocks) if blocks else np.empty((0, width))
        self.y_prior = np.concatenate(ys) if ys else np.empty(0)
        self.in_group = self.X_prior[:, -1] == 1.0
        self.prior_std = float(np.median(group_stds)) if group_stds else math.nan

    def augment(self, U: np.ndarray) -> np.ndarray:
        """Unit-cube points of the current dataset as GP inputs."""
        U = np.atleast_2d(np.asarray(U, dtype=float))
        context = np.r_[self.features[0], 0.0, 1.0]
        return np.hstack([U, np.tile(context, (len(U), 1))])

    def tried_configurations(self, group_only: bool) -> np.ndarray:
        """Distinct configurations tried on the prior datasets, sorted.

        With ``group_only`` only the neighbours' (all prior datasets' when
        there is no neighbour); sorted rows, so that the result does not
        depend on the order of the runs.
        """
        X = self.X_prior
        if group_only and self.in_group.any():
            X = X[self.in_group]
        return np.unique(X[:, : self.n_dims], axis=0)

    def best_prior_points(self, n: int, group_only: bool) -> np.ndarray:
        """The ``n`` prior configurations with the lowest responses.

        With ``group_only`` only the neighbours' (ties go to the older run).
        """
        X, y = self.X_prior, self.y_prior
        if group_only:
            X, y = X[self.in_group], y[self.in_group]
        best = np.argsort(y, kind="stable")[:n]
        return X[best, : self.n_dims]

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
        X : ndarray of shape (n_prior + t, n_dims + q + 2)
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

    Parameters
    ----------
    space : SearchSpace
    x : ndarray of shape (n_dims,)
        A snapped unit-cube point.
    rng : numpy.random.Generator
    probability : float in [0, 1]

    Returns
    -------
    x : ndarray of shape (n_dims,)
    n_replaced : int
        Number of coordinates replaced (the sub-space choice counts as one).

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search import Real
    >>> from skbayes_search.space import SearchSpace
    >>> from skbayes_search._response_surface import replace_coordinates
    >>> space = SearchSpace({"a": Real(0.0, 1.0), "b": Real(0.0, 1.0)})
    >>> x = space.to_unit([{"a": 0.5, "b": 0.5}])[0]
    >>> new, n = replace_coordinates(space, x, np.random.default_rng(0), 1.0)
    >>> n
    2
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
