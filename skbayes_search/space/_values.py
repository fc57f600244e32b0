"""Tests on single values shared by the dimensions and the space parser:
what counts as a number, how values match after a JSON round trip, and their
JSON-able descriptions (for a stored run's signature)."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


def _is_number(x: Any) -> bool:
    # Booleans are integers to Python but almost never meant as bounds.
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def _is_integral(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def _type_name(x: Any) -> str:
    return type(x).__name__


def _strict_match(a: Any, b: Any) -> bool:
    """Identity, or equality between objects of exactly the same type."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        eq = a == b
    except Exception:
        return False
    # Array-likes compare elementwise; only a plain truth value counts.
    return isinstance(eq, (bool, np.bool_)) and bool(eq)


def _loose_match(category: Any, value: Any) -> bool:
    """Match a value that went through a JSON round trip to its category.

    Numbers match numbers of another type (numpy scalars come back as Python
    ones), lists match tuples element by element, and a string matches a
    category that JSON cannot hold when it is that category's ``repr``.
    """
    if isinstance(category, (bool, np.bool_)) or isinstance(value, (bool, np.bool_)):
        return (
            isinstance(category, (bool, np.bool_))
            and isinstance(value, (bool, np.bool_))
            and bool(category) == bool(value)
        )
    if _is_number(category) and _is_number(value):
        return bool(category == value)
    if isinstance(category, (list, tuple)) and isinstance(value, (list, tuple)):
        return len(category) == len(value) and all(
            _strict_match(c, v) or _loose_match(c, v) for c, v in zip(category, value)
        )
    if isinstance(value, str) and _json_category(category)[0] == "repr":
        return repr(category) == value
    return False


def _json_category(c: Any) -> list:
    """JSON-able, type-tagged description of one category (for signatures).

    The tag keeps ``1``, ``1.0``, ``True`` and ``"1"`` apart after a JSON
    round trip, where they would otherwise compare equal.
    """
    if c is None:
        return ["none", None]
    if isinstance(c, (bool, np.bool_)):
        return ["bool", bool(c)]
    if _is_integral(c):
        return ["int", int(c)]
    if _is_number(c) and math.isfinite(float(c)):
        return ["float", float(c)]
    if isinstance(c, str):
        return ["str", c]
    return ["repr", repr(c)]


def _json_number(x: Any) -> Any:
    if _is_integral(x):
        return int(x)
    if _is_number(x) and math.isfinite(float(x)):
        return float(x)
    return repr(x)
