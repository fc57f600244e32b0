"""The outputs of :mod:`benchmarks.studies.tradeoff_sweep`: ``results.csv``
(one row per search) and ``summary.md`` (one table per task and seed)."""

from __future__ import annotations

import csv
import json
import os
import platform
import subprocess
from datetime import datetime
from pathlib import Path

import numpy as np
import sklearn

from .tradeoff_sweep import (
    BASELINE,
    CV,
    N_ITER,
    N_REFITS,
    TARGET_ACC_RATIO,
    TARGET_TIME_RATIO,
    TRADEOFF,
    Record,
    TaskSpec,
)


def _baseline(records: list[Record], task: str, seed: int) -> Record:
    return next(
        r for r in records if r.task == task and r.seed == seed and r.method == BASELINE
    )


def _ratios(record: Record, base: Record) -> tuple[float, float, bool]:
    acc_ratio = record.test_acc / base.test_acc
    time_ratio = record.train_time / base.train_time
    meets = acc_ratio >= TARGET_ACC_RATIO and time_ratio <= TARGET_TIME_RATIO
    return acc_ratio, time_ratio, meets


def write_csv(records: list[Record], path: Path) -> None:
    """One row per search, with the ratios against the task's baseline."""
    columns = [
        "task",
        "seed",
        "method",
        "alpha",
        "n_search_rows",
        "fraction",
        "train_rows",
        "val_score",
        "test_acc",
        "acc_ratio",
        "train_time_s",
        "time_ratio",
        "meets_target",
        "fit_times_s",
        "refit_in_search_s",
        "search_s",
        "load_1min_after_search",
        "params",
    ]
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for r in records:
            base = _baseline(records, r.task, r.seed)
            acc_ratio, time_ratio, meets = _ratios(r, base)
            writer.writerow(
                [
                    r.task,
                    r.seed,
                    r.method,
                    "" if r.alpha is None else r.alpha,
                    r.n_search_rows,
                    r.fraction,
                    r.train_rows,
                    f"{r.val_score:.6f}",
                    f"{r.test_acc:.6f}",
                    f"{acc_ratio:.6f}",
                    f"{r.train_time:.6f}",
                    f"{time_ratio:.6f}",
                    "" if r.method == BASELINE else ("yes" if meets else "no"),
                    " ".join(f"{t:.6f}" for t in r.fit_times),
                    f"{r.refit_in_search_s:.6f}",
                    f"{r.search_s:.3f}",
                    f"{r.load_after:.2f}",
                    json.dumps(r.params, sort_keys=True),
                ]
            )


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:.3g}"


