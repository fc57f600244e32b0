"""Tests of skbayes_search.space: parsing, encoding, sampling, validation."""

import copy
import doctest
import itertools
import json
import math
import re
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.stats import loguniform, norm, poisson, randint, uniform
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import ParameterGrid
from sklearn.svm import SVC

from skbayes_search import space as space_module
from skbayes_search.space import Categorical, Integer, Real, SearchSpace

CONDITIONAL = [
    {"kernel": ["linear"], "C": Real(1e-2, 1e2, "log-uniform")},
    {
        "kernel": ["rbf"],
        "C": (1, 10),
        "gamma": Real(1e-4, 1.0, "log-uniform"),
    },
    {"kernel": ["poly"], "degree": Integer(2, 5), "coef0": [0.0, 1.0]},
]

KINDS = {
    "real": {"x": Real(-2.0, 3.0)},
    "real-log": {"x": Real(1e-4, 1e2, "log-uniform")},
    "integer": {"x": Integer(-3, 7)},
    "integer-log": {"x": Integer(1, 1000, "log-uniform")},
    "categorical": {"x": ["a", None, 3, 2.5, True]},
    "fixed": {"x": ["only"], "y": Real(0.0, 1.0)},
    "loguniform": {"x": loguniform(1e-3, 1e3)},
    "uniform": {"x": uniform(2, 3)},
    "randint": {"x": randint(1, 6)},
    "norm": {"x": norm(3, 2)},
    "poisson": {"x": poisson(4)},
    "shorthand": {"x": (1, 50, "log-uniform"), "y": (0.5, 2.0)},
    "conditional": CONDITIONAL,
    "overlapping": [{"C": [1, 10]}, {"C": [10, 100]}],
}


def _values_close(p, q):
    """Parameter dicts equal, floats up to rounding, other values exactly."""
    if p.keys() != q.keys():
        return False
    for k in p:
        a, b = p[k], q[k]
        if type(a) is not type(b):
            return False
        if isinstance(a, float):
            if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
                return False
        elif a is not b and a != b:
            return False
    return True


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_round_trips(kind):
    space = SearchSpace(KINDS[kind])
    rng = np.random.default_rng(0)
    # Arbitrary points, including the corners of the cube.
    U = rng.random((300, space.n_dims))
    U[:5] = 0.0
    U[5:10] = 1.0
    params = space.from_unit(U)
    snapped = space.snap(U)
    assert np.array_equal(space.to_unit(params), snapped)
    assert np.all((snapped >= 0) & (snapped <= 1))
    # Snapping is a projection (exact on discrete coordinates).
    np.testing.assert_allclose(space.snap(snapped), snapped, rtol=0, atol=1e-12)
    back = space.from_unit(space.to_unit(params))
    assert all(_values_close(p, q) for p, q in zip(params, back))
    # Sampled points are already snapped.
    S = space.sample(64, rng)
    np.testing.assert_allclose(space.snap(S), S, rtol=0, atol=1e-12)


def test_value_types():
    est = LogisticRegression()
    space = SearchSpace(
        {
            "r": Real(0, 1),
            "i": Integer(0, 9),
            "d": randint(0, 3),
            "p": poisson(2),
            "n": norm(),
            "c": [est, "x"],
        }
    )
    params = space.from_unit(space.sample(32, np.random.default_rng(1)))
    for p in params:
        assert type(p["r"]) is float
        assert type(p["i"]) is int
        assert type(p["d"]) is int
        assert type(p["p"]) is int
        assert type(p["n"]) is float
        assert p["c"] is est or p["c"] == "x"


def test_encoding_layout():
    space = SearchSpace(
        {
            "C": Real(0.1, 10.0, "log-uniform"),
            "n": Integer(0, 4),
            "k": ["a", "b", "c"],
            "fixed": ["z"],
        }
    )
    assert space.n_dims == 1 + 1 + 3  # the fixed parameter takes no column
    U = space.to_unit([{"C": 1.0, "n": 0, "k": "b", "fixed": "z"}])
    # log(1) is the centre of [log 0.1, log 10]; 0 is the centre of the
    # first of five equal integer cells; categories are exactly one-hot.
    np.testing.assert_allclose(U, [[0.5, 0.1, 0.0, 1.0, 0.0]], atol=1e-12)
    assert space.from_unit([[0.0, 0.999, 0.3, 0.1, 0.3]]) == [
        {"C": pytest.approx(0.1), "n": 4, "k": "a", "fixed": "z"}
    ]
    np.testing.assert_array_equal(
        space.continuous_mask, [True, False, False, False, False]
    )
    assert space.cardinality == math.inf
    assert SearchSpace({"a": [1, 2, 3], "b": Integer(0, 4)}).cardinality == 15


