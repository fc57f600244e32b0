"""TradeoffBayesSearchCV: selection by score and training time (paper 003)."""

import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from skbayes_search._evaluate import subset_size
from skbayes_search.analysis import pareto_front, tradeoff_curve
from skbayes_search.space import Integer, Real
from skbayes_search.strategies import tradeoff
from skbayes_search.strategies.tradeoff import TradeoffBayesSearchCV

EXPECTED_FAILED_CHECKS = {
    "check_supervised_y_2d": "DataConversionWarning not caught",
    "check_requires_y_none": "Doesn't fail gracefully",
}

FAST = dict(hyperparameter_sampling="map", random_state=0)


def _check_instances():
    # alpha=0: with alpha > 0 the selection depends on measured times, which
    # differ between two fits of the same data (check_fit_idempotent)
    common = dict(
        cv=2, error_score="raise", n_iter=2, n_initial_points=2, alpha=0.0, **FAST
    )
    return [
        TradeoffBayesSearchCV(Ridge(), {"alpha": Real(0.1, 1.0)}, **common),
        TradeoffBayesSearchCV(
            KNeighborsClassifier(), {"n_neighbors": [1, 3]}, **common
        ),
        TradeoffBayesSearchCV(
            Pipeline([("scale", StandardScaler()), ("ridge", Ridge())]),
            {"ridge__alpha": Real(0.1, 1.0, prior="log-uniform")},
            fractions=None,
            **common,
        ),
    ]


@parametrize_with_checks(
    _check_instances(), expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


class RowCounter(ClassifierMixin, BaseEstimator):
    """Scores a known function of ``c``; records the rows its fit saw."""

    def __init__(self, c=0.5):
        self.c = c

    def fit(self, X, y):
        self.classes_, counts = np.unique(y, return_counts=True)
        self.class_counts_ = counts
        self.n_rows_ = X.shape[0]  # also for sparse X
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])

    def score(self, X, y):
        return 1.0 - (self.c - 0.3) ** 2


class Flaky(ClassifierMixin, BaseEstimator):
    """Fails at once whenever ``c`` is above 0.6 (so failures are fast)."""

    def __init__(self, c=0.5):
        self.c = c

    def fit(self, X, y):
        if self.c > 0.6:
            raise ValueError("c too large")
        # some work so that successful fits take measurably longer than failures
        np.linalg.svd(np.random.default_rng(0).random((60, 60)))
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    def score(self, X, y):
        return 0.5 + self.c / 2


class Sleepy(ClassifierMixin, BaseEstimator):
    """Slower and more accurate as ``c`` grows; fails at once above 0.9."""

    def __init__(self, c=0.5):
        self.c = c

    def fit(self, X, y):
        if self.c > 0.9:
            raise ValueError("c too large")
        # sleeping costs no CPU on a loaded machine and is never shorter
        time.sleep(0.002 + 0.03 * self.c)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])

    def score(self, X, y):
        return 0.5 + self.c / 2


class NeverFit(RegressorMixin, BaseEstimator):
    def __init__(self, c=1.0):
        self.c = c

    def fit(self, X, y):
        raise AssertionError("fit must not be called on bad input")


@pytest.fixture(scope="module")
def data():
    return make_classification(
        n_samples=120, n_classes=3, n_informative=4, random_state=0
    )


TREE_SPACE = {"max_depth": Integer(1, 8), "min_samples_leaf": Integer(1, 20)}


@pytest.fixture(scope="module")
def iris_search():
    X, y = load_iris(return_X_y=True)
    search = TradeoffBayesSearchCV(
        DecisionTreeClassifier(random_state=0),
        TREE_SPACE,
        alpha=0.3,
        n_iter=7,
        cv=3,
        **FAST,
    )
    return search.fit(X, y)


