"""Figures of fitted searches draw what cv_results_ says."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from scipy.stats import loguniform  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.model_selection import RandomizedSearchCV  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from skbayes_search import BayesSearchCV, Real  # noqa: E402
from skbayes_search.plotting import (  # noqa: E402
    plot_convergence,
    plot_fractions,
    plot_tradeoff,
)


@pytest.fixture(scope="module")
def searches():
    X, y = load_iris(return_X_y=True)
    ours = BayesSearchCV(
        SVC(),
        {"C": Real(1e-2, 1e2, prior="log-uniform")},
        n_iter=5,
        n_initial_points=3,
        hyperparameter_sampling="map",
        cv=3,
        random_state=0,
    ).fit(X, y)
    theirs = RandomizedSearchCV(
        SVC(), {"C": loguniform(1e-2, 1e2)}, n_iter=5, cv=3, random_state=0
    ).fit(X, y)
    return ours, theirs


def test_convergence_lines_are_running_maxima(searches):
    ours, theirs = searches
    fig, ax = plt.subplots()
    plot_convergence([ours, theirs], ax=ax)
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == [
        "BayesSearchCV",
        "RandomizedSearchCV",
    ]
    y_ours = lines[0].get_ydata()
    assert np.all(np.diff(y_ours) >= 0)
    assert y_ours[-1] == pytest.approx(ours.best_score_)
    # peers have no elapsed_time: drawn against the trial number
    np.testing.assert_array_equal(lines[1].get_xdata(), np.arange(1, 6))
    plt.close(fig)


def test_fractions_and_tradeoff_figures(searches):
    ours, _ = searches
    fig, ax = plt.subplots()
    plot_fractions(ours, ax=ax)
    offsets = ax.collections[0].get_offsets()
    assert len(offsets) == 5
    np.testing.assert_array_equal(np.asarray(offsets)[:, 1], 1.0)
    plt.close(fig)
    fig, ax = plt.subplots()
    plot_tradeoff(ours, ax=ax)
    front_line = ax.get_lines()[0]
    assert 1 <= len(front_line.get_xdata()) <= 5
    plt.close(fig)
