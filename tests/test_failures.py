"""Failed fits reach the user as scikit-learn's searches report them."""

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_regression
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils import estimator_checks

from skbayes_search import (
    BayesSearchCV,
    FabolasSearchCV,
    HalvingBayesSearchCV,
    MultiStageBayesSearchCV,
    Real,
    TradeoffBayesSearchCV,
    TransferBayesSearchCV,
)

# With the default error_score (nan) every fit of these checks fails; the
# search's error must carry the estimator's own message, as GridSearchCV's
# does, so scikit-learn's checks recognise it.
FIT_ERROR_CHECKS = [
    "check_classifiers_one_label",
    "check_estimators_nan_inf",
    "check_dtype_object",
    "check_estimators_empty_data_messages",
    "check_classifiers_regression_target",
]

SPACE = {"C": [0.1, 1.0]}
MAP = dict(hyperparameter_sampling="map")


def default_error_score_search(name, tmp_path):
    """A small search of each strategy with the default error_score."""
    est, common = LogisticRegression(), dict(cv=2, random_state=0)
    if name == "bayes":
        return BayesSearchCV(est, SPACE, n_iter=3, n_initial_points=2, **MAP, **common)
    if name == "multistage":
        return MultiStageBayesSearchCV(
            est,
            SPACE,
            stages=(0.5, 1.0),
            n_iter=(2, 2),
            top_k=1,
            n_initial_points=2,
            **MAP,
            **common,
        )
    if name == "fabolas":
        return FabolasSearchCV(
            est,
            SPACE,
            n_iter=3,
            n_initial_points=2,
            n_representers=5,
            n_hyper_samples=2,
            **common,
        )
    if name == "tradeoff":
        return TradeoffBayesSearchCV(
            est, SPACE, n_iter=3, n_initial_points=2, **MAP, **common
        )
    return TransferBayesSearchCV(
        est, SPACE, store=str(tmp_path / "runs.db"), n_iter=3, **common
    )


@pytest.mark.parametrize("check_name", FIT_ERROR_CHECKS)
@pytest.mark.parametrize(
    "name", ["bayes", "multistage", "fabolas", "tradeoff", "transfer"]
)
def test_fit_errors_reach_the_user(name, check_name, tmp_path):
    if (name, check_name) == ("tradeoff", "check_dtype_object"):
        # GridSearchCV passes this check through its full-data refit, which
        # meets the corrupted row; the trade-off refits on its selected
        # fraction of the rows, which may leave it out
        pytest.xfail("the trade-off refits on a fraction of the rows")
    search = default_error_score_search(name, tmp_path)
    getattr(estimator_checks, check_name)(type(search).__name__, search)


def test_all_failed_error_names_the_cause(tmp_path):
    X = np.random.default_rng(0).normal(size=(30, 2))
    search = default_error_score_search("bayes", tmp_path)
    with pytest.raises(
        ValueError,
        match=r"(?s)All the \d+ trials failed.*fits failed"
        r" with the following error.*class",
    ):
        search.fit(X, np.zeros(30))


class _FailsAboveTen(Ridge):
    """A ridge whose fit fails for ``alpha > 10``."""

    def fit(self, X, y, sample_weight=None):
        if self.alpha > 10:
            raise ValueError("alpha too large for this test")
        return super().fit(X, y, sample_weight)


@pytest.mark.parametrize(
    "cls",
    [
        BayesSearchCV,
        HalvingBayesSearchCV,
        FabolasSearchCV,
        MultiStageBayesSearchCV,
        TradeoffBayesSearchCV,
        TransferBayesSearchCV,
    ],
)
def test_a_failed_trial_is_never_the_answer(cls, tmp_path):
    # with error_score=0 a failure records 0, above every mean squared error
    # a successful fit scores: scikit-learn would rank it first
    X, y = make_regression(400, 4, noise=10.0, random_state=0)
    space = {"alpha": [0.01, 0.1, 1.0, 100.0, 1000.0]}
    kwargs = dict(scoring="neg_mean_squared_error", error_score=0, random_state=0)
    if cls is TransferBayesSearchCV:
        kwargs["store"] = str(tmp_path / "runs.db")
    if cls is MultiStageBayesSearchCV:
        kwargs.update(stages=(0.5, 1.0), n_iter=(5, 5), top_k=5)
    elif cls in (HalvingBayesSearchCV, FabolasSearchCV):
        # small first subsets, so that the subset search runs, not its
        # plain-BO fallback
        kwargs.update(n_iter=30, min_resources=10)
    else:
        kwargs["n_iter"] = 5
    search = cls(_FailsAboveTen(), space, **kwargs)
    with pytest.warns(FitFailedWarning):
        search.fit(X, y)
    res = search.cv_results_
    failed = np.array([p["alpha"] > 10 for p in res["params"]])
    assert failed.any() and not failed.all()
    np.testing.assert_array_equal(res["fit_failed"], failed)
    assert not failed[search.best_index_]
    assert search.best_score_ < 0
    ranks = np.asarray(res["rank_test_score"])
    assert ranks[failed].min() > ranks[~failed].max()
    # the recorded scores stay as error_score set them
    assert np.all(np.asarray(res["mean_test_score"])[failed] == 0)
    assert search.best_estimator_.alpha <= 10


