"""The transfer stream's models: every searched name reaches its estimator,
and the ensemble's vote follows its weights."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.neighbors import KNeighborsClassifier

from benchmarks.studies._transfer_models import MEMBERS, MODELS, WeightedVote
from skbayes_search.space import SearchSpace


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_point_of_the_space_sets_and_fits(name):
    model = MODELS[name]
    X, y = load_iris(return_X_y=True)
    space = SearchSpace(model.space)
    spread = space.sample(3, 0)
    d = spread.shape[1]
    # three spread points and both corners of the box (near 0: weights of 0
    # everywhere are refused)
    unit = np.vstack([spread, np.full((1, d), 0.01), np.ones((1, d))])
    for params in space.from_unit(unit):
        est = clone(model.make()).set_params(**params)
        assert est.fit(X, y).predict(X).shape == y.shape
    assert all(k.startswith(model.prefix) for k in model.space)


def _vote(**weights):
    model = MODELS["ensemble"].make()
    vote = model.steps[-1][1]
    zero = {f"w_{m}": 0.0 for m in MEMBERS}
    return clone(vote).set_params(**{**zero, **weights})


def test_a_member_alone_in_the_vote_decides_it():
    X, y = load_iris(return_X_y=True)
    vote = _vote(w_knn=1.0, knn__n_neighbors=1).fit(X[::2], y[::2])
    knn = KNeighborsClassifier(n_neighbors=1).fit(X[::2], y[::2])
    np.testing.assert_array_equal(vote.predict(X[1::2]), knn.predict(X[1::2]))


def test_weights_all_zero_are_refused():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="not all 0"):
        _vote().fit(X, y)
    with pytest.raises(ValueError, match="every member"):
        WeightedVote().fit(X, y)
