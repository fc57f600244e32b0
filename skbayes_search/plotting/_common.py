"""What every figure shares: matplotlib on demand, the score column, which
rows saw all the data and when scikit-learn's rows finished."""

from __future__ import annotations

from typing import Any

import numpy as np
from joblib import effective_n_jobs


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "skbayes_search.plotting needs matplotlib: "
            "pip install 'skbayes-search[plot]'"
        ) from exc
    return plt


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    return _pyplot().gca()


def _score_key(search: Any, results: dict, metric: str) -> str:
    key = f"mean_test_{metric}"
    if key in results:
        return key
    refit = getattr(search, "refit", None)
    if metric == "score" and isinstance(refit, str) and f"mean_test_{refit}" in results:
        return f"mean_test_{refit}"
    raise ValueError(
        f"metric={metric!r}: {type(search).__name__}.cv_results_ has no {key!r}; "
        "pass metric= one of "
        + ", ".join(repr(k[10:]) for k in results if k.startswith("mean_test_"))
    )


def _full_data_mask(search: Any, results: dict) -> np.ndarray | None:
    """Rows fitted on all training rows, or None when every row was."""
    if "resource_fraction" in results:
        return np.asarray(results["resource_fraction"], dtype=float) >= 1.0
    max_resources = getattr(search, "max_resources_", None)
    if "n_resources" in results and max_resources is not None:
        # scikit-learn's successive halving: the last rung may stop short of
        # max_resources_, and then no row saw all the data.
        return np.asarray(results["n_resources"]) >= max_resources
    return None


def _approximate_times(search: Any, results: dict) -> np.ndarray:
    """Seconds at which each row would have finished, from its fit times.

    scikit-learn's searches record how long each fit and scoring took but not
    when it ended. Their rows are in dispatch order, so the cumulated fit and
    score seconds of all splits, divided by the number of workers, approximate
    the time at which each candidate finished. The approximation ignores
    dispatch overhead and idle workers, so it runs early.
    """
    per_row = np.nan_to_num(
        np.asarray(results["mean_fit_time"], dtype=float)
        + np.asarray(results["mean_score_time"], dtype=float)
    )
    n_splits = getattr(search, "n_splits_", 1)
    workers = max(1, effective_n_jobs(getattr(search, "n_jobs", None)))
    return np.cumsum(per_row * n_splits) / workers