def test_a_callable_refit_sees_failed_trials_as_nan():
    X, y = make_regression(200, 4, noise=10.0, random_state=0)
    seen = {}

    def refit(results):
        seen.update(results)
        return int(np.nanargmax(results["mean_test_score"]))

    search = BayesSearchCV(
        _FailsAboveTen(),
        {"alpha": [0.1, 1.0, 100.0]},
        n_iter=3,
        scoring="neg_mean_squared_error",
        error_score=0,
        refit=refit,
        random_state=0,
    )
    with pytest.warns(FitFailedWarning):
        search.fit(X, y)
    failed = np.asarray(search.cv_results_["fit_failed"])
    assert failed.sum() == 1
    assert np.isnan(seen["mean_test_score"][failed]).all()
    assert np.all(search.cv_results_["mean_test_score"][failed] == 0)
    assert search.best_params_["alpha"] <= 10


def _neg_mse_unless_large_alpha(estimator, X, y):
    if estimator.alpha > 10:
        raise ValueError("no score for alpha > 10 in this test")
    return -float(np.mean((estimator.predict(X) - y) ** 2))


@pytest.mark.parametrize("cls", [BayesSearchCV, HalvingBayesSearchCV])
def test_a_failed_scoring_scores_nan_not_error_score(cls):
    # the fit succeeds and the scorer raises: recorded as error_score (0,
    # above every mean squared error) it would look like the best success
    X, y = make_regression(400, 4, noise=10.0, random_state=0)
    kwargs = dict(n_iter=30, min_resources=10) if cls is HalvingBayesSearchCV else {}
    search = cls(
        Ridge(),
        {"alpha": [0.01, 0.1, 1.0, 100.0, 1000.0]},
        scoring=_neg_mse_unless_large_alpha,
        error_score=0,
        random_state=0,
        **{"n_iter": 5, **kwargs},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X, y)
    res = search.cv_results_
    unscored = np.array([p["alpha"] > 10 for p in res["params"]])
    assert unscored.any() and not unscored.all()
    assert np.isnan(np.asarray(res["mean_test_score"])[unscored]).all()
    assert not np.asarray(res["fit_failed"]).any()
    assert search.best_params_["alpha"] <= 10
    assert search.best_score_ < 0


def _rare_categories(n=1500, seed=0):
    """A category column whose rare levels small subsets miss: one-hot
    encoding fitted on such a subset cannot transform the validation rows."""
    import pandas as pd

    rng = np.random.RandomState(seed)
    levels = [f"c{i}" for i in range(30)]
    p = np.r_[np.full(20, 0.045), np.full(10, 0.01)]
    cat = rng.choice(levels, size=n, p=p)
    num = rng.randn(n, 2)
    y = (num[:, 0] + (cat < "c2") + 0.5 * rng.randn(n) > 0.5).astype(int)
    return pd.DataFrame({"cat": cat, "a": num[:, 0], "b": num[:, 1]}), y


