"""The GP behind HalvingBayesSearchCV's new configurations: one model over
(configuration, subset size) fitted on the trusted rungs, whose expected
improvement on the base rung picks what starts there, and which new
configurations it picks and which are random.

Users' page: ``doc/strategies/halving.rst``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._rungs import RungLedger, Rungs
from .._trial import SearchContext
from ..acquisition import make_acquisition
from ..gp import GPSurrogate
from ..gp.fabolas_kernels import (
    FractionAxis,
    error_kind,
    fabolas_kernels,
    scores_to_loss,
)
from ..optimize import QUICK, propose_batch

# Observations the GP is fitted on: its MAP refit grows as n^3 (0.18 s at
# 300, 1.8 s at 600 on one core).
_MAX_MODELLED = 250
# Best configurations on the base rung whose neighbourhoods seed the search.
_N_SEEDS = 3
# The GP's hyperparameters are re-optimised once more than this share of the
# observations they were fitted on are new; in between they are kept.
_REOPTIMIZE_GROWTH = 0.25


class RungModel:
    """The GP over (configuration, subset size) and its proposals.

    Parameters
    ----------
    n_train : int
        Training rows of the smallest split (the top rung).
    rungs : Rungs
        The rung ladder.
    n_dims : int
        Dimensions of the search space.
    seed : int
        Seed of the GP's hyperparameter optimisation.
    """

    def __init__(self, n_train: int, rungs: Rungs, n_dims: int, seed: int) -> None:
        self.rungs = rungs
        self.axis = FractionAxis(n_train, rungs.rows[0])
        loss_kernel, _ = fabolas_kernels(n_dims)
        self.gp = GPSurrogate(
            loss_kernel,
            hyperparameter_sampling="map",
            random_state=seed,
            # fresh starts every 5th optimisation: optimisations are rarer
            restart_every=5,
            reoptimize_growth=_REOPTIMIZE_GROWTH,
        )

    def propose(
        self,
        ctx: SearchContext,
        ledger: RungLedger,
        running: list,
        n: int,
        rung: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Maximisers of expected improvement on the rung where the new
        configurations start and are ranked (default: the base rung), from a
        GP over (configuration, subset size) fitted on the trusted rungs'
        trials; the running configurations and the batch so far enter as
        Monte Carlo fantasies there. None while that rung has fewer than two
        successes to measure an improvement against."""
        rungs, axis = self.rungs, self.axis
        n_x, base = ctx.space.n_dims, ledger.base
        start = base if rung is None else int(rung)
        if n <= 0 or n_x == 0 or len(ledger.successes(start)) < 2:
            return np.empty((0, n_x)), np.empty(0)
        level = rungs.of_many([t.fraction for t in ctx.trials])
        # the rungs above the base (highest first, then the latest) fill at
        # most half of the model; the latest base-rung trials the rest
        above = np.flatnonzero(level > base)
        above = above[np.lexsort((-above, -level[above]))][: _MAX_MODELLED // 2]
        at_base = np.flatnonzero(level == base)[::-1]
        use = np.concatenate([above, at_base[: _MAX_MODELLED - len(above)]])
        trials = [ctx.trials[i] for i in use]
        X = ctx.X(trials)
        scores = ctx.scores(trials)
        kind = error_kind(scores)
        loss = scores_to_loss(scores, kind)
        fractions = np.array([t.fraction for t in trials])
        self.gp.fit(axis.with_s(X, axis.to_s(fractions)), loss)
        best_score = ledger.successes(start)[0][1]
        y_best = float(scores_to_loss(np.array([best_score]), kind)[0])
        s_start = float(axis.to_s(rungs.fractions[start]))

        def acquisition_for(P: np.ndarray | None) -> Any:
            pending = None if P is None else axis.with_s(P, s_start)
            ei = make_acquisition(
                self.gp, "ei", y_best=y_best, X_pending=pending, rng=ctx.rng
            )
            return lambda U: ei(axis.with_s(U, s_start))

        on_start = np.flatnonzero(level[use] == start)
        best = on_start[np.argsort(loss[on_start], kind="stable")[:_N_SEEDS]]
        running_x = np.reshape(running, (len(running), n_x))
        return propose_batch(
            acquisition_for,
            n,
            n_x,
            rng=ctx.rng,
            snap=ctx.space.snap,
            seeds=X[best],
            exclude=ctx.X(),
            pending=running_x if len(running_x) else None,
            # base-rung fits take milliseconds: a proposal must cost little
            # more than one
            **QUICK,
        )


def new_configurations(
    ctx: SearchContext,
    model: RungModel,
    ledger: RungLedger,
    running: list,
    starts: list[tuple[int, bool]],
    *,
    n_initial_points: int,
    random_fraction: float,
) -> list[tuple[np.ndarray, float, tuple[int, bool]]]:
    """``(unit-cube point, acquisition value or nan, (rung, hedge))`` of
    unseen configurations, one per start while the space lasts. Hedges
    are always random: their probe pairs must not be chosen by a model of
    the very rungs they test. So are starts above the base rung, as in
    Hyperband's brackets: they are there for the settings that the rungs
    below rank low, and a model fitted on those rungs ranks them low too.
    After ``n_initial_points`` successes the model proposes the rest by its
    expected improvement on the base rung, but for a share
    ``random_fraction`` drawn at random."""
    n_x = ctx.space.n_dims
    modelled = ctx.n_succeeded() >= n_initial_points
    draws = ctx.rng.random(len(starts))
    base = ledger.base
    by_gp = [
        modelled and not h and k == base and d >= random_fraction
        for (k, h), d in zip(starts, draws)
    ]
    seen = np.vstack([ctx.X(), np.reshape(running, (len(running), n_x))])
    U = random_points(ctx, seen, len(starts) - sum(by_gp))
    taken = running + list(U)
    from_gp: dict[int, Any] = {}
    for k in sorted({k for (k, _), gp in zip(starts, by_gp) if gp}):
        n_k = sum(gp and s[0] == k for s, gp in zip(starts, by_gp))
        U_gp, v_gp = model.propose(ctx, ledger, taken, n_k, rung=k)
        taken += list(U_gp)
        # a rung the model cannot rate yet, or a finite space nearly
        # exhausted: random points, if any are left
        more = random_points(
            ctx,
            np.vstack([seen, np.reshape(taken, (len(taken), n_x))]),
            n_k - len(U_gp),
        )
        taken += list(more)
        from_gp[k] = iter([*zip(U_gp, v_gp), *((x, np.nan) for x in more)])
    at_random = iter((x, np.nan) for x in U)
    out = []
    for start, gp in zip(starts, by_gp):
        point = next(from_gp[start[0]] if gp else at_random, None)
        if point is not None:
            out.append((point[0], float(point[1]), start))
    return out


def random_points(ctx: SearchContext, seen: np.ndarray, n: int) -> np.ndarray:
    """Up to ``n`` random configurations not among ``seen``."""
    if n <= 0:
        return np.empty((0, ctx.space.n_dims))
    return ctx.space.sample_unseen(n, ctx.rng, seen)
