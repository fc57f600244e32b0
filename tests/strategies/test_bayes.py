"""BayesSearchCV as a drop-in for scikit-learn's search estimators."""

import pickle
import warnings

import numpy as np
import pytest
import sklearn
from scipy.stats import loguniform, randint, uniform
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.decomposition import PCA
from sklearn.exceptions import FitFailedWarning
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import accuracy_score, make_scorer
from sklearn.model_selection import KFold, RandomizedSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from skbayes_search import BayesSearchCV, Categorical, Integer, Real
from skbayes_search._trial import TrialRecord
from skbayes_search.strategies.bayes import BayesProposer
from tests.helpers import search_context

EXTRA_COLUMNS = {
    "n_resources",
    "resource_fraction",
    "iter",
    "elapsed_time",
    "fit_failed",
    "acquisition_value",
}

# The checks scikit-learn itself marks as expected failures for its searches.
EXPECTED_FAILED_CHECKS = {
    "check_supervised_y_2d": "DataConversionWarning not caught",
    "check_requires_y_none": "Doesn't fail gracefully",
}


def _check_instances():
    common = dict(cv=2, error_score="raise", n_iter=3, n_initial_points=2)
    # the pipelines use MAP hyperparameters to keep the suite fast
    fast = dict(common, hyperparameter_sampling="map")
    return [
        BayesSearchCV(Ridge(), {"alpha": Real(0.1, 1.0)}, random_state=0, **common),
        BayesSearchCV(
            LogisticRegression(), {"C": [0.1, 1.0]}, random_state=0, **common
        ),
        BayesSearchCV(
            Pipeline([("pca", PCA()), ("ridge", Ridge())]),
            {"ridge__alpha": Real(0.1, 1.0, prior="log-uniform")},
            random_state=0,
            **fast,
        ),
        BayesSearchCV(
            Pipeline([("pca", PCA()), ("logisticregression", LogisticRegression())]),
            {"logisticregression__C": Real(0.1, 1.0)},
            random_state=0,
            **fast,
        ),
    ]


