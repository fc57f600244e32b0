"""Points not evaluated yet: the one filter every strategy's exploration uses."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["drop_seen"]


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
