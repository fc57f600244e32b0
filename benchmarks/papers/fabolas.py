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
    (Matern 5/2 GP, MCMC, the same representers and ``p_min``).
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
from ..metrics import median_spread, target_threshold, time_to_target
from ..refit import incumbent_key, refit_incumbents
from ..tasks import Task, load_task, space_ours, space_scipy
from ..trace import TimedScorer

METHODS = ("fabolas", "es", "mtbo", "hyperband", "random")
OURS = ("fabolas", "es", "mtbo")
#: Share of the search rows held out for validation (one split, as the paper).
VALIDATION_SHARE = 1 / 3
#: Hyperband's eta and the auxiliary task of MTBO (paper 001, section 4).
ETA = 3
MTBO_FRACTION = 0.25
#: Hyperband's top rung: r * eta^k rows, which rounding leaves a little short
TOP_RUNG = 0.99
#: Times (shares of the budget) at which incumbents are refitted and reported.
GRID_SHARES = tuple(2.0**k for k in range(-6, 1))
FULL = {"task": "svc-magic", "max_rows": 12000, "seeds": 5, "budget": 60.0}
QUICK = {"task": "svc-magic", "max_rows": 1500, "seeds": 1, "budget": 4.0}

#: What the paper reports (paper 001, text of section 4 and figure captions).
PAPER = [
    (
        "Abstract",
        "FABOLAS often finds high-quality solutions 10 to 100 times faster than"
        " other state-of-the-art Bayesian optimization methods or ... Hyperband",
    ),
    (
        "Fig. 3 (covtype, vehicle, MNIST SVM)",
        "FABOLAS finds a good configuration between 10 and 1000 times faster"
        " than the other methods",
    ),
    (
        "§4.2, Hyperband",
        "Hyperband required a relatively long time until it recommended its"
        " first hyperparameter setting, but this first recommendation was"
        " already very good ... FABOLAS typically returned configurations with"
        " the same quality another order of magnitude faster",
    ),
    (
        "§4.1 / Fig. 2 (MNIST SVM grid)",
        "EI and ES ... find the best configuration (error 1.4%) after around"
        " 10^5 seconds, roughly five times faster than random search. MTBO ..."
        " around 2x10^4 seconds ... FABOLAS is roughly another order of"
        " magnitude faster than MTBO",
    ),
    (
        "§4.3 / Fig. 4 (CNNs)",
        "it found good configurations about 10 times faster than vanilla"
        " Bayesian optimization",
    ),
]


# ----------------------------------------------------------------------
# Pure functions (tested in tests/test_papers_fabolas.py)
# ----------------------------------------------------------------------
def hyperband_brackets(
    max_resource: int, min_resource: int, eta: int = ETA
) -> list[tuple[int, int]]:
    """Li et al.'s brackets: ``(n_configurations, min_resource)`` for
    ``s = s_max, ..., 0`` with ``s_max = floor(log_eta(R / r_min))``,
    ``n = ceil((s_max + 1) / (s + 1) * eta^s)`` and ``r = R * eta^-s``."""
    ratio = max_resource / min_resource
    s_max = math.floor(math.log(ratio) / math.log(eta) + 1e-9)
    out = []
    for s in range(s_max, -1, -1):
        n = math.ceil((s_max + 1) / (s + 1) * eta**s)
        r = round(max_resource * eta ** (-s))
        out.append((n, max(r, min_resource)))
    return out


def grid_times(budget: float) -> list[float]:
    """The report's times: budget / 64, ..., budget (doubling)."""
    return [budget * g for g in GRID_SHARES]


def incumbent_at(incumbents: list[dict], t: float) -> dict | None:
    """The incumbent a run would have returned if stopped at ``t`` seconds."""
    last = None
    for inc in incumbents:
        if inc["elapsed"] > t:
            break
        last = inc
    return last


def peer_incumbents(trials: list[dict], method: str) -> list[dict]:
    """Incumbents of random search (its best trial) and of Hyperband: the best
    configuration evaluated on the top rung (all rows, up to the rounding of
    ``r * eta^k``), the paper's incumbent estimation, so none before the
    first bracket ends."""
    if method == "hyperband":
        trials = [t for t in trials if t["fraction"] >= TOP_RUNG]
    return incumbents_for(trials, method)


def first_incumbent(record: dict, budget: float) -> float:
    """Seconds until the run named its first incumbent (inf if not in budget)."""
    times = [i["elapsed"] for i in record.get("incumbents", [])]
    return min(times) if times and min(times) <= budget else math.inf


def incumbent_errors(record: dict, refits: dict, times: list[float]) -> list[float]:
    """Test error of the run's incumbent at each of ``times`` (NaN before
    its first incumbent or while a refit is missing)."""
    out = []
    for t in times:
        inc = incumbent_at(record.get("incumbents", []), t)
        score = math.nan
        if inc is not None:
            score = refits.get(incumbent_key(inc["params"], 1.0), {}).get(
                "test_score", math.nan
            )
        out.append(1.0 - score)
    return out