def task_table(records: list[Record], task: str, seed: int) -> list[str]:
    """Markdown table of one task and seed, and a plain verdict line."""
    base = _baseline(records, task, seed)
    rows = [
        r for r in records if r.task == task and r.seed == seed and r.method != BASELINE
    ]
    lines = [
        "| method | alpha | fraction | test acc | acc ratio | train time (s) "
        "| time ratio | meets target | search (s) |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {BASELINE} | - | 1 | {base.test_acc:.4f} | 1.000 "
        f"| {_fmt_seconds(base.train_time)} | 1.000 | - | {base.search_s:.0f} |",
    ]
    met = []
    for r in rows:
        acc_ratio, time_ratio, meets = _ratios(r, base)
        if meets:
            met.append(r.alpha)
        lines.append(
            f"| {TRADEOFF} | {r.alpha:g} | {r.fraction:g} | {r.test_acc:.4f} "
            f"| {acc_ratio:.3f} | {_fmt_seconds(r.train_time)} | {time_ratio:.3f} "
            f"| {'yes' if meets else 'no'} | {r.search_s:.0f} |"
        )
    lines.append("")
    if met:
        lines.append(
            "Target met at alpha = "
            + ", ".join(f"{a:g}" for a in met)
            + f" (of {len(rows)} alphas)."
        )
    else:
        lines.append(
            f"**Target NOT met** at any of the {len(rows)} alphas for this task "
            "and seed."
        )
    return lines


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def write_summary(
    records: list[Record],
    specs: dict[str, TaskSpec],
    seeds: list[int],
    path: Path,
    *,
    command: str,
    started: datetime,
    elapsed_s: float,
    load_start: tuple[float, float, float],
    load_end: tuple[float, float, float],
) -> None:
    """summary.md: setup, one table per task and seed, verdicts."""
    loads = [r.load_after for r in records]
    lines = [
        "# TradeoffBayesSearchCV alpha sweep vs BayesSearchCV (issue 5)",
        "",
        f"Command: `{command}`",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC, total {elapsed_s / 60:.1f} min",
        f"- cores: {os.cpu_count()}; Python {platform.python_version()}, "
        f"scikit-learn {sklearn.__version__}, numpy {np.__version__}; "
        f"commit {_git_commit()}",
        "- load average (1, 5, 15 min) at the start: "
        + ", ".join(f"{v:.2f}" for v in load_start)
        + "; at the end: "
        + ", ".join(f"{v:.2f}" for v in load_end)
        + f"; 1-min load after each search: {min(loads):.2f}-{max(loads):.2f}",
        "- absolute seconds move with the machine's load (above); the ratios "
        "compare models re-timed in one interleaved pass (see below), which is "
        "what the target is about",
        f"- seeds: {', '.join(map(str, seeds))}; n_iter={N_ITER}, cv={CV}, "
        "n_jobs=1, random_state=seed; everything single-threaded "
        "(threadpool_limits(1))",
        "",
        "Protocol (details in the module docstring of "
        "`benchmarks/studies/tradeoff_sweep.py`): stratified row sample, stratified "
        "75/25 search/test split (seeded). Test accuracy is that of the "
        "search's `best_estimator_` on the 25 % test part. Train time is the "
        f"median of {N_REFITS} fits of the selected configuration on a "
        "stratified subset of the selected fraction of the search rows, all "
        "fits of all searches run after the searches in one interleaved pass. "
        "Ratios are against BayesSearchCV of the same task and seed. Target: "
        f"acc ratio >= {TARGET_ACC_RATIO:.2f} and time ratio <= "
        f"{TARGET_TIME_RATIO:.2f}. Search (s) is the wall time of `fit`.",
        "",
    ]
    for name, spec in specs.items():
        task_rows = [r for r in records if r.task == name]
        if not task_rows:
            continue
        n_search = task_rows[0].n_search_rows
        lines.append(f"## {name}: {spec.title}")
        lines.append("")
        n_test = spec.n_rows - n_search
        acc = _baseline(records, name, seeds[0]).test_acc
        se = float(np.sqrt(acc * (1.0 - acc) / n_test))
        lines.append(
            f"{spec.n_rows:,} rows sampled ({n_search:,} search, {n_test:,} test). "
            f"Binomial standard error of a test accuracy near {acc:.3f} on "
            f"{n_test:,} rows: {se:.4f} ({se / acc:.3f} in accuracy ratio), so "
            "accuracy differences of about that size are noise. "
            f"Plot: `tradeoff-{name}.png`."
        )
        lines.append("")
        for seed in seeds:
            if len(seeds) > 1:
                lines += [f"### seed {seed}", ""]
            lines += task_table(records, name, seed)
            lines.append("")
        if len(seeds) > 1:
            n_met = sum(
                any(
                    _ratios(r, _baseline(records, name, s))[2]
                    for r in records
                    if r.task == name and r.seed == s and r.method != BASELINE
                )
                for s in seeds
            )
            lines += [f"Target met at some alpha in {n_met} of {len(seeds)} seeds.", ""]
    lines += [
        "Selected configurations, per-fit times and loads: `results.csv`.",
        "",
    ]
    path.write_text("\n".join(lines))
