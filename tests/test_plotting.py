"""Figures of fitted searches draw what cv_results_ says (no image comparison)."""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from scipy.stats import loguniform  # noqa: E402
from sklearn.base import BaseEstimator  # noqa: E402
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from skbayes_search import BayesSearchCV, Categorical, Integer, Real  # noqa: E402
from skbayes_search.plotting import (  # noqa: E402
    plot_convergence,
    plot_fractions,
    plot_objective,
    plot_tradeoff,
)


class FakeSearch(BaseEstimator):
    """A fitted search as the plots see it: cv_results_ and a search space."""

    def __init__(self, results, search_spaces=None, n_jobs=None, n_splits=3):
        self.cv_results_ = {k: np.asarray(v) for k, v in results.items()}
        self.cv_results_["params"] = results.get("params", [{}] * len(results))
        self.search_spaces = search_spaces
        self.n_jobs = n_jobs
        self.n_splits_ = n_splits

    def fit(self, X, y=None):  # pragma: no cover - never called
        return self


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def five_trials_of_svc_on_iris(**kwargs):
    X, y = load_iris(return_X_y=True)
    return BayesSearchCV(
        SVC(),
        {"C": Real(1e-2, 1e2, prior="log-uniform")},
        n_iter=5,
        n_initial_points=3,
        hyperparameter_sampling="map",
        cv=3,
        random_state=0,
        **kwargs,
    ).fit(X, y)


@pytest.fixture(scope="module")
def searches():
    X, y = load_iris(return_X_y=True)
    ours = five_trials_of_svc_on_iris()
    theirs = RandomizedSearchCV(
        SVC(), {"C": loguniform(1e-2, 1e2)}, n_iter=5, cv=3, random_state=0
    ).fit(X, y)
    grid = GridSearchCV(SVC(), {"C": [0.1, 1.0, 10.0]}, cv=3).fit(X, y)
    return ours, theirs, grid


def legend_texts(ax):
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else []


def test_convergence_by_trial_is_the_running_maximum_per_row(searches):
    ours, theirs, _ = searches
    _, ax = plt.subplots()
    plot_convergence([ours, theirs], x="trial", ax=ax)
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == [
        "BayesSearchCV",
        "RandomizedSearchCV",
    ]
    assert legend_texts(ax) == ["BayesSearchCV", "RandomizedSearchCV"]
    assert ax.get_xlabel() == "trial"
    assert ax.get_ylabel() == "best mean validation score so far"
    for line, search in zip(lines, (ours, theirs)):
        np.testing.assert_array_equal(line.get_xdata(), np.arange(1, 6))
        y = line.get_ydata()
        assert np.all(np.diff(y) >= 0)
        assert y[-1] == pytest.approx(search.best_score_)


def test_failed_trials_count_in_no_figure():
    # error_score=0 records 0 for a failure, above every successful
    # negative score: no running best, front or point may show it
    results = {
        "mean_test_score": [-3.0, 0.0, -2.0, -1.5],
        "fit_failed": [False, True, False, False],
        "mean_fit_time": [1.0, 0.1, 2.0, 3.0],
        "mean_score_time": [0.1, 0.0, 0.1, 0.1],
        "elapsed_time": [1.0, 2.0, 3.0, 4.0],
        "resource_fraction": [1.0, 1.0, 1.0, 1.0],
    }
    search = FakeSearch(results)
    _, ax = plt.subplots()
    plot_convergence(search, x="trial", ax=ax)
    line = ax.get_lines()[0]
    np.testing.assert_array_equal(line.get_xdata(), [1, 3, 4])
    np.testing.assert_array_equal(line.get_ydata(), [-3.0, -2.0, -1.5])
    _, ax = plt.subplots()
    plot_tradeoff(search, ax=ax)
    assert 0.0 not in ax.get_lines()[0].get_ydata()
    assert len(ax.collections[0].get_offsets()) == 3


def test_convergence_by_time_marks_approximated_peers(searches):
    ours, theirs, grid = searches
    _, ax = plt.subplots()
    plot_convergence([ours, theirs, grid], labels=["ours", "random", "grid"], ax=ax)
    assert legend_texts(ax) == [
        "ours",
        "random (time approximated)",
        "grid (time approximated)",
    ]
    assert "approximated" in ax.get_xlabel()
    ours_line, random_line, _ = ax.get_lines()
    np.testing.assert_array_equal(
        ours_line.get_xdata(), np.sort(ours.cv_results_["elapsed_time"])
    )
    r = theirs.cv_results_
    expected = np.cumsum((r["mean_fit_time"] + r["mean_score_time"]) * 3)
    np.testing.assert_allclose(random_line.get_xdata(), expected)


