"""MultiStageBayesSearchCV: stages, top-k hand-off, full-data result."""

import time
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.datasets import make_classification, make_regression
from sklearn.decomposition import PCA
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression, Ridge, RidgeClassifier
from sklearn.model_selection import KFold
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from skbayes_search import BayesSearchCV, Real
from skbayes_search.strategies.multistage import MultiStageBayesSearchCV

# The checks scikit-learn itself marks as expected failures for its searches.
EXPECTED_FAILED_CHECKS = {
    "check_supervised_y_2d": "DataConversionWarning not caught",
    "check_requires_y_none": "Doesn't fail gracefully",
}


def _check_instances():
    common = dict(
        stages=(0.5, 1.0),
        n_iter=(3, 3),
        top_k=1,
        n_initial_points=2,
        hyperparameter_sampling="map",
        cv=2,
        error_score="raise",
        random_state=0,
    )
    return [
        MultiStageBayesSearchCV(Ridge(), {"alpha": Real(0.1, 1.0)}, **common),
        MultiStageBayesSearchCV(RidgeClassifier(), {"alpha": [0.1, 1.0]}, **common),
        MultiStageBayesSearchCV(
            Pipeline([("pca", PCA()), ("ridge", Ridge())]),
            {"ridge__alpha": Real(0.1, 1.0, prior="log-uniform")},
            **common,
        ),
    ]