def _distinct_points(space):
    """Distinct encoded points of a finite space, by enumeration."""
    points = set()
    for block in space._blocks:
        values = [dim._enumerate() for dim in block.dims]
        params = [dict(zip(block.names, c)) for c in itertools.product(*values)]
        points.update(row.tobytes() for row in space.to_unit(params))
    return len(points)


@pytest.mark.parametrize(
    "spaces",
    [
        {"a": [1, 2, 3], "b": Integer(0, 4), "c": ["fixed"]},
        [{"C": [1, 10]}, {"C": [10, 100]}],
        [
            {"C": [1, 10], "g": [0.1]},
            {"C": [10, 100], "g": [0.1, 1]},
            {"C": Integer(5, 12), "g": [1, 0.1, 2]},
        ],
        [
            {"k": ["a"], "C": [1, 2]},
            {"k": ["a", "b"], "C": Integer(2, 4)},
            {"x": stats.binom(4, 0.5)},
            {"C": [1.0, 2.0], "k": ["b"]},
        ],
    ],
)
def test_cardinality_counts_distinct_points(spaces):
    space = SearchSpace(spaces)
    assert space.cardinality == _distinct_points(space)


def test_default_point():
    space = SearchSpace(
        {
            "C": Real(1e-2, 1e2, "log-uniform"),
            "n": Integer(1, 9),
            "k": ["first", "second"],
            "w": norm(5, 1),
        }
    )
    x = space.default_point()
    assert x.shape == (space.n_dims,)
    np.testing.assert_array_equal(space.snap(x[None, :])[0], x)
    (p,) = space.from_unit(x[None, :])
    assert p["C"] == pytest.approx(1.0)
    assert p["n"] == 5
    assert p["k"] == "first"
    assert p["w"] == pytest.approx(5.0)
    cond = SearchSpace(CONDITIONAL)
    assert cond.from_unit(cond.default_point()[None, :])[0]["kernel"] == "linear"


def test_param_grid_unchanged():
    # The param_grid example of scikit-learn's GridSearchCV documentation.
    grid = [
        {"C": [1, 10, 100, 1000], "kernel": ["linear"]},
        {"C": [1, 10, 100, 1000], "gamma": [0.001, 0.0001], "kernel": ["rbf"]},
    ]
    space = SearchSpace(grid, estimator_params=set(SVC().get_params()))
    assert space.n_dims == 2 + 4 + (4 + 2)
    assert space.cardinality == len(ParameterGrid(grid))
    expected = {tuple(sorted(p.items())) for p in ParameterGrid(grid)}
    seen = {
        tuple(sorted(p.items()))
        for p in space.from_unit(space.sample(256, np.random.default_rng(0)))
    }
    # Every sample is a grid point and 256 samples reach all 12 of them.
    assert seen == expected
    # Tuples of values that are not (low, high) are categorical too.
    space = SearchSpace({"k": ("rbf", "linear", "poly"), "d": (1, 2, 3)})
    assert space.subspaces[0]["k"] == Categorical(["rbf", "linear", "poly"])
    assert space.subspaces[0]["d"] == Categorical([1, 2, 3])
    # A numpy array of values is a categorical.
    space = SearchSpace({"a": np.array([0.1, 0.2])})
    assert space.n_dims == 2


