"""FABOLAS's view of trial costs: its cost GP joined with the cost curve.

The cost GP (log seconds over the model inputs) gives a cautious bound
(:func:`cost_upper_bound`); :class:`CostModel` joins it with the curve fits
of ``_cost_model.py`` for a search's time budget; :func:`row_cost` is the
machine-independent cost of ``cost_model="rows"``. Why each rule is what it
is: ``doc/design/fabolas.rst``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .._cost_model import (
    RESERVE_MAX_SHARE,
    Z95,
    cost_curve,
    in_reach,
    own_scaled_cost,
    reserve_seconds,
    slow_cost,
    wall_seconds,
)

__all__ = ["CostModel", "cost_upper_bound", "overhead_seconds", "row_cost"]


def cost_upper_bound(surrogate: Any, X: Any, z: float = Z95) -> np.ndarray:
    """A cautious cost in seconds from a GP on log seconds.

    The one-sided 95 % bound of the log-cost prediction under each
    hyperparameter sample, exponentiated and averaged over the samples:
    overrunning a time budget costs more than stopping a little early.

    Parameters
    ----------
    surrogate : GPSurrogate
        Fitted on log seconds.
    X : array-like of shape (m, d)
        Model inputs.
    z : float, default=Z95
        Standard deviations above the mean; 0 gives the central prediction.

    Returns
    -------
    ndarray of shape (m,)

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import GPSurrogate
    >>> from skbayes_search.strategies._fabolas_cost import cost_upper_bound
    >>> X = np.linspace(0, 1, 8)[:, None]
    >>> gp = GPSurrogate(hyperparameter_sampling="map", random_state=0)
    >>> gp = gp.fit(X, np.log(1.0 + X[:, 0]))
    >>> bool(np.all(cost_upper_bound(gp, X) >= 1.0 + X[:, 0] - 1e-3))
    True
    """
    bounds = []
    for post in surrogate.posteriors:
        mean, std = post.mean_std(X)
        bounds.append(mean + z * std)
    return np.exp(np.vstack(bounds)).mean(axis=0)


def row_cost(fractions: Any, n_train: int, n_splits: int) -> np.ndarray:
    """A trial's cost as the work it does: training rows times folds.

    What FABOLAS's ``cost_model="rows"`` divides the information by instead
    of measured seconds, so that the trials chosen do not depend on the
    machine's speed or load.

    Examples
    --------
    >>> from skbayes_search.strategies._fabolas_cost import row_cost
    >>> row_cost([0.01, 0.5, 1.0], n_train=1000, n_splits=3)
    array([  30., 1500., 3000.])
    """
    rows = np.maximum(np.round(np.asarray(fractions, dtype=float) * n_train), 1.0)
    return rows * float(n_splits)


def overhead_seconds(setting: str | float, last: float | None, started: float) -> float:
    """Seconds of optimiser overhead added to every candidate's cost.

    ``setting`` is a fixed number of seconds, or ``"measured"``: the duration
    of the ``last`` proposal, or on the first one the time since ``started``
    (its model fits, a lower bound).

    Examples
    --------
    >>> from skbayes_search.strategies._fabolas_cost import overhead_seconds
    >>> overhead_seconds("measured", 0.4, started=0.0)
    0.4
    """
    if setting != "measured":
        return float(setting)
    if last is not None:
        return last
    return time.perf_counter() - started


class CostModel:
    """A search's view of trial costs at one proposal, for its time budget.

    Parameters
    ----------
    surrogate : GPSurrogate
        The cost GP (log seconds over the model inputs).
    fractions, costs : array-like of shape (n,)
        Fraction and cost (seconds summed over splits) of every successful
        trial.
    n_splits, n_jobs : int
        Splits per trial and workers running them.

    Attributes
    ----------
    c0, curve : float, ndarray
        :func:`cost_curve` of the trials.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import GPSurrogate
    >>> from skbayes_search.strategies._fabolas_cost import CostModel
    >>> f = np.array([0.1, 0.2, 0.4])
    >>> gp = GPSurrogate(hyperparameter_sampling="map", random_state=0)
    >>> gp = gp.fit(f[:, None], np.log(10 * f))
    >>> model = CostModel(gp, f, 10 * f, n_splits=2, n_jobs=2)
    >>> bool(model.full_data_seconds(np.ones((1, 1)), [False, False, True]) >= 5)
    True
    """

    def __init__(
        self, surrogate: Any, fractions: Any, costs: Any, n_splits: int, n_jobs: int
    ) -> None:
        self.surrogate = surrogate
        self.fractions = np.asarray(fractions, dtype=float)
        self.costs = np.asarray(costs, dtype=float)
        self.n_splits = int(n_splits)
        self.n_jobs = int(n_jobs)
        self.c0, self.curve = cost_curve(self.fractions, self.costs)

    def upper(self, X: Any) -> np.ndarray:
        """:func:`cost_upper_bound` of the cost GP at model inputs ``X``."""
        return cost_upper_bound(self.surrogate, X)

    def cautious(self, X: Any, fractions: Any) -> np.ndarray:
        """Seconds (summed over splits) a fit at ``X`` may take.

        The larger of the cost GP's bound and :func:`slow_cost` on each
        candidate's training fraction: the GP's power law under-predicts
        large fractions and small fits hide the slowest configurations.
        """
        slow = slow_cost(self.fractions, self.costs, self.c0, self.curve, fractions)
        return np.maximum(self.upper(X), slow)

    def full_data_seconds(self, x_full: Any, own: Any) -> float:
        """Cautious wall seconds of one configuration's full-data evaluation.

        The larger of the cost GP's bound at ``x_full`` (its model input at
        fraction 1) and :func:`reserve_seconds` (``own`` marks its trials).
        """
        scaled = reserve_seconds(
            self.fractions, self.costs, own, self.n_splits, self.n_jobs
        )
        bound = float(self.upper(x_full)[0])
        return max(scaled, wall_seconds(bound, self.n_splits, self.n_jobs))

    def final_in_reach(self, x_full: Any, own: Any, seconds: float) -> bool:
        """Whether one configuration's full-data evaluation, started now, may
        finish within ``seconds`` (:func:`in_reach`).

        Its cost is the smaller of two central predictions, not the
        cautious bound that sizes the reserve (that would give up
        evaluations that finish): its own costs scaled to all rows
        (:func:`own_scaled_cost`, the halving search's prediction for the
        same decision) and the fitted cost GP's mean at ``x_full``. Scaled
        from a fit on a small fraction, the first can overshoot where a
        fixed cost dominates; the GP under-predicts large fits. Only when
        both put it out of reach is it. ``own`` marks its trials; without
        one it is in reach.
        """
        own = np.asarray(own, dtype=bool)
        if not own.any():
            return True
        summed = own_scaled_cost(
            self.c0, self.curve, self.fractions[own], self.costs[own], 1.0
        )
        if hasattr(self.surrogate, "models_"):
            fitted = float(cost_upper_bound(self.surrogate, x_full, z=0.0)[0])
            summed = min(summed, fitted)
        return in_reach(summed, seconds, self.n_splits, self.n_jobs)

    def final_reserve(self, x_full: Any, own: Any, max_time: float) -> float:
        """:meth:`full_data_seconds`, at most ``RESERVE_MAX_SHARE * max_time``."""
        return min(self.full_data_seconds(x_full, own), RESERVE_MAX_SHARE * max_time)
