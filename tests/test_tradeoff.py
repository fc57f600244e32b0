"""TradeoffBayesSearchCV: selection by score and training time (paper 003)."""

import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import integrate
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

from skbayes_search._evaluate import subset_size
from skbayes_search.acquisition import log_ei, make_acquisition
from skbayes_search.gp import GPSurrogate
from skbayes_search.space import Integer, Real
from skbayes_search.strategies import tradeoff
from skbayes_search.strategies.tradeoff import (
    TradeoffBayesSearchCV,
    _log_ei_tradeoff,
    _make_tradeoff_acquisition,
    _results_pareto_front,
    _scale_scores,
    pareto_front,
    tradeoff_curve,
)

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
    build = tradeoff._make_tradeoff_acquisition

    def spy(*args, **kwargs):
        refs.append(kwargs["tradeoff_best"])
        return build(*args, **kwargs)

    monkeypatch.setattr(tradeoff, "_make_tradeoff_acquisition", spy)
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
    np.testing.assert_array_equal(_scale_scores([0.2, 0.9, np.nan]), [0.2, 0.9, np.nan])
    np.testing.assert_allclose(
        _scale_scores([-3.0, -1.0, -2.0, np.nan]), [0.0, 1.0, 0.5, np.nan]
    )
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


# ----------------------------------------------------------------------------
# Pareto front and the alpha curve on constructed results
# ----------------------------------------------------------------------------
def _brute_force_front(scores, times):
    ok = np.isfinite(scores) & np.isfinite(times)
    front = []
    for i in np.flatnonzero(ok):
        dominated = any(
            scores[j] >= scores[i]
            and times[j] <= times[i]
            and (scores[j] > scores[i] or times[j] < times[i])
            for j in np.flatnonzero(ok)
        )
        if not dominated:
            front.append(i)
    return set(front)


def test_pareto_front_on_constructed_results():
    results = {
        "mean_test_score": np.array([0.90, 0.80, 0.95, 0.85, 0.90, np.nan, 0.70, 0.95]),
        "mean_train_time": np.array([2.0, 1.0, 4.0, 3.0, 2.0, 0.1, 1.0, 5.0]),
    }
    # 1 (0.80 in 1 s) beats 6; 0 and 4 tie (0.90 in 2 s) and beat 3; 2 beats 7;
    # 5 failed
    front = _results_pareto_front(results, refit=True)
    np.testing.assert_array_equal(front, [1, 0, 4, 2])

    search = TradeoffBayesSearchCV(NeverFit(), {"c": Real(0.0, 1.0)})
    search.cv_results_ = results
    # alpha = 0: the most accurate, the faster of the two 0.95s
    assert tradeoff_curve(search, 0.0).tolist() == [2]
    # times normalised by 5 s: 0.95 - 0.8 a vs 0.90 - 0.4 a vs 0.80 - 0.2 a
    assert tradeoff_curve(search, [0.1, 0.3, 0.6, 10.0]).tolist() == [2, 0, 1, 1]


def test_pareto_front_matches_brute_force_and_holds_the_curve():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 30))
        scores = np.round(rng.random(n), 1)  # coarse values: many ties
        times = np.round(rng.random(n) * 3, 1)
        scores[rng.random(n) < 0.1] = np.nan
        front = pareto_front(scores, times)
        assert set(front.tolist()) == _brute_force_front(scores, times)
        assert np.all(np.diff(times[front]) >= 0)
        search = TradeoffBayesSearchCV(NeverFit(), {"c": Real(0.0, 1.0)})
        search.cv_results_ = {"mean_test_score": scores, "mean_train_time": times}
        curve = tradeoff_curve(search, [0.0, 0.05, 0.2, 1.0, 100.0])
        if np.isfinite(scores).any():
            assert np.isin(curve, front).all()


def test_tradeoff_curve_rejects_bad_alphas(iris_search):
    for alphas in ([-0.1], [np.inf], [np.nan], "x", [[0.1, 0.2], [0.3, 0.4]]):
        with pytest.raises(ValueError, match="alphas"):
            tradeoff_curve(iris_search, alphas)


