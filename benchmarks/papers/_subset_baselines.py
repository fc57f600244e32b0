"""What the papers of the subset strategies share: their two baselines, the run
records and the report's arithmetic.

Papers 000 (multi-stage BO) and 003 (accuracy/training-time trade-off) compare
their method with the same two baselines: Bayesian optimisation on all the
training rows, and the same optimisation on a fixed 30 % random sample of them.
Here both are :class:`~skbayes_search.BayesSearchCV`; the sample is stratified
and drawn with the run's seed, and the answer of the subset search is refit on
all search rows before it is tested (as every other answer is).

A run is one (method, task, seed). It writes one JSON record; the report is
rebuilt from the records alone, so a stopped measurement continues with
``--resume`` and the table can be rebuilt at any time.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from ..execute import _trials_ours, incumbents_for
from ..metrics import step_on_grid
from ..refit import _fit_and_test, incumbent_key, refit_incumbents
from ..tasks import DEFAULT_DATA_DIR, Task, load_task, space_ours

#: Share of the search rows the subset baseline searches on (both papers).
SUBSET_FRACTION = 0.3
#: Method names of the two baselines.
FULL = "bayes-full"
SUBSET = "bayes-subset30"
#: Fractions of the slowest run's wall time at which the anytime test accuracy
#: is read (paper 000 averages its accuracy "across different time points").
TIME_GRID = tuple(np.round(np.arange(0.1, 1.01, 0.1), 2))
#: Raw record files, ignored by git in the results folders.
RECORD_GLOB = "run-*.json"


# ----------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------
def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The options every subset-paper script takes."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--out", type=Path, required=True, help="folder of the records")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="folder of <dataset>.tsv.gz (default ../shared/datasets)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="tiny data, one seed, few trials: every code path in under a minute",
    )
    p.add_argument("--resume", action="store_true", help="skip runs with a record")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1 (default 3)")
    p.add_argument("--task", default="svc-magic", help="harness task name")
    p.add_argument(
        "--max-rows", type=int, default=10_000, help="rows sampled from the dataset"
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="rebuild the report from the records, run nothing",
    )
    return p


def run_command(module: str, argv: Sequence[str] | None) -> str:
    """The command that (re)produces the records, for the report.

    ``--report-only`` is dropped: the same command without it runs what the
    records hold.
    """
    args = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--report-only"]
    return " ".join(["python -m", module, *args])


# ----------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------
def subset_sample(
    task: Task, fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """A stratified random ``fraction`` of the search rows, drawn with ``seed``."""
    X, _, y, _ = train_test_split(
        task.X_search,
        task.y_search,
        train_size=fraction,
        stratify=task.y_search if task.classification else None,
        random_state=seed,
    )
    return X, y


def bayes_search(task: Task, seed: int, n_iter: int, cv: int) -> Any:
    """The baselines' search: ``BayesSearchCV`` with its defaults otherwise."""
    from skbayes_search import BayesSearchCV

    return BayesSearchCV(
        task.estimator(),
        space_ours(task.params),
        n_iter=n_iter,
        cv=cv,
        n_jobs=1,
        refit=False,
        random_state=seed,
    )


def record_path(out: Path, method: str, task: str, seed: int) -> Path:
    """Where the record of one run lives."""
    return out / f"run-{method}-{task}-seed{seed}.json"


