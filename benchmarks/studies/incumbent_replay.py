"""The halving search's incumbent rule, replayed on recorded race runs.

Usage (from the repository root)::

    python -m benchmarks.studies.incumbent_replay \\
        --folder benchmarks/results/2026-11-27-lead-steady --budget 60 \\
        --target svc-magic=87.72 --target svc-letter=97.10 \\
        --cache /tmp/replay-refits --refit

Every ``halving-bayes`` run (``--method``) of a race folder (:mod:`benchmarks.race`)
records its trials in finishing order: elapsed seconds, parameters, rows,
CV score and role. Read in that order by a
:class:`~skbayes_search._rungs.RungLedger`, they give the incumbent after
each trial under the ledger's rule. Three rules are replayed on the same
trials: ``raw``, the rule before the present one (scores compared as
measured, only hedges left out of the highest rung climbed); ``gain``, scores
compared after the median gain of each step up to their rungs (hedge and
lead trials left out of the highest rung climbed); and ``both``, the
library's: the incumbent changes only for a rival better on both scales.
Replaying ``raw`` reproduces the recorded trajectories of runs made with it,
which checks the replay.

The replay changes only which trial is the incumbent, not what the search
ran: in a real run the incumbent also decides which configuration gets the
all-data evaluation and how much time is kept for it. So this measures the
rule on the trials as they came, and a real run is still the test.

Per run and rule: the time to target (the first incumbent whose test
accuracy, refit on all search rows, reaches ``--target``), the final
incumbent's test accuracy, the incumbent's test accuracy averaged over the
time from the first incumbent to the end of the budget (only when every
incumbent is refit), the number of incumbent changes, and how many of
them were replaced by one that tests more than 1 pp lower (a *drop*); the
``recorded`` rows are the run's own trajectory. Test accuracies come
from the folder's refit cache; incumbents it lacks are refit with
``--refit`` into ``--cache`` (never into the folder, whose best refit
defines the race's targets), else reported as missing and left out.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from skbayes_search._rungs import RungLedger, Rungs
from skbayes_search._trial import TrialRecord

from ..refit import incumbent_key
from ._race_folder import add_refit_options, race_runs, study_scores


class RawLedger(RungLedger):
    """The rule before: scores as measured, only hedges set aside, a tie to
    the higher rung whichever was the incumbent."""

    started_high = ("hedge",)

    def _ranked_incumbents(self) -> list[tuple[bytes, int, float]]:
        return self._candidates()


class GainLedger(RungLedger):
    """Scores less the gains of the steps up to their rungs, and nothing
    else: the best on that scale is the incumbent, whatever it was before."""

    def _ranked_incumbents(self) -> list[tuple[bytes, int, float]]:
        ranked = self._candidates()
        if ranked and ranked[0][1] == self.rungs.top:
            return ranked
        offsets = self.rung_offsets()
        ranked.sort(key=lambda r: -(r[2] - offsets[r[1]]))  # stable
        return ranked


RULES: dict[str, type[RungLedger]] = {
    "raw": RawLedger,
    "gain": GainLedger,
    "both": RungLedger,
}
#: The halving search's default ``factor``, which the race runs with.
FACTOR = 3
#: A change of incumbent that loses more test accuracy than this (pp) is a drop.
DROP = 1.0


def replay(run: dict[str, Any], ledger_class: type[RungLedger]) -> list[tuple]:
    """``(elapsed, params, score)`` at each change of incumbent of a recorded run.

    The ladder is rebuilt from the smallest rows a trial ran on and the
    training rows (the default ``factor``, 3); a configuration's
    key is its parameter values (numbers as they are, anything else by its
    position among the values seen).
    """
    trials = sorted(run["trials"], key=lambda t: t["elapsed"])
    if not trials:
        return []
    rows = sorted({int(t["resource"]) for t in trials})
    n_train = round(trials[0]["resource"] / trials[0]["fraction"])
    rungs = Rungs.geometric(n_train, rows[0], FACTOR)
    if not set(rows) <= set(rungs.rows):
        rungs = Rungs(tuple(sorted({*rows, n_train})), n_train)
    ledger = ledger_class(rungs, factor=FACTOR)
    names = sorted(trials[0]["params"])
    codes: dict[str, float] = {}

    def coordinate(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return codes.setdefault(json.dumps(value), float(len(codes)))
        return float(value)

    records = []
    for t in trials:
        score = t["score"]
        failed = score is None or not math.isfinite(score)
        records.append(
            TrialRecord(
                params=dict(t["params"]),
                x=np.array([coordinate(t["params"][n]) for n in names]),
                fraction=float(t["fraction"]),
                n_resources=int(t["resource"]),
                score=math.nan if failed else float(score),
                cost=float(t.get("seconds") or 1.0),
                fit_time=float(t.get("seconds") or 1.0),
                failed=failed,
                iter=0,
                elapsed_time=float(t["elapsed"]),
                extras={"role": t.get("role") or "new"},
            )
        )
        ledger.absorb(records)
    return list(ledger.incumbent_trajectory)


def judge(
    trajectory: Sequence[tuple],
    scores: dict[str, dict],
    target: float,
    budget: float,
) -> dict[str, Any]:
    """Time to target, final test %, time-weighted mean test %, changes,
    drops and missing refits."""
    tested = []
    for elapsed, params, _ in trajectory:
        refit = scores.get(incumbent_key(params, 1.0))
        tested.append((elapsed, None if refit is None else 100 * refit["test_score"]))
    known = [(e, s) for e, s in tested if s is not None]
    drops = sum(b[1] < a[1] - DROP for a, b in itertools.pairwise(known))
    mean = None
    if tested and len(known) == len(tested):
        # from the first incumbent to the end of the budget
        ends = [e for e, _ in tested[1:]] + [max(budget, tested[-1][0])]
        spans = np.diff([tested[0][0], *ends])
        if spans.sum() > 0:
            mean = float(np.dot(spans, [s for _, s in tested]) / spans.sum())
    return {
        "ttt": next((e for e, s in known if s >= target), None),
        "mean": mean,
        "final": tested[-1][1] if tested else None,
        "changes": len(tested),
        "drops": drops,
        "missing": [p for (_, p, _), (_, s) in zip(trajectory, tested) if s is None],
    }


def _fmt(x: float | None, digits: int = 1) -> str:
    return "never" if x is None else f"{x:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--folder", required=True, help="a race folder")
    p.add_argument("--budget", required=True, help="its budget, seconds")
    p.add_argument(
        "--target",
        action="append",
        required=True,
        metavar="TASK=PCT",
        help="a task and its target test accuracy in %% (repeatable)",
    )
    p.add_argument(
        "--method", default="halving-bayes", help="the runs' method name in the race"
    )
    add_refit_options(p)
    args = p.parse_args(argv)
    base = Path(args.folder) / f"budget-{args.budget}"
    columns = "task seed rule TTT_s final_% mean_% changes drops missing".split()
    print("| " + " | ".join(c.replace("_", " ") for c in columns) + " |")
    print("|" + "---|" * len(columns))
    for spec in args.target:
        task, target = spec.split("=")
        runs = race_runs(base, task, args.method)
        trajectories = {
            (run["seed"], rule): replay(run, cls)
            for run in runs
            for rule, cls in RULES.items()
        }
        for run in runs:
            trajectories[run["seed"], "recorded"] = [
                (i["elapsed"], i["params"], i["cv_score"]) for i in run["incumbents"]
            ]
        scores = study_scores(
            base,
            task,
            args,
            lambda known, t=trajectories: [
                (params, 1.0)
                for trajectory in t.values()
                for _, params, _ in trajectory
                if incumbent_key(params, 1.0) not in known
            ],
        )
        for (seed, rule), trajectory in sorted(trajectories.items()):
            row = judge(trajectory, scores, float(target), float(args.budget))
            print(
                f"| {task} | {seed} | {rule} | {_fmt(row['ttt'])} | "
                f"{_fmt(row['final'], 2)} | {_fmt(row['mean'], 2)} | "
                f"{row['changes']} | {row['drops']} | {len(row['missing'])} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