def test_param_distributions_unchanged():
    distributions = {
        "C": loguniform(1e-3, 1e3),
        "alpha": uniform(0.5, 2.0),
        "n": randint(1, 6),
        "w": norm(3.0, 2.0),
        "p": poisson(4),
        "r": stats.reciprocal(1, 100),
    }
    space = SearchSpace(distributions)
    dims = space.subspaces[0]
    assert dims["C"] == Real(1e-3, 1e3, "log-uniform")
    assert dims["alpha"] == Real(0.5, 2.5)
    assert dims["n"] == Integer(1, 5)
    assert dims["r"] == Real(1, 100, "log-uniform")
    params = space.from_unit(space.sample(1024, np.random.default_rng(0)))
    C = np.array([p["C"] for p in params])
    alpha = np.array([p["alpha"] for p in params])
    n = np.array([p["n"] for p in params])
    w = np.array([p["w"] for p in params])
    pois = np.array([p["p"] for p in params])
    assert C.min() >= 1e-3 and C.max() <= 1e3
    assert alpha.min() >= 0.5 and alpha.max() <= 2.5
    assert set(n.tolist()) == {1, 2, 3, 4, 5}
    assert pois.min() >= 0 and np.all(pois == np.round(pois))
    # ppf sampling follows the distributions.
    assert stats.kstest(w, norm(3.0, 2.0).cdf).pvalue > 1e-3
    assert abs(pois.mean() - 4.0) < 0.3
    assert abs(w.mean() - 3.0) < 0.3 and abs(w.std() - 2.0) < 0.3


def test_frozen_distribution_variants():
    # An unfrozen distribution is refused: its loc and scale would be a guess.
    with pytest.raises(ValueError, match=r"search_spaces\['x'\].*loc and scale"):
        SearchSpace({"x": stats.norm})
    # randint with a single value is a fixed parameter.
    space = SearchSpace({"x": randint(3, 4), "y": (0.0, 1.0)})
    assert space.n_dims == 1
    assert {p["x"] for p in space.from_unit(space.sample(16, 0))} == {3}
    # loguniform shifted by loc is not log-uniform: keep its own ppf.
    shifted = loguniform(1, 10, loc=1)
    space = SearchSpace({"x": shifted})
    u = np.array([[0.1], [0.5], [0.9]])
    got = [p["x"] for p in space.from_unit(u)]
    np.testing.assert_allclose(got, shifted.ppf(u[:, 0]))
    # A discrete distribution with a fractional shift keeps float values.
    space = SearchSpace({"x": poisson(3, loc=0.5)})
    values = {p["x"] for p in space.from_unit(space.sample(64, 0))}
    assert all(isinstance(v, float) and (v - 0.5).is_integer() for v in values)


@pytest.mark.parametrize(
    "dist",
    [
        stats.expon(),
        stats.beta(2, 5),
        stats.gamma(2.5),
        stats.t(3),
        stats.truncnorm(-1, 1, loc=1, scale=0.5),
        stats.vonmises(1.0),
    ],
    ids=lambda d: d.dist.name,
)
def test_a_distributions_configuration_has_one_encoding(dist):
    # cdf(ppf(u)) misses u by rounding; a configuration evaluated must still
    # encode to the point it was decoded from, or it is not recognised as
    # seen and is proposed again
    space = SearchSpace({"x": dist})
    u = np.r_[np.random.default_rng(0).random(500), 0.0, 1e-6, 1 - 1e-6, 1.0]
    params = space.from_unit(u[:, None])
    x = space.to_unit(params)
    again = space.from_unit(x)
    assert [p["x"] for p in again] == [p["x"] for p in params]
    np.testing.assert_array_equal(space.to_unit(again), x)
    np.testing.assert_array_equal(space.snap(x), x)


def test_a_search_over_a_distribution_proposes_no_configuration_twice():
    from sklearn.datasets import make_classification
    from sklearn.svm import SVC

    from skbayes_search import BayesSearchCV

    X, y = make_classification(120, 4, random_state=0)
    search = BayesSearchCV(
        SVC(), {"C": stats.expon()}, n_iter=8, cv=2, random_state=0
    ).fit(X, y)
    values = [p["C"] for p in search.cv_results_["params"]]
    assert len(set(values)) == len(values) == 8


def test_integer_rounding_covers_ends_evenly():
    space = SearchSpace({"n": Integer(0, 4)})
    params = space.from_unit(space.sample(10000, np.random.default_rng(0), "random"))
    counts = np.bincount([p["n"] for p in params], minlength=5)
    # 2000 expected per value; the end values are not halved.
    assert counts.min() > 1800 and counts.max() < 2200
    assert 0.85 < counts[0] / counts[4] < 1.15
    # Sobol stratifies exactly.
    params = space.from_unit(space.sample(1024, np.random.default_rng(0)))
    counts = np.bincount([p["n"] for p in params], minlength=5)
    assert counts.max() - counts.min() <= 2


