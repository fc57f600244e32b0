"""Does a pessimistic prior mean keep the lead rung's GP off the score floor?

In the race, the lead rung of ``HalvingBayesSearchCV`` spends much of its
fit time on RBF-SVC settings with ``gamma`` on a bound of the box or ``C`` on
its lower bound, which score as the majority class. Far from every trial a
GP's posterior falls back to its constant mean, with its full prior
variance, so expected improvement is largest where nothing has been tried:
the corners. De Ath et al. (2020, "What do you mean? The role of the mean
function in Bayesian optimisation") pin the constant mean to the worst
observation instead, which makes the unexplored parts of the box look bad.

This study replays the lead's proposals on the measured surfaces of
:mod:`benchmarks.studies.lead_prior` (11 x 11 grids of SVC's 3-fold CV
accuracy and fit seconds at a lead rung's training rows), as the lead runs
them under ``max_time``: EI per second with the cost GP of log fit seconds,
sampled hyperparameters, the lead's length-scale prior, 3 random starts;
every proposal snapped to its nearest grid point, its cost that point's
measured seconds. Variants: the loss GP's constant mean sampled under its
usual prior (``sampled``, the library's), or held (prior sd 0.05 in
standardised units) at the ``q`` quantile of the standardised losses
(``q=1``: the worst trial). The cost GP is left as it is.

Reported per surface and variant: regret (the surface's best CV accuracy
less the best found, pp) after 5, 8, 12 and 20 trials and averaged over
trials 4-20, with the p value of a paired Wilcoxon test (by seed) of that
average against the first variant's; the share of GP proposals on the
floor's bounds (``gamma`` at either end, ``C`` at its lower end) over trials
4-8 and 4-20, by count and by seconds; and the seconds spent until the best
found is within 0.5 pp of the surface's best (median over seeds, with how
many seeds got there).

Run from the repository root::

    python -m benchmarks.studies.lead_mean \\
        --surfaces benchmarks/results/2026-11-28-lead-prior \\
        --surfaces benchmarks/results/2026-11-28-lead-prior/holdout --seeds 30
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

import skbayes_search.gp.surrogate as _surrogate
from skbayes_search.gp.inference import MEAN_PRIOR_SD, LogPosterior
from skbayes_search.strategies._halving_lead import (
    _MCMC_UNTIL,
    _N_INITIAL,
    LEAD_LENGTH_PRIOR,
    lead_acquisition,
)

from .lead_prior import _GRID, grid_context

_PIN_SD = 0.05
_CHECKPOINTS = (5, 8, 12, 20)


class _PinnedMean(LogPosterior):
    """The log posterior with the constant mean's prior moved to the
    ``q`` quantile of the (standardised) losses, with sd ``_PIN_SD``."""

    q = 1.0

    def __init__(self, kernel: Any, X: np.ndarray, y: np.ndarray) -> None:
        super().__init__(kernel, X, y)
        self.m0 = float(np.quantile(self.y, self.q))

    def _shift(self, m: float) -> tuple[float, float]:
        # replaces the usual N(0, MEAN_PRIOR_SD^2) term by N(m0, _PIN_SD^2)
        value = -0.5 * ((m - self.m0) / _PIN_SD) ** 2 + 0.5 * (m / MEAN_PRIOR_SD) ** 2
        grad = -(m - self.m0) / _PIN_SD**2 + m / MEAN_PRIOR_SD**2
        return value, grad

    def __call__(self, theta: np.ndarray) -> float:
        value = super().__call__(theta)
        if not np.isfinite(value):
            return value
        return value + self._shift(float(theta[0]))[0]

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = super().value_and_grad(theta)
        if np.isfinite(value):
            grad = grad.copy()
            grad[0] += self._shift(float(theta[0]))[1]
        return value, grad


@contextlib.contextmanager
def _pinned(q: float) -> Iterator[None]:
    # The library has no option for a held mean (it was measured here and
    # not adopted), so the study swaps the surrogate module's log posterior
    # for the length of one fit.
    cls = type("_Pinned", (_PinnedMean,), {"q": q})
    _surrogate.LogPosterior = cls
    try:
        yield
    finally:
        _surrogate.LogPosterior = LogPosterior


def _loss_surrogate(q: float | None, seed: int) -> Any:
    """The lead's loss GP, its mean pinned at the ``q`` quantile (None: the
    library's sampled mean)."""
    from skbayes_search.gp import GPSurrogate, Matern52

    kernel = Matern52(log_length_prior=LEAD_LENGTH_PRIOR)
    if q is None:
        return GPSurrogate(kernel, hyperparameter_sampling="mcmc", random_state=seed)

    class Pinned(GPSurrogate):
        def fit(self, X: Any, y: Any) -> GPSurrogate:
            with _pinned(q):
                return super().fit(X, y)

    return Pinned(kernel, hyperparameter_sampling="mcmc", random_state=seed)


