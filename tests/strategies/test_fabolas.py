"""FabolasSearchCV: FABOLAS (Klein et al. 2017) as a scikit-learn search."""

import time
import warnings

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skbayes_search._cost_model import cost_curve, slow_cost
from skbayes_search._fidelity import MIN_PAIRS
from skbayes_search._trial import TrialRecord
from skbayes_search.gp.fabolas_kernels import FractionAxis
from skbayes_search.space import Real, SearchSpace
from skbayes_search.strategies._fabolas_cost import CostModel
from skbayes_search.strategies._fabolas_trust import SubsetTrust
from skbayes_search.strategies.fabolas import FabolasSearchCV
from tests.helpers import one_parameter_record, search_context

# The checks scikit-learn itself marks as expected failures for its searches.
EXPECTED_FAILED_CHECKS = {
    "check_supervised_y_2d": "DataConversionWarning not caught",
    "check_requires_y_none": "Doesn't fail gracefully",
}

SMALL = dict(n_representers=5, n_hyper_samples=2, cv=2, random_state=0)


def _check_instances():
    # min_resources=2 keeps the fraction axis on the checks' small data (the
    # plain-BO fallback has its own test below); n_iter=3 with two initial
    # points fits the models once, to pick the incumbent for the final
    # full-data evaluation
    return [
        FabolasSearchCV(
            Pipeline([("scale", StandardScaler()), ("ridge", Ridge())]),
            {"ridge__alpha": Real(0.1, 1.0, prior="log-uniform")},
            n_iter=3,
            n_initial_points=2,
            min_resources=2,
            error_score="raise",
            **SMALL,
        ),
    ]


@parametrize_with_checks(
    _check_instances(), expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="FabolasSearchCV: ")
        check(estimator)


# ----------------------------------------------------------------------
# a synthetic problem with known f(x, s) and a cost that grows with s
# ----------------------------------------------------------------------
N_ROWS = 2000  # two folds of 1000 training rows
N_TRAIN = N_ROWS // 2
MIN_ROWS = 10


def true_error(a, b):
    """Full-data validation error of configuration (a, b); minimum 0.05."""
    return 0.05 + 0.4 * ((a - 0.3) ** 2 + (b - 0.6) ** 2)


class Synthetic(ClassifierMixin, BaseEstimator):
    """Error shrinks with the log of the subset size; fit time grows with it."""

    def __init__(self, a=0.5, b=0.5, delay=0.0):
        self.a = a
        self.b = b
        self.delay = delay

    def fit(self, X, y):
        self.rows_ = len(X)
        self.classes_ = np.unique(y)
        time.sleep(self.delay * self.rows_ / N_TRAIN)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    def score(self, X, y):
        s = np.log(self.rows_ / MIN_ROWS) / np.log(N_TRAIN / MIN_ROWS)
        return 1.0 - true_error(self.a, self.b) * (1.0 + 3.0 * (1.0 - s) ** 2)


@pytest.fixture(scope="module")
def data():
    X = np.random.default_rng(0).normal(size=(N_ROWS, 2))
    y = np.arange(N_ROWS) % 2
    return X, y


SPACE = {"a": Real(0.0, 1.0), "b": Real(0.0, 1.0)}


def test_synthetic_small_fractions_early_and_incumbent_tracks_truth(data):
    X, y = data
    n_initial = 5
    # costs as rows times folds and synchronous trials: the same search on
    # any machine, so the margins below are those of this one path
    search = FabolasSearchCV(
        Synthetic(),
        SPACE,
        # the design (10 trials), the first probes (5), proposals, the end
        n_iter=28,
        n_initial_points=n_initial,
        min_resources=MIN_ROWS,
        n_representers=20,
        n_hyper_samples=3,
        cost_model="rows",
        asynchronous=False,
        cv=2,
        random_state=0,
    ).fit(X, y)
    res = search.cv_results_
    role = np.asarray(res["role"])
    fractions = np.asarray(res["resource_fraction"], float)
    # the ladder design: every configuration on 10 and on 40 rows
    np.testing.assert_allclose(fractions[: 2 * n_initial], [0.01, 0.04] * n_initial)
    assert np.all(role[: 2 * n_initial] == "design")
    # every size agrees in rank here: nothing raises the smallest size
    assert search.min_fraction_ == 0.01
    assert search.subset_agreements_[0]["test"] == "ladder"
    assert not any(a["misleads"] for a in search.subset_agreements_)
    # eq. 7 proposals stay on small subsets while they teach something about
    # the full-data minimum (the paper's form favours the cheapest)
    proposals = fractions[role == "proposal"]
    assert proposals.size >= 4 and np.sum(proposals <= 1 / 3) >= proposals.size - 1
    assert np.all(np.isnan(res["acquisition_value"][role == "design"]))
    assert np.all(np.isfinite(res["acquisition_value"][role == "proposal"]))

    # the answer is the final full-data evaluation, close to the optimum
    # (error 0.05; the best design configuration's is 0.07)
    _, params, score = search.incumbent_trajectory_[-1]
    truth = 1.0 - true_error(params["a"], params["b"])
    assert search.best_params_ == params
    assert search.best_score_ == pytest.approx(truth) == pytest.approx(score)
    assert true_error(params["a"], params["b"]) < 0.06
    assert res["role"][search.best_index_] == "final"
    # what the model predicted for it on all data was close
    assert abs(res["predicted_full_score"][search.best_index_] - truth) < 0.15