# ----------------------------------------------------------------------------
# The acquisition: expected improvement of T = L - alpha * o
# ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def surrogates():
    rng = np.random.default_rng(1)
    X = rng.random((12, 2))
    loss = np.sin(4 * X[:, 0]) + X[:, 1] ** 2
    log_t = np.log(0.05 + 2.0 * X[:, 1])  # time grows along the 2nd input
    loss_s = GPSurrogate(hyperparameter_sampling="mcmc", n_burn=30, random_state=0)
    time_s = GPSurrogate(hyperparameter_sampling="mcmc", n_burn=30, random_state=1)
    with threadpool_limits(1):
        loss_s.fit(X, loss)
        time_s.fit(X, log_t)
    U = rng.random((64, 2))
    return loss_s, time_s, loss, log_t, U


def _gaussian_ei(mean, std, best):
    """E[max(T - best, 0)] for T ~ N(mean, std^2), via scipy (not log_ei)."""
    z = (mean - best) / std
    return std * (z * norm.cdf(z) + norm.pdf(z))


def test_acquisition_is_ei_when_alpha_is_zero(surrogates):
    loss_s, time_s, loss, _, U = surrogates
    kwargs = dict(tradeoff_best=-loss.min(), time_scale=2.05, alpha=0.0)
    with threadpool_limits(1):
        a_t = _make_tradeoff_acquisition(loss_s, time_s, log=False, **kwargs)(U)
        log_a = _make_tradeoff_acquisition(loss_s, time_s, **kwargs)(U)
        ei = make_acquisition(loss_s, "ei", y_best=loss.min())(U)  # log of EI
    np.testing.assert_allclose(np.log(a_t), ei, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(log_a, ei, rtol=1e-10, atol=1e-12)
    # EI from the GP's own predictions, by numerical integration
    mean, std = loss_s.predict(U[:3])
    z = np.linspace(-10, 10, 20001)
    pdf = np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi)
    for j in range(3):
        ei_j = np.mean(
            [
                np.trapezoid(np.maximum(loss.min() - (m + s * z), 0) * pdf, z)
                for m, s in zip(mean[:, j], std[:, j])
            ]
        )
        assert a_t[j] == pytest.approx(ei_j, rel=1e-4, abs=1e-10)


def test_alpha_zero_with_pending_points_is_the_fantasy_ei(surrogates):
    # the batch case reduces too: the same fantasies as BayesSearchCV's EI
    loss_s, time_s, loss, _, U = surrogates
    pending = U[:2]
    with threadpool_limits(1):
        a_t = _make_tradeoff_acquisition(
            loss_s,
            time_s,
            tradeoff_best=-loss.min(),
            time_scale=2.0,
            alpha=0.0,
            X_pending=pending,
            rng=np.random.default_rng(3),
        )(U)
        ei = make_acquisition(
            loss_s,
            "ei",
            y_best=loss.min(),
            X_pending=pending,
            n_fantasies=tradeoff._N_FANTASIES,
            rng=np.random.default_rng(3),
        )(U)
        plain = make_acquisition(loss_s, "ei", y_best=loss.min())(U)
    np.testing.assert_allclose(a_t, ei, rtol=1e-10, atol=1e-12)
    assert not np.allclose(a_t, plain)


def _quad_ei_tradeoff(mean_L, std_L, mean_g, std_g, alpha, best):
    """EI_T by adaptive quadrature over the log time (scipy), one case."""

    def integrand(z):
        o = np.exp(mean_g + std_g * z)
        return _gaussian_ei(mean_L - alpha * o, std_L, best) * norm.pdf(z)

    return integrate.quad(integrand, -12, 12, limit=200, epsabs=0, epsrel=1e-10)[0]


