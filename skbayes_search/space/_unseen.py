"""Points not evaluated yet: the one filter every strategy's exploration uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["drop_seen", "near_unseen"]


def drop_seen(U: Any, seen: Any = None, n: int | None = None) -> np.ndarray:
    """Rows of ``U`` that are neither in ``seen`` nor repeated, in order.

    Rows are compared exactly (their bytes): points of a search space are
    snapped, so one configuration always has one encoding, and parameter
    values (arrays, estimators) need not support ``==``.

    Parameters
    ----------
    U : array-like of shape (m, d)
        Candidate points.
    seen : array-like of shape (k, d), optional
        Points already evaluated or running.
    n : int, optional
        Keep at most the first ``n`` new rows.

    Returns
    -------
    ndarray of shape (<= m, d)

    Examples
    --------
    >>> drop_seen([[0.0], [0.5], [0.5], [1.0]], seen=[[1.0]])
    array([[0. ],
           [0.5]])
    """
    U = np.asarray(U, dtype=float)
    rows: set[bytes] = set()
    if seen is not None:
        rows = {row.tobytes() for row in np.asarray(seen, dtype=float)}
    keep: list[int] = []
    for i, row in enumerate(U):
        if n is not None and len(keep) >= n:
            break
        key = row.tobytes()
        if key not in rows:
            rows.add(key)
            keep.append(i)
    return U[keep]


def near_unseen(
    x: Any,
    rng: np.random.Generator,
    scale: float,
    snap: Callable[[np.ndarray], np.ndarray],
    seen: Any = None,
    tries: int = 16,
) -> np.ndarray | None:
    """A new point near ``x``: every coordinate moved by a normal draw.

    Parameters
    ----------
    x : array-like of shape (d,)
        A point of the unit cube.
    rng : numpy.random.Generator
    scale : float
        Standard deviation of each coordinate's move.
    snap : callable
        Maps unit-cube points onto valid ones (``SearchSpace.snap``).
    seen : array-like of shape (k, d), optional
        Points already evaluated or running.
    tries : int, default=16
        Draws before giving up.

    Returns
    -------
    ndarray of shape (d,) or None
        The first draw not in ``seen`` (nor ``x`` itself); None when all
        ``tries`` were.

    Examples
    --------
    >>> import numpy as np
    >>> snap = lambda U: np.round(U, 1)
    >>> p = near_unseen([0.5, 0.5], np.random.default_rng(0), 0.1, snap, [[0.5, 0.5]])
    >>> bool(np.all(np.abs(p - 0.5) <= 0.5)) and not np.array_equal(p, [0.5, 0.5])
    True
    """
    x = np.asarray(x, dtype=float).ravel()
    moved = x[None, :] + scale * rng.standard_normal((int(tries), x.size))
    U = snap(np.clip(moved, 0.0, 1.0))
    known = x[None, :]
    if seen is not None:
        known = np.vstack([np.reshape(seen, (-1, x.size)), known])
    new = drop_seen(U, known, 1)
    return new[0] if len(new) else None