def test_log_integer_reaches_both_ends():
    space = SearchSpace({"n": Integer(1, 100, "log-uniform")})
    assert space.from_unit([[0.0], [1.0]]) == [{"n": 1}, {"n": 100}]
    n = np.array([p["n"] for p in space.from_unit(space.sample(4096, 0, "random"))])
    assert n.min() == 1 and n.max() == 100
    # Cells are equally wide in log(n) on [log 0.5, log 100.5]: values below
    # 10 own log(9.5 / 0.5) / log(100.5 / 0.5) = 0.555 of the width.
    assert 0.5 < np.mean(n < 10) < 0.61
    assert np.mean(n == 1) > 10 * np.mean(n == 100)


@pytest.mark.parametrize("method", ["sobol", "random"])
def test_log_uniform_samples_uniform_in_log(method):
    space = SearchSpace({"C": Real(1e-3, 1e3, "log-uniform")})
    C = np.array([p["C"] for p in space.from_unit(space.sample(2048, 0, method))])
    logC = np.log10(C)
    assert stats.kstest(logC, uniform(-3, 6).cdf).pvalue > 1e-3
    assert 0.45 < np.mean(C < 1.0) < 0.55
    # Linear sampling would put ~all mass above 1; log-uniform a sixth per decade.
    assert 0.12 < np.mean(C < 1e-2) < 0.21


def test_categorical_estimators_are_returned_as_is():
    lr, svc = LogisticRegression(C=2.0), SVC()
    before = (lr.get_params(), svc.get_params())
    space = SearchSpace({"clf": Categorical([lr, svc]), "clf__C": [1, 2]})
    params = space.from_unit(space.sample(32, np.random.default_rng(0)))
    chosen = {id(p["clf"]) for p in params}
    assert chosen == {id(lr), id(svc)}
    assert (lr.get_params(), svc.get_params()) == before
    # And back: an estimator encodes to its own column.
    U = space.to_unit([{"clf": svc, "clf__C": 1}])
    assert space.from_unit(U)[0]["clf"] is svc


def test_categorical_matching():
    space = SearchSpace({"x": [1, True, "1", 1.5, (10,), None, LogisticRegression()]})
    cats = space.subspaces[0]["x"].categories
    # 1 and True compare equal in Python but are different categories.
    assert space.n_dims == 7
    encoded = space.to_unit([{"x": c} for c in cats])
    np.testing.assert_array_equal(encoded, np.eye(7))
    # Values that went through JSON still find their category.
    from_json = [np.int64(1), True, "1", np.float64(1.5), [10], None]
    np.testing.assert_array_equal(
        space.to_unit([{"x": v} for v in from_json]), np.eye(7)[:6]
    )
    assert space.to_unit([{"x": repr(cats[6])}])[0, 6] == 1.0
    # Duplicates collapse onto their first occurrence.
    assert SearchSpace({"x": [1, 1, 2]}).n_dims == 2


def test_conditional_params_belong_to_one_subspace():
    space = SearchSpace(CONDITIONAL)
    assert space.names == ["kernel", "C", "gamma", "degree", "coef0"]
    # selector 3 + linear C 1 + rbf (C, gamma) 2 + poly (degree, coef0 2) 3
    assert space.n_dims == 3 + 1 + 2 + 3
    key_sets = [set(d) for d in CONDITIONAL]
    U = space.sample(96, np.random.default_rng(0))
    params = space.from_unit(U)
    counts = [0, 0, 0]
    for p, u in zip(params, U):
        j = ["linear", "rbf", "poly"].index(p["kernel"])
        counts[j] += 1
        assert set(p) == key_sets[j]
        assert sum(set(p) == ks for ks in key_sets) == 1
        block = space._blocks[j]
        # Inactive blocks sit at 0.5, the selector is one-hot.
        active = np.zeros(space.n_dims, dtype=bool)
        active[: block.slices[0].start if block.slices else 0] = True
        active[block.slices[0].start : block.stop] = True
        assert np.all(u[~active] == 0.5)
        np.testing.assert_array_equal(u[:3], np.eye(3)[j])
    # A Sobol selector coordinate splits the points nearly exactly.
    assert max(counts) - min(counts) <= 3
    for p in params:
        if p["kernel"] == "rbf":
            assert isinstance(p["C"], int) and 1 <= p["C"] <= 10
        if p["kernel"] == "linear":
            assert isinstance(p["C"], float) and 1e-2 <= p["C"] <= 1e2