def test_acquisition_integrates_every_sample_pair(surrogates):
    # E over every (score sample, time sample) pair of the EI of T given the
    # log time, integrated over the log time by scipy's adaptive quadrature
    loss_s, time_s, loss, log_t, U = surrogates
    alpha, scale = 2.0, 2.05
    o = np.exp(log_t) / scale
    t_best = float(np.median(-loss - alpha * o))
    V = U[:4]
    with threadpool_limits(1):
        got = _make_tradeoff_acquisition(
            loss_s,
            time_s,
            tradeoff_best=t_best,
            time_scale=scale,
            alpha=alpha,
            log=False,
        )(V)
    mL, sL = loss_s.predict(V)  # loss = -L
    mg, sg = time_s.predict(V)
    mg = mg - np.log(scale)
    want = np.array(
        [
            np.mean(
                [
                    _quad_ei_tradeoff(
                        -mL[i, c], sL[i, c], mg[j, c], sg[j, c], alpha, t_best
                    )
                    for i in range(len(mL))
                    for j in range(len(mg))
                ]
            )
            for c in range(len(V))
        ]
    )
    assert want.max() > 0.05
    # below ~1e-30 the scipy reference loses digits (z * cdf + pdf cancels)
    big = want > 1e-30
    assert big.sum() >= 3
    np.testing.assert_allclose(got[big], want[big], rtol=1e-3, atol=0)
    # pairing the samples instead would be a different (noisier) average
    paired = [
        np.mean(
            [
                _quad_ei_tradeoff(
                    -mL[i, c], sL[i, c], mg[i, c], sg[i, c], alpha, t_best
                )
                for i in range(len(mL))
            ]
        )
        for c in range(len(V))
    ]
    assert np.max(np.abs(np.log(got) - np.log(paired))) > 0.1


def test_acquisition_matches_monte_carlo_of_the_tradeoff(surrogates):
    # E[max(L - alpha * o - T*, 0)] by brute force: L from the score GP, o
    # drawn log-normal from the (here sharp) time GP, every pair of samples
    loss_s, time_s, loss, log_t, U = surrogates
    alpha, scale = 2.0, 2.05
    o = np.exp(log_t) / scale
    # a middling reference, so that many candidates have a sizeable EI_T
    t_best = float(np.median(-loss - alpha * o))
    V = U[:16]
    with threadpool_limits(1):
        got = _make_tradeoff_acquisition(
            loss_s,
            time_s,
            tradeoff_best=t_best,
            time_scale=scale,
            alpha=alpha,
            log=False,
        )(V)
    mL, sL = loss_s.predict(V)
    mg, sg = time_s.predict(V)
    rng = np.random.default_rng(0)
    n = 4000
    L = -(
        mL[:, None, :, None]
        + sL[:, None, :, None] * rng.standard_normal((mL.shape[0], 1, len(V), n))
    )
    g = mg[None, :, :, None] + sg[None, :, :, None] * rng.standard_normal(
        (1, mg.shape[0], len(V), n)
    )
    mc = np.maximum(L - alpha * np.exp(g) / scale - t_best, 0).mean(axis=(0, 1, 3))
    assert mc.max() > 0.05  # the check is not about negligible values
    np.testing.assert_allclose(got, mc, rtol=0.05, atol=2e-3)
    # the time term matters here: ignoring it would not pass
    with threadpool_limits(1):
        no_time = _make_tradeoff_acquisition(
            loss_s,
            None,
            tradeoff_best=t_best,
            time_scale=scale,
            alpha=alpha,
            log=False,
        )(V)
    assert np.abs(no_time - mc).max() > 0.1


class _FixedModel:
    """Stands in for a fitted GP: latent mean ``mean + slope * U[:, 0]``."""

    def __init__(self, mean, var, slope=0.0):
        self.mean, self.var, self.slope = mean, var, slope

    def predict(self, U):
        U = np.atleast_2d(U)
        return self.mean + self.slope * U[:, 0], np.full(len(U), self.var)


def _fixed_surrogate(mean, std, slope=0.0):
    return _sample_surrogate([(mean, std, slope)])


