"""Does the GP's length-scale prior make BO on one subset propose corners?

On covertype (SVC, 300 s) the lead rung's GP put C or gamma on a bound in 47
of 104 proposals, 25 of those scoring below 0.6; refitted on one run's eight
trials, its gamma length scales were 1.8-9.5 (unit cube) and its EI peaked at
the corner C 1000, gamma 10. This study measures, away from the clock, what
the length-scale prior does to plain GP-EI on one subset:

1. ``surface``: the cross-validated accuracy of SVC on a grid of
   (log C, log gamma) for one task at a fixed number of training rows
   (cached, resumable);
2. ``replay``: sequential BO with :class:`~skbayes_search.strategies.bayes.
   BayesProposer` (as the lead rung runs it: EI, sampled hyperparameters,
   3 random starts) on that grid, every proposal snapped to its nearest grid
   point, for each prior variant and seed; reports the regret of the best
   score after n trials and the share of proposals on a bound.
   ``--ties both`` runs each variant without and with the proposer's random
   proposals on a plateau (``BayesProposer(explore_ties=...)``);
   ``--explore random,sobol,maximin`` runs each with the rule on and those
   ways of choosing the plateau's points: independent draws, the Sobol
   sequence of the initial design continued, or of 64 random candidates the
   one farthest from every point seen. With ``--explore`` the GP sees each
   proposal where it was made (its score is the nearest grid point's), so
   that a continued design can tell which of its points have been run.

Run from the repository root::

    python -m benchmarks.studies.lead_prior surface --task svc-covertype_75k \\
        --rows 5670 --out benchmarks/results/<folder>
    python -m benchmarks.studies.lead_prior replay --out benchmarks/results/<folder>
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

_GRID = 11
_LOG_C = (-3.0, 3.0)
_LOG_GAMMA = (-4.0, 1.0)
_N_FOLDS = 3


def _surface_path(out: Path, task: str, rows: int) -> Path:
    return out / f"surface-{task}-{rows}.json"


def surface(task_name: str, rows: int, out: Path, data_dir: str, n_jobs: int) -> Path:
    """Grid of mean CV accuracy at ``rows`` training rows per fold (cached
    per grid point, so an interrupted run resumes)."""
    from joblib import Parallel, delayed
    from sklearn.base import clone
    from sklearn.model_selection import (
        StratifiedKFold,
        cross_val_score,
        train_test_split,
    )

    from benchmarks.tasks import load_task

    path = _surface_path(out, task_name, rows)
    done = json.loads(path.read_text()) if path.exists() else {"points": {}}
    task = load_task(task_name, data_dir)
    n_sub = rows * _N_FOLDS // (_N_FOLDS - 1)
    X, _, y, _ = train_test_split(
        task.X_search,
        task.y_search,
        train_size=n_sub,
        stratify=task.y_search,
        random_state=0,
    )
    cv = StratifiedKFold(_N_FOLDS, shuffle=True, random_state=0)
    lc = np.linspace(*_LOG_C, _GRID)
    lg = np.linspace(*_LOG_GAMMA, _GRID)
    todo = [
        (i, j)
        for i in range(_GRID)
        for j in range(_GRID)
        if f"{i},{j}" not in done["points"]
    ]

    def one(i: int, j: int) -> tuple[str, float, float]:
        est = clone(task.estimator()).set_params(
            svc__C=10.0 ** lc[i], svc__gamma=10.0 ** lg[j]
        )
        t0 = time.perf_counter()
        s = cross_val_score(est, X, y, cv=cv, n_jobs=1)
        return f"{i},{j}", float(np.mean(s)), time.perf_counter() - t0

    done.update(task=task_name, rows=rows, log_C=lc.tolist(), log_gamma=lg.tolist())
    out.mkdir(parents=True, exist_ok=True)
    # chunks, so a kill loses at most one chunk of points
    for start in range(0, len(todo), 4 * n_jobs):
        chunk = todo[start : start + 4 * n_jobs]
        res = Parallel(n_jobs=n_jobs)(delayed(one)(i, j) for i, j in chunk)
        for key, score, secs in res:
            done["points"][key] = [score, secs]
        path.write_text(json.dumps(done))
        print(f"{len(done['points'])}/{_GRID**2}", flush=True)
    return path


def _variants() -> dict[str, tuple[float, float | None]]:
    # name -> (upper bound of each length scale on the unit cube, median of
    # a log-normal prior with sd 1 on log l inside the bounds; None: flat)
    return {
        "tophat-10": (10.0, None),
        "tophat-2": (2.0, None),
        "tophat-1": (1.0, None),
        "tophat-0.5": (0.5, None),
        "lognormal-0.3": (10.0, 0.3),
        "lognormal-1": (10.0, 1.0),
    }


def _kernel(high: float, median: float | None) -> Any:
    from skbayes_search.gp import Matern52

    bounds = (np.log(0.01), np.log(high))
    prior = None if median is None else (float(np.log(median)), 1.0)
    return Matern52(log_length_bounds=bounds, log_length_prior=prior)


def _explorer(how: str) -> type:
    """A BayesProposer whose plateau points are chosen ``how``."""
    from skbayes_search.space._unseen import drop_seen
    from skbayes_search.strategies.bayes import BayesProposer

    class Explorer(BayesProposer):
        def _explore(self, ctx: Any, n: int, seen: np.ndarray) -> np.ndarray:
            if how == "sobol":
                m = 2 ** int(np.ceil(np.log2(len(seen) + 4 * n)))
                design = ctx.space.sample(m, np.random.default_rng(self.seed))
                U = drop_seen(design, seen, n)
                if len(U) == n:
                    return U
            elif how == "maximin":
                C = ctx.space.sample(64 * n, ctx.rng, method="random")
                picked: list[np.ndarray] = []
                # the proposer explores only after its initial design, so
                # seen is never empty here
                for _ in range(n):
                    ref = np.vstack([seen, *picked])
                    d = np.min(np.linalg.norm(C[:, None] - ref[None], axis=2), axis=1)
                    picked.append(C[int(np.argmax(d))])
                return np.asarray(picked)
            return super()._explore(ctx, n, seen)

    return Explorer


def grid_context(
    grid: dict, seed: int, n_trials: int, max_time: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any, Any]:
    """A surface's grid axes (log10 C, log10 gamma), its scores and fit
    seconds as (C, gamma) arrays, and the search space and an empty search
    context a proposer replays on (``max_time`` only switches a cost model
    on; nothing is timed)."""
    from skbayes_search._trial import SearchContext
    from skbayes_search.space import Real, SearchSpace

    lc, lg = np.asarray(grid["log_C"]), np.asarray(grid["log_gamma"])
    score = np.full((len(lc), len(lg)), np.nan)
    secs = np.full((len(lc), len(lg)), np.nan)
    for key, (s, t) in grid["points"].items():
        i, j = map(int, key.split(","))
        score[i, j], secs[i, j] = s, t
    space = SearchSpace(
        {
            "C": Real(10.0 ** lc[0], 10.0 ** lc[-1], prior="log-uniform"),
            "gamma": Real(10.0 ** lg[0], 10.0 ** lg[-1], prior="log-uniform"),
        }
    )
    ctx = SearchContext(
        space=space,
        rng=np.random.default_rng(seed),
        seed=seed,
        n_train=1000,
        n_classes=2,
        n_splits=3,
        budget=n_trials,
        max_time=max_time,
        n_jobs_effective=1,
        start_time=0.0,
    )
    return lc, lg, score, secs, space, ctx


def replay_one(
    grid: dict,
    variant: tuple[float, float | None],
    seed: int,
    n_trials: int,
    explore_ties: bool = False,
    explore: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One BO run on a surface: best score after each trial, and for each
    trial whether it sat on a bound of C or gamma. ``explore_ties``: the
    proposer's rule of random proposals on a plateau (off: as the prior's
    comparison was measured). ``explore``: with the rule on, how its points
    are chosen (the GP then sees each proposal where it was made)."""
    from skbayes_search._trial import TrialRecord
    from skbayes_search.gp import GPSurrogate
    from skbayes_search.strategies.bayes import BayesProposer

    lc, lg, S, _, space, ctx = grid_context(grid, seed, n_trials)
    n = len(lc)
    cls = BayesProposer if explore is None else _explorer(explore)
    proposer = cls(
        acquisition="ei",
        hyperparameter_sampling="mcmc",
        n_initial_points=3,
        seed=seed,
        mcmc_until=40,
        explore_ties=explore_ties or explore is not None,
    )
    kernel = _kernel(*variant)
    proposer.surrogate = GPSurrogate(
        kernel, hyperparameter_sampling="mcmc", random_state=seed
    )
    best, edge = [], []
    for it in range(n_trials):
        (trial,) = proposer.ask(ctx, ctx.trials, 1, fraction=1.0, iteration=it)
        i = int(np.argmin(np.abs(np.log10(trial.params["C"]) - lc)))
        j = int(np.argmin(np.abs(np.log10(trial.params["gamma"]) - lg)))
        params = {"C": 10.0 ** lc[i], "gamma": 10.0 ** lg[j]}
        if explore is not None:
            params = trial.params
        x = space.to_unit([params])[0]
        ctx.trials.append(
            TrialRecord(
                params=params,
                x=x,
                fraction=1.0,
                n_resources=1000,
                score=float(S[i, j]),
                cost=1.0,
                fit_time=1.0,
                failed=False,
                iter=it,
                elapsed_time=float(it),
            )
        )
        best.append(np.nanmax(ctx.scores()))
        edge.append(i in (0, n - 1) or j in (0, n - 1))
    return np.array(best), np.array(edge)


