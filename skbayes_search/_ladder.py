"""The rungs of the halving search: training-subset sizes, geometric up to all rows.

:class:`Rungs` maps training fractions to rungs; what the trials on them say
is read by :class:`skbayes_search._rungs.RungLedger`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["Rungs"]


@dataclass(frozen=True)
class Rungs:
    """Training rows per rung: ``min_rows * factor**k`` below the top, all
    rows at the top.

    Attributes
    ----------
    rows : tuple of int
        Strictly increasing; the last is ``n_train``.
    n_train : int
        Training rows of the smallest split.

    Examples
    --------
    >>> from skbayes_search._ladder import Rungs
    >>> rungs = Rungs.geometric(n_train=1000, min_rows=20, factor=3)
    >>> rungs.rows
    (20, 60, 180, 540, 1000)
    >>> rungs.of(0.18), rungs.top
    (2, 4)
    """

    rows: tuple[int, ...]
    n_train: int

    @classmethod
    def geometric(cls, n_train: int, min_rows: int, factor: float) -> Rungs:
        """``K = round(log_factor(n_train / min_rows))`` rungs above the first.

        The top rung (all rows) is then between ``factor**0.5`` and
        ``factor**1.5`` times the rung below it, the nearest to a geometric
        ladder that ends on all the data.
        """
        n_train, min_rows = int(n_train), int(min_rows)
        n_up = max(0, round(math.log(n_train / min_rows) / math.log(factor)))
        rows: list[int] = []
        for k in range(n_up):
            r = round(min_rows * factor**k)
            rows.append(max(r, rows[-1] + 1) if rows else r)
        rows = [r for r in rows if r < n_train] + [n_train]
        return cls(tuple(rows), n_train)

    @property
    def top(self) -> int:
        """Index of the all-data rung."""
        return len(self.rows) - 1

    @property
    def fractions(self) -> np.ndarray:
        """Training fraction of each rung."""
        return np.asarray(self.rows, dtype=float) / self.n_train

    @cached_property
    def _log_fractions(self) -> np.ndarray:
        # read once per finished trial and, at every proposal, for every
        # trial so far: recomputed each time, the lookups took about 5 % of
        # the search's own time on 20-row trials
        return np.log(self.fractions)

    def of(self, fraction: float) -> int:
        """The rung nearest (in log rows) to a training fraction."""
        gap = np.abs(self._log_fractions - math.log(float(fraction)))
        return int(np.argmin(gap))

    def of_many(self, fractions: Sequence[float]) -> np.ndarray:
        """:meth:`of` of each fraction, as an int array."""
        logs = np.log(np.asarray(fractions, dtype=float)).reshape(-1, 1)
        return np.argmin(np.abs(self._log_fractions - logs), axis=1)
