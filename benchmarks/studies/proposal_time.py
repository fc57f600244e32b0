"""Seconds to propose the next point with the GP core.

One proposal = refit of the surrogate on ``n`` observations (continuing the
MCMC chain / warm-starting MAP from the previous fit, as a search does) plus
maximisation of the integrated log-EI with ``propose_batch``, as
``BayesSearchCV`` proposes (:func:`benchmarks.studies.overhead.propose_ei`).
The first fit (with burn-in) happens on ``n - repeats`` points and is not timed; then
``repeats`` proposals are timed, each after adding one observation, and the
median is reported, both as wall-clock seconds and as CPU seconds of this
process (the latter is less distorted when other jobs share the machine).
The last column times the same proposal again, from the same random state,
with every hyperparameter sample predicted one at a time instead of in one
batched pass (:class:`skbayes_search.gp.PosteriorStack`), so the two columns
compare the prediction paths on the same work.

Usage::

    python -m benchmarks.studies.proposal_time [--repeats 5] [--dims 2 5] \\
        [--n 25 50 100]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from skbayes_search.gp import GPSurrogate, PosteriorStack

from .overhead import propose_ei


def objective(U: np.ndarray) -> np.ndarray:
    """A smooth multimodal test loss on the unit cube."""
    return np.sum(np.sin(5 * U) + 2 * (U - 0.6) ** 2, axis=1)


def _propose_one_at_a_time(
    surrogate: GPSurrogate, X: np.ndarray, y: np.ndarray, rng: np.random.Generator
) -> float:
    """Wall seconds of the same proposal with no batched prediction."""
    copy = np.random.default_rng()
    copy.bit_generator.state = rng.bit_generator.state
    batched = PosteriorStack._MAX_BATCHED_ROWS
    PosteriorStack._MAX_BATCHED_ROWS = 0
    try:
        t0 = time.perf_counter()
        propose_ei(surrogate, X, y, copy)
        return time.perf_counter() - t0
    finally:
        PosteriorStack._MAX_BATCHED_ROWS = batched


def time_proposals(
    n: int, d: int, sampling: str, repeats: int, seed: int = 0
) -> tuple[float, float, float, float, float]:
    """Median seconds: wall (refit + proposal), CPU of the same, wall refit, wall
    proposal, wall proposal predicting one posterior at a time."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = objective(X) + 0.01 * rng.standard_normal(n)
    surrogate = GPSurrogate(hyperparameter_sampling=sampling, random_state=seed)
    n0 = n - repeats
    surrogate.fit(X[:n0], y[:n0])
    totals, cpus, fits, props, singles = [], [], [], [], []
    for m in range(n0 + 1, n + 1):
        c0 = time.process_time()
        t0 = time.perf_counter()
        surrogate.fit(X[:m], y[:m])
        t1 = time.perf_counter()
        c1 = time.process_time()
        singles.append(_propose_one_at_a_time(surrogate, X[:m], y[:m], rng))
        c2 = time.process_time()
        t2 = time.perf_counter()
        propose_ei(surrogate, X[:m], y[:m], rng)
        t3 = time.perf_counter()
        cpus.append(c1 - c0 + time.process_time() - c2)
        totals.append(t3 - t2 + t1 - t0)
        fits.append(t1 - t0)
        props.append(t3 - t2)
    return tuple(float(np.median(v)) for v in (totals, cpus, fits, props, singles))


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
    print(
        "| D | n | sampling | total s | total CPU s | refit s | acquisition s "
        "| acquisition s, one posterior at a time |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with threadpool_limits(1):
        for d in args.dims:
            for n in args.n:
                for sampling in args.sampling:
                    tot, cpu, fit, prop, single = time_proposals(
                        n, d, sampling, args.repeats
                    )
                    print(
                        f"| {d} | {n} | {sampling} | {tot:.3f} | {cpu:.3f} | {fit:.3f} "
                        f"| {prop:.3f} | {single:.3f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
