"""Throughput: trials per second with ``n_jobs=2`` against ``n_jobs=1``.

Usage (from the repository root)::

    python -m benchmarks.studies.throughput --out benchmarks/results/<date>-throughput
    python -m benchmarks.studies.throughput --budget 20 --seeds 1 --out /tmp/tp

The target: on a task whose fits are cheap, a search with ``n_jobs=2`` runs at
least 1.8 times the trials per second of the same search with ``n_jobs=1``, at
an equal best score per trial. Cheap fits are where the search's own work
(refitting its model, proposing the next configuration) can leave workers
idle, so this is where the asynchronous loop has to prove itself.

Protocol: one task of the harness (default ``svc-magic``, StandardScaler + SVC
on a stratified 4,000-row sample of ``magic``: 3,000 search rows, 5-fold CV),
``BayesSearchCV`` (``bayes``) and ``HalvingBayesSearchCV`` (``halving-bayes``,
when it exists), each with ``max_time`` = ``--budget`` (default 60 s) and
``n_jobs`` 1 and 2, seeds 0 .. ``--seeds`` - 1. Every run is a fresh process
(:mod:`benchmarks.execute`, as in the harness), one after the other, the two
``n_jobs`` of a seed back to back so that they see the same machine.

Per (method, seed): trials per second of each run (finished trials / the
search's wall time), their ratio, and the best CV score among the first N
trials in finishing order, N being the smaller of the two runs' trial counts
(the incumbent rule of :func:`benchmarks.metrics.incumbent_indices`: among the
trials on the largest data fraction seen so far), the CPU time of the search's
own process per trial and the share of the machine's CPU time busy during each
run (with two workers on two cores the search's process is a third one
competing for them), and the machine's 1-minute load when each run started and
ended. The target counts as met for a method
when the median ratio is at least 1.8 and the median difference of the best
scores (``n_jobs=2`` minus ``n_jobs=1``) is not below -0.5 pp.

Outputs in ``--out``: ``throughput.md`` and ``throughput.csv`` (the summaries)
and the raw records in ``runs/`` (regenerated, not committed).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .. import RESULTS_DIR
from ..methods import availability
from ..metrics import incumbent_indices, median_spread
from ..run import has_record, run_subprocess

TARGET_RATIO = 1.8
#: How much lower the best score after N trials may be with n_jobs=2.
SCORE_TOLERANCE = 0.005
METHODS = ("bayes", "halving-bayes")


def best_after(trials: list[dict], n: int) -> float:
    """Incumbent CV score after the first ``n`` finished trials (NaN if none)."""
    first = trials[:n]
    if not first:
        return float("nan")
    idx = incumbent_indices(
        [t["score"] for t in first], [t["fraction"] for t in first]
    )[-1]
    return float(first[idx]["score"]) if idx >= 0 else float("nan")


def _search_ms(record: dict) -> float:
    """CPU milliseconds of the search's own process per finished trial (NaN
    for records without it)."""
    cpu = record.get("search_cpu")
    if cpu is None or not record["n_trials"]:
        return float("nan")
    return 1000.0 * float(cpu) / record["n_trials"]


def _share(value: Any) -> float:
    return float("nan") if value is None else float(value)


def pair_row(one: dict, two: dict) -> dict[str, Any]:
    """One method and seed: the ``n_jobs=1`` record against the ``n_jobs=2`` one."""
    tps = [r["n_trials"] / r["wall"] for r in (one, two)]
    n = min(one["n_trials"], two["n_trials"])
    best = [best_after(r["trials"], n) for r in (one, two)]
    return {
        "trials_1": one["n_trials"],
        "trials_2": two["n_trials"],
        "wall_1": one["wall"],
        "wall_2": two["wall"],
        "tps_1": tps[0],
        "tps_2": tps[1],
        "ratio": tps[1] / tps[0] if tps[0] > 0 else float("nan"),
        "n_compared": n,
        "best_1": best[0],
        "best_2": best[1],
        "best_diff": best[1] - best[0],
        "search_ms_1": _search_ms(one),
        "search_ms_2": _search_ms(two),
        "machine_busy_1": _share(one.get("machine_busy")),
        "machine_busy_2": _share(two.get("machine_busy")),
        "load_1": f"{one['load_before']:.1f}-{one['load_after']:.1f}",
        "load_2": f"{two['load_before']:.1f}-{two['load_after']:.1f}",
    }


def _percent(share: float) -> str:
    return "-" if math.isnan(share) else f"{100 * share:.0f} %"


def verdict(rows: Sequence[dict]) -> tuple[bool, float, float]:
    """Whether the target is met over seeds: (met, median ratio, median
    best-score difference)."""
    ratio = median_spread([r["ratio"] for r in rows])[0]
    diff = median_spread([r["best_diff"] for r in rows])[0]
    met = bool(ratio >= TARGET_RATIO and diff >= -SCORE_TOLERANCE - 1e-12)
    return met, ratio, diff


def _record_path(out: Path, method: str, n_jobs: int, seed: int) -> Path:
    return out / "runs" / f"{method}-jobs{n_jobs}-seed{seed}.json"


def _run(
    args: argparse.Namespace, out: Path, method: str, n_jobs: int, seed: int
) -> None:
    path = _record_path(out, method, n_jobs, seed)
    if args.resume and has_record(path):
        return
    name = path.name.removesuffix(".json")
    spec = {
        "task": args.task,
        "data_dir": args.data_dir,
        "max_rows": args.max_rows,
        "split_seed": 0,
        "method": method,
        "seed": seed,
        "budget": args.budget,
        "n_jobs": n_jobs,
        "sizing": {},
        "work_dir": str(out / "work" / name),
    }
    record = run_subprocess(
        spec,
        out / "runs" / f"{name}.spec.json",
        path,
        out / "logs" / f"{name}.log",
        timeout=3 * args.budget + 60,
    )
    path.write_text(json.dumps(record))
    extra = record.get("error", f"{record.get('n_trials')} trials")
    print(f"{name}: {record['status']}, {extra}", flush=True)


def write_report(
    out: Path, methods: list[str], seeds: int, unavailable: dict[str, str]
) -> Path:
    """``throughput.md`` and ``throughput.csv`` from the records in ``out``."""
    meta = json.loads((out / "meta.json").read_text())
    rows = []
    for method in methods:
        for seed in range(seeds):
            recs = [_record_path(out, method, j, seed) for j in (1, 2)]
            if not all(p.is_file() for p in recs):
                continue
            one, two = (json.loads(p.read_text()) for p in recs)
            if one["status"] == two["status"] == "ok":
                rows.append({"method": method, "seed": seed, **pair_row(one, two)})
    frame = pd.DataFrame(rows)
    frame.to_csv(out / "throughput.csv", index=False)
    lines = [
        "# Throughput: n_jobs=2 against n_jobs=1",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; machine: {meta['cores']} cores, {meta['machine']}",
        *[f"- {m} not available: {reason}" for m, reason in unavailable.items()],
        "",
        "tps: finished trials per second of the search's wall time. N: the smaller "
        "trial count of the pair; best@N: incumbent CV score after the first N "
        "trials. Search ms: CPU milliseconds of the search's own process per "
        "finished trial. Machine: share of the machine's CPU time busy during the "
        "search (both cores, anything running). Load: 1-minute load average at "
        "start-end of each run (the run adds about n_jobs).",
        "",
    ]
    for method in methods:
        mine = [r for r in rows if r["method"] == method]
        if not mine:
            lines += [f"## {method}", "", "No complete pair of runs.", ""]
            continue
        met, ratio, diff = verdict(mine)
        lines += [
            f"## {method}",
            "",
            f"Median ratio {ratio:.2f}x, median best@N difference "
            f"{100 * diff:+.2f} pp: target (>= {TARGET_RATIO}x, not below "
            f"-{100 * SCORE_TOLERANCE:.1f} pp) **{'MET' if met else 'MISSED'}**.",
            "",
            "| seed | trials 1 / 2 | tps 1 | tps 2 | ratio | N | best@N 1 | "
            "best@N 2 | search ms 1 / 2 | machine 1 / 2 | load 1 | load 2 |",
            "|---" * 12 + "|",
        ]
        for r in mine:
            lines.append(
                f"| {r['seed']} | {r['trials_1']} / {r['trials_2']} | "
                f"{r['tps_1']:.2f} | {r['tps_2']:.2f} | {r['ratio']:.2f} | "
                f"{r['n_compared']} | {100 * r['best_1']:.2f} | "
                f"{100 * r['best_2']:.2f} | {r['search_ms_1']:.0f} / "
                f"{r['search_ms_2']:.0f} | {_percent(r['machine_busy_1'])} / "
                f"{_percent(r['machine_busy_2'])} | {r['load_1']} | {r['load_2']} |"
            )
        lines.append("")
    path = out / "throughput.md"
    path.write_text("\n".join(lines))
    return path


def main(argv: list[str] | None = None) -> int:
    """Run the study (see the module docstring) and write its report."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.studies.throughput",
        description=__doc__.split("\n")[0],
    )
    p.add_argument("--task", default="svc-magic")
    p.add_argument("--max-rows", type=int, default=4000)
    p.add_argument("--budget", type=float, default=60.0, help="max_time, seconds")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--data-dir", default=None, help="default ../shared/datasets")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--resume", action="store_true", help="keep existing records")
    p.add_argument(
        "--report-only", action="store_true", help="rewrite the report, run nothing"
    )
    args = p.parse_args(argv)
    stamp = dt.datetime.now().strftime("%Y-%m-%d")
    out = (args.out or RESULTS_DIR / f"{stamp}-throughput").resolve()
    for sub in ("runs", "logs"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks.studies.throughput " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    methods, unavailable = [], {}
    for method in args.methods.split(","):
        reason = availability(method)
        if reason is None:
            methods.append(method)
        else:
            unavailable[method] = reason
            print(f"{method}: not available: {reason}", flush=True)
    if not args.report_only:
        meta = {
            "command": command,
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "cores": os.cpu_count(),
            "machine": platform.platform(),
        }
        (out / "meta.json").write_text(json.dumps(meta, indent=1))
        for seed in range(args.seeds):
            for method in methods:
                for n_jobs in (1, 2):
                    _run(args, out, method, n_jobs, seed)
    path = write_report(out, methods, args.seeds, unavailable)
    print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
