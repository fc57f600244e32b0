"""Where HalvingBayesSearchCV's new configurations start, beyond the base
rung: Hyperband's start rungs (``start_rungs="hyperband"``) and neighbours of
promoted configurations (``neighbour_fraction``).

Users' page: ``doc/strategies/halving.rst``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._trial import SearchContext
from ..space._unseen import near_unseen

#: Standard deviation of a neighbour's move, per unit-cube coordinate: a
#: factor of about 3 in an RBF SVC's gamma over 1e-4..10.
NEIGHBOUR_SCALE = 0.1

Fits = Callable[[bytes | None, int], bool]


def hyperband_shares(n_levels: int, factor: float) -> np.ndarray:
    """Share of new configurations that start ``j`` rungs above the lowest,
    as Hyperband allots them to its brackets (Li et al. 2018).

    With ``S = n_levels - 1``, the bracket that starts ``j`` rungs up holds
    ``factor**(S - j) / (S - j + 1)`` configurations per unit: every bracket
    gets about the same budget, so each larger start gets ``factor`` times
    fewer configurations, each worth ``factor`` times more rows.

    Examples
    --------
    >>> from skbayes_search.strategies._halving_starts import hyperband_shares
    >>> hyperband_shares(3, factor=3).round(3)  # 9/3, 3/2, 1/1
    array([0.545, 0.273, 0.182])
    """
    s = int(n_levels) - 1
    j = np.arange(s + 1, dtype=float)
    w = float(factor) ** (s - j) / (s - j + 1)
    return w / w.sum()


def start_rung(
    ctx: SearchContext,
    base: int,
    top: int,
    fits: Fits,
    *,
    hyperband: bool,
    factor: float,
) -> int | None:
    """The rung a new configuration starts on: the base, or with
    ``hyperband`` a rung drawn as Hyperband fills its brackets (the highest
    that fits in the time left if the draw does not); None when not even the
    base rung fits."""
    k = base
    # not on the top rung: a configuration there would count as measured on
    # all data and take the incumbent's own all-data evaluation away
    if hyperband and base < top - 1:
        shares = hyperband_shares(top - base, factor)
        k = base + int(ctx.rng.choice(len(shares), p=shares))
    while k >= base and not fits(None, k):
        k -= 1
    return k if k >= base else None


def neighbour(
    ctx: SearchContext,
    x: np.ndarray,
    k: int,
    *,
    base: int,
    top: int,
    probability: float,
    running: list,
    fits: Fits,
) -> np.ndarray | None:
    """With ``probability``, an unseen point near a promoted
    configuration ``x``, for the rung ``k`` it climbs to if that is two or
    more above the base rung and below all data, and if its cost, taken as
    the promoted one's, fits; it joins ``running``."""
    # not on the top rung: one all-data trial is the answer's evaluation, the
    # time kept for it covers one; not on the rung above the base, where the
    # model's proposals near the incumbent already go
    if not (
        probability > 0
        and base + 2 <= k < top
        and ctx.rng.random() < probability
        and fits(x.tobytes(), k)
    ):
        return None
    seen = np.vstack([ctx.X(), np.reshape(running, (-1, ctx.space.n_dims))])
    point = near_unseen(x, ctx.rng, NEIGHBOUR_SCALE, ctx.space.snap, seen)
    if point is not None:
        running.append(point)
    return point