@parametrize_with_checks(
    _check_instances(), expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


class Quadratic(RegressorMixin, BaseEstimator):
    """Score is a known function of the parameters (optimum 0 at a=2, b=0.7).

    ``data_penalty`` lowers the score per training row seen, so that scores
    on small subsets look better than on the full data.
    ``full_fit_sleep`` makes fits on more than ``sleep_above`` rows slow.
    """

    def __init__(
        self, a=1.0, b=0.0, data_penalty=0.0, full_fit_sleep=0.0, sleep_above=0
    ):
        self.a = a
        self.b = b
        self.data_penalty = data_penalty
        self.full_fit_sleep = full_fit_sleep
        self.sleep_above = sleep_above

    def fit(self, X, y=None):
        self.n_fit_rows_ = len(X)
        if self.full_fit_sleep and len(X) > self.sleep_above:
            time.sleep(self.full_fit_sleep)
        return self

    def score(self, X, y=None):
        value = -((np.log10(self.a) - 0.3) ** 2) - 2 * (self.b - 0.7) ** 2
        return value - self.data_penalty * self.n_fit_rows_


class RowCounter(RegressorMixin, BaseEstimator):
    """Its score is the number of rows its fit saw."""

    def __init__(self, a=1.0):
        self.a = a

    def fit(self, X, y=None):
        self.n_fit_rows_ = len(X)
        return self

    def score(self, X, y=None):
        return float(self.n_fit_rows_)


class Flaky(ClassifierMixin, BaseEstimator):
    """Fails to fit whenever ``c`` is above ``threshold``."""

    def __init__(self, c=1.0, threshold=0.66):
        self.c = c
        self.threshold = threshold

    def fit(self, X, y):
        if self.c > self.threshold:
            raise ValueError("c too large")
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    def score(self, X, y):
        return -((self.c - 0.4) ** 2)


SPACE = {"a": Real(1e-2, 1e2, prior="log-uniform"), "b": Real(0.0, 1.0)}


@pytest.fixture(scope="module")
def regression_data():
    return make_regression(n_samples=60, n_features=3, random_state=0)


def _stage_rows(results, stage):
    return np.flatnonzero(results["iter"] == stage)


def _top_k(results, rows, k):
    # stable sort: ties keep evaluation order, as the hand-off does
    scores = results["mean_test_score"][rows]
    order = np.argsort(-np.where(np.isnan(scores), -np.inf, scores), kind="stable")
    return [results["params"][rows[i]] for i in order[:k]]


@pytest.mark.parametrize(
    "n_points, hyperparameter_sampling", [(None, "mcmc"), (2, "map")]
)
def test_one_stage_is_bayes_search(regression_data, n_points, hyperparameter_sampling):
    X, y = regression_data
    settings = dict(
        n_iter=7,
        n_initial_points=3,
        n_points=n_points,
        hyperparameter_sampling=hyperparameter_sampling,
        cv=3,
        random_state=7,
    )
    ours = MultiStageBayesSearchCV(Quadratic(), SPACE, stages=(1.0,), **settings)
    theirs = BayesSearchCV(Quadratic(), SPACE, **settings)
    ours.fit(X, y)
    theirs.fit(X, y)
    assert len(ours.cv_results_["params"]) == 7
    assert ours.cv_results_["params"] == theirs.cv_results_["params"]
    np.testing.assert_array_equal(
        ours.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"]
    )
    np.testing.assert_array_equal(
        ours.cv_results_["acquisition_value"], theirs.cv_results_["acquisition_value"]
    )
    np.testing.assert_array_equal(ours.cv_results_["iter"], 0)
    assert ours.best_index_ == theirs.best_index_
    assert ours.best_params_ == theirs.best_params_
    assert ours.n_stages_ == 1
    assert ours.stage_best_params_ == [theirs.best_params_]


def test_top_k_hand_off_opens_each_stage(regression_data):
    X, y = regression_data
    n_iter = (7, 5, 4)
    search = MultiStageBayesSearchCV(
        Quadratic(),
        SPACE,
        stages=(0.25, 0.5, 1.0),
        n_iter=n_iter,
        top_k=3,
        n_initial_points=4,
        hyperparameter_sampling="map",
        cv=3,
        random_state=0,
    ).fit(X, y)
    results = search.cv_results_
    np.testing.assert_array_equal(results["iter"], np.repeat([0, 1, 2], n_iter))
    for stage in (1, 2):
        previous = _stage_rows(results, stage - 1)
        current = _stage_rows(results, stage)
        handed = [results["params"][i] for i in current[:3]]
        assert handed == _top_k(results, previous, 3)
        # the hand-off is not proposed by the acquisition, the rest is
        assert np.isnan(results["acquisition_value"][current[:3]]).all()
        assert np.isfinite(results["acquisition_value"][current[3:]]).all()
        # the stage's own BO proposes new points, not hand-offs again
        for i in current[3:]:
            assert results["params"][i] not in handed
    assert search.n_stages_ == 3
    for stage in range(3):
        rows = _stage_rows(results, stage)
        assert search.stage_best_params_[stage] == _top_k(results, rows, 1)[0]


def test_each_stage_fits_on_its_fraction():
    X, y = make_regression(n_samples=99, n_features=2, random_state=0)
    stages = (0.1, 0.37, 1.0)
    search = MultiStageBayesSearchCV(
        RowCounter(),
        {"a": Real(0.0, 1.0)},
        stages=stages,
        n_iter=(3, 3, 2),
        top_k=2,
        n_initial_points=3,
        hyperparameter_sampling="map",
        cv=KFold(3),
        random_state=0,
    ).fit(X, y)
    results = search.cv_results_
    n_train = 66
    for stage, fraction in enumerate(stages):
        rows = _stage_rows(results, stage)
        assert (results["resource_fraction"][rows] == fraction).all()
        assert (results["n_resources"][rows] == round(fraction * n_train)).all()
        # what each fit really saw (every KFold(3) split trains on 66 rows)
        assert (results["mean_test_score"][rows] == round(fraction * n_train)).all()


def test_resuming_with_other_stages_is_refused(regression_data, tmp_path):
    # the stored stage-0 trials on 30 % of the rows would be read as the
    # new stage 0 on 20 %, and stage 1's as trials on all rows
    X, y = regression_data
    space = {"a": Real(0.0, 1.0)}

    def search(stages, n_iter):
        return MultiStageBayesSearchCV(
            RowCounter(),
            space,
            stages=stages,
            n_iter=n_iter,
            top_k=2,
            n_initial_points=3,
            hyperparameter_sampling="map",
            random_state=0,
            store=tmp_path / "s.db",
            run_name="r",
        )

    search((0.3, 0.6, 1.0), 3).fit(X, y)
    with pytest.raises(ValueError, match=r"\[14, 29, 48\] .*stages=\(0.2, 1.0\)"):
        search((0.2, 1.0), 5).fit(X, y)
    again = search((0.3, 0.6, 1.0), 4).fit(X, y)
    assert len(again.cv_results_["params"]) == 12


def test_best_index_is_a_full_data_row(regression_data):
    X, y = regression_data
    # subsets score higher than the full data, so the overall maximum is a
    # stage-0 row, which must not be chosen
    settings = dict(
        stages=(0.3, 1.0),
        n_iter=(6, 4),
        top_k=2,
        n_initial_points=4,
        hyperparameter_sampling="map",
        cv=3,
        random_state=0,
    )
    search = MultiStageBayesSearchCV(Quadratic(data_penalty=0.1), SPACE, **settings)
    search.fit(X, y)
    results = search.cv_results_
    scores = results["mean_test_score"]
    full = np.flatnonzero(results["resource_fraction"] == 1.0)
    assert results["resource_fraction"][np.argmax(scores)] < 1.0
    assert search.best_index_ in full
    assert search.best_index_ == full[np.argmax(scores[full])]
    assert search.best_score_ == scores[full].max()
    assert search.best_params_ == results["params"][search.best_index_]
    # a callable refit is used as is, as in scikit-learn
    search = MultiStageBayesSearchCV(
        Quadratic(data_penalty=0.1), SPACE, refit=lambda r: 1, **settings
    ).fit(X, y)
    assert search.best_index_ == 1
    assert search.cv_results_["resource_fraction"][1] == 0.3


def test_failures_are_recorded_and_rank_last():
    X, y = make_classification(n_samples=80, random_state=0)
    search = MultiStageBayesSearchCV(
        Flaky(),
        {"c": Real(0.0, 1.0)},
        stages=(0.5, 1.0),
        n_iter=(9, 6),
        top_k=3,
        n_initial_points=6,
        hyperparameter_sampling="map",
        cv=3,
        random_state=0,
    )
    with pytest.warns(FitFailedWarning, match=r"\d+ of 15 trials failed") as record:
        search.fit(X, y)
    assert len([w for w in record if issubclass(w.category, FitFailedWarning)]) == 1
    results = search.cv_results_
    c = np.array([p["c"] for p in results["params"]])
    failed = c > 0.66
    stage0 = _stage_rows(results, 0)
    # the Sobol design covers [0, 1]: about a third of it fails
    assert 1 <= failed[stage0[:6]].sum() <= 3
    assert np.isnan(results["mean_test_score"][failed]).all()
    assert np.isfinite(results["mean_test_score"][~failed]).all()
    handed = _stage_rows(results, 1)[:3]
    assert not failed[handed].any()
    assert search.best_params_["c"] <= 0.66
    assert search.cv_results_["resource_fraction"][search.best_index_] == 1.0


def test_failed_trials_are_handed_on_only_when_nothing_else_is_left():
    X, y = make_classification(n_samples=80, random_state=0)
    # c <= 0.3 succeeds: with top_k above the number of successes of stage
    # 0, failures fill the hand-off after every success
    search = MultiStageBayesSearchCV(
        Flaky(threshold=0.3),
        {"c": Real(0.0, 1.0)},
        stages=(0.5, 1.0),
        n_iter=(4, 4),
        top_k=4,
        n_initial_points=4,
        cv=3,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        search.fit(X, y)
    results = search.cv_results_
    stage0, stage1 = _stage_rows(results, 0), _stage_rows(results, 1)
    ok0 = np.isfinite(results["mean_test_score"][stage0])
    assert 0 < ok0.sum() < 4
    handed_ok = np.isfinite(results["mean_test_score"][stage1])
    # successes first, best first; then the failures in evaluation order
    n_ok = ok0.sum()
    assert handed_ok[:n_ok].all() and not handed_ok[n_ok:].any()
    assert [results["params"][i] for i in stage1] == _top_k(results, stage0, 4)


class FailsOnManyRows(RowCounter):
    """Fails to fit on more than ``max_rows`` rows."""

    def __init__(self, a=1.0, max_rows=30):
        self.a = a
        self.max_rows = max_rows

    def fit(self, X, y=None):
        if len(X) > self.max_rows:
            raise MemoryError("too many rows for this test")
        return super().fit(X, y)


def test_no_full_data_success_answers_from_a_stage_below_with_a_warning(
    regression_data,
):
    # every full-data trial fails: the answer is the best successful trial
    # of the stages below, said in a warning, never a failed full-data row
    X, y = regression_data
    search = MultiStageBayesSearchCV(
        FailsOnManyRows(),
        {"a": Real(1e-2, 1e2, prior="log-uniform")},
        stages=(0.5, 1.0),
        n_iter=(4, 2),
        top_k=2,
        n_initial_points=4,
        cv=3,
        refit=False,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        with pytest.warns(UserWarning, match="best_ is measured on 20 rows"):
            search.fit(X, y)
    results = search.cv_results_
    assert results["fit_failed"][results["resource_fraction"] == 1.0].all()
    assert not results["fit_failed"][search.best_index_]
    assert results["resource_fraction"][search.best_index_] == 0.5
    assert search.best_score_ == 20.0


def test_max_time_in_first_stage_still_gives_full_data_rows(regression_data):
    X, y = regression_data
    search = MultiStageBayesSearchCV(
        Quadratic(),
        SPACE,
        stages=(0.3, 1.0),
        n_iter=(500, 10),
        top_k=3,
        n_initial_points=3,
        hyperparameter_sampling="map",
        max_time=1.0,
        cv=2,
        random_state=0,
    ).fit(X, y)
    results = search.cv_results_
    stage0, stage1 = _stage_rows(results, 0), _stage_rows(results, 1)
    # how many first-stage trials fit in the second depends on the machine's
    # speed; the hand-off must not
    assert 1 <= len(stage0) < 500
    assert len(stage1) == min(3, len(stage0))
    assert (results["resource_fraction"][stage1] == 1.0).all()
    assert [results["params"][i] for i in stage1] == _top_k(
        results, stage0, len(stage1)
    )
    assert search.best_index_ in stage1
    assert search.stage_best_params_[1] is not None


def test_max_time_during_the_hand_off_finishes_the_hand_off(regression_data):
    X, y = regression_data
    # fits on the full data (30 rows per split) sleep, subsets do not: the
    # budget runs out during the first hand-off batch of the last stage
    search = MultiStageBayesSearchCV(
        Quadratic(full_fit_sleep=0.3, sleep_above=20),
        SPACE,
        stages=(0.3, 1.0),
        n_iter=(3, 8),
        top_k=3,
        n_initial_points=3,
        n_points=1,
        max_time=0.5,
        cv=KFold(2),
        random_state=0,
    ).fit(X, y)
    results = search.cv_results_
    stage0, stage1 = _stage_rows(results, 0), _stage_rows(results, 1)
    assert len(stage0) == 3
    assert len(stage1) == 3
    assert [results["params"][i] for i in stage1] == _top_k(results, stage0, 3)


BAD_INPUTS = [
    ({"stages": (0.5, 0.3, 1.0), "n_iter": 3}, "stages"),
    ({"stages": (0.5, 0.5, 1.0), "n_iter": 3}, "stages"),
    ({"stages": (0.0, 1.0)}, "stages"),
    ({"stages": (-0.2, 1.0)}, "stages"),
    ({"stages": (0.5, 1.5)}, "stages"),
    ({"stages": (0.3, 0.6)}, "stages"),
    ({"stages": ()}, "stages"),
    ({"stages": (np.nan, 1.0)}, "stages"),
    ({"stages": ("small", 1.0)}, "stages"),
    ({"stages": 1.0}, "stages"),
    ({"top_k": 0}, "top_k"),
    ({"top_k": 4, "n_iter": (10, 3)}, "top_k"),
    ({"top_k": 11, "n_iter": 10}, "top_k"),
    ({"stages": (0.3, 1.0), "n_iter": (5, 5, 5)}, "n_iter"),
    ({"stages": (0.3, 1.0), "n_iter": (5,)}, "n_iter"),
    ({"n_iter": (0, 5)}, "n_iter"),
    ({"n_iter": (5.5, 5)}, "n_iter"),
    ({"n_iter": 0}, "n_iter"),
    ({"n_initial_points": 0}, "n_initial_points"),
    ({"max_time": -1.0}, "max_time"),
    ({"acquisition": "ucb"}, "acquisition"),
    ({"hyperparameter_sampling": "hmc"}, "hyperparameter_sampling"),
    ({"n_points": 0}, "n_points"),
    ({"search_spaces": {"not_a_param": Real(0.1, 1.0)}}, "not_a_param"),
]


class NeverFit(RegressorMixin, BaseEstimator):
    def __init__(self, a=1.0):
        self.a = a

    def fit(self, X, y):
        raise AssertionError("fit must not be called on bad input")


@pytest.mark.parametrize("kwargs, name", BAD_INPUTS)
def test_bad_input_raises_before_any_fit(kwargs, name):
    X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    params = {"search_spaces": {"a": Real(0.1, 1.0)}, **kwargs}
    search = MultiStageBayesSearchCV(NeverFit(), **params)
    with pytest.raises(ValueError, match=name):
        search.fit(X, y)


def test_one_stage_ignores_top_k(regression_data):
    X, y = regression_data
    search = MultiStageBayesSearchCV(
        Quadratic(), SPACE, stages=[1.0], n_iter=2, top_k=3, cv=2, random_state=0
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 2


def test_exhausted_stage_hands_on_to_the_next():
    X, y = make_classification(n_samples=60, random_state=0)
    search = MultiStageBayesSearchCV(
        LogisticRegression(),
        {"C": [0.1, 1.0]},
        stages=(0.5, 1.0),
        n_iter=(3, 3),
        top_k=1,
        n_initial_points=2,
        hyperparameter_sampling="map",
        cv=2,
        random_state=0,
    )
    with pytest.warns(UserWarning, match="only 2 distinct configurations"):
        search.fit(X, y)
    results = search.cv_results_
    np.testing.assert_array_equal(results["iter"], [0, 0, 1, 1])
    stage0, stage1 = _stage_rows(results, 0), _stage_rows(results, 1)
    assert results["params"][stage1[0]] == _top_k(results, stage0, 1)[0]
    assert {p["C"] for p in results["params"][2:]} == {0.1, 1.0}


def test_no_time_for_any_trial_still_evaluates_on_full_data(
    regression_data, monkeypatch
):
    from skbayes_search import _loop

    # a grace period long enough for the first trials on a busy machine too
    # (on an idle one they take milliseconds)
    monkeypatch.setattr(_loop, "_MIN_GRACE", 30.0)
    X, y = regression_data
    search = MultiStageBayesSearchCV(
        Quadratic(),
        SPACE,
        stages=(0.3, 1.0),
        n_iter=(10, 5),
        top_k=2,
        max_time=1e-6,
        cv=2,
        random_state=0,
    ).fit(X, y)
    results = search.cv_results_
    # the base always runs the first batch; the hand-off still reaches all data
    np.testing.assert_array_equal(results["resource_fraction"], [0.3, 1.0])
    np.testing.assert_array_equal(results["iter"], [0, 1])
    assert results["params"][1] == results["params"][0]
    assert search.stage_best_params_[1] == search.best_params_


def test_warns_on_a_first_stage_of_too_few_rows():
    from sklearn.linear_model import LogisticRegression

    X = np.random.default_rng(0).normal(size=(40, 2))
    y = np.arange(40) % 2
    search = MultiStageBayesSearchCV(
        LogisticRegression(),
        {"C": Real(0.1, 1.0)},
        stages=(0.1, 1.0),
        n_iter=(2, 2),
        top_k=1,
        n_initial_points=2,
        cv=2,
        hyperparameter_sampling="map",
        random_state=0,
    )
    with pytest.warns(UserWarning, match=r"first stage.*on 2 of the 20.*fewer than 4"):
        search.fit(X, y)
    # enough rows per class: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        search.set_params(stages=(0.5, 1.0)).fit(X, y)


def test_n_iter_refuses_bools():
    search = MultiStageBayesSearchCV(Ridge(), {"alpha": Real(0.1, 1.0)}, n_iter=True)
    with pytest.raises(ValueError, match="n_iter"):
        search.fit(np.zeros((10, 2)), np.zeros(10))
