"""The benchmark's pure functions on constructed data with known answers.

No search is run here: ``python -m benchmarks.run --quick`` is the smoke run.
"""

import math

import numpy as np
import pytest

from benchmarks.calibration import (
    FoldTimeModel,
    grid_points_per_dim,
    halving_schedule,
    random_n_iter,
)
from benchmarks.execute import incumbents_for
from benchmarks.metrics import (
    incumbent_indices,
    median_spread,
    overhead_share,
    score_at,
    step_on_grid,
    target_threshold,
    time_to_target,
)
from benchmarks.refit import incumbent_key
from benchmarks.report import _compare, run_metrics
from benchmarks.trace import params_key, trials_from_log


def test_incumbent_is_running_best_and_skips_nan():
    scores = [np.nan, 0.5, 0.4, 0.7, 0.7, np.nan, 0.9]
    assert incumbent_indices(scores).tolist() == [-1, 1, 1, 3, 3, 3, 6]


def test_incumbent_trusts_the_largest_resource_seen():
    # Halving-like: a better score on a small subset does not beat a trial on
    # more data, and the first trial on a new, larger level takes over.
    scores = [0.9, 0.8, 0.6, 0.95, 0.7, 0.65]
    resources = [10, 10, 30, 10, 30, 90]
    assert incumbent_indices(scores, resources).tolist() == [0, 0, 2, 2, 4, 5]


def test_score_at_reads_the_step_function():
    times, values = [2.0, 5.0, 9.0], [0.6, 0.8, 0.85]
    assert math.isnan(score_at(times, values, 1.0))
    assert score_at(times, values, 2.0) == 0.6
    assert score_at(times, values, 8.99) == 0.8
    assert score_at(times, values, 100.0) == 0.85
    grid = step_on_grid(times, values, [0.0, 5.0, 10.0])
    assert np.isnan(grid[0]) and grid[1:].tolist() == [0.8, 0.85]


def test_time_to_target_first_crossing_or_inf():
    times, values = [1.0, 3.0, 7.0, 8.0], [0.70, 0.86, 0.80, 0.90]
    assert time_to_target(times, values, 0.85) == 3.0
    assert time_to_target(times, values, 0.90) == 8.0
    assert time_to_target(times, values, 0.95) == math.inf
    assert time_to_target([], [], 0.5) == math.inf


def test_target_threshold_half_point_or_one_percent():
    assert target_threshold(0.9, True) == pytest.approx(0.895)
    assert target_threshold(0.8, False) == pytest.approx(0.792)
    # Negative regression scores: 1 % of the magnitude below, not above.
    assert target_threshold(-2.0, False) == pytest.approx(-2.02)


def test_overhead_share():
    assert overhead_share(10.0, 15.0, 2) == pytest.approx(0.25)
    assert overhead_share(10.0, 25.0, 2) == 0.0
    assert math.isnan(overhead_share(0.0, 1.0, 2))
    assert math.isnan(overhead_share(10.0, math.nan, 2))


def test_median_spread_counts_never_reached_as_inf():
    assert median_spread([3.0, math.inf, 1.0]) == (3.0, 1.0, math.inf)
    assert median_spread([2.0, math.nan]) == (2.0, 2.0, 2.0)
    assert all(math.isnan(x) for x in median_spread([]))


def test_trials_from_log_groups_folds_and_rungs():
    a, b = {"C": 1.0}, {"C": 2.0}
    calls = [
        # Two folds of a, two of b on 10 rows each, then a again on 30 rows
        # each (a halving rung), then one lone fold of b (cut off).
        {"t": 101.0, "n": 10, "s": 0.5, "p": a},
        {"t": 102.0, "n": 10, "s": 0.7, "p": b},
        {"t": 103.0, "n": 10, "s": 0.7, "p": a},
        {"t": 104.0, "n": 10, "s": 0.9, "p": b},
        {"t": 110.0, "n": 30, "s": 0.8, "p": a},
        {"t": 111.0, "n": 30, "s": 0.6, "p": a},
        {"t": 112.0, "n": 30, "s": 0.1, "p": b},
    ]
    trials = trials_from_log(calls, n_splits=2, t0=100.0)
    got = [(t["elapsed"], t["score"], t["resource"], t["params"]) for t in trials]
    assert got == [
        (3.0, pytest.approx(0.6), 20, a),
        (4.0, pytest.approx(0.8), 20, b),
        (11.0, pytest.approx(0.7), 60, a),
    ]


def test_params_key_is_canonical():
    assert params_key({"b": np.int64(3), "a": np.float64(0.1)}) == params_key(
        {"a": 0.1, "b": 3}
    )
    assert incumbent_key({"a": 1}, 1.0) != incumbent_key({"a": 1}, 0.5)


def _trial(t, score, fraction=1.0, **extra):
    return {"elapsed": t, "score": score, "fraction": fraction, "params": {"x": t}}


