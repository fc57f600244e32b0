"""Turning ``search_spaces`` into dimensions: each value, each sub-space, and
the names checked against the estimator's parameters."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.stats import rv_continuous, rv_discrete

from ._values import _is_integral, _is_number, _json_number, _type_name
from .dimensions import (
    _DIST_EPS,
    Categorical,
    Dimension,
    Integer,
    Real,
)

# Cumulative probabilities of continuous distributions are kept on a grid of
# this step: cdf(ppf(u)) misses u by rounding (by more where scipy inverts the
# cdf numerically), so without it a configuration would have several
# encodings, and a point evaluated would not be recognised as seen.
_GRID = 2.0**-30


def _on_grid(u: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(u, dtype=float) / _GRID) * _GRID


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
        if not self._discrete:
            u = _on_grid(u)
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
            u = _on_grid(np.clip(self.dist.cdf(v), _DIST_EPS, 1 - _DIST_EPS))
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


#: Numbers in a list from which its search as a Categorical is worth a warning.
MANY_NUMBERS = 20


def _warn_if_ordered_numbers(values: Sequence, label: str) -> None:
    """Warn that a long list of numbers is searched as a Categorical.

    Each category is a dimension of its own in the model (one-hot), which
    learns nothing about a value from its neighbours, and every proposal
    costs more with each value: with BayesSearchCV, 20 trials of a
    millisecond fit took 0.8 s with ``Integer(1, 49)`` and 6.6 s with a list
    of those 49 values (``doc/user_guide.rst``, "Search spaces").
    """
    if len(values) < MANY_NUMBERS or not all(
        _is_number(v) and math.isfinite(v) for v in values
    ):
        return
    lo, hi = min(values), max(values)
    if all(_is_integral(v) for v in values):
        better = f"Integer({lo}, {hi})"
    elif lo > 0 and hi / lo >= 100:
        better = f"Real({lo}, {hi}, prior='log-uniform')"
    else:
        better = f"Real({lo}, {hi})"
    warnings.warn(
        f"{label}: a list of {len(values)} numbers is searched as a "
        "Categorical, each value a dimension of the model of its own: it "
        "learns nothing about a value from its neighbours, and every proposal "
        f"costs more. For ordered values, {better} lets the model interpolate.",
        UserWarning,
        stacklevel=2,
    )


def _parse_value(value: Any, label: str) -> Dimension:
    """Turn one search-space value into a validated dimension copy."""
    if isinstance(value, Dimension):
        return value._checked(label)
    if isinstance(value, (rv_continuous, rv_discrete)):
        # An unfrozen distribution (stats.uniform rather than stats.uniform(0,
        # 10)): without its loc/scale (and shapes) the range meant is a guess.
        needs = "loc" if isinstance(value, rv_discrete) else "loc and scale"
        if value.numargs:
            needs = f"shape parameters and {needs}"
        raise ValueError(
            f"{label}: scipy.stats.{value.name} is a distribution family, not a "
            f"distribution; call it with its {needs}, e.g. "
            f"scipy.stats.{value.name}(...), so the range searched is explicit"
        )
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
        dim = Categorical(value)._checked(label)
        _warn_if_ordered_numbers(dim.categories, label)
        return dim
    raise TypeError(
        f"{label}: expected Real, Integer, Categorical, a list of values, a "
        f"(low, high[, prior]) tuple or a scipy.stats distribution, got "
        f"{value!r} ({_type_name(value)})"
    )


def parse_subspaces(
    search_spaces: Any, estimator_params: set[str] | None
) -> tuple[list[str], list[dict[str, Dimension]]]:
    """Validate ``search_spaces`` and parse each sub-space into dimensions.

    Returns the parameter names in order of first appearance and one dict
    (name -> dimension) per sub-space. With ``estimator_params``, a name the
    estimator does not have raises ``ValueError``.
    """
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
    # An empty dict is one point, the estimator's defaults (as in
    # scikit-learn's ParameterGrid): a space of no dimension.
    if estimator_params is not None:
        unknown: list[str] = []
        for dims in parsed:
            valid = _names_after_steps(set(estimator_params), dims)
            unknown.extend(n for n in dims if n not in valid and n not in unknown)
        if unknown:
            raise ValueError(
                f"search_spaces: invalid parameter(s) {unknown!r} for the "
                f"estimator; valid parameters are {sorted(estimator_params)!r}"
            )

    return names, parsed


def _names_after_steps(valid: set[str], dims: Mapping[str, Dimension]) -> set[str]:
    """Parameter names valid once the sub-space's steps are replaced.

    A categorical of estimators on a parameter such as a pipeline step
    (``{"clf": [SVC(), DecisionTreeClassifier()], "clf__max_depth": ...}``)
    makes ``clf__<name>`` valid for every parameter of every candidate, as
    ``estimator.set_params(clf=candidate)`` would; nested steps are followed
    until nothing changes. A name is valid when it is valid under at least
    one candidate (a trial with another candidate fails its fit and scores
    ``error_score``, as in scikit-learn's searches).
    """
    valid = set(valid)
    expanded: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, dim in dims.items():
            if name in expanded or name not in valid:
                continue
            if not isinstance(dim, Categorical):
                continue
            expanded.add(name)
            for candidate in dim.categories:
                if isinstance(candidate, type) or not hasattr(candidate, "get_params"):
                    continue  # "passthrough", None, a plain value
                try:
                    params = candidate.get_params(deep=True)
                except Exception:  # not an estimator after all
                    continue
                new = {f"{name}__{key}" for key in params} - valid
                if new:
                    valid |= new
                    changed = True
    return valid
