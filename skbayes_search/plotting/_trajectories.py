"""Figures over the trials in order: convergence, training fractions, and the
score against training time."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..analysis import _trial_scores, pareto_front
from ._common import _approximate_times, _axes, _full_data_mask, _score_key


def plot_convergence(
    searches: Any | Sequence[Any],
    *,
    x: str = "time",
    labels: Sequence[str] | None = None,
    metric: str = "score",
    full_data_only: bool = False,
    ax: Any = None,
) -> Any:
    """Best validation score so far, one line per search.

    Parameters
    ----------
    searches : fitted search or list of fitted searches
        Any scikit-learn search: ours, ``GridSearchCV``,
        ``RandomizedSearchCV``, the halving searches, or another
        ``BaseSearchCV``.
    x : {"time", "trial"}, default="time"
        What the horizontal axis counts; one axis never mixes the two.

        - ``"time"``: seconds since ``fit`` started. Our searches record
          when each trial finished (``elapsed_time``). scikit-learn's
          searches do not: for them the time is **approximated** by
          cumulating ``(mean_fit_time + mean_score_time) * n_splits_`` over
          the rows in dispatch order, divided by the search's ``n_jobs``
          (as if every worker was always busy and nothing else took time,
          so it runs early). Their legend entries say "time approximated".
        - ``"trial"``: the row number of ``cv_results_`` (1, 2, ...), for
          every search. A trial of a subset strategy counts as one trial,
          whatever its training fraction.
    labels : list of str, default=None
        Legend entries; the class names by default.
    metric : str, default="score"
        Which ``mean_test_<metric>`` column to follow (with several metrics,
        ``"score"`` falls back to the ``refit`` metric).
    full_data_only : bool, default=False
        Count only trials fitted on all training rows (``resource_fraction
        == 1``; for the halving searches ``n_resources == max_resources_``),
        so subset strategies are not credited with scores measured on small
        subsets. A search without any such trial is drawn on all its trials
        instead, dashed, with "(no full-data trial)" in its legend entry, and
        a warning says so. A search without any finite score is left out
        with a warning.
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
    >>> ax = plot_convergence(search, x="trial")
    >>> ax.get_xlabel()
    'trial'
    """
    if x not in ("time", "trial"):
        raise ValueError(f"x must be 'time' or 'trial', got {x!r}")
    if not isinstance(searches, (list, tuple)):
        searches = [searches]
    if labels is not None and len(labels) != len(searches):
        raise ValueError(
            f"labels has {len(labels)} entries for {len(searches)} searches"
        )
    ax = _axes(ax)
    approximated = False
    for i, search in enumerate(searches):
        check_is_fitted(search, "cv_results_")
        results = search.cv_results_
        label = labels[i] if labels is not None else type(search).__name__
        scores = _trial_scores(results, _score_key(search, results, metric))
        if x == "trial":
            xs = np.arange(1, len(scores) + 1, dtype=float)
        elif "elapsed_time" in results:
            xs = np.asarray(results["elapsed_time"], dtype=float)
        else:
            xs = _approximate_times(search, results)
            label += " (time approximated)"
            approximated = True
        keep = np.isfinite(scores)
        if not keep.any():
            warnings.warn(
                f"{label}: no trial has a finite {metric}; left out of the plot",
                UserWarning,
                stacklevel=2,
            )
            continue
        style = "-"
        full = _full_data_mask(search, results) if full_data_only else None
        if full is not None:
            if (keep & full).any():
                keep &= full
            else:
                warnings.warn(
                    f"{label}: no trial on all training rows; drawn over all its "
                    "trials, dashed",
                    UserWarning,
                    stacklevel=2,
                )
                label += " (no full-data trial)"
                style = "--"
        order = np.argsort(xs[keep], kind="stable")
        t, s = xs[keep][order], np.maximum.accumulate(scores[keep][order])
        ax.step(t, s, style, where="post", marker="o", markersize=3, label=label)
    if x == "trial":
        ax.set_xlabel("trial")
    elif approximated:
        ax.set_xlabel("seconds since fit started (approximated where marked)")
    else:
        ax.set_xlabel("seconds since fit started (wall clock)")
    scope = " (full-data trials)" if full_data_only else ""
    ax.set_ylabel(f"best mean validation {metric} so far{scope}")
    ax.legend(loc="lower right", fontsize="small")
    return ax


def plot_fractions(search: Any, *, metric: str = "score", ax: Any = None) -> Any:
    """Training fraction of each trial against the time it finished.

    Shows how a subset strategy (FABOLAS, multi-stage) spends its budget:
    many cheap small-fraction trials early, few full-data trials late.

    Parameters
    ----------
    search : fitted skbayes_search search
        Must have ``resource_fraction`` and ``elapsed_time`` in ``cv_results_``.
    metric : str, default="score"
        Which ``mean_test_<metric>`` column colours the trials (with several
        metrics, ``"score"`` falls back to the ``refit`` metric).
    ax : matplotlib Axes, default=None
        Where to draw.

    Returns
    -------
    ax : matplotlib Axes
    """
    check_is_fitted(search, "cv_results_")
    results = search.cv_results_
    ax = _axes(ax)
    scores = _trial_scores(results, _score_key(search, results, metric))
    points = ax.scatter(
        results["elapsed_time"],
        results["resource_fraction"],
        c=np.where(np.isfinite(scores), scores, np.nan),
        cmap="viridis",
    )
    ax.set_yscale("log")
    ax.set_xlabel("wall-clock seconds")
    ax.set_ylabel("training fraction")
    ax.figure.colorbar(points, ax=ax, label=f"mean validation {metric}")
    return ax


def plot_tradeoff(search: Any, *, metric: str = "score", ax: Any = None) -> Any:
    """Validation score against training time of every trial, front highlighted.

    Parameters
    ----------
    search : fitted search
        Any scikit-learn search; the Pareto front (score up, time down) is
        computed from ``cv_results_``.
    metric : str, default="score"
        Which ``mean_test_<metric>`` column to draw (with several metrics,
        ``"score"`` falls back to the ``refit`` metric).
    ax : matplotlib Axes, default=None
        Where to draw.

    Returns
    -------
    ax : matplotlib Axes
    """
    check_is_fitted(search, "cv_results_")
    results = search.cv_results_
    ax = _axes(ax)
    scores = _trial_scores(results, _score_key(search, results, metric))
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
