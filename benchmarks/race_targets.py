"""The race's figures and targets: pure functions on run records (no I/O).

For every (task, budget, method) of the race (:mod:`benchmarks.race`), over
the seeds: the final answer's test accuracy (the last incumbent refit on all
the search data), the time to target (the first time the incumbent's test
accuracy is within 0.5 pp of the best any method reached on that task and
budget), the wall time with the final incumbent's measured refit seconds
added (the searches run with ``refit=False`` and are refit offline), and the
machine's 1-minute load when each run started and ended.

The targets, each met, missed or incomplete:

(a) on every task and budget, the recommended default's median final test
    accuracy is at least the best other method's median minus 0.3 pp;
(b) per budget, its median time to target is at most ``halving``'s on at
    least 6 of the 8 SVC tasks;
(c) per budget, it reaches the target at least 10x sooner than ``bayes`` (by
    median) on at least 6 of the 8 SVC tasks.

A task and budget counts only when every method has a record for every seed
and the refits it reads are done: for (a) each run's final incumbent; for (b)
and (c) every incumbent, since the target depends on all of them. Otherwise
it is incomplete, never met, with one exception: pending refits can only add
test scores, so the target can only rise, and a run whose incumbents are all
refit and never reached it never will; when that holds for most of the
default's seeds, (b) and (c) are missed already. A run that failed, or ended
without an incumbent, is a finished result: no final accuracy (worst) and
never at the target.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import report
from .metrics import median_spread
from .refit import incumbent_key

MET, MISSED, INCOMPLETE = "met", "missed", "incomplete"
#: (a): how far below the best other method the default may finish (0.3 pp).
FINAL_TOLERANCE = 0.003
#: (b), (c): counted tasks that must meet the target, per budget.
NEED = 6
#: (c): how many times sooner than ``bayes``.
SOONER_THAN_BAYES = 10.0
RUNNING_STATUSES = ("ok", "timed out")


def run_row(
    rec: dict, refits: dict, threshold: float, budget: float, n_jobs: int
) -> dict[str, Any]:
    """The race's figures of one run's record.

    ``final`` is the test score of the last incumbent (NaN while its refit is
    pending, ``-inf`` when the run gave no answer); ``wall_with_refit`` adds
    that refit's measured seconds to the search's wall time; ``scored`` says
    whether every incumbent has its test score.
    """
    row = {
        "task": rec["task"],
        "budget": float(budget),
        "method": rec["method"],
        "seed": int(rec["seed"]),
        "status": rec["status"],
        "n_trials": rec.get("n_trials", 0),
        "wall": rec.get("wall", math.nan),
        "load_before": rec.get("load_before", math.nan),
        "load_after": rec.get("load_after", math.nan),
    }
    incumbents = rec.get("incumbents", [])
    if rec["status"] not in RUNNING_STATUSES or not incumbents:
        return {
            **row,
            "final": -math.inf,
            "ttt": math.inf,
            "refit_seconds": math.nan,
            "wall_with_refit": math.nan,
            "scored": True,
        }
    m = report.run_metrics(rec, refits, threshold, budget, n_jobs)
    last = incumbents[-1]
    hit = refits.get(incumbent_key(last["params"], last["refit_fraction"]))
    refit_seconds = hit["fit_seconds"] if hit else math.nan
    values = report.incumbent_test_curve(rec, refits)[1]
    return {
        **row,
        "final": m["final"],
        "ttt": m["ttt"],
        "refit_seconds": refit_seconds,
        "wall_with_refit": row["wall"] + refit_seconds,
        "scored": bool(np.all(np.isfinite(values))),
    }


def summarise(rows: list[dict], seeds: Sequence[int]) -> dict[str, Any]:
    """One (task, budget, method): per-seed lists and whether it is complete
    (a record for every seed, every incumbent refit)."""
    mine = sorted((r for r in rows if r["seed"] in seeds), key=lambda r: r["seed"])
    return {
        "runs": len(mine),
        "expected": len(seeds),
        "complete": len(mine) == len(seeds) and all(r["scored"] for r in mine),
        "refits_pending": sum(not r["scored"] for r in mine),
        "finals_pending": sum(bool(np.isnan(r["final"])) for r in mine),
        "scored": [r["scored"] for r in mine],
        **{
            key: [r[key] for r in mine]
            for key in (
                "final",
                "ttt",
                "wall_with_refit",
                "refit_seconds",
                "load_before",
                "load_after",
                "n_trials",
                "status",
            )
        },
    }


def _median(values: list[float]) -> float:
    return median_spread(values)[0]


def missing(
    cells: dict[str, dict], methods: Sequence[str], refits: str = "all"
) -> list[str]:
    """What one task and budget still lacks: runs without a record, refits
    not done (``refits``: ``"all"``, only the ``"finals"``, or ``"none"``);
    empty when complete."""
    out = []
    for m in dict.fromkeys(methods):
        cell = cells.get(m)
        if cell is None:
            out.append(f"{m} no runs")
        elif cell["runs"] < cell["expected"]:
            out.append(f"{m} {cell['runs']}/{cell['expected']} runs")
        elif refits == "all" and cell["refits_pending"]:
            out.append(f"{m} refits pending")
        elif refits == "finals" and cell["finals_pending"]:
            out.append(f"{m} final refits pending")
    return out


def _pp(x: float) -> str:
    return f"{100 * x:.2f} %" if np.isfinite(x) else "no answer"


def _secs(x: float) -> str:
    return "never" if not np.isfinite(x) else f"{x:.3g} s"


def final_accuracy_check(
    cells: dict[str, dict], methods: Sequence[str], recommended: str
) -> tuple[str, str]:
    """(a) on one task and budget: verdict and the figures behind it."""
    if missing(cells, [*methods, recommended], refits="finals"):
        return INCOMPLETE, ""
    ours = _median(cells[recommended]["final"])
    best, who = max(
        (_median(cells[m]["final"]), m) for m in methods if m != recommended
    )
    met = ours >= best - FINAL_TOLERANCE - 1e-12
    gap = f"{100 * (ours - best):+.2f} pp" if np.isfinite(ours - best) else "n/a"
    return (MET if met else MISSED), f"{_pp(ours)} vs {who} {_pp(best)} ({gap})"


def sooner_check(
    cells: dict[str, dict],
    methods: Sequence[str],
    recommended: str,
    peer: str,
    factor: float,
) -> tuple[str, str]:
    """(b) with ``factor=1`` and (c) with ``factor=10`` on one task and budget:
    whether the median time to target is at least ``factor`` times sooner
    than ``peer``'s (a default that never reaches the target never is)."""
    if missing(cells, [*methods, recommended, peer]):
        if missing(cells, [*methods, recommended, peer], refits="none"):
            return INCOMPLETE, ""
        cell = cells[recommended]
        settled = sum(
            done and not np.isfinite(t) for done, t in zip(cell["scored"], cell["ttt"])
        )
        if 2 * settled <= cell["expected"]:
            return INCOMPLETE, ""
        return MISSED, (
            f"never ({settled} of {cell['expected']} runs fully refit, none at "
            "the target; other refits pending)"
        )
    ours = _median(cells[recommended]["ttt"])
    theirs = _median(cells[peer]["ttt"])
    ratio = theirs / ours if ours > 0 else math.inf
    met = bool(np.isfinite(ours) and ratio >= factor)
    if np.isfinite(ratio):
        text = f"{_secs(ours)} vs {peer} {_secs(theirs)} ({ratio:.2f}x)"
    else:
        text = f"{_secs(ours)} vs {peer} {_secs(theirs)}"
    return (MET if met else MISSED), text


