"""Write ``trajectories.csv``, ``summary.md`` and the convergence plots.

Reads everything from a results folder written by :mod:`benchmarks.run`
(``meta.json``, ``runs/<task>/*.json``, ``sizing/``, ``refits/``), so the
report can be rebuilt without re-running anything::

    python -m benchmarks.report benchmarks/results/<date>
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .methods import METHODS, OURS, PEERS
from .metrics import (
    BUDGET_FRACTIONS,
    median_spread,
    overhead_share,
    score_at,
    step_on_grid,
    target_threshold,
    time_to_target,
)
from .refit import incumbent_key

_OK = ("ok", "timed out")


def load_results(out: Path) -> tuple[dict, dict[str, dict], dict[str, list[dict]]]:
    """``meta``, per-task info (with its ``refits`` and ``sizing``) and per-task
    records of the methods and seeds ``meta.json`` names, from folder ``out``."""
    meta = json.loads((out / "meta.json").read_text())
    wanted = set(meta["methods"])
    tasks, runs = {}, {}
    for task_dir in sorted((out / "runs").iterdir()):
        if not (task_dir / "task.json").is_file():
            continue
        info = json.loads((task_dir / "task.json").read_text())
        refits_path = out / "refits" / f"{task_dir.name}.json"
        info["refits"] = (
            json.loads(refits_path.read_text()) if refits_path.is_file() else {}
        )
        sizing_path = out / "sizing" / f"{task_dir.name}.json"
        info["sizing"] = (
            json.loads(sizing_path.read_text()) if sizing_path.is_file() else {}
        )
        recs = []
        for p in sorted(task_dir.glob("*-seed*.json")):
            if p.name.endswith(".spec.json"):
                continue
            rec = json.loads(p.read_text())
            if rec["method"] in wanted and rec["seed"] < meta["seeds"]:
                recs.append(rec)
        tasks[task_dir.name] = info
        runs[task_dir.name] = recs
    return meta, tasks, runs


def incumbent_test_curve(rec: dict, refits: dict) -> tuple[np.ndarray, np.ndarray]:
    """(time, incumbent test score) steps of one run (NaN where not refit yet)."""
    times, values = [], []
    for inc in rec.get("incumbents", []):
        hit = refits.get(incumbent_key(inc["params"], inc["refit_fraction"]))
        times.append(inc["elapsed"])
        values.append(hit["test_score"] if hit else math.nan)
    return np.asarray(times, dtype=float), np.asarray(values, dtype=float)


def best_test_score(recs: list[dict], refits: dict) -> tuple[float, str | None]:
    """Best test score any incumbent of ``recs`` reached, and its method
    (NaN and None when none is scored); the time-to-target is read from it."""
    scored = [
        (v, r["method"])
        for r in recs
        for v in incumbent_test_curve(r, refits)[1]
        if np.isfinite(v)
    ]
    return max(scored, key=lambda x: x[0]) if scored else (math.nan, None)


def run_metrics(
    rec: dict, refits: dict, threshold: float, budget: float, n_jobs: int
) -> dict[str, Any]:
    """Metrics of one run (see ``shared/docs/benchmark.md``)."""
    t, v = incumbent_test_curve(rec, refits)
    row = {
        "ttt": time_to_target(t, v, threshold),
        "final": float(v[-1]) if v.size else math.nan,
        "overhead": overhead_share(
            rec.get("wall", math.nan), rec.get("busy", math.nan), n_jobs
        ),
        "wall": rec.get("wall", math.nan),
        "n_trials": rec.get("n_trials", 0),
        "load": rec.get("load_after", math.nan),
    }
    for f in BUDGET_FRACTIONS:
        row[f"at{f:g}"] = score_at(t, v, f * budget)
    return row


def trajectories_frame(tasks: dict, runs: dict) -> pd.DataFrame:
    """One row per finished trial, with the incumbent after it."""
    rows = []
    for task, recs in runs.items():
        refits = tasks[task]["refits"]
        for rec in recs:
            incs = rec.get("incumbents", [])
            inc_times = np.array([i["elapsed"] for i in incs], dtype=float)
            for k, trial in enumerate(rec.get("trials", [])):
                # The incumbent is known once its trial has finished.
                pos = (
                    np.searchsorted(inc_times, trial["elapsed"] + 1e-9, side="right")
                    - 1
                )
                inc = incs[pos] if pos >= 0 else None
                hit = (
                    refits.get(incumbent_key(inc["params"], inc["refit_fraction"]))
                    if inc
                    else None
                )
                rows.append(
                    {
                        "task": task,
                        "method": rec["method"],
                        "seed": rec["seed"],
                        "trial": k,
                        "elapsed": trial["elapsed"],
                        "trial_cv_score": trial["score"],
                        "resource_fraction": trial["fraction"],
                        "params": json.dumps(trial["params"], sort_keys=True),
                        "incumbent_cv_score": inc["cv_score"] if inc else math.nan,
                        "incumbent_test_score": hit["test_score"] if hit else math.nan,
                        "incumbent_refit_fraction": inc["refit_fraction"]
                        if inc
                        else math.nan,
                        "incumbent_params": json.dumps(inc["params"], sort_keys=True)
                        if inc
                        else "",
                    }
                )
    return pd.DataFrame(rows)


def fmt_score(x: float, classification: bool) -> str:
    """Accuracy in % with two decimals, a regression score with four; "-"
    when not finite."""
    if not np.isfinite(x):
        return "-"
    return f"{100 * x:.2f}" if classification else f"{x:.4f}"


def fmt_spread(vals: list[float], classification: bool) -> str:
    """Scores over seeds as "median [min, max]"."""
    med, lo, hi = median_spread(vals)
    if np.isnan(med):
        return "-"
    if np.count_nonzero(~np.isnan(vals)) == 1:
        return fmt_score(med, classification)
    lo_txt, hi_txt = fmt_score(lo, classification), fmt_score(hi, classification)
    return f"{fmt_score(med, classification)} [{lo_txt}, {hi_txt}]"


# Columns shown as a plain median: key and decimals.
_PLAIN_COLUMNS = (("overhead", 2), ("wall", 0), ("load", 1))


def _fmt_number(vals: list[float], decimals: int) -> str:
    med = median_spread(vals)[0]
    return "-" if np.isnan(med) else f"{med:.{decimals}f}"


def fmt_time(vals: list[float]) -> str:
    """Times to target over seeds as "median [min, max] (reached/runs)"."""
    med, lo, hi = median_spread(vals)
    if np.isnan(med):
        return "-"

    def one(x: float) -> str:
        if not np.isfinite(x):
            return "never"
        return f"{x:.0f}" if x >= 100 else f"{x:.3g}"

    body = one(med) if len(vals) == 1 else f"{one(med)} [{one(lo)}, {one(hi)}]"
    return f"{body} ({int(np.isfinite(vals).sum())}/{len(vals)})"


def _compare(
    ours: list[dict], peer: list[dict], classification: bool
) -> tuple[str, bool]:
    """Cell of the ratio table and whether the peer did better.

    The peer did better when it reached the target sooner (or at all when we
    did not), or when its median score at 100 % of the budget is higher by
    more than the target tolerance.
    """
    t_o = median_spread([r["ttt"] for r in ours])[0]
    t_p = median_spread([r["ttt"] for r in peer])[0]
    s_o = median_spread([r["at1"] for r in ours])[0]
    s_p = median_spread([r["at1"] for r in peer])[0]
    if np.isfinite(s_o) and np.isfinite(s_p):
        gap = s_p - target_threshold(s_p, classification)
        delta = s_o - s_p
        d_txt = f"{100 * delta:+.2f} pp" if classification else f"{delta:+.4f}"
    else:
        gap, delta, d_txt = math.inf, math.nan, "score n/a"
    if np.isfinite(t_o) and np.isfinite(t_p):
        ratio = t_p / t_o if t_o > 0 else math.inf
        t_txt = f"{ratio:.2f}x sooner" if ratio >= 1 else f"{1 / ratio:.2f}x later"
        peer_faster = ratio < 1
    elif np.isfinite(t_o):
        t_txt, peer_faster = "peer never reached", False
    elif np.isfinite(t_p):
        t_txt, peer_faster = "ours never reached", True
    else:
        t_txt, peer_faster = "neither reached", False
    peer_better = peer_faster or bool(delta < -gap)
    cell = f"{t_txt}, {d_txt}"
    return (f"**PEER BETTER**: {cell}" if peer_better else cell), peer_better


def _header(meta: dict) -> list[str]:
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        "# Benchmark summary",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; machine: {meta['cores']} cores, {meta['machine']}",
        f"- budget: {meta['budget']:g} s wall clock per run; seeds: {meta['seeds']}; "
        f"n_jobs: {meta['n_jobs']}",
        f"- versions: {versions}",
        "",
        "Scores: the incumbent's test score after refitting on the full search data "
        "(accuracy in %, or R2). TTT: seconds until the incumbent is within 0.5 pp "
        "(regression: 1 % relative) of the best test score any method reached on the "
        "task, (k/n) runs reached it. @x%: score at x % of the budget. Cells: median "
        "[min, max] over seeds. Overhead: 1 - (fit+score worker-seconds) / "
        "(n_jobs * wall). Load: the machine's 1-minute load average when the run "
        "ended (the run itself contributes about n_jobs; more means other work "
        "competed for the cores and the times are inflated).",
        "",
    ]
    missing = {m: r for m, r in meta["availability"].items() if r is not None}
    if missing:
        lines += ["## Methods not available", "", "| method | reason |", "|---|---|"]
        lines += [f"| {m} | {r} |" for m, r in missing.items()]
        lines.append("")
    return lines


def _sizing_line(sizing: dict) -> str:
    model, h = sizing["fold_time_model"], sizing["halving"]
    return (
        f"Peers without a time budget were sized by a "
        f"{model['calibration_seconds']:.1f} s calibration ({model['n_fits']} fits up "
        f"to {model['largest_subset']} rows; fold seconds ~ {model['a']:.3g} * "
        f"rows^{model['b']:.2f}, worker start {model['startup']:.1f} s): random "
        f"n_iter={sizing['random_n_iter']}, grid {sizing['grid_points']} points/dim, "
        f"halving n_candidates={h['n_candidates']}, min_resources="
        f"{h['min_resources']} (predicted {h['predicted_seconds']:.0f} s)."
    )


def _task_section(
    out: Path, task: str, info: dict, recs: list[dict], meta: dict
) -> tuple[list[str], list[str]]:
    """Markdown of one task and the (ours, peer) pairs the peer won."""
    cls = bool(info["classification"])
    refits = info["refits"]
    budget, n_jobs = float(meta["budget"]), int(meta["n_jobs"])
    kind = f", {info['n_classes']} classes" if cls else ", regression"
    notes = f" ({'; '.join(info['notes'])})" if info["notes"] else ""
    lines = [
        f"## {task}",
        "",
        f"{info['n_search']} search rows, {info['n_test']} test rows, "
        f"{info['n_features']} features{kind}{notes}.",
    ]
    best, winner = best_test_score(recs, refits)
    if winner is None:
        return [*lines, "", "No run produced a scored incumbent.", ""], []
    threshold = target_threshold(best, cls)
    lines.append(
        f"Best test score {fmt_score(best, cls)} ({winner}); "
        f"target {fmt_score(threshold, cls)}."
    )
    if info["sizing"]:
        lines.append(_sizing_line(info["sizing"]))
    fractions = " | ".join(f"@{int(100 * f)}%" for f in BUDGET_FRACTIONS)
    lines += [
        "",
        f"| method | status | trials | TTT s | {fractions} | final | overhead "
        "| wall s | load |",
        "|---" * (8 + len(BUDGET_FRACTIONS)) + "|",
    ]
    per_method: dict[str, list[dict]] = {}
    not_run = []
    for name in meta["methods"]:
        mine = [r for r in recs if r["method"] == name]
        ok = [r for r in mine if r["status"] in _OK]
        if mine and not ok:
            not_run.append(f"{name} ({mine[0]['status']}: {mine[0].get('error', '')})")
        if not ok:
            continue
        m = [run_metrics(r, refits, threshold, budget, n_jobs) for r in ok]
        per_method[name] = m
        cells = [
            name,
            ", ".join(sorted({r["status"] for r in mine})),
            f"{np.median([x['n_trials'] for x in m]):.0f}",
            fmt_time([x["ttt"] for x in m]),
            *[fmt_spread([x[f"at{f:g}"] for x in m], cls) for f in BUDGET_FRACTIONS],
            fmt_spread([x["final"] for x in m], cls),
            *[_fmt_number([x[k] for x in m], d) for k, d in _PLAIN_COLUMNS],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if not_run:
        lines += ["", "Not run on this task: " + "; ".join(not_run) + "."]
    losses = []
    ours = [m for m in OURS if m in per_method]
    peers = [m for m in PEERS if m in per_method]
    if ours and peers:
        lines += [
            "",
            "Ours against each peer: median peer TTT / median our TTT, and our median "
            "score at 100 % of the budget minus the peer's.",
            "",
            "| ours \\ peer | " + " | ".join(peers) + " |",
            "|---" * (1 + len(peers)) + "|",
        ]
        for o in ours:
            cells = []
            for p in peers:
                cell, lost = _compare(per_method[o], per_method[p], cls)
                cells.append(cell)
                if lost:
                    losses.append(f"{task}: {o} vs {p} ({cell.split(': ', 1)[1]})")
            lines.append(f"| {o} | " + " | ".join(cells) + " |")
    png = _plot(out, task, recs, refits, budget, threshold, cls)
    if png:
        lines += ["", f"![convergence {task}]({png.name})"]
    return [*lines, ""], losses


def build(out: str | Path) -> None:
    """Write ``trajectories.csv``, ``summary.md`` and ``convergence-<task>.png``."""
    out = Path(out)
    meta, tasks, runs = load_results(out)
    trajectories_frame(tasks, runs).to_csv(out / "trajectories.csv", index=False)
    lines = _header(meta)
    losses = []
    for task, recs in runs.items():
        section, lost = _task_section(out, task, tasks[task], recs, meta)
        lines += section
        losses += lost
    lines += ["## Where a peer beat us", ""]
    lines += [f"- {x}" for x in losses] if losses else ["- nowhere in this run"]
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def _plot(
    out: Path,
    task: str,
    recs: list[dict],
    refits: dict,
    budget: float,
    threshold: float,
    cls: bool,
) -> Path | None:
    """Incumbent test score against wall time: median over seeds and range."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    curves: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for rec in recs:
        if rec["status"] in _OK and rec.get("incumbents"):
            curves.setdefault(rec["method"], []).append(
                incumbent_test_curve(rec, refits)
            )
    if not curves:
        return None
    t_min = min(c[0][0] for cs in curves.values() for c in cs if c[0].size)
    t_max = max(
        max(c[0][-1] for cs in curves.values() for c in cs if c[0].size), budget
    )
    grid = np.geomspace(max(t_min, 1e-2), t_max, 300)
    fig, ax = plt.subplots(figsize=(8, 5))
    scale = 100 if cls else 1
    medians = []
    for name in [m for m in METHODS if m in curves]:
        ys = np.array([step_on_grid(t, v, grid) for t, v in curves[name]]) * scale
        with np.errstate(all="ignore"):
            med = np.nanmedian(ys, axis=0) if ys.shape[0] > 1 else ys[0]
        style = "-" if METHODS[name].ours else "--"
        (line,) = ax.plot(grid, med, style, drawstyle="steps-post", label=name)
        if ys.shape[0] > 1:
            ax.fill_between(
                grid,
                np.nanmin(ys, axis=0),
                np.nanmax(ys, axis=0),
                step="post",
                alpha=0.15,
                color=line.get_color(),
            )
        medians.append(med)
    ax.set_xscale("log")
    ax.axvline(budget, color="grey", lw=0.8, ls=":")
    ax.axhline(threshold * scale, color="black", lw=0.8, ls=":", label="target")
    finite = np.concatenate([m[np.isfinite(m)] for m in medians])
    if finite.size:
        lo = np.percentile(finite, 10)
        ax.set_ylim(
            min(lo, threshold * scale) - 0.02 * abs(lo),
            finite.max() + 0.01 * abs(finite.max()) + 1e-9,
        )
    ax.set_xlabel("wall-clock seconds since the search started (log)")
    ax.set_ylabel("incumbent test accuracy (%)" if cls else "incumbent test R²")
    ax.set_title(f"{task}: median over seeds, band = min to max")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = out / f"convergence-{task}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


if __name__ == "__main__":
    build(sys.argv[1])
