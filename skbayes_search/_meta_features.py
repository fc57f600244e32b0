"""Dataset meta-features of the transfer search (Yogatama & Mann 2014).

Every dataset is placed at ``(log n_samples, log n_features, n_classes)``,
the paper's features. They choose the nearest prior datasets (whose trials
enter the GP) and, for ``kernel="sqe"``, are GP inputs next to the
hyperparameters after :func:`standardise_features`. The reasons behind each
choice are in ``doc/design/transfer.rst``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "META_KEYS",
    "check_meta_features",
    "current_meta_features",
    "gp_features",
    "meta_distances",
    "meta_feature_vector",
    "nearest",
    "same_scoring_runs",
    "standardise_features",
]

#: Keys of a run's stored ``meta`` that place a dataset among the others.
META_KEYS = ("n_samples", "n_features", "n_classes")


def meta_feature_vector(meta: Mapping[str, Any]) -> np.ndarray:
    """``(log n_samples, log n_features, n_classes)`` of a run's stored meta.

    ``n_classes`` is 0 for regression (stored as null); an unknown
    ``n_features`` (``X`` without a shape) is nan and left out of distances.

    Examples
    --------
    >>> from skbayes_search._meta_features import meta_feature_vector
    >>> meta_feature_vector({"n_samples": 1, "n_features": 1, "n_classes": 3})
    array([0., 0., 3.])
    """
    values = []
    for key in ("n_samples", "n_features"):
        v = meta.get(key)
        values.append(math.log(v) if v is not None and v > 0 else math.nan)
    n_classes = meta.get("n_classes")
    values.append(0.0 if n_classes is None else float(n_classes))
    return np.asarray(values, dtype=float)


def check_meta_features(value: Any) -> None:
    """Validate the ``meta_features`` parameter of the transfer search.

    Parameters
    ----------
    value : "auto", dict or array-like
        ``"auto"``; a dict with some of :data:`META_KEYS` mapped to counts
        (``n_classes >= 0``, the others ``>= 1``); or the three features.

    Raises
    ------
    ValueError
        Naming ``meta_features`` and what it may hold.

    Examples
    --------
    >>> from skbayes_search._meta_features import check_meta_features
    >>> check_meta_features({"n_samples": 1000})
    >>> check_meta_features({"rows": 1000})
    Traceback (most recent call last):
    ...
    ValueError: meta_features has unknown keys ['rows']; use some of \
['n_samples', 'n_features', 'n_classes'] or an array of the three features.
    """
    if isinstance(value, str):
        return
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(META_KEYS))
        if unknown:
            raise ValueError(
                f"meta_features has unknown keys {unknown!r}; use some of "
                f"{list(META_KEYS)!r} or an array of the three features."
            )
        for key, count in value.items():
            ok = isinstance(count, numbers.Real) and not isinstance(count, bool)
            minimum = 0 if key == "n_classes" else 1
            if not ok or not np.isfinite(count) or count < minimum:
                raise ValueError(
                    f"meta_features[{key!r}] must be a number >= {minimum}, "
                    f"got {count!r}."
                )
        return
    vec = np.asarray(value, dtype=float)
    if vec.shape != (3,) or not np.all(np.isfinite(vec)):
        raise ValueError(
            "meta_features must be 'auto', a dict of counts or an array of the "
            "three features (log n_samples, log n_features, n_classes), got "
            f"{value!r}."
        )


def current_meta_features(value: Any, stored_meta: Mapping[str, Any]) -> np.ndarray:
    """The current dataset's features from ``meta_features`` and its stored counts.

    Examples
    --------
    >>> from skbayes_search._meta_features import current_meta_features
    >>> meta = {"n_samples": 10, "n_features": 1, "n_classes": 2}
    >>> current_meta_features({"n_samples": 1}, meta)
    array([0., 0., 2.])
    """
    if isinstance(value, str):
        return meta_feature_vector(stored_meta)
    if isinstance(value, Mapping):
        return meta_feature_vector({**stored_meta, **value})
    return np.asarray(value, dtype=float).copy()


def meta_distances(current: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Euclidean distances over the meta-features known on both sides.

    Parameters
    ----------
    current : ndarray of shape (3,)
    others : ndarray of shape (n, 3)

    Returns
    -------
    ndarray of shape (n,)
    """
    if others.shape[0] == 0:
        return np.empty(0)
    diff = others - current[None, :]
    return np.sqrt(np.nansum(diff * diff, axis=1))


