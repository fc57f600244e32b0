"""Benchmark entry point: every method on every task, equal wall-clock budget.

Usage (from the repository root)::

    python -m benchmarks.run --data-dir ../shared/datasets \\
        --tasks svc-covertype_75k,hgb-adult --methods all --seeds 3 \\
        --budget 600 --out benchmarks/results/2026-11-22
    python -m benchmarks.run --quick        # CI smoke run, about 2 minutes

For each task: load and split once; calibrate the peers without a time
budget; run each (seed, method) in a fresh subprocess, one after the other
with the same ``n_jobs``; refit every distinct incumbent offline and score it
on the test split; then write ``trajectories.csv``, ``summary.md``, the
convergence plots and ``meta.json`` (command, cores, date, versions). Methods
that cannot run are recorded with the reason and listed in the summary.
``--resume`` skips runs that already have a record.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from . import REPO_ROOT, RESULTS_DIR, report
from .calibration import (
    calibrate,
    grid_points_per_dim,
    halving_settings,
    random_n_iter,
)
from .execute import incumbents_for, read_t0, trials_from_scorer_log
from .methods import METHODS, NOT_WRITTEN, OURS, availability, resolve_methods
from .refit import refit_incumbents
from .tasks import SPLIT_SEED, Task, load_task

QUICK = {"tasks": "svc-magic", "max_rows": 1500, "seeds": 1, "budget": 10.0}
_N_SPLITS = 5
_VERSIONED = (
    "numpy",
    "scipy",
    "scikit-learn",
    "skbayes-search",
    "scikit-optimize",
    "optuna",
    "optuna-integration",
    "matplotlib",
)


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _sizing(
    task: Task, methods: list[str], budget: float, n_jobs: int, path: Path
) -> dict:
    """Calibrated sizes of random, grid and halving search (cached in ``path``)."""
    if path.is_file():
        return json.loads(path.read_text())
    if not {"random", "grid", "halving"} & set(methods):
        return {}
    model = calibrate(task, budget, n_splits=_N_SPLITS, n_jobs=n_jobs, seed=0)
    n = len(task.y_search)
    n_iter = random_n_iter(model, n, budget, n_jobs, _N_SPLITS)
    sizing = {
        "fold_time_model": model.to_dict(),
        "random_n_iter": n_iter,
        "grid_points": grid_points_per_dim(n_iter, len(task.params)),
        "halving": halving_settings(
            model, n, budget, n_jobs, n_splits=_N_SPLITS, n_classes=task.n_classes
        ),
    }
    path.write_text(json.dumps(sizing, indent=1))
    return sizing


def run_subprocess(
    spec: dict, spec_path: Path, out_path: Path, log_path: Path, timeout: float
) -> dict:
    """Run :mod:`benchmarks.execute` on ``spec`` in a fresh interpreter.

    Returns its record (or a "timed out" / "failed" one) with the machine's
    1-minute load average when the run started and ended: other work on the
    machine slows every run.
    """
    load_before = os.getloadavg()[0]
    record = _execute(spec, spec_path, out_path, log_path, timeout)
    record.update(load_before=load_before, load_after=os.getloadavg()[0])
    return record


def _execute(
    spec: dict, spec_path: Path, out_path: Path, log_path: Path, timeout: float
) -> dict:
    out_path.unlink(missing_ok=True)
    spec_path.write_text(json.dumps(spec, indent=1))
    cmd = [sys.executable, "-m", "benchmarks.execute", str(spec_path), str(out_path)]
    start = time.time()
    with open(log_path, "w") as log:
        # Own session, so a kill on timeout also ends the joblib workers.
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return {
                "status": "timed out",
                "killed_at": time.time(),
                "error": f"killed after {time.time() - start:.0f} s",
            }
    if out_path.is_file():
        return json.loads(out_path.read_text())
    return {
        "status": "failed",
        "error": f"exit code {proc.returncode}, no record (see {log_path.name})",
    }


def _salvage(record: dict, spec: dict, task: Task) -> dict:
    """Trials a killed peer finished before the kill, from its scorer log."""
    if METHODS[spec["method"]].ours:
        return record
    work_dir = Path(spec["work_dir"])
    trials = trials_from_scorer_log(work_dir, _N_SPLITS, len(task.y_search))
    t0 = read_t0(work_dir)
    record.update(
        wall=record["killed_at"] - t0 if t0 is not None else float("nan"),
        busy=float("nan"),
        n_trials=len(trials),
        n_rows=len(task.y_search),
        trials=trials,
        incumbents=incumbents_for(trials, spec["method"]),
    )
    return record


def record_path(out: Path, task_name: str, method: str, seed: int) -> Path:
    """Where the record of one (task, method, seed) run goes in folder ``out``.

    ``task_name`` is the canonical name (``Task.name``, e.g.
    ``svc-covertype_75k``).
    """
    return out / "runs" / task_name / f"{method}-seed{seed}.json"


def has_record(path: Path) -> bool:
    """Whether ``path`` holds a record that ``--resume`` keeps.

    A "not available" record is not kept: the method may have been written
    or installed since, and a resumed run should try it.
    """
    if not path.is_file():
        return False
    return json.loads(path.read_text()).get("status") != "not available"


def run_task(
    task_name: str,
    args: argparse.Namespace,
    methods: list[str],
    out: Path,
    avail: dict,
    seeds: Iterable[int] | None = None,
    refits: bool = True,
) -> None:
    """Every (seed, method) of one task, then (with ``refits``) the offline refits.

    ``args`` holds the run settings (``data_dir``, ``max_rows``,
    ``split_seed``, ``budget``, ``n_jobs``, ``resume``, ``timeout_factor``);
    ``seeds`` defaults to ``range(args.seeds)``.
    """
    seeds = range(args.seeds) if seeds is None else seeds
    task = load_task(
        task_name, args.data_dir, max_rows=args.max_rows, split_seed=args.split_seed
    )
    runs_dir = out / "runs" / task.name
    runs_dir.mkdir(parents=True, exist_ok=True)
    (out / "logs" / task.name).mkdir(parents=True, exist_ok=True)
    (out / "sizing").mkdir(exist_ok=True)
    (out / "refits").mkdir(exist_ok=True)
    info = {
        "task": task.name,
        "n_search": len(task.y_search),
        "n_test": len(task.y_test),
        "n_features": int(task.X_search.shape[1]),
        "n_classes": task.n_classes,
        "classification": task.classification,
        "notes": task.notes,
    }
    (runs_dir / "task.json").write_text(json.dumps(info, indent=1))
    runnable = [m for m in methods if avail[m] is None and METHODS[m].applies(task)]
    print(
        f"[{task.name}] {info['n_search']} search rows, {info['n_test']} test rows",
        flush=True,
    )
    sizing = _sizing(
        task, runnable, args.budget, args.n_jobs, out / "sizing" / f"{task.name}.json"
    )
    if sizing:
        cal = sizing["fold_time_model"]["calibration_seconds"]
        print(
            f"[{task.name}] calibration {cal:.1f}s: random n_iter="
            f"{sizing['random_n_iter']}, grid {sizing['grid_points']}/dim, halving "
            f"n_candidates={sizing['halving']['n_candidates']}",
            flush=True,
        )
    for seed in seeds:
        for name in methods:
            out_path = record_path(out, task.name, name, seed)
            if args.resume and has_record(out_path):
                continue
            if avail[name] is not None:
                record = {"status": "not available", "error": avail[name]}
            elif not METHODS[name].applies(task):
                record = {
                    "status": "not applicable",
                    "error": "no natural grid for this space",
                }
            else:
                spec = {
                    "task": task_name,
                    "data_dir": str(args.data_dir) if args.data_dir else None,
                    "max_rows": args.max_rows,
                    "split_seed": args.split_seed,
                    "method": name,
                    "seed": seed,
                    "budget": args.budget,
                    "n_jobs": args.n_jobs,
                    "sizing": sizing,
                    "work_dir": str(out / "work" / task.name / f"{name}-seed{seed}"),
                }
                timeout = args.timeout_factor * args.budget + 60
                record = run_subprocess(
                    spec,
                    runs_dir / f"{name}-seed{seed}.spec.json",
                    out_path,
                    out / "logs" / task.name / f"{name}-seed{seed}.log",
                    timeout,
                )
                if record["status"] == "timed out":
                    record = _salvage(record, spec, task)
            record.update(method=name, seed=seed, task=task.name, budget=args.budget)
            out_path.write_text(json.dumps(record))
            extra = (
                f"{record.get('n_trials', 0)} trials, {record.get('wall', 0):.1f}s"
                if "wall" in record
                else record.get("error", "")
            )
            print(
                f"[{task.name}] seed {seed} {name}: {record['status']} {extra}",
                flush=True,
            )
    if refits:
        refit_task(task, out, args.n_jobs)


def refit_order(records: list[dict]) -> list[tuple[dict, float]]:
    """``(params, refit_fraction)`` of every incumbent, in the order to refit.

    Each run's final incumbent first (the final test accuracy needs only
    those), then the rest earliest first across runs (the time to target
    depends on the early incumbents), so a refit stage stopped part-way has
    the figures that matter most.
    """
    finals = sorted(
        (r["incumbents"][-1] for r in records if r.get("incumbents")),
        key=lambda inc: inc["elapsed"],
    )
    rest = sorted(
        (inc for r in records for inc in r.get("incumbents", [])[:-1]),
        key=lambda inc: inc["elapsed"],
    )
    return [(inc["params"], inc["refit_fraction"]) for inc in finals + rest]


def refit_task(task: Task, out: Path, n_jobs: int) -> None:
    """Offline validation of one task's runs in ``out``, outside every timed
    part: refit each distinct incumbent and score it on the test split."""
    runs_dir = out / "runs" / task.name
    records = [
        json.loads(p.read_text())
        for p in sorted(runs_dir.glob("*-seed*.json"))
        if not p.name.endswith(".spec.json")
    ]
    (out / "refits").mkdir(exist_ok=True)
    start = time.perf_counter()
    refit_incumbents(
        task, refit_order(records), out / "refits" / f"{task.name}.json", n_jobs
    )
    print(
        f"[{task.name}] refits done in {time.perf_counter() - start:.1f}s", flush=True
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help="folder of <dataset>.tsv.gz (default ../shared/datasets)",
    )
    p.add_argument(
        "--tasks",
        default=None,
        help="comma list of <estimator>-<dataset>, estimator in svc, hgb, logreg",
    )
    p.add_argument(
        "--methods",
        default="all",
        help="all, main (all but the default's variants), ours, peers or a "
        "comma list of " + ", ".join(METHODS),
    )
    p.add_argument(
        "--seeds", type=int, default=None, help="number of seeds (0..n-1), default 3"
    )
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help="wall-clock seconds per run, default 600",
    )
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="subsample each dataset to this many rows",
    )
    p.add_argument("--split-seed", type=int, default=SPLIT_SEED)
    p.add_argument(
        "--out", default=None, help="results folder (default benchmarks/results/<date>)"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: one small task, one seed, ~2 min",
    )
    p.add_argument(
        "--resume", action="store_true", help="skip runs that already have a record"
    )
    p.add_argument(
        "--timeout-factor",
        type=float,
        default=2.5,
        help="a run is killed after factor*budget+60 s",
    )
    args = p.parse_args(argv)
    defaults = (
        QUICK
        if args.quick
        else {"tasks": None, "max_rows": None, "seeds": 3, "budget": 600.0}
    )
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.tasks is None:
        p.error("--tasks is required (or --quick)")
    if args.out is None:
        stamp = dt.datetime.now().strftime("%Y-%m-%d")
        args.out = str(RESULTS_DIR / (f"quick-{stamp}" if args.quick else stamp))
    return args


def build_meta(
    command: str,
    args: argparse.Namespace,
    tasks: list[str],
    methods: list[str],
    avail: dict[str, str | None],
) -> dict:
    """``meta.json`` of a results folder: the command, machine and settings.

    The report keeps the records of ``methods`` with a seed below
    ``args.seeds``.
    """
    return {
        "command": command,
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "machine": platform.platform(),
        "processor": platform.machine(),
        "versions": _versions(),
        "budget": args.budget,
        "seeds": args.seeds,
        "n_jobs": args.n_jobs,
        "max_rows": args.max_rows,
        "split_seed": args.split_seed,
        "tasks": tasks,
        "methods": methods,
        "availability": avail,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return 0 when every requested run produced a record."""
    args = parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    methods = resolve_methods(args.methods)
    avail = {m: availability(m) for m in methods}
    for m, reason in avail.items():
        if reason is not None:
            print(f"method {m}: NOT AVAILABLE: {reason}", flush=True)
    command = "python -m benchmarks.run " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    meta = build_meta(command, args, args.tasks.split(","), methods, avail)
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    for task_name in args.tasks.split(","):
        run_task(task_name.strip(), args, methods, out, avail)
    report.build(out)
    print(f"wrote {out / 'summary.md'}", flush=True)
    broken = _broken_runs_of_ours(out, methods, avail)
    for line in broken:
        print(f"FAILED: {line}", flush=True)
    # Peers may be missing (reported above); a run of ours that did not end
    # with a record is a bug, and the smoke test must say so.
    return 1 if broken else 0


def _broken_runs_of_ours(
    out: Path, methods: list[str], avail: dict[str, str | None]
) -> list[str]:
    broken = []
    for name in methods:
        if name not in OURS:
            continue
        if avail[name] is not None:
            # A strategy still being written is reported above, not a bug;
            # one that fails to import is.
            if NOT_WRITTEN not in avail[name]:
                broken.append(f"{name} not available: {avail[name]}")
            continue
        for path in sorted(out.glob(f"runs/*/{name}-seed*.json")):
            if path.name.endswith(".spec.json"):
                continue
            status = json.loads(path.read_text()).get("status")
            if status != "ok":
                broken.append(f"{path.relative_to(out)}: status {status}")
    return broken


if __name__ == "__main__":
    sys.exit(main())
