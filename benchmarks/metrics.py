"""Pure functions on anytime trajectories (no fitting, no I/O).

A run is a sequence of finished trials in finishing order. The *incumbent*
after each trial is what the method would return if stopped then; its test
score (refit on the full search data, scored on the test split) makes the
step function all metrics read from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: Fractions of the budget at which the incumbent's test score is reported.
BUDGET_FRACTIONS = (0.1, 0.25, 0.5, 1.0)
#: Classification: within this many accuracy points of the best (0.5 pp).
CLASSIFICATION_TOLERANCE = 0.005
#: Regression: within this relative distance of the best score.
REGRESSION_TOLERANCE = 0.01


def incumbent_indices(
    scores: Sequence[float], resources: Sequence[float] | None = None
) -> np.ndarray:
    """Index of the incumbent after each finished trial.

    The incumbent is the trial with the highest score among those finished
    so far at the largest resource (training rows or fraction) seen so far:
    a subset method is trusted on its biggest evaluations, the way successive
    halving returns the best of its last rung. Ties go to the earliest trial;
    trials with a NaN score never become incumbent.

    Parameters
    ----------
    scores : sequence of float
        Mean CV score of each trial, in finishing order.
    resources : sequence of float, optional
        Resource of each trial; all equal when omitted.

    Returns
    -------
    idx : ndarray of int, shape (n_trials,)
        Incumbent index after each trial, -1 while no trial has a score.
    """
    scores = np.asarray(scores, dtype=float)
    if resources is None:
        resources = np.zeros_like(scores)
    resources = np.asarray(resources, dtype=float)
    out = np.full(scores.shape[0], -1, dtype=int)
    best = -1
    top_resource = -math.inf
    for i, (s, r) in enumerate(zip(scores, resources)):
        if np.isnan(s):
            out[i] = best
            continue
        if r > top_resource:
            # A new, larger resource level: only its trials count from now on.
            top_resource = r
            best = i
        elif r == top_resource and (best < 0 or s > scores[best]):
            best = i
        out[i] = best
    return out


def running_argmax(values: Sequence[float]) -> np.ndarray:
    """Incumbent by a selection score alone (e.g. a trade-off score)."""
    return incumbent_indices(values, None)


def score_at(times: Sequence[float], values: Sequence[float], t: float) -> float:
    """Value of the step function ``(times, values)`` at time ``t``.

    ``values[i]`` holds from ``times[i]`` on; NaN before the first step.
    """
    times = np.asarray(times, dtype=float)
    pos = np.searchsorted(times, t, side="right") - 1
    return float(np.asarray(values, dtype=float)[pos]) if pos >= 0 else math.nan


def time_to_target(
    times: Sequence[float], values: Sequence[float], target: float
) -> float:
    """First time the step function reaches ``target`` (inf if never)."""
    values = np.asarray(values, dtype=float)
    # A tiny slack so that the run that set the target reaches it exactly.
    hit = np.flatnonzero(values >= target - 1e-12)
    return float(np.asarray(times, dtype=float)[hit[0]]) if hit.size else math.inf


def target_threshold(best: float, classification: bool) -> float:
    """Score counted as "within reach" of ``best``: 0.5 pp for accuracy,
    1 % relative for regression scores."""
    if classification:
        return best - CLASSIFICATION_TOLERANCE
    return best - REGRESSION_TOLERANCE * abs(best)


def overhead_share(wall: float, busy: float, n_jobs: int) -> float:
    """Share of the worker-seconds not spent inside fit/score.

    ``1 - busy / (n_jobs * wall)``, with ``busy`` the fit and score seconds
    summed over every fold. Idle workers (a method that cannot fill its
    slots) count as overhead, as does the optimiser's own time; clipped to
    [0, 1] because threads inside a fit can make ``busy`` exceed the slots.
    """
    if not wall > 0 or not np.isfinite(busy):
        return math.nan
    return float(min(1.0, max(0.0, 1.0 - busy / (n_jobs * wall))))


def median_spread(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max) ignoring NaN; inf counts (a target never reached).

    Returns NaNs when no value is finite or infinite.
    """
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return (math.nan, math.nan, math.nan)
    return (float(np.median(arr)), float(arr.min()), float(arr.max()))


def step_on_grid(
    times: Sequence[float], values: Sequence[float], grid: Sequence[float]
) -> np.ndarray:
    """Step function ``(times, values)`` sampled at each point of ``grid``."""
    return np.array([score_at(times, values, t) for t in grid])
