"""Trial costs for a time budget: the cost curve, the final-evaluation reserve
and its reach, shared by FABOLAS and the halving search.

A fit's cost is a fixed part ``c0`` plus a variable part whose log is a
convex function of the log training fraction (:func:`cost_curve`). Along that
curve a fit's cost on a subset is scaled to any other fraction
(:func:`scaled_cost`, :func:`full_data_cost`); the configurations tried on
the larger subsets give the cost of a slow fit (:func:`slow_cost`); and
:func:`reserve_seconds` sets time aside for one configuration's full-data
evaluation; :func:`in_reach` decides whether a full-data evaluation is worth
starting at all. FABOLAS joins these with its cost GP in
``strategies/_fabolas_cost.py``. Why each rule and constant is what it is:
``doc/design/fabolas.rst``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "cost_curve",
    "full_data_cost",
    "in_reach",
    "own_scaled_cost",
    "reserve_seconds",
    "scaled_cost",
    "slow_cost",
    "slow_full_data_cost",
    "together_seconds",
    "wall_seconds",
]

# One-sided 95 % normal quantile.
Z95 = 1.6448536269514722
# Trials whose variable part is at least this share of the cost read the curve.
VARIABLE_SHARE = 0.5
# Bounds of the exponent a curve implies between two fractions.
EXPONENT_BOUNDS = (0.0, 3.0)
# Fewest slope a line read off few fits or a narrow span may have (a fit reads
# every row).
SPARSE_MIN_EXPONENT = 1.0
# Slow configurations steepen faster than the curve all fits trace.
RESERVE_MARGIN = 1.5
# Fewer fits, or a narrower span of fractions, show scatter, not curvature.
QUADRATIC_MIN_FITS = 10
QUADRATIC_MIN_SPAN = 16.0
# Nor do fits in two clusters: a gap (in log fraction) wider than this share of
# their span leaves the curvature to the scatter within the clusters.
QUADRATIC_MAX_GAP = 0.5
# Fewest trials reading the curve before the slow-fit bound counts.
POPULATION_MIN_FITS = 6
# The slow-fit bound reads the trials within this factor of the largest
# fraction when there are enough of them: scaled from far smaller fits, the
# spread between configurations is multiplied with the extrapolation's error.
POPULATION_SPAN = 8.0
# A larger reserve is more likely a bad extrapolation than a real cost.
RESERVE_MAX_SHARE = 0.5
# An all-data trial predicted to take more than this many times the seconds
# left to its deadline is not started: in recorded runs of the halving search,
# the all-data trials that finished took 0.6 to 1.9 times their predicted
# wall time (doc/strategies/halving.rst, "The all-data trial out of reach").
FINAL_REACH = 2.0


def cost_curve(fractions: Any, costs: Any) -> tuple[float, np.ndarray]:
    """Fixed cost and log-log curve of the variable cost of a fit.

    Parameters
    ----------
    fractions : array-like of shape (n,)
        Training fraction of each successful trial.
    costs : array-like of shape (n,)
        Its cost in seconds (summed over splits).

    Returns
    -------
    c0 : float
        The cheapest cost seen (a fit's fixed overhead).
    curve : ndarray of shape (3,)
        Coefficients (highest power first) of ``log(cost - c0)`` as a
        polynomial in ``log fraction``, fitted to the trials whose cost is
        mostly variable: a quadratic when they are at least
        ``QUADRATIC_MIN_FITS`` spanning a factor ``QUADRATIC_MIN_SPAN`` with
        no gap wider than ``QUADRATIC_MAX_GAP`` of the span, unless it comes
        out concave, then a line; with fewer or a narrower
        span, a line of slope at least ``SPARSE_MIN_EXPONENT``; the line of
        slope 1 with fewer than 3 or a span under a factor 2.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._cost_model import cost_curve
    >>> f = np.geomspace(1 / 512, 1 / 8, 7)
    >>> c0, curve = cost_curve(f, 0.01 + 50 * f**2)
    >>> round(c0, 3), curve.round(2)
    (0.01, array([0.  , 2.01, 3.93]))
    """
    f = np.log(np.asarray(fractions, dtype=float))
    c = np.asarray(costs, dtype=float)
    linear = np.array([0.0, 1.0, 0.0])
    if not c.size:
        return 0.0, linear
    c0 = float(c.min())
    variable = c - c0
    use = variable >= VARIABLE_SHARE * c
    if use.sum() < 3 or np.ptp(f[use]) < np.log(2.0):
        return c0, linear
    x, y = f[use], np.log(variable[use])
    span = np.ptp(x)
    spread = np.diff(np.unique(x)).max() <= QUADRATIC_MAX_GAP * span
    if use.sum() >= QUADRATIC_MIN_FITS and span >= np.log(QUADRATIC_MIN_SPAN):
        quad = np.polyfit(x, y, 2) if spread else np.zeros(3)
        if quad[0] > 0.0:
            return c0, quad
        return c0, np.concatenate([[0.0], np.polyfit(x, y, 1)])
    slope, intercept = np.polyfit(x, y, 1)
    return c0, np.array([0.0, max(slope, SPARSE_MIN_EXPONENT), intercept])


def scaled_cost(
    c0: float, curve: np.ndarray, fraction: Any, cost: Any, to: Any
) -> np.ndarray:
    """Costs on ``fraction`` scaled to ``to`` (arrays broadcast).

    The variable part (at least ``c0``: smaller is noise) is multiplied by
    the power of ``to / fraction`` that ``curve`` implies between them, kept
    in ``EXPONENT_BOUNDS``.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._cost_model import scaled_cost
    >>> round(float(scaled_cost(0.5, np.array([0.0, 1.0, 0.0]), 0.1, 2.0, 1.0)), 6)
    15.5
    """
    lf, lt = np.log(fraction), np.log(to)
    gap = lt - lf
    same = np.abs(gap) < 1e-12
    b = (np.polyval(curve, lt) - np.polyval(curve, lf)) / np.where(same, 1.0, gap)
    b = np.clip(b, *EXPONENT_BOUNDS)
    variable = np.maximum(np.asarray(cost, dtype=float) - c0, c0)
    return np.where(same, cost, c0 + variable * np.exp(b * gap))


def own_scaled_cost(
    c0: float,
    curve: np.ndarray,
    fractions: Sequence[float],
    costs: Sequence[float],
    to: float,
) -> float:
    """One configuration's cost on fraction ``to``, from its own costs.

    Its cost on its largest fraction, scaled along ``curve``
    (:func:`scaled_cost`), but at least as steeply as its own two largest
    fits grew, where their cost is mostly variable: a curve fitted on every
    trial is dominated by the many small fits, and SVC fits on tens of
    thousands of rows grow faster than those show (on covertype from 5,670
    to 17,010 rows, as the power 1.44 to 1.87 of the rows where the curve
    said 1.29 to 1.66; ``doc/strategies/halving.rst``).

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._cost_model import own_scaled_cost
    >>> line = np.array([0.0, 1.0, 0.0])
    >>> own_scaled_cost(0.0, line, [0.25], [1.0], 1.0)  # along the curve
    4.0
    >>> own_scaled_cost(0.0, line, [0.125, 0.25], [0.25, 1.0], 1.0)  # own: n**2
    16.0
    """
    order = np.argsort(np.asarray(fractions, dtype=float))
    f = np.asarray(fractions, dtype=float)[order]
    c = np.asarray(costs, dtype=float)[order]
    along = float(scaled_cost(c0, curve, f[-1], c[-1], to))
    if len(f) < 2 or to <= f[-1] or f[-2] >= f[-1]:
        return along
    variable = c[-2:] - c0
    if np.any(variable < VARIABLE_SHARE * c[-2:]):
        return along
    b = math.log(variable[1] / variable[0]) / math.log(f[-1] / f[-2])
    b = min(max(b, EXPONENT_BOUNDS[0]), EXPONENT_BOUNDS[1])
    return max(along, float(c0 + variable[1] * (to / f[-1]) ** b))


def full_data_cost(c0: float, curve: np.ndarray, fraction: float, cost: float) -> float:
    """A fit's cost on all rows, from its ``cost`` on ``fraction`` of them.

    :func:`scaled_cost` to fraction 1; a fit on all rows keeps its cost.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._cost_model import full_data_cost
    >>> round(full_data_cost(0.0, np.array([0.0, 2.0, 0.0]), 0.25, 1.0), 6)
    16.0
    """
    if fraction >= 1.0:
        return float(cost)
    return float(scaled_cost(c0, curve, fraction, cost, 1.0))


def wall_seconds(summed: float, n_splits: int, n_jobs: int) -> float:
    """Wall seconds of a trial alone on ``n_jobs`` workers.

    ``summed`` is its cost summed over ``n_splits`` splits, which run in
    rounds of one split per worker.

    Examples
    --------
    >>> from skbayes_search._cost_model import wall_seconds
    >>> wall_seconds(10.0, n_splits=5, n_jobs=2)  # three rounds of 2 s
    6.0
    """
    workers = max(1, min(int(n_jobs), n_splits))
    return summed * int(np.ceil(n_splits / workers)) / n_splits


def in_reach(summed: float | None, seconds: float, n_splits: int, n_jobs: int) -> bool:
    """Whether a trial predicted to cost ``summed`` may finish in ``seconds``.

    ``summed`` is its central predicted cost summed over ``n_splits`` splits
    (None: nothing to predict from, and the trial is in reach); started now on
    ``n_jobs`` workers of its own, its wall time (:func:`wall_seconds`) must be
    at most ``FINAL_REACH`` times ``seconds``. A trial out of reach would be
    stopped at its deadline and recorded as failed, having held every worker
    for the time that was left.

    Examples
    --------
    >>> from skbayes_search._cost_model import in_reach
    >>> in_reach(30.0, 10.0, n_splits=3, n_jobs=3)  # 10 s of wall time
    True
    >>> in_reach(90.0, 10.0, n_splits=3, n_jobs=3)  # 30 s: out of reach
    False
    """
    if summed is None:
        return True
    return wall_seconds(summed, n_splits, n_jobs) <= FINAL_REACH * seconds


def together_seconds(
    seconds: float, n_trials: int, n_splits: int, n_jobs: int
) -> float:
    """Wall seconds of ``n_trials`` like trials run at once.

    ``seconds`` is the wall time of one of them alone (:func:`wall_seconds`);
    together their ``n_trials * n_splits`` splits share the workers.

    Examples
    --------
    >>> from skbayes_search._cost_model import together_seconds
    >>> together_seconds(6.0, n_trials=2, n_splits=3, n_jobs=2)  # 3 rounds, not 2
    9.0
    """
    alone = int(np.ceil(n_splits / max(1, min(int(n_jobs), n_splits))))
    total = n_trials * n_splits
    rounds = int(np.ceil(total / max(1, min(int(n_jobs), total))))
    return float(seconds) * rounds / alone


def slow_cost(
    fractions: Any, costs: Any, c0: float, curve: np.ndarray, to: Any
) -> np.ndarray:
    """Seconds (summed over splits) of a slow fit on each fraction in ``to``.

    The trials on the larger half of the fractions (among those whose cost
    is mostly variable; only those within a factor ``POPULATION_SPAN`` of the
    largest fraction when at least ``POPULATION_MIN_FITS`` are) are each
    scaled to every fraction in ``to`` along ``curve``; the result is the
    one-sided 95 % bound of a log-normal fitted to them: the spread between
    configurations that the smallest subsets do not show. Zeros with fewer
    than ``POPULATION_MIN_FITS`` such trials.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._cost_model import cost_curve, slow_cost
    >>> f = np.geomspace(1 / 256, 1 / 4, 12)
    >>> costs = 0.01 + f * np.where(np.arange(12) % 2, 10.0, 30.0)
    >>> slow_cost(f, costs, *cost_curve(f, costs), [0.5, 1.0]).round(1)
    array([20.8, 41.7])
    """
    fractions = np.asarray(fractions, dtype=float)
    costs = np.asarray(costs, dtype=float)
    to = np.atleast_1d(np.asarray(to, dtype=float))
    use = costs - c0 >= VARIABLE_SHARE * costs
    if use.sum() < POPULATION_MIN_FITS:
        return np.zeros(to.shape)
    f, c = fractions[use], costs[use]
    upper = f >= np.median(f)
    near = upper & (f >= f.max() / POPULATION_SPAN)
    if near.sum() >= POPULATION_MIN_FITS:
        upper = near
    scaled = scaled_cost(c0, curve, f[upper][:, None], c[upper][:, None], to[None, :])
    logs = np.log(scaled)
    return np.exp(logs.mean(axis=0) + Z95 * logs.std(axis=0, ddof=1))


def slow_full_data_cost(
    fractions: Any, costs: Any, c0: float, curve: np.ndarray
) -> float:
    """:func:`slow_cost` of a fit on all rows."""
    return float(slow_cost(fractions, costs, c0, curve, 1.0)[0])


def reserve_seconds(
    fractions: Any, costs: Any, own: Any, n_splits: int, n_jobs: int
) -> float:
    """Wall seconds to set aside for one configuration's full-data evaluation.

    Parameters
    ----------
    fractions, costs : array-like of shape (n,)
        Every successful trial's fraction and cost (seconds summed over
        splits).
    own : array-like of bool, shape (n,)
        The configuration's own trials.
    n_splits, n_jobs : int
        Splits per trial and workers running them.

    Returns
    -------
    float
        The smallest of the own trials' costs scaled to all rows along
        :func:`cost_curve` (the largest fit extrapolates least), times
        ``RESERVE_MARGIN``, but at least :func:`slow_full_data_cost` (the
        configuration evaluated last may be another, slower one), in wall
        seconds (:func:`wall_seconds`). 0 without an own trial.

    Examples
    --------
    >>> from skbayes_search._cost_model import reserve_seconds
    >>> round(reserve_seconds([0.1, 0.2], [1.0, 2.0], [False, True], 5, 5), 6)
    1.8
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
        RESERVE_MARGIN * min(scaled),
        slow_full_data_cost(fractions, costs, c0, curve),
    )
    return wall_seconds(summed, n_splits, n_jobs)
