"""Alpha sweep of TradeoffBayesSearchCV against BayesSearchCV on full data (issue 5).

Usage, from the repository root::

    python -m benchmarks.studies.tradeoff_sweep --data-dir ../shared/datasets \\
        --out benchmarks/results/2026-11-22-tradeoff-sweep [--seeds N]

Protocol
--------
Two tasks, each a classifier, a box of hyperparameters and a data set from the
shared folder (gzipped TSV, label column ``target``):

``svc-magic``
    ``make_pipeline(StandardScaler(), SVC())``, ``C`` in [1e-3, 1e3] and
    ``gamma`` in [1e-4, 1e1], both log-uniform, on a stratified sample of
    5,000 rows of ``magic``.
``hgb-adult``
    ``HistGradientBoostingClassifier(early_stopping=False)``, ``learning_rate``
    in [1e-3, 1] log-uniform, ``max_leaf_nodes`` in [4, 128],
    ``min_samples_leaf`` in [2, 200], ``max_iter`` in [20, 300] (integers), on a
    stratified sample of 10,000 rows of ``adult`` (``--hgb-rows``).

For every seed ``s`` (0 .. ``--seeds`` - 1) the row sample and a stratified
75/25 search/test split are drawn with ``random_state=s``. On the search part
run, one after the other:

- ``BayesSearchCV`` (every trial on all search rows), and
- ``TradeoffBayesSearchCV`` for ``alpha`` in {0, 0.1, 0.3, 0.5, 0.7, 0.9}
  (default fractions {0.2, ..., 1.0}),

all with ``n_iter=20``, ``cv=3``, ``n_jobs=1`` and ``random_state=s``. Each
search is timed from ``fit`` to its return (its own refit included).

Measured per search:

- test accuracy of ``best_estimator_`` (the search's own refit; for the
  trade-off search fitted on its selected fraction) on the held-out 25 %;
- the selected fraction (``best_train_fraction_``; 1.0 for ``BayesSearchCV``);
- the selected model's training time: the median of 3 fits of the selected
  configuration on a stratified subset of the search rows of the selected
  size (``max(n_classes, round(fraction * n))`` rows, as the search's refit).
  These fits run after *all* searches, in one pass interleaved over every
  selected model (repetition 1 of every model, then repetition 2, ...), so
  that the load of the machine at any moment affects all models alike;
- the search's wall time.

Ratios are against ``BayesSearchCV`` of the same task and seed: accuracy
ratio = test accuracy / that of ``BayesSearchCV``; time ratio = training time
/ that of ``BayesSearchCV``'s selected model. The issue's target is met at an
``alpha`` when the accuracy ratio is >= 0.96 and the time ratio <= 0.50.

Everything (searches and re-timing fits) runs under
``threadpoolctl.threadpool_limits(1)``: HistGradientBoosting otherwise uses
OpenMP threads on both cores, and on a machine shared with other work
oversubscribed OpenMP fits were measured 3-4x slower and far noisier than
single-threaded ones. Training times are therefore single-thread times.

Outputs in ``--out``: ``results.csv`` (one row per search), ``summary.md``
(one table per task and seed, the command, date, cores and load averages) and
``tradeoff-<task>.png`` (test accuracy against training time, one point per
``alpha``, ``BayesSearchCV`` marked, the target region shaded).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import sklearn
from sklearn.base import BaseEstimator, clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from skbayes_search import BayesSearchCV, Integer, Real, TradeoffBayesSearchCV

ALPHAS = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9)
N_ITER = 20
CV = 3
N_REFITS = 3
TEST_SIZE = 0.25
TARGET_ACC_RATIO = 0.96
TARGET_TIME_RATIO = 0.50
BASELINE = "BayesSearchCV"
TRADEOFF = "TradeoffBayesSearchCV"


# ----------------------------------------------------------------------------
# Tasks
# ----------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskSpec:
    """A task of the sweep: data set, row sample, estimator and search box."""

    name: str
    dataset: str
    n_rows: int
    make_estimator: Callable[[int], BaseEstimator]
    space: dict[str, Any] = field(hash=False)
    title: str = ""


def _svc(seed: int) -> BaseEstimator:
    return make_pipeline(StandardScaler(), SVC())


def _hgb(seed: int) -> BaseEstimator:
    # random_state only drives the binning subsample (above 200,000 rows)
    # and early stopping's split, both unused here: fixed for the record
    return HistGradientBoostingClassifier(early_stopping=False, random_state=seed)


def task_specs(hgb_rows: int = 10_000) -> dict[str, TaskSpec]:
    """The two tasks of the protocol, by name.

    Parameters
    ----------
    hgb_rows : int, default=10_000
        Rows sampled from ``adult`` for the HistGradientBoosting task.

    Returns
    -------
    dict of str to TaskSpec
    """
    return {
        "svc-magic": TaskSpec(
            name="svc-magic",
            dataset="magic",
            n_rows=5_000,
            make_estimator=_svc,
            space={
                "svc__C": Real(1e-3, 1e3, prior="log-uniform"),
                "svc__gamma": Real(1e-4, 1e1, prior="log-uniform"),
            },
            title="StandardScaler + SVC, magic",
        ),
        "hgb-adult": TaskSpec(
            name="hgb-adult",
            dataset="adult",
            n_rows=hgb_rows,
            make_estimator=_hgb,
            space={
                "learning_rate": Real(1e-3, 1.0, prior="log-uniform"),
                "max_leaf_nodes": Integer(4, 128),
                "min_samples_leaf": Integer(2, 200),
                "max_iter": Integer(20, 300),
            },
            title="HistGradientBoosting, adult",
        ),
    }


@dataclass
class TaskData:
    """Search and test parts of one task for one seed."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(np.unique(self.y).size)


