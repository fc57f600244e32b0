"""Search spaces: dimensions, parsing and the unit-cube encoding.

Every strategy works on points of the unit cube ``[0, 1]^D``; this module maps
between those points and the parameter dictionaries handed to
``estimator.set_params``.

Encoding, column by column:

- :class:`Real`: linear in the value (``prior="uniform"``) or in its logarithm
  (``prior="log-uniform"``).
- :class:`Integer`: like :class:`Real` on the widened box
  ``[low - 0.5, high + 0.5]`` (in log space for the log prior), rounded on
  decoding, so every integer owns a cell of the same width (of the same
  log-width for the log prior). Encoding puts an integer at its cell's centre.
- :class:`Categorical`: one column per category, decoded by ``argmax`` and
  encoded exactly one-hot. A categorical with one category is a fixed
  parameter and takes no column.
- Any other ``scipy.stats`` frozen distribution: one column holding the
  cumulative probability, decoded through ``ppf`` with the coordinate clipped
  to ``[1e-6, 1 - 1e-6]`` (so infinite supports stay finite). Discrete
  distributions are encoded at the centre of their value's probability step.
- Conditional spaces (a list of dicts): a one-hot selector block with one
  column per sub-space, then one block per sub-space holding that sub-space's
  own columns (names repeated across sub-spaces get separate columns). Blocks
  of inactive sub-spaces hold the constant 0.5, so two points of the same
  sub-space differ only on that sub-space's coordinates.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

import numpy as np
from scipy.stats import qmc, rv_continuous, rv_discrete

__all__ = ["Categorical", "Dimension", "Integer", "Real", "SearchSpace"]

_PRIORS = ("uniform", "log-uniform")
# Value of the coordinates of inactive sub-spaces (conditional spaces).
_INACTIVE = 0.5
# Distributions sampled through their ppf never see coordinates closer than
# this to 0 or 1, so unbounded supports give finite values.
_DIST_EPS = 1e-6
# Encoded values may stray this far (in unit coordinates) outside [0, 1]
# through rounding before to_unit calls them out of range.
_UNIT_TOL = 1e-9
# Integers beyond this are not exactly representable in float64.
_MAX_INT = 2**53
# Conditional sub-spaces sharing all names: counted exactly up to this many
# (inclusion-exclusion takes 2**k terms).
_MAX_EXACT_UNION = 12


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


class Dimension:
    """Base class of the search-space dimensions.

    Subclasses store their arguments unchanged in ``__init__`` (nothing is
    checked there, as in scikit-learn); :meth:`validate` checks them, and
    :class:`SearchSpace` validates every dimension when it is built, which the
    searches do at the start of ``fit``.
    """

    # Number of unit-cube columns; set on the validated copies SearchSpace uses.
    _width: int = 1

    def validate(self, name: str | None = None) -> None:
        """Check the arguments; raise ``ValueError`` or ``TypeError`` if invalid.

        Parameters
        ----------
        name : str, default=None
            Name used in error messages, e.g. ``"search_spaces['C']"``.
            Defaults to the dimension's ``repr``.
        """
        self._checked(repr(self) if name is None else name)

    # The methods below are only called on the validated copies made by
    # _checked; `block` arguments have shape (n, _width), `decoded` arguments
    # are 1-D arrays of decoded values (category indices for Categorical).

    def _checked(self, label: str) -> Dimension:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def _n_sample_dims(self) -> int:
        # Coordinates a sampler needs for this dimension.
        return 1

    @property
    def _continuous(self) -> bool:
        return False

    @property
    def _cardinality(self) -> float:
        return math.inf

    def _enumerate(self) -> Sequence:  # pragma: no cover - finite dims only
        # All values of a dimension with finite _cardinality.
        raise NotImplementedError

    def _decode(self, block: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _encode_decoded(self, decoded: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _values(self, decoded: np.ndarray) -> list:
        return decoded.tolist()

    def _contains(self, value: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_values(self, values: list) -> np.ndarray:  # pragma: no cover
        # Validate values for to_unit and return them as an array that
        # _encode_decoded accepts.
        raise NotImplementedError

    def _encode(self, values: list) -> np.ndarray:
        # Same arithmetic as snap so that to_unit(from_unit(U)) == snap(U)
        # holds bit for bit.
        return self._encode_decoded(self._check_values(values))

    def _from_uniform(self, u: np.ndarray) -> np.ndarray:
        # Map sampler coordinates (n,) in [0, 1) to snapped encoded columns.
        return self._encode_decoded(self._decode(u[:, None]))

    def _signature(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError


def _check_prior(prior: Any, label: str) -> None:
    if not isinstance(prior, str) or prior not in _PRIORS:
        raise ValueError(
            f"{label}: prior must be one of {', '.join(map(repr, _PRIORS))}, "
            f"got {prior!r}"
        )


def _check_bound(x: Any, which: str, label: str, integer: bool) -> Any:
    if integer:
        if _is_integral(x):
            x = int(x)
        elif _is_number(x) and float(x).is_integer():
            x = int(x)
        else:
            raise TypeError(
                f"{label}: {which} must be an integer, got {x!r} ({_type_name(x)})"
            )
        if abs(x) > _MAX_INT:
            raise ValueError(
                f"{label}: {which} must be within +/-2**53 to be exact in "
                f"floating point, got {x!r}"
            )
        return x
    if not _is_number(x):
        raise TypeError(
            f"{label}: {which} must be a real number, got {x!r} ({_type_name(x)})"
        )
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{label}: {which} must be finite, got {x!r}")
    return x


class _Numeric(Dimension):
    """Shared machinery of Real and Integer: a box in value or log space."""

    _integer = False

    def __init__(self, low: Any, high: Any, prior: str = "uniform") -> None:
        self.low = low
        self.high = high
        self.prior = prior

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(low={self.low!r}, high={self.high!r}, "
            f"prior={self.prior!r})"
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return (self.low, self.high, self.prior) == (other.low, other.high, other.prior)

    __hash__ = None  # mutable, compared by value

    def _checked(self, label: str) -> _Numeric:
        low = _check_bound(self.low, "low", label, self._integer)
        high = _check_bound(self.high, "high", label, self._integer)
        _check_prior(self.prior, label)
        if not low < high:
            raise ValueError(
                f"{label}: low must be < high, got low={self.low!r}, high={self.high!r}"
            )
        if self.prior == "log-uniform" and low <= 0:
            raise ValueError(
                f"{label}: prior='log-uniform' needs low > 0, got low={self.low!r}"
            )
        out = type(self)(low, high, self.prior)
        out._label = label
        # Ends of the box in transformed (possibly log) space.
        pad = 0.5 if self._integer else 0.0
        lo, hi = low - pad, high + pad
        if self.prior == "log-uniform":
            lo, hi = math.log(lo), math.log(hi)
        if not math.isfinite(hi - lo):
            raise ValueError(
                f"{label}: high - low overflows, got low={self.low!r}, "
                f"high={self.high!r}"
            )
        out._t_low, out._t_span = lo, hi - lo
        return out

    @property
    def _log(self) -> bool:
        return self.prior == "log-uniform"

    def _untransform(self, block: np.ndarray) -> np.ndarray:
        t = self._t_low + np.clip(block[:, 0], 0.0, 1.0) * self._t_span
        return np.exp(t) if self._log else t

    def _to_unit_unclipped(self, t: np.ndarray) -> np.ndarray:
        return (t - self._t_low) / self._t_span

    def _signature(self) -> dict:
        return {
            "type": type(self).__name__,
            "low": self.low,
            "high": self.high,
            "prior": self.prior,
        }


class Real(_Numeric):
    """A continuous hyperparameter in ``[low, high]``.

    Parameters
    ----------
    low, high : float
        Bounds of the interval, ``low < high``.
    prior : {"uniform", "log-uniform"}, default="uniform"
        ``"log-uniform"`` spreads the search evenly over orders of magnitude
        and needs ``low > 0``.

    See Also
    --------
    Integer : An integer hyperparameter.
    Categorical : A hyperparameter taking one of a list of values.

    Examples
    --------
    >>> from skbayes_search.space import Real, SearchSpace
    >>> Real(1e-3, 1e3, prior="log-uniform")
    Real(low=0.001, high=1000.0, prior='log-uniform')
    >>> space = SearchSpace({"alpha": Real(0.0, 2.0)})
    >>> space.from_unit([[0.25]])
    [{'alpha': 0.5}]
    """

    @property
    def _continuous(self) -> bool:
        return True

    def _decode(self, block: np.ndarray) -> np.ndarray:
        # exp(log(x)) may land an ulp outside the bounds.
        return np.clip(self._untransform(block), self.low, self.high)

    def _encode_decoded(self, decoded: np.ndarray) -> np.ndarray:
        v = np.asarray(decoded, dtype=float)
        t = np.log(v) if self._log else v
        return np.clip(self._to_unit_unclipped(t), 0.0, 1.0)[:, None]

    def _contains(self, value: Any) -> bool:
        if not _is_number(value):
            return False
        v = float(value)
        if self._log and v <= 0:
            return False
        u = self._to_unit_unclipped(math.log(v) if self._log else v)
        return -_UNIT_TOL <= u <= 1 + _UNIT_TOL

    def _check_values(self, values: list) -> np.ndarray:
        for v in values:
            if not self._contains(v):
                raise ValueError(
                    f"{self._label}: value {v!r} is not a number in "
                    f"[{self.low!r}, {self.high!r}]"
                )
        return np.array(values, dtype=float)


class Integer(_Numeric):
    """An integer hyperparameter in ``[low, high]`` (both ends included).

    Parameters
    ----------
    low, high : int
        Bounds, ``low < high``. Floats with an integral value are accepted.
    prior : {"uniform", "log-uniform"}, default="uniform"
        With ``"uniform"`` every integer is equally likely under uniform
        sampling; ``"log-uniform"`` favours small values evenly across orders
        of magnitude and needs ``low >= 1``.

    See Also
    --------
    Real : A continuous hyperparameter.
    Categorical : A hyperparameter taking one of a list of values.

    Examples
    --------
    >>> from skbayes_search.space import Integer, SearchSpace
    >>> Integer(1, 5)
    Integer(low=1, high=5, prior='uniform')
    >>> space = SearchSpace({"max_depth": Integer(1, 5)})
    >>> space.from_unit([[0.0], [0.5], [1.0]])
    [{'max_depth': 1}, {'max_depth': 3}, {'max_depth': 5}]
    """

    _integer = True

    @property
    def _cardinality(self) -> float:
        return self.high - self.low + 1

    def _enumerate(self) -> Sequence:
        return range(self.low, self.high + 1)

    def _decode(self, block: np.ndarray) -> np.ndarray:
        k = np.clip(np.rint(self._untransform(block)), self.low, self.high)
        return k.astype(np.int64)

    def _encode_decoded(self, decoded: np.ndarray) -> np.ndarray:
        k = np.asarray(decoded, dtype=float)
        # Centre of the integer's cell, so rounding has the widest margin.
        t = 0.5 * (np.log(k - 0.5) + np.log(k + 0.5)) if self._log else k
        return np.clip(self._to_unit_unclipped(t), 0.0, 1.0)[:, None]

    def _contains(self, value: Any) -> bool:
        return (
            _is_number(value)
            and float(value).is_integer()
            and self.low <= value <= self.high
        )

    def _check_values(self, values: list) -> np.ndarray:
        for v in values:
            if not self._contains(v):
                raise ValueError(
                    f"{self._label}: value {v!r} is not an integer in "
                    f"[{self.low!r}, {self.high!r}]"
                )
        return np.array(values, dtype=float)


class Categorical(Dimension):
    """A hyperparameter taking one of a list of values.

    Parameters
    ----------
    categories : list, tuple or 1-D array
        The values, in any type (strings, numbers, ``None``, estimators...).
        Decoded values are the very objects given here, never copies.
        Duplicates are collapsed onto their first occurrence. A single
        category makes a fixed parameter, which takes no unit-cube column.

    See Also
    --------
    Real : A continuous hyperparameter.
    Integer : An integer hyperparameter.

    Examples
    --------
    >>> from skbayes_search.space import Categorical, SearchSpace
    >>> Categorical(["rbf", "linear", "poly"])
    Categorical(categories=['rbf', 'linear', 'poly'])
    >>> space = SearchSpace({"kernel": Categorical(["rbf", "linear", "poly"])})
    >>> space.n_dims
    3
    >>> space.from_unit([[0.1, 0.7, 0.2]])
    [{'kernel': 'linear'}]
    >>> space.to_unit([{"kernel": "poly"}])
    array([[0., 0., 1.]])
    """

    def __init__(self, categories: Sequence) -> None:
        self.categories = categories

    def __repr__(self) -> str:
        return f"Categorical(categories={self.categories!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        a, b = self.categories, other.categories
        try:
            return len(a) == len(b) and all(_strict_match(x, y) for x, y in zip(a, b))
        except TypeError:
            return a is b

    __hash__ = None

    def _checked(self, label: str) -> Categorical:
        cats = self.categories
        if (
            isinstance(cats, (str, bytes, Mapping))
            or not isinstance(cats, (Sequence, np.ndarray))
            or (isinstance(cats, np.ndarray) and cats.ndim == 0)
        ):
            raise TypeError(
                f"{label}: categories must be a list, tuple or 1-D array of "
                f"values, got {cats!r} ({_type_name(cats)})"
            )
        unique: list = []
        for c in cats:
            if not any(_strict_match(u, c) for u in unique):
                unique.append(c)
        if not unique:
            raise ValueError(f"{label}: categories must not be empty")
        out = Categorical(unique)
        out._label = label
        out._width = len(unique) if len(unique) > 1 else 0
        return out

    @property
    def _n_sample_dims(self) -> int:
        return 1 if self._width else 0

    @property
    def _cardinality(self) -> float:
        return len(self.categories)

    def _enumerate(self) -> Sequence:
        return self.categories

    def _index(self, value: Any) -> int | None:
        for i, c in enumerate(self.categories):
            if _strict_match(c, value):
                return i
        for i, c in enumerate(self.categories):
            if _loose_match(c, value):
                return i
        return None

    def _decode(self, block: np.ndarray) -> np.ndarray:
        if not self._width:
            return np.zeros(len(block), dtype=np.intp)
        return np.argmax(block, axis=1)

    def _encode_decoded(self, decoded: np.ndarray) -> np.ndarray:
        idx = np.asarray(decoded, dtype=np.intp)
        out = np.zeros((len(idx), self._width))
        if self._width:
            out[np.arange(len(idx)), idx] = 1.0
        return out

    def _values(self, decoded: np.ndarray) -> list:
        cats = self.categories
        return [cats[i] for i in decoded.tolist()]

    def _contains(self, value: Any) -> bool:
        return self._index(value) is not None

    def _check_values(self, values: list) -> np.ndarray:
        idx = []
        for v in values:
            i = self._index(v)
            if i is None:
                raise ValueError(
                    f"{self._label}: value {v!r} is not one of the categories "
                    f"{self.categories!r}"
                )
            idx.append(i)
        return np.array(idx, dtype=np.intp)

    def _from_uniform(self, u: np.ndarray) -> np.ndarray:
        k = len(self.categories)
        return self._encode_decoded(np.minimum((u * k).astype(np.intp), k - 1))

    def _signature(self) -> dict:
        return {
            "type": "Categorical",
            "categories": [_json_category(c) for c in self.categories],
        }


class _FrozenDistribution(Dimension):
    """A scipy.stats frozen distribution sampled through its ppf.

    The unit coordinate is the cumulative probability, so uniform points of
    the cube are draws from the distribution.
    """

    def __init__(self, dist: Any) -> None:
        self.dist = dist

    def __repr__(self) -> str:
        args = [repr(a) for a in self.dist.args]
        args += [f"{k}={v!r}" for k, v in self.dist.kwds.items()]
        return f"{self._name}({', '.join(args)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.dist is other.dist or self._signature() == other._signature()

    __hash__ = None

    @property
    def _name(self) -> str:
        return getattr(self.dist.dist, "name", type(self.dist.dist).__name__)

    def _checked(self, label: str) -> _FrozenDistribution:
        out = _FrozenDistribution(self.dist)
        out._label = label
        out._discrete = isinstance(self.dist.dist, rv_discrete)
        try:
            shape = np.shape(self.dist.ppf(0.5))
        except Exception as exc:
            raise ValueError(f"{label}: cannot evaluate ppf of {out!r}: {exc}") from exc
        if shape != ():
            raise TypeError(
                f"{label}: {out!r} must be a scalar distribution, its ppf(0.5) has "
                f"shape {shape}"
            )
        probe = np.asarray(self.dist.ppf(np.array([_DIST_EPS, 0.5, 1 - _DIST_EPS])))
        if not np.all(np.isfinite(probe)):
            raise ValueError(
                f"{label}: {out!r} has invalid parameters or too heavy tails "
                f"(ppf at {_DIST_EPS}, 0.5, {1 - _DIST_EPS} gave {probe.tolist()})"
            )
        lo, hi = self.dist.support()
        out._support = (float(lo), float(hi))
        # A discrete distribution shifted by a fractional loc takes values
        # off the integers; they stay floats then.
        out._origin = float(probe[1])
        out._int_values = out._discrete and bool(np.all(probe == np.round(probe)))
        return out

    @property
    def _continuous(self) -> bool:
        return not self._discrete

    @property
    def _cardinality(self) -> float:
        if not self._discrete or not math.isfinite(self._support[1] - self._support[0]):
            return math.inf
        return len(self._enumerate())

    def _enumerate(self) -> Sequence:
        lo, hi = self._support
        v = np.arange(lo, hi + 1)
        v = v[self.dist.pmf(v) > 0]
        return v.astype(np.int64).tolist() if self._int_values else v.tolist()

    def _decode(self, block: np.ndarray) -> np.ndarray:
        u = np.clip(block[:, 0], _DIST_EPS, 1 - _DIST_EPS)
        v = np.asarray(self.dist.ppf(u), dtype=float)
        return v.astype(np.int64) if self._int_values else v

    def _encode_decoded(self, decoded: np.ndarray) -> np.ndarray:
        v = np.asarray(decoded, dtype=float)
        if self._discrete:
            # Centre of the value's step of the cdf: ppf maps it back to v.
            upper = self.dist.cdf(v)
            lower = self.dist.cdf(v - 1)
            u = lower + 0.5 * (upper - lower)
            u = np.where(u > lower, u, upper)
        else:
            u = self.dist.cdf(v)
        return np.clip(u, _DIST_EPS, 1 - _DIST_EPS)[:, None]

    def _contains(self, value: Any) -> bool:
        if not _is_number(value):
            return False
        v = float(value)
        lo, hi = self._support
        if not lo <= v <= hi:
            return False
        if self._discrete:
            return (v - self._origin).is_integer() and self.dist.pmf(v) > 0
        return True

    def _check_values(self, values: list) -> np.ndarray:
        for v in values:
            if not self._contains(v):
                raise ValueError(
                    f"{self._label}: value {v!r} is outside the support of {self!r}"
                )
        return np.array(values, dtype=float)

    def _signature(self) -> dict:
        # Name every argument (shapes, loc, scale) and fill the defaults so
        # that norm(0, 1), norm(loc=0) and norm() describe the same space.
        gen = self.dist.dist
        shapes = gen.shapes.replace(" ", "").split(",") if gen.shapes else []
        names = [*shapes, "loc"] + ([] if self._discrete else ["scale"])
        params = {"loc": 0, "scale": 1} if not self._discrete else {"loc": 0}
        params.update(zip(names, self.dist.args))
        params.update(self.dist.kwds)
        return {
            "type": "distribution",
            "name": self._name,
            "params": {k: _json_number(v) for k, v in sorted(params.items())},
        }


def _is_frozen_distribution(value: Any) -> bool:
    return all(
        callable(getattr(value, attr, None))
        for attr in ("ppf", "cdf", "rvs", "support")
    ) and hasattr(value, "dist")


def _from_distribution(dist: Any, label: str) -> Dimension:
    """Map a frozen distribution to the equivalent dimension where one exists."""
    checked = _FrozenDistribution(dist)._checked(label)
    name = checked._name
    lo, hi = checked._support
    if name == "uniform":
        return Real(lo, hi)._checked(label)
    if name == "randint":
        if lo == hi:  # randint(a, a + 1) always gives a
            return Categorical([int(lo)])._checked(label)
        return Integer(int(lo), int(hi))._checked(label)
    if name in ("loguniform", "reciprocal") and lo > 0:
        # A loc shift breaks log-uniformity: then keep the ppf route.
        q = np.array([0.25, 0.5, 0.75])
        expected = np.exp(np.log(lo) + q * (np.log(hi) - np.log(lo)))
        if np.allclose(dist.ppf(q), expected, rtol=1e-9, atol=0.0):
            return Real(lo, hi, "log-uniform")._checked(label)
    return checked


def _is_range_shorthand(value: tuple) -> bool:
    return (
        len(value) in (2, 3)
        and _is_number(value[0])
        and _is_number(value[1])
        and (len(value) == 2 or isinstance(value[2], str))
    )


def _parse_value(value: Any, label: str) -> Dimension:
    """Turn one search-space value into a validated dimension copy."""
    if isinstance(value, Dimension):
        return value._checked(label)
    if isinstance(value, (rv_continuous, rv_discrete)):
        # An unfrozen distribution without shape parameters, e.g. stats.norm.
        if value.numargs:
            raise TypeError(
                f"{label}: the distribution {value.name!r} needs its shape "
                f"parameters; pass a frozen distribution, e.g. {value.name}(...)"
            )
        return _from_distribution(value(), label)
    if _is_frozen_distribution(value):
        return _from_distribution(value, label)
    if hasattr(value, "rvs"):
        raise TypeError(
            f"{label}: {_type_name(value)} has rvs but no ppf/cdf, so it cannot be "
            "mapped to the unit cube; use Real, Integer, Categorical or a "
            "scipy.stats frozen distribution"
        )
    if isinstance(value, tuple) and _is_range_shorthand(value):
        prior = value[2] if len(value) == 3 else "uniform"
        kind = Integer if _is_integral(value[0]) and _is_integral(value[1]) else Real
        return kind(value[0], value[1], prior)._checked(label)
    if isinstance(value, (list, tuple, range, np.ndarray)):
        return Categorical(value)._checked(label)
    raise TypeError(
        f"{label}: expected Real, Integer, Categorical, a list of values, a "
        f"(low, high[, prior]) tuple or a scipy.stats distribution, got "
        f"{value!r} ({_type_name(value)})"
    )


class _Block:
    """One sub-space: its parameters and their column slices."""

    def __init__(self, names: list[str], dims: list[Dimension], start: int) -> None:
        self.names = names
        self.dims = dims
        self.slices = []
        for dim in dims:
            self.slices.append(slice(start, start + dim._width))
            start += dim._width
        self.stop = start
        self.keys = frozenset(names)
        # Set when an earlier sub-space has the same names, so decoded
        # parameters may belong to it too (see SearchSpace._resolve).
        self.ambiguous = False


def _common_count(dims: list[Dimension]) -> int:
    """Number of values every one of the (finite) dimensions holds."""
    if all(type(d) is Integer for d in dims):
        return max(0, min(d.high for d in dims) - max(d.low for d in dims) + 1)
    smallest = min(dims, key=lambda d: d._cardinality)
    others = [d for d in dims if d is not smallest]
    return sum(all(o._contains(v) for o in others) for v in smallest._enumerate())


def _union_size(blocks: list[_Block]) -> int:
    """Points in the union of finite sub-spaces with the same names.

    Inclusion-exclusion: an intersection of sub-spaces is the product over
    names of the values common to all their dimensions.
    """
    names = blocks[0].names
    dims = [dict(zip(b.names, b.dims)) for b in blocks]
    total = 0
    for r in range(1, len(blocks) + 1):
        for subset in itertools.combinations(dims, r):
            common = math.prod(_common_count([d[n] for d in subset]) for n in names)
            total += common if r % 2 else -common
    return total


def _sobol(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    seed = int(rng.integers(2**63 - 1))
    try:
        engine = qmc.Sobol(d, scramble=True, rng=np.random.default_rng(seed))
    except TypeError:  # scipy < 1.15 names it seed
        engine = qmc.Sobol(d, scramble=True, seed=np.random.default_rng(seed))
    # Drawing a power of two and keeping the first n avoids scipy's balance
    # warning without a (thread-unsafe) warnings filter; any prefix of a
    # scrambled Sobol sequence is still well spread.
    return engine.random_base2(max(0, math.ceil(math.log2(n))))[:n]


class SearchSpace:
    """The parsed search space of a search and its unit-cube encoding.

    Built by the searches at the start of ``fit``; this is where the search
    space is validated. See the module docstring for the encoding.

    Parameters
    ----------
    search_spaces : dict or list of dict
        Maps parameter names (nested ``step__param`` names included) to

        - a :class:`Real`, :class:`Integer` or :class:`Categorical`;
        - a list (or 1-D array, or a tuple that is not a range shorthand) of
          values: a categorical, so a ``GridSearchCV`` ``param_grid`` works
          unchanged;
        - a ``scipy.stats`` frozen distribution, so a ``RandomizedSearchCV``
          ``param_distributions`` works unchanged: ``loguniform(a, b)`` (or
          ``reciprocal``) becomes ``Real(a, b, "log-uniform")``,
          ``uniform(loc, scale)`` becomes ``Real(loc, loc + scale)``,
          ``randint(a, b)`` becomes ``Integer(a, b - 1)``; any other
          distribution is sampled through its ``ppf``;
        - a ``(low, high)`` or ``(low, high, prior)`` tuple: an
          :class:`Integer` when both bounds are integers, else a :class:`Real`.

        A list of dicts is a conditional space: each point belongs to exactly
        one of the dicts and carries only that dict's parameters.
    estimator_params : set of str, default=None
        Valid parameter names (``estimator.get_params().keys()``); unknown
        names raise ``ValueError``. ``None`` skips the check.

    Attributes
    ----------
    n_dims : int
        Width of the unit-cube encoding.
    names : list of str
        All parameter names, in order of first appearance across sub-spaces.
    subspaces : list of dict
        The validated dimension of every parameter, one dict per sub-space
        (copies: the user's objects are never modified).

    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> from skbayes_search.space import Integer, SearchSpace
    >>> space = SearchSpace({
    ...     "C": loguniform(1e-2, 1e2),
    ...     "degree": Integer(2, 4),
    ...     "kernel": ["poly", "rbf"],
    ... })
    >>> space.names
    ['C', 'degree', 'kernel']
    >>> space.n_dims
    4
    >>> space.subspaces[0]["C"]
    Real(low=0.01, high=100.0, prior='log-uniform')
    >>> space.to_unit([{"C": 0.01, "degree": 3, "kernel": "rbf"}])
    array([[0. , 0.5, 0. , 1. ]])
    >>> space.from_unit(space.default_point()[None, :])[0]["degree"]
    3
    """

    def __init__(
        self,
        search_spaces: Mapping | Sequence[Mapping],
        estimator_params: set[str] | None = None,
    ) -> None:
        self.search_spaces = search_spaces
        self.estimator_params = estimator_params
        if isinstance(search_spaces, Mapping):
            parts = [("search_spaces", search_spaces)]
        elif isinstance(search_spaces, (list, tuple)):
            if not search_spaces:
                raise ValueError("search_spaces must not be empty, got []")
            parts = []
            for i, part in enumerate(search_spaces):
                if not isinstance(part, Mapping):
                    raise TypeError(
                        f"search_spaces[{i}] must be a dict of parameter names to "
                        f"dimensions, got {part!r} ({_type_name(part)})"
                    )
                parts.append((f"search_spaces[{i}]", part))
        else:
            raise TypeError(
                "search_spaces must be a dict or a list of dicts, got "
                f"{search_spaces!r} ({_type_name(search_spaces)})"
            )

        parsed = []
        for label, part in parts:
            dims = {}
            for name, value in part.items():
                if not isinstance(name, str):
                    raise TypeError(
                        f"{label}: parameter names must be strings, got {name!r}"
                    )
                dims[name] = _parse_value(value, f"{label}[{name!r}]")
            parsed.append(dims)

        names: list[str] = []
        for dims in parsed:
            names.extend(n for n in dims if n not in names)
        if not names:
            raise ValueError(
                "search_spaces must define at least one parameter, got "
                f"{search_spaces!r}"
            )
        if estimator_params is not None:
            unknown = [n for n in names if n not in estimator_params]
            if unknown:
                raise ValueError(
                    f"search_spaces: invalid parameter(s) {unknown!r} for the "
                    f"estimator; valid parameters are {sorted(estimator_params)!r}"
                )

        self.names = names
        self.subspaces = parsed
        self._n_sel = len(parsed) if len(parsed) > 1 else 0
        self._blocks: list[_Block] = []
        start = self._n_sel
        for dims in parsed:
            block = _Block(list(dims), list(dims.values()), start)
            block.ambiguous = any(b.keys == block.keys for b in self._blocks)
            self._blocks.append(block)
            start = block.stop
        self.n_dims = start
        self._by_keys: dict[frozenset, list[int]] = {}
        for j, block in enumerate(self._blocks):
            self._by_keys.setdefault(block.keys, []).append(j)
        # Sampler coordinates: one picks the sub-space, then one per free
        # parameter of the widest sub-space.
        self._n_sample = (1 if self._n_sel else 0) + max(
            sum(d._n_sample_dims for d in b.dims) for b in self._blocks
        )

    def __repr__(self) -> str:
        shown = self.subspaces[0] if len(self.subspaces) == 1 else self.subspaces
        return f"SearchSpace({shown!r})"

    @property
    def is_conditional(self) -> bool:
        """Whether the space has several sub-spaces (a list of dicts)."""
        return bool(self._n_sel)

    @property
    def continuous_mask(self) -> np.ndarray:
        """Boolean mask (n_dims,) of the columns of continuous parameters.

        These are the columns a gradient-based polish may move freely; the
        others (selector, integers, categoricals, discrete distributions)
        change value only in steps.
        """
        mask = np.zeros(self.n_dims, dtype=bool)
        for block in self._blocks:
            for dim, sl in zip(block.dims, block.slices):
                mask[sl] = dim._continuous
        return mask

    @property
    def cardinality(self) -> float:
        """Number of distinct points (parameter dicts), ``math.inf`` if unbounded.

        Points that several sub-spaces of a conditional space hold are
        counted once (they encode in the first of them).
        """
        total = 0
        for group in self._by_keys.values():
            blocks = [self._blocks[j] for j in group]
            sizes = [math.prod(d._cardinality for d in b.dims) for b in blocks]
            if len(blocks) == 1 or math.inf in sizes:
                total += sum(sizes)
            elif len(blocks) > _MAX_EXACT_UNION:
                total += sum(sizes)  # an upper bound; rare enough
            else:
                total += _union_size(blocks)
        return total

    def _check_unit(self, U: Any) -> np.ndarray:
        U = np.asarray(U, dtype=float)
        if U.ndim != 2 or U.shape[1] != self.n_dims:
            raise ValueError(
                f"expected unit-cube points of shape (n, {self.n_dims}), got "
                f"shape {U.shape}"
            )
        if not np.all(np.isfinite(U)):
            raise ValueError("unit-cube points must be finite")
        return U

    def _choice(self, U: np.ndarray) -> np.ndarray:
        if not self._n_sel:
            return np.zeros(len(U), dtype=np.intp)
        return np.argmax(U[:, : self._n_sel], axis=1)

    def _blank(self, choice: np.ndarray) -> np.ndarray:
        # Inactive coordinates at 0.5 and the selector one-hot.
        out = np.full((len(choice), self.n_dims), _INACTIVE)
        if self._n_sel:
            out[:, : self._n_sel] = 0.0
            out[np.arange(len(choice)), choice] = 1.0
        return out

    def _resolve(self, out: np.ndarray, choice: np.ndarray) -> np.ndarray:
        # Parameters decoded from a sub-space that repeats an earlier one's
        # names are encoded in the first sub-space that holds them (that is
        # what to_unit does), so re-encode those rows through to_unit.
        for j, block in enumerate(self._blocks):
            if block.ambiguous:
                rows = np.flatnonzero(choice == j)
                if rows.size:
                    out[rows] = self.to_unit(self.from_unit(out[rows]))
        return out

    def from_unit(self, U: np.ndarray) -> list[dict]:
        """Decode unit-cube points into parameter dicts.

        Parameters
        ----------
        U : array-like of shape (n, n_dims)
            Points of the unit cube; coordinates outside ``[0, 1]`` are clipped.

        Returns
        -------
        params : list of dict
            One dict per row with the parameters of the row's sub-space only:
            ``int`` for integers, ``float`` for reals and the original objects
            for categoricals.
        """
        U = self._check_unit(U)
        choice = self._choice(U)
        out: list[dict] = [{} for _ in range(len(U))]
        for j, block in enumerate(self._blocks):
            rows = np.flatnonzero(choice == j)
            if not rows.size or not block.dims:
                continue
            sub = U[rows]
            columns = [
                dim._values(dim._decode(sub[:, sl]))
                for dim, sl in zip(block.dims, block.slices)
            ]
            for r, values in zip(rows.tolist(), zip(*columns)):
                out[r] = dict(zip(block.names, values))
        return out

    def _locate(self, params: Mapping) -> int:
        candidates = self._by_keys.get(frozenset(params))
        if not candidates:
            expected = " or ".join(repr(sorted(b.keys)) for b in self._blocks)
            raise ValueError(
                f"parameters {sorted(params)!r} do not match the search space, "
                f"which expects exactly {expected}"
            )
        for j in candidates:
            block = self._blocks[j]
            if all(d._contains(params[n]) for n, d in zip(block.names, block.dims)):
                return j
        # No sub-space holds the values: encoding the first raises the
        # precise error.
        return candidates[0]

    def to_unit(self, params_list: Sequence[Mapping]) -> np.ndarray:
        """Encode parameter dicts as unit-cube points.

        Parameters
        ----------
        params_list : list of dict
            Parameters as returned by :meth:`from_unit`. A conditional space
            encodes each dict in the first sub-space that holds all its names
            and values.

        Returns
        -------
        U : ndarray of shape (n, n_dims)
            Snapped points; ``from_unit(to_unit(p)) == p``.

        Raises
        ------
        ValueError
            If a dict has other names than a sub-space, or a value outside its
            dimension.
        """
        if isinstance(params_list, Mapping):
            raise TypeError("to_unit expects a list of parameter dicts, got one dict")
        params_list = list(params_list)
        for p in params_list:
            if not isinstance(p, Mapping):
                raise TypeError(
                    f"to_unit expects a list of parameter dicts, got an element "
                    f"{p!r} ({_type_name(p)})"
                )
        choice = np.array([self._locate(p) for p in params_list], dtype=np.intp)
        out = self._blank(choice)
        for j, block in enumerate(self._blocks):
            rows = np.flatnonzero(choice == j)
            if not rows.size:
                continue
            for name, dim, sl in zip(block.names, block.dims, block.slices):
                values = [params_list[r][name] for r in rows.tolist()]
                encoded = dim._encode(values)
                if dim._width:
                    out[rows, sl] = encoded
        return out

    def snap(self, U: np.ndarray) -> np.ndarray:
        """Move unit-cube points onto valid points, vectorised.

        Equals ``to_unit(from_unit(U))``: integers go to the centre of their
        cell, categoricals and the sub-space selector become one-hot, inactive
        blocks 0.5, and every coordinate lands in ``[0, 1]``.

        Parameters
        ----------
        U : array-like of shape (n, n_dims)

        Returns
        -------
        snapped : ndarray of shape (n, n_dims)
        """
        U = self._check_unit(U)
        choice = self._choice(U)
        out = self._blank(choice)
        for j, block in enumerate(self._blocks):
            rows = np.flatnonzero(choice == j)
            if not rows.size:
                continue
            sub = U[rows]
            for dim, sl in zip(block.dims, block.slices):
                if dim._width:
                    out[rows, sl] = dim._encode_decoded(dim._decode(sub[:, sl]))
        return self._resolve(out, choice)

    def sample(
        self,
        n: int,
        rng: np.random.Generator | int | None = None,
        method: str = "sobol",
    ) -> np.ndarray:
        """Draw snapped points spread over the space.

        Sampling happens in a space with one coordinate per free parameter
        (plus one choosing the sub-space), so a categorical with k categories
        costs one Sobol coordinate, not k. Each sampled coordinate is a uniform
        draw mapped through the dimension: reals are uniform in value or log
        value, integers and categories equally likely, other distributions
        drawn from themselves. Sub-spaces of a conditional space are chosen
        with equal probability (as scikit-learn's ``ParameterSampler`` does),
        whatever their sizes.

        Parameters
        ----------
        n : int
            Number of points.
        rng : numpy.random.Generator, int or None
            Source of randomness; the Sobol scrambling seed is drawn from it.
        method : {"sobol", "random"}, default="sobol"
            Scrambled Sobol points (any ``n``; powers of two are best
            balanced) or independent uniform draws.

        Returns
        -------
        U : ndarray of shape (n, n_dims)
        """
        if method not in ("sobol", "random"):
            raise ValueError(f"method must be 'sobol' or 'random', got {method!r}")
        if not _is_integral(n) or n < 0:
            raise ValueError(f"n must be a non-negative integer, got {n!r}")
        rng = np.random.default_rng(rng)
        d = self._n_sample
        if n == 0 or d == 0:
            Z = np.zeros((n, d))
        elif method == "sobol":
            Z = _sobol(int(n), d, rng)
        else:
            Z = rng.random((n, d))
        if self._n_sel:
            m = len(self._blocks)
            choice = np.minimum((Z[:, 0] * m).astype(np.intp), m - 1)
            first = 1
        else:
            choice = np.zeros(n, dtype=np.intp)
            first = 0
        out = self._blank(choice)
        for j, block in enumerate(self._blocks):
            rows = np.flatnonzero(choice == j)
            if not rows.size:
                continue
            k = first
            for dim, sl in zip(block.dims, block.slices):
                if dim._n_sample_dims:
                    out[rows, sl] = dim._from_uniform(Z[rows, k])
                    k += 1
        return self._resolve(out, choice)

    def default_point(self) -> np.ndarray:
        """The snapped centre of the space, a fixed first point.

        The centre of every real and integer range (the geometric centre for
        log priors, the median for other distributions), the first category
        of every categorical and the first sub-space of a conditional space.

        Returns
        -------
        x : ndarray of shape (n_dims,)
        """
        return self.snap(np.full((1, self.n_dims), 0.5))[0]

    def signature(self) -> list:
        """A JSON-able description, equal for equal spaces.

        One dict per sub-space mapping each parameter name (sorted) to its
        dimension's type, bounds and prior, or categories (type-tagged;
        categories JSON cannot hold appear as their ``repr``). The order of
        names within a dict does not matter; the order of sub-spaces does.

        Returns
        -------
        signature : list of dict
        """
        return [
            {
                n: d._signature()
                for n, d in sorted(zip(b.names, b.dims), key=itemgetter(0))
            }
            for b in self._blocks
        ]