def test_an_incumbent_after_every_finished_trial_from_the_first(data):
    X, y = data
    search = FabolasSearchCV(
        Synthetic(), SPACE, n_iter=10, n_initial_points=3, **SMALL
    ).fit(X, y)
    res = search.cv_results_
    traj = search.incumbent_trajectory_
    elapsed = [t for t, _, _ in traj]
    assert elapsed == sorted(elapsed)
    # one entry at the moment each trial finished, the design included
    for finished in res["elapsed_time"]:
        assert any(t == pytest.approx(finished) for t in elapsed)
    # before any model: the best trial on the largest fraction so far, with
    # its measured score
    first = int(np.argmin(res["elapsed_time"]))
    t0, params0, score0 = traj[0]
    assert t0 == pytest.approx(res["elapsed_time"][first])
    assert params0 == res["params"][first]
    assert score0 == pytest.approx(res["mean_test_score"][first])
    design = np.flatnonzero(np.asarray(res["role"]) == "design")
    largest = max(res["resource_fraction"][design])
    best_design = max(
        (i for i in design if res["resource_fraction"][i] == largest),
        key=lambda i: res["mean_test_score"][i],
    )
    n_design = len(design)
    assert traj[n_design - 1][1] == res["params"][best_design]
    # the last entry is the answer
    assert traj[-1][1] == search.best_params_
    assert traj[-1][2] == pytest.approx(search.best_score_)


# ----------------------------------------------------------------------
# initial design, final evaluation, fallback, batches
# ----------------------------------------------------------------------
def test_initial_design_uses_requested_fractions(data):
    X, y = data
    search = FabolasSearchCV(
        Synthetic(),
        SPACE,
        n_iter=6,
        n_initial_points=5,
        initial_fractions=(0.2, 0.001, 0.05),
        min_resources=25,
        **SMALL,
    ).fit(X, y)
    fractions = search.cv_results_["resource_fraction"][:5]
    # 0.001 of 1000 rows is below min_resources=25 rows: clipped to 0.025
    np.testing.assert_allclose(fractions, [0.2, 0.025, 0.05, 0.2, 0.025])
    np.testing.assert_array_equal(
        search.cv_results_["n_resources"][:5], [200, 25, 50, 200, 25]
    )
    assert search.min_resources_ == 25
    # the design goes out as one batch (one ask), even with a single worker
    np.testing.assert_array_equal(search.cv_results_["iter"][:5], 0)
    assert search.cv_results_["iter"][5] > 0  # the final evaluation


def test_resume_mid_design_runs_the_points_that_did_not_finish(
    data, tmp_path, killed_copy
):
    # The design goes out as one batch and may finish in any order. Simulate a
    # kill after design trials 0, 1, 2 and 4 finished (3, 5 and 6 did not):
    # the resumed search must run exactly those, each on its own fraction.
    X, y = data
    kw = dict(n_iter=8, n_initial_points=6, run_name="r", **SMALL)
    first = FabolasSearchCV(Synthetic(), SPACE, store=tmp_path / "a.db", **kw)
    first.fit(X, y)
    res = first.cv_results_
    n_design = int(np.sum(np.asarray(res["role"]) == "design"))
    assert n_design == 7  # the budget less the final evaluation
    design = list(zip(res["params"][:n_design], res["resource_fraction"][:n_design]))
    killed_copy(tmp_path / "a.db", tmp_path / "b.db", finished=(0, 1, 2, 4))

    resumed = FabolasSearchCV(Synthetic(), SPACE, store=tmp_path / "b.db", **kw)
    resumed.fit(X, y)
    res = resumed.cv_results_
    trials = list(zip(res["params"], res["resource_fraction"]))
    assert len(trials) == 8
    assert trials[:4] == [design[i] for i in (0, 1, 2, 4)]
    for pair in design:
        assert trials[:n_design].count(pair) == 1, pair


