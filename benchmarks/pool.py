"""The race's figures and targets for one task and budget over runs from
several race folders.

A row of the race may hold more seeds for some methods than for others: where
a method's times to target fall in two modes, three seeds say little, and its
later seeds are run into a folder of their own. This pools, for one task and
budget, each folder's runs of the methods named with it, merges the folders'
refit caches, and applies the race's rules (:mod:`benchmarks.race_targets`) to
the pool: the target is 0.5 pp below the best test score any pooled incumbent
reached (or ``--best-at-least``, the best of runs outside the pool), and (a),
(b) and (c) compare medians over each method's own seeds.

Usage (from the repository root)::

    python -m benchmarks.pool --task svc-letter --budget 300 \\
        benchmarks/results/2026-11-26-race:bayes,halving \\
        benchmarks/results/2026-12-06-letter-300-seeds:halving-bayes,halving,bayes \\
        --refit-into benchmarks/results/2026-12-06-letter-300-seeds

Each source is ``FOLDER:METHOD,METHOD,...``; its records are read from
``FOLDER/budget-<budget>`` and from its ``records.json.gz`` (see
:mod:`benchmarks.archive`; a record on disk wins). A method and seed in two
sources is an error. ``--refit-into`` refits the pooled incumbents no cache
holds, into that folder's refit cache (``--refit-jobs`` at a time); without
it they count as pending and the targets they decide are incomplete.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from . import report
from .archive import ARCHIVE, collect
from .metrics import median_spread, target_threshold
from .race_targets import (
    SOONER_THAN_BAYES,
    final_accuracy_check,
    run_row,
    sooner_check,
    summarise,
)
from .refit import incumbent_key, refit_incumbents


def parse_source(text: str) -> tuple[Path, list[str]]:
    """``FOLDER:METHOD,...`` as ``(folder, methods)``."""
    folder, sep, methods = text.rpartition(":")
    names = [m for m in methods.split(",") if m]
    if not sep or not folder or not names:
        raise ValueError(
            f"source {text!r}: expected FOLDER:METHOD[,METHOD...], "
            "for example benchmarks/results/2026-11-26-race:halving,bayes"
        )
    return Path(folder), names


def _budget_files(folder: Path, budget: float) -> dict[str, Any]:
    """One budget's archived files of ``folder``, those on disk winning (a
    refit cache on disk adds to the archive's, as ``archive restore`` does)."""
    name = f"budget-{budget:g}"
    files: dict[str, Any] = {}
    archive = folder / ARCHIVE
    if archive.is_file():
        with gzip.open(archive, "rb") as fh:
            files.update(json.loads(fh.read()).get(name, {}))
    if (folder / name).is_dir():
        for rel, data in collect(folder).get(name, {}).items():
            if rel.startswith("refits/"):
                data = {**files.get(rel, {}), **data}
            files[rel] = data
    if not files:
        raise ValueError(f"{folder}: no records for budget {budget:g} s")
    return files


def load_pool(
    sources: list[tuple[Path, list[str]]], task: str, budget: float
) -> tuple[list[dict], dict, dict, dict[tuple[str, int], Path]]:
    """The pooled run records, merged refit cache, the task's ``task.json``
    and where each ``(method, seed)`` came from."""
    records: list[dict] = []
    refits: dict = {}
    info: dict | None = None
    origin: dict[tuple[str, int], Path] = {}
    for folder, methods in sources:
        files = _budget_files(folder, budget)
        for key, value in files.get(f"refits/{task}.json", {}).items():
            refits.setdefault(key, value)
        info = info or files.get(f"runs/{task}/task.json")
        found = set()
        for rel, rec in sorted(files.items()):
            if not rel.startswith(f"runs/{task}/") or "-seed" not in rel:
                continue
            if rec.get("method") not in methods or rec.get("status") == "not available":
                continue
            key = (rec["method"], int(rec["seed"]))
            if key in origin:
                raise ValueError(
                    f"{key[0]} seed {key[1]} is in {origin[key]} and in {folder}: "
                    "name the method with one source only"
                )
            origin[key] = folder
            found.add(rec["method"])
            records.append(rec)
        for m in methods:
            if m not in found:
                raise ValueError(f"{folder}: no {m} runs of {task} at {budget:g} s")
    if info is None:
        raise ValueError(f"no task.json for {task} in any source")
    return records, refits, info, origin


def unscored(records: list[dict], refits: dict) -> list[tuple[dict, float]]:
    """Incumbents no cache holds, each once, run by run in time order."""
    out: dict[str, tuple[dict, float]] = {}
    for rec in records:
        for inc in rec.get("incumbents", []):
            key = incumbent_key(inc["params"], inc["refit_fraction"])
            if key not in refits:
                out.setdefault(key, (inc["params"], inc["refit_fraction"]))
    return list(out.values())