def test_cv_results_columns_and_objective(iris_search):
    s = iris_search
    r = s.cv_results_
    times = r["mean_train_time"]
    np.testing.assert_allclose(times, r["mean_fit_time"])
    np.testing.assert_allclose(r["normalized_train_time"], times / times.max())
    np.testing.assert_allclose(
        r["tradeoff_score"],
        r["mean_test_score"] - 0.3 * r["normalized_train_time"],
    )
    assert s.best_index_ == np.argmax(r["tradeoff_score"])
    assert s.best_score_ == r["mean_test_score"][s.best_index_]
    assert s.best_train_fraction_ == r["resource_fraction"][s.best_index_]
    assert set(s.best_params_) == set(TREE_SPACE)
    assert set(np.unique(r["resource_fraction"])) <= {0.2, 0.4, 0.6, 0.8, 1.0}
    # initial design (3 points) has no acquisition value, the GP proposals do
    assert np.all(np.isnan(r["acquisition_value"][:3]))
    assert np.all(np.isfinite(r["acquisition_value"][3:]))
    assert len(r["params"]) == 7
    np.testing.assert_array_equal(
        s.pareto_front_, pareto_front(r["mean_test_score"], times)
    )
    # the surrogates and the encoding served this fit only (dropped by the base)
    assert not [k for k in vars(s) if k.startswith("_") and not k.startswith("__")]


def test_alpha_zero_selects_most_accurate(data):
    X, y = data
    search = TradeoffBayesSearchCV(
        RowCounter(), {"c": Real(0.0, 1.0)}, alpha=0.0, n_iter=7, cv=3, **FAST
    ).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert search.best_score_ == scores.max()
    # ties in score go to the fastest of the tied trials
    tied = np.flatnonzero(scores == scores.max())
    times = search.cv_results_["mean_train_time"]
    assert search.best_index_ == tied[np.argmin(times[tied])]
    # the curve helper applies the same rule
    assert tradeoff_curve(search, 0.0)[0] == search.best_index_


def test_large_alpha_selects_fastest(data):
    X, y = data
    search = TradeoffBayesSearchCV(
        RowCounter(), {"c": Real(0.0, 1.0)}, alpha=1e6, n_iter=7, cv=3, **FAST
    ).fit(X, y)
    times = search.cv_results_["mean_train_time"]
    assert times[search.best_index_] == times.min()
    assert times[tradeoff_curve(search, [1e6])[0]] == times.min()


def test_best_estimator_is_fitted_on_the_chosen_fraction(data):
    X, y = data
    search = TradeoffBayesSearchCV(
        RowCounter(),
        {"c": Real(0.0, 1.0)},
        fractions=(0.25, 0.5),
        n_iter=5,
        cv=3,
        **FAST,
    ).fit(X, y)
    fraction = search.best_train_fraction_
    assert fraction in (0.25, 0.5)
    assert fraction == search.cv_results_["resource_fraction"][search.best_index_]
    best = search.best_estimator_
    assert best.n_rows_ == subset_size(fraction, len(X), 3)
    assert best.c == search.best_params_["c"]
    # stratified: every class in proportion (40 rows each in the full data)
    assert best.class_counts_.max() - best.class_counts_.min() <= 1
    # reproducible: the same rows again
    again = TradeoffBayesSearchCV(
        RowCounter(),
        {"c": Real(0.0, 1.0)},
        fractions=(0.25, 0.5),
        n_iter=5,
        cv=3,
        **FAST,
    ).fit(X, y)
    assert again.best_estimator_.n_rows_ == best.n_rows_


def test_fractions_none_uses_all_rows(data):
    X, y = data
    search = TradeoffBayesSearchCV(
        RowCounter(), {"c": Real(0.0, 1.0)}, fractions=None, n_iter=4, cv=3, **FAST
    ).fit(X, y)
    np.testing.assert_array_equal(search.cv_results_["resource_fraction"], 1.0)
    assert search.best_train_fraction_ == 1.0
    assert search.best_estimator_.n_rows_ == len(X)