def test_conditional_points_compare_on_own_coordinates():
    space = SearchSpace(CONDITIONAL)
    a, b = space.to_unit(
        [
            {"kernel": "rbf", "C": 3, "gamma": 0.01},
            {"kernel": "rbf", "C": 3, "gamma": 0.1},
        ]
    )
    diff = np.flatnonzero(a != b)
    assert diff.tolist() == [space._blocks[1].slices[2].start]


def test_overlapping_subspaces_encode_in_first():
    space = SearchSpace([{"C": [1, 10]}, {"C": [10, 100]}])
    U = space.to_unit([{"C": 10}, {"C": 100}])
    assert U[0, 0] == 1.0 and U[1, 1] == 1.0
    R = np.random.default_rng(3).random((200, space.n_dims))
    assert np.array_equal(space.snap(R), space.to_unit(space.from_unit(R)))


def test_to_unit_rejects_foreign_params():
    space = SearchSpace({"C": Real(0.1, 10.0), "k": ["a", "b"]})
    with pytest.raises(ValueError, match=r"search_spaces\['C'\].*100"):
        space.to_unit([{"C": 100.0, "k": "a"}])
    with pytest.raises(ValueError, match=r"search_spaces\['k'\].*'c'"):
        space.to_unit([{"C": 1.0, "k": "c"}])
    with pytest.raises(ValueError, match="do not match"):
        space.to_unit([{"C": 1.0}])
    with pytest.raises(TypeError):
        space.to_unit({"C": 1.0, "k": "a"})
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        space.from_unit(np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"search_spaces\['n'\].*2.5"):
        SearchSpace({"n": Integer(0, 5)}).to_unit([{"n": 2.5}])


BAD_INPUTS = [
    ([], ValueError, ["must not be empty"]),
    ("C", TypeError, ["dict or a list of dicts"]),
    ([{"C": [1]}, ["C"]], TypeError, ["search_spaces[1]"]),
    ({1: [1, 2]}, TypeError, ["parameter names must be strings"]),
    ({"C": Real(1, 0.1)}, ValueError, ["search_spaces['C']", "low=1, high=0.1"]),
    ({"C": (1.0, 1.0)}, ValueError, ["search_spaces['C']", "low must be < high"]),
    ({"n": Integer(5, 5)}, ValueError, ["search_spaces['n']", "low must be < high"]),
    (
        {"C": Real(0, 1, "log-uniform")},
        ValueError,
        ["search_spaces['C']", "low > 0"],
    ),
    (
        {"n": Integer(0, 10, "log-uniform")},
        ValueError,
        ["search_spaces['n']", "low > 0"],
    ),
    (
        {"C": (-1.0, 1.0, "log-uniform")},
        ValueError,
        ["search_spaces['C']", "low > 0"],
    ),
    (
        {"C": Real(1, 2, "log")},
        ValueError,
        ["search_spaces['C']", "'uniform', 'log-uniform'", "'log'"],
    ),
    (
        {"C": (1, 2, "normal")},
        ValueError,
        ["search_spaces['C']", "'uniform', 'log-uniform'"],
    ),
    ({"k": []}, ValueError, ["search_spaces['k']", "must not be empty"]),
    ({"k": Categorical([])}, ValueError, ["search_spaces['k']", "not be empty"]),
    ({"k": Categorical("abc")}, TypeError, ["search_spaces['k']", "list, tuple"]),
    ({"k": Categorical({1, 2})}, TypeError, ["search_spaces['k']", "list, tuple"]),
    ({"k": "rbf"}, TypeError, ["search_spaces['k']", "a list of values"]),
    ({"k": 3}, TypeError, ["search_spaces['k']", "a list of values"]),
    ({"C": Real("a", 1)}, TypeError, ["search_spaces['C']", "real number"]),
    ({"C": Real(0, math.inf)}, ValueError, ["search_spaces['C']", "finite"]),
    ({"C": Real(-1e308, 1e308)}, ValueError, ["search_spaces['C']", "overflows"]),
    ({"n": Integer(1.5, 3)}, TypeError, ["search_spaces['n']", "integer"]),
    (
        [{"C": [1]}, {"C": Real(2, 1)}],
        ValueError,
        ["search_spaces[1]['C']", "low must be < high"],
    ),
    ({"d": stats.randint}, ValueError, ["search_spaces['d']", "randint(...)"]),
    ({"d": stats.uniform}, ValueError, ["search_spaces['d']", "loc and scale"]),
    ({"d": stats.poisson}, ValueError, ["search_spaces['d']", "poisson(...)"]),
    ({"d": stats.multivariate_normal([0, 0])}, TypeError, ["search_spaces['d']"]),
    ({"d": uniform(0, -1)}, ValueError, ["search_spaces['d']", "invalid parameters"]),
    ({"d": norm([0, 1])}, TypeError, ["search_spaces['d']", "scalar"]),
]


