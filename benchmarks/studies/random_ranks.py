"""Do small subsets rank random settings as all the rows do?

Usage (from the repository root)::

    python -m benchmarks.studies.random_ranks --task hgb-covertype_75k \\
        --n-settings 20 --min-rows 70 --out /tmp/random-ranks.json

The task's search rows are split once (stratified for a classifier) into
training and validation rows. ``--n-settings`` settings drawn at random from
the task's space are each fitted on nested subsets of the training rows
(``--min-rows`` times ``--factor`` to the power 0, 1, 2, ... and then all of
them, as a halving search's rungs) and scored on every validation row.
Printed: the median fit time and score per size; Kendall's tau-b between the
scores at every two sizes; per size, tau with the scores on all rows, tau
among the ten settings best on all rows, and where its best setting ranks on
all rows.

A halving search's hedges measure the agreement of a rung with the rung two
above it (a 9-fold step at ``factor=3``); this study shows how that relates
to the agreement with all rows. Unlike ``rung_ranks``, which studies the
settings a search chose, every setting here is random, so no selection
biases the taus.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import kendalltau
from sklearn.model_selection import ParameterSampler, train_test_split

from skbayes_search._ladder import Rungs

from ..tasks import Task, load_task, space_scipy

#: Settings on all rows whose order among themselves is reported.
TOP = 10


def subset_sizes(n_train: int, min_rows: int, factor: float) -> list[int]:
    """The rows of a halving search's rungs from ``min_rows`` to ``n_train``.

    >>> subset_sizes(1000, 20, 3)
    [20, 60, 180, 540, 1000]
    """
    return list(Rungs.geometric(n_train, min_rows, factor).rows)


def _fit_sizes(
    task: Task, params: dict, data: tuple, order: np.ndarray, sizes: list[int]
) -> list[tuple[int, float, float]]:
    X_train, X_val, y_train, y_val = data
    out = []
    for n in sizes:
        est = task.estimator().set_params(**params)
        rows = order[:n]
        start = time.perf_counter()
        est.fit(X_train[rows], y_train[rows])
        seconds = time.perf_counter() - start
        out.append((n, float(est.score(X_val, y_val)), seconds))
    return out


def measure(
    task: Task,
    n_settings: int,
    min_rows: int,
    factor: float,
    seed: int,
    n_jobs: int,
) -> dict[str, Any]:
    """Scores and fit seconds of ``n_settings`` random settings on nested
    subsets of one training split."""
    stratify = task.y_search if task.classification else None
    data = train_test_split(
        task.X_search,
        task.y_search,
        test_size=0.2,
        stratify=stratify,
        random_state=seed,
    )
    n_train = len(data[2])
    sizes = subset_sizes(n_train, min_rows, factor)
    rng = np.random.default_rng(seed)
    # nested: each size's rows are the first of one permutation, as a
    # halving search's rungs are nested samples
    order = rng.permutation(n_train)
    settings = list(
        ParameterSampler(space_scipy(task.params), n_settings, random_state=seed)
    )
    results = Parallel(n_jobs=n_jobs)(
        delayed(_fit_sizes)(task, p, data, order, sizes) for p in settings
    )
    return {
        "task": task.name,
        "sizes": sizes,
        "settings": settings,
        "scores": [[s for _, s, _ in r] for r in results],
        "seconds": [[c for _, _, c in r] for r in results],
    }


def report(result: dict[str, Any]) -> str:
    """The study's tables, as plain text."""
    sizes = result["sizes"]
    scores = np.asarray(result["scores"], dtype=float)
    seconds = np.asarray(result["seconds"], dtype=float)
    full = scores[:, -1]
    by_full = list(np.argsort(-full))
    top = by_full[:TOP]
    lines = [f"{result['task']}: {len(full)} random settings"]
    lines.append("rows      fit s  median score")
    for j, n in enumerate(sizes):
        med_s, med_v = np.median(seconds[:, j]), np.median(scores[:, j])
        lines.append(f"{n:>6}  {med_s:7.2f}  {med_v:.3f}")
    lines.append("Kendall's tau-b between sizes")
    lines.append("      " + "".join(f"{n:>7}" for n in sizes))
    for j, n in enumerate(sizes):
        taus = [
            kendalltau(scores[:, j], scores[:, k]).statistic for k in range(len(sizes))
        ]
        lines.append(f"{n:>6}" + "".join(f"{t:7.2f}" for t in taus))
    lines.append(
        f"rows  tau(all rows)  tau(top {TOP})  its best: rank on all rows, score"
    )
    for j, n in enumerate(sizes[:-1]):
        tau_all = kendalltau(scores[:, j], full).statistic
        tau_top = kendalltau(scores[top, j], full[top]).statistic
        best = int(np.argmax(scores[:, j]))
        lines.append(
            f"{n:>6}  {tau_all:13.2f}  {tau_top:11.2f}  "
            f"{by_full.index(best) + 1:>4}, {full[best]:.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", required=True)
    p.add_argument("--n-settings", type=int, default=20)
    p.add_argument("--min-rows", type=int, required=True)
    p.add_argument("--factor", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--out", required=True, help="JSON file of the measurements")
    p.add_argument("--data-dir", default=None, help="default ../shared/datasets")
    args = p.parse_args(argv)
    out = Path(args.out)
    asked = {
        k: getattr(args, k)
        for k in ("task", "n_settings", "min_rows", "factor", "seed")
    }
    if out.is_file():
        result = json.loads(out.read_text())
        if result.get("asked") != asked:
            raise SystemExit(
                f"{out} holds a study of {result.get('asked')}, not of {asked}; "
                "give another --out."
            )
    else:
        task = load_task(args.task, args.data_dir)
        result = measure(
            task, args.n_settings, args.min_rows, args.factor, args.seed, args.n_jobs
        )
        result["asked"] = asked
        # the sampler's draws are numpy scalars
        out.write_text(json.dumps(result, indent=1, default=lambda v: v.item()))
    print(report(result))


if __name__ == "__main__":
    main()
