"""FABOLAS (Klein et al., AISTATS 2017, paper 001), its SVM comparison at small scale.

The paper's section 4.2 / Fig. 3: SVM (C, gamma) on large data sets, the
test error of each method's incumbent against wall time, for FABOLAS, entropy
search on the full data (ES), multi-task BO with one auxiliary task on 1/4 of
the data (MTBO), Hyperband (eta = 3) and random search. Here, on one harness
task (``svc-magic``, subsampled) with a single stratified hold-out split as
the validation set, as in the paper, and every method on one core:

``fabolas``
    :class:`~skbayes_search.FabolasSearchCV` with its defaults.
``es``
    The same class with ``min_resources`` above 1/16 of the training rows,
    which makes it run its documented fallback: entropy search on all data
    (Matern 5/2 GP, MCMC, the same representers and ``p_min``); with
    ``cost_model="rows"`` every candidate costs the same, so the information
    is not divided by predicted seconds, as in the paper's ES.
``mtbo``
    The same class with the fraction restricted to {1/4, 1}: the FABOLAS loss
    GP evaluated at two fractions is a two-task GP (Matern over the
    configuration times a 2x2 task covariance, the basis kernel at the two
    ``s~``), the design runs on 1/4, no subset checks or probes; entropy
    search per predicted second, as in Swersky et al.'s MTBO.
``hyperband``
    Li et al.'s brackets (``hyperband_brackets``), one scikit-learn
    ``HalvingRandomSearchCV`` each, repeated until the time is up; the
    smallest resource gives 10 x n_classes training rows, as the paper did.
``random``
    scikit-learn ``RandomizedSearchCV``, stopped at the budget.

Every incumbent at the report's times is refitted on all search rows and
scored on the test rows (``benchmarks/refit.py``, cached).

Usage (from the repository root)::

    python -m benchmarks.papers.fabolas --out DIR [--quick] [--resume]
    python -m benchmarks.papers.fabolas --out DIR --report-only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import check_scoring
from sklearn.model_selection import StratifiedShuffleSplit
from threadpoolctl import threadpool_limits

from .. import REPO_ROOT
from ..execute import (
    SCORER_LOG,
    T0_FILE,
    _trials_ours,
    incumbents_for,
    own_incumbents,
    trials_from_scorer_log,
)
from ..refit import refit_incumbents
from ..tasks import Task, load_task, space_ours, space_scipy
from ..trace import TimedScorer
from ._fabolas_report import (
    ETA,
    METHODS,
    build_report,
    grid_times,
    hyperband_brackets,
    incumbent_at,
    incumbent_errors,
    peer_incumbents,
)

OURS = ("fabolas", "es", "mtbo")
#: Share of the search rows held out for validation (one split, as the paper).
VALIDATION_SHARE = 1 / 3
#: The auxiliary task of MTBO (paper 001, section 4.1).
MTBO_FRACTION = 0.25
FULL = {"task": "svc-magic", "max_rows": 12000, "seeds": 5, "budget": 60.0}
QUICK = {"task": "svc-magic", "max_rows": 1500, "seeds": 1, "budget": 4.0}


# ----------------------------------------------------------------------
# The baselines built from the library's pieces
# ----------------------------------------------------------------------
def _mtbo_class() -> type:
    from skbayes_search import FabolasSearchCV
    from skbayes_search.gp.fabolas_kernels import FractionAxis

    class TwoFractionAxis(FractionAxis):
        """The fraction axis with only s = MTBO_FRACTION and s = 1 allowed."""

        def snap(self, s: Any) -> np.ndarray:
            s = np.asarray(s, dtype=float)
            rows = max(self.min_rows, round(MTBO_FRACTION * self.n_train))
            low = float(self.to_s(rows / self.n_train))
            return np.where(s < 0.5 * (low + 1.0), low, 1.0)

    class MultiTaskSearchCV(FabolasSearchCV):
        """FABOLAS's models and eq. 7 on two tasks: 1/4 of the rows and all."""

        def _init_search(self, ctx: Any) -> None:
            super()._init_search(ctx)
            axis = self._axis
            self._axis = TwoFractionAxis(axis.n_train, axis.min_rows, axis.enabled)
            # no subset checks: every finished trial informs the incumbent
            self._trust = None

    return MultiTaskSearchCV


def _cv(seed: int = 0) -> StratifiedShuffleSplit:
    return StratifiedShuffleSplit(
        n_splits=1, test_size=VALIDATION_SHARE, random_state=seed
    )


def _n_train(task: Task) -> int:
    train, _ = next(_cv().split(task.X_search, task.y_search))
    return len(train)