@pytest.mark.parametrize("spaces, error, fragments", BAD_INPUTS)
def test_bad_inputs(spaces, error, fragments):
    with pytest.raises(error) as info:
        SearchSpace(spaces)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_unknown_estimator_params():
    valid = set(SVC().get_params()) | {"clf__C"}
    SearchSpace({"C": [1, 2], "clf__C": [1]}, estimator_params=valid)
    with pytest.raises(ValueError) as info:
        SearchSpace([{"C": [1]}, {"foo": [1], "bar__baz": [2]}], valid)
    message = str(info.value)
    assert "'foo'" in message and "'bar__baz'" in message and "'gamma'" in message
    assert "'C'" not in message.split(";")[0]


def test_dimension_construction_does_no_validation():
    bad = Real(3, 1)  # stored as given
    assert (bad.low, bad.high, bad.prior) == (3, 1, "uniform")
    with pytest.raises(ValueError, match="low must be < high"):
        bad.validate()
    with pytest.raises(ValueError, match=r"^my_param: "):
        bad.validate("my_param")
    Real(1, 3).validate()


def test_dimension_repr_and_eq():
    assert repr(Real(0.1, 1)) == "Real(low=0.1, high=1, prior='uniform')"
    assert repr(Integer(1, 5, "log-uniform")) == (
        "Integer(low=1, high=5, prior='log-uniform')"
    )
    assert repr(Categorical(["a", 1])) == "Categorical(categories=['a', 1])"
    assert Real(1, 2) == Real(1.0, 2.0)
    assert Real(1, 2) != Real(1, 2, "log-uniform")
    assert Real(1, 2) != Integer(1, 2)
    assert Categorical([1, "a"]) == Categorical((1, "a"))
    assert Categorical([1]) != Categorical([True])
    assert Categorical([1, 2]) != Categorical([2, 1])


