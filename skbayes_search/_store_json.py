"""JSON encoding of the values a TrialStore writes (see ``_store_format``):
numpy values as plain numbers and lists, non-finite floats and tuples tagged,
NaN as null in lists of numbers."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["NOT_SCALAR", "from_json", "plain_scalar", "to_json"]

_FLOAT_TAG = "$float"
_TUPLE_TAG = "$tuple"
#: What :func:`plain_scalar` returns for anything but a scalar.
NOT_SCALAR = object()


def plain_scalar(value: Any) -> Any:
    """``value`` as a Python None, bool, str, int or float when it is one of
    those (numpy scalars included), else :data:`NOT_SCALAR`. Floats may be
    non-finite: each caller writes those its own way."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return NOT_SCALAR


def _jsonable(
    value: Any, where: str, nan_as_null: bool, tag_tuples: bool = True
) -> Any:
    """Return ``value`` as plain JSON types; ``where`` locates it for errors."""
    plain = plain_scalar(value)
    if plain is not NOT_SCALAR:
        if not isinstance(plain, float) or math.isfinite(plain):
            return plain
        if nan_as_null and math.isnan(plain):
            return None
        return {_FLOAT_TAG: repr(plain)}
    if isinstance(value, np.ndarray):
        return [
            _jsonable(item, f"{where}[{i}]", nan_as_null, tag_tuples)
            for i, item in enumerate(value.tolist())
        ]
    if isinstance(value, (list, tuple)):
        items = [
            _jsonable(item, f"{where}[{i}]", nan_as_null, tag_tuples)
            for i, item in enumerate(value)
        ]
        return {_TUPLE_TAG: items} if tag_tuples and isinstance(value, tuple) else items
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"{where}: key {key!r} of type {type(key).__name__} is not a "
                    "string; JSON objects only have string keys"
                )
            out[str(key)] = _jsonable(
                item, f"{where}[{key!r}]", nan_as_null, tag_tuples
            )
        if len(out) == 1 and next(iter(out)) in (_FLOAT_TAG, _TUPLE_TAG):
            # Would read back as a float or tuple instead of this dict.
            raise TypeError(
                f"{where}: a dict whose only key is {next(iter(out))!r} is reserved "
                "by the store's encoding"
            )
        return out
    raise TypeError(
        f"{where}: value {value!r:.80} of type {type(value).__name__} is not "
        "JSON-serialisable; encode it first (e.g. a categorical choice by its index)"
    )


def _json_hook(obj: dict) -> Any:
    if len(obj) == 1:
        if _FLOAT_TAG in obj:
            return float(obj[_FLOAT_TAG])
        if _TUPLE_TAG in obj:
            return tuple(obj[_TUPLE_TAG])
    return obj


def to_json(value: Any, field: str = "value", *, nan_as_null: bool = False) -> str:
    """Encode ``value`` as JSON text, accepting numpy scalars and arrays.

    Parameters
    ----------
    value : object
        ``None``, bool, int, float, str, numpy scalars and arrays, and lists,
        tuples and string-keyed mappings of those.
    field : str, default="value"
        Name used in error messages.
    nan_as_null : bool, default=False
        Write NaN as ``null`` (for lists known to hold numbers, see
        :func:`from_json`) instead of ``{"$float": "nan"}``.

    Returns
    -------
    text : str
        Compact JSON; infinities are written as ``{"$float": "inf"}`` and tuples as
        ``{"$tuple": [...]}``.

    Raises
    ------
    TypeError
        If ``value`` holds anything else, naming ``field`` and where in it.
    """
    plain = _jsonable(value, field, nan_as_null)
    return json.dumps(plain, allow_nan=False, separators=(",", ":"))


def from_json(text: str, *, null_as_nan: bool = False) -> Any:
    """Decode JSON text written by :func:`to_json`.

    Parameters
    ----------
    text : str
        JSON text.
    null_as_nan : bool, default=False
        Read ``null`` list items as ``nan`` (the counterpart of
        ``to_json(..., nan_as_null=True)``).

    Returns
    -------
    value : object
        Plain Python values; tagged floats and tuples are restored.
    """
    value = json.loads(text, object_hook=_json_hook)
    return _null_to_nan(value) if null_as_nan else value


def _null_to_nan(value: Any) -> Any:
    if value is None:
        return math.nan
    if isinstance(value, list):
        return [_null_to_nan(item) for item in value]
    if isinstance(value, dict):
        # Dict values that are null are absent sections (e.g. "train"), not numbers.
        return {k: v if v is None else _null_to_nan(v) for k, v in value.items()}
    return value


def canonical(value: Any, field: str) -> str:
    """JSON with sorted keys and tuples as lists: equal signatures, equal text."""
    plain = _jsonable(value, field, nan_as_null=False, tag_tuples=False)
    return json.dumps(plain, allow_nan=False, separators=(",", ":"), sort_keys=True)