def run_and_record(
    out: Path,
    *,
    paper: str,
    method: str,
    task: Task,
    seed: int,
    search: Any,
    X: np.ndarray,
    y: np.ndarray,
    settings: dict[str, Any],
    anytime: bool,
    n_timings: int = 1,
) -> dict[str, Any]:
    """Fit ``search`` on ``(X, y)``, test what it returns and write the record.

    The search runs single-threaded (one worker, one BLAS/OpenMP thread) so
    that fit times are comparable between methods on a shared machine. Its
    answer is refit offline (outside the timed part) and scored on the task's
    test rows; with ``anytime`` every incumbent along the way is, too.
    Refits are cached per task in ``out`` (an incumbent shared by several
    runs is fitted once). With ``n_timings > 1`` the answer's fit is timed
    that many times in all (``fit_seconds_all``): one fit on a shared machine
    is a noisy training time.

    Returns
    -------
    record : dict
    """
    load_start = os.getloadavg()
    with threadpool_limits(1):
        start = time.perf_counter()
        search.fit(X, y)
        wall = time.perf_counter() - start
    load_end = os.getloadavg()
    trials = _trials_ours(search)
    incumbents = incumbents_for(trials, method)
    if not anytime:
        incumbents = incumbents[-1:]
    wanted = [(inc["params"], inc["refit_fraction"]) for inc in incumbents]
    with threadpool_limits(1):
        tested = refit_incumbents(
            task, wanted, out / f"refits-{task.name}.json", n_jobs=1
        )
    for inc in incumbents:
        scores = tested[incumbent_key(inc["params"], inc["refit_fraction"])]
        inc["test_score"] = scores["test_score"]
        inc["fit_seconds"] = scores["fit_seconds"]
    if incumbents and n_timings > 1:
        final = incumbents[-1]
        with threadpool_limits(1):
            more = [
                _fit_and_test(task, final["params"], final["refit_fraction"])
                for _ in range(n_timings - 1)
            ]
        final["fit_seconds_all"] = [final["fit_seconds"]] + [
            m["fit_seconds"] for m in more
        ]
    record = {
        "paper": paper,
        "method": method,
        "task": task.name,
        "seed": seed,
        "settings": settings,
        "n_search_rows": len(task.y_search),
        "n_rows_searched": len(y),
        "n_test_rows": len(task.y_test),
        "wall_s": wall,
        "n_trials": len(trials),
        "trials": trials,
        "incumbents": incumbents,
        "final": incumbents[-1] if incumbents else None,
        "loadavg_start": list(load_start),
        "loadavg_end": list(load_end),
        "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    write_record(out, record)
    return record


def write_record(out: Path, record: dict[str, Any]) -> None:
    """Write (or rewrite) the record of one run."""
    path = record_path(out, record["method"], record["task"], record["seed"])
    path.write_text(json.dumps(record, indent=1))


def run_all(
    out: Path,
    runs: Sequence[tuple[str, int]],
    run_one: Callable[[str, int], dict[str, Any]],
    *,
    task_name: str,
    resume: bool,
) -> None:
    """Run every ``(method, seed)`` not yet recorded (with ``resume``), in order."""
    out.mkdir(parents=True, exist_ok=True)
    for method, seed in runs:
        if resume and record_path(out, method, task_name, seed).is_file():
            print(f"skip {method} seed={seed} (recorded)", flush=True)
            continue
        rec = run_one(method, seed)
        final = rec["final"] or {}
        print(
            f"{method} seed={seed}: {rec['n_trials']} trials in {rec['wall_s']:.1f} s, "
            f"test {final.get('test_score', math.nan):.4f}, "
            f"load {rec['loadavg_end'][0]:.2f}",
            flush=True,
        )


def run_then_report(
    args: argparse.Namespace,
    argv: list[str] | None,
    module: str,
    method_names: Sequence[str],
    run_one: Callable[[str, int, Task], dict[str, Any]],
    build_report: Callable[[list[dict[str, Any]], str], str],
) -> int:
    """The body of each subset paper's ``main``: run every ``(method, seed)``
    still missing (unless ``--report-only``), then rebuild the report from
    all the records in ``args.out``."""
    command = run_command(module, argv)
    args.out.mkdir(parents=True, exist_ok=True)
    write_gitignore(args.out)
    if not args.report_only:
        task = load_task(args.task, args.data_dir, max_rows=args.max_rows)
        run_all(
            args.out,
            [(m, s) for s in range(args.seeds) for m in method_names],
            lambda m, s: run_one(m, s, task),
            task_name=task.name,
            resume=args.resume,
        )
    write_report(args.out, build_report(load_records(args.out), command))
    return 0


def load_records(out: Path) -> list[dict[str, Any]]:
    """Every record in ``out`` (a torn file, from a kill mid-write, is skipped)."""
    records = []
    for path in sorted(out.glob(RECORD_GLOB)):
        try:
            records.append(json.loads(path.read_text()))
        except json.JSONDecodeError:
            continue
    return records


def write_gitignore(out: Path) -> None:
    """Keep the raw records and refit caches out of git; the summary goes in."""
    (out / ".gitignore").write_text(f"{RECORD_GLOB}\nrefits-*.json\n")


# ----------------------------------------------------------------------------
# Report arithmetic (pure)
# ----------------------------------------------------------------------------
def anytime_mean(
    incumbents: Sequence[dict[str, Any]], grid: Sequence[float]
) -> tuple[float, int]:
    """Mean test score of the incumbent at the times of ``grid``.

    Before the first incumbent a run has no answer: those grid points are left
    out, and their number is returned beside the mean.

    Returns
    -------
    mean : float
        NaN when no grid point has an answer.
    n_missing : int
        Grid points before the first incumbent.
    """
    times = [inc["elapsed"] for inc in incumbents]
    values = [inc["test_score"] for inc in incumbents]
    at = step_on_grid(times, values, grid) if incumbents else np.full(len(grid), np.nan)
    finite = at[~np.isnan(at)]
    mean = float(finite.mean()) if finite.size else math.nan
    return mean, int(len(grid) - finite.size)


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation ignoring NaN (sd NaN below 2 values)."""
    arr = np.asarray(values, dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return math.nan, math.nan
    sd = float(arr.std(ddof=1)) if arr.size > 1 else math.nan
    return float(arr.mean()), sd


def fmt_mean_sd(values: Sequence[float], digits: int = 4) -> str:
    """``mean ± sd`` (just the mean for one value, ``-`` for none)."""
    mean, sd = mean_sd(values)
    if math.isnan(mean):
        return "-"
    if math.isnan(sd):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def load_range(records: Sequence[dict[str, Any]]) -> str:
    """Range of the 1-minute load average at the start and end of the runs."""
    loads = [r["loadavg_start"][0] for r in records]
    loads += [r["loadavg_end"][0] for r in records]
    if not loads:
        return "-"
    return f"{min(loads):.2f}-{max(loads):.2f}"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table."""
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def by_method(records: Sequence[dict[str, Any]], method: str) -> list[dict[str, Any]]:
    """The records of ``method``, by seed."""
    return sorted(
        (r for r in records if r["method"] == method), key=lambda r: r["seed"]
    )


def write_report(out: Path, text: str) -> None:
    """Write ``summary.md`` and print it."""
    (out / "summary.md").write_text(text)
    print(text, flush=True)