def _snapshot_equal(a, b):
    """Structural equality for the objects a search space may hold."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_snapshot_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_snapshot_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if hasattr(a, "get_params"):
        return _snapshot_equal(a.get_params(), b.get_params())
    if hasattr(a, "dist") and hasattr(a, "kwds"):
        return a.args == b.args and a.kwds == b.kwds and a.dist.name == b.dist.name
    if isinstance(a, space_module.Dimension):
        return _snapshot_equal(vars(a), vars(b))
    return a == b


def test_user_objects_not_mutated():
    user = [
        {
            "C": Real(1, 100, "log-uniform"),
            "n": Integer(1.0, 8.0),
            "k": Categorical(("a", "a", "b")),
            "est": [LogisticRegression(C=3.0), None],
            "g": (1, 5),
            "arr": np.array([0.5, 0.25]),
        },
        {"d": loguniform(1e-3, 1.0), "r": randint(1, 4), "w": norm(0, 1)},
    ]
    before = copy.deepcopy(user)
    ids = [id(v) for d in user for v in d.values()]
    space = SearchSpace(user)
    rng = np.random.default_rng(0)
    U = space.sample(64, rng)
    params = space.from_unit(space.snap(rng.random((64, space.n_dims))))
    space.to_unit(params)
    space.signature()
    space.default_point()
    for dims in user[0].values(), user[1].values():
        for d in dims:
            if isinstance(d, space_module.Dimension):
                d.validate()
    assert _snapshot_equal(user, before)
    assert [id(v) for d in user for v in d.values()] == ids
    # Integer bounds given as floats stay floats on the user's object.
    assert type(user[0]["n"].low) is float
    assert U.shape == (64, space.n_dims)


def test_signature():
    def sig(spaces):
        s = SearchSpace(spaces).signature()
        assert json.loads(json.dumps(s)) == s
        return s

    base = {"C": Real(1e-3, 1e3, "log-uniform"), "k": ["a", "b"], "n": (1, 5)}
    assert sig(base) == sig(copy.deepcopy(base))
    # Key order and equivalent spellings do not matter.
    assert sig(base) == sig(
        {"n": Integer(1, 5), "k": ("a", "b"), "C": loguniform(1e-3, 1e3)}
    )
    assert sig(base) == sig([base])
    for change in [
        {"C": Real(1e-3, 1e2, "log-uniform")},
        {"C": Real(1e-3, 1e3)},
        {"k": ["a", "c"]},
        {"k": ["b", "a"]},
        {"n": (1.0, 5.0)},
        {"n": (1, 6)},
        {"extra": [1]},
    ]:
        assert sig(base) != sig({**base, **change}), change
    assert sig({"x": [1]}) != sig({"x": [True]})
    assert sig({"x": [1]}) != sig({"x": [1.0]})
    assert sig({"x": [1]}) != sig({"x": ["1"]})
    assert sig([{"a": [1]}, {"b": [2]}]) != sig([{"b": [2]}, {"a": [1]}])
    # Non-JSON categories by repr.
    s = sig({"est": [LogisticRegression(C=2.0), SVC()]})
    assert s[0]["est"]["categories"][0] == ["repr", "LogisticRegression(C=2.0)"]
    assert sig({"w": norm(0, 1)}) != sig({"w": norm(0, 2)})
    assert sig({"w": norm(0, 1)}) == sig({"w": norm(loc=0.0, scale=1)})
    assert sig({"w": norm(0, 1)}) == sig({"w": stats.norm()})
    assert sig({"w": stats.gamma(2.0)}) == sig({"w": stats.gamma(a=2, loc=0)})
    assert sig({"w": stats.gamma(2.0)}) != sig({"w": stats.gamma(2.0, 1.0)})
    assert sig({"p": poisson(3)}) == sig({"p": poisson(mu=3, loc=0)})
    assert sig({"p": poisson(3)}) != sig({"p": poisson(3, 1)})


def test_sobol_sampling_reproducible():
    space = SearchSpace(CONDITIONAL)
    a = space.sample(50, np.random.default_rng(7))
    b = space.sample(50, np.random.default_rng(7))
    c = space.sample(50, np.random.default_rng(8))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    r1 = space.sample(50, np.random.default_rng(7), method="random")
    assert np.array_equal(r1, space.sample(50, np.random.default_rng(7), "random"))
    assert not np.array_equal(r1, a)
    # The generator advances: two calls on one generator differ.
    rng = np.random.default_rng(7)
    assert not np.array_equal(space.sample(50, rng), space.sample(50, rng))


def test_sobol_no_warning_and_edge_sizes():
    space = SearchSpace({"C": Real(0, 1), "k": ["a", "b", "c", "d"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (0, 1, 3, 37, 64):
            assert space.sample(n, np.random.default_rng(0)).shape == (n, 5)
    # Categories are stratified by the Sobol coordinate.
    params = space.from_unit(space.sample(64, np.random.default_rng(0)))
    assert sorted({p["k"]: 0 for p in params}) == ["a", "b", "c", "d"]
    counts = {k: sum(p["k"] == k for p in params) for k in "abcd"}
    assert set(counts.values()) == {16}
    with pytest.raises(ValueError, match="method"):
        space.sample(4, np.random.default_rng(0), method="lhs")
    # A space of fixed parameters only has zero width.
    fixed = SearchSpace({"a": [1], "b": ["x"]})
    assert fixed.n_dims == 0
    assert fixed.from_unit(fixed.sample(3, 0)) == [{"a": 1, "b": "x"}] * 3


def test_docstring_examples_run():
    from skbayes_search.space import dimensions, search_space

    for module in (dimensions, search_space):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.attempted > 0, module.__name__
        assert result.failed == 0, module.__name__


@pytest.mark.parametrize("spaces", [{}, [{}]])
def test_empty_dict_is_one_point_the_defaults(spaces):
    # scikit-learn's ParameterGrid({}) yields one candidate, the defaults.
    space = SearchSpace(spaces, estimator_params=set(SVC().get_params()))
    assert space.n_dims == 0 and space.cardinality == 1
    assert space.from_unit(space.sample(3, 0)) == [{}, {}, {}]
    assert space.to_unit([{}]).shape == (1, 0)
    assert space.from_unit(space.default_point()[None, :]) == [{}]


def test_an_empty_sub_space_is_one_more_point():
    space = SearchSpace([{}, {"C": [1.0, 2.0]}])
    assert space.cardinality == 3
    points = space.from_unit(space.sample(64, 0))
    assert {} in points and {"C": 2.0} in points


def test_swapped_steps_may_name_their_candidates_parameters():
    from sklearn.decomposition import PCA
    from sklearn.pipeline import Pipeline
    from sklearn.tree import DecisionTreeClassifier

    pipe = Pipeline([("reduce_dim", "passthrough"), ("clf", LogisticRegression())])
    valid = set(pipe.get_params(deep=True))
    grid = [
        {"clf": [DecisionTreeClassifier(), SVC()], "clf__max_depth": [2, 3]},
        {"reduce_dim": ["passthrough", PCA()], "reduce_dim__n_components": [2]},
        {"clf": [SVC()], "clf__gamma": Real(1e-3, 1.0, "log-uniform")},
    ]
    assert SearchSpace(grid, estimator_params=valid).n_dims > 0
    # A nested swap: a pipeline as the step, then one of its own steps.
    nested = {
        "clf": [Pipeline([("inner", LogisticRegression())])],
        "clf__inner": [SVC()],
        "clf__inner__gamma": [0.1],
    }
    SearchSpace(nested, estimator_params=valid)
    # Names are checked per sub-space: a candidate of another sub-space does
    # not make a name valid here, and a name valid under no candidate fails.
    with pytest.raises(
        ValueError, match=r"invalid parameter\(s\) \['clf__max_depth'\]"
    ):
        SearchSpace(
            [{"clf": [DecisionTreeClassifier()]}, {"clf__max_depth": [2]}],
            estimator_params=valid,
        )
    with pytest.raises(ValueError, match=r"\['clf__kernel'\]"):
        SearchSpace(
            {"clf": [DecisionTreeClassifier(), "passthrough"], "clf__kernel": ["rbf"]},
            estimator_params=valid,
        )


def test_an_integer_sub_space_keeps_its_ints_beside_a_real_one():
    # max_features=1 is one feature, 1.0 all of them: a point of the Integer
    # sub-space must not come back as the Real one's float
    space = SearchSpace(
        [{"max_features": Real(0.1, 1.0)}, {"max_features": Integer(1, 5)}]
    )
    points = space.sample(200, np.random.default_rng(0))
    params = space.from_unit(points)
    ints = [p for p in params if isinstance(p["max_features"], int)]
    floats = [p for p in params if isinstance(p["max_features"], float)]
    assert ints and floats
    assert {p["max_features"] for p in ints} <= {1, 2, 3, 4, 5}
    for p, q in zip(params, space.from_unit(space.to_unit(params))):
        assert type(p["max_features"]) is type(q["max_features"])
        assert p["max_features"] == pytest.approx(q["max_features"], rel=1e-12)
    # snapping a point of the Integer sub-space keeps it there
    U = space.to_unit([{"max_features": 1}])
    (back,) = space.from_unit(space.snap(U))
    assert back == {"max_features": 1} and type(back["max_features"]) is int
    # a user's dict of a value both hold is still placed (first fit wins)
    assert space.to_unit([{"max_features": np.float32(0.5)}]).shape[0] == 1


@pytest.mark.parametrize(
    "values, better",
    [
        (list(range(1, 50)), "Integer(1, 49)"),
        ([0.001 * 10 ** (i / 5) for i in range(31)], "prior='log-uniform'"),
        ([i / 10 for i in range(25)], "Real(0.0, 2.4)"),
    ],
)
def test_a_long_list_of_numbers_warns_that_it_is_categorical(values, better):
    with pytest.warns(
        UserWarning, match=r"search_spaces\['k'\]: a list of \d+ numbers"
    ):
        space = SearchSpace({"k": values})
    with pytest.warns(UserWarning, match=re.escape(better)):
        SearchSpace({"k": values})
    assert space.n_dims == len(values)


@pytest.mark.parametrize(
    "values",
    [
        list(range(1, 20)),
        [str(i) for i in range(40)],
        [True, False] * 20,
        [1, "a"] * 20,
    ],
)
def test_short_or_non_numeric_lists_do_not_warn(values):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SearchSpace({"k": values})
