"""Figures of fitted searches (needs the optional ``plot`` extra: matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .analysis import pareto_front


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "skbayes_search.plotting needs matplotlib: "
            "pip install 'skbayes-search[plot]'"
        ) from exc
    return plt.gca()


def _elapsed(results: dict) -> np.ndarray:
    if "elapsed_time" in results:
        return np.asarray(results["elapsed_time"], dtype=float)
    # scikit-learn's searches record no finish times; count trials instead
    return np.arange(1, len(results["params"]) + 1, dtype=float)


def plot_convergence(
    searches: Any | Sequence[Any],
    *,
    labels: Sequence[str] | None = None,
    metric: str = "score",
    full_data_only: bool = False,
    ax: Any = None,
) -> Any:
    """Best validation score so far against wall-clock time, one line per search.

    Parameters
    ----------
    searches : fitted search or list of fitted searches
        Any scikit-learn search; ours carry ``elapsed_time``, others are
        drawn against the trial number.
    labels : list of str, default=None
        Legend entries; the class names by default.
    metric : str, default="score"
        Which ``mean_test_<metric>`` column to follow.
    full_data_only : bool, default=False
        Count only trials fitted on all training rows
        (``resource_fraction == 1``), so subset strategies are not credited
        with scores measured on small subsets.
    ax : matplotlib Axes, default=None
        Where to draw; the current axes by default.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC
    >>> from skbayes_search import BayesSearchCV, Real
    >>> from skbayes_search.plotting import plot_convergence
    >>> X, y = load_iris(return_X_y=True)
    >>> search = BayesSearchCV(SVC(), {"C": Real(0.01, 100, prior="log-uniform")},
    ...                        n_iter=6, cv=3, random_state=0).fit(X, y)
    >>> ax = plot_convergence(search)
    """
    if not isinstance(searches, (list, tuple)):
        searches = [searches]
    ax = _axes(ax)
    for i, search in enumerate(searches):
        check_is_fitted(search, "cv_results_")
        results = search.cv_results_
        scores = np.asarray(results[f"mean_test_{metric}"], dtype=float)
        times = _elapsed(results)
        keep = np.isfinite(scores)
        if full_data_only and "resource_fraction" in results:
            keep &= np.asarray(results["resource_fraction"]) >= 1.0
        order = np.argsort(times[keep], kind="stable")
        t, s = times[keep][order], np.maximum.accumulate(scores[keep][order])
        label = labels[i] if labels is not None else type(search).__name__
        ax.step(t, s, where="post", marker="o", markersize=3, label=label)
    has_time = all("elapsed_time" in s.cv_results_ for s in searches)
    ax.set_xlabel("wall-clock seconds" if has_time else "trial")
    ax.set_ylabel(f"best mean validation {metric} so far")
    ax.legend()
    return ax


def plot_fractions(search: Any, *, ax: Any = None) -> Any:
    """Training fraction of each trial against the time it finished.

    Shows how a subset strategy (FABOLAS, multi-stage) spends its budget:
    many cheap small-fraction trials early, few full-data trials late.

    Parameters
    ----------
    search : fitted skbayes_search search
        Must have ``resource_fraction`` and ``elapsed_time`` in ``cv_results_``.
    ax : matplotlib Axes, default=None
        Where to draw.

    Returns
    -------
    ax : matplotlib Axes
    """
    check_is_fitted(search, "cv_results_")
    results = search.cv_results_
    ax = _axes(ax)
    scores = np.asarray(results["mean_test_score"], dtype=float)
    points = ax.scatter(
        results["elapsed_time"],
        results["resource_fraction"],
        c=np.where(np.isfinite(scores), scores, np.nan),
        cmap="viridis",
    )
    ax.set_yscale("log")
    ax.set_xlabel("wall-clock seconds")
    ax.set_ylabel("training fraction")
    ax.figure.colorbar(points, ax=ax, label="mean validation score")
    return ax


def plot_tradeoff(search: Any, *, metric: str = "score", ax: Any = None) -> Any:
    """Validation score against training time of every trial, front highlighted.

    Parameters
    ----------
    search : fitted search
        Any scikit-learn search; the Pareto front (score up, time down) is
        computed from ``cv_results_``.
    metric : str, default="score"
        Which ``mean_test_<metric>`` column to draw.
    ax : matplotlib Axes, default=None
        Where to draw.

    Returns
    -------
    ax : matplotlib Axes
    """
    check_is_fitted(search, "cv_results_")
    results = search.cv_results_
    ax = _axes(ax)
    scores = np.asarray(results[f"mean_test_{metric}"], dtype=float)
    times = np.asarray(results["mean_fit_time"], dtype=float)
    ok = np.isfinite(scores)
    ax.scatter(times[ok], scores[ok], alpha=0.5, label="trials")
    front = pareto_front(scores, times)
    order = front[np.argsort(times[front])]
    ax.plot(times[order], scores[order], "r-o", label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("mean training time per fit (s)")
    ax.set_ylabel(f"mean validation {metric}")
    ax.legend()
    return ax
