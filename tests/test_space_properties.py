"""Property-based tests of SearchSpace on random spaces (hypothesis).

Random Real, Integer, Categorical and conditional spaces: decoding an
encoded point gives it back, snapping is idempotent, samples lie in the
space, and the cardinality of a small finite space is its number of
distinct points.
"""

import itertools
import math

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from skbayes_search.space import Categorical, Integer, Real, SearchSpace

SETTINGS = settings(max_examples=50, deadline=None)

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@st.composite
def reals(draw):
    if draw(st.booleans()):
        low = draw(st.floats(1e-4, 1e2))
        return Real(low, low * draw(st.floats(1.5, 1e4)), "log-uniform")
    low = draw(finite)
    return Real(low, low + draw(st.floats(1e-3, 1e3)))


@st.composite
def integers(draw):
    if draw(st.booleans()):
        low = draw(st.integers(1, 50))
        return Integer(low, low + draw(st.integers(1, 200)), "log-uniform")
    low = draw(st.integers(-100, 100))
    return Integer(low, low + draw(st.integers(1, 20)))


categories = st.lists(
    st.one_of(
        st.integers(-5, 5),
        st.sampled_from(["a", "b", "c", None, True, 2.5]),
    ),
    min_size=1,
    max_size=5,
)


def dimensions(finite_only=False):
    options = [integers(), categories.map(Categorical)]
    if not finite_only:
        options.append(reals())
    return st.one_of(*options)


def sub_spaces(finite_only=False, max_size=3):
    names = st.sampled_from(["a", "b", "c", "d"])
    return st.dictionaries(names, dimensions(finite_only), max_size=max_size)


def spaces(finite_only=False, max_size=3):
    one = sub_spaces(finite_only, max_size)
    return st.one_of(one, st.lists(one, min_size=1, max_size=3))


def _same(p, q):
    if p.keys() != q.keys():
        return False
    for k in p:
        a, b = p[k], q[k]
        if isinstance(a, float) and isinstance(b, float):
            if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9):
                return False
        elif not (a is b or (type(a) is type(b) and a == b)):
            return False
    return True


@SETTINGS
@given(spaces(), st.integers(0, 2**32 - 1))
# found by hypothesis: {"a": 0} from the Integer sub-space was encoded in the
# Real one, the first to hold it, and came back as 0.0
@example(
    spec=[
        {"a": Real(0.0, 1.0), "c": Integer(0, 1)},
        {"a": Integer(0, 1), "c": Integer(0, 1)},
    ],
    seed=0,
)
def test_decode_encode_round_trip(spec, seed):
    space = SearchSpace(spec)
    U = np.random.default_rng(seed).random((8, space.n_dims))
    params = space.from_unit(U)
    back = space.from_unit(space.to_unit(params))
    assert all(_same(p, q) for p, q in zip(params, back))


@SETTINGS
@given(spaces(), st.integers(0, 2**32 - 1))
def test_snap_is_idempotent_and_in_the_cube(spec, seed):
    space = SearchSpace(spec)
    U = np.random.default_rng(seed).random((8, space.n_dims)) * 1.4 - 0.2
    snapped = space.snap(U)
    assert np.all((snapped >= 0) & (snapped <= 1))
    np.testing.assert_allclose(space.snap(snapped), snapped, rtol=0, atol=1e-12)
    assert np.array_equal(space.to_unit(space.from_unit(U)), snapped)


@SETTINGS
@given(spaces(), st.integers(0, 2**32 - 1), st.sampled_from(["sobol", "random"]))
def test_samples_lie_in_the_space(spec, seed, method):
    space = SearchSpace(spec)
    U = space.sample(16, seed, method)
    assert U.shape == (16, space.n_dims)
    np.testing.assert_allclose(space.snap(U), U, rtol=0, atol=1e-12)
    subs = space.subspaces
    for p in space.from_unit(U):
        # each point belongs to a sub-space of the same names, inside it
        assert any(
            set(p) == set(dims) and all(d._contains(p[n]) for n, d in dims.items())
            for dims in subs
        )


@SETTINGS
@given(spaces(finite_only=True, max_size=2))
def test_cardinality_of_small_finite_spaces(spec):
    space = SearchSpace(spec)
    grids = []
    for dims in space.subspaces:
        values = [list(d._enumerate()) for d in dims.values()]
        names = list(dims)
        grids.extend(dict(zip(names, combo)) for combo in itertools.product(*values))
    # distinct points, as the space encodes them (a point held by several
    # sub-spaces is encoded in the first)
    distinct = {space.to_unit([p])[0].tobytes() for p in grids}
    assert space.cardinality == len(distinct)


def test_snap_of_a_repeated_name_matches_the_round_trip_bit_for_bit():
    # found by Hypothesis: the sub-space that repeats "a" was re-encoded from
    # its encoded rows, a second log/exp round trip one ulp off
    spec = [
        {},
        {"a": Integer(0, 1)},
        {"a": Real(2.0, 6169.5431313271865, prior="log-uniform")},
    ]
    space = SearchSpace(spec)
    U = np.random.default_rng(395).random((8, space.n_dims)) * 1.4 - 0.2
    assert np.array_equal(space.to_unit(space.from_unit(U)), space.snap(U))
