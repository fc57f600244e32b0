"""What a journal's run is made from: fingerprints of the data, the CV splits,
the scoring and the estimator, equal in every process (see
:func:`run_fingerprint`); a store refuses to resume a run from anything else.

``X`` and ``y``: type, shape, dtype (pandas: column names and dtypes) and a
SHA-256 of the bytes (the ``repr`` of the values for object arrays). Arrays up
to 64 MiB are hashed whole, which takes about 50 ms at most; a larger one is
hashed from its shape, dtype and an evenly strided sample of 16,384 rows (the
first and the last among them), so that a 1e6 x 50 float64 array (400 MB)
costs about 10 ms instead of 0.35 s for all its bytes. A change confined to
rows outside the sample of such an array goes unseen; another dataset, another
order of rows, scaled or added columns do not. The CV splits: a SHA-256 of
every split's train and test indices (int64). The scoring: a process-independent
``repr`` (functions by qualified name, memory addresses dropped), and whether
train scores are recorded. The estimator: its class and ``get_params(deep=True)``
as JSON, without the searched parameters (their values come from the trials)
and without ``n_jobs``, ``verbose``, ``pre_dispatch`` and ``memory`` (which do
not change a result). Where the search scores trials on subsets on part of the
validation rows (``subsample_validation``), that too. Nothing in it depends on
``n_jobs`` or on the process.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._evaluate import MIN_VALIDATION_ROWS, VALIDATION_ROWS_PER_TRAINING_ROW
from ._store_json import NOT_SCALAR, plain_scalar

#: Arrays up to this many bytes are hashed whole; larger ones by a row sample.
FULL_HASH_BYTES = 64 * 2**20
#: Rows hashed of a larger array (evenly strided, first and last included).
SAMPLED_ROWS = 2**14
# Estimator parameters that do not change a result (nor belong in a fingerprint).
_RUNTIME_PARAMS = frozenset({"n_jobs", "verbose", "pre_dispatch", "memory"})
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def class_path(obj: Any) -> str:
    """The qualified name of ``obj``'s class."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _hash_array(a: np.ndarray, h: Any) -> int | None:
    """Feed ``a`` to ``h``; return the number of rows sampled, None if whole."""
    sampled = None
    n = a.shape[0] if a.ndim else 1
    if (
        a.ndim
        and n > SAMPLED_ROWS
        and (a.nbytes > FULL_HASH_BYTES or a.dtype.hasobject)
    ):
        a = a[_sample_rows(n)]
        sampled = len(a)
    if a.dtype.hasobject:
        h.update(_ADDRESS.sub("", repr(a.tolist())).encode())
    else:
        a = np.ascontiguousarray(a)
        try:
            h.update(memoryview(a).cast("B"))
        except (TypeError, ValueError):  # dtypes the buffer protocol lacks
            h.update(a.tobytes())
    return sampled


def _sample_rows(n: int) -> np.ndarray:
    """SAMPLED_ROWS evenly strided row indices of n, first and last included."""
    return np.unique(np.linspace(0, n - 1, SAMPLED_ROWS).round().astype(np.intp))


def data_fingerprint(data: Any) -> dict[str, Any] | None:
    """Type, shape, dtype and a hash of ``X`` or ``y`` (see the module doc).

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._journal_fingerprint import data_fingerprint
    >>> fp = data_fingerprint(np.zeros((3, 2)))
    >>> fp["shape"], fp["dtype"], len(fp["sha256"])
    ([3, 2], 'float64', 16)
    >>> data_fingerprint(np.zeros((3, 2))) == data_fingerprint(np.ones((3, 2)))
    False
    """
    if data is None:
        return None
    h = hashlib.sha256()
    # the type of a pandas or sparse container (a list and an array of the
    # same values are the same data)
    out: dict[str, Any] = {}
    sampled = None
    if hasattr(data, "columns") and hasattr(data, "dtypes") and hasattr(data, "iloc"):
        # pandas DataFrame: names and dtypes, then each column's values
        out["type"] = type(data).__name__
        out["shape"] = [int(s) for s in data.shape]
        out["columns"] = _ADDRESS.sub("", repr([str(c) for c in data.columns]))[:2000]
        out["dtype"] = [str(t) for t in data.dtypes]
        n, width = data.shape
        if n > SAMPLED_ROWS and n * max(width, 1) * 8 > FULL_HASH_BYTES:
            rows = _sample_rows(n)
            data = data.iloc[rows]
            sampled = len(rows)
        for j in range(width):
            _hash_array(np.asarray(data.iloc[:, j].to_numpy()), h)
    elif _is_sparse(data):
        out["type"] = type(data).__name__
        csr = data.tocsr()
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        out["shape"] = [int(s) for s in csr.shape]
        out["dtype"] = str(csr.dtype)
        for part in (csr.indptr, csr.indices, csr.data):
            sampled = _hash_array(np.asarray(part), h) or sampled
    else:
        values = data.to_numpy() if hasattr(data, "to_numpy") else np.asarray(data)
        if hasattr(data, "name") and not isinstance(data, np.ndarray):
            out["name"] = _ADDRESS.sub("", repr(data.name))[:200]
        out["shape"] = [int(s) for s in values.shape]
        out["dtype"] = str(values.dtype)
        sampled = _hash_array(values, h)
    out["sha256"] = h.hexdigest()[:16]
    if sampled is not None:
        out["sampled_rows"] = sampled
    return out