def test_incumbents_for_full_data_and_tradeoff():
    trials = [_trial(1, 0.7), _trial(2, 0.9, 0.3), _trial(3, 0.8)]
    incs = incumbents_for(trials, "halving")
    # The 30 % trial never beats full-data trials (fractions 1.0 come first).
    assert [i["params"]["x"] for i in incs] == [1, 1, 3]
    assert all(i["refit_fraction"] == 1.0 for i in incs)
    for t, s in zip(trials, [0.1, 0.5, 0.2]):
        t["tradeoff_score"] = s
    incs = incumbents_for(trials, "tradeoff-0.1")
    # Tradeoff selects by its own score and is refit on the chosen fraction.
    assert [i["params"]["x"] for i in incs] == [1, 2, 2]
    assert [i["refit_fraction"] for i in incs] == [1.0, 0.3, 0.3]


def test_run_metrics_on_a_constructed_record():
    record = {
        "wall": 20.0,
        "busy": 30.0,
        "n_trials": 3,
        "incumbents": [
            {"elapsed": 1.0, "params": {"x": 1}, "refit_fraction": 1.0},
            {"elapsed": 4.0, "params": {"x": 2}, "refit_fraction": 1.0},
            {"elapsed": 12.0, "params": {"x": 3}, "refit_fraction": 1.0},
        ],
    }
    refits = {
        incumbent_key({"x": 1}, 1.0): {"test_score": 0.80},
        incumbent_key({"x": 2}, 1.0): {"test_score": 0.85},
        incumbent_key({"x": 3}, 1.0): {"test_score": 0.90},
    }
    m = run_metrics(record, refits, threshold=0.845, budget=10.0, n_jobs=2)
    assert m["ttt"] == 4.0
    assert m["at0.1"] == 0.80  # t = 1
    assert m["at0.25"] == 0.80  # t = 2.5
    assert m["at0.5"] == 0.85  # t = 5
    assert m["at1"] == 0.85  # t = 10: the last incumbent came after the budget
    assert m["final"] == 0.90
    assert m["overhead"] == pytest.approx(0.25)


def test_compare_shows_the_peer_winning():
    ours = [
        {"ttt": 100.0, "at1": 0.90},
        {"ttt": 120.0, "at1": 0.90},
        {"ttt": math.inf, "at1": 0.89},
    ]
    faster_peer = [{"ttt": 20.0, "at1": 0.90}]
    cell, lost = _compare(ours, faster_peer, True)
    assert lost and cell.startswith("**PEER BETTER**")
    slower_peer = [{"ttt": 400.0, "at1": 0.88}]
    cell, lost = _compare(ours, slower_peer, True)
    assert not lost and cell.startswith("3.33x sooner")
    # Slower to the target but a clearly better final score also counts.
    accurate_peer = [{"ttt": 300.0, "at1": 0.92}]
    assert _compare(ours, accurate_peer, True)[1]


def test_sizing_arithmetic():
    model = FoldTimeModel(
        a=0.01, b=1.0, startup=4.0, calibration_seconds=0, n_fits=0, largest_subset=0
    )
    # 1250 rows, 5 folds: folds train on 1000 rows -> 10 s each, 50 s a trial;
    # (104 - 4) s on 2 workers hold 4 trials.
    assert random_n_iter(model, 1250, 104.0, 2, 5) == 4
    assert grid_points_per_dim(10, 2) == 3
    assert grid_points_per_dim(9, 2) == 3
    assert grid_points_per_dim(3, 2) == 2


@pytest.mark.parametrize(
    "n_candidates, min_resources",
    [("exhaust", "smallest"), (10, "exhaust"), (4, "exhaust")],
)
def test_halving_schedule_matches_scikit_learn(n_candidates, min_resources):
    from sklearn.dummy import DummyClassifier
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingRandomSearchCV

    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 2))
    y = np.arange(700) % 3
    search = HalvingRandomSearchCV(
        DummyClassifier(),
        {"strategy": ["prior", "most_frequent", "stratified", "uniform"] * 50},
        n_candidates=n_candidates,
        min_resources=min_resources,
        refit=False,
        random_state=0,
    ).fit(X, y)
    rungs = halving_schedule(700, n_candidates, min_resources, n_classes=3)
    assert [c for c, _ in rungs] == search.n_candidates_
    assert [r for _, r in rungs] == search.n_resources_


