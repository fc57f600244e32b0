"""Offline validation: refit each distinct incumbent and score it on the test split.

Runs after the searches, outside every timed part (the FABOLAS paper's
offline validation step). Results are cached in a JSON file per task, keyed by
the parameter setting and the data fraction, so an incumbent shared by several
methods or seeds is fitted once, and an interrupted benchmark resumes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import train_test_split

from .tasks import Task
from .trace import params_key


def incumbent_key(params: dict[str, Any], fraction: float) -> str:
    """Cache key of an incumbent: its parameters and the fraction it is refit on."""
    return f"{params_key(params)}@{float(fraction):.6g}"


def _fit_and_test(task: Task, params: dict, fraction: float) -> dict[str, float]:
    X, y = task.X_search, task.y_search
    if fraction < 1.0:
        X, _, y, _ = train_test_split(
            X,
            y,
            train_size=fraction,
            stratify=y if task.classification else None,
            random_state=0,
        )
    est = clone(task.estimator()).set_params(**params)
    start = time.perf_counter()
    est.fit(X, y)
    fit_seconds = time.perf_counter() - start
    return {
        "test_score": float(est.score(task.X_test, task.y_test)),
        "fit_seconds": fit_seconds,
    }


def refit_incumbents(
    task: Task, incumbents: list[tuple[dict, float]], cache_path: Path, n_jobs: int
) -> dict[str, dict[str, float]]:
    """Test score (and refit seconds) of every ``(params, fraction)``.

    Parameters
    ----------
    task : Task
    incumbents : list of (dict, float)
        Parameter settings and the data fractions they are refit on, in the
        order they should be refit.
    cache_path : Path
        JSON cache, read and updated.
    n_jobs : int
        Refits run in parallel.

    Returns
    -------
    scores : dict
        ``incumbent_key -> {"test_score", "fit_seconds"}``.
    """
    cache: dict[str, dict[str, float]] = {}
    if cache_path.is_file():
        cache = json.loads(cache_path.read_text())
    todo = {}
    for params, fraction in incumbents:
        key = incumbent_key(params, fraction)
        if key not in cache:
            todo[key] = (params, fraction)
    if todo:
        # Written after every refit: on large data this stage takes an hour
        # or more, and a stopped one keeps what it did (rerun with --resume).
        results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(_keyed_fit_and_test)(key, task, p, f)
            for key, (p, f) in todo.items()
        )
        for key, result in results:
            cache[key] = result
            cache_path.write_text(json.dumps(cache, indent=1))
    return cache


def _keyed_fit_and_test(
    key: str, task: Task, params: dict, fraction: float
) -> tuple[str, dict[str, float]]:
    return key, _fit_and_test(task, params, fraction)
