"""The report of :mod:`benchmarks.papers.snoek`: pure functions from run
records to ``summary.md`` (no fitting), and the paper's own results.

A record is what one run wrote: ``trials`` (finishing order, each with
``elapsed``, ``score`` and ``fraction``), ``n_trials``, ``wall`` and the 1-minute
load averages ``load_before`` and ``load_after``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..metrics import (
    incumbent_indices,
    median_spread,
    score_at,
    target_threshold,
    time_to_target,
)
from ..report import fmt_score, fmt_spread, fmt_time
from ..studies.throughput import best_after, pair_row, verdict

#: Trial counts at which table 1 compares MCMC with MAP, besides the last
#: count both runs reached.
EARLY_TRIALS = (10, 20)

# The paper's comparisons as its section 4 states them (it gives its results
# as curves; the quotes are the text's own claims about them).
PAPER_LINES = [
    "## The paper's results (section 4)",
    "",
    "| figure | problem, repeats | comparison | what the paper reports |",
    "|---|---|---|---|",
    "| 3a | Branin-Hoo, 100 runs | GP EI MCMC vs GP EI Opt (vs GP-UCB, TPA), "
    'by evaluations | "integrating over hyperparameters is superior to using a '
    'point estimate"; GP EI finds the minimum "in less than half as many '
    'evaluations" as TPA |',
    "| 3b, 3c | logistic regression on MNIST (learning rate, l2, minibatch "
    "20-2000, epochs 5-2000), 10 runs | GP EI per Second vs GP EI MCMC, by "
    'evaluations and minutes | "although EI per second is less efficient in '
    'function evaluations it outperforms standard EI in time" |',
    "| 4a, 4b | online LDA on a 288-point grid (5-10 h per evaluation), 100 "
    "repeats | MCMC vs Opt; 3x, 5x, 10x parallel, by evaluations and days | "
    '"Clearly integrating over hyperparameters is superior to using a point '
    'estimate in this case"; "parallelized GP EI MCMC finds the best '
    'parameters in significantly less time" |',
    "| 5a, 5b | motif finding with M3E models on a 1,400-point grid, 100 "
    "repeats | GP EI per Second vs GP EI MCMC, 3x parallel, by evaluations "
    'and hours | GP EI MCMC is better per evaluation, "GP EI per Second finds '
    'better parameters faster"; 3x GP EI per second is "the least efficient '
    "in terms of function evaluations but finds better parameters faster than "
    'all the other algorithms" |',
    "| 6 | CIFAR-10 convnet, 9 hyperparameters, 5 runs | all of them, 3x "
    "parallel | best GP EI MCMC setting: 14.98 % test error against the "
    "expert's 18 % (9.5 % against 11 % with augmented data) |",
    "",
    "The paper states no number for the gaps between MCMC and Opt, EI per "
    "second and EI, or one and several workers: its figures show them as "
    "mean curves with standard errors.",
    "",
    "## What differs",
    "",
    "- Scale: objectives of about a second (5-fold CV on a few thousand rows) "
    "instead of minutes to hours per evaluation, so the GP's own time per "
    "proposal is a visible part of each trial, which the paper could ignore.",
    "- Budget: a fixed wall-clock budget per run instead of a fixed number of "
    "evaluations; table 1 compares by evaluations after 10 and 20 trials and "
    "at the smallest trial count the runs share.",
    "- Tasks: SVC on magic and letter, elastic-net logistic regression (saga) "
    "on adult, subsampled, instead of the paper's problems; continuous spaces, "
    "no grid restriction.",
    "- Repeats: 5 seeds (10 to 100 in the paper); medians and ranges, not "
    "means and standard errors.",
    "- Workers: 2 (the paper: 3, 5 and 10) on a 2-core machine that other "
    "work shares (see the load column).",
]


# ----------------------------------------------------------------------
# Figures of one run and of one task (pure)
# ----------------------------------------------------------------------
def incumbent_curve(trials: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(finishing time, incumbent CV score) after each trial."""
    scores = [t["score"] for t in trials]
    idx = incumbent_indices(scores, [t["fraction"] for t in trials])
    times = np.array([t["elapsed"] for t in trials], dtype=float)
    values = np.array([scores[i] if i >= 0 else np.nan for i in idx], dtype=float)
    return times, values


def best_score(record: dict) -> float:
    """Best CV score of a run (NaN when it has none)."""
    values = incumbent_curve(record.get("trials", []))[1]
    return float(values[-1]) if values.size else float("nan")


def task_target(records: Sequence[dict]) -> float:
    """Target of a task: 0.5 pp below the best CV score any of its runs found."""
    bests = [best_score(r) for r in records]
    finite = [b for b in bests if np.isfinite(b)]
    return target_threshold(max(finite), True) if finite else float("nan")