def _is_sparse(data: Any) -> bool:
    try:
        from scipy import sparse
    except ImportError:  # pragma: no cover - scipy is a dependency
        return False
    return bool(sparse.issparse(data))


def splits_fingerprint(splits: list) -> dict[str, Any]:
    """The number of CV splits and a hash of their train and test indices."""
    h = hashlib.sha256()
    for train, test in splits:
        for idx in (train, test):
            idx = np.ascontiguousarray(idx, dtype="<i8")
            h.update(len(idx).to_bytes(8, "little"))
            h.update(memoryview(idx).cast("B"))
    return {"n_splits": len(splits), "sha256": h.hexdigest()[:16]}


def stable_repr(value: Any) -> Any:
    """A JSON-able description of ``value`` equal in every process.

    Estimators become their class path (their parameters are listed by
    ``get_params(deep=True)``), functions and classes their qualified name,
    arrays their fingerprint, other objects their ``repr`` without memory
    addresses.
    """
    plain = plain_scalar(value)
    if plain is not NOT_SCALAR:
        finite = not isinstance(plain, float) or math.isfinite(plain)
        return plain if finite else repr(plain)
    if isinstance(value, (list, tuple)):
        return [stable_repr(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): stable_repr(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return {"array": data_fingerprint(value)}
    if isinstance(value, type) or (
        callable(value)
        and hasattr(value, "__qualname__")
        and hasattr(value, "__module__")
    ):
        return f"{value.__module__}.{value.__qualname__}"
    if hasattr(value, "get_params") and callable(value.get_params):
        return {"class": class_path(value)}
    return _ADDRESS.sub("", repr(value))[:2000]


def estimator_fingerprint(estimator: Any, searched: list[str]) -> dict[str, Any]:
    """Class path and the parameters that are not searched (see the module doc)."""
    params = estimator.get_params(deep=True) if hasattr(estimator, "get_params") else {}
    kept = {}
    for key in sorted(params):
        if key.rsplit("__", 1)[-1] in _RUNTIME_PARAMS:
            continue
        if any(key == name or key.startswith(name + "__") for name in searched):
            continue
        kept[key] = stable_repr(params[key])
    return {"class": class_path(estimator), "params": kept}


def run_fingerprint(
    *,
    X: Any,
    y: Any,
    splits: list,
    scoring: Any,
    estimator: Any,
    searched: list[str],
    return_train_score: bool = False,
    subsample_validation: bool = False,
) -> dict[str, Any]:
    """What a run is made from: data, CV splits, scoring and estimator.

    Equal for equal inputs in any process and whatever ``n_jobs``; see the
    module docstring for the contents and the cost.
    """
    # only where scores on subsets come from part of the validation rows, so
    # that runs scoring every row keep their fingerprint; the value names the
    # rule, so that a run scored under another one is not resumed under it
    rule = (
        f"at most {VALIDATION_ROWS_PER_TRAINING_ROW} per training row, "
        f"at least {MIN_VALIDATION_ROWS}"
    )
    validation = {"validation_rows": rule} if subsample_validation else {}
    return {
        "X": data_fingerprint(X),
        "y": data_fingerprint(y),
        "cv_splits": splits_fingerprint(splits),
        "scoring": stable_repr(scoring),
        "train_scores": bool(return_train_score),
        "estimator": estimator_fingerprint(estimator, searched),
        **validation,
    }