def build_ours(method: str, task: Task, seed: int, budget: float) -> Any:
    from skbayes_search import FabolasSearchCV

    kwargs: dict[str, Any] = dict(
        n_iter=100_000,
        max_time=budget,
        cv=_cv(),
        n_jobs=1,
        refit=False,
        random_state=seed,
    )
    space = space_ours(task.params)
    if method == "fabolas":
        return FabolasSearchCV(task.estimator(), space, **kwargs)
    if method == "es":
        # above n_train / 16 rows per fit the class runs ES on all data; with
        # the cost in rows every candidate costs the same, so the information
        # is not divided by predicted seconds (the paper's ES); the seconds'
        # GP still keeps the proposals within max_time
        min_rows = _n_train(task) // 16 + 1
        return FabolasSearchCV(
            task.estimator(),
            space,
            min_resources=min_rows,
            cost_model="rows",
            **kwargs,
        )
    cls = _mtbo_class()
    return cls(task.estimator(), space, initial_fractions=(MTBO_FRACTION,), **kwargs)


def _run_peer(method: str, task: Task, seed: int, scoring: Any) -> None:
    """Run a peer until the parent stops it (its scorer logs every trial)."""
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingRandomSearchCV, RandomizedSearchCV

    common = dict(
        scoring=scoring, n_jobs=1, refit=False, cv=_cv(), return_train_score=False
    )
    dists = space_scipy(task.params)
    if method == "random":
        RandomizedSearchCV(
            task.estimator(), dists, n_iter=5000, random_state=seed, **common
        ).fit(task.X_search, task.y_search)
        return
    n_rows = len(task.y_search)
    # the smallest resource gives 10 x n_classes training rows (the paper's)
    r_min = math.ceil(10 * task.n_classes / (1 - VALIDATION_SHARE))
    k = 0
    while True:  # Hyperband's outer loop: the brackets again, fresh configurations
        for n, r in hyperband_brackets(n_rows, r_min):
            HalvingRandomSearchCV(
                task.estimator(),
                dists,
                n_candidates=n,
                factor=ETA,
                resource="n_samples",
                min_resources=r,
                max_resources=n_rows,
                random_state=seed * 10_000 + k,
                **common,
            ).fit(task.X_search, task.y_search)
            k += 1


def run_child(spec: dict) -> dict | None:
    """One run in this process; ours return a record, peers run until killed."""
    warnings.filterwarnings("ignore")
    task = load_task(spec["task"], spec["data_dir"], max_rows=spec["max_rows"])
    work = Path(spec["work_dir"])
    (work / T0_FILE).unlink(missing_ok=True)
    (work / SCORER_LOG).unlink(missing_ok=True)
    method, seed, budget = spec["method"], spec["seed"], spec["budget"]
    if method not in OURS:
        names = [p.name for p in task.params]
        scoring = TimedScorer(
            check_scoring(task.estimator()), str(work / SCORER_LOG), names
        )
        (work / T0_FILE).write_text(repr(time.time()))
        with threadpool_limits(1):
            _run_peer(method, task, seed, scoring)
        return None
    search = build_ours(method, task, seed, budget)
    t0 = time.time()
    (work / T0_FILE).write_text(repr(t0))
    # one worker, one BLAS thread: every method gets the same core
    with threadpool_limits(1):
        search.fit(task.X_search, task.y_search)
    trials = _trials_ours(search)
    return {
        "status": "ok",
        "wall": time.time() - t0,
        "trials": trials,
        "incumbents": own_incumbents(search) or incumbents_for(trials, method),
        "fallback": bool(getattr(search, "fallback_", False)),
    }


# ----------------------------------------------------------------------
# Driver: one subprocess per run, records, refits, report
# ----------------------------------------------------------------------
def _run_one(spec: dict, n_val: int) -> dict:
    work = Path(spec["work_dir"])
    work.mkdir(parents=True, exist_ok=True)
    (work / "spec.json").write_text(json.dumps(spec))
    out_path = work / "child.json"
    # a stopped earlier run's files must not look like this run's start
    for stale in (out_path, work / T0_FILE, work / SCORER_LOG):
        stale.unlink(missing_ok=True)
    budget = spec["budget"]
    # ours stop themselves (final evaluations may run 10 % past max_time)
    grace = 0.0 if spec["method"] not in OURS else 0.2 * budget + 30.0
    load_before = os.getloadavg()
    cmd = [sys.executable, "-m", "benchmarks.papers.fabolas", "--child"]
    cmd += [str(work / "spec.json"), str(out_path)]
    with open(work / "log.txt", "w") as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        killed = False
        while proc.poll() is None:
            time.sleep(0.2)
            t0_file = work / T0_FILE
            started = float(t0_file.read_text()) if t0_file.is_file() else None
            if started is not None and time.time() > started + budget + grace:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                killed = True
    base = {
        "method": spec["method"],
        "seed": spec["seed"],
        "budget": budget,
        "load_before": load_before[0],
        "loadavg_before": list(load_before),
        "loadavg_after": list(os.getloadavg()),
        "killed": killed,
    }
    if spec["method"] in OURS:
        if out_path.is_file():
            return {**base, **json.loads(out_path.read_text())}
        return {**base, "status": "failed", "error": f"see {work / 'log.txt'}"}
    # peers: the trials their scorer logged before the budget ran out
    trials = trials_from_scorer_log(work, 1, n_val)
    trials = [t for t in trials if t["elapsed"] <= budget]
    return {
        **base,
        "status": "ok" if trials else "failed",
        "trials": trials,
        "incumbents": peer_incumbents(trials, spec["method"]),
    }