def speedups(times_to_target: dict[str, list[float]], ref: str) -> dict[str, float]:
    """Median time to target of each method over that of ``ref`` (> 1: ``ref``
    is faster; inf when the method never reached it; NaN when ``ref`` never did)."""
    base = median_spread(times_to_target.get(ref, []))[0]
    out = {}
    for name, values in times_to_target.items():
        med = median_spread(values)[0]
        out[name] = med / base if math.isfinite(base) and base > 0 else math.nan
    return out


def _fmt(values: list[float], pct: bool = True) -> str:
    med, lo, hi = median_spread(values)
    if math.isnan(med):
        return "-"
    k = 100.0 if pct else 1.0
    if not math.isfinite(med):
        return "never"
    return f"{k * med:.1f} [{k * lo:.1f}, {k * hi:.1f}]"


def build_report(records: list[dict], refits: dict, meta: dict) -> str:
    """The markdown report: our table, then the paper's figures."""
    times = grid_times(meta["budget"])
    by_method: dict[str, list[dict]] = {}
    for rec in records:
        if rec.get("status") == "ok":
            by_method.setdefault(rec["method"], []).append(rec)
    errors = {
        m: [incumbent_errors(r, refits, times) for r in by_method.get(m, [])]
        for m in METHODS
    }
    finals = [e[-1] for runs in errors.values() for e in runs if math.isfinite(e[-1])]
    lines = [
        f"# FABOLAS (Klein et al. 2017), Fig. 3 at small scale: {meta['task']}",
        "",
        f"{meta['n_search']} search rows ({meta['n_train']} training, "
        f"{meta['n_val']} validation), {meta['n_test']} test rows; budget "
        f"{meta['budget']:g} s per run, n_jobs=1, seeds {meta['seeds']}. "
        "Test error (%) of the incumbent refitted on all search rows, median "
        "[min, max] over seeds, at each time (s):",
        "",
        "| method | runs | " + " | ".join(f"{t:.3g}" for t in times) + " | load |",
        "|---" * (len(times) + 3) + "|",
    ]
    ttt: dict[str, list[float]] = {}
    target = None
    if finals:
        best_acc = 1.0 - min(finals)
        target = 1.0 - target_threshold(best_acc, classification=True)
    for m in METHODS:
        runs = errors[m]
        loads = [r["load_before"] for r in by_method.get(m, [])]
        cells = [_fmt([e[i] for e in runs]) for i in range(len(times))]
        load = _fmt(loads, pct=False) if loads else "-"
        lines.append(f"| {m} | {len(runs)} | " + " | ".join(cells) + f" | {load} |")
        if target is not None:
            ttt[m] = [time_to_target(times, [-x for x in e], -target) for e in runs]
    if target is not None:
        ups = speedups(ttt, "fabolas")
        lines += [
            "",
            f"Time to a test error of at most {100 * target:.2f} % (the best final "
            "error of any run plus 0.5 points), read on the times above; "
            "ratio = the method's median over FABOLAS's (> 1: FABOLAS faster):",
            "",
            "| method | time to target (s) | ratio to FABOLAS | first incumbent (s) "
            "| trials |",
            "|---|---|---|---|---|",
        ]
        for m in METHODS:
            ratio = ups.get(m, math.nan)
            shown = "-" if math.isnan(ratio) else f"{ratio:.2g}"
            runs = by_method.get(m, [])
            first = [first_incumbent(r, meta["budget"]) for r in runs]
            n_trials = [len(r.get("trials", [])) for r in runs]
            lines.append(
                f"| {m} | {_fmt(ttt.get(m, []), pct=False)} | {shown} "
                f"| {_fmt(first, pct=False)} | {_fmt(n_trials, pct=False)} |"
            )
    lines += ["", "The paper's figures (quoted from its text):", ""]
    lines += [f'- {where}: "{text}"' for where, text in PAPER]
    lines += [
        "",
        "What differs: one data set of "
        f"{meta['n_search']} search rows instead of covtype/vehicle/MNIST "
        "(50,000+ rows); a budget of seconds instead of hours to days; 'load' "
        "is the 1-minute load average of the machine when each run started "
        "(2 cores shared with other work); the time to target is read at "
        "doubling times, so ratios are coarse (factors of 2).",
    ]
    return "\n".join(lines) + "\n"


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
        # above n_train / 16 rows per fit the class runs plain ES on all data
        min_rows = _n_train(task) // 16 + 1
        return FabolasSearchCV(
            task.estimator(), space, min_resources=min_rows, **kwargs
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
    out_path.unlink(missing_ok=True)
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
        "task": task.name,
        "n_search": len(task.y_search),
        "n_train": n_train,
        "n_val": len(task.y_search) - n_train,
        "n_test": len(task.y_test),
        "seeds": f"0-{settings['seeds'] - 1}",
    }


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
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
