"""``race.md`` and ``race.csv`` of a race folder (see :mod:`benchmarks.race`).

Reads each budget's sub-folder as :mod:`benchmarks.report` does (and rebuilds
its ``summary.md`` and plots), computes the figures and targets of
:mod:`benchmarks.race_targets`, and writes the race's tables beside them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import report
from .metrics import median_spread, target_threshold
from .race_targets import (
    INCOMPLETE,
    NEED,
    RUNNING_STATUSES,
    SOONER_THAN_BAYES,
    evaluate_targets,
    missing,
    run_row,
    summarise,
)


def folder_rows(folder: Path, budget: float) -> tuple[list[dict], dict[str, dict]]:
    """Rows of every recorded run in one budget's folder, and per task its
    size, kind, best test score and target."""
    meta, tasks, runs = report.load_results(folder)
    rows, info = [], {}
    for task, recs in runs.items():
        refits = tasks[task]["refits"]
        recorded = [r for r in recs if r["status"] != "not available"]
        best, winner = report.best_test_score(recorded, refits)
        cls = bool(tasks[task]["classification"])
        threshold = target_threshold(best, cls) if winner else math.nan
        info[task] = {**tasks[task], "best": best, "winner": winner}
        info[task]["threshold"] = threshold
        rows += [
            run_row(r, refits, threshold, budget, int(meta["n_jobs"])) for r in recorded
        ]
    return rows, info


_TARGETS = {
    "a": "(a) final test accuracy >= best other method's - 0.3 pp, every task",
    "b": f"(b) time to target <= halving's on >= {NEED} of the 8 SVC tasks",
    "c": f"(c) >= {SOONER_THAN_BAYES:g}x sooner than bayes on >= {NEED} of the 8 "
    "SVC tasks",
}


def _spread_seconds(values: list[float]) -> str:
    med, lo, hi = median_spread(values)
    if not np.isfinite(med):
        return "-"
    return f"{med:.0f}" if len(values) == 1 else f"{med:.0f} [{lo:.0f}, {hi:.0f}]"


def _median_text(values: list[float], fmt: str) -> str:
    med = median_spread(values)[0]
    return "-" if not np.isfinite(med) else format(med, fmt)


def _verdict(v: str) -> str:
    return f"**{v.upper()}**" if v != INCOMPLETE else v


def _csv_rows(
    cells: dict[tuple[str, float], dict[str, dict]], info: dict
) -> list[dict[str, Any]]:
    out = []
    for (task, budget), by_method in cells.items():
        t_info = info.get((task, budget), {})
        for method, c in by_method.items():
            row = {
                "task": task,
                "budget": budget,
                "method": method,
                "runs": c["runs"],
                "expected": c["expected"],
                "complete": c["complete"],
                "best_test": t_info.get("best", math.nan),
                "target": t_info.get("threshold", math.nan),
            }
            for key in ("final", "ttt", "wall_with_refit"):
                med, lo, hi = median_spread(c[key])
                row.update({f"{key}_median": med, f"{key}_min": lo, f"{key}_max": hi})
            row["reached"] = int(np.isfinite(c["ttt"]).sum())
            for key in ("refit_seconds", "load_before", "load_after", "n_trials"):
                row[f"{key}_median"] = median_spread(c[key])[0]
            out.append(row)
    return out


def _task_lines(
    out: Path,
    task: str,
    budget: float,
    by_method: dict[str, dict],
    t_info: dict | None,
) -> list[str]:
    lines = [f"### {task}, {budget:g} s", ""]
    if not t_info:
        return [*lines, "No records yet.", ""]
    cls = bool(t_info["classification"])
    notes = f" ({'; '.join(t_info['notes'])})" if t_info["notes"] else ""
    lines += [
        f"{t_info['n_search']} search rows, {t_info['n_test']} test rows{notes}. "
        f"Best test score {report.fmt_score(t_info['best'], cls)} "
        f"({t_info['winner']}); target {report.fmt_score(t_info['threshold'], cls)}"
        f"{' (accuracy in %)' if cls else ''}.",
        "",
        "| method | runs | final test | TTT s | wall + refit s | refit s "
        "| load start -> end | trials |",
        "|---" * 8 + "|",
    ]
    for method, c in by_method.items():
        runs = f"{c['runs']}/{c['expected']}"
        if c["refits_pending"]:
            runs += f" ({c['refits_pending']} refits pending)"
        failed = [s for s in c["status"] if s not in RUNNING_STATUSES]
        if failed:
            runs += f" ({len(failed)} {'/'.join(sorted(set(failed)))})"
        cells = [
            method,
            runs,
            report.fmt_spread(c["final"], cls) if c["runs"] else "-",
            report.fmt_time(c["ttt"]) if c["runs"] else "-",
            _spread_seconds(c["wall_with_refit"]),
            _median_text(c["refit_seconds"], ".1f"),
            f"{_median_text(c['load_before'], '.1f')} -> "
            f"{_median_text(c['load_after'], '.1f')}",
            _median_text(c["n_trials"], ".0f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    png = out / f"budget-{budget:g}" / f"convergence-{task}.png"
    if png.is_file():
        lines += ["", f"![{task}, {budget:g} s]({png.relative_to(out)})"]
    return [*lines, ""]


def _header(metas: dict[float, dict], methods: Sequence[str], seeds) -> list[str]:
    lines = ["# The large-data race", ""]
    for budget, meta in sorted(metas.items()):
        versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        lines += [
            f"- budget {budget:g} s: last command `{meta['command']}` ({meta['date']}; "
            f"{meta['cores']} cores, {meta['machine']}; n_jobs {meta['n_jobs']}; "
            f"max_rows {meta['max_rows']}); {versions}",
        ]
        missing = {m: r for m, r in meta["availability"].items() if r is not None}
        lines += [f"  - {m} not available: {r}" for m, r in missing.items()]
    lines += [
        "",
        f"Methods: {', '.join(methods)}; seeds {', '.join(map(str, seeds))}. Final "
        "test: the last incumbent refit on all search data and scored on the test "
        "split, median [min, max] over seeds (accuracy in %). TTT: seconds until the "
        "incumbent is within 0.5 pp of the best test score any method reached on "
        "the task and budget, (reached/runs). Wall + refit: the search's wall time "
        "plus the measured seconds of the final incumbent's refit. Load: the "
        "machine's 1-minute load average when each run started and ended (medians; "
        "the run itself adds about n_jobs, more means other work shared the "
        "cores). A task and budget counts for a target only when every method has "
        "a record for every seed and every incumbent has been refit.",
        "",
    ]
    return lines


def build(
    out: Path,
    *,
    budgets: Sequence[float],
    tasks: Sequence[str],
    methods: Sequence[str],
    seeds: Sequence[int],
    recommended: str,
    counted_tasks: Sequence[str],
) -> Path:
    """Write ``race.md`` and ``race.csv`` into race folder ``out`` (and each
    budget's ``summary.md`` and plots); return the path of ``race.md``.

    Budgets and tasks with records are added to those given.
    """
    out = Path(out)
    found = {
        float(p.name.removeprefix("budget-")): p
        for p in out.glob("budget-*")
        if (p / "meta.json").is_file() and (p / "runs").is_dir()
    }
    budgets = sorted({*budgets, *found})
    rows, info, metas = [], {}, {}
    for budget, folder in sorted(found.items()):
        report.build(folder)
        folder_r, folder_info = folder_rows(folder, budget)
        rows += folder_r
        info.update({(t, budget): v for t, v in folder_info.items()})
        metas[budget] = report.load_results(folder)[0]
    tasks = list(dict.fromkeys([*tasks, *counted_tasks, *(t for t, _ in info)]))
    cells = {
        (t, b): {
            m: summarise(
                [
                    r
                    for r in rows
                    if r["task"] == t and r["budget"] == b and r["method"] == m
                ],
                seeds,
            )
            for m in methods
        }
        for t in tasks
        for b in budgets
    }
    result = evaluate_targets(
        cells, tasks, budgets, methods, recommended, counted_tasks
    )
    pd.DataFrame(_csv_rows(cells, info)).to_csv(out / "race.csv", index=False)

    lines = _header(metas, methods, seeds)
    lines += [
        "## Targets",
        "",
        "| target | " + " | ".join(f"{b:g} s" for b in budgets) + " |",
        "|---" * (1 + len(budgets)) + "|",
    ]
    for key, title in _TARGETS.items():
        verdicts = result["verdicts"][key]
        cells_txt = [f"{_verdict(verdicts[b][0])} ({verdicts[b][1]})" for b in budgets]
        lines.append(f"| {title} | " + " | ".join(cells_txt) + " |")
    v_all = result["verdicts"]["a"]["all"]
    lines += [
        "",
        f"(a) over every budget: {_verdict(v_all[0])} ({v_all[1]}). "
        f"Recommended default: `{recommended}`.",
        "",
        "Per task: (a) the default's median final test accuracy against the best "
        "other method's, (b) and (c) median times to target and their ratio "
        "(the HGB tasks are shown, not counted).",
        "",
        "| task | budget s | (a) final accuracy | (b) vs halving | (c) vs bayes |",
        "|---|---|---|---|---|",
    ]
    for (task, budget), checks in result["per_task"].items():
        lacking = missing(cells[(task, budget)], [*methods, recommended])
        if all(c["runs"] == 0 for c in cells[(task, budget)].values()):
            txt = ["no records yet", "", ""]
        else:
            txt = [
                f"{checks[k][0]}: {checks[k][1]}"
                if checks[k][0] != INCOMPLETE
                else "incomplete: " + ", ".join(lacking)
                for k in ("a", "b", "c")
            ]
            if task not in counted_tasks:
                txt[1:] = [f"({t})" for t in txt[1:]]
        lines.append(f"| {task} | {budget:g} | " + " | ".join(txt) + " |")
    lines.append("")
    for task in tasks:
        lines += [f"## {task}", ""]
        for budget in budgets:
            lines += _task_lines(
                out, task, budget, cells[(task, budget)], info.get((task, budget))
            )
    path = out / "race.md"
    path.write_text("\n".join(lines) + "\n")
    return path