def test_sparse_input_refits_on_the_chosen_fraction(data):
    # the base sizes X with _num_samples: sparse X needs no special path
    X, y = data
    X_sparse = sp.csr_matrix(X)
    search = TradeoffBayesSearchCV(
        RowCounter(),
        {"c": Real(0.0, 1.0)},
        fractions=(0.25, 0.5),
        n_iter=4,
        cv=3,
        **FAST,
    ).fit(X_sparse, y)
    fraction = search.best_train_fraction_
    assert fraction in (0.25, 0.5)
    best = search.best_estimator_
    assert best.n_rows_ == subset_size(fraction, X.shape[0], 3) < X.shape[0]
    assert best.class_counts_.max() - best.class_counts_.min() <= 1
    # the same rows as with dense X (same seed, same stratified draw)
    dense = TradeoffBayesSearchCV(
        RowCounter(),
        {"c": Real(0.0, 1.0)},
        fractions=(fraction,),
        n_iter=2,
        cv=3,
        **FAST,
    ).fit(X, y)
    assert dense.best_estimator_.n_rows_ == best.n_rows_


def test_reference_is_the_best_finished_tradeoff(data, monkeypatch):
    # T* of EI_T is the best T_alpha = L - alpha * o of the finished trials at
    # proposal time ("max" normalisation as of then; failed trials excluded),
    # neither the best score nor the best score minus the fastest time
    X, y = data
    refs = []
    build = tradeoff.make_tradeoff_acquisition

    def spy(*args, **kwargs):
        refs.append(kwargs["tradeoff_best"])
        return build(*args, **kwargs)

    monkeypatch.setattr(tradeoff, "make_tradeoff_acquisition", spy)
    alpha = 0.5
    search = TradeoffBayesSearchCV(
        Sleepy(),
        {"c": Real(0.0, 1.0)},
        alpha=alpha,
        n_iter=8,
        n_points=1,
        cv=2,
        error_score=0.0,
        **FAST,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        search.fit(X, y)
    r = search.cv_results_
    seconds, scores = r["mean_train_time"], r["mean_test_score"]
    assert len(refs) == 8 - 3
    not_best_score = 0
    for k, ref in zip(range(3, 8), refs):
        ok = np.isfinite(seconds[:k])
        o = seconds[:k] / np.nanmax(seconds[:k])
        T = np.where(ok, scores[:k] - alpha * o, -np.inf)
        assert ref == pytest.approx(T.max(), rel=1e-12, abs=1e-15)
        assert ref < np.max(scores[:k][ok])
        # the incumbent is not always the most accurate trial
        not_best_score += np.argmax(T) != np.argmax(np.where(ok, scores[:k], -1))
    assert not_best_score >= 1


def test_fixed_time_normalization():
    X, y = load_iris(return_X_y=True)
    search = TradeoffBayesSearchCV(
        DecisionTreeClassifier(random_state=0),
        TREE_SPACE,
        time_normalization=0.5,
        n_iter=4,
        cv=3,
        **FAST,
    ).fit(X, y)
    r = search.cv_results_
    np.testing.assert_allclose(r["normalized_train_time"], r["mean_train_time"] / 0.5)


def test_failed_trials_are_never_selected():
    X, y = make_classification(n_samples=60, random_state=0)
    search = TradeoffBayesSearchCV(
        Flaky(),
        {"c": Real(0.0, 1.0)},
        alpha=1e6,
        n_iter=8,
        cv=2,
        error_score=0.0,
        **FAST,
    )
    with pytest.warns(FitFailedWarning):
        search.fit(X, y)
    r = search.cv_results_
    failed = np.asarray(r["param_c"], float) > 0.6
    assert failed.any() and (~failed).any()
    assert np.all(np.isnan(r["mean_train_time"][failed]))
    assert np.all(np.isnan(r["tradeoff_score"][failed]))
    assert not failed[search.best_index_]
    assert not np.isin(search.pareto_front_, np.flatnonzero(failed)).any()


def test_scores_outside_unit_interval_are_min_max_scaled():
    # scale_scores itself: tests/test_analysis.py
    X, y = make_regression(n_samples=80, n_features=3, noise=5.0, random_state=0)
    search = TradeoffBayesSearchCV(
        Ridge(),
        {"alpha": Real(1e-2, 1e4, prior="log-uniform")},
        scoring="neg_mean_squared_error",
        n_iter=4,
        cv=2,
        **FAST,
    ).fit(X, y)
    r = search.cv_results_
    s = r["mean_test_score"]
    L = (s - s.min()) / (s.max() - s.min())
    np.testing.assert_allclose(
        r["tradeoff_score"], L - 0.1 * r["normalized_train_time"]
    )


def test_multimetric_uses_refit_metric_and_callable_refit(data):
    X, y = data
    scoring = {"acc": "accuracy", "bacc": "balanced_accuracy"}
    common = dict(n_iter=4, cv=3, scoring=scoring, **FAST)
    search = TradeoffBayesSearchCV(
        DecisionTreeClassifier(random_state=0),
        TREE_SPACE,
        refit="bacc",
        **common,
    ).fit(X, y)
    r = search.cv_results_
    np.testing.assert_allclose(
        r["tradeoff_score"], r["mean_test_bacc"] - 0.1 * r["normalized_train_time"]
    )
    assert search.best_index_ == np.argmax(r["tradeoff_score"])

    def last(results):
        return len(results["params"]) - 1

    search = TradeoffBayesSearchCV(
        DecisionTreeClassifier(random_state=0),
        TREE_SPACE,
        refit=last,
        **common,
    ).fit(X, y)
    assert search.best_index_ == 3
    assert search.best_train_fraction_ == search.cv_results_["resource_fraction"][3]


def test_batch_proposals_are_distinct(data):
    X, y = data
    search = TradeoffBayesSearchCV(
        RowCounter(), {"c": Real(0.0, 1.0)}, n_iter=9, n_points=3, cv=2, **FAST
    ).fit(X, y)
    r = search.cv_results_
    keys = [(p["c"], f) for p, f in zip(r["params"], r["resource_fraction"])]
    assert len(set(keys)) == len(keys)
    assert np.all(np.bincount(r["iter"][3:])[r["iter"][3:].min() :] == 3)


def test_alpha_zero_is_reproducible(data):
    # with alpha = 0 measured times play no part in the path
    X, y = data
    runs = [
        TradeoffBayesSearchCV(
            RowCounter(), {"c": Real(0.0, 1.0)}, alpha=0.0, n_iter=6, cv=2, **FAST
        ).fit(X, y)
        for _ in range(2)
    ]
    assert runs[0].cv_results_["params"] == runs[1].cv_results_["params"]
    np.testing.assert_array_equal(
        runs[0].cv_results_["resource_fraction"],
        runs[1].cv_results_["resource_fraction"],
    )


class CountedFits(ClassifierMixin, BaseEstimator):
    """Counts its fits in a class attribute (n_jobs=1 keeps them in-process)."""

    n_fits = 0

    def __init__(self, c=0.5):
        self.c = c

    def fit(self, X, y):
        type(self).n_fits += 1
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])

    def score(self, X, y):
        return 1.0 - (self.c - 0.3) ** 2


