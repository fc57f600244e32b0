"""Accuracy against training time: the trade-off objective and Pareto fronts.

The objective of :class:`~skbayes_search.TradeoffBayesSearchCV` is
``T_alpha = L - alpha * o``: ``L`` the effectiveness (:func:`scale_scores`),
``o`` the normalised training time (:func:`normalize_times`). These
functions compute it from any fitted search's ``cv_results_``, select a trial
by it (:func:`tradeoff_index`, :func:`tradeoff_curve`) and find the trials no
other trial beats on both score and time (:func:`pareto_front`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

__all__ = [
    "normalize_times",
    "objective_parts",
    "pareto_front",
    "results_pareto_front",
    "scale_scores",
    "time_scale",
    "tradeoff_curve",
    "tradeoff_index",
]


def scale_scores(scores: Any) -> np.ndarray:
    """The effectiveness ``L`` of each trial, in [0, 1].

    Scores already in [0, 1] (accuracy, balanced accuracy, ROC AUC, F1, ...)
    are used as they are, so ``alpha`` keeps one meaning whatever was
    observed. When some finite score lies outside [0, 1] (e.g.
    ``neg_log_loss``, ``neg_mean_squared_error``, a negative R^2), the scores
    are min-max scaled over the finite observed ones, so ``alpha`` weighs the
    whole observed score range against the normalised time.

    Parameters
    ----------
    scores : array-like of shape (n_trials,)
        Mean validation scores, higher is better; nan for failed trials.

    Returns
    -------
    L : ndarray of shape (n_trials,)
        Effectiveness in [0, 1]; nan stays nan. All-equal scores outside
        [0, 1] map to 1.

    Examples
    --------
    >>> from skbayes_search.analysis import scale_scores
    >>> scale_scores([0.2, 0.9])
    array([0.2, 0.9])
    >>> scale_scores([-3.0, -1.0, -2.0, float("nan")])
    array([0. , 1. , 0.5, nan])
    """
    scores = np.asarray(scores, dtype=float)
    finite = np.isfinite(scores)
    if not finite.any():
        return scores.copy()
    lo, hi = scores[finite].min(), scores[finite].max()
    if lo >= 0.0 and hi <= 1.0:
        return scores.copy()
    if hi - lo <= 0.0:
        return np.where(finite, 1.0, np.nan)
    return (scores - lo) / (hi - lo)


def time_scale(times: Any, time_normalization: str | float) -> float:
    """Seconds that map to a normalised time ``o = 1``.

    Parameters
    ----------
    times : array-like of shape (n_trials,)
        Training seconds; nan for failed trials.
    time_normalization : "max" or float
        ``"max"``: the longest finite time (1 when there is none); a float:
        that many seconds.

    Returns
    -------
    float

    Examples
    --------
    >>> from skbayes_search.analysis import time_scale
    >>> time_scale([2.0, float("nan"), 5.0], "max"), time_scale([2.0], 0.5)
    (5.0, 0.5)
    """
    if time_normalization == "max":
        times = np.asarray(times, dtype=float)
        finite = np.isfinite(times)
        return float(times[finite].max()) if finite.any() else 1.0
    return float(time_normalization)


def normalize_times(times: Any, time_normalization: str | float) -> np.ndarray:
    """The normalised training time ``o`` of each trial.

    Parameters
    ----------
    times : array-like of shape (n_trials,)
        Training seconds; nan for failed trials.
    time_normalization : "max" or float
        See :func:`time_scale`.

    Returns
    -------
    o : ndarray of shape (n_trials,)
        ``times / time_scale(times, time_normalization)``, nan for failed
        trials; 0 for every finite time when the scale is not positive.

    Examples
    --------
    >>> from skbayes_search.analysis import normalize_times
    >>> normalize_times([1.0, 4.0, float("nan")], "max")
    array([0.25, 1.  ,  nan])
    """
    times = np.asarray(times, dtype=float)
    scale = time_scale(times, time_normalization)
    if not scale > 0.0:
        return np.where(np.isfinite(times), 0.0, np.nan)
    return times / scale


def tradeoff_index(L: Any, o: Any, alpha: float) -> int:
    """Row maximising ``T_alpha = L - alpha * o``; -1 when no trial succeeded.

    Ties (frequent for accuracy on small validation sets) go to the faster
    trial, then to the earlier one.

    Parameters
    ----------
    L : array-like of shape (n_trials,)
        Effectiveness (:func:`scale_scores`), nan for failed trials.
    o : array-like of shape (n_trials,)
        Normalised training times (:func:`normalize_times`).
    alpha : float
        Weight of the normalised time, ``>= 0``.

    Returns
    -------
    int

    Examples
    --------
    >>> from skbayes_search.analysis import tradeoff_index
    >>> tradeoff_index([0.9, 0.8, 0.9], [1.0, 0.1, 0.5], 0.0)
    2
    >>> tradeoff_index([0.9, 0.8, 0.9], [1.0, 0.1, 0.5], 0.5)
    1
    """
    L = np.asarray(L, dtype=float)
    o = np.asarray(o, dtype=float)
    T = L - alpha * o
    rows = np.flatnonzero(np.isfinite(T))
    if not rows.size:
        return -1
    order = np.lexsort((rows, o[rows], -T[rows]))
    return int(rows[order[0]])


def pareto_front(scores: Any, times: Any) -> np.ndarray:
    """Indices of the points not dominated in (score up, time down).

    Point ``i`` is dominated when another point scores at least as well in
    no more time and is strictly better in one of the two. Points with a
    non-finite score or time (e.g. failed trials) are never on the front;
    exact duplicates of a front point are all kept.

    Parameters
    ----------
    scores : array-like of shape (n_points,)
        Scores, higher is better (e.g. ``cv_results_["mean_test_score"]``).
    times : array-like of shape (n_points,)
        Times, lower is better (e.g. ``cv_results_["mean_fit_time"]``).

    Returns
    -------
    front : ndarray of int
        Indices of the non-dominated points, by increasing time (ties in
        time: by index), hence by increasing score.

    Examples
    --------
    >>> from skbayes_search.analysis import pareto_front
    >>> pareto_front([0.9, 0.8, 0.85, 0.7, float("nan")], [10.0, 1.0, 12.0, 2.0, 0.1])
    array([1, 0])
    """
    scores = np.asarray(scores, dtype=float)
    times = np.asarray(times, dtype=float)
    if scores.shape != times.shape or scores.ndim != 1:
        raise ValueError(
            "scores and times must be 1-d arrays of the same length, got shapes "
            f"{scores.shape} and {times.shape}"
        )
    rows = np.flatnonzero(np.isfinite(scores) & np.isfinite(times))
    rows = rows[np.lexsort((rows, -scores[rows], times[rows]))]
    front: list[int] = []
    best = -np.inf
    start = 0
    while start < rows.size:
        stop = start
        while stop < rows.size and times[rows[stop]] == times[rows[start]]:
            stop += 1
        group = rows[start:stop]
        top = scores[group].max()
        # every faster point scored below ``top``, so only this group's top
        # scorers can be undominated
        if top > best:
            front.extend(int(r) for r in group if scores[r] == top)
            best = top
        start = stop
    return np.asarray(front, dtype=np.intp)


def _score_key(results: dict, refit: Any) -> str:
    """The ``cv_results_`` key of the score the search optimised."""
    if "mean_test_score" in results:
        return "mean_test_score"
    if isinstance(refit, str) and f"mean_test_{refit}" in results:
        return f"mean_test_{refit}"
    # a callable refit with several metrics: the search optimised the first
    return next(k for k in results if k.startswith("mean_test_"))


def _trial_scores(results: dict, key: str) -> np.ndarray:
    """The ``key`` column of ``cv_results_``, nan for failed trials.

    A numeric ``error_score`` is recorded as a failed trial's score; where
    ``fit_failed`` marks the failures (this package's searches), it is read
    as nan, so that no best score, front or plot counts it.
    """
    scores = np.asarray(results[key], dtype=float)
    if "fit_failed" in results:
        scores = np.where(np.asarray(results["fit_failed"], dtype=bool), np.nan, scores)
    return scores


def _trial_times(results: dict, key: str) -> np.ndarray:
    """Mean training seconds per trial, nan for failed trials."""
    if "mean_train_time" in results:
        return np.asarray(results["mean_train_time"], dtype=float)
    # another search's results: a failed fit's time is not a training time
    times = np.asarray(results["mean_fit_time"], dtype=float)
    return np.where(np.isfinite(_trial_scores(results, key)), times, np.nan)


def results_pareto_front(results: dict, refit: Any = True) -> np.ndarray:
    """:func:`pareto_front` of a ``cv_results_`` dict: score against training time.

    Parameters
    ----------
    results : dict
        ``cv_results_`` of a fitted search. The training time is
        ``mean_train_time`` when present (a trade-off search), otherwise
        ``mean_fit_time`` of the successful trials.
    refit : bool, str or callable, default=True
        The search's ``refit``: with several metrics, names the score (a
        callable means the first metric).

    Returns
    -------
    front : ndarray of int
        Rows on the front, by increasing training time.

    Examples
    --------
    >>> from skbayes_search.analysis import results_pareto_front
    >>> results_pareto_front(
    ...     {"mean_test_score": [0.9, 0.8, 0.7], "mean_fit_time": [2.0, 1.0, 3.0]}
    ... )
    array([1, 0])
    """
    key = _score_key(results, refit)
    return pareto_front(_trial_scores(results, key), _trial_times(results, key))


def objective_parts(
    results: dict, key: str, time_normalization: str | float
) -> tuple[np.ndarray, np.ndarray]:
    """``(L, o)`` of every row of ``cv_results_`` (nan for failed trials).

    Parameters
    ----------
    results : dict
        ``cv_results_`` of a fitted search (see :func:`results_pareto_front`
        for the training time it reads).
    key : str
        The score column, e.g. ``"mean_test_score"``.
    time_normalization : "max" or float
        See :func:`time_scale`.

    Returns
    -------
    L, o : ndarray of shape (n_trials,)
        :func:`scale_scores` and :func:`normalize_times` of the rows.

    Examples
    --------
    >>> from skbayes_search.analysis import objective_parts
    >>> results = {"mean_test_score": [0.9, 0.8], "mean_fit_time": [2.0, 1.0]}
    >>> objective_parts(results, "mean_test_score", "max")
    (array([0.9, 0.8]), array([1. , 0.5]))
    """
    times = _trial_times(results, key)
    scores = np.where(np.isfinite(times), _trial_scores(results, key), np.nan)
    return scale_scores(scores), normalize_times(times, time_normalization)


def tradeoff_curve(search: Any, alphas: Any) -> np.ndarray:
    """Trial a fitted search would select for each trade-off weight ``alpha``.

    Applies the selection rule of
    :class:`~skbayes_search.TradeoffBayesSearchCV`, argmax over the evaluated
    trials of ``L - alpha * o`` (:func:`tradeoff_index`), for every ``alpha``
    at once, with the score scaling and time normalisation of the fitted
    search. This traces the whole accuracy/training-time curve of one search
    without re-running it (the trials themselves were proposed for the
    search's own ``alpha``).

    Parameters
    ----------
    search : fitted search estimator
        A fitted :class:`~skbayes_search.TradeoffBayesSearchCV`; any fitted
        scikit-learn search works too, using its ``mean_fit_time`` and
        ``"max"`` normalisation.
    alphas : float or array-like of float
        Non-negative trade-off weights.

    Returns
    -------
    indices : ndarray of int of shape (n_alphas,)
        Row of ``search.cv_results_`` selected for each ``alpha``.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC
    >>> from skbayes_search import TradeoffBayesSearchCV
    >>> from skbayes_search.analysis import tradeoff_curve
    >>> X, y = load_iris(return_X_y=True)
    >>> search = TradeoffBayesSearchCV(
    ...     SVC(), {"C": (1e-2, 1e2, "log-uniform")}, alpha=0.1, n_iter=5,
    ...     hyperparameter_sampling="map", cv=3, random_state=0,
    ... ).fit(X, y)
    >>> tradeoff_curve(search, [0.0, 0.1, 1.0]).shape
    (3,)
    """
    check_is_fitted(search, "cv_results_")
    try:
        alphas = np.atleast_1d(np.asarray(alphas, dtype=float))
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"alphas must be non-negative numbers, got {alphas!r}"
        ) from exc
    if alphas.ndim != 1 or not np.all(np.isfinite(alphas)) or np.any(alphas < 0):
        raise ValueError(
            f"alphas must be finite non-negative numbers, got {alphas.tolist()!r}"
        )
    results = search.cv_results_
    key = _score_key(results, getattr(search, "refit", None))
    L, o = objective_parts(results, key, getattr(search, "time_normalization", "max"))
    return np.asarray([tradeoff_index(L, o, a) for a in alphas], dtype=np.intp)