def nearest(distances: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest distances, in increasing position.

    Ties go to the lower position (the older run).

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._meta_features import nearest
    >>> nearest(np.array([3.0, 1.0, 1.0, 0.5]), 2)
    array([1, 3])
    """
    order = np.argsort(np.asarray(distances, dtype=float), kind="stable")
    return np.sort(order[: int(k)])


def standardise_features(features: np.ndarray) -> np.ndarray:
    """Each meta-feature as a z-score across datasets, for use as a GP input.

    Each column is centred on its mean over the rows (datasets) and divided
    by its standard deviation (``1/n``), so that the GP's length-scale box
    fits every feature whatever its unit. A column without spread carries
    nothing and becomes 0; an unknown value (nan) becomes 0, the mean of the
    known ones.

    Parameters
    ----------
    features : ndarray of shape (n_datasets, q)

    Returns
    -------
    ndarray of shape (n_datasets, q)

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._meta_features import standardise_features
    >>> F = np.array([[1.0, 2.0, 5.0], [3.0, np.nan, 5.0], [5.0, 4.0, 5.0]])
    >>> standardise_features(F).round(3).tolist()
    [[-1.225, -1.0, 0.0], [0.0, 0.0, 0.0], [1.225, 1.0, 0.0]]
    """
    F = np.array(features, dtype=float, ndmin=2)
    Z = np.zeros_like(F)
    for j in range(F.shape[1]):
        col = F[:, j]
        known = np.isfinite(col)
        if known.sum() < 2:
            continue
        mean = float(col[known].mean())
        std = float(col[known].std())
        # the rounding residue of equal values is not a spread
        if std > 1e-12 * max(1.0, abs(mean)):
            Z[known, j] = (col[known] - mean) / std
    return Z


def gp_features(
    current: np.ndarray, prior: np.ndarray, used: np.ndarray
) -> np.ndarray | None:
    """The meta-features as GP inputs: the current dataset's, then ``used``'s.

    Standardised across the current and *every* prior dataset
    (:func:`standardise_features`), so that a dataset keeps its place
    whichever neighbours are chosen; a feature with no spread is left out.

    Parameters
    ----------
    current : ndarray of shape (q,)
    prior : ndarray of shape (n_prior, q)
    used : ndarray of int
        Positions in ``prior`` of the datasets in the GP.

    Returns
    -------
    ndarray of shape (len(used) + 1, q') or None
        None when no prior dataset is used.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._meta_features import gp_features
    >>> prior = np.array([[5.0, 2.0, 0.0], [7.0, 2.0, 0.0], [5.0, 2.0, 0.0]])
    >>> gp_features(np.array([7.0, 2.0, 0.0]), prior, np.array([0, 1]))
    array([[ 1.],
           [-1.],
           [ 1.]])
    """
    used = np.asarray(used, dtype=int)
    if not len(used):
        return None
    Z = standardise_features(np.vstack([current, prior]))
    Z = Z[:, np.any(Z != 0.0, axis=0)]
    return Z[np.r_[0, used + 1]]


def same_scoring_runs(runs: list[dict], fingerprint: dict | None) -> list[dict]:
    """The runs scored as this one is, with a warning for those left out.

    Scores of another metric (recall where this run measures accuracy) rank
    configurations by another objective: transferred, they would steer the
    first trials towards that objective's optimum. Runs stored without a
    fingerprint (written through the store's own API) are kept.
    """
    if not fingerprint or "scoring" not in fingerprint:
        return runs
    scoring = fingerprint["scoring"]
    kept = [
        r
        for r in runs
        if (r.get("fingerprint") or {}).get("scoring", scoring) == scoring
    ]
    if len(kept) < len(runs):
        warnings.warn(
            f"TransferBayesSearchCV: {len(runs) - len(kept)} of {len(runs)} finished "
            "runs of this estimator and search space were scored with another "
            f"scoring than this search's (scoring={scoring!r}) and are not "
            "transferred.",
            UserWarning,
            # user code -> fit's _fit_context wrapper -> fit -> _fit -> _search
            # -> _init_search -> here
            stacklevel=7,
        )
    return kept
