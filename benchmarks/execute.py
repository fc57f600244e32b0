"""One run: a method on a task with one seed, timed, its trajectory recorded.

Normally run in a fresh interpreter by :mod:`benchmarks.run`::

    python -m benchmarks.execute SPEC.json OUT.json

so that no run inherits another's warm caches, threads or memory. The spec
holds the task (name, data directory, max rows, split seed), the method, the
seed, the budget, ``n_jobs``, the calibrated sizing and a work folder. The
output holds the finished trials (time, CV score, resource, params), the
incumbent after each trial, wall time, fit/score seconds, the CPU seconds of
the search's own process and the share of the machine's CPU time that was
busy during the search (where ``/proc/stat`` is readable), and the settings the
method ran with. Nothing here refits or touches the test split.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import check_scoring

from .methods import METHODS, BuildContext
from .metrics import incumbent_indices, running_argmax
from .tasks import load_task
from .trace import TimedScorer, normalize_params, read_log, trials_from_log

T0_FILE = "t0"
SCORER_LOG = "scores.jsonl"


def machine_ticks() -> tuple[int, int] | None:
    """The machine's (all, idle) CPU time in clock ticks since boot, from
    ``/proc/stat`` (None where it is not readable)."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    if len(fields) < 5:
        return None
    # user .. steal; guest and guest_nice are already counted in user and nice
    return sum(fields[:8]), fields[3] + fields[4]  # idle + iowait


def busy_share(
    before: tuple[int, int] | None, after: tuple[int, int] | None
) -> float | None:
    """Share of the machine's CPU time spent working between two
    :func:`machine_ticks` readings (None without both)."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    return 1.0 - (after[1] - before[1]) / (after[0] - before[0])


def _busy_seconds(cv_results: dict, n_splits: int) -> float:
    """Fit+score seconds summed over every fold of every trial."""
    fit = np.nan_to_num(np.asarray(cv_results["mean_fit_time"], dtype=float))
    score = np.nan_to_num(np.asarray(cv_results["mean_score_time"], dtype=float))
    return float(np.sum(fit + score) * n_splits)


def _trials_ours(search: Any) -> list[dict[str, Any]]:
    res = search.cv_results_
    n = len(res["params"])
    extras = [k for k in ("tradeoff_score", "predicted_full_score") if k in res]
    # fit and score seconds summed over the splits, as the searches' cost
    # models see them: what a time reserve predicted can be checked against
    seconds = (
        np.asarray(res["mean_fit_time"], dtype=float)
        + np.asarray(res["mean_score_time"], dtype=float)
    ) * search.n_splits_
    trials = []
    for i in range(n):
        row = {
            "elapsed": float(res["elapsed_time"][i]),
            "score": float(res["mean_test_score"][i]),
            "resource": float(res["n_resources"][i]),
            "fraction": float(res["resource_fraction"][i]),
            "params": normalize_params(res["params"][i]),
            "seconds": float(seconds[i]),
        }
        row.update({k: float(res[k][i]) for k in extras})
        if "role" in res:  # what a trial was for: kept for the analysis
            row["role"] = str(res["role"][i])
        trials.append(row)
    trials.sort(key=lambda r: r["elapsed"])
    return trials


def incumbents_for(trials: list[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    """Incumbent after each finished trial, with the data fraction to refit it on.

    Tradeoff searches select by their trade-off score and refit on the chosen
    trial's fraction (a cheaper model is their point); every other method is
    refit on all the search data.
    """
    if not trials:
        return []
    if method.startswith("tradeoff") and "tradeoff_score" in trials[0]:
        idx = running_argmax([t["tradeoff_score"] for t in trials])
        own_fraction = True
    else:
        idx = incumbent_indices(
            [t["score"] for t in trials], [t["fraction"] for t in trials]
        )
        own_fraction = False
    out = []
    for t, i in zip(trials, idx):
        if i < 0:
            continue
        best = trials[i]
        out.append(
            {
                "elapsed": t["elapsed"],
                "params": best["params"],
                "refit_fraction": best["fraction"] if own_fraction else 1.0,
                "cv_score": best["score"],
            }
        )
    return out


def own_incumbents(search: Any) -> list[dict[str, Any]] | None:
    """Incumbents a search names itself, or None when it names none.

    A search that exposes ``incumbent_trajectory_`` (``FabolasSearchCV``, the
    lowest predicted loss on all data; ``HalvingBayesSearchCV``) lists
    ``(seconds since fit started, params, score)`` each time its choice may
    change; that choice, refit on all the search data, is what it would
    return if stopped then. The generic rule of :func:`incumbents_for` would
    second-guess it.
    """
    traj = getattr(search, "incumbent_trajectory_", None)
    if not traj:
        return None
    return [
        {
            "elapsed": float(t),
            "params": normalize_params(p),
            "refit_fraction": 1.0,
            "cv_score": float(s),
        }
        for t, p, s in traj
    ]


def read_t0(work_dir: Path) -> float | None:
    """Wall-clock time the run's search started (None if it never did)."""
    path = work_dir / T0_FILE
    return float(path.read_text()) if path.is_file() else None