def test_convergence_by_time_of_ours_only_says_wall_clock(searches):
    ours, _, _ = searches
    _, ax = plt.subplots()
    plot_convergence(ours, ax=ax)
    assert ax.get_xlabel() == "seconds since fit started (wall clock)"
    assert legend_texts(ax) == ["BayesSearchCV"]


def test_convergence_full_data_only_keeps_full_rows_and_marks_the_rest():
    subset = FakeSearch(
        {
            "mean_test_score": [0.9, 0.5, 0.7, 0.95],
            "resource_fraction": [0.3, 1.0, 1.0, 0.3],
            "elapsed_time": [1.0, 2.0, 3.0, 4.0],
        }
    )
    no_full = FakeSearch(
        {
            "mean_test_score": [0.6, 0.8],
            "resource_fraction": [0.1, 0.2],
            "elapsed_time": [1.0, 2.0],
        }
    )
    _, ax = plt.subplots()
    with pytest.warns(UserWarning, match="no trial on all training rows"):
        plot_convergence(
            [subset, no_full], labels=["a", "b"], full_data_only=True, ax=ax
        )
    full_line, dashed = ax.get_lines()
    np.testing.assert_array_equal(full_line.get_xdata(), [2.0, 3.0])
    np.testing.assert_array_equal(full_line.get_ydata(), [0.5, 0.7])
    assert full_line.get_linestyle() == "-"
    np.testing.assert_array_equal(dashed.get_ydata(), [0.6, 0.8])
    assert dashed.get_linestyle() == "--"
    assert legend_texts(ax) == ["a", "b (no full-data trial)"]
    assert "full-data trials" in ax.get_ylabel()


def test_convergence_leaves_out_a_search_without_scores():
    failed = FakeSearch(
        {"mean_test_score": [np.nan, np.nan], "elapsed_time": [1.0, 2.0]}
    )
    fine = FakeSearch({"mean_test_score": [0.1, 0.2], "elapsed_time": [1.0, 2.0]})
    _, ax = plt.subplots()
    with pytest.warns(UserWarning, match="no trial has a finite score"):
        plot_convergence([failed, fine], labels=["failed", "fine"], ax=ax)
    assert len(ax.get_lines()) == 1
    assert legend_texts(ax) == ["fine"]


def test_convergence_rejects_bad_arguments(searches):
    ours, _, _ = searches
    with pytest.raises(ValueError, match="x must be"):
        plot_convergence(ours, x="seconds")
    with pytest.raises(ValueError, match="labels has 2 entries"):
        plot_convergence(ours, labels=["a", "b"])


def objective_search(n=12, fractions=None, seed=0):
    rng = np.random.default_rng(seed)
    C = 10 ** rng.uniform(-2, 2, n)
    depth = rng.integers(1, 9, n)
    kernel = rng.choice(["rbf", "linear"], n)
    score = -((np.log10(C) - 1) ** 2) / 4 + depth / 40 + (kernel == "rbf") * 0.1
    results = {
        "mean_test_score": score,
        "params": [
            {"C": float(c), "depth": int(d), "kernel": str(k)}
            for c, d, k in zip(C, depth, kernel)
        ],
    }
    if fractions is not None:
        results["resource_fraction"] = fractions
    space = {
        "C": Real(1e-2, 1e2, prior="log-uniform"),
        "depth": Integer(1, 8),
        "kernel": Categorical(["rbf", "linear"]),
    }
    return FakeSearch(results, space), score


def test_objective_draws_partial_dependence_and_pair_contours():
    search, score = objective_search()
    axes = plot_objective(search, n_samples=20, n_points=8)
    assert axes.shape == (3, 3)
    names = ["C", "depth", "kernel"]
    for i, name in enumerate(names):
        diag = axes[i, i]
        assert diag.get_visible()
        assert diag.get_xlabel() == name
        assert diag.get_ylabel().startswith("partial dependence")
        assert len(diag.get_lines()) == 2  # the curve and the best trial's line
        for j in range(i + 1, 3):
            assert not axes[i, j].get_visible()
    assert axes[0, 0].get_xscale() == "log"
    curve = axes[0, 0].get_lines()[0]
    assert len(curve.get_xdata()) == 8
    # the modelled optimum of C lies near the true one, 10
    assert 1 < curve.get_xdata()[np.argmax(curve.get_ydata())] < 100
    # integers: one point per distinct value of the grid
    assert len(axes[1, 1].get_lines()[0].get_xdata()) == 8
    # categorical: one point per category, tick labels the categories
    assert len(axes[2, 2].get_lines()[0].get_xdata()) == 2
    labels = [t.get_text() for t in axes[2, 2].get_xticklabels()]
    assert labels == ["rbf", "linear"]
    # the numeric pair gets a filled contour plus the trials and the best
    pair = axes[1, 0]
    assert pair.get_visible()
    assert (pair.get_xlabel(), pair.get_ylabel()) == ("C", "depth")
    contours = [c for c in pair.collections if type(c).__name__ in ("QuadContourSet",)]
    assert len(contours) == 1
    scatters = [c for c in pair.collections if type(c).__name__ == "PathCollection"]
    assert [len(s.get_offsets()) for s in scatters] == [12, 1]
    best = search.cv_results_["params"][int(np.argmax(score))]
    np.testing.assert_allclose(scatters[1].get_offsets()[0], [best["C"], best["depth"]])
    # pairs with the categorical are hidden
    assert not axes[2, 0].get_visible() and not axes[2, 1].get_visible()