def seconds_to(record: dict, target: float) -> float:
    """Seconds until the run's incumbent reached ``target`` (inf if never)."""
    times, values = incumbent_curve(record.get("trials", []))
    return time_to_target(times, values, target) if times.size else float("inf")


def paired(first: dict[int, float], second: dict[int, float]) -> list[float]:
    """``second - first`` over the seeds both have."""
    return [second[s] - first[s] for s in sorted(first.keys() & second.keys())]


def wins(diffs: Sequence[float]) -> str:
    """Seeds where the difference is positive / zero / negative."""
    arr = np.asarray(diffs, dtype=float)
    # Scores are means over folds: a difference below 1e-9 is rounding.
    up, down = (arr > 1e-9).sum(), (arr < -1e-9).sum()
    return f"{up}/{arr.size - up - down}/{down}"


def sign_test(diffs: Sequence[float]) -> str:
    """Seeds up / tied / down and the two-sided sign test's p over the untied
    ones: whether the wins could be a coin's."""
    from scipy.stats import binomtest

    arr = np.asarray(diffs, dtype=float)
    arr = arr[~np.isnan(arr)]
    up, down = int((arr > 1e-9).sum()), int((arr < -1e-9).sum())
    p = binomtest(up, up + down).pvalue if up + down else 1.0
    return f"{up}/{arr.size - up - down}/{down} of {arr.size} (sign test p = {p:.2g})"


def load_range(records: Sequence[dict]) -> str:
    """1-minute load over the runs, lowest start to highest end."""
    lo = [r["load_before"] for r in records if "load_before" in r]
    hi = [r["load_after"] for r in records if "load_after" in r]
    return f"{min(lo + hi):.1f}-{max(lo + hi):.1f}" if lo or hi else "-"


