"""FABOLAS's length-scale prior: the two readings of the paper's, measured.

Paper 001 (section 3.4) puts "a uniform prior between [-10, 2] for all length
scales lambda in log space", but its Matern distance multiplies the squared
differences by ``diag(lambda)``, so lambda = 1 / l^2 there. Read as a prior on
``log l`` (what the library does) the bounds are [-10, 2]; read as a prior on
``log lambda`` they are ``log l`` in [-1, 5]. On a finished benchmark folder
this prints, per FABOLAS run, where the loss GP's posterior length scales lie
under the library's bounds (fitted on all the run's trials), then the
extrapolation table of :mod:`benchmarks.studies.fabolas_extrapolation` under
each of the two bounds.

Usage::

    python -m benchmarks.studies.fabolas_prior \\
        benchmarks/results/2026-11-23-svc-covertype --task svc-covertype_75k
"""

from __future__ import annotations

import argparse
import json
import math
import os
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from threadpoolctl import threadpool_limits

from skbayes_search._validation import min_resources_rows
from skbayes_search.gp import GPSurrogate
from skbayes_search.gp import fabolas_kernels as fk
from skbayes_search.space import SearchSpace

from ..tasks import ESTIMATORS, space_ours
from . import fabolas_extrapolation as extrapolation

#: ``log l`` bounds: the library's reading, and lambda = 1 / l^2.
READINGS = {"log l in [-10, 2]": (-10.0, 2.0), "log lambda in [-10, 2]": (-1.0, 5.0)}


@contextmanager
def length_bounds(bounds: tuple[float, float]):
    """FABOLAS's kernels built with other ``log l`` bounds, for this block."""
    saved = fk.LOG_LENGTH_BOUNDS
    fk.LOG_LENGTH_BOUNDS = bounds
    try:
        yield
    finally:
        fk.LOG_LENGTH_BOUNDS = saved


def posterior_log_lengths(
    record: dict, task_info: dict, space: SearchSpace
) -> np.ndarray:
    """The loss GP's ``log l`` samples (rows) per configuration dimension,
    fitted on every finished trial of a run as the search fits it."""
    n_search, n_splits = task_info["n_search"], record["n_splits"]
    n_train = n_search - math.ceil(n_search / n_splits)
    ctx = SimpleNamespace(
        n_classes=task_info.get("n_classes"), n_splits=n_splits, n_train=n_train
    )
    axis = fk.FractionAxis(n_train, min_resources_rows("auto", ctx))
    trials = [t for t in record["trials"] if np.isfinite(t["score"])]
    X = space.to_unit([t["params"] for t in trials])
    s = axis.to_s(np.array([t["resource"] / n_train for t in trials]))
    scores = np.array([t["score"] for t in trials])
    gp = GPSurrogate(
        fk.fabolas_kernels(space.n_dims)[0],
        hyperparameter_sampling="mcmc",
        n_samples=10,
        random_state=record["seed"],
    )
    with threadpool_limits(1):
        gp.fit(axis.with_s(X, s), fk.scores_to_loss(scores, fk.error_kind(scores)))
    # theta = (mean, log amplitude, log noise, log l of x..., basis weights)
    return gp.thetas_[:, 3 : 3 + space.n_dims]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.studies.fabolas_prior",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("results", type=Path, help="a benchmarks.run output folder")
    parser.add_argument("--task", required=True)
    args = parser.parse_args(argv)
    runs = args.results / "runs" / args.task
    task_info = json.loads((runs / "task.json").read_text())
    space = SearchSpace(space_ours(ESTIMATORS[args.task.split("-")[0]].params))
    records = [
        json.loads(p.read_text())
        for p in sorted(runs.glob("fabolas-seed*.json"))
        if not p.name.endswith(".spec.json")
    ]
    records = [r for r in records if r.get("status") == "ok"]
    print("Posterior log l (all trials, library bounds), [min, median, max]:\n")
    print("| seed | trials | " + " | ".join(space.names) + " | share below -1 |")
    print("|---" * (len(space.names) + 3) + "|")
    for rec in records:
        ls = posterior_log_lengths(rec, task_info, space)
        cells = [
            "[{:.2f}, {:.2f}, {:.2f}]".format(*np.percentile(ls[:, d], [0, 50, 100]))
            for d in range(space.n_dims)
        ]
        print(
            f"| {rec['seed']} | {len(rec['trials'])} | " + " | ".join(cells)
            + f" | {float(np.mean(ls < -1.0)):.2f} |",
            flush=True,
        )  # fmt: skip
    for name, bounds in READINGS.items():
        print(f"\nExtrapolation with {name} (log l in {list(bounds)}):")
        with length_bounds(bounds):
            extrapolation.main([str(args.results), "--task", args.task])
    print(f"\nload average {os.getloadavg()}")


if __name__ == "__main__":
    main()