def test_resuming_with_a_larger_min_resources_is_refused(data, tmp_path):
    # the model's subset axis starts at min_resources rows: stored trials on
    # 10 rows would be read as trials on 40
    X, y = data
    kw = dict(n_iter=5, n_initial_points=3, run_name="r", store=tmp_path / "s.db")
    FabolasSearchCV(Synthetic(), SPACE, min_resources=MIN_ROWS, **kw, **SMALL).fit(X, y)
    with pytest.raises(ValueError, match=r"\[10\] .*min_resources=40"):
        FabolasSearchCV(Synthetic(), SPACE, min_resources=40, **kw, **SMALL).fit(X, y)


def test_final_full_data_evaluation_exactly_once(data):
    X, y = data
    n_iter = 9
    search = FabolasSearchCV(
        Synthetic(), SPACE, n_iter=n_iter, n_initial_points=4, **SMALL
    ).fit(X, y)
    res = search.cv_results_
    n = len(res["params"])
    assert n == n_iter  # the final evaluation is inside the budget
    full = np.flatnonzero(np.asarray(res["resource_fraction"]) == 1.0)
    same = [i for i in full if res["params"][i] == search.best_params_]
    assert len(same) == 1
    assert search.best_index_ == same[0] == n - 1
    assert np.all(np.asarray(res["resource_fraction"][:-1]) < 1.0)
    assert np.isnan(res["acquisition_value"][-1])
    assert search.best_score_ == res["mean_test_score"][n - 1]
    assert search.best_estimator_.rows_ == N_ROWS  # refit on all data
    # auto min_resources: max(10 * 2 classes, 2 * 2 splits * 2 classes) rows
    assert search.min_resources_ == 20
    assert not search.fallback_


def test_small_data_warns_and_runs_plain_bo_on_all_data(data):
    X, y = data
    X, y = X[:200], y[:200]  # 100 training rows < 16 * 20
    search = FabolasSearchCV(Synthetic(), SPACE, n_iter=5, n_initial_points=3, **SMALL)
    with pytest.warns(UserWarning, match="plain Bayesian optimisation"):
        search.fit(X, y)
    assert search.fallback_
    np.testing.assert_array_equal(search.cv_results_["resource_fraction"], 1.0)
    assert len(search.cv_results_["params"]) == 5
    # every trial is on all data: the answer is the best measured one
    scores = np.asarray(search.cv_results_["mean_test_score"], float)
    assert search.best_index_ == int(np.nanargmax(scores))
    assert search.min_fraction_ == 1.0 and search.subset_agreements_ == []


def test_parallel_slots_get_distinct_proposals(data):
    X, y = data
    # synchronous batches (the asynchronous loop's distinct proposals are
    # tested in tests/test_loop.py)
    search = FabolasSearchCV(
        Synthetic(),
        SPACE,
        n_iter=12,
        n_initial_points=3,
        n_jobs=4,
        asynchronous=False,
        **SMALL,
    )
    with parallel_backend("threading", n_jobs=4):
        search.fit(X, y)
    res = search.cv_results_
    iters = np.asarray(res["iter"])
    role = np.asarray(res["role"])
    bo = iters[np.isin(role, ["proposal", "probe"])]
    # 4 workers / 2 folds: two trials per BO iteration (a probe and a
    # proposal, or two proposals), never the same trial twice
    assert any(np.sum(bo == it) == 2 for it in np.unique(bo))
    for it in np.unique(bo):
        rows = np.flatnonzero(iters == it)
        trials = {
            (res["params"][i]["a"], res["params"][i]["b"], res["resource_fraction"][i])
            for i in rows
        }
        assert len(trials) == len(rows)