def pooled_figures(
    records: list[dict],
    refits: dict,
    info: dict,
    budget: float,
    n_jobs: int,
    best_at_least: float = -math.inf,
) -> dict[str, Any]:
    """Per method its seeds and the :func:`~benchmarks.race_targets.summarise`
    cell of its runs' rows (:func:`~benchmarks.race_targets.run_row`), with
    the pool's best score and target."""
    best, winner = report.best_test_score(records, refits)
    # a NaN best (nothing refit yet) is not raised: the target stays unknown
    if best_at_least > best:
        best, winner = best_at_least, "outside the pool"
    threshold = target_threshold(best, bool(info["classification"]))
    rows: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        rows[rec["method"]].append(run_row(rec, refits, threshold, budget, n_jobs))
    seeds = {m: sorted(x["seed"] for x in r) for m, r in sorted(rows.items())}
    cells = {m: summarise(rows[m], seeds[m]) for m in seeds}
    return {
        "best": best,
        "winner": winner,
        "threshold": threshold,
        "seeds": seeds,
        "cells": cells,
    }


def _pct(x: float) -> str:
    return f"{100 * x:.2f}" if np.isfinite(x) else "none"


def _secs(x: float) -> str:
    return f"{x:.3g}" if np.isfinite(x) else "never"


def _seed_text(seeds: list[int]) -> str:
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]} ({len(seeds)})"
    return f"{', '.join(map(str, seeds))} ({len(seeds)})"


def markdown(fig: dict[str, Any], recommended: str) -> str:
    """The pooled table and the three targets' verdicts for this row."""
    lines = [
        f"Best test score {_pct(fig['best'])} % ({fig['winner']}); "
        f"target {_pct(fig['threshold'])} %.",
        "",
        "| method | seeds | final test %, median [by seed] | time to target s, "
        "median [by seed] (reached) | load start -> end | trials |",
        "|---|---|---|---|---|---|",
    ]
    cells, methods = fig["cells"], list(fig["cells"])
    for m in sorted(methods, key=lambda m: m != recommended):
        c = cells[m]  # every list in seed order
        finals, ttts = c["final"], c["ttt"]
        reached = sum(bool(np.isfinite(t)) for t in ttts)
        note = f", {c['refits_pending']} refits pending" if c["refits_pending"] else ""
        lines.append(
            f"| {m} | {_seed_text(fig['seeds'][m])} "
            f"| {_pct(median_spread(finals)[0])} [{', '.join(map(_pct, finals))}] "
            f"| {_secs(median_spread(ttts)[0])} [{', '.join(map(_secs, ttts))}] "
            f"({reached}/{c['runs']}{note}) "
            f"| {np.nanmedian(c['load_before']):.1f} -> "
            f"{np.nanmedian(c['load_after']):.1f} "
            f"| {int(np.median(c['n_trials']))} |"
        )
    checks = {}
    if recommended in cells:
        checks["(a) final test accuracy"] = final_accuracy_check(
            cells, methods, recommended
        )
        if "halving" in cells:
            checks["(b) against halving"] = sooner_check(
                cells, methods, recommended, "halving", 1.0
            )
        if "bayes" in cells:
            checks[f"(c) {SOONER_THAN_BAYES:g}x sooner than bayes"] = sooner_check(
                cells, methods, recommended, "bayes", SOONER_THAN_BAYES
            )
    lines.append("")
    lines += [f"- {name}: {v} {text}".rstrip() for name, (v, text) in checks.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.pool",
        description=" ".join(__doc__.split("\n\n")[0].split()),
    )
    p.add_argument("sources", nargs="+", help="FOLDER:METHOD[,METHOD...]")
    p.add_argument("--task", required=True)
    p.add_argument("--budget", type=float, required=True)
    p.add_argument("--recommended", default="halving-bayes")
    p.add_argument(
        "--best-at-least",
        type=float,
        default=-math.inf,
        help="best test score of runs outside the pool (the target counts it)",
    )
    p.add_argument("--refit-into", type=Path, default=None)
    p.add_argument("--refit-jobs", type=int, default=1, help="refits at a time")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--n-jobs", type=int, default=2, help="the runs' n_jobs")
    args = p.parse_args(argv)
    sources = [parse_source(s) for s in args.sources]
    records, refits, info, _ = load_pool(sources, args.task, args.budget)
    todo = unscored(records, refits)
    if todo and args.refit_into is not None:
        from .tasks import load_task

        print(f"refitting {len(todo)} incumbents", flush=True)
        budget_dir = args.refit_into / f"budget-{args.budget:g}"
        cache = budget_dir / "refits" / f"{args.task}.json"
        cache.parent.mkdir(parents=True, exist_ok=True)
        task = load_task(args.task, data_dir=args.data_dir)
        refits.update(refit_incumbents(task, todo, cache, n_jobs=args.refit_jobs))
    fig = pooled_figures(
        records, refits, info, args.budget, args.n_jobs, args.best_at_least
    )
    print(markdown(fig, args.recommended), end="", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
