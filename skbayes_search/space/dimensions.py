"""Dimensions of a search space and their unit-interval encodings."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._values import (
    _is_integral,
    _is_number,
    _json_category,
    _loose_match,
    _strict_match,
    _type_name,
)

__all__ = ["Categorical", "Dimension", "Integer", "Real"]

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

    def _decodes_to(self, value: Any) -> bool:
        # Whether from_unit could have given ``value``: held, and of the type
        # this dimension decodes to (an int is held by a Real, but no Real
        # decodes to one).
        return self._contains(value)

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
    # how error messages describe an allowed value
    _kind = "a number"

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

    def _check_values(self, values: list) -> np.ndarray:
        for v in values:
            if not self._contains(v):
                raise ValueError(
                    f"{self._label}: value {v!r} is not {self._kind} in "
                    f"[{self.low!r}, {self.high!r}]"
                )
        return np.array(values, dtype=float)

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

    def _decodes_to(self, value: Any) -> bool:
        return isinstance(value, (float, np.floating)) and self._contains(value)


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
    _kind = "an integer"

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

    def _decodes_to(self, value: Any) -> bool:
        return (
            isinstance(value, (numbers.Integral, np.integer))
            and not isinstance(value, (bool, np.bool_))
            and self._contains(value)
        )


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

    def _decodes_to(self, value: Any) -> bool:
        return self._strict_index(value) is not None

    def _strict_index(self, value: Any) -> int | None:
        for i, c in enumerate(self.categories):
            if _strict_match(c, value):
                return i
        return None

    def _index(self, value: Any) -> int | None:
        i = self._strict_index(value)
        if i is not None:
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