def test_max_time_still_evaluates_incumbent_on_all_data(data):
    X, y = data
    search = FabolasSearchCV(
        Synthetic(), SPACE, n_iter=1000, max_time=4.0, n_initial_points=3, **SMALL
    ).fit(X, y)
    res = search.cv_results_
    assert len(res["params"]) < 1000
    assert res["resource_fraction"][search.best_index_] == 1.0
    assert search.best_params_ == search.incumbent_trajectory_[-1][1]


# ----------------------------------------------------------------------
# misleading subsets
# ----------------------------------------------------------------------
class Crossing(ClassifierMixin, BaseEstimator):
    """Learning curves that cross: below ``cross_rows`` rows the best ``a``
    is 0.9, from there on 0.3 (the error shrinks with the rows as in
    :class:`Synthetic`)."""

    def __init__(self, a=0.5, b=0.5, cross_rows=20):
        self.a = a
        self.b = b
        self.cross_rows = cross_rows

    def fit(self, X, y):
        self.rows_ = len(X)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    def score(self, X, y):
        s = np.log(self.rows_ / MIN_ROWS) / np.log(N_TRAIN / MIN_ROWS)
        best = 0.3 if self.rows_ >= self.cross_rows else 0.9
        error = 0.05 + 0.4 * (self.a - best) ** 2 + 0.05 * (self.b - 0.6) ** 2
        return 1.0 - error * (1.0 + 3.0 * (1.0 - s) ** 2)


def _crossing_search(cross_rows, n_iter, seed=0):
    # costs as rows times folds and synchronous trials: one path everywhere
    return FabolasSearchCV(
        Crossing(cross_rows=cross_rows),
        SPACE,
        n_iter=n_iter,
        n_initial_points=6,
        min_resources=MIN_ROWS,
        n_representers=10,
        n_hyper_samples=2,
        cost_model="rows",
        asynchronous=False,
        cv=2,
        random_state=seed,
    )


def _check_answer_rests_on_trusted_sizes(search):
    res = search.cv_results_
    role = np.asarray(res["role"])
    fractions = np.asarray(res["resource_fraction"], float)
    # proposals never go below the smallest trusted size of their time
    proposed = role == "proposal"
    assert np.all(fractions[proposed] >= np.asarray(res["min_fraction"])[proposed])
    # once a size misled, two contenders are measured on all data (as final
    # evaluations, or already as probes) and the answer is the best
    full = np.flatnonzero(fractions == 1.0)
    assert len(full) >= 2 and np.sum(role == "final") <= 2
    best = full[np.argmax(np.asarray(res["mean_test_score"])[full])]
    assert search.best_index_ == best
    assert search.incumbent_trajectory_[-1][1] == search.best_params_


def test_the_ladder_design_raises_the_smallest_size_where_it_misleads(data):
    # 10 rows rank the configurations against 40 rows and all data
    X, y = data
    search = _crossing_search(cross_rows=20, n_iter=24).fit(X, y)
    ladder = search.subset_agreements_[0]
    assert ladder["test"] == "ladder" and ladder["misleads"]
    assert (ladder["low_rows"], ladder["high_rows"]) == (10, 40)
    assert ladder["tau"] < 0 and ladder["n_pairs"] == 6
    assert search.min_fraction_trajectory_[:2] == [
        (0.0, 0.01),
        (pytest.approx(ladder["elapsed"]), 0.04),
    ]
    assert search.min_fraction_ >= 0.04
    _check_answer_rests_on_trusted_sizes(search)
    # the answer is near the full-data optimum a = 0.3, far from the
    # small subsets' a = 0.9
    assert abs(search.best_params_["a"] - 0.3) < 0.15


def test_probes_raise_the_smallest_size_where_the_model_extrapolates_wrongly(data):
    # 10 and 40 rows agree with each other (the ladder trusts them) but not
    # with 100 rows and more: the probes on 160 rows catch it
    X, y = data
    search = _crossing_search(cross_rows=100, n_iter=30).fit(X, y)
    tests = [a["test"] for a in search.subset_agreements_]
    assert tests[0] == "ladder" and not search.subset_agreements_[0]["misleads"]
    probes = search.subset_agreements_[1]
    assert probes["test"] == "probes" and probes["misleads"]
    assert (probes["low_rows"], probes["high_rows"]) == (10, 160)
    assert probes["n_pairs"] == MIN_PAIRS
    res = search.cv_results_
    role = np.asarray(res["role"])
    # the probes ran on 16 times the smallest trusted size of their time,
    # each with the model's prediction for that very trial
    probe_rows = np.flatnonzero(role == "probe")
    np.testing.assert_allclose(
        res["resource_fraction"][probe_rows],
        np.minimum(16 * np.asarray(res["min_fraction"])[probe_rows], 1.0),
    )
    assert np.all(np.isfinite(res["predicted_score"][probe_rows]))
    assert search.min_fraction_ >= 0.04
    _check_answer_rests_on_trusted_sizes(search)