def test_fabolas_extrapolation_ranks_a_representative_learning_curve():
    # validation score = a bowl over the unit cube minus a learning-curve
    # term that vanishes at s~ = 1; small subsets rank like all data, so the
    # loss model fitted on subsets must rank the full-data scores right
    from benchmarks.studies.fabolas_extrapolation import check_run
    from benchmarks.tasks import ESTIMATORS, space_ours
    from skbayes_search.space import SearchSpace

    space = SearchSpace(space_ours(ESTIMATORS["svc"].params))
    rng = np.random.default_rng(0)
    n_search, n_splits = 1000, 5
    n_train, min_resources = 800, 20  # auto for 2 classes, 5 splits

    def score(u, s):
        return 0.9 - 0.3 * np.sum((u - [0.6, 0.4]) ** 2) - 0.1 * (1 - s) ** 2

    trials = []
    for u in rng.uniform(size=(40, 2)):
        rows = int(rng.integers(min_resources, n_train // 4))
        s = 1 - math.log(rows / n_train) / math.log(min_resources / n_train)
        params = space.from_unit(u[None, :])[0]
        trials.append({"params": params, "resource": rows, "score": score(u, s)})
    truth_u = rng.uniform(size=(25, 2))
    refit_params = space.from_unit(truth_u)
    refit_scores = np.array([score(u, 1.0) for u in truth_u])
    record = {"seed": 0, "n_splits": n_splits, "trials": trials}
    task_info = {"n_search": n_search, "n_classes": 2}
    (row,) = check_run(
        record, task_info, space, refit_params, refit_scores, [1.0], n_hyper_samples=2
    )
    assert row["trials"] == 40
    assert row["largest_fraction"] < 0.25
    assert row["spearman"] > 0.8
    assert row["first_ranked_test"] >= np.sort(refit_scores)[-3]
    assert abs(row["median_gap_top10"]) < 0.05


def test_fabolas_budget_report_measures_the_final_evaluation():
    from benchmarks.studies.fabolas_budget import final_evaluation_report
    from skbayes_search._cost_model import reserve_seconds

    inc, other = {"C": 1.0}, {"C": 2.0}
    fractions = [1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 16, 1.0]
    per_split = [0.02, 0.05, 0.15, 0.5, 1.8, 0.1, 25.0]
    results = {
        "params": [other, other, inc, other, other, other, inc],
        "resource_fraction": fractions,
        "mean_fit_time": [0.8 * t for t in per_split],
        "mean_score_time": [0.2 * t for t in per_split],
        "mean_test_score": [0.8, 0.8, 0.8, 0.8, 0.8, np.nan, 0.8],
        "elapsed_time": [1.0, 1.5, 2.0, 3.0, 5.0, 5.5, 20.0],
    }
    results["acquisition_value"] = [np.nan] * 3 + [0.5, 0.4, 0.3, np.nan]
    report = final_evaluation_report(results, 5, 2, budget=18.0, wall=20.4)
    assert report["trials"] == 7
    assert report["final_evaluation"]
    assert report["last_trial_end"] == 5.5
    assert report["final_seconds"] == 14.5
    assert report["final_cost_summed"] == 125.0
    assert not report["within_budget"]
    # the reserve is the search's own, from the successful rows before the
    # final one (the failed row is left out)
    keep = [0, 1, 2, 3, 4]
    expected = reserve_seconds(
        [fractions[i] for i in keep],
        [5 * per_split[i] for i in keep],
        [i == 2 for i in keep],
        5,
        2,
    )
    assert expected > 0
    assert report["reserve_seconds"] == round(expected, 1)
    # the incumbent had run on all data already: the last row is an ordinary
    # trial, and there is no final evaluation to report on
    results["acquisition_value"][-1] = 0.2
    report = final_evaluation_report(results, 5, 2, budget=18.0, wall=17.0)
    assert not report["final_evaluation"]
    assert report["within_budget"]
    assert report["final_seconds"] is None and report["reserve_seconds"] is None


def test_fabolas_budget_trace_reads_each_proposal_against_its_trials():
    from benchmarks.studies.fabolas_budget import trace_report

    results = {
        "elapsed_time": [1.0, 2.0, 4.0, 9.0, 10.0],
        "resource_fraction": [1 / 8, 1 / 16, 1 / 4, 1 / 2, 1.0],
    }
    trace = [
        {"elapsed": 2.5, "proposed_rows": [2], "predicted_wall": [1.0]},
        {"elapsed": 4.5, "proposed_rows": [3], "predicted_wall": [2.0]},
        {"elapsed": 9.2, "proposed_rows": [], "predicted_wall": []},
    ]
    out = trace_report(trace, results, last=2)
    assert [e["elapsed"] for e in out] == [4.5, 9.2]
    # from the end of its proposal to the end of its row
    assert out[0]["took_wall"] == [4.5] and out[0]["fractions"] == [0.5]
    assert out[1]["took_wall"] == [] and "proposed_rows" not in out[1]
    assert trace_report(trace, results, last=0) == []


def test_fabolas_budget_traced_search_records_every_proposal():
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    from benchmarks.studies.fabolas_budget import _TracedFabolas, trace_report
    from skbayes_search.space import Real

    X, y = make_classification(n_samples=600, n_features=5, random_state=0)
    search = _TracedFabolas(
        LogisticRegression(),
        {"C": Real(1e-3, 1e2, prior="log-uniform")},
        n_iter=14,
        n_initial_points=4,
        n_representers=10,
        n_hyper_samples=2,
        cv=3,
        random_state=0,
    ).fit(X, y)
    proposed = np.isfinite(search.cv_results_["acquisition_value"]).sum()
    assert sum(len(e["proposed_rows"]) for e in search.trace_) == proposed
    out = trace_report(search.trace_, search.cv_results_, last=len(search.trace_))
    assert len(out) == len(search.trace_)
    for entry in out:
        assert len(entry["took_wall"]) == len(entry["predicted_wall"])
        assert all(t >= 0 for t in entry["took_wall"])
        assert entry["reserve_seconds"] >= 0
