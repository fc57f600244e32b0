"""Size the peers that have no time budget so they fill the same wall clock.

A short calibration times fit+score calls of a few random configurations on
growing subsets of the search data (up to one fold's training rows, or until a
fit takes 2 % of the budget) and fits ``t(m) = a * m**b`` (one exponent, one
level per configuration, levels averaged) to the seconds of one fold on ``m``
training rows. A probe in a fresh interpreter adds the seconds joblib workers
need to start, which every run pays once. From the model:

- random search gets the largest ``n_iter`` whose folds fit the budget on
  ``n_jobs`` workers;
- grid search the largest square grid of at most that many points;
- successive halving the default (``n_candidates="exhaust"``) when its
  schedule fits, else the largest ``n_candidates`` that fits with
  ``min_resources="exhaust"`` (so its last rung still sees all the data, as
  scikit-learn recommends when ``n_candidates`` is set).

Calibration runs once per task, outside the budget; what it measured and
chose is written to the output.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import ParameterSampler
from sklearn.utils import check_random_state

from . import REPO_ROOT
from .tasks import Task, space_scipy

#: Calibration subsets halve down from one fold's training rows: 1/16 ... 1.
_HALVINGS = 4
N_CALIBRATION_CONFIGS = 5
# A configuration stops growing its subset once a fit would take longer than
# this share of the budget (it is then extrapolated by the power law).
_FIT_CAP_SHARE = 0.02
# Plausible range of the fit-time exponent; outside it a noisy fit of a few
# small subsets would extrapolate wildly.
_EXPONENT_RANGE = (0.5, 3.0)


@dataclass
class FoldTimeModel:
    """Seconds of one fold's fit+score on ``m`` training rows: ``a * m**b``,
    plus ``startup`` seconds once per search (joblib workers importing
    scikit-learn)."""

    a: float
    b: float
    startup: float
    calibration_seconds: float
    n_fits: int
    largest_subset: int

    def __call__(self, m: float) -> float:
        return self.a * max(m, 1.0) ** self.b

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# Run in a fresh interpreter, as every benchmark run is: how long fresh
# joblib workers take to import the estimator's modules and run a tiny fit.
_STARTUP_PROBE = """
import sys, time
import numpy as np
from joblib import Parallel, delayed
from benchmarks.tasks import ESTIMATORS
name, classification, n_jobs = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3])
spec = ESTIMATORS[name]
est = (spec.classifier if classification else spec.regressor)()
X = np.random.default_rng(0).normal(size=(60, 4))
y = np.arange(60) % 2 if classification else X[:, 0]
start = time.perf_counter()
Parallel(n_jobs=n_jobs)(delayed(est.fit)(X, y) for _ in range(n_jobs))
print(time.perf_counter() - start)
"""


def _worker_startup(task: Task, n_jobs: int) -> float:
    """Seconds fresh joblib workers need to run their first (tiny) fit."""
    flag = "1" if task.classification else "0"
    out = subprocess.run(
        [sys.executable, "-c", _STARTUP_PROBE, task.spec.name, flag, str(n_jobs)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def _time_fold(task: Task, params: dict, train: np.ndarray, test: np.ndarray) -> float:
    """Seconds of one fit on ``train`` rows and one score on ``test`` rows."""
    est = clone(task.estimator()).set_params(**params)
    start = time.perf_counter()
    est.fit(task.X_search[train], task.y_search[train])
    est.score(task.X_search[test], task.y_search[test])
    return max(time.perf_counter() - start, 1e-4)


def calibrate(
    task: Task,
    budget: float,
    *,
    n_splits: int = 5,
    n_jobs: int = 2,
    seed: int = 0,
    n_configs: int = N_CALIBRATION_CONFIGS,
) -> FoldTimeModel:
    """Time a few fits of random configurations and fit the time model.

    Each configuration is fitted on growing subsets (1/16, 1/8, ... of one
    fold's training rows) until a fit would exceed 2 % of the budget or the
    full fold size is reached. The configurations of one size run side by
    side on ``n_jobs`` joblib workers, as a search's folds do, so the times
    include the slow-down of sharing the machine.
    """
    rng = check_random_state(seed)
    n = len(task.y_search)
    m_fold = n * (n_splits - 1) // n_splits
    min_rows = 20 * (task.n_classes or 1)
    sizes = sorted(
        {max(min(min_rows, m_fold), m_fold >> j) for j in range(_HALVINGS + 1)}
    )
    fit_cap = _FIT_CAP_SHARE * budget
    configs = list(
        ParameterSampler(space_scipy(task.params), n_configs, random_state=rng)
    )
    order = rng.permutation(n)
    startup = _worker_startup(task, n_jobs)
    log_m, log_t, groups = [], [], []
    start = time.perf_counter()
    active = list(range(len(configs)))
    with Parallel(n_jobs=n_jobs) as parallel:
        for m in sizes:
            train = order[:m]
            # Score as many rows as a fold of a CV over m * k/(k-1) rows.
            test = order[m : m + max(1, m // (n_splits - 1))]
            if test.size == 0:
                test = order[: max(1, m // (n_splits - 1))]
            seconds = parallel(
                delayed(_time_fold)(task, configs[c], train, test) for c in active
            )
            for c, s in zip(active, seconds):
                log_t.append(math.log(s))
                log_m.append(math.log(m))
                groups.append(c)
            # The next size doubles the rows: at least doubles the time.
            active = [c for c, s in zip(active, seconds) if 2 * s <= fit_cap]
            if not active:
                break
    elapsed = time.perf_counter() - start
    lm, lt, g = map(np.asarray, (log_m, log_t, groups))
    # Within-configuration slope: configurations differ a lot in level
    # (e.g. SVC with large C) but share how time grows with rows.
    dm = lm - np.array([lm[g == k].mean() for k in g])
    dt = lt - np.array([lt[g == k].mean() for k in g])
    b = float(np.sum(dm * dt) / np.sum(dm * dm)) if np.sum(dm * dm) > 0 else 1.0
    b = float(np.clip(b, *_EXPONENT_RANGE))
    # Mean, not median, over configurations: the budget is spent on the sum.
    a = float(
        np.mean(
            [
                math.exp(np.mean(lt[g == k] - b * lm[g == k]))
                for k in range(len(configs))
            ]
        )
    )
    return FoldTimeModel(
        a=a,
        b=b,
        startup=startup,
        calibration_seconds=elapsed + startup,
        n_fits=len(log_t),
        largest_subset=round(math.exp(lm.max())),
    )


def trial_seconds(model: FoldTimeModel, n_rows: float, n_splits: int) -> float:
    """Predicted worker-seconds of one k-fold trial on ``n_rows`` rows."""
    return n_splits * model(n_rows * (n_splits - 1) / n_splits)


def random_n_iter(
    model: FoldTimeModel, n_rows: int, budget: float, n_jobs: int, n_splits: int = 5
) -> int:
    """Largest ``n_iter`` of a full-data random search that fits ``budget``."""
    per_trial = trial_seconds(model, n_rows, n_splits)
    return max(1, int((budget - model.startup) * n_jobs / per_trial))


def grid_points_per_dim(n_iter: int, n_dims: int) -> int:
    """Points per dimension of the largest grid with at most ``n_iter`` points
    (at least 2, else it is no grid)."""
    return max(2, math.floor(n_iter ** (1 / n_dims) + 1e-9))


def halving_schedule(
    n_samples: int,
    n_candidates: int | str,
    min_resources: str,
    *,
    factor: int = 3,
    n_splits: int = 5,
    n_classes: int | None = None,
) -> list[tuple[int, int]]:
    """Rungs ``(n_candidates, n_resources)`` of ``HalvingRandomSearchCV``
    with ``resource="n_samples"`` and ``aggressive_elimination=False``.

    Follows scikit-learn 1.9's ``_run_search`` and
    ``_generate_candidate_params``.
    """
    smallest = n_splits * 2 * (n_classes or 1)
    min_res = smallest
    if n_candidates == "exhaust":
        n_candidates = n_samples // smallest
    n_required = 1 + math.floor(math.log(n_candidates, factor))
    if min_resources == "exhaust":
        min_res = max(smallest, n_samples // factor ** (n_required - 1))
    n_possible = 1 + math.floor(math.log(n_samples // min_res, factor))
    rungs = []
    n_cand = int(n_candidates)
    for itr in range(min(n_possible, n_required)):
        rungs.append((n_cand, min(int(factor**itr * min_res), n_samples)))
        n_cand = math.ceil(n_cand / factor)
    return rungs


def halving_seconds(
    model: FoldTimeModel, rungs: list[tuple[int, int]], n_jobs: int, n_splits: int = 5
) -> float:
    """Predicted wall seconds of a halving schedule on ``n_jobs`` workers."""
    work = sum(c * trial_seconds(model, r, n_splits) for c, r in rungs)
    return model.startup + work / n_jobs


def halving_settings(
    model: FoldTimeModel,
    n_samples: int,
    budget: float,
    n_jobs: int,
    *,
    n_splits: int = 5,
    n_classes: int | None = None,
    factor: int = 3,
) -> dict[str, Any]:
    """``n_candidates``/``min_resources`` for ``HalvingRandomSearchCV``.

    The default when its predicted time fits ``budget``; otherwise the
    largest integer ``n_candidates`` (at least ``factor``) that fits, with
    ``min_resources="exhaust"``.
    """
    kw = {"factor": factor, "n_splits": n_splits, "n_classes": n_classes}
    default = halving_schedule(n_samples, "exhaust", "smallest", **kw)
    predicted = halving_seconds(model, default, n_jobs, n_splits)
    if predicted <= budget:
        return {
            "n_candidates": "exhaust",
            "min_resources": "smallest",
            "predicted_seconds": predicted,
            "rungs": default,
        }
    best = factor
    for c in range(factor, default[0][0] + 1):
        rungs = halving_schedule(n_samples, c, "exhaust", **kw)
        if halving_seconds(model, rungs, n_jobs, n_splits) <= budget:
            best = c
    rungs = halving_schedule(n_samples, best, "exhaust", **kw)
    return {
        "n_candidates": best,
        "min_resources": "exhaust",
        "predicted_seconds": halving_seconds(model, rungs, n_jobs, n_splits),
        "rungs": rungs,
    }