def test_agreeing_sizes_leave_the_smallest_size_alone(data):
    X, y = data
    search = FabolasSearchCV(
        Synthetic(),
        SPACE,
        n_iter=20,
        n_initial_points=6,
        min_resources=MIN_ROWS,
        cost_model="rows",
        asynchronous=False,
        **{**SMALL, "n_representers": 10},
    ).fit(X, y)
    assert [a["test"] for a in search.subset_agreements_] == ["ladder", "probes"]
    assert not any(a["misleads"] for a in search.subset_agreements_)
    assert search.min_fraction_trajectory_ == [(0.0, 0.01)]
    # one final evaluation while every size is trusted
    assert list(search.cv_results_["role"]).count("final") == 1


def test_the_answer_is_the_best_measured_full_data_trial():
    search = FabolasSearchCV(Synthetic(), SPACE)
    search._best_row = 1
    search._final_out_of_reach = False
    results = {
        "mean_test_score": np.array([0.9, 0.8, 0.85, 0.95, np.nan]),
        "resource_fraction": np.array([0.1, 0.5, 1.0, 1.0, 1.0]),
        "n_resources": np.array([100, 500, 1000, 1000, 1000]),
    }
    # a higher score on a subset, or a failed full-data trial, never wins
    assert search._select_best(results, "score") == 3
    # no successful full-data trial: the incumbent on its largest trusted
    # size, and a warning that says so
    results["mean_test_score"][2:4] = np.nan
    with pytest.warns(UserWarning, match="on 500 rows, not on all data: no trial"):
        assert search._select_best(results, "score") == 1


def test_cost_in_rows_gives_the_same_trials_whatever_the_fit_times(data):
    X, y = data

    class Timed(Synthetic):
        # fit times that differ between the two runs, and by configuration
        def __init__(self, a=0.5, b=0.5, delay=0.0, slow_a=True):
            super().__init__(a, b, delay)
            self.slow_a = slow_a

        def fit(self, X, y):
            time.sleep(0.004 * (self.a if self.slow_a else 1.0 - self.a))
            return super().fit(X, y)

    params = []
    for slow_a in (True, False):
        search = FabolasSearchCV(
            Timed(slow_a=slow_a),
            SPACE,
            n_iter=18,
            n_initial_points=3,
            cost_model="rows",
            asynchronous=False,
            n_jobs=2,
            **SMALL,
        )
        with parallel_backend("threading", n_jobs=2):
            search.fit(X, y)
        assert search.cv_results_["role"].tolist().count("proposal") >= 3
        params.append(search.cv_results_["params"])
    assert params[0] == params[1]


# ----------------------------------------------------------------------
# budgeting the final full-data evaluation
# ----------------------------------------------------------------------
def _hand_built_context(n_train, n_splits, workers, per_split, seed=0):
    """A search context with 40 finished trials, as FABOLAS runs them: most
    on tiny subsets, at most 1/8 of the data, the first configuration (the
    best) tried on 1/8 and on 1/64."""
    space = SearchSpace(SPACE)
    rng = np.random.default_rng(seed)
    U = space.sample(40, rng, method="random")
    fractions = np.exp(rng.uniform(np.log(40 / n_train), np.log(1 / 8), 40))
    fractions[:30] = np.minimum(fractions[:30], 1 / 64)
    U[1] = U[0]
    fractions[:2] = 1 / 8, 1 / 64
    ctx = search_context(
        space,
        rng=rng,
        seed=seed,
        n_train=n_train,
        n_splits=n_splits,
        budget=1000,
        max_time=600.0,
        n_jobs_effective=workers,
        start_time=time.perf_counter(),
    )
    for i, (u, f) in enumerate(zip(U, fractions)):
        ctx.trials.append(
            TrialRecord(
                params=space.from_unit(u[None, :])[0],
                x=u,
                fraction=float(f),
                n_resources=round(f * n_train),
                score=0.9 - 0.1 * i / 40,
                cost=n_splits * per_split(f),
                fit_time=n_splits * per_split(f),
                failed=False,
                iter=i,
                elapsed_time=float(i),
            )
        )
    return ctx, U


