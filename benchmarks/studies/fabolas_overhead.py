"""FABOLAS's own overhead per iteration as observations accumulate.

One iteration of :class:`~skbayes_search.FabolasSearchCV` = MCMC refit of the
loss and cost GPs on every finished trial, entropy-search acquisition over
(configuration, subset size) and its maximisation. To time that alone, the
search tunes an estimator whose ``fit`` costs nothing; its ``fit`` reads the
clocks, so the gap between two consecutive trials (one trial per iteration)
is one iteration of the optimiser. Both the wall-clock gap and the CPU
seconds of this process over the gap are reported: the CPU figure is what
the optimiser costs, the wall figure is what a user waits, which other work
on the machine inflates. With ``--n-jobs`` above 1 the folds run in threads
of this process (joblib's threading backend), so the clocks stay readable,
and the proposal spreads its work over that many threads as it does beside
process workers.

Usage::

    python -m benchmarks.studies.fabolas_overhead [--n-iter 100] [--at 20 50 100]
        [--n-jobs 1] [--out benchmarks/results/<date>-fabolas-overhead]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import time
from pathlib import Path

import numpy as np
from joblib import parallel_backend
from sklearn.base import BaseEstimator, ClassifierMixin

from skbayes_search import FabolasSearchCV, Real

from .. import RESULTS_DIR

#: Clock readings (wall, CPU, training rows), one per ``fit`` call.
_CLOCKS: list[tuple[float, float, int]] = []


class InstantClassifier(ClassifierMixin, BaseEstimator):
    """Threshold rule on the first feature; fitting costs nothing.

    ``shift`` moves the threshold and ``width`` blurs it, so accuracy depends
    smoothly on both, and the subset size enters through a shrinking bias
    (smaller training subsets give a worse threshold), as with a real model.
    """

    def __init__(self, shift: float = 0.0, width: float = 0.1) -> None:
        self.shift = shift
        self.width = width

    def fit(self, X: np.ndarray, y: np.ndarray) -> InstantClassifier:
        _CLOCKS.append((time.perf_counter(), time.process_time(), len(X)))
        self.classes_ = np.unique(y)
        self.threshold_ = 0.5 + self.shift + 2.0 / np.sqrt(len(X))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        margin = (X[:, 0] - self.threshold_) / max(self.width, 1e-3)
        return self.classes_[(np.tanh(margin) + 0.3 * X[:, 1] > 0).astype(int)]


def measure(n_iter: int, seed: int, n_jobs: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Wall and CPU seconds of each iteration after the first."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(20_000, 2))
    y = (X[:, 0] + 0.1 * rng.standard_normal(len(X)) > 0.5).astype(int)
    _CLOCKS.clear()
    search = FabolasSearchCV(
        InstantClassifier(),
        {"shift": Real(-0.4, 0.4), "width": Real(1e-3, 1.0, prior="log-uniform")},
        n_iter=n_iter,
        cv=2,
        n_jobs=n_jobs,
        refit=False,
        random_state=seed,
    )
    with parallel_backend("threading", n_jobs=n_jobs):
        search.fit(X, y)
    # The first fit of each trial marks the end of the optimiser's work on
    # that iteration; in threads the two folds' clocks may come in any order.
    starts = np.array(sorted(_CLOCKS)[::2])
    return np.diff(starts[:, 0]), np.diff(starts[:, 1])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.studies.fabolas_overhead")
    p.add_argument("--n-iter", type=int, default=100)
    p.add_argument("--at", type=int, nargs="+", default=[20, 50, 100])
    p.add_argument("--window", type=int, default=5, help="iterations per median")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    stamp = dt.datetime.now()
    out = Path(args.out or RESULTS_DIR / f"{stamp:%Y-%m-%d}-fabolas-overhead")
    out.mkdir(parents=True, exist_ok=True)
    wall, cpu = measure(args.n_iter, args.seed, args.n_jobs)
    # Gap i ends at the start of trial i + 2, i.e. with i + 1 observations.
    n_obs = np.arange(len(wall)) + 1
    lines = [
        "# FABOLAS overhead per iteration",
        "",
        "- command: `python -m benchmarks.studies.fabolas_overhead "
        f"--n-iter {args.n_iter} --n-jobs {args.n_jobs}`",
        f"- date: {stamp:%Y-%m-%dT%H:%M}; machine: {os.cpu_count()} cores, "
        f"{platform.platform()}; load when done: {os.getloadavg()[0]:.1f}",
        "- settings: 2 searched parameters, defaults (n_representers=50, "
        "n_hyper_samples=10), one trial per iteration, "
        f"n_jobs={args.n_jobs}" + (" (threading backend)" if args.n_jobs > 1 else ""),
        f"- cells: median over the {args.window} iterations ending at n observations",
        "",
        "| observations | wall s / iteration | CPU s / iteration |",
        "|---|---|---|",
    ]
    for n in args.at:
        sel = (n_obs <= n) & (n_obs > n - args.window)
        if not sel.any():
            continue
        lines.append(
            f"| {n} | {np.median(wall[sel]):.2f} | {np.median(cpu[sel]):.2f} |"
        )
    text = "\n".join(lines) + "\n"
    name = "overhead.md" if args.n_jobs == 1 else f"overhead-n_jobs-{args.n_jobs}.md"
    (out / name).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