def _pp(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{100 * x:+.2f}"


def evaluations_row(
    recs: dict[str, dict[int, dict]], n: int | None = None
) -> dict[str, Any] | None:
    """Table 1 cells of one task: best CV score after ``n`` trials, MCMC vs
    MAP; ``n`` defaults to the smallest trial count of their runs. None when
    no seed has both runs or a run has fewer than ``n`` trials."""
    mcmc, map_ = recs.get("ei-mcmc", {}), recs.get("ei-map", {})
    both = sorted(mcmc.keys() & map_.keys())
    if not both:
        return None
    shared = min(min(mcmc[s]["n_trials"], map_[s]["n_trials"]) for s in both)
    n = shared if n is None else n
    if n > shared:
        return None
    a = {s: best_after(mcmc[s]["trials"], n) for s in both}
    b = {s: best_after(map_[s]["trials"], n) for s in both}
    diffs = paired(b, a)
    return {
        "n": n,
        "seeds": len(both),
        "mcmc": fmt_spread(list(a.values()), True),
        "map": fmt_spread(list(b.values()), True),
        "diff": _pp(median_spread(diffs)[0]),
        "wins": wins(diffs),
        "raw": diffs,
        "load": load_range([mcmc[s] for s in both] + [map_[s] for s in both]),
    }


def time_row(
    recs: dict[str, dict[int, dict]], target: float, budget: float
) -> dict[str, Any] | None:
    """Table 2 cells of one task: EI per second vs EI in wall time."""
    ei, eips = recs.get("ei-mcmc", {}), recs.get("eips-mcmc", {})
    both = sorted(ei.keys() & eips.keys())
    if not both:
        return None

    def at(rec: dict, t: float) -> float:
        return score_at(*incumbent_curve(rec["trials"]), t)

    return {
        "seeds": len(both),
        "target": fmt_score(target, True),
        "ttt_ei": fmt_time([seconds_to(ei[s], target) for s in both]),
        "ttt_eips": fmt_time([seconds_to(eips[s], target) for s in both]),
        "half_ei": fmt_spread([at(ei[s], budget / 2) for s in both], True),
        "half_eips": fmt_spread([at(eips[s], budget / 2) for s in both], True),
        "end_ei": fmt_spread([best_score(ei[s]) for s in both], True),
        "end_eips": fmt_spread([best_score(eips[s]) for s in both], True),
        "trials": f"{median_spread([ei[s]['n_trials'] for s in both])[0]:.0f} / "
        f"{median_spread([eips[s]['n_trials'] for s in both])[0]:.0f}",
        "load": load_range([ei[s] for s in both] + [eips[s] for s in both]),
        # Seconds EI took longer than EI per second to reach the target.
        "raw": [seconds_to(ei[s], target) - seconds_to(eips[s], target) for s in both],
        "raw_end": [best_score(eips[s]) - best_score(ei[s]) for s in both],
    }


def workers_row(recs: dict[str, dict[int, dict]]) -> dict[str, Any] | None:
    """Table 3 cells of one task: n_jobs=2 vs n_jobs=1 (the throughput study's
    pair figures, medians over seeds)."""
    one, two = recs.get("ei-mcmc", {}), recs.get("ei-mcmc-2w", {})
    both = sorted(one.keys() & two.keys())
    if not both:
        return None
    pairs = [pair_row(one[s], two[s]) for s in both]
    _, ratio, diff = verdict(pairs)
    return {
        "seeds": len(both),
        "tps_1": f"{median_spread([p['tps_1'] for p in pairs])[0]:.2f}",
        "tps_2": f"{median_spread([p['tps_2'] for p in pairs])[0]:.2f}",
        "ratio": f"{ratio:.2f}",
        "n": f"{median_spread([p['n_compared'] for p in pairs])[0]:.0f}",
        "best_1": fmt_spread([p["best_1"] for p in pairs], True),
        "best_2": fmt_spread([p["best_2"] for p in pairs], True),
        "diff": _pp(diff),
        "wins": wins([p["best_diff"] for p in pairs]),
        "raw": [p["best_diff"] for p in pairs],
        "raw_ratio": [p["ratio"] for p in pairs],
        "load": load_range([one[s] for s in both] + [two[s] for s in both]),
    }


def _table(header: Sequence[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def build_report(
    records: dict[str, dict[str, dict[int, dict]]], meta: dict[str, Any]
) -> str:
    """``summary.md`` from the ok records, ``records[task][variant][seed]``."""
    budget = float(meta["budget"])
    t1, t2, t3 = [], [], []
    pooled: dict[str, list[float]] = {}
    for task, recs in records.items():
        target = task_target([r for v in recs.values() for r in v.values()])
        last = evaluations_row(recs)
        early = [evaluations_row(recs, n) for n in EARLY_TRIALS]
        for row in [r for r in early if r and r["n"] < last["n"]] + [last]:
            if row:
                key = "last" if row is last else str(row["n"])
                pooled.setdefault(f"t1-{key}", []).extend(row["raw"])
                t1.append([task, row["seeds"], row["n"], row["mcmc"], row["map"]])
                t1[-1] += [row["diff"], row["wins"], row["load"]]
        if row := time_row(recs, target, budget):
            pooled.setdefault("t2", []).extend(row["raw"])
            pooled.setdefault("t2-end", []).extend(row["raw_end"])
            t2.append([task, row["seeds"], row["target"], row["ttt_ei"]])
            t2[-1] += [row["ttt_eips"], row["half_ei"], row["half_eips"]]
            t2[-1] += [row["end_ei"], row["end_eips"], row["trials"], row["load"]]
        if row := workers_row(recs):
            pooled.setdefault("t3", []).extend(row["raw"])
            pooled.setdefault("t3-ratio", []).extend(row["raw_ratio"])
            t3.append([task, row["seeds"], row["tps_1"], row["tps_2"], row["ratio"]])
            t3[-1] += [row["n"], row["best_1"], row["best_2"], row["diff"]]
            t3[-1] += [row["wins"], row["load"]]
    lines = [
        "# Snoek, Larochelle & Adams 2012, reproduced at small scale",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; machine: {meta['cores']} cores, {meta['machine']}",
        f"- tasks: {', '.join(records) or 'none yet'}, {meta['max_rows']} rows "
        f"each (75 % searched, 5-fold CV); max_time {budget:g} s per run, no "
        f"trial limit; {meta['seeds']} seed(s) planned",
        f"- failed or timed-out runs: {meta.get('failed', 0)}",
        "",
        "Scores are mean CV accuracy in %, median [min, max] over seeds. Load: "
        "1-minute load average, lowest at a run's start to highest at its end "
        "(each run adds about its n_jobs).",
        "",
        "## 1. Integrated (MCMC) vs point-estimate (MAP) EI, by evaluations",
        "",
        "best@N: incumbent CV score after the first N finished trials, N = "
        f"{', '.join(map(str, EARLY_TRIALS))} "
        "and the smallest trial count of the task's runs of both. diff: MCMC minus MAP "
        "per seed, median, in pp; wins: seeds MCMC higher / equal / lower.",
        "",
        *_table(
            (
                "task",
                "seeds",
                "N",
                "GP EI MCMC best@N",
                "GP EI Opt best@N",
                "diff pp",
                "wins",
                "load",
            ),
            t1,
        ),
        "",
        "All tasks, seeds where MCMC is higher / equal / lower: "
        + "; ".join(
            f"N = {k.removeprefix('t1-')}: {sign_test(v)}"
            for k, v in pooled.items()
            if k.startswith("t1-")
        )
        + ".",
        "",
        "## 2. EI per second vs EI, in wall time",
        "",
        "Target: 0.5 pp below the best CV score any run of the task found. "
        "Time to target: seconds, median [min, max] (runs that reached it / "
        f"runs). Best CV score at {budget / 2:g} s and at the end; trials: "
        "median finished trials, EI / EI per second.",
        "",
        *_table(
            (
                "task",
                "seeds",
                "target",
                "EI: s to target",
                "EI/s: s to target",
                f"EI @{budget / 2:g}s",
                f"EI/s @{budget / 2:g}s",
                "EI end",
                "EI/s end",
                "trials",
                "load",
            ),
            t2,
        ),
        "",
        "All tasks, seeds where EI per second reached the target sooner / tied "
        f"/ later: {sign_test(pooled.get('t2', []))}; where its final best CV "
        f"score is higher / equal / lower: {sign_test(pooled.get('t2-end', []))}.",
        "",
        "## 3. Two workers vs one (GP EI MCMC, asynchronous loop)",
        "",
        "tps: finished trials per second of wall time; ratio: 2 over 1 "
        "(median of per-seed ratios); N: the smaller trial count of a pair; "
        "best@N and diff (2 minus 1, pp) as in table 1.",
        "",
        *_table(
            (
                "task",
                "seeds",
                "tps 1",
                "tps 2",
                "ratio",
                "N",
                "best@N 1 job",
                "best@N 2 jobs",
                "diff pp",
                "wins",
                "load",
            ),
            t3,
        ),
        "",
        "All tasks: median ratio "
        f"{median_spread(pooled.get('t3-ratio', []))[0]:.2f}; seeds where two "
        "workers are higher / equal / lower at best@N: "
        f"{sign_test(pooled.get('t3', []))}.",
        "",
        *PAPER_LINES,
    ]
    return "\n".join(lines) + "\n"


def read_records(out: Path) -> tuple[dict[str, dict[str, dict[int, dict]]], int]:
    """The ok records in ``out`` by task, variant and seed; and how many runs
    failed or timed out."""
    records: dict[str, dict[str, dict[int, dict]]] = {}
    failed = 0
    for path in sorted((out / "runs").glob("*/*-seed*.json")):
        if path.name.endswith(".spec.json"):
            continue
        rec = json.loads(path.read_text())
        if rec.get("status") != "ok":
            failed += 1
            continue
        variant, _, seed = path.stem.rpartition("-seed")
        task_recs = records.setdefault(path.parent.name, {})
        task_recs.setdefault(variant, {})[int(seed)] = rec
    return records, failed


def write_report(out: Path) -> Path:
    """Rebuild ``summary.md`` in ``out`` from its records and print it."""
    meta = json.loads((out / "meta.json").read_text())
    records, meta["failed"] = read_records(out)
    text = build_report(records, meta)
    path = out / "summary.md"
    path.write_text(text)
    print(text, flush=True)
    if records:
        plot(records, float(meta["budget"]), out / "snoek.png")
    return path


def median_curve(curves: Sequence[np.ndarray]) -> np.ndarray:
    """Median over runs of equally long curves, cut to the shortest run."""
    n = min(len(c) for c in curves)
    return np.median(np.stack([c[:n] for c in curves]), axis=0)


def plot(
    records: dict[str, dict[str, dict[int, dict]]], budget: float, path: Path
) -> None:
    """Median incumbent CV score per task against trials (MCMC, MAP) and
    against seconds (EI, EI per second, two workers), as the paper's figures
    plot them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(0.0, budget, 91)
    fig, axes = plt.subplots(2, len(records), figsize=(4 * len(records), 6))
    axes = np.asarray(axes).reshape(2, -1)
    for col, (task, recs) in enumerate(records.items()):
        for variant in ("ei-mcmc", "ei-map"):
            runs = recs.get(variant, {}).values()
            if runs:
                curve = median_curve([incumbent_curve(r["trials"])[1] for r in runs])
                axes[0, col].plot(np.arange(1, curve.size + 1), 100 * curve)
                axes[0, col].lines[-1].set_label(variant)
        for variant in ("ei-mcmc", "eips-mcmc", "ei-mcmc-2w"):
            runs = recs.get(variant, {}).values()
            if runs:
                steps = [
                    [score_at(*incumbent_curve(r["trials"]), t) for t in grid]
                    for r in runs
                ]
                with warnings.catch_warnings():
                    # Before a run's first trial its incumbent is NaN.
                    warnings.simplefilter("ignore", RuntimeWarning)
                    med = np.nanmedian(np.asarray(steps, dtype=float), axis=0)
                axes[1, col].step(grid, 100 * med, where="post", label=variant)
        axes[0, col].set(title=task, xlabel="trials", ylabel="best CV accuracy %")
        axes[1, col].set(xlabel="seconds", ylabel="best CV accuracy %")
        # The first trials climb tens of points; the comparison is in the top few.
        top = 100 * max(best_score(r) for v in recs.values() for r in v.values())
        for ax in axes[:, col]:
            ax.set_ylim(top - 3.0, top + 0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