def _sample_surrogate(samples):
    """A surrogate whose hyperparameter samples are ``(mean, std, slope)``."""
    models = [_FixedModel(m, s**2, b) for m, s, b in samples]
    return SimpleNamespace(models_=models, y_mean_=0.0, y_std_=1.0)


def _moment_matched_ei(mean_L, std_L, mean_g, std_g, alpha, best):
    """The former acquisition: o replaced by the Gaussian with its moments."""
    m_o = np.exp(mean_g + std_g**2 / 2)
    v_o = np.expm1(std_g**2) * np.exp(2 * mean_g + std_g**2)
    return _gaussian_ei(mean_L - alpha * m_o, np.sqrt(std_L**2 + alpha**2 * v_o), best)


@pytest.mark.parametrize("time_sd", [1.0, 1.5])
def test_acquisition_matches_monte_carlo_for_wide_time_uncertainty(time_sd):
    # the regime of real searches (log-time sd >= 0.5): two score samples
    # times two time samples, candidates from slow and hopeless to fast and
    # promising; o = exp(g) / scale drawn log-normal, L Gaussian
    alpha, scale, t_best = 0.3, 2.0, 0.80
    loss_samples = [(-0.78, 0.02, -0.08), (-0.79, 0.03, -0.06)]  # loss = -L
    time_samples = [(np.log(1.2), time_sd, -3.0), (np.log(0.8), time_sd, -2.5)]
    V = np.linspace(0.0, 1.0, 6)[:, None]
    with threadpool_limits(1):
        got = _make_tradeoff_acquisition(
            _sample_surrogate(loss_samples),
            _sample_surrogate(time_samples),
            tradeoff_best=t_best,
            time_scale=scale,
            alpha=alpha,
            log=False,
        )(V)
    rng = np.random.default_rng(0)
    n = 400_000
    mc = np.zeros(len(V))
    moment = np.zeros(len(V))
    for m_l, s_l, b_l in loss_samples:
        for m_g, s_g, b_g in time_samples:
            mean_L = -(m_l + b_l * V[:, 0])
            mean_g = m_g + b_g * V[:, 0] - np.log(scale)
            L = mean_L[:, None] + s_l * rng.standard_normal((len(V), n))
            o = np.exp(mean_g[:, None] + s_g * rng.standard_normal((len(V), n)))
            mc += np.maximum(L - alpha * o - t_best, 0).mean(axis=1) / 4
            moment += _moment_matched_ei(mean_L, s_l, mean_g, s_g, alpha, t_best) / 4
    # EI_T from about 1e-4 (slow, hopeless at its median time) to 0.04
    assert mc.min() > 1e-5
    np.testing.assert_allclose(got, mc, rtol=0.05)
    # the former moment matching overstated these several-fold
    assert np.max(moment / mc) > 2.0


def test_acquisition_never_exceeds_the_score_ei():
    # o >= 0 can only lower T: EI_T <= E[max(L - T*, 0)], also far in the
    # tails (log space) and for absurd time predictions
    rng = np.random.default_rng(0)
    n = 20_000
    mean_L = rng.uniform(0.0, 1.0, n)
    std_L = 10 ** rng.uniform(-4, 0, n)
    mean_g = rng.uniform(-10, 10, n)
    std_g = 10 ** rng.uniform(-3, 1, n)
    alpha = 0.3
    best = rng.uniform(0.0, 1.2, n)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = _log_ei_tradeoff(mean_L, std_L, mean_g, std_g, alpha, best)
    bound = log_ei(-mean_L, std_L, -best)
    assert np.all(np.isfinite(got))
    assert np.all(got <= bound + 1e-12 * np.abs(bound))
    # the bound is tight when the time is negligible
    tiny = _log_ei_tradeoff(
        mean_L, std_L, np.full(n, -40.0), np.minimum(std_g, 1.0), alpha, best
    )
    np.testing.assert_allclose(tiny, bound, rtol=1e-9)
    # and through the acquisition, averaged over samples
    loss_s = _sample_surrogate([(-0.8, 0.02, 0.3), (-0.85, 0.01, 0.2)])
    time_s = _sample_surrogate([(0.0, 1.5, -2.0), (-1.0, 0.7, 1.0)])
    U = rng.random((64, 1))
    with threadpool_limits(1):
        a_t = _make_tradeoff_acquisition(
            loss_s, time_s, tradeoff_best=0.75, time_scale=1.0, alpha=0.5
        )(U)
        a_l = _make_tradeoff_acquisition(
            loss_s, None, tradeoff_best=0.75, time_scale=1.0, alpha=0.5
        )(U)
    assert np.all(a_t <= a_l + 1e-12)
    assert np.all(a_t < a_l - 0.1)  # and not trivially equal


