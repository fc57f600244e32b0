"""The large-data race: the recommended default against the other searches.

Usage (from the repository root)::

    # what would run, and which runs already have a record
    python -m benchmarks.race --out benchmarks/results/<date>-race --dry-run
    # a few tasks at a time, hardest first; stop and restart at will
    python -m benchmarks.race --out benchmarks/results/<date>-race \\
        --tasks svc-covertype_75k,svc-connect_4 --resume
    # the searches now, the untimed refits beside them on idle CPU only (where
    # the kernel groups processes by session, plain ``nice`` does not lower a
    # process below another session's, so lower the whole session's group;
    # never two refit stages on one task at once: they share its cache file)
    python -m benchmarks.race --out benchmarks/results/<date>-race --resume \\
        --refits skip
    setsid sh -c 'echo 19 > /proc/self/autogroup; exec nice -n 19 \\
        python -m benchmarks.race --out benchmarks/results/<date>-race --refits only'
    # race.md and race.csv from whatever has run so far
    python -m benchmarks.race --report benchmarks/results/<date>-race

Every (task, method, seed, budget) is one run of :mod:`benchmarks.run`'s
machinery: a fresh process, the same split for every method, the incumbent
trajectory recorded, every incumbent refit offline and scored on the test
split. One folder holds the whole race, a sub-folder per budget
(``budget-60/``, ``budget-300/``), each an ordinary results folder of
:mod:`benchmarks.run` with its own ``summary.md`` and convergence plots.
``--resume`` skips every run that already has a record, so the race can be
stopped and restarted across sessions. Tasks run in the order given (the
default is hardest first), each task at every budget before the next task.

The tasks: SVC (C, gamma) on the eight classification sets with the most rows
in ``../shared/datasets`` (all rows; pendigits has fewer than 20,000) and
HistGradientBoosting (5 parameters) on the four largest. The methods: the
recommended default ``halving-bayes`` (``HalvingBayesSearchCV``), ``fabolas``,
``multistage``, ``bayes``, scikit-learn's ``halving`` and ``random``, at
``n_jobs=2``. What the report computes and the targets it checks are in
:mod:`benchmarks.race_targets`; ``race.md`` and ``race.csv`` are written by
:mod:`benchmarks.race_report`.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import race_report
from .methods import OURS, availability, resolve_methods
from .run import build_meta, has_record, record_path, refit_task, run_task
from .tasks import SPLIT_SEED, canonical_name, load_task

#: SVC tasks, hardest (largest, slowest fits) first; the targets count these.
SVC_TASKS = (
    "svc-covertype_75k",
    "svc-connect_4",
    "svc-adult",
    "svc-shuttle",
    "svc-credit_default",
    "svc-letter",
    "svc-magic",
    "svc-pendigits",
)
HGB_TASKS = ("hgb-covertype_75k", "hgb-connect_4", "hgb-adult", "hgb-shuttle")
RACE_TASKS = SVC_TASKS + HGB_TASKS
#: The recommended default first; the report compares it with the rest.
RACE_METHODS = ("halving-bayes", "fabolas", "multistage", "bayes", "halving", "random")
RECOMMENDED = RACE_METHODS[0]
BUDGETS = (60.0, 300.0)
SEEDS = (0, 1, 2)


def budget_dir(out: Path, budget: float) -> Path:
    """The results folder of one budget inside the race folder."""
    return out / f"budget-{budget:g}"


@dataclass(frozen=True)
class PlannedRun:
    """One (task, budget, method, seed) of the race and its record, if any."""

    task: str
    budget: float
    method: str
    seed: int
    path: Path

    @property
    def status(self) -> str | None:
        """Status of the record, None when there is none."""
        if not self.path.is_file():
            return None
        return json.loads(self.path.read_text()).get("status")

    @property
    def done(self) -> bool:
        """Whether ``--resume`` skips this run."""
        return has_record(self.path)


def plan(
    out: Path,
    tasks: list[str],
    methods: list[str],
    budgets: list[float],
    seeds: list[int],
) -> list[PlannedRun]:
    """Every run of the race, in the order the race runs them.

    ``tasks`` are canonical task names (:func:`benchmarks.tasks.canonical_name`).
    """
    return [
        PlannedRun(task, b, m, s, record_path(budget_dir(out, b), task, m, s))
        for task in tasks
        for b in budgets
        for s in seeds
        for m in methods
    ]


def _merged_meta(path: Path, new: dict) -> dict:
    """``new`` merged into the folder's existing ``meta.json``: the report
    keeps the methods and seeds of every invocation, not only the last."""
    if not path.is_file():
        return new
    old = json.loads(path.read_text())
    merged = dict(new)
    merged["methods"] = list(dict.fromkeys([*old["methods"], *new["methods"]]))
    merged["tasks"] = list(dict.fromkeys([*old["tasks"], *new["tasks"]]))
    merged["seeds"] = max(old["seeds"], new["seeds"])
    merged["availability"] = {**old["availability"], **new["availability"]}
    return merged


def _list(text: str, kind: type) -> list:
    return [kind(x) for x in text.split(",") if x.strip()]


def _tasks(text: str) -> list[str]:
    groups = {"all": RACE_TASKS, "svc": SVC_TASKS, "hgb": HGB_TASKS}
    names: list[str] = []
    for part in _list(text, str):
        names += list(groups.get(part.strip(), [part.strip()]))
    return list(dict.fromkeys(names))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.race", description=__doc__.split("\n")[0]
    )
    p.add_argument("--out", default=None, help="the race's results folder")
    p.add_argument(
        "--report",
        metavar="FOLDER",
        default=None,
        help="write FOLDER/race.md and race.csv from its records; run nothing",
    )
    p.add_argument("--dry-run", action="store_true", help="list the runs, run none")
    p.add_argument(
        "--tasks",
        default="all",
        help="comma list of tasks, or all, svc, hgb (default all, hardest first: "
        + ", ".join(RACE_TASKS)
        + ")",
    )
    p.add_argument(
        "--methods",
        default=",".join(RACE_METHODS),
        help="comma list (default " + ", ".join(RACE_METHODS) + ")",
    )
    p.add_argument(
        "--budgets",
        default=",".join(f"{b:g}" for b in BUDGETS),
        help="comma list of wall-clock seconds per run (default %(default)s)",
    )
    p.add_argument(
        "--seeds",
        default=",".join(map(str, SEEDS)),
        help="comma list of seeds (default %(default)s)",
    )
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="subsample each dataset (smoke runs only; the race uses all rows)",
    )
    p.add_argument("--data-dir", default=None, help="default ../shared/datasets")
    p.add_argument("--split-seed", type=int, default=SPLIT_SEED)
    p.add_argument(
        "--resume", action="store_true", help="skip runs that already have a record"
    )
    p.add_argument(
        "--refits",
        choices=("each", "skip", "only"),
        default="each",
        help="the offline refits: after each task's runs (each), not at all "
        "(skip: run them later with 'only', for instance beside the searches "
        "at the lowest priority, see the module docstring), or only them "
        "(only: no search)",
    )
    p.add_argument(
        "--timeout-factor",
        type=float,
        default=2.5,
        help="a run is killed after factor*budget+60 s",
    )
    args = p.parse_args(argv)
    if (args.out is None) == (args.report is None):
        p.error("give exactly one of --out (to run) and --report FOLDER")
    try:
        args.tasks = [canonical_name(t, args.data_dir) for t in _tasks(args.tasks)]
        args.methods = resolve_methods(args.methods)
        args.budgets = _list(args.budgets, float)
        args.seeds = _list(args.seeds, int)
    except (ValueError, FileNotFoundError) as exc:
        p.error(str(exc))
    return args


def _run_settings(args: argparse.Namespace, budget: float) -> argparse.Namespace:
    """The settings :func:`benchmarks.run.run_task` reads, for one budget."""
    return argparse.Namespace(
        data_dir=args.data_dir,
        max_rows=args.max_rows,
        split_seed=args.split_seed,
        budget=budget,
        n_jobs=args.n_jobs,
        resume=args.resume,
        timeout_factor=args.timeout_factor,
        seeds=max(args.seeds) + 1,
    )


def dry_run(runs: list[PlannedRun], resume: bool) -> list[str]:
    """One line per planned run: what the race would do with it."""
    lines = []
    for r in runs:
        status = r.status
        if resume and r.done:
            verb = f"skip (record: {status})"
        elif status is not None:
            verb = f"run (replaces record: {status})"
        else:
            verb = "run"
        lines.append(f"{r.task} budget {r.budget:g} seed {r.seed} {r.method}: {verb}")
    todo = [r for r in runs if not (resume and r.done)]
    hours = sum(r.budget for r in todo) / 3600
    lines.append(
        f"{len(todo)} of {len(runs)} runs to do: {hours:.1f} h of budgets "
        "(calibration, refits and overruns come on top)"
    )
    return lines


def report(
    out: Path,
    tasks: Sequence[str] = RACE_TASKS,
    methods: Sequence[str] = RACE_METHODS,
    budgets: Sequence[float] = BUDGETS,
    seeds: Sequence[int] = SEEDS,
) -> Path:
    """Write ``race.md`` and ``race.csv`` (and each budget's ``summary.md``).

    Tasks and budgets with records are added to those given; the targets are
    read over the race's tasks, methods and seeds, so a race stopped part-way
    shows what is missing as incomplete.
    """
    return race_report.build(
        out,
        budgets=list(budgets),
        tasks=list(tasks),
        methods=list(methods),
        seeds=list(seeds),
        recommended=RECOMMENDED,
        counted_tasks=list(SVC_TASKS),
    )


def main(argv: list[str] | None = None) -> int:
    """Run (or list, or report) the race; 0 unless a run of ours broke."""
    args = parse_args(argv)
    if args.report is not None:
        path = report(
            Path(args.report), args.tasks, args.methods, args.budgets, args.seeds
        )
        print(f"wrote {path}", flush=True)
        return 0
    out = Path(args.out).resolve()
    runs = plan(out, args.tasks, args.methods, args.budgets, args.seeds)
    avail = {m: availability(m) for m in args.methods}
    for m, reason in avail.items():
        if reason is not None:
            print(f"method {m}: NOT AVAILABLE: {reason}", flush=True)
    if args.dry_run:
        print("\n".join(dry_run(runs, args.resume)), flush=True)
        return 0
    command = "python -m benchmarks.race " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    if args.refits == "only":
        for task in args.tasks:
            data = load_task(
                task, args.data_dir, max_rows=args.max_rows, split_seed=args.split_seed
            )
            for budget in args.budgets:
                if (budget_dir(out, budget) / "runs" / data.name).is_dir():
                    refit_task(data, budget_dir(out, budget), args.n_jobs)
        print(f"wrote {report(out)}", flush=True)
        return 0
    for task in args.tasks:
        for budget in args.budgets:
            folder = budget_dir(out, budget)
            folder.mkdir(parents=True, exist_ok=True)
            settings = _run_settings(args, budget)
            meta = build_meta(command, settings, [task], args.methods, avail)
            meta = _merged_meta(folder / "meta.json", meta)
            (folder / "meta.json").write_text(json.dumps(meta, indent=1))
            print(f"== {task}, budget {budget:g} s", flush=True)
            run_task(
                task,
                settings,
                args.methods,
                folder,
                avail,
                args.seeds,
                refits=args.refits == "each",
            )
        # After every task, so a stopped race still has its report.
        print(f"wrote {report(out)}", flush=True)
    failed = [r for r in runs if r.method in OURS and r.status == "failed"]
    for r in failed:
        print(f"FAILED: {r.path.relative_to(out)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