@pytest.mark.parametrize(
    "cls, n_iter", [(HalvingBayesSearchCV, 25), (FabolasSearchCV, 35)]
)
def test_subsets_too_small_to_score_are_left_for_larger_ones(cls, n_iter):
    # every fit on the smallest subsets scores nan (a category of the
    # validation rows unseen in training); the search must move up to
    # subsets that can score, and answer from a measured setting
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    X, y = _rare_categories()
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["cat"]), remainder=StandardScaler()),
        LogisticRegression(),
    )
    space = {"logisticregression__C": Real(1e-3, 1e2, prior="log-uniform")}
    search = cls(pipe, space, n_iter=n_iter, cv=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.isnan(scores).sum() >= 5  # the small subsets did fail
    assert np.isfinite(search.best_score_)
    on_all_rows = search.cv_results_["resource_fraction"] == 1.0
    assert np.isfinite(scores[on_all_rows]).any()


class _NeedsFivePerClass(LogisticRegression):
    """Fails, as an inner 5-fold cross-validation does, on fewer than five
    rows of a class: on small subsets only."""

    def fit(self, X, y, sample_weight=None):
        if np.bincount(y).min() < 5:
            raise ValueError("fewer than 5 rows of a class")
        return super().fit(X, y, sample_weight)


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (HalvingBayesSearchCV, dict(n_iter=30)),
        (FabolasSearchCV, dict(n_iter=35)),
        (MultiStageBayesSearchCV, dict(stages=(0.1, 1.0), n_iter=(6, 3), **MAP)),
        (TradeoffBayesSearchCV, dict(n_iter=12, fractions=(0.05, 0.1, 1.0), **MAP)),
    ],
)
def test_fits_failing_on_small_subsets_do_not_stop_the_search(cls, kwargs):
    from sklearn.datasets import make_classification

    X, y = make_classification(
        3000,
        6,
        n_classes=3,
        n_informative=4,
        weights=[0.98, 0.01, 0.01],
        random_state=0,
    )
    search = cls(
        _NeedsFivePerClass(),
        {"C": Real(1e-2, 1e2, prior="log-uniform")},
        cv=3,
        random_state=0,
        **kwargs,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    failed = search.cv_results_["fit_failed"]
    assert failed.sum() >= 1  # the small subsets did fail
    assert not failed[search.best_index_]
    assert np.isfinite(search.best_score_)


@pytest.mark.parametrize("cls", [HalvingBayesSearchCV, FabolasSearchCV])
def test_a_model_failing_everywhere_still_stops_early(cls):
    from sklearn.datasets import make_classification

    X, y = make_classification(600, 4, random_state=0)
    search = cls(
        LogisticRegression(solver="no-such-solver"),
        {"C": Real(1e-2, 1e2, prior="log-uniform")},
        n_iter=200,
        cv=2,
        random_state=0,
    )
    with pytest.raises(ValueError, match=r"All the (\d+) trials failed") as info:
        search.fit(X, y)
    n = int(info.value.args[0].split()[2])
    assert n < 60  # five trials on all rows after the subsets, not the budget


class _NeedsManyRows(LogisticRegression):
    def fit(self, X, y, sample_weight=None):
        if len(X) < 1500:
            raise ValueError("too few rows")
        return super().fit(X, y, sample_weight)


@pytest.mark.parametrize("cls", [HalvingBayesSearchCV, FabolasSearchCV])
def test_a_budget_spent_failing_on_subsets_ends_with_a_trial_on_all_rows(cls):
    from sklearn.datasets import make_classification

    X, y = make_classification(3000, 6, random_state=0)
    search = cls(
        _NeedsManyRows(),
        {"C": Real(1e-2, 1e2, prior="log-uniform")},
        n_iter=8,
        cv=3,
        random_state=0,
    )
    with pytest.warns(FitFailedWarning, match=r"7 of 8 trials failed \(7 of them on"):
        search.fit(X, y)
    results = search.cv_results_
    assert results["fit_failed"].sum() == len(results["params"]) - 1
    assert results["resource_fraction"][search.best_index_] == 1.0
    assert np.isfinite(search.best_score_)


def test_the_warning_tells_trials_stopped_at_a_deadline_from_failed_fits():
    # two trials on subsets stopped by trial_timeout and one whose fit raised:
    # only the one that raised is put down to its subset's size
    from skbayes_search._failures import warn_about_failures
    from tests.helpers import one_parameter_record, search_context

    def record(fraction, errors):
        finished = one_parameter_record(0.5, 10, fraction, np.nan, {})
        return dataclasses.replace(finished, failed=True, fit_errors=errors)

    late = ("TimeoutError: The trial ran past trial_timeout=1.0s and was stopped.",)
    ctx = search_context({"C": Real(0.1, 1.0)})
    ctx.trials += [
        record(0.1, late * 2),
        record(0.3, late * 2),
        record(0.1, ("Traceback (most recent call last):\nValueError: too few",)),
    ]
    outs = [{"fit_error": e} for t in ctx.trials for e in t.fit_errors]
    with pytest.warns(FitFailedWarning) as caught:
        warn_about_failures(ctx, outs, np.nan)
    message = str(caught[0].message).split("\n")[0]
    assert message.startswith(
        "3 of 3 trials failed (2 stopped at trial_timeout or max_time; 1 of the "
        "others on subsets of the rows, where a size too small"
    )