def trials_from_scorer_log(work_dir: Path, n_splits: int, n_rows: int) -> list[dict]:
    """Finished trials of a peer from its scorer log (also after a kill)."""
    t0 = read_t0(work_dir)
    if t0 is None:
        return []
    trials = trials_from_log(read_log(work_dir / SCORER_LOG), n_splits, t0)
    for t in trials:
        t["fraction"] = t["resource"] / n_rows
    return trials


def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Run ``spec`` in this process and return the record (see module doc)."""
    warnings.filterwarnings("ignore")
    method = METHODS[spec["method"]]
    task = load_task(
        spec["task"],
        spec.get("data_dir"),
        max_rows=spec.get("max_rows"),
        split_seed=spec.get("split_seed", 0),
    )
    work_dir = Path(spec["work_dir"])
    work_dir.mkdir(parents=True, exist_ok=True)
    for stale in (T0_FILE, SCORER_LOG):
        (work_dir / stale).unlink(missing_ok=True)
    scoring = None
    if not method.ours:
        scoring = TimedScorer(
            check_scoring(task.estimator()),
            str(work_dir / SCORER_LOG),
            [p.name for p in task.params],
        )
    ctx = BuildContext(
        task=task,
        budget=float(spec["budget"]),
        seed=int(spec["seed"]),
        n_jobs=int(spec["n_jobs"]),
        sizing=spec.get("sizing", {}),
        scoring=scoring,
    )
    search, fit_kwargs, settings = method.build(ctx)
    t0 = time.time()
    (work_dir / T0_FILE).write_text(repr(t0))
    # what the search's own process and the whole machine spent meanwhile:
    # with cheap fits the search's proposals compete with its workers
    cpu0, ticks0 = time.process_time(), machine_ticks()
    search.fit(task.X_search, task.y_search, **fit_kwargs)
    wall = time.time() - t0
    search_cpu = time.process_time() - cpu0
    machine_busy = busy_share(ticks0, machine_ticks())

    n_splits = int(search.n_splits_)
    if method.ours:
        trials = _trials_ours(search)
    else:
        trials = trials_from_scorer_log(work_dir, n_splits, len(task.y_search))
    incumbents = own_incumbents(search) if method.ours else None
    if incumbents is None:
        incumbents = incumbents_for(trials, spec["method"])
    return {
        "status": "ok",
        "wall": wall,
        "busy": _busy_seconds(search.cv_results_, n_splits),
        "search_cpu": search_cpu,
        "machine_busy": machine_busy,
        "n_splits": n_splits,
        "n_trials": len(trials),
        "n_rows": len(task.y_search),
        "settings": json.loads(json.dumps(settings, default=str)),
        "trials": trials,
        "incumbents": incumbents,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m benchmarks.execute SPEC.json OUT.json``."""
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(args[0]).read_text())
    try:
        record = run_one(spec)
    except Exception as exc:
        # A method that raises is a result to report, not a harness crash.
        record = {
            "status": "failed",
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
    Path(args[1]).write_text(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
