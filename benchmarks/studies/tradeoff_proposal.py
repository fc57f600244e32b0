"""Seconds per proposal of TradeoffBayesSearchCV, with and without the bound.

Usage (from the repository root)::

    python -m benchmarks.studies.tradeoff_proposal [--n-iter 40] [--n-jobs 1 2] \\
        [--seeds 0 1 2]

A search of an RBF SVC (``C`` and ``gamma``) on 2,000 generated rows, 3-fold
CV, ``alpha=0.1``, the default MCMC hyperparameter samples. Every proposal
after the initial design is timed (the strategy's ``_ask``: both GP fits and
the acquisition's maximisation). Three variants, one after the other:
:class:`~skbayes_search.BayesSearchCV` for reference, the trade-off search
as it is, and the trade-off search with the acquisition's upper bound
removed, so :func:`~skbayes_search.optimize.maximize` scores every candidate
with the full quadrature. Printed: the median and largest seconds per
proposal over the seeds' searches, how many of them were made with a trial
running (such a proposal integrates over fantasies of it), and the median
seconds of a whole search (its ``fit``, the final refit included), for each
number of workers. The trials depend on the measured training times, so the
variants' searches take different paths from the same seed.
"""

from __future__ import annotations

import argparse
import contextlib
import time
import warnings
from collections.abc import Iterator

import numpy as np
from sklearn.datasets import make_classification
from sklearn.svm import SVC

import skbayes_search.strategies.tradeoff as tradeoff_module
from skbayes_search import BayesSearchCV, Real, TradeoffBayesSearchCV

SPACE = {
    "C": Real(1e-2, 1e2, prior="log-uniform"),
    "gamma": Real(1e-3, 1.0, prior="log-uniform"),
}


@contextlib.contextmanager
def _without_bound() -> Iterator[None]:
    """The trade-off acquisition without its ``upper_bound``."""
    make = tradeoff_module.make_tradeoff_acquisition

    def unbounded(*args, **kwargs):
        func = make(*args, **kwargs)
        return lambda U: func(U)

    tradeoff_module.make_tradeoff_acquisition = unbounded
    try:
        yield
    finally:
        tradeoff_module.make_tradeoff_acquisition = make


def proposal_seconds(
    search, X: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """Seconds of each of ``search``'s proposals after its initial design,
    whether a trial was running at each, and the seconds of the whole fit."""
    cls = type(search)
    ask = cls._ask
    seconds, pending = [], []

    def timed(self, ctx, n_slots):
        start = time.perf_counter()
        out = ask(self, ctx, n_slots)
        if len(ctx.trials) >= 3:
            seconds.append(time.perf_counter() - start)
            pending.append(bool(ctx.pending))
        return out

    cls._ask = timed
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            search.fit(X, y)
    finally:
        cls._ask = ask
    return np.asarray(seconds), np.asarray(pending), time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-iter", type=int, default=40)
    p.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = p.parse_args(argv)
    X, y = make_classification(2000, 8, random_state=0)
    print(
        "| variant | n_jobs | proposals | with a trial running | median s "
        "| largest s | search s |"
    )
    print("|---|---|---|---|---|---|---|")
    variants = {
        "BayesSearchCV": BayesSearchCV,
        "trade-off": TradeoffBayesSearchCV,
        "trade-off without the bound": TradeoffBayesSearchCV,
    }
    for n_jobs in args.n_jobs:
        for name, cls in variants.items():
            seconds, pending, searches = [], [], []
            for seed in args.seeds:
                search = cls(
                    SVC(),
                    SPACE,
                    cv=3,
                    n_iter=args.n_iter,
                    n_jobs=n_jobs,
                    random_state=seed,
                )
                unbounded = "without" in name
                with _without_bound() if unbounded else contextlib.nullcontext():
                    secs, pend, whole = proposal_seconds(search, X, y)
                seconds.append(secs)
                pending.append(pend)
                searches.append(whole)
            s = np.concatenate(seconds)
            print(
                f"| {name} | {n_jobs} | {s.size} | {np.concatenate(pending).sum()} | "
                f"{np.median(s):.2f} | {s.max():.2f} | {np.median(searches):.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
