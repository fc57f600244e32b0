"""The figures of :mod:`benchmarks.studies.tradeoff_sweep`: test accuracy
against the selected model's training time, one panel per seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ._tradeoff_sweep_report import _baseline
from .tradeoff_sweep import (
    BASELINE,
    CV,
    N_ITER,
    N_REFITS,
    TARGET_ACC_RATIO,
    TARGET_TIME_RATIO,
    TRADEOFF,
    Record,
    TaskSpec,
)

# Label offsets (points) tried in turn, with their horizontal alignment.
_LABEL_OFFSETS = (
    ((6, 4), "left"),
    ((6, -12), "left"),
    ((-6, 4), "right"),
    ((-6, -12), "right"),
    ((12, 16), "left"),
    ((-12, 16), "right"),
    ((12, -26), "left"),
    ((-12, -26), "right"),
    ((24, 28), "left"),
    ((24, -38), "left"),
)


def _annotate(
    ax: Any, label: str, point: tuple, offset: tuple, ha: str, **style: Any
) -> Any:
    """``label`` at ``offset`` points from ``point``, above or below it."""
    return ax.annotate(
        label,
        point,
        textcoords="offset points",
        xytext=offset,
        ha=ha,
        va="bottom" if offset[1] > 0 else "top",
        fontsize=8,
        **style,
    )


def _label_points(ax: Any, rows: list[Record], base: Record) -> None:
    """One label per selected model, placed where it overlaps nothing drawn.

    Several alphas often select the same trial (same parameters and fraction,
    times differing only by noise): they share a label.
    """
    from matplotlib.transforms import Bbox

    groups: dict[str, list[Record]] = {}
    for r in rows:
        key = json.dumps([r.params, r.fraction], sort_keys=True)
        groups.setdefault(key, []).append(r)
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    pad = 7.0  # pixels around each marker that labels keep clear of
    markers = [
        ax.transData.transform((r.train_time, r.test_acc)) for r in [*rows, base]
    ]
    taken = [Bbox.from_extents(x - pad, y - pad, x + pad, y + pad) for x, y in markers]
    for group in sorted(groups.values(), key=lambda g: g[0].train_time):
        alphas = ",".join(f"{r.alpha:g}" for r in group)
        point = (group[0].train_time, group[0].test_acc)
        label = f"$\\alpha$={alphas}, f={group[0].fraction:g}"
        # the first offset where the label's text (leader line aside) stays
        # inside the axes and clear of markers and earlier labels
        # (when nothing fits: the first offset, overlaps and all)
        chosen, chosen_box = None, None
        for offset, ha in _LABEL_OFFSETS:
            probe = _annotate(ax, label, point, offset, ha)
            box = probe.get_window_extent(renderer)
            probe.remove()
            inside = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
            fits = inside and not any(box.overlaps(t) for t in taken)
            if fits or chosen is None:
                chosen, chosen_box = (offset, ha), box
            if fits:
                break
        offset, ha = chosen
        _annotate(
            ax,
            label,
            point,
            offset,
            ha,
            color="tab:blue",
            # a leader line, so that a label pushed away from crowded points
            # still says which point it names
            arrowprops={"arrowstyle": "-", "color": "tab:blue", "lw": 0.6},
        )
        taken.append(chosen_box)


def plot_task(
    records: list[Record], spec: TaskSpec, seeds: list[int], path: Path
) -> None:
    """Test accuracy against training time, one panel per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, len(seeds), figsize=(7.2 * len(seeds), 5.4), squeeze=False
    )
    for ax, seed in zip(axes[0], seeds):
        base = _baseline(records, spec.name, seed)
        rows = [
            r
            for r in records
            if r.task == spec.name and r.seed == seed and r.method != BASELINE
        ]
        times = np.array([r.train_time for r in rows] + [base.train_time])
        accs = np.array([r.test_acc for r in rows] + [base.test_acc])
        ax.scatter(
            [r.train_time for r in rows],
            [r.test_acc for r in rows],
            c="tab:blue",
            s=45,
            zorder=3,
            label=f"{TRADEOFF} (one point per alpha)",
        )
        ax.scatter(
            base.train_time,
            base.test_acc,
            marker="*",
            s=260,
            c="black",
            zorder=4,
            label=f"{BASELINE} (full data)",
        )
        ax.set_xscale("log")
        lo_t, hi_t = times.min(), times.max()
        ax.set_xlim(min(lo_t, 0.5 * base.train_time) / 2.0, hi_t * 2.5)
        span = max(accs.max(), base.test_acc) - min(
            accs.min(), TARGET_ACC_RATIO * base.test_acc
        )
        ax.set_ylim(
            min(accs.min(), TARGET_ACC_RATIO * base.test_acc) - 0.12 * span,
            max(accs.max(), base.test_acc) + 0.12 * span,
        )
        x0, _ = ax.get_xlim()
        _, y1 = ax.get_ylim()
        ax.fill_between(
            [x0, TARGET_TIME_RATIO * base.train_time],
            TARGET_ACC_RATIO * base.test_acc,
            y1,
            color="tab:green",
            alpha=0.15,
            zorder=1,
            label=(
                f"target (acc >= {TARGET_ACC_RATIO:.0%}, "
                f"time <= {TARGET_TIME_RATIO:.0%} of {BASELINE})"
            ),
        )
        ax.set_xlabel(f"selected model training time (s, median of {N_REFITS} fits)")
        ax.set_ylabel("test accuracy")
        ax.set_title(
            f"{spec.title}, {spec.n_rows:,} rows, seed {seed}\n"
            f"n_iter={N_ITER}, cv={CV}; shared machine, 1-min load "
            f"{min(r.load_after for r in [*rows, base]):.1f}-"
            f"{max(r.load_after for r in [*rows, base]):.1f}",
            fontsize=9,
        )
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=2)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    # labels last: their placement needs the final axes geometry
    for ax, seed in zip(axes[0], seeds):
        _label_points(
            ax,
            [
                r
                for r in records
                if r.task == spec.name and r.seed == seed and r.method != BASELINE
            ],
            _baseline(records, spec.name, seed),
        )
    fig.savefig(path, dpi=110)
    plt.close(fig)
