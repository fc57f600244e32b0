"""TradeoffBayesSearchCV: selection by score and training time (paper 003)."""

import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.integrate import quad
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
from skbayes_search.acquisition import make_acquisition
from skbayes_search.gp import GPSurrogate
from skbayes_search.space import Integer, Real
from skbayes_search.strategies import tradeoff
from skbayes_search.strategies.tradeoff import (
    TradeoffBayesSearchCV,
    _expected_excess,
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


def test_time_reference_is_the_incumbents_time(data, monkeypatch):
    # o* of eq. 3 is the measured time of the trial the selection rule
    # (argmax L - alpha * o, "max" normalisation) would pick at proposal
    # time, not the shortest time seen
    X, y = data
    refs = []
    build = tradeoff._make_tradeoff_acquisition

    def spy(*args, **kwargs):
        refs.append(kwargs["log_time_ref"])
        return build(*args, **kwargs)

    monkeypatch.setattr(tradeoff, "_make_tradeoff_acquisition", spy)
    alpha = 0.01  # the most accurate trial wins; it is also the slowest
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
    not_fastest = 0
    for k, ref in zip(range(3, 8), refs):
        ok = np.isfinite(seconds[:k])
        o = seconds[:k] / np.nanmax(seconds[:k])
        T = np.where(ok, scores[:k] - alpha * o, -np.inf)
        best = np.flatnonzero(T == T.max())
        incumbent = best[np.argmin(seconds[:k][best])]
        assert ref == pytest.approx(np.log(max(seconds[incumbent], 1e-4)), rel=1e-12)
        not_fastest += seconds[incumbent] > np.nanmin(seconds[:k])
    # the check above must have told the incumbent from the fastest trial
    assert not_fastest >= 1


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
# The acquisition
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


def test_acquisition_is_ei_when_alpha_is_zero(surrogates):
    loss_s, time_s, loss, log_t, U = surrogates
    kwargs = dict(
        loss_best=loss.min(), log_time_ref=np.median(log_t), time_scale=2.05, alpha=0.0
    )
    with threadpool_limits(1):
        a_t = _make_tradeoff_acquisition(loss_s, time_s, **kwargs)(U)
        log_a = _make_tradeoff_acquisition(loss_s, time_s, log=True, **kwargs)(U)
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


def test_acquisition_subtracts_expected_excess_time(surrogates):
    loss_s, time_s, loss, log_t, U = surrogates
    # the incumbent's time: a middle one, so candidates lie on both sides
    ref = np.median(log_t)
    kwargs = dict(loss_best=loss.min(), log_time_ref=ref, time_scale=2.05)
    with threadpool_limits(1):
        ei = _make_tradeoff_acquisition(loss_s, time_s, alpha=0.0, **kwargs)(U)
        a_t = _make_tradeoff_acquisition(loss_s, time_s, alpha=0.5, **kwargs)(U)
    a_o = (ei - a_t) / 0.5
    # Monte Carlo E[max(o - o*, 0)] over the time GP's samples (eq. 3)
    mean, std = time_s.predict(U)
    rng = np.random.default_rng(0)
    g = mean[None] + std[None] * rng.standard_normal((20000, *mean.shape))
    mc = np.maximum(np.exp(g) - np.exp(ref), 0).mean(axis=(0, 1)) / 2.05
    np.testing.assert_allclose(a_o, mc, rtol=0.05, atol=1e-4)
    # a penalty, never a bonus
    assert np.all(a_o >= 0) and np.all(a_t <= ei)
    # the penalty is where the predicted time exceeds the incumbent's
    predicted = mean.mean(axis=0)
    slower, faster = predicted > ref + 0.5, predicted < ref - 0.5
    assert slower.sum() >= 5 and faster.sum() >= 5
    assert a_o[slower].min() > 10 * a_o[faster].max()
    slow, fast = np.argmax(predicted), np.argmin(predicted)
    assert a_o[slow] > 100 * a_o[fast]
    # a slower incumbent (larger o*) penalises everything less
    with threadpool_limits(1):
        kwargs["log_time_ref"] = ref + 1.0
        a_t_late = _make_tradeoff_acquisition(loss_s, time_s, alpha=0.5, **kwargs)(U)
    assert np.all(a_t_late >= a_t - 1e-12) and np.any(a_t_late > a_t + 1e-6)


def test_pending_points_do_not_move_the_time_reference(surrogates):
    loss_s, time_s, loss, log_t, U = surrogates
    pending = U[:2]
    kwargs = dict(loss_best=loss.min(), log_time_ref=np.median(log_t), time_scale=2.0)
    with threadpool_limits(1):
        no_pending = _make_tradeoff_acquisition(loss_s, time_s, alpha=0.0, **kwargs)
        a_o = (
            no_pending(U)
            - _make_tradeoff_acquisition(loss_s, time_s, alpha=0.5, **kwargs)(U)
        ) / 0.5
        # the same loss fantasies for both (same seed): the difference is a_o
        ei_f = _make_tradeoff_acquisition(
            loss_s,
            time_s,
            alpha=0.0,
            X_pending=pending,
            rng=np.random.default_rng(3),
            **kwargs,
        )(U)
        a_t_f = _make_tradeoff_acquisition(
            loss_s,
            time_s,
            alpha=0.5,
            X_pending=pending,
            rng=np.random.default_rng(3),
            **kwargs,
        )(U)
    # the fantasies change EI_L (they may improve L*) ...
    assert not np.allclose(ei_f, no_pending(U))
    # ... but not the time term: o* is the incumbent's measured time
    np.testing.assert_allclose((ei_f - a_t_f) / 0.5, a_o, rtol=1e-9, atol=1e-15)


def test_expected_excess_closed_form():
    rng = np.random.default_rng(0)
    for mu, sigma, c in [(0.0, 0.5, 1.0), (-1.0, 1.0, 0.1), (2.0, 0.1, 8.0)]:
        draws = np.exp(mu + sigma * rng.standard_normal(400_000))
        mc = np.maximum(draws - c, 0).mean()
        assert _expected_excess(np.array(mu), np.array(sigma), np.log(c)) == (
            pytest.approx(mc, rel=0.02, abs=1e-4)
        )
    # deep in the lower tail Monte Carlo sees nothing: integrate instead
    for mu, sigma, c in [(-4.0, 0.5, 1.0), (-20.0, 2.0, 1.0), (0.0, 0.05, 1.5)]:

        def integrand(g, mu=mu, sigma=sigma, c=c):
            z = (g - mu) / sigma
            return (np.exp(g) - c) * np.exp(-0.5 * z * z) / (sigma * np.sqrt(2 * np.pi))

        exact, _ = quad(integrand, np.log(c), mu + 40 * sigma, epsabs=0, epsrel=1e-10)
        got = _expected_excess(np.array(mu), np.array(sigma), np.log(c))
        assert 0 < exact < 1e-3
        assert got == pytest.approx(exact, rel=1e-6)
    # far above c it is the mean time minus c; far below it vanishes, never
    # negative, and extreme inputs give no nan, inf or warning
    assert _expected_excess(np.array(5.0), np.array(0.1), 0.0) == pytest.approx(
        np.exp(5.005) - 1.0, rel=1e-12
    )
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        mu = np.array([-1e4, -60.0, -5.0, 0.0, 5.0, 60.0])
        for sigma in (1e-12, 1e-3, 1.0, 30.0):
            out = _expected_excess(mu, np.full_like(mu, sigma), 0.0)
            assert np.all(np.isfinite(out)) and np.all(out >= 0)
            assert np.all(np.diff(out) >= 0)  # increasing in the mean
        assert _expected_excess(np.array(-1e4), np.array(1.0), 0.0) == 0.0


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