def replay_one(
    grid: dict, q: float | None, seed: int, n_trials: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One lead-rung BO run on a surface: the best score after each trial,
    whether each trial sat on a floor bound, and each trial's seconds."""
    from skbayes_search._trial import TrialRecord
    from skbayes_search.gp import Matern52
    from skbayes_search.strategies.bayes import BayesProposer

    # max_time only switches EI per second's cost model on
    lc, lg, score, secs, space, ctx = grid_context(grid, seed, n_trials, 1e9)
    n = len(lc)
    # the lead's own settings, so that the replay follows the lead
    proposer = BayesProposer(
        acquisition=lead_acquisition(timed=True),
        hyperparameter_sampling="mcmc",
        n_initial_points=_N_INITIAL,
        seed=seed,
        mcmc_until=_MCMC_UNTIL,
        kernel=Matern52(log_length_prior=LEAD_LENGTH_PRIOR),
    )
    proposer.surrogate = _loss_surrogate(q, seed)
    best, floor, cost = [], [], []
    for it in range(n_trials):
        (trial,) = proposer.ask(ctx, ctx.trials, 1, fraction=1.0, iteration=it)
        i = int(np.argmin(np.abs(np.log10(trial.params["C"]) - lc)))
        j = int(np.argmin(np.abs(np.log10(trial.params["gamma"]) - lg)))
        params = {"C": 10.0 ** lc[i], "gamma": 10.0 ** lg[j]}
        c = float(secs[i, j])
        ctx.trials.append(
            TrialRecord(
                params=params,
                x=space.to_unit([params])[0],
                fraction=1.0,
                n_resources=1000,
                score=float(score[i, j]),
                cost=c,
                fit_time=c / 3,
                failed=False,
                iter=it,
                elapsed_time=float(it),
            )
        )
        best.append(np.nanmax(ctx.scores()))
        floor.append(j in (0, n - 1) or i == 0)
        cost.append(c)
    return np.array(best), np.array(floor), np.array(cost)


def _row(
    label: str, name: str, top: float, runs: list, base: np.ndarray | None
) -> tuple[str, np.ndarray]:
    regret = 100 * np.array([top - b for b, _, _ in runs])
    per_seed = regret[:, _N_INITIAL:].mean(axis=1)
    p = "-"
    if base is not None and np.any(per_seed != base):
        from scipy.stats import wilcoxon

        p = f"{wilcoxon(per_seed, base).pvalue:.3f}"
    floor = np.array([f for _, f, _ in runs])[:, _N_INITIAL:]
    secs = np.array([c for _, _, c in runs])
    gp_secs = secs[:, _N_INITIAL:]
    ttt = []
    for r, s in zip(regret, np.cumsum(secs, axis=1)):
        hit = np.flatnonzero(r <= 0.5)
        ttt.append(s[hit[0]] if len(hit) else np.inf)
    cells = [f"{regret[:, k - 1].mean():.2f}" for k in _CHECKPOINTS]

    def shares(f: np.ndarray, s: np.ndarray) -> str:
        return f"{100 * f.mean():.0f} / {100 * (s * f).sum() / s.sum():.0f}"

    share = f"{shares(floor[:, :5], gp_secs[:, :5])} | {shares(floor, gp_secs)}"
    hits = int(np.isfinite(ttt).sum())
    row = (
        f"| {label} | {name} | "
        + " | ".join(cells)
        + f" | {per_seed.mean():.2f} | {p} | {share} | "
        + f"{np.median(ttt):.1f} ({hits}/{len(ttt)}) |"
    )
    return row, per_seed


def replay(
    folders: list[Path], quantiles: list[float | None], seeds: int, n_jobs: int
) -> str:
    """The markdown table over every complete surface in ``folders``."""
    from joblib import Parallel, delayed

    rows = []
    for folder in folders:
        for path in sorted(folder.glob("surface-*.json")):
            grid = json.loads(path.read_text())
            if len(grid["points"]) < _GRID**2:
                continue
            top = max(v[0] for v in grid["points"].values())
            label = f"{grid['task']} @ {grid['rows']}, {100 * top:.2f}"
            base = None
            for q in quantiles:
                runs = Parallel(n_jobs=n_jobs)(
                    delayed(replay_one)(grid, q, s, 20) for s in range(seeds)
                )
                name = "sampled" if q is None else f"q={q:g}"
                row, per_seed = _row(label, name, top, runs, base)
                base = per_seed if base is None else base
                rows.append(row)
                print(rows[-1], flush=True)
    head = " | ".join(f"regret @ {k}" for k in _CHECKPOINTS)
    return "\n".join(
        [
            f"| surface | mean | {head} | mean regret 4-20 | p | floor bounds "
            "4-8, % of trials / % of s | floor bounds 4-20 | s to 0.5 pp (seeds) |",
            "|" + "---|" * (5 + len(_CHECKPOINTS) + 2),
            *rows,
        ]
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--surfaces", type=Path, action="append", required=True)
    p.add_argument("--quantiles", default="sampled,1,0.75")
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--n-jobs", type=int, default=1)
    args = p.parse_args()
    qs = [None if v == "sampled" else float(v) for v in args.quantiles.split(",")]
    print(replay(args.surfaces, qs, args.seeds, args.n_jobs))


if __name__ == "__main__":
    main()