def test_resume_from_a_store_evaluates_no_trial_twice(data, tmp_path):
    X, y = data
    path = str(tmp_path / "trials.sqlite")

    def search(n_iter):
        return TradeoffBayesSearchCV(
            CountedFits(),
            {"c": Real(0.0, 1.0)},
            n_iter=n_iter,
            cv=3,
            n_jobs=1,
            store=path,
            run_name="r",
            **FAST,
        )

    first = search(5).fit(X, y)
    CountedFits.n_fits = 0
    second = search(8).fit(X, y)
    # only the 3 new trials were fitted (3 splits each), plus the refit
    assert CountedFits.n_fits == 3 * 3 + 1
    r1, r2 = first.cv_results_, second.cv_results_
    assert len(r2["params"]) == 8
    assert r2["params"][:5] == r1["params"]
    np.testing.assert_array_equal(r2["resource_fraction"][:5], r1["resource_fraction"])
    np.testing.assert_array_equal(r2["mean_train_time"][:5], r1["mean_train_time"])
    keys = [(p["c"], f) for p, f in zip(r2["params"], r2["resource_fraction"])]
    assert len(set(keys)) == 8
    assert second.run_name_ == "r"
    assert second.best_index_ == np.argmax(r2["tradeoff_score"])


def test_resuming_with_other_fractions_is_refused(data, tmp_path):
    # a stored trial on half the rows would answer a search told to fit on
    # a quarter, three quarters or all of them
    X, y = data

    def search(fractions, n_iter):
        return TradeoffBayesSearchCV(
            CountedFits(),
            {"c": Real(0.0, 1.0)},
            fractions=fractions,
            n_iter=n_iter,
            cv=3,
            store=tmp_path / "s.db",
            run_name="r",
            **FAST,
        )

    first = search((0.5, 1.0), 5).fit(X, y)
    assert 0.5 in first.cv_results_["resource_fraction"]
    with pytest.raises(ValueError, match=r"\[40\] .*fractions=\(0.25, 0.75, 1.0\)"):
        search((0.25, 0.75, 1.0), 8).fit(X, y)
    assert len(search((0.5, 1.0), 6).fit(X, y).cv_results_["params"]) == 6


