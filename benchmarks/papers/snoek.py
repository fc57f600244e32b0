"""Snoek, Larochelle & Adams (2012), "Practical Bayesian optimization of machine
learning algorithms": its three comparisons with ``BayesSearchCV``.

Usage (from the repository root)::

    python -m benchmarks.papers.snoek --out DIR [--quick] [--resume]
    python -m benchmarks.papers.snoek --out DIR --report-only

The paper (section 4) compares, by the best validation objective found so far:

- integrated EI (GP EI MCMC) against EI under a point estimate of the GP
  hyperparameters (GP EI Opt), against the number of function evaluations;
- EI per second against EI, against wall-clock time;
- several workers proposing with "fantasies" of the running evaluations
  (Nx GP EI MCMC) against one, against wall-clock time.

Here the same four variants of ``BayesSearchCV`` run on three tasks of the
harness (:mod:`benchmarks.tasks`), each with ``max_time`` = ``--budget`` and
no trial limit, 5-fold CV, one fresh process per run, seeds ``0 .. --seeds - 1``:

=============  ===========================================================
``ei-mcmc``    ``hyperparameter_sampling="mcmc"``, ``acquisition="ei"``, 1 job
``ei-map``     ``hyperparameter_sampling="map"``, ``acquisition="ei"``, 1 job
``eips-mcmc``  ``hyperparameter_sampling="mcmc"``, ``"ei_per_second"``, 1 job
``ei-mcmc-2w`` as ``ei-mcmc`` with ``n_jobs=2`` (the asynchronous loop)
=============  ===========================================================

Each run writes one JSON record (``runs/<task>/<variant>-seed<k>.json``:
finished trials with their time and CV score, wall time, the machine's load
averages before and after). The report, ``summary.md`` (also printed), is
rebuilt from whatever records exist, so a stopped run continues with
``--resume``. Its three tables:

1. integrated vs point-estimate EI: median best CV score after the first N
   trials, N the smallest trial count among the task's ``ei-mcmc`` and
   ``ei-map`` runs, and the paired difference per seed;
2. EI per second vs EI: median seconds until the incumbent CV score reaches
   the task's target (0.5 pp below the best CV score any run of the task
   found) and the median best CV score at the end of the budget;
3. 1 vs 2 workers: trials per second and best CV score at equal trial counts,
   by :func:`benchmarks.studies.throughput.pair_row`.

CV scores only: the paper reports the validation objective, so nothing is
refit on the test split.
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
import traceback
import warnings
from pathlib import Path
from typing import Any

from .. import REPO_ROOT
from ..execute import _busy_seconds, _trials_ours
from ..run import has_record
from ..tasks import load_task, space_ours
from .snoek_report import write_report

#: Variant name -> (paper's label, BayesSearchCV settings).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "ei-mcmc": (
        "GP EI MCMC",
        {"hyperparameter_sampling": "mcmc", "acquisition": "ei", "n_jobs": 1},
    ),
    "ei-map": (
        "GP EI Opt",
        {"hyperparameter_sampling": "map", "acquisition": "ei", "n_jobs": 1},
    ),
    "eips-mcmc": (
        "GP EI per Second",
        {
            "hyperparameter_sampling": "mcmc",
            "acquisition": "ei_per_second",
            "n_jobs": 1,
        },
    ),
    "ei-mcmc-2w": (
        "2x GP EI MCMC",
        {"hyperparameter_sampling": "mcmc", "acquisition": "ei", "n_jobs": 2},
    ),
}
TASKS = ("svc-magic", "logreg-adult", "svc-letter")
FULL = {"tasks": TASKS, "max_rows": 2000, "seeds": 5, "budget": 45.0}
QUICK = {"tasks": ("svc-magic",), "max_rows": 300, "seeds": 1, "budget": 3.0}
# No trial limit: the time budget is what every variant shares.
_UNBOUNDED_N_ITER = 100_000


# ----------------------------------------------------------------------
# One run (in a fresh interpreter)
# ----------------------------------------------------------------------
def run_one(spec: dict[str, Any]) -> dict[str, Any]:
    """Fit one variant on one task in this process; return its record."""
    from skbayes_search import BayesSearchCV

    warnings.filterwarnings("ignore")
    task = load_task(spec["task"], spec.get("data_dir"), max_rows=spec["max_rows"])
    settings = dict(VARIANTS[spec["variant"]][1])
    search = BayesSearchCV(
        task.estimator(),
        space_ours(task.params),
        n_iter=_UNBOUNDED_N_ITER,
        max_time=float(spec["budget"]),
        refit=False,
        random_state=int(spec["seed"]),
        **settings,
    )
    t0 = time.time()
    search.fit(task.X_search, task.y_search)
    wall = time.time() - t0
    trials = _trials_ours(search)
    return {
        "status": "ok",
        "wall": wall,
        "busy": _busy_seconds(search.cv_results_, int(search.n_splits_)),
        "n_trials": len(trials),
        "n_rows": len(task.y_search),
        "settings": settings,
        "trials": trials,
    }


def _launch(spec: dict, path: Path, timeout: float) -> dict:
    """Run ``spec`` in a fresh interpreter (own session, so a kill on timeout
    also ends its worker processes) and return its record with the load."""
    spec_path = path.with_suffix(".spec.json")
    spec_path.write_text(json.dumps(spec, indent=1))
    tmp = path.with_suffix(".part")
    tmp.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "benchmarks.papers.snoek", "--execute"]
    cmd += [str(spec_path), str(tmp)]
    load_before = os.getloadavg()
    with open(path.with_suffix(".log"), "w") as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if tmp.is_file():
        record = json.loads(tmp.read_text())
        tmp.unlink()
    else:
        record = {"status": "failed", "error": f"no record after {timeout:.0f} s"}
    record.update(
        spec=spec,
        load_before=load_before[0],
        load_after=os.getloadavg()[0],
        loadavg_before=list(load_before),
        loadavg_after=list(os.getloadavg()),
    )
    return record


def record_path(out: Path, task: str, variant: str, seed: int) -> Path:
    """Where the record of one (variant, task, seed) run goes."""
    return out / "runs" / task / f"{variant}-seed{seed}.json"


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (see the module docstring) and write its report."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--execute"]:
        spec = json.loads(Path(argv[1]).read_text())
        try:
            record = run_one(spec)
        except Exception as exc:  # a failed run is a result to report
            record = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"}
            record["traceback"] = traceback.format_exc()
        Path(argv[2]).write_text(json.dumps(record))
        return 0
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.papers.snoek",
        description=__doc__.split("\n")[0],
    )
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--quick", action="store_true", help="tiny smoke run, < 60 s")
    p.add_argument("--tasks", default=None, help="comma list of harness tasks")
    p.add_argument("--max-rows", type=int, default=None)
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--budget", type=float, default=None, help="max_time, seconds")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--data-dir", default=None, help="default ../shared/datasets")
    p.add_argument("--resume", action="store_true", help="keep existing records")
    p.add_argument("--report-only", action="store_true", help="run nothing")
    args = p.parse_args(argv)
    base = QUICK if args.quick else FULL
    tasks = args.tasks.split(",") if args.tasks else list(base["tasks"])
    max_rows = args.max_rows or base["max_rows"]
    seeds = args.seeds or base["seeds"]
    budget = args.budget or base["budget"]
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        p.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    out = args.out.resolve()
    if not args.report_only:
        (out / "runs").mkdir(parents=True, exist_ok=True)
        meta = {
            "command": "python -m benchmarks.papers.snoek " + shlex.join(argv),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "cores": os.cpu_count(),
            "machine": platform.platform(),
            "max_rows": max_rows,
            "seeds": seeds,
            "budget": budget,
        }
        (out / "meta.json").write_text(json.dumps(meta, indent=1))
        # Seed by seed, so a run stopped early leaves whole seeds behind.
        for seed in range(seeds):
            for task in tasks:
                for variant in variants:
                    path = record_path(out, task, variant, seed)
                    if args.resume and has_record(path):
                        continue
                    path.parent.mkdir(parents=True, exist_ok=True)
                    spec = {"task": task, "data_dir": args.data_dir, "seed": seed}
                    spec.update(variant=variant, max_rows=max_rows, budget=budget)
                    record = _launch(spec, path, timeout=3 * budget + 60)
                    path.write_text(json.dumps(record))
                    status = record["status"]
                    detail = record.get("error", f"{record.get('n_trials')} trials")
                    print(f"{task} {variant} seed {seed}: {status}, {detail}, "
                          f"load {record['load_after']:.1f}", flush=True)  # fmt: skip
    write_report(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