def test_final_evaluation_reserve_follows_convex_cost():
    """The time set aside for the incumbent's full-data evaluation covers a
    fit time that is convex in log rows, which the cost GP's (1, s~) basis,
    fitted mostly to tiny subsets, under-predicts (SVC behaves like this)."""
    n_train, n_splits, workers = 16_000, 5, 2

    def per_split(f):
        return 0.05 + 40.0 * f**2  # 40 s per split on all rows

    ctx, U = _hand_built_context(n_train, n_splits, workers, per_split)
    search = FabolasSearchCV(Synthetic(), SPACE, min_resources=40, **SMALL)
    search._init_search(ctx)
    search._fit_models(ctx)
    costs, max_cost = search._budget(ctx, 0)
    # five splits on two workers: three rounds of one split each
    truth = 3 * per_split(1.0)
    x_full = search._axis.with_s(U[:1], 1.0)
    gp_only = costs.upper(x_full)[0] * 3 / n_splits
    assert gp_only < 0.5 * truth  # alone, it would overrun max_time
    own = [np.array_equal(t.x, U[0]) for t in ctx.trials]
    reserve = costs.full_data_seconds(x_full, own)
    assert 0.7 * truth < reserve < 2.0 * truth
    # the search sets it aside (it is far below half of max_time)
    assert max_cost <= ctx.max_time - reserve


def test_no_time_is_kept_for_a_final_evaluation_out_of_reach():
    # 4,000 s per split on all rows: the incumbent's evaluation could not
    # finish within max_time (600 s) and its grace period, so no time is
    # kept for it and the whole budget goes to subsets
    n_train, n_splits, workers = 16_000, 5, 2
    ctx, _ = _hand_built_context(
        n_train, n_splits, workers, lambda f: 0.05 + 4000.0 * f**2
    )
    search = FabolasSearchCV(Synthetic(), SPACE, min_resources=40, **SMALL)
    search._init_search(ctx)
    search._fit_models(ctx)
    costs, max_cost = search._budget(ctx, 0)
    assert search._final_reserve(ctx, costs, 0) == 0.0
    assert max_cost > 0.9 * ctx.max_time


def test_a_final_evaluation_out_of_reach_is_not_started(data):
    X, y = data
    # 3 s per split on all rows against 2 s of max_time and 1 s of grace:
    # the incumbent's full-data evaluation could only be stopped at the
    # deadline and recorded as failed, so it is not started
    search = FabolasSearchCV(
        Synthetic(delay=3.0),
        SPACE,
        n_iter=1000,
        max_time=2.0,
        n_initial_points=3,
        **SMALL,
    )
    with parallel_backend("threading", n_jobs=1):
        with pytest.warns(UserWarning, match="predicted not to finish") as record:
            search.fit(X, y)
    # the warning points at the caller's line, not into the library
    subset = [w for w in record if "not on all data" in str(w.message)]
    assert subset and all(w.filename == __file__ for w in subset)
    res = search.cv_results_
    assert len(res["params"]) >= 6  # the design finished
    assert "final" not in set(res["role"])
    assert np.isfinite(res["mean_test_score"]).all()
    assert res["resource_fraction"][search.best_index_] < 1.0


def test_proposal_does_not_depend_on_the_threads_it_uses():
    # with n_jobs > 1 the hyperparameter samples' acquisitions run in threads;
    # the proposal must be the one a single thread makes
    proposals = []
    for workers in (1, 2, 3):
        ctx, _ = _hand_built_context(16_000, 2, workers, lambda f: 0.05 + f)
        search = FabolasSearchCV(
            Synthetic(),
            SPACE,
            min_resources=40,
            overhead=0.1,
            **{**SMALL, "n_hyper_samples": 3, "n_representers": 10},
        )
        search._init_search(ctx)
        trials = search._propose(ctx, 2, 0, time.perf_counter())
        proposals.append([(t.params, t.fraction, t.extras) for t in trials])
    assert len(proposals[0]) == 2
    assert proposals[1] == proposals[0]
    assert proposals[2] == proposals[0]