def replay(
    out: Path,
    seeds: int,
    n_trials: int,
    n_jobs: int,
    variants: list[str] | None = None,
    ties: str = "off",
    explore: list[str] | None = None,
) -> str:
    """Regret after n trials and share of bound proposals, per surface and
    variant (all, or those named); written to ``replay.json`` (``ties``
    "off") or ``replay-ties.json`` and returned as a markdown table.
    ``ties``: the proposer's plateau rule off, on, or each variant both
    ways (named ``<variant>+ties`` when on)."""
    from joblib import Parallel, delayed

    chosen = {
        name: v
        for name, v in _variants().items()
        if variants is None or name in variants
    }
    runs_of = [
        (name + ("+ties" if on else ""), v, on, None)
        for name, v in chosen.items()
        for on in {"off": (False,), "on": (True,), "both": (False, True)}[ties]
    ]
    if explore:
        runs_of = [
            (f"{name}+{how}", v, True, how)
            for name, v in chosen.items()
            for how in explore
        ]
    rows = []
    results = {}
    checkpoints = [n for n in (5, 8, 12, 16, 20, 30) if n <= n_trials]
    for path in sorted(out.glob("surface-*.json")):
        grid = json.loads(path.read_text())
        if len(grid["points"]) < _GRID**2:
            continue
        top = max(v[0] for v in grid["points"].values())
        for name, variant, on, how in runs_of:
            runs = Parallel(n_jobs=n_jobs)(
                delayed(replay_one)(grid, variant, s, n_trials, on, how)
                for s in range(seeds)
            )
            regret = np.array([top - b for b, _ in runs])
            edge = np.array([e[3:] for _, e in runs])
            label = f"{grid['task']} @ {grid['rows']}"
            results.setdefault(label, {})[name] = {
                "regret": regret.tolist(),
                "edge": edge.tolist(),
                "best": top,
            }
            cells = [
                f"{100 * np.median(r):.2f} ({100 * r.mean():.2f})"
                for r in (regret[:, n - 1] for n in checkpoints)
            ]
            rows.append(
                f"| {label} | {name} | "
                + " | ".join(cells)
                + f" | {100 * edge.mean():.0f} % |"
            )
            print(rows[-1], flush=True)
    name = "replay.json" if ties == "off" else "replay-ties.json"
    if explore:
        name = "replay-explore.json"
    (out / name).write_text(json.dumps(results))
    head = " | ".join(f"regret @ {n}" for n in checkpoints)
    table = [
        f"| surface | prior | {head} | GP proposals on a bound |",
        "|" + "---|" * (3 + len(checkpoints)),
        *rows,
    ]
    return "\n".join(table)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("surface")
    s.add_argument("--task", required=True)
    s.add_argument("--rows", type=int, required=True)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--data-dir", default="../shared/datasets")
    s.add_argument("--n-jobs", type=int, default=2)
    r = sub.add_parser("replay")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--n-trials", type=int, default=20)
    r.add_argument("--n-jobs", type=int, default=2)
    r.add_argument("--variants", help="comma-separated prior variants (all)")
    r.add_argument("--ties", choices=("off", "on", "both"), default="off")
    r.add_argument("--explore", help="comma-separated: random, sobol, maximin")
    args = p.parse_args()
    if args.cmd == "surface":
        surface(args.task, args.rows, args.out, args.data_dir, args.n_jobs)
    else:
        variants = args.variants.split(",") if args.variants else None
        explore = args.explore.split(",") if args.explore else None
        print(
            replay(
                args.out,
                args.seeds,
                args.n_trials,
                args.n_jobs,
                variants,
                args.ties,
                explore,
            )
        )


if __name__ == "__main__":
    main()
