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
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
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
    from ._tradeoff_sweep_report import write_csv, write_summary

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
