"""Does FabolasSearchCV keep to ``max_time``? One run, its final evaluation measured.

Runs :class:`~skbayes_search.FabolasSearchCV` on a benchmark task (the
harness's split, estimator and space; ``refit=False``) with ``max_time`` equal
to the budget, then reports, from ``cv_results_``:

- the run's wall time against the budget;
- when the last trial before the final full-data evaluation ended, and how
  long that evaluation took (there is none when the incumbent already ran on
  all data);
- what :func:`~skbayes_search._cost_model.reserve_seconds` makes of the
  trials before it (the time the search sets aside for that evaluation),
  against the wall seconds it took and the cost it was extrapolated from;
- for the last proposals (``--trace N``): the time left, the time set aside
  for the incumbent of that moment, and each proposed trial's predicted cost
  (the cautious cost the search checks against the time left, as wall
  seconds) against the wall seconds it took. A run can overrun ``max_time``
  two ways: a last trial slower than predicted, or a final evaluation slower
  than the time set aside (for the incumbent of the last proposal, which may
  not be the final one).

No refits and no test scores: this checks the budget, not the result. Every
fit runs for real, so a run takes about the budget plus the final evaluation.

Usage::

    python -m benchmarks.studies.fabolas_budget --task svc-connect_4 --seed 0 \\
        --budget 300 --max-rows 27000
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from skbayes_search import FabolasSearchCV
from skbayes_search._cost_model import reserve_seconds, wall_seconds

from ..tasks import load_task, space_ours


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


class _TracedFabolas(FabolasSearchCV):
    """FabolasSearchCV that records its budget figures at every proposal."""

    def _propose(self, ctx, n_slots, it, started):
        trials = super()._propose(ctx, n_slots, it, started)
        if not hasattr(self, "trace_"):
            self.trace_ = []
        inc_params = self.incumbent_trajectory_[-1][1]
        inc = next(i for i, t in enumerate(ctx.trials) if t.params == inc_params)
        costs, _ = self._budget(ctx, inc)
        reserve = 0.0
        if self._full_data_row(ctx, inc) is None:
            x = ctx.trials[inc].x
            own = [
                np.array_equal(t.x, x)
                for t in ctx.trials
                if not t.failed and np.isfinite(t.score)
            ]
            reserve = costs.full_data_seconds(self._axis.with_s(x[None, :], 1.0), own)
        first = len(ctx.trials)
        predicted = []
        if trials:
            U = ctx.space.to_unit([t.params for t in trials])
            fractions = np.array([t.fraction for t in trials])
            # the cautious cost the search checked against the time left
            summed = costs.cautious(
                self._axis.with_s(U, self._axis.to_s(fractions)), fractions
            )
            predicted = [
                wall_seconds(c, ctx.n_splits, ctx.n_jobs_effective) for c in summed
            ]
        self.trace_.append(
            {
                "elapsed": round(ctx.elapsed(), 1),
                "time_left": round(ctx.time_left(), 1),
                "incumbent": dict(inc_params),
                "reserve_seconds": round(reserve, 1),
                "proposed_rows": list(range(first, first + len(trials))),
                "predicted_wall": [round(float(c), 1) for c in predicted],
            }
        )
        return trials


def trace_report(trace: list[dict], results: dict, last: int) -> list[dict]:
    """The last ``last`` proposals, each trial's wall seconds filled in.

    A trial's wall seconds run from the end of the proposal that made it
    (``elapsed``) to the end of its row: the time it held the search, whether
    or not it shared the workers with other trials of the same proposal.
    """
    elapsed = np.asarray(results["elapsed_time"], dtype=float)
    out = []
    for entry in trace[-last:] if last else []:
        rows = [int(r) for r in entry["proposed_rows"] if r < len(elapsed)]
        took = [round(float(elapsed[r]) - entry["elapsed"], 1) for r in rows]
        fractions = [round(float(results["resource_fraction"][r]), 4) for r in rows]
        out.append(
            {
                **{k: v for k, v in entry.items() if k != "proposed_rows"},
                "fractions": fractions,
                "took_wall": took,
            }
        )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.studies.fabolas_budget",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--task", required=True, help="e.g. svc-connect_4")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=300.0, help="max_time, s")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--max-rows", type=int, default=None)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--trace", type=int, default=0, help="report the last N proposals"
    )
    args = parser.parse_args(argv)

    task = load_task(args.task, args.data_dir, max_rows=args.max_rows)
    search = (_TracedFabolas if args.trace else FabolasSearchCV)(
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
    for entry in trace_report(
        getattr(search, "trace_", []), search.cv_results_, args.trace
    ):
        print(json.dumps(entry))


if __name__ == "__main__":
    main()