def test_an_outsized_reserve_does_not_end_the_search(data, monkeypatch):
    # an extrapolation from a few small fits can put the final evaluation far
    # beyond max_time; the reserve is capped at half of it, so the search
    # goes on instead of stopping right after the initial design
    X, y = data
    monkeypatch.setattr(CostModel, "full_data_seconds", lambda self, x, own: 1e6)
    search = FabolasSearchCV(
        Synthetic(), SPACE, n_iter=8, max_time=120.0, n_initial_points=3, **SMALL
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 8


# ----------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------
class NeverFit(ClassifierMixin, BaseEstimator):
    def __init__(self, a=0.5):
        self.a = a

    def fit(self, X, y):
        raise AssertionError("fit must not be called on bad input")


BAD_INPUTS = [
    ({"initial_fractions": (0.0, 0.5)}, "initial_fractions"),
    ({"initial_fractions": (0.5, 1.5)}, "initial_fractions"),
    ({"initial_fractions": ()}, "initial_fractions"),
    ({"initial_fractions": ("a",)}, "initial_fractions"),
    ({"min_resources": 10_000}, "min_resources"),
    ({"min_resources": 0}, "min_resources"),
    ({"min_resources": "all"}, "min_resources"),
    ({"n_representers": 1}, "n_representers"),
    ({"n_hyper_samples": 0}, "n_hyper_samples"),
    ({"n_initial_points": 0}, "n_initial_points"),
    ({"overhead": -1.0}, "overhead"),
    ({"overhead": "guess"}, "overhead"),
    ({"information": "kl"}, "information"),
    ({"cost_model": "seconds"}, "cost_model"),
    ({"initial_fractions": "auto"}, "initial_fractions"),
    ({"n_iter": 0}, "n_iter"),
]


@pytest.mark.parametrize("kwargs, name", BAD_INPUTS)
def test_bad_input_raises_before_any_fit(kwargs, name):
    X = np.random.default_rng(0).normal(size=(400, 2))
    y = np.arange(400) % 2
    search = FabolasSearchCV(NeverFit(), {"a": Real(0.0, 1.0)}, cv=2, **kwargs)
    with pytest.raises(ValueError, match=name):
        search.fit(X, y)


def test_proposals_the_cost_gp_underrates_are_not_affordable_near_the_end():
    # SVC-like cost per split, convex in log rows (40 s on all rows): the cost
    # GP's power law, fitted mostly to tiny subsets, rates a fit on all rows
    # as affordable in time that would not cover it
    n_train, n_splits, workers = 16_000, 5, 2

    def per_split(f):
        return 0.02 + 40.0 * f**2

    ctx, U = _hand_built_context(n_train, n_splits, workers, per_split)
    search = FabolasSearchCV(Synthetic(), SPACE, min_resources=40, **SMALL)
    search._init_search(ctx)
    search._fit_models(ctx)
    inc = search._update_incumbent(ctx)
    Z = search._representers(ctx, inc)
    posteriors = search._loss_gp.posteriors
    costs, _ = search._budget(ctx, inc)
    full, tiny = search._axis.with_s(U[:8], 1.0), search._axis.with_s(U[:8], 0.0)
    gp_full = costs.upper(full).max()
    fractions = [t.fraction for t in ctx.trials]
    slow = slow_cost(fractions, ctx.costs(), *cost_curve(fractions, ctx.costs()), 1.0)
    max_cost = 0.5 * (gp_full + slow[0])
    # the GP's bound would admit a full fit, which would overrun
    assert gp_full < max_cost < n_splits * per_split(1.0)
    _, precise = search._acquisition(ctx, Z, posteriors, 0.1, costs, max_cost)
    assert np.all(np.isinf(precise(full)))
    assert np.all(np.isfinite(precise(tiny)))
    _, unbounded = search._acquisition(ctx, Z, posteriors, 0.1, costs)
    assert np.all(np.isfinite(unbounded(full)))


def _tiny_classification(n=60):
    X = np.random.default_rng(0).normal(size=(n, 3))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("space", [{"C": [1.0]}, {}])
@pytest.mark.parametrize("n", [60, 2000])
def test_a_single_configuration_is_evaluated_on_all_data(space, n):
    from sklearn.linear_model import LogisticRegression

    X, y = _tiny_classification(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search = FabolasSearchCV(
            LogisticRegression(), space, n_iter=4, cv=2, random_state=0
        ).fit(X, y)
    assert search.cv_results_["params"] == [{k: v[0] for k, v in space.items()}]
    assert search.cv_results_["resource_fraction"].tolist() == [1.0]


class _ArrayParam(ClassifierMixin, BaseEstimator):
    def __init__(self, w=None, c=0.5):
        self.w = w
        self.c = c

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


@pytest.mark.parametrize("n", [60, 2000])
def test_array_valued_categories(n):
    X, y = _tiny_classification(n)
    space = {"w": [np.array([1.0, 2.0]), np.array([3.0, 4.0])], "c": Real(0.0, 1.0)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search = FabolasSearchCV(
            _ArrayParam(),
            space,
            n_iter=5,
            n_initial_points=3,
            n_representers=5,
            n_hyper_samples=2,
            cv=2,
            random_state=0,
        ).fit(X, y)
    assert len(search.cv_results_["params"]) >= 3


@pytest.mark.parametrize("seed", range(3))
def test_fallback_stops_once_a_finite_space_is_evaluated(seed):
    from sklearn.linear_model import LogisticRegression

    X, y = _tiny_classification(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search = FabolasSearchCV(
            LogisticRegression(),
            {"C": [1.0, 2.0]},
            n_iter=6,
            n_initial_points=1,
            cv=3,
            random_state=seed,
        ).fit(X, y)
    assert search.fallback_
    # each configuration once, on all data: nothing is evaluated twice
    assert sorted(p["C"] for p in search.cv_results_["params"]) == [1.0, 2.0]


def _trust_record(a, rows, score, role="proposal", n_train=5000):
    extras = {"role": role, "min_fraction": 20 / n_train}
    return one_parameter_record(a, rows, rows / n_train, score, extras)


def test_a_size_whose_failures_are_its_own_is_no_longer_trusted():
    trust = SubsetTrust(n_train=5000, min_rows=20, n_design=None)
    for a in (0.1, 0.2, 0.3):
        trust.absorb(_trust_record(a, 20, a))
    trust.absorb(_trust_record(0.9, 20, np.nan))
    trust.absorb(_trust_record(0.8, 20, np.nan))
    trust.absorb(_trust_record(0.8, 320, np.nan))
    assert trust.bound == 0  # failing on more rows too: the setting's own
    # a setting failing on 20 rows succeeds on 320 (a k-NN asking for more
    # neighbours than 20 rows hold): the 20 rows judge the size
    trust.absorb(_trust_record(0.9, 320, 0.6))
    assert trust.bound == 1
    # every trial of a size failed: it tells the model nothing
    for i in range(MIN_PAIRS):
        trust.absorb(_trust_record(0.4 + i / 100, 80, np.nan))
    assert trust.bound == 2
    assert [round(f * 5000) for _, f in trust.bound_trajectory] == [20, 80, 320]


def test_failures_below_the_trusted_size_leave_the_model():
    # a failure on a size the bound has risen above is the size's (a k-NN
    # asking for more neighbours than the subset has rows): the worst-score
    # penalty the loss model would see for it steers the model away from
    # configurations that are fine on more rows; a failure at or above the
    # bound stays
    from types import SimpleNamespace

    records = [_trust_record(a, 20, a) for a in (0.1, 0.2, 0.3)]
    records += [_trust_record(0.9, 20, np.nan), _trust_record(0.9, 320, 0.6)]
    records += [_trust_record(0.8, 320, np.nan)]
    search = FabolasSearchCV(Ridge(), {"a": Real(0.0, 1.0)})
    search._axis = FractionAxis(5000, 20)
    search._trust = SubsetTrust(n_train=5000, min_rows=20, n_design=None)
    for record in records:
        search._trust.absorb(record)
    assert search._trust.bound == 1
    fits = []
    search._loss_gp = SimpleNamespace(fit=lambda X, y: fits.append((X, y)))
    search._fit_cost_gp = False
    ctx = SimpleNamespace(
        trials=records,
        n_train=5000,
        X=lambda: np.array([r.x for r in records]),
        scores=lambda: np.array([r.score for r in records]),
    )
    search._fit_models(ctx)
    ((_, y),) = fits
    assert len(y) == len(records) - 1
    assert np.isfinite(y).all()
