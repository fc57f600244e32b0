"""The training fractions TradeoffBayesSearchCV may choose, as one extra
unit coordinate beside the configuration's.

The coordinate is linear in log(fraction) and snapped to the nearest allowed
fraction, so the GPs see a subset size as one more input and every proposal
is a fraction the user allowed. With one allowed fraction there is no extra
coordinate. Users' page: ``doc/design/tradeoff.rst``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._trial import SearchContext, Trial
from ..space._unseen import drop_seen


class FractionGrid:
    """Encoding of (configuration, fraction) in the unit cube.

    Parameters
    ----------
    fractions : ndarray
        The allowed fractions, sorted and unique.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.strategies._tradeoff_grid import FractionGrid
    >>> grid = FractionGrid(np.array([0.25, 0.5, 1.0]))
    >>> grid.unit
    array([0. , 0.5, 1. ])
    >>> grid.fractions[grid.nearest(np.array([0.1, 0.7]))]
    array([0.25, 0.5 ])
    """

    def __init__(self, fractions: np.ndarray) -> None:
        self.fractions = np.asarray(fractions, dtype=float)
        if self.fractions.size > 1:
            logs = np.log(self.fractions)
            self.unit = (logs - logs[0]) / (logs[-1] - logs[0])
        else:
            self.unit = np.empty(0)

    @property
    def n_extra(self) -> int:
        """Extra unit coordinates: 1 when the fraction is searched, else 0."""
        return 1 if self.fractions.size > 1 else 0

    def nearest(self, u: np.ndarray) -> np.ndarray:
        """Index of the allowed fraction nearest to each unit coordinate."""
        return np.abs(np.asarray(u)[:, None] - self.unit[None, :]).argmin(axis=1)

    def snapper(self, ctx: SearchContext) -> Callable[[np.ndarray], np.ndarray]:
        """Snaps enriched unit points to the space and the allowed fractions."""
        D = ctx.space.n_dims

        def snap(U: np.ndarray) -> np.ndarray:
            U = np.atleast_2d(np.asarray(U, dtype=float))
            out = np.empty_like(U)
            out[:, :D] = ctx.space.snap(U[:, :D])
            if self.n_extra:
                out[:, D] = self.unit[self.nearest(U[:, D])]
            return out

        return snap

    def encode(self, ctx: SearchContext, pending: bool = False) -> np.ndarray:
        """Enriched unit points of the finished (or the running) trials."""
        X = ctx.X_pending() if pending else ctx.X()
        if not self.n_extra:
            return X
        trials = ctx.pending if pending else ctx.trials
        fractions = np.array([t.fraction for t in trials], dtype=float)
        idx = np.abs(fractions[:, None] - self.fractions[None, :]).argmin(axis=1)
        return np.hstack([X, self.unit[idx][:, None]])

    def decode(
        self, ctx: SearchContext, U: np.ndarray, iteration: int, values: Any = None
    ) -> list[Trial]:
        """Trials of enriched unit points, with their acquisition values."""
        D = ctx.space.n_dims
        params = ctx.space.from_unit(U[:, :D])
        if self.n_extra:
            fracs = self.fractions[self.nearest(U[:, D])]
        else:
            fracs = np.full(len(U), self.fractions[0])
        if values is None:
            values = np.full(len(U), np.nan)
        return [
            Trial(p, float(f), iter=iteration, extras={"acquisition_value": float(v)})
            for p, f, v in zip(params, fracs, values)
        ]

    def initial_design(self, ctx: SearchContext, k: int) -> np.ndarray:
        """``k`` Sobol configurations with a Latin-hypercube column of
        fractions, fixed by the seed (so not by how many trials a batch
        holds)."""
        rng = np.random.default_rng(ctx.seed)
        U = ctx.space.sample(k, rng)
        if self.n_extra:
            strata = (rng.permutation(k) + rng.random(k)) / k
            U = np.hstack([U, strata[:, None]])
        return self.snapper(ctx)(U)

    def random_points(self, ctx: SearchContext, n: int) -> np.ndarray:
        """Random points neither evaluated nor running (fewer once a finite
        space runs out)."""
        m = 16 * n
        U = ctx.space.sample(m, ctx.rng, method="random")
        if self.n_extra:
            U = np.hstack([U, ctx.rng.random((m, 1))])
        U = self.snapper(ctx)(U)
        seen = np.vstack([self.encode(ctx), self.encode(ctx, pending=True)])
        return drop_seen(U, seen, n)