def all_of(verdicts: Sequence[str]) -> str:
    """Met when every verdict is met; missed as soon as one is missed."""
    if MISSED in verdicts:
        return MISSED
    return INCOMPLETE if INCOMPLETE in verdicts or not verdicts else MET


def at_least(verdicts: Sequence[str], need: int) -> str:
    """Met when ``need`` verdicts are met; missed when too few can still be."""
    n_met = verdicts.count(MET)
    if n_met >= need:
        return MET
    if n_met + verdicts.count(INCOMPLETE) < need:
        return MISSED
    return INCOMPLETE


def _count_text(verdicts: Sequence[str]) -> str:
    return ", ".join(f"{verdicts.count(v)} {v}" for v in (MET, MISSED, INCOMPLETE))


def evaluate_targets(
    cells: dict[tuple[str, float], dict[str, dict]],
    tasks: Sequence[str],
    budgets: Sequence[float],
    methods: Sequence[str],
    recommended: str,
    counted_tasks: Sequence[str],
) -> dict[str, Any]:
    """Every target on every task and budget, and the verdicts.

    Parameters
    ----------
    cells : dict
        ``(task, budget) -> method ->`` :func:`summarise` output.
    tasks, budgets, methods : sequences
        What the race should hold; what is not in ``cells`` is incomplete.
    recommended : str
        The method the targets are about.
    counted_tasks : sequence of str
        The tasks (b) and (c) count (the others are shown, not counted).

    Returns
    -------
    result : dict
        ``per_task[(task, budget)] = {"a"|"b"|"c": (verdict, figures)}`` and
        ``verdicts[target][budget] = (verdict, counts)``, plus ``verdicts["a"]
        ["all"]`` over every budget.
    """
    checks: dict[str, Callable[[dict], tuple[str, str]]] = {
        "a": lambda c: final_accuracy_check(c, methods, recommended),
        "b": lambda c: sooner_check(c, methods, recommended, "halving", 1.0),
        "c": lambda c: sooner_check(
            c, methods, recommended, "bayes", SOONER_THAN_BAYES
        ),
    }
    tasks = list(dict.fromkeys([*tasks, *counted_tasks]))
    per_task = {
        (t, b): {k: check(cells.get((t, b), {})) for k, check in checks.items()}
        for t in tasks
        for b in budgets
    }
    verdicts: dict[str, dict] = {"a": {}, "b": {}, "c": {}}
    for b in budgets:
        a = [per_task[(t, b)]["a"][0] for t in tasks]
        verdicts["a"][b] = (all_of(a), _count_text(a))
        for k in ("b", "c"):
            v = [per_task[(t, b)][k][0] for t in counted_tasks]
            verdicts[k][b] = (at_least(v, NEED), _count_text(v))
    every = [per_task[key]["a"][0] for key in per_task]
    verdicts["a"]["all"] = (all_of(every), _count_text(every))
    return {"per_task": per_task, "verdicts": verdicts}