@parametrize_with_checks(
    _check_instances(), expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


class Quadratic(RegressorMixin, BaseEstimator):
    """A cheap objective: the score is a known function of the parameters."""

    def __init__(self, a=0.0, b=0.0):
        self.a = a
        self.b = b

    def fit(self, X, y=None):
        self.n_fit_rows_ = len(X)
        return self

    def score(self, X, y=None):
        return -((np.log10(self.a) - 0.3) ** 2) - 2 * (self.b - 0.7) ** 2


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
        return float(np.mean(y == self.classes_[0])) + self.c / 10


QUADRATIC_SPACE = {
    "a": Real(1e-2, 1e2, prior="log-uniform"),
    "b": Real(0.0, 1.0),
}


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def test_param_grid_and_distributions_work_unchanged(iris):
    X, y = iris
    grid = {"C": [0.1, 1.0, 10.0], "kernel": ["linear", "rbf"]}
    search = BayesSearchCV(SVC(), grid, n_iter=4, cv=3, random_state=0).fit(X, y)
    for params in search.cv_results_["params"]:
        assert params["C"] in grid["C"] and params["kernel"] in grid["kernel"]
    dists = {
        "C": loguniform(1e-2, 1e2),
        "gamma": uniform(0.01, 1),
        "degree": randint(1, 4),
    }
    search = BayesSearchCV(
        SVC(), dists, n_iter=6, n_initial_points=3, cv=3, random_state=0
    )
    search.fit(X, y)
    for params in search.cv_results_["params"]:
        assert 1e-2 <= params["C"] <= 1e2
        assert 0.01 <= params["gamma"] <= 1.01
        assert params["degree"] in (1, 2, 3)
        assert isinstance(params["degree"], (int, np.integer))


def test_cv_results_match_randomized_search(iris):
    X, y = iris
    space = {"C": loguniform(1e-2, 1e2)}
    ours = BayesSearchCV(
        LogisticRegression(),
        space,
        n_iter=5,
        n_initial_points=3,
        cv=3,
        return_train_score=True,
        random_state=0,
    ).fit(X, y)
    theirs = RandomizedSearchCV(
        LogisticRegression(),
        space,
        n_iter=5,
        cv=3,
        return_train_score=True,
        random_state=0,
    ).fit(X, y)
    assert set(ours.cv_results_) == set(theirs.cv_results_) | EXTRA_COLUMNS
    for key, value in theirs.cv_results_.items():
        ours_value = ours.cv_results_[key]
        assert type(ours_value) is type(value), key
        if isinstance(value, np.ndarray):
            assert ours_value.dtype.kind == value.dtype.kind, key
            assert ours_value.shape == value.shape, key
    assert ours.cv_results_["n_resources"].dtype.kind == "i"
    np.testing.assert_array_equal(ours.cv_results_["resource_fraction"], 1.0)
    assert np.all(np.diff(ours.cv_results_["elapsed_time"]) >= 0)
    assert ours.n_splits_ == 3
    assert ours.best_index_ == np.argmax(ours.cv_results_["mean_test_score"])
    assert ours.best_score_ == ours.cv_results_["mean_test_score"][ours.best_index_]
    np.testing.assert_array_equal(ours.classes_, [0, 1, 2])
    assert ours.n_features_in_ == 4
    assert ours.refit_time_ > 0


def test_pipeline_with_nested_names():
    X, y = make_classification(n_samples=120, random_state=0)
    pipe = make_pipeline(StandardScaler(), PCA(), LogisticRegression())
    space = {
        "pca__n_components": Integer(2, 10),
        "logisticregression__C": Real(1e-2, 1e2, prior="log-uniform"),
    }
    search = BayesSearchCV(
        pipe, space, n_iter=6, n_initial_points=3, cv=3, random_state=0
    )
    search.fit(X, y)
    best = search.best_estimator_
    assert (
        best.named_steps["pca"].n_components == search.best_params_["pca__n_components"]
    )
    assert search.predict(X).shape == (120,)


def test_multimetric_with_callable_refit(iris):
    X, y = iris

    def pick_lowest_c(results):
        return int(np.argmin(results["param_C"]))

    search = BayesSearchCV(
        SVC(),
        {"C": Real(1e-2, 1e2, prior="log-uniform")},
        scoring={"acc": "accuracy", "bacc": "balanced_accuracy"},
        refit=pick_lowest_c,
        n_iter=5,
        n_initial_points=3,
        cv=3,
        random_state=0,
    ).fit(X, y)
    assert search.multimetric_
    assert "mean_test_acc" in search.cv_results_
    assert "rank_test_bacc" in search.cv_results_
    assert search.best_index_ == pick_lowest_c(search.cv_results_)
    assert not hasattr(search, "best_score_")
    assert set(search.scorer_) == {"acc", "bacc"}


def test_multimetric_named_refit_and_refit_false(iris):
    X, y = iris
    scoring = {"acc": "accuracy", "nll": "neg_log_loss"}
    search = BayesSearchCV(
        LogisticRegression(),
        {"C": Real(1e-3, 1e2, prior="log-uniform")},
        scoring=scoring,
        refit="nll",
        n_iter=6,
        n_initial_points=3,
        cv=3,
        random_state=0,
    ).fit(X, y)
    assert search.best_score_ == search.cv_results_["mean_test_nll"].max()
    search = BayesSearchCV(
        LogisticRegression(),
        {"C": Real(1e-3, 1e2, prior="log-uniform")},
        scoring=scoring,
        refit=False,
        n_iter=3,
        n_initial_points=2,
        cv=3,
        random_state=0,
    ).fit(X, y)
    assert not hasattr(search, "best_estimator_")
    assert not hasattr(search, "best_params_")


def test_failing_fits_are_recorded_not_fatal():
    X, y = make_classification(n_samples=60, random_state=0)
    search = BayesSearchCV(
        Flaky(),
        {"c": Real(0.0, 1.0)},
        n_iter=12,
        n_initial_points=4,
        cv=3,
        random_state=0,
    )
    with pytest.warns(FitFailedWarning, match=r"\d+ of 12 trials failed") as record:
        search.fit(X, y)
    assert len([w for w in record if issubclass(w.category, FitFailedWarning)]) == 1
    c = search.cv_results_["param_c"].data.astype(float)
    failed = c > 0.66
    assert failed.any() and (~failed).any()
    assert np.all(np.isnan(search.cv_results_["mean_test_score"][failed]))
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"][~failed]))
    assert len(c) == 12
    assert search.best_params_["c"] <= 0.66


def test_all_failures_raise(iris):
    X, y = iris
    search = BayesSearchCV(Flaky(threshold=-1), {"c": Real(0.0, 1.0)}, n_iter=8, cv=2)
    with pytest.raises(ValueError, match="All the 5 trials failed"):
        search.fit(X, y)


def test_error_score_raise_propagates(iris):
    X, y = iris
    search = BayesSearchCV(
        Flaky(threshold=-1), {"c": Real(0.0, 1.0)}, n_iter=3, cv=2, error_score="raise"
    )
    with pytest.raises(ValueError, match="c too large"):
        search.fit(X, y)


class WeightRecorder(ClassifierMixin, BaseEstimator):
    """Records the sample weights its fit saw."""

    def __init__(self, c=1.0):
        self.c = c

    def fit(self, X, y, sample_weight=None):
        self.classes_ = np.unique(y)
        self.weight_sum_ = (
            None if sample_weight is None else float(np.sum(sample_weight))
        )
        self.n_rows_ = len(X)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def test_metadata_routing_with_sample_weight(iris):
    X, y = iris
    weights = np.arange(1, len(y) + 1, dtype=float)
    with sklearn.config_context(enable_metadata_routing=True):
        est = WeightRecorder().set_fit_request(sample_weight=True)
        scorer = make_scorer(accuracy_score).set_score_request(sample_weight=True)
        search = BayesSearchCV(
            est,
            {"c": Real(0.1, 1.0)},
            scoring=scorer,
            n_iter=3,
            n_initial_points=2,
            cv=3,
            random_state=0,
        )
        search.fit(X, y, sample_weight=weights)
    assert search.best_estimator_.weight_sum_ == pytest.approx(weights.sum())
    # without routing, sample_weight is forwarded to fit as in scikit-learn
    search = BayesSearchCV(
        WeightRecorder(), {"c": Real(0.1, 1.0)}, n_iter=2, n_initial_points=2, cv=3
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y, sample_weight=weights)
    assert search.best_estimator_.weight_sum_ == pytest.approx(weights.sum())


def test_clone_and_pickle_round_trip(iris):
    X, y = iris
    search = BayesSearchCV(
        SVC(),
        {"C": Real(1e-2, 1e2, prior="log-uniform")},
        n_iter=4,
        cv=3,
        random_state=0,
    )
    cloned = clone(search)
    assert cloned.get_params()["n_iter"] == 4
    pickle.loads(pickle.dumps(search))
    search.fit(X, y)
    restored = pickle.loads(pickle.dumps(search))
    np.testing.assert_array_equal(restored.predict(X), search.predict(X))
    assert restored.best_params_ == search.best_params_


def test_same_params_for_n_jobs_1_and_2_when_synchronous():
    X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    results = []
    for n_jobs in (1, 2):
        search = BayesSearchCV(
            Quadratic(),
            QUADRATIC_SPACE,
            n_iter=8,
            n_initial_points=3,
            cv=3,
            n_jobs=n_jobs,
            asynchronous=False,
            random_state=42,
        ).fit(X, y)
        results.append(search.cv_results_["params"])
    assert results[0] == results[1]


def test_max_time_stops_the_search():
    X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    search = BayesSearchCV(
        Quadratic(), QUADRATIC_SPACE, n_iter=500, max_time=3.0, cv=2, random_state=0
    ).fit(X, y)
    # 3 s rather than 1 s: the first trial must finish within max_time plus
    # its grace even on a loaded machine; 500 GP proposals take minutes
    n = len(search.cv_results_["params"])
    assert 1 <= n < 500


def test_a_result_exists_even_when_max_time_is_spent_at_once():
    X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    search = BayesSearchCV(
        Quadratic(), QUADRATIC_SPACE, n_iter=5, max_time=1e-9, cv=2, random_state=0
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 1
    assert search.best_index_ == 0


def test_batch_proposals_are_distinct():
    X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    search = BayesSearchCV(
        Quadratic(),
        QUADRATIC_SPACE,
        n_iter=14,
        n_initial_points=4,
        n_points=5,
        cv=2,
        random_state=0,
    ).fit(X, y)
    iters = search.cv_results_["iter"]
    params = search.cv_results_["params"]
    for it in np.unique(iters[4:]):
        batch = [tuple(sorted(params[i].items())) for i in np.flatnonzero(iters == it)]
        assert len(set(batch)) == len(batch)
    assert len({tuple(sorted(p.items())) for p in params}) == len(params)


def test_bayes_beats_random_search_on_a_cheap_objective():
    X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    ours, random = [], []
    for seed in range(5):
        bayes = BayesSearchCV(
            Quadratic(),
            QUADRATIC_SPACE,
            n_iter=15,
            n_initial_points=5,
            cv=KFold(2),
            random_state=seed,
        ).fit(X, y)
        rand = RandomizedSearchCV(
            Quadratic(),
            {"a": loguniform(1e-2, 1e2), "b": uniform(0, 1)},
            n_iter=15,
            cv=KFold(2),
            random_state=seed,
        ).fit(X, y)
        ours.append(bayes.best_score_)
        random.append(rand.best_score_)
    # the optimum is 0; BO gets far closer than random search at equal n_iter
    assert np.median(ours) > np.median(random)
    assert np.median(ours) > -0.01


BAD_INPUTS = [
    ({"search_spaces": []}, "search_spaces"),
    ({"search_spaces": {"alpha": Real(1.0, 0.1)}}, "alpha"),
    ({"search_spaces": {"alpha": Real(-1.0, 1.0, prior="log-uniform")}}, "alpha"),
    ({"search_spaces": {"alpha": Real(0.1, 1.0, prior="cubic")}}, "alpha"),
    ({"search_spaces": {"not_a_param": Real(0.1, 1.0)}}, "not_a_param"),
    ({"n_iter": 0}, "n_iter"),
    ({"max_time": -1.0}, "max_time"),
    ({"acquisition": "ucb"}, "acquisition"),
    ({"hyperparameter_sampling": "hmc"}, "hyperparameter_sampling"),
    ({"n_points": 0}, "n_points"),
]


class NeverFit(RegressorMixin, BaseEstimator):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y):
        raise AssertionError("fit must not be called on bad input")


@pytest.mark.parametrize("kwargs, name", BAD_INPUTS)
def test_bad_input_raises_before_any_fit(kwargs, name):
    X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    params = {"search_spaces": {"alpha": Real(0.1, 1.0)}, **kwargs}
    search = BayesSearchCV(NeverFit(), **params)
    with pytest.raises((ValueError, TypeError), match=name):
        search.fit(X, y)


def test_categorical_estimators_and_conditional_spaces(iris):
    X, y = iris
    space = [
        {"kernel": Categorical(["linear"]), "C": Real(1e-2, 1e2, prior="log-uniform")},
        {
            "kernel": ["rbf"],
            "C": Real(1e-2, 1e2, prior="log-uniform"),
            "gamma": Real(1e-3, 1.0, prior="log-uniform"),
        },
    ]
    search = BayesSearchCV(
        SVC(), space, n_iter=8, n_initial_points=4, cv=3, random_state=0
    )
    search.fit(X, y)
    for params in search.cv_results_["params"]:
        if params["kernel"] == "linear":
            assert set(params) == {"kernel", "C"}
        else:
            assert set(params) == {"kernel", "C", "gamma"}


def test_ei_per_second_pi_lcb_and_map_run(iris):
    X, y = iris
    for acquisition in ("ei_per_second", "pi", "lcb"):
        search = BayesSearchCV(
            LogisticRegression(),
            {"C": Real(1e-3, 1e2, prior="log-uniform")},
            acquisition=acquisition,
            hyperparameter_sampling="map",
            n_iter=6,
            n_initial_points=3,
            cv=2,
            # accuracies on iris tie, and a plateau is explored at random;
            # log loss does not
            scoring="neg_log_loss",
            random_state=0,
        ).fit(X, y)
        assert np.isfinite(search.cv_results_["acquisition_value"][3:]).all()


def test_empty_space_evaluates_the_defaults_once():
    from sklearn.linear_model import LogisticRegression

    X = np.random.default_rng(0).normal(size=(30, 2))
    y = np.arange(30) % 2
    with pytest.warns(UserWarning, match="only 1 distinct"):
        search = BayesSearchCV(LogisticRegression(), {}, n_iter=3, cv=2).fit(X, y)
    assert search.cv_results_["params"] == [{}]
    assert search.best_params_ == {}


def test_swapped_pipeline_steps_are_searched():
    from sklearn.decomposition import PCA, TruncatedSVD
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    X = np.random.default_rng(0).normal(size=(40, 4))
    y = np.arange(40) % 2
    pipe = Pipeline([("reduce_dim", PCA()), ("clf", LogisticRegression())])
    grid = [
        {"clf": [DecisionTreeClassifier(random_state=0)], "clf__max_depth": [1, 2]},
        {"reduce_dim": [PCA(), TruncatedSVD()], "reduce_dim__n_components": [2, 3]},
    ]
    search = BayesSearchCV(
        pipe,
        grid,
        n_iter=6,
        n_initial_points=4,
        cv=2,
        error_score="raise",
        hyperparameter_sampling="map",
        random_state=0,
    ).fit(X, y)
    names = {frozenset(p) for p in search.cv_results_["params"]}
    assert frozenset({"clf", "clf__max_depth"}) in names
    # a name valid under no candidate of its sub-space is still refused
    with pytest.raises(ValueError, match=r"invalid parameter\(s\) \['clf__kernel'\]"):
        BayesSearchCV(
            pipe,
            {"clf": [DecisionTreeClassifier()], "clf__kernel": [1]},
            n_iter=2,
            cv=2,
        ).fit(X, y)


def test_lcb_kappa_trades_exploitation_for_exploration():
    X = np.zeros((40, 1))

    def proposals(kappa):
        search = BayesSearchCV(
            Quadratic(),
            QUADRATIC_SPACE,
            acquisition="lcb",
            kappa=kappa,
            hyperparameter_sampling="map",
            n_iter=14,
            n_initial_points=6,
            cv=2,
            random_state=0,
        ).fit(X)
        U = search_unit(search)
        # distance of the last proposals to the points evaluated before them
        return np.array([np.min(np.abs(U[:i] - U[i]).max(1)) for i in range(10, 14)])

    # kappa=0 refines around the predicted minimum; a large kappa keeps
    # sampling where the model is unsure (medians 0.02 and 0.12 measured)
    greedy, curious = proposals(0.0), proposals(20.0)
    assert np.median(curious) > 2 * np.median(greedy)


def search_unit(search):
    from skbayes_search.space import SearchSpace

    space = SearchSpace(QUADRATIC_SPACE)
    return space.to_unit(search.cv_results_["params"])


@pytest.mark.parametrize("acquisition", ["ei", "ei_per_second"])
def test_a_proposer_past_mcmc_until_uses_a_map_gp(acquisition):
    # sampled hyperparameters while observations are few, a MAP estimate
    # once they pass mcmc_until (its proposals cost a tenth); with
    # ei_per_second the fit-time GP too, which costs a proposal as much
    ctx = search_context({"a": Real(0.0, 1.0)}, n_train=100)
    proposer = BayesProposer(
        acquisition=acquisition,
        hyperparameter_sampling="mcmc",
        n_initial_points=2,
        seed=0,
        mcmc_until=4,
    )
    for a in (0.1, 0.9, 0.5, 0.7):
        _observe(ctx, {"a": a}, -((a - 0.3) ** 2))
        ctx.trials[-1].cost = 1.0 + 4.0 * a
    proposer.ask(ctx, ctx.trials, 1, fraction=1.0, iteration=0)
    assert proposer._map_surrogates == {}
    _observe(ctx, {"a": 0.2}, -((0.2 - 0.3) ** 2))
    ctx.trials[-1].cost = 1.8
    (trial,) = proposer.ask(ctx, ctx.trials, 1, fraction=1.0, iteration=1)
    gps = proposer._map_surrogates
    assert sorted(gps) == (["loss"] if acquisition == "ei" else ["cost", "loss"])
    assert all(gp.hyperparameter_sampling == "map" for gp in gps.values())
    assert len(gps["loss"].X_) == 5
    if acquisition == "ei_per_second":
        # the cost GP models the log fit times, not the losses
        np.testing.assert_allclose(
            np.sort(gps["cost"].y_), np.sort(np.log([1.4, 4.6, 3.0, 3.8, 1.8]))
        )
    assert 0.0 <= trial.params["a"] <= 1.0


@pytest.mark.parametrize("acquisition", ["ei", "ei_per_second"])
def test_a_proposer_past_max_observations_fits_its_gps_on_a_subset(acquisition):
    # a GP of the best half and a spread of the rest, its cost GP on the same
    # trials; what was evaluated is still never proposed again
    ctx = search_context({"a": Real(0.0, 1.0), "b": Real(0.0, 1.0)}, n_train=100)
    proposer = BayesProposer(
        acquisition=acquisition,
        hyperparameter_sampling="map",
        n_initial_points=2,
        seed=0,
        max_observations=10,
    )
    rng = np.random.default_rng(0)
    for a, b in rng.random((30, 2)):
        _observe(ctx, {"a": a, "b": b}, -((a - 0.3) ** 2) - (b - 0.6) ** 2)
        ctx.trials[-1].cost = 1.0 + a
    trials = proposer.ask(ctx, ctx.trials, 3, fraction=1.0, iteration=0)
    gp = proposer.surrogate
    assert gp.X_.shape == (10, 2)
    losses = ctx.losses(ctx.trials)
    # the five best trials are among the GP's observations
    np.testing.assert_allclose(np.sort(gp.y_)[:5], np.sort(losses)[:5])
    if acquisition == "ei_per_second":
        a_kept = np.sort(proposer.cost_surrogate.X_[:, 0])
        np.testing.assert_allclose(a_kept, np.sort(gp.X_[:, 0]))
    U = ctx.space.to_unit([t.params for t in trials])
    evaluated = ctx.X(ctx.trials)
    assert np.min(np.abs(U[:, None, :] - evaluated[None]).max(axis=2)) > 1e-9
    # at or under the cap, every trial
    proposer.max_observations = 30
    proposer.ask(ctx, ctx.trials, 1, fraction=1.0, iteration=1)
    assert proposer.surrogate.X_.shape == (30, 2)


def _observe(ctx, params, score):
    ctx.trials.append(
        TrialRecord(
            params=params,
            x=ctx.space.to_unit([params])[0],
            fraction=1.0,
            n_resources=100,
            score=float(score),
            cost=1.0,
            fit_time=1.0,
            failed=False,
            iter=0,
            elapsed_time=1.0,
        )
    )


def _map_proposer(n_initial_points, explore_ties):
    return BayesProposer(
        acquisition="ei",
        hyperparameter_sampling="map",
        n_initial_points=n_initial_points,
        seed=0,
        explore_ties=explore_ties,
    )


@pytest.mark.parametrize(
    "scores, by_gp",
    [
        ([0.5, 0.5, 0.5, 0.5, 0.4], False),  # most tie at the best: a plateau
        ([0.5, 0.5, 0.4, 0.3], True),  # half tie: scores to rank by
        ([0.7, 0.5, 0.5, 0.5, 0.5], True),  # one above the plateau
    ],
)
def test_the_gp_proposes_once_scores_rise_above_a_plateau(scores, by_gp):
    ctx = search_context({"a": Real(0.0, 1.0), "b": Real(0.0, 1.0)}, n_train=100)
    for i, s in enumerate(scores):
        _observe(ctx, {"a": 0.1 + 0.2 * i, "b": 0.9 - 0.15 * i}, s)

    def proposed(explore_ties):
        proposer = _map_proposer(2, explore_ties)
        (trial,) = proposer.ask(ctx, ctx.trials, 1, fraction=1.0, iteration=0)
        return "acquisition_value" in trial.extras

    assert proposed(True) is by_gp
    assert proposed(False) is True


def test_a_plateau_is_explored_inside_the_space_not_at_its_corners():
    # every setting ties (say, all predict the majority class) but a region
    # inside the space; a GP of tied scores sends trials to the bounds
    def score(p):
        d = np.hypot(p["a"] - 0.6, p["b"] - 0.45)
        return 0.5 + max(0.0, 0.1 - d)

    def on_bound(explore_ties):
        ctx = search_context({"a": Real(0.0, 1.0), "b": Real(0.0, 1.0)}, n_train=100)
        proposer = _map_proposer(3, explore_ties)
        edge = 0
        for it in range(14):
            (trial,) = proposer.ask(ctx, ctx.trials, 1, fraction=1.0, iteration=it)
            x = ctx.space.to_unit([trial.params])[0]
            edge += it >= 3 and bool(np.any((x < 0.02) | (x > 0.98)))
            _observe(ctx, trial.params, score(trial.params))
        return edge

    # of 11 GP-time proposals: 0 and 11 measured (random points fall that
    # close to a bound about 8 % of the time)
    assert on_bound(True) <= 4
    assert on_bound(False) >= 8