# ----------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------
BAD_INPUTS = [
    ({"alpha": -0.1}, "alpha"),
    ({"alpha": np.inf}, "alpha"),
    ({"alpha": np.nan}, "alpha"),
    ({"alpha": "large"}, "alpha"),
    ({"fractions": ()}, "fractions"),
    ({"fractions": []}, "fractions"),
    ({"fractions": (0.0, 0.5)}, "fractions"),
    ({"fractions": (0.5, 1.5)}, "fractions"),
    ({"fractions": (-0.2,)}, "fractions"),
    ({"fractions": (0.5, np.nan)}, "fractions"),
    ({"fractions": [[0.5, 1.0]]}, "fractions"),
    ({"fractions": ("a", "b")}, "fractions"),
    ({"fractions": "0.5"}, "fractions"),
    ({"fractions": 0.5}, "fractions"),
    ({"time_normalization": 0.0}, "time_normalization"),
    ({"time_normalization": -1.0}, "time_normalization"),
    ({"time_normalization": np.inf}, "time_normalization"),
    ({"time_normalization": "min"}, "time_normalization"),
    ({"n_iter": 0}, "n_iter"),
    ({"n_initial_points": 0}, "n_initial_points"),
    ({"hyperparameter_sampling": "hmc"}, "hyperparameter_sampling"),
    ({"search_spaces": {"unknown": Real(0.0, 1.0)}}, "unknown"),
]


@pytest.mark.parametrize("kwargs, name", BAD_INPUTS)
def test_bad_input_raises_before_any_fit(kwargs, name):
    X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    params = {"search_spaces": {"c": Real(0.1, 1.0)}, **kwargs}
    search = TradeoffBayesSearchCV(NeverFit(), **params)
    with pytest.raises(ValueError, match=name):
        search.fit(X, y)


def test_refit_on_a_fraction_subsets_a_precomputed_kernel():
    from sklearn.svm import SVC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] > 0).astype(int)
    K = X @ X.T
    search = TradeoffBayesSearchCV(
        SVC(kernel="precomputed"),
        {"C": Real(0.1, 10.0, "log-uniform")},
        fractions=(0.25,),
        n_iter=3,
        n_initial_points=2,
        cv=2,
        hyperparameter_sampling="map",
        error_score="raise",
        random_state=0,
    )
    with pytest.warns(UserWarning, match="refit_indices_"):
        search.fit(K, y)
    rows = search.refit_indices_
    assert search.best_estimator_.shape_fit_ == (len(rows), len(rows))
    # predicting needs the kernel against the refit rows only
    search.best_estimator_.predict(K[:, rows])
