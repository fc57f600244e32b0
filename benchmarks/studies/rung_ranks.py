"""Do a halving search's rungs rank settings as all the data does?

Usage (from the repository root)::

    python -m benchmarks.studies.rung_ranks \\
        --folder benchmarks/results/2026-12-06-hgb-60-floor --budget 60 \\
        --task hgb-connect_4 --method halving-bayes-min1000 \\
        --cache /tmp/rung-ranks --refit

Every setting a run of ``--method`` measured on a rung of at least
``--min-rows`` rows is refit on all search rows and scored on the test split
(into ``--cache``, never into the folder, whose best refit defines the race's
targets). Per run and rung: the trials there, Kendall's tau-b between their
CV scores on the rung and their settings' test accuracy, the test accuracy of
the rung's best trial and the best test accuracy among its settings. A tau
near 1 means the rung orders settings as all the data does; a rung's best
trial testing well below its best setting means the rung chose wrongly.
The runs' records must be those written by the race on the machine that
ran it: an archive keeps no trials, so records restored from one cannot be
studied.
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from scipy.stats import kendalltau

from ..refit import incumbent_key
from ._race_folder import add_refit_options, race_runs, study_scores


def _studied(run: dict[str, Any], min_rows: int) -> list[dict[str, Any]]:
    """The run's successful trials on rungs of at least ``min_rows`` rows."""
    return [
        t
        for t in run["trials"]
        if int(t["resource"]) >= min_rows
        and t["score"] is not None
        and math.isfinite(t["score"])
    ]


def rung_table(
    run: dict[str, Any], scores: dict[str, dict], min_rows: int
) -> list[dict[str, Any]]:
    """One row per rung of at least ``min_rows`` rows of ``run``: ``rows``,
    ``n`` (successful trials with a test score), ``tau``, ``best_test`` (the
    rung's best trial's setting) and ``max_test`` (the best of its
    settings); rungs without a test score for every trial are left out."""
    by_rung: dict[int, list[tuple[float, float]]] = defaultdict(list)
    missing: set[int] = set()
    for t in _studied(run, min_rows):
        rows = int(t["resource"])
        refit = scores.get(incumbent_key(t["params"], 1.0))
        if refit is None:
            missing.add(rows)
            continue
        by_rung[rows].append((float(t["score"]), float(refit["test_score"])))
    table = []
    for rows in sorted(set(by_rung) - missing):
        pairs = by_rung[rows]
        cv = [p[0] for p in pairs]
        test = [p[1] for p in pairs]
        tau = kendalltau(cv, test)[0] if len(pairs) >= 3 else math.nan
        best = max(range(len(pairs)), key=lambda i: cv[i])
        table.append(
            {
                "rows": rows,
                "n": len(pairs),
                "tau": float(tau),
                "best_test": test[best],
                "max_test": max(test),
            }
        )
    return table


def wanted(runs: list[dict[str, Any]], scores: dict, min_rows: int) -> list:
    """``(params, 1.0)`` of every setting measured successfully on a rung of
    at least ``min_rows`` rows that ``scores`` lacks, each once."""
    out, seen = [], set()
    for run in runs:
        for t in _studied(run, min_rows):
            key = incumbent_key(t["params"], 1.0)
            if key not in scores and key not in seen:
                seen.add(key)
                out.append((t["params"], 1.0))
    return out


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if not math.isfinite(x) else f"{x:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--folder", required=True, help="a race folder")
    p.add_argument("--budget", required=True, help="its budget, seconds")
    p.add_argument("--task", required=True)
    p.add_argument("--method", default="halving-bayes")
    p.add_argument("--min-rows", type=int, default=1, help="smallest rung studied")
    add_refit_options(p)
    args = p.parse_args(argv)
    base = Path(args.folder) / f"budget-{args.budget}"
    runs = race_runs(base, args.task, args.method)
    if not runs:
        raise SystemExit(f"no {args.method} runs of {args.task} in {base}")
    if any("trials" not in run for run in runs):
        raise SystemExit(
            f"the records in {base} hold no trials (restored from an archive?); "
            "the study needs the race's own records"
        )
    scores = study_scores(
        base, args.task, args, lambda known: wanted(runs, known, args.min_rows)
    )
    print(
        "| seed | rung rows | trials | tau | test % of its best | best test % there |"
    )
    print("|---|---|---|---|---|---|")
    for run in sorted(runs, key=lambda r: r["seed"]):
        for row in rung_table(run, scores, args.min_rows):
            print(
                f"| {run['seed']} | {row['rows']} | {row['n']} | {_fmt(row['tau'])} | "
                f"{_fmt(100 * row['best_test'])} | {_fmt(100 * row['max_test'])} |"
            )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
