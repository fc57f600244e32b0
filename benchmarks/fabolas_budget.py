"""Does FabolasSearchCV keep to ``max_time``? One run, its final evaluation measured.

Runs :class:`~skbayes_search.FabolasSearchCV` on a benchmark task (the
harness's split, estimator and space; ``refit=False``) with ``max_time`` equal
to the budget, then reports, from ``cv_results_``:

- the run's wall time against the budget;
- when the last trial before the final full-data evaluation ended, and how
  long that evaluation took (there is none when the incumbent already ran on
  all data);
- what :func:`~skbayes_search.strategies.fabolas.reserve_seconds` makes of the
  trials before it (the time the search sets aside for that evaluation),
  against the wall seconds it took and the cost it was extrapolated from.

No refits and no test scores: this checks the budget, not the result. Every
fit runs for real, so a run takes about the budget plus the final evaluation.

Usage::

    python -m benchmarks.fabolas_budget --task svc-connect_4 --seed 0 \\
        --budget 300 --max-rows 27000
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from skbayes_search import FabolasSearchCV
from skbayes_search.strategies.fabolas import reserve_seconds

from .tasks import load_task, space_ours


def final_evaluation_report(
    results: dict, n_splits: int, n_jobs: int, budget: float, wall: float
) -> dict[str, Any]:
    """Budget figures of a finished FABOLAS search, from its ``cv_results_``.

    The final evaluation is the last row when it ran on all data without an
    acquisition value; the reserve is recomputed from the rows before it, as
    the search saw them when it stopped proposing. When the incumbent had
    already been evaluated on all data there is no final evaluation, and the
    figures about it are ``None``.
    """
    elapsed = np.asarray(results["elapsed_time"], dtype=float)
    fractions = np.asarray(results["resource_fraction"], dtype=float)
    per_split = np.asarray(results["mean_fit_time"], dtype=float) + np.asarray(
        results["mean_score_time"], dtype=float
    )
    costs = np.maximum(per_split * n_splits, 1e-3)
    ok = np.isfinite(np.asarray(results["mean_test_score"], dtype=float))
    final = len(elapsed) - 1
    acquisition = np.asarray(
        results.get("acquisition_value", np.full(final + 1, np.nan)), dtype=float
    )
    report = {
        "budget": budget,
        "wall": round(wall, 1),
        "within_budget": bool(wall <= budget),
        "trials": len(elapsed),
        "final_evaluation": bool(
            fractions[final] >= 1.0 and not np.isfinite(acquisition[final])
        ),
    }
    if not report["final_evaluation"]:
        names = (
            "last_trial_end",
            "final_seconds",
            "final_cost_summed",
            "reserve_seconds",
        )
        return {**report, **dict.fromkeys(names)}
    before = np.arange(final)
    started = float(elapsed[before].max()) if final else 0.0
    own = [results["params"][i] == results["params"][final] for i in before]
    keep = ok[before]
    reserve = reserve_seconds(
        fractions[before][keep],
        costs[before][keep],
        np.asarray(own, dtype=bool)[keep],
        n_splits,
        n_jobs,
    )
    return {
        **report,
        "last_trial_end": round(started, 1),
        "final_seconds": round(float(elapsed[final]) - started, 1),
        "final_cost_summed": round(float(costs[final]), 1),
        "reserve_seconds": round(reserve, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True, help="e.g. svc-connect_4")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=300.0, help="max_time, s")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--max-rows", type=int, default=None)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)

    task = load_task(args.task, args.data_dir, max_rows=args.max_rows)
    search = FabolasSearchCV(
        task.estimator(),
        space_ours(task.params),
        n_iter=100_000,
        max_time=args.budget,
        n_jobs=args.n_jobs,
        refit=False,
        random_state=args.seed,
    )
    start = time.perf_counter()
    search.fit(task.X_search, task.y_search)
    wall = time.perf_counter() - start
    report = final_evaluation_report(
        search.cv_results_, search.n_splits_, args.n_jobs, args.budget, wall
    )
    report = {"task": task.name, "seed": args.seed, **report}
    report["incumbent"] = search.best_params_
    report["incumbent_cv_score"] = round(float(search.best_score_), 4)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
