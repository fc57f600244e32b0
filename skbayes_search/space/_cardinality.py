"""How many distinct points a search space holds."""

from __future__ import annotations

import itertools
import math

from .dimensions import _MAX_EXACT_UNION, Dimension, Integer


def count_points(groups: list[list[dict[str, Dimension]]]) -> float:
    """Distinct parameter dicts in a space, ``math.inf`` if unbounded.

    Parameters
    ----------
    groups : list of list of dict
        The sub-spaces (name -> dimension), grouped by their set of names:
        sub-spaces with other names never share a point, those with the same
        names may, and a shared point counts once.
    """
    total = 0
    for subspaces in groups:
        sizes = [math.prod(d._cardinality for d in dims.values()) for dims in subspaces]
        if len(subspaces) == 1 or math.inf in sizes:
            total += sum(sizes)
        elif len(subspaces) > _MAX_EXACT_UNION:
            total += sum(sizes)  # an upper bound; rare enough
        else:
            total += _union_size(subspaces)
    return total


def _union_size(subspaces: list[dict[str, Dimension]]) -> int:
    """Points in the union of finite sub-spaces with the same names.

    Inclusion-exclusion: an intersection of sub-spaces is the product over
    names of the values common to all their dimensions.
    """
    names = list(subspaces[0])
    total = 0
    for r in range(1, len(subspaces) + 1):
        for subset in itertools.combinations(subspaces, r):
            common = math.prod(_common_count([d[n] for d in subset]) for n in names)
            total += common if r % 2 else -common
    return total


def _common_count(dims: list[Dimension]) -> int:
    """Number of values every one of the (finite) dimensions decodes to (the
    same value of the same type: an Integer's 2 is not a Categorical's 2.0,
    as ``SearchSpace.to_unit`` tells them apart)."""
    if all(type(d) is Integer for d in dims):
        return max(0, min(d.high for d in dims) - max(d.low for d in dims) + 1)
    smallest = min(dims, key=lambda d: d._cardinality)
    others = [d for d in dims if d is not smallest]
    return sum(all(o._decodes_to(v) for o in others) for v in smallest._enumerate())