def load_task(spec: TaskSpec, data_dir: Path, seed: int) -> TaskData:
    """Stratified row sample of the data set, split 75/25 stratified.

    Parameters
    ----------
    spec : TaskSpec
        The task.
    data_dir : Path
        Folder holding ``<dataset>.tsv.gz``.
    seed : int
        Seeds the sample and the split.

    Returns
    -------
    TaskData
    """
    frame = pd.read_csv(data_dir / f"{spec.dataset}.tsv.gz", sep="\t")
    y = frame.pop("target").to_numpy()
    X = frame.to_numpy(dtype=float)
    if spec.n_rows < len(y):
        X, _, y, _ = train_test_split(
            X, y, train_size=spec.n_rows, stratify=y, random_state=seed
        )
    X, X_test, y, y_test = train_test_split(
        X, y, test_size=TEST_SIZE, stratify=y, random_state=seed
    )
    return TaskData(X, y, X_test, y_test)


def fraction_subset(
    data: TaskData, fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """A stratified subset of the search rows of the size the search refits on."""
    n = len(data.y)
    n_rows = int(min(n, max(data.n_classes, round(fraction * n))))
    if n_rows >= n:
        return data.X, data.y
    X, _, y, _ = train_test_split(
        data.X, data.y, train_size=n_rows, stratify=data.y, random_state=seed
    )
    return X, y


# ----------------------------------------------------------------------------
# Searches
# ----------------------------------------------------------------------------
@dataclass
class Record:
    """One search of the sweep and what was measured about its selection."""

    task: str
    seed: int
    method: str
    alpha: float | None
    n_search_rows: int
    fraction: float
    train_rows: int
    params: dict[str, Any]
    val_score: float
    test_acc: float
    search_s: float
    refit_in_search_s: float
    load_after: float
    model: BaseEstimator
    subset: tuple[np.ndarray, np.ndarray]
    fit_times: list[float] = field(default_factory=list)

    @property
    def train_time(self) -> float:
        return float(np.median(self.fit_times))


def _plain(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def run_search(
    spec: TaskSpec, data: TaskData, seed: int, alpha: float | None
) -> Record:
    """Fit one search (``alpha=None``: BayesSearchCV) and record its selection."""
    estimator = spec.make_estimator(seed)
    common = dict(n_iter=N_ITER, cv=CV, n_jobs=1, random_state=seed)
    if alpha is None:
        search = BayesSearchCV(estimator, spec.space, **common)
        method = BASELINE
    else:
        search = TradeoffBayesSearchCV(estimator, spec.space, alpha=alpha, **common)
        method = TRADEOFF
    start = time.perf_counter()
    search.fit(data.X, data.y)
    search_s = time.perf_counter() - start
    fraction = float(getattr(search, "best_train_fraction_", 1.0))
    subset = fraction_subset(data, fraction, seed)
    test_acc = accuracy_score(data.y_test, search.best_estimator_.predict(data.X_test))
    return Record(
        task=spec.name,
        seed=seed,
        method=method,
        alpha=alpha,
        n_search_rows=len(data.y),
        fraction=fraction,
        train_rows=len(subset[1]),
        params={k: _plain(v) for k, v in search.best_params_.items()},
        val_score=float(search.best_score_),
        test_acc=float(test_acc),
        search_s=search_s,
        refit_in_search_s=float(search.refit_time_),
        load_after=os.getloadavg()[0],
        # unfitted copy with the selected parameters, for the re-timing pass
        model=clone(search.best_estimator_),
        subset=subset,
    )


def retime(records: list[Record], n_refits: int = N_REFITS) -> None:
    """Time ``n_refits`` fits of every selected model, interleaved.

    Repetition ``r`` of every model runs before repetition ``r + 1`` of any,
    so slow phases of the shared machine hit all models alike.
    """
    for _ in range(n_refits):
        for record in records:
            model = clone(record.model)
            X, y = record.subset
            start = time.perf_counter()
            model.fit(X, y)
            record.fit_times.append(time.perf_counter() - start)


# ----------------------------------------------------------------------------
# Outputs
# ----------------------------------------------------------------------------
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
        "- **the machine was shared with another benchmark running at the same "
        "time**: absolute seconds are inflated and noisy; the ratios compare "
        "models re-timed in one interleaved pass (see below), which is what "
        "the target is about",
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


# ----------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Run the sweep and write results.csv, summary.md and the plots."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.studies.tradeoff_sweep",
        description="Alpha sweep of TradeoffBayesSearchCV vs BayesSearchCV.",
    )
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--seeds", type=int, default=1, help="run seeds 0 .. N-1 (default 1)"
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        choices=sorted(task_specs()),
        default=list(task_specs()),
    )
    parser.add_argument(
        "--hgb-rows",
        type=int,
        default=10_000,
        help="rows sampled from adult for hgb-adult (default 10000)",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")

    command = shlex.join(
        ["python", "-m", "benchmarks.studies.tradeoff_sweep", *sys.argv[1:]]
    )
    started = datetime.now(timezone.utc)
    clock = time.perf_counter()
    load_start = os.getloadavg()
    all_specs = task_specs(args.hgb_rows)
    specs = {name: all_specs[name] for name in args.tasks}
    seeds = list(range(args.seeds))
    args.out.mkdir(parents=True, exist_ok=True)

    records: list[Record] = []
    with threadpool_limits(1):
        for seed in seeds:
            for spec in specs.values():
                data = load_task(spec, args.data_dir, seed)
                for alpha in (None, *ALPHAS):
                    record = run_search(spec, data, seed, alpha)
                    records.append(record)
                    print(
                        f"{spec.name} seed={seed} {record.method} alpha={alpha} "
                        f"fraction={record.fraction:g} test={record.test_acc:.4f} "
                        f"search={record.search_s:.0f}s load={record.load_after:.2f}",
                        flush=True,
                    )
        retime(records)
    for r in records:
        print(
            f"re-timed {r.task} seed={r.seed} {r.method} alpha={r.alpha}: "
            f"{r.train_time:.4f}s",
            flush=True,
        )

    from ._tradeoff_sweep_plot import plot_task

    write_csv(records, args.out / "results.csv")
    for spec in specs.values():
        plot_task(records, spec, seeds, args.out / f"tradeoff-{spec.name}.png")
    write_summary(
        records,
        specs,
        seeds,
        args.out / "summary.md",
        command=command,
        started=started,
        elapsed_s=time.perf_counter() - clock,
        load_start=load_start,
        load_end=os.getloadavg(),
    )
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
