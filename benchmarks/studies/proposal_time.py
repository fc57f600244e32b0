"""Seconds to propose the next point with the GP core.

One proposal = refit of the surrogate on ``n`` observations (continuing the
MCMC chain / warm-starting MAP from the previous fit, as a search does) plus
maximisation of the integrated log-EI with ``propose_batch``, as
``BayesSearchCV`` proposes (:func:`benchmarks.studies.overhead.propose_ei`).
The first fit (with burn-in) happens on ``n - repeats`` points and is not timed; then
``repeats`` proposals are timed, each after adding one observation, and the
median is reported, both as wall-clock seconds and as CPU seconds of this
process (the latter is less distorted when other jobs share the machine).

Usage::

    python -m benchmarks.studies.proposal_time [--repeats 5] [--dims 2 5] \\
        [--n 25 50 100]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from skbayes_search.gp import GPSurrogate

from .overhead import propose_ei


def objective(U: np.ndarray) -> np.ndarray:
    """A smooth multimodal test loss on the unit cube."""
    return np.sum(np.sin(5 * U) + 2 * (U - 0.6) ** 2, axis=1)


def time_proposals(
    n: int, d: int, sampling: str, repeats: int, seed: int = 0
) -> tuple[float, float, float, float]:
    """Median seconds: wall (refit + proposal), CPU of the same, wall refit, wall
    proposal."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = objective(X) + 0.01 * rng.standard_normal(n)
    surrogate = GPSurrogate(hyperparameter_sampling=sampling, random_state=seed)
    n0 = n - repeats
    surrogate.fit(X[:n0], y[:n0])
    totals, cpus, fits, props = [], [], [], []
    for m in range(n0 + 1, n + 1):
        c0 = time.process_time()
        t0 = time.perf_counter()
        surrogate.fit(X[:m], y[:m])
        t1 = time.perf_counter()
        propose_ei(surrogate, X[:m], y[:m], rng)
        t2 = time.perf_counter()
        cpus.append(time.process_time() - c0)
        totals.append(t2 - t0)
        fits.append(t1 - t0)
        props.append(t2 - t1)
    return tuple(float(np.median(v)) for v in (totals, cpus, fits, props))


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.studies.proposal_time",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 5])
    parser.add_argument("--n", type=int, nargs="+", default=[25, 50, 100])
    parser.add_argument("--sampling", nargs="+", default=["map", "mcmc"])
    args = parser.parse_args()
    print("| D | n | sampling | total s | total CPU s | refit s | acquisition s |")
    print("|---|---|---|---|---|---|---|")
    with threadpool_limits(1):
        for d in args.dims:
            for n in args.n:
                for sampling in args.sampling:
                    tot, cpu, fit, prop = time_proposals(n, d, sampling, args.repeats)
                    print(
                        f"| {d} | {n} | {sampling} | {tot:.3f} | {cpu:.3f} | {fit:.3f} "
                        f"| {prop:.3f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
