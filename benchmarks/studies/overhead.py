"""Surrogate overhead: seconds to propose the next point after n observations.

Usage (from the repository root)::

    python -m benchmarks.studies.overhead --out benchmarks/results/<date>/overhead.md
    python -m benchmarks.studies.overhead --n 25,50 --dims 2 --reps 3   # a quick look

Every optimiser is told the same ``n`` points of a cheap synthetic function on
``[0, 1]^D`` (uniform random points, seeded), then asked for the next one.
A proposal is timed from the moment the ``n``-th observation is handed over
(``fit`` + ``propose_batch`` for ours, ``tell`` + ``ask`` for
scikit-optimize, ``tell`` + ``ask`` for Optuna) to the returned point; the
table reports the median over ``--reps`` successive proposals (observations
``n, n + 1, ...``), after untimed warm-up at ``n - 1`` so that state carried
between iterations (our MCMC chain, skopt's model) is in its steady state.

Optimisers: ours with MCMC and MAP hyperparameters
(``skbayes_search.gp.GPSurrogate`` + ``skbayes_search.optimize.propose_batch``,
EI, batch of one), scikit-optimize's ``Optimizer(base_estimator="GP")`` and
Optuna's ``GPSampler`` and ``TPESampler``, each with its defaults. An
optimiser that cannot be imported is listed as not available, with the reason.

Threads: by default every optimiser runs with one BLAS/OpenMP thread and one
torch thread (``--threads 1``). On this 2-core machine that is the faster
setting for all of them (scikit-optimize's small Cholesky factorisations and
Optuna's torch GP slow down several-fold with two threads, and inside a search
the cores are busy with fits anyway); ``--threads 0`` keeps library defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from .. import RESULTS_DIR


def objective(X: np.ndarray) -> np.ndarray:
    """Cheap multimodal test function on the unit cube (to minimise)."""
    X = np.atleast_2d(X)
    return np.sum((X - 0.3) ** 2, axis=1) + 0.1 * np.sum(np.sin(10 * X), axis=1)


# Each proposer: make(D, seed) -> state; step(state, X, y) -> seconds, where X
# holds all observations and the last row is the one newly handed over.
Proposer = tuple[
    Callable[[int, int], Any], Callable[[Any, np.ndarray, np.ndarray], float]
]


#: Best observed points whose neighbourhoods the acquisition search also scans
#: (as ``BayesSearchCV`` does).
N_SEEDS = 5


def propose_ei(
    surrogate: Any, X: np.ndarray, y: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """One GP-EI proposal, as ``BayesSearchCV`` makes it (batch of one).

    ``surrogate`` is a fitted ``skbayes_search.gp.GPSurrogate`` of the losses
    ``y`` (to minimise) at the unit points ``X``; observed points are never
    proposed again and the best ones seed the acquisition search.
    """
    from skbayes_search.acquisition import make_acquisition
    from skbayes_search.optimize import propose_batch

    y_best = float(np.min(y))
    U, _ = propose_batch(
        lambda P: make_acquisition(
            surrogate, "ei", y_best=y_best, X_pending=P, rng=rng
        ),
        1,
        X.shape[1],
        rng=rng,
        seeds=X[np.argsort(y, kind="stable")[:N_SEEDS]],
        exclude=X,
    )
    return U


def _ours(sampling: str) -> Proposer:
    from skbayes_search.gp import GPSurrogate

    def make(D: int, seed: int) -> Any:
        return {
            "gp": GPSurrogate(hyperparameter_sampling=sampling, random_state=seed),
            "rng": np.random.default_rng(seed),
        }

    def step(state: Any, X: np.ndarray, y: np.ndarray) -> float:
        start = time.perf_counter()
        state["gp"].fit(X, y)
        propose_ei(state["gp"], X, y, state["rng"])
        return time.perf_counter() - start

    return make, step


def _skopt() -> Proposer:
    from skopt import Optimizer

    def make(D: int, seed: int) -> Any:
        return {
            "opt": Optimizer([(0.0, 1.0)] * D, base_estimator="GP", random_state=seed),
            "told": 0,
        }

    def step(state: Any, X: np.ndarray, y: np.ndarray) -> float:
        opt, told = state["opt"], state["told"]
        if told < len(X) - 1:
            # Untimed: catch up to n - 1 observations in one bulk tell.
            opt.tell(X[told:-1].tolist(), y[told:-1].tolist())
        start = time.perf_counter()
        # skopt fits its GP and optimises the acquisition inside tell().
        opt.tell(X[-1].tolist(), float(y[-1]))
        opt.ask()
        state["told"] = len(X)
        return time.perf_counter() - start

    return make, step


def _optuna(sampler_name: str) -> Proposer:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def make(D: int, seed: int) -> Any:
        sampler = getattr(optuna.samplers, sampler_name)(seed=seed)
        dists = {
            f"x{i}": optuna.distributions.FloatDistribution(0.0, 1.0) for i in range(D)
        }
        return {
            "study": optuna.create_study(sampler=sampler),
            "dists": dists,
            "told": 0,
        }

    def step(state: Any, X: np.ndarray, y: np.ndarray) -> float:
        study, dists = state["study"], state["dists"]

        def add(rows: range) -> None:
            study.add_trials(
                [
                    optuna.trial.create_trial(
                        params={f"x{i}": float(v) for i, v in enumerate(X[r])},
                        distributions=dists,
                        value=float(y[r]),
                    )
                    for r in rows
                ]
            )

        add(range(state["told"], len(X) - 1))
        start = time.perf_counter()
        add(range(len(X) - 1, len(X)))
        # The sampler's work happens when the trial's parameters are drawn.
        study.ask(fixed_distributions=dists)
        state["told"] = len(X)
        return time.perf_counter() - start

    return make, step


PROPOSERS: dict[str, tuple[str, Callable[[], Proposer]]] = {
    "ours-mcmc": (
        "skbayes_search GPSurrogate (MCMC) + propose_batch",
        lambda: _ours("mcmc"),
    ),
    "ours-map": (
        "skbayes_search GPSurrogate (MAP) + propose_batch",
        lambda: _ours("map"),
    ),
    "skopt-gp": ('scikit-optimize Optimizer(base_estimator="GP")', _skopt),
    "optuna-gp": ("Optuna GPSampler", lambda: _optuna("GPSampler")),
    "optuna-tpe": ("Optuna TPESampler", lambda: _optuna("TPESampler")),
}


def measure(
    proposer: Proposer, n: int, D: int, reps: int, seed: int = 0
) -> list[float]:
    """Seconds of ``reps`` successive proposals after n, n + 1, ... observations."""
    make, step = proposer
    rng = np.random.default_rng(seed)
    X = rng.random((n + reps - 1, D))
    y = objective(X)
    state = make(D, seed)
    # Untimed warm-up at n - 1 observations (MCMC burn-in, first model fit).
    step(state, X[: n - 1], y[: n - 1])
    return [step(state, X[: n + r], y[: n + r]) for r in range(reps)]


@contextlib.contextmanager
def _thread_limits(threads: int, proposer: Proposer) -> Iterator[None]:
    """Limit BLAS/OpenMP and torch threads to ``threads`` (0: no limit).

    threadpoolctl only limits libraries already loaded, and the optimisers
    load some lazily (scipy's own OpenBLAS, Optuna's torch), so one small
    untimed proposal runs first to load them.
    """
    if threads <= 0:
        yield
        return
    measure(proposer, 12, 2, 1)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    with threadpool_limits(threads):
        yield


def _table(
    results: dict, names: list[str], ns: list[int], dims: list[int]
) -> list[str]:
    lines = [
        "| n | D | " + " | ".join(names) + " |",
        "|---" * (2 + len(names)) + "|",
    ]
    for D in dims:
        for n in ns:
            cells = []
            for name in names:
                times = results.get((name, n, D))
                cells.append(f"{statistics.median(times):.3f}" if times else "-")
            lines.append(f"| {n} | {D} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the micro-benchmark and write the Markdown table."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.studies.overhead", description=__doc__.split("\n")[0]
    )
    p.add_argument("--n", default="25,50,100,200", help="observation counts")
    p.add_argument("--dims", default="2,5,10", help="dimensions")
    p.add_argument("--reps", type=int, default=5, help="proposals per cell (median)")
    p.add_argument(
        "--methods",
        default=",".join(PROPOSERS),
        help="comma list of " + ", ".join(PROPOSERS),
    )
    p.add_argument(
        "--out",
        default=None,
        help="Markdown file (default benchmarks/results/overhead-<date>.md)",
    )
    p.add_argument(
        "--threads", type=int, default=1, help="BLAS/torch threads, 0 = defaults"
    )
    args = p.parse_args(argv)
    ns = [int(v) for v in args.n.split(",")]
    dims = [int(v) for v in args.dims.split(",")]
    names = [m.strip() for m in args.methods.split(",")]
    out = Path(args.out) if args.out else RESULTS_DIR / f"overhead-{dt.date.today()}.md"
    out.parent.mkdir(parents=True, exist_ok=True)

    missing, results, ran = {}, {}, []
    for name in names:
        try:
            proposer = PROPOSERS[name][1]()
        except Exception as exc:  # a broken install raises more than ImportError
            missing[name] = f"{type(exc).__name__}: {exc}"
            print(f"{name}: NOT AVAILABLE: {missing[name]}", flush=True)
            continue
        ran.append(name)
        for D in dims:
            for n in ns:
                try:
                    with _thread_limits(args.threads, proposer):
                        times = measure(proposer, n, D, args.reps)
                except Exception as exc:
                    missing[f"{name} (n={n}, D={D})"] = f"{type(exc).__name__}: {exc}"
                    continue
                results[(name, n, D)] = times
                print(
                    f"{name} n={n} D={D}: median {statistics.median(times):.3f}s",
                    flush=True,
                )

    cmd = "python -m benchmarks.studies.overhead " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    date = dt.datetime.now().isoformat(timespec="seconds")
    lines = [
        "# Surrogate overhead: seconds per proposal",
        "",
        f"- command: `{cmd}`",
        f"- date: {date}; machine: {os.cpu_count()} cores, {platform.platform()}; "
        f"1-minute load at the end: {os.getloadavg()[0]:.1f}",
        f"- threads: {args.threads or 'library defaults'} (BLAS/OpenMP and torch)",
        f"- median of {args.reps} successive proposals after n, n+1, ... "
        "observations of a synthetic function on [0, 1]^D (same points for every "
        "optimiser)",
        "",
        *[f"- {name}: {PROPOSERS[name][0]}" for name in ran],
        "",
        *_table(results, ran, ns, dims),
        "",
    ]
    if missing:
        lines += [
            "Not available:",
            "",
            *[f"- {k}: {v}" for k, v in missing.items()],
            "",
        ]
    out.write_text("\n".join(lines))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
