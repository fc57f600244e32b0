"""The report of :mod:`benchmarks.studies.transfer_stream`: ``summary.md``."""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import sys

from ._transfer_options import METHODS


def write_summary(out, df, ranks, cost, args, elapsed, n_data):
    """``summary.md``: the setup, the mean ranks overall and by trial count, and
    the per-iteration cost when it was measured."""
    n_iter = args.n_iter
    methods = [m for m in METHODS if m in ranks.columns]
    lines = [
        "# Transfer stream benchmark (paper 002 protocol, small scale)",
        "",
        f"- command: `{' '.join(shlex.quote(a) for a in sys.argv)}`",
        f"- date (UTC): {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}",
        f"- machine: {os.cpu_count()} cores, {platform.python_version()}, "
        f"load averages at the end {os.getloadavg()[0]:.2f} (1 min), "
        f"{os.getloadavg()[2]:.2f} (15 min); all single-threaded, "
        f"niceness {os.nice(0)}",
        f"- {n_data} data sets ({len(args.sources)} sources x (1 + {args.copies} "
        f"perturbed copies"
        + (f", up to {args.binary} classes against the rest" if args.binary else "")
        + f"), {args.n_rows}-row samples), {args.orders} orders, "
        f"n_iter={n_iter}, cv={args.cv}; wall time {elapsed / 60:.1f} min",
        "- seeds: "
        + (
            "random_state=order on every data set (--same-seed)"
            if args.same_seed
            else "random_state=1000 * order + position, the same for every method"
        ),
        "",
        f"## Mean rank over the first {n_iter} trials (1 = best of {len(methods)})",
        "",
        "| method | mean rank | sd over orders | per order |",
        "|---|---|---|---|",
    ]
    for m in methods:
        per_order = ranks.groupby("order")[m].mean()
        lines.append(
            f"| {m} | {ranks[m].mean():.2f} | {per_order.std(ddof=1):.2f} | "
            + ", ".join(f"{v:.2f}" for v in per_order)
            + " |"
        )
    ks = [k for k in (1, 2, 3, 5, 10) if k <= n_iter]
    lines += [
        "",
        "## Mean rank by number of trials k",
        "",
        "| method | " + " | ".join(f"k={k}" for k in ks) + " |",
        "|---|" + "---|" * len(ks),
    ]
    for m in methods:
        by_k = ranks.groupby("trial")[m].mean()
        lines.append(f"| {m} | " + " | ".join(f"{by_k[k]:.2f}" for k in ks) + " |")
    best = df[df.trial == n_iter].groupby("method")["best_so_far"].mean()
    lines += [
        "",
        f"Mean best CV accuracy after {n_iter} trials: "
        + ", ".join(f"{m} {best[m]:.4f}" for m in methods if m in best),
        "",
    ]
    if cost is not None and len(cost):
        piv = cost.pivot(
            index=["n_prior_runs", "n_prior_trials"],
            columns="kernel",
            values="per_iteration_s",
        )
        lines += [
            "## Per-iteration cost of the transfer search vs prior runs in the store",
            "",
            "Wall time of a 5-trial search minus its fit/score time, per trial "
            "(store read, response surface, GP fit, acquisition).",
            "",
            "| prior runs | prior trials | sqe (s) | mkl (s) |",
            "|---|---|---|---|",
        ]
        for (n, n_trials), row in piv.iterrows():
            lines.append(f"| {n} | {n_trials} | {row['sqe']:.3f} | {row['mkl']:.3f} |")
        lines.append("")
    with open(os.path.join(out, "summary.md"), "w") as fh:
        fh.write("\n".join(lines))
    print("\n".join(lines))
