"""Trade-off objective, selection rule and Pareto fronts (skbayes_search.analysis)."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

from skbayes_search import TradeoffBayesSearchCV
from skbayes_search.analysis import (
    normalize_times,
    objective_parts,
    pareto_front,
    results_pareto_front,
    scale_scores,
    time_scale,
    tradeoff_curve,
    tradeoff_index,
)
from skbayes_search.space import Real


class NeverFit(RegressorMixin, BaseEstimator):
    def __init__(self, c=1.0):
        self.c = c

    def fit(self, X, y):
        raise AssertionError("fit must not be called")


def _searched(results):
    """An unfitted search holding constructed ``cv_results_``."""
    search = TradeoffBayesSearchCV(NeverFit(), {"c": Real(0.0, 1.0)})
    search.cv_results_ = results
    return search


def test_scores_outside_unit_interval_are_min_max_scaled():
    np.testing.assert_array_equal(scale_scores([0.2, 0.9, np.nan]), [0.2, 0.9, np.nan])
    np.testing.assert_allclose(
        scale_scores([-3.0, -1.0, -2.0, np.nan]), [0.0, 1.0, 0.5, np.nan]
    )
    # one repeated score outside [0, 1] is the best there is
    np.testing.assert_array_equal(scale_scores([-2.0, -2.0, np.nan]), [1, 1, np.nan])
    assert np.isnan(scale_scores([np.nan, np.nan])).all()


def test_time_normalization():
    times = np.array([2.0, np.nan, 8.0])
    assert time_scale(times, "max") == 8.0
    assert time_scale([np.nan], "max") == 1.0
    assert time_scale(times, 0.5) == 0.5
    np.testing.assert_array_equal(normalize_times(times, "max"), [0.25, np.nan, 1.0])
    np.testing.assert_array_equal(normalize_times(times, 4.0), [0.5, np.nan, 2.0])
    # instant fits only: every finite time is 0
    np.testing.assert_array_equal(normalize_times([0.0, np.nan], "max"), [0, np.nan])


def test_tradeoff_index_breaks_ties_by_time_then_order():
    L = np.array([0.9, 0.9, 0.9, np.nan])
    o = np.array([0.5, 0.2, 0.2, 0.0])
    assert tradeoff_index(L, o, 0.0) == 1
    assert tradeoff_index(L, o, 1.0) == 1
    assert tradeoff_index([np.nan], [0.1], 0.5) == -1


def test_objective_parts_leave_failed_trials_out():
    # another search's results: a failed fit's time is no training time
    results = {
        "mean_test_score": np.array([0.9, np.nan, 0.6]),
        "mean_fit_time": np.array([1.0, 9.0, 2.0]),
    }
    L, o = objective_parts(results, "mean_test_score", "max")
    np.testing.assert_array_equal(L, [0.9, np.nan, 0.6])
    np.testing.assert_array_equal(o, [0.5, np.nan, 1.0])
    np.testing.assert_array_equal(results_pareto_front(results), [0])


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
    front = results_pareto_front(results, refit=True)
    np.testing.assert_array_equal(front, [1, 0, 4, 2])

    search = _searched(results)
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
        search = _searched({"mean_test_score": scores, "mean_train_time": times})
        curve = tradeoff_curve(search, [0.0, 0.05, 0.2, 1.0, 100.0])
        if np.isfinite(scores).any():
            assert np.isin(curve, front).all()


def test_tradeoff_curve_rejects_bad_alphas():
    search = _searched(
        {"mean_test_score": np.array([0.9, 0.8]), "mean_train_time": np.ones(2)}
    )
    for alphas in ([-0.1], [np.inf], [np.nan], "x", [[0.1, 0.2], [0.3, 0.4]]):
        with pytest.raises(ValueError, match="alphas"):
            tradeoff_curve(search, alphas)


def test_pareto_front_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="same length"):
        pareto_front([0.9, 0.8], [1.0])