def _ei_t_at(mean_g, std_g, *, mean_L=0.84, std_L=0.02, alpha=0.3, best=0.76):
    """EI_T of one candidate through the acquisition (time scale 2 s)."""
    with threadpool_limits(1):
        return _make_tradeoff_acquisition(
            _fixed_surrogate(-mean_L, std_L),
            _fixed_surrogate(mean_g, std_g),
            tradeoff_best=best,
            time_scale=2.0,
            alpha=alpha,
            log=False,
        )(np.zeros((1, 1)))[0]


SDS = (0.01, 0.25, 0.5, 1.0, 1.5)


def test_acquisition_grows_with_time_uncertainty_at_fixed_means():
    # the same expected score and expected normalised time, a wider time GP:
    # EI_T only grows (E[max(c - alpha * o, 0)] is convex in o and wider
    # log-normals of one mean are larger in the convex order)
    mean_o = 0.25
    # E[o] stays 0.25 (time scale 2 s)
    values = [_ei_t_at(np.log(mean_o * 2.0) - s**2 / 2, s) for s in SDS]
    assert np.all(np.diff(values) > 0)
    # the sharp end is the EI of L shifted by alpha * E[o]
    assert values[0] == pytest.approx(
        _gaussian_ei(0.84 - 0.3 * mean_o, 0.02, 0.76), rel=1e-3
    )


def test_time_uncertainty_at_fixed_median_helps_only_a_losing_candidate():
    # median o = 0.5: T = 0.84 - 0.15 = 0.69 loses to T* = 0.76, and only a
    # faster outcome can win, so a wider time raises EI_T
    losing = [_ei_t_at(np.log(0.5 * 2.0), s) for s in SDS]
    assert np.all(np.diff(losing) > 0)
    assert losing[-1] > 100 * losing[0]
    # median o = 0.05: T = 0.825 wins clearly; a wider time adds slow
    # outcomes that lose more than the fast ones gain
    winning = [_ei_t_at(np.log(0.05 * 2.0), s) for s in SDS]
    assert np.all(np.diff(winning) < 0)
    # neither ever exceeds the EI of the score alone
    assert max(losing + winning) < _gaussian_ei(0.84, 0.02, 0.76)


def test_pending_points_condition_both_gps(surrogates):
    loss_s, time_s, loss, _, U = surrogates
    pending = U[:2]
    with threadpool_limits(1):
        members = tradeoff._members(time_s, pending, 4, np.random.default_rng(0))
        assert len(members) == len(time_s.models_)
        for model, log_t_f in members:
            assert log_t_f.shape == (2, 4)
            # the conditioned time GP is no longer unsure at the pending points
            _, var = model.predict(pending)
            assert np.all(var < 10 * model.noise_var_ + 1e-6)
        kwargs = dict(tradeoff_best=float(np.max(-loss)), time_scale=2.05, alpha=2.0)
        alone = _make_tradeoff_acquisition(loss_s, time_s, **kwargs)(U)
        batch = _make_tradeoff_acquisition(
            loss_s, time_s, X_pending=pending, rng=np.random.default_rng(0), **kwargs
        )(U)
    # a pending point is worth much less once its outcome is fantasised
    assert np.all(batch[:2] < alone[:2] - np.log(10))


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