def test_objective_models_full_data_trials_unless_asked():
    fractions = np.array([1.0, 0.2] * 6)
    search, _ = objective_search(fractions=fractions)
    axes = plot_objective(search, n_samples=10, n_points=5)
    pair = axes[1, 0]
    scatters = [c for c in pair.collections if type(c).__name__ == "PathCollection"]
    assert len(scatters[0].get_offsets()) == 6
    few, _ = objective_search(fractions=np.array([1.0, 1.0] + [0.2] * 10))
    with pytest.raises(ValueError, match="fractions='all'"):
        plot_objective(few)
    axes = plot_objective(few, fractions="all", n_samples=10, n_points=5)
    scatters = [
        c for c in axes[1, 0].collections if type(c).__name__ == "PathCollection"
    ]
    assert len(scatters[0].get_offsets()) == 12


def test_objective_draws_only_the_dimensions_asked_for():
    search, _ = objective_search()
    axes = plot_objective(search, dimensions=["depth", "C"], n_samples=10, n_points=5)
    assert axes.shape == (2, 2)
    assert [axes[i, i].get_xlabel() for i in range(2)] == ["depth", "C"]
    assert (axes[1, 0].get_xlabel(), axes[1, 0].get_ylabel()) == ("depth", "C")
    # one colour bar for all contours
    assert sum(ax.get_label() == "<colorbar>" for ax in axes[0, 0].figure.axes) == 1
    with pytest.raises(ValueError, match="not in the search space"):
        plot_objective(search, dimensions=["gamma"])


def test_objective_rejects_conditional_spaces():
    search, _ = objective_search()
    search.search_spaces = [{"C": Real(1e-2, 1e2)}, {"depth": Integer(1, 8)}]
    with pytest.raises(ValueError, match="conditional"):
        plot_objective(search)


def test_objective_of_a_real_search(searches):
    _, theirs, _ = searches
    axes = plot_objective(theirs, n_samples=10, n_points=6)
    assert axes.shape == (1, 1)
    assert axes[0, 0].get_xlabel() == "C"
    assert axes[0, 0].get_xscale() == "log"


def test_fractions_figure(searches):
    ours, _, _ = searches
    _, ax = plt.subplots()
    plot_fractions(ours, ax=ax)
    offsets = ax.collections[0].get_offsets()
    assert len(offsets) == 5
    np.testing.assert_array_equal(np.asarray(offsets)[:, 1], 1.0)
    assert ax.get_xlabel() == "wall-clock seconds"
    assert ax.get_ylabel() == "training fraction"


def test_tradeoff_figure(searches):
    ours, _, _ = searches
    _, ax = plt.subplots()
    plot_tradeoff(ours, ax=ax)
    front_line = ax.get_lines()[0]
    assert 1 <= len(front_line.get_xdata()) <= 5
    assert len(ax.collections) == 1
    assert len(ax.collections[0].get_offsets()) == 5
    assert legend_texts(ax) == ["trials", "Pareto front"]
    assert ax.get_xscale() == "log"


def test_every_figure_follows_the_refit_metric_of_a_multi_metric_search():
    search = five_trials_of_svc_on_iris(
        scoring=["accuracy", "balanced_accuracy"], refit="balanced_accuracy"
    )
    balanced = search.cv_results_["mean_test_balanced_accuracy"]
    for plot in (plot_convergence, plot_fractions, plot_tradeoff):
        _, ax = plt.subplots()
        plot(search, ax=ax)
    # the trade-off figure's points are the refit metric's scores
    np.testing.assert_allclose(
        np.asarray(ax.collections[0].get_offsets())[:, 1], balanced
    )
    _, ax = plt.subplots()
    plot_fractions(search, metric="accuracy", ax=ax)
    np.testing.assert_allclose(
        ax.collections[0].get_array(), search.cv_results_["mean_test_accuracy"]
    )
    for plot in (plot_convergence, plot_fractions, plot_tradeoff, plot_objective):
        with pytest.raises(ValueError, match=r"metric='f1'.*'accuracy'"):
            plot(search, metric="f1")
