"""The search space: sub-spaces, the unit cube and sampling."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from .._numerics import sobol_points
from ._cardinality import count_points
from ._parse import parse_subspaces
from ._unseen import drop_seen
from ._values import _is_integral, _type_name
from .dimensions import (
    _INACTIVE,
    Dimension,
    Integer,
)

__all__ = ["SearchSpace"]


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
        one of the dicts and carries only that dict's parameters. An empty
        dict is one point, the estimator's defaults (as in scikit-learn's
        ``ParameterGrid``).
    estimator_params : set of str, default=None
        Valid parameter names (``estimator.get_params(deep=True).keys()``);
        unknown names raise ``ValueError``. A sub-space that swaps a step
        (a categorical of estimators, e.g. ``{"clf": [SVC(), LogisticRegression()],
        "clf__C": ...}``) may also name the parameters of its candidates.
        ``None`` skips the check.

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
        names, parsed = parse_subspaces(search_spaces, estimator_params)
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

        Points that several sub-spaces of a conditional space decode to (the
        same values, of the same types) are counted once (they encode in the
        first of them).
        """
        return count_points(
            [[self.subspaces[j] for j in group] for group in self._by_keys.values()]
        )

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

    def _resolve(
        self, out: np.ndarray, choice: np.ndarray, source: np.ndarray | None = None
    ) -> np.ndarray:
        # Parameters decoded from a sub-space that repeats an earlier one's
        # names are encoded in the first sub-space that holds them (that is
        # what to_unit does), so re-encode those rows through to_unit, from
        # the points being snapped when there are any: decoding the encoded
        # rows once more can move a log-scaled value by an ulp, and snap must
        # equal to_unit(from_unit(U)) bit for bit.
        source = out if source is None else source
        for j, block in enumerate(self._blocks):
            if block.ambiguous:
                rows = np.flatnonzero(choice == j)
                if rows.size:
                    out[rows] = self.to_unit(self.from_unit(source[rows]))
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

    def _candidates(self, params: Mapping) -> list[int]:
        """The sub-spaces with exactly the names of ``params``; raise if none."""
        candidates = self._by_keys.get(frozenset(params))
        if not candidates:
            expected = " or ".join(repr(sorted(b.keys)) for b in self._blocks)
            raise ValueError(
                f"parameters {sorted(params)!r} do not match the search space, "
                f"which expects exactly {expected}"
            )
        return candidates

    def _locate(self, params: Mapping) -> int:
        candidates = self._candidates(params)
        # First a sub-space that from_unit could have given the dict from
        # (values of the types its dimensions decode to: with an Integer "a"
        # in one sub-space and a Real "a" in another, {"a": 0} is the
        # Integer's), then any that holds its values (user-given dicts).
        for holds in ("_decodes_to", "_contains"):
            for j in candidates:
                block = self._blocks[j]
                if all(
                    getattr(d, holds)(params[n])
                    for n, d in zip(block.names, block.dims)
                ):
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
            and values, preferring one whose dimensions decode to the values'
            types (an ``int`` for an :class:`Integer`, a ``float`` for a
            :class:`Real`).

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
        return self._resolve(out, choice, U)

    def sample_unseen(
        self, n: int, rng: np.random.Generator, seen: Any = None
    ) -> np.ndarray:
        """Up to ``n`` random points, distinct and not among ``seen``.

        Draws ``16 * n`` independent points and keeps the first new ones, so
        fewer come back only when a finite space is nearly exhausted.

        Examples
        --------
        >>> import numpy as np
        >>> space = SearchSpace({"k": [1, 2, 3]})
        >>> seen = space.to_unit([{"k": 1}, {"k": 2}])
        >>> space.from_unit(space.sample_unseen(2, np.random.default_rng(0), seen))
        [{'k': 3}]
        """
        return drop_seen(self.sample(16 * n, rng, method="random"), seen, n)

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
            # a scrambling seed drawn from rng, so rng advances by one draw
            seed = np.random.default_rng(int(rng.integers(2**63 - 1)))
            Z = sobol_points(int(n), d, seed)
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

    def validate(self, params: Any) -> None:
        """Check that ``params`` is a point of the space; raise if not.

        Stricter than :meth:`to_unit`, for parameters read back from outside
        (a store): the names must be exactly those of one sub-space, every
        value must lie in its dimension, and an :class:`Integer` takes
        integers only (not ``3.0``).

        Parameters
        ----------
        params : dict
            One parameter dict, as :meth:`from_unit` returns them.

        Raises
        ------
        TypeError
            If ``params`` is not a dict with string keys.
        ValueError
            If a name is unknown or missing, or a value is outside its
            dimension or of the wrong type; the message says which.

        Examples
        --------
        >>> from skbayes_search.space import Integer, SearchSpace
        >>> space = SearchSpace({"degree": Integer(2, 4)})
        >>> space.validate({"degree": 3})
        >>> space.validate({"degree": 9})
        Traceback (most recent call last):
        ...
        ValueError: degree=9 is not in Integer(low=2, high=4, prior='uniform')
        """
        if not isinstance(params, Mapping):
            raise TypeError(f"expected a parameter dict, got {_type_name(params)}")
        for name in params:
            if not isinstance(name, str):
                raise TypeError(f"parameter names must be strings, got {name!r}")
        unknown = [n for n in params if n not in self.names]
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {unknown!r}; the space has {self.names!r}"
            )
        problems: list[str] = []
        for j in self._candidates(params):
            block = self._blocks[j]
            problems = [
                f"{name}={params[name]!r} is not in {dim!r}"
                for name, dim in zip(block.names, block.dims)
                if not dim._contains(params[name])
                or (type(dim) is Integer and not _is_integral(params[name]))
            ]
            if not problems:
                return
        raise ValueError("; ".join(problems))