def _meta(task: Task, settings: dict) -> dict:
    n_train = _n_train(task)
    return {
        **settings,
        "settings": settings,
        "task": task.name,
        "n_search": len(task.y_search),
        "n_train": n_train,
        "n_val": len(task.y_search) - n_train,
        "n_test": len(task.y_test),
        "seeds": f"0-{settings['seeds'] - 1}",
    }


def _plot(records: list[dict], refits: dict, meta: dict, path: Path) -> None:
    """Median test error against time per method, min-max band (Fig. 3's axes)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    times = grid_times(meta["budget"])
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in METHODS:
        runs = [r for r in records if r["method"] == m and r.get("status") == "ok"]
        if not runs:
            continue
        err = 100 * np.array([incumbent_errors(r, refits, times) for r in runs])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            med, lo, hi = (f(err, axis=0) for f in (np.nanmedian, np.nanmin, np.nanmax))
        (line,) = ax.plot(times, med, marker="o", label=f"{m} ({len(runs)})")
        ax.fill_between(times, lo, hi, color=line.get_color(), alpha=0.15)
    ax.set_xscale("log")
    ax.set_xlabel("wall time (s)")
    ax.set_ylabel("test error of the incumbent (%)")
    ax.set_title(f"{meta['task']}, {meta['n_search']} search rows")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _records(out: Path) -> list[dict]:
    records = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))]
    for rec in records:
        if rec["method"] not in OURS and "trials" in rec:
            rec["incumbents"] = peer_incumbents(rec["trials"], rec["method"])
    return records


def _refit_grid(task: Task, records: list[dict], out: Path, budget: float) -> dict:
    wanted = []
    for rec in records:
        for t in grid_times(budget):
            inc = incumbent_at(rec.get("incumbents", []), t)
            if inc is not None:
                wanted.append((inc["params"], 1.0))
    return refit_incumbents(task, wanted, out / "refits.json", n_jobs=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--quick", action="store_true", help="tiny data, 1 seed")
    parser.add_argument("--resume", action="store_true", help="skip recorded runs")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--data-dir", default="../shared/datasets")
    parser.add_argument("--seeds", type=int, help="number of seeds (0..n-1)")
    parser.add_argument("--budget", type=float, help="seconds per run")
    parser.add_argument("--max-rows", type=int)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        record = run_child(json.loads(Path(args.child[0]).read_text()))
        if record is not None:
            Path(args.child[1]).write_text(json.dumps(record))
        return 0
    if args.out is None:
        parser.error("--out is required")
    settings = dict(QUICK if args.quick else FULL)
    stored = args.out / "meta.json"
    if args.report_only and stored.is_file():
        # the report of what ran, with the settings it ran with
        ran = json.loads(stored.read_text())
        settings = ran.get("settings") or {
            "task": ran["task"],
            "max_rows": ran["max_rows"],
            "budget": ran["budget"],
            "seeds": int(str(ran["seeds"]).split("-")[-1]) + 1,
        }
    for key in ("seeds", "budget", "max_rows"):
        if getattr(args, key) is not None:
            settings[key] = getattr(args, key)
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown methods {unknown}; known: {', '.join(METHODS)}")
    task = load_task(settings["task"], args.data_dir, max_rows=settings["max_rows"])
    meta = _meta(task, settings)
    out = args.out
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    if not args.report_only:
        for seed in range(settings["seeds"]):
            for method in methods:
                path = out / "runs" / f"{method}-seed{seed}.json"
                if args.resume and path.is_file():
                    continue
                spec = {
                    "method": method,
                    "seed": seed,
                    "budget": settings["budget"],
                    "task": settings["task"],
                    "max_rows": settings["max_rows"],
                    "data_dir": str(Path(args.data_dir).resolve()),
                    "work_dir": str((out / "work" / f"{method}-seed{seed}").resolve()),
                }
                rec = _run_one(spec, meta["n_val"])
                path.write_text(json.dumps(rec))
                n = len(rec.get("trials", []))
                print(f"{method} seed {seed}: {rec['status']}, {n} trials, "
                      f"load {rec['load_before']:.2f}", flush=True)  # fmt: skip
    records = _records(out)
    refits = _refit_grid(task, records, out, settings["budget"])
    report = build_report(records, refits, meta)
    (out / "summary.md").write_text(report)
    _plot(records, refits, meta, out / "convergence.png")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
