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
from benchmarks.run import refit_order
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
    # eq. 7 proposals and the probes of larger subsets, both checked
    # against the time left
    role = np.asarray(search.cv_results_["role"])
    proposed = np.isin(role, ["proposal", "probe"]).sum()
    assert sum(len(e["proposed_rows"]) for e in search.trace_) == proposed
    out = trace_report(search.trace_, search.cv_results_, last=len(search.trace_))
    assert len(out) == len(search.trace_)
    for entry in out:
        assert len(entry["took_wall"]) == len(entry["predicted_wall"])
        assert all(t >= 0 for t in entry["took_wall"])
        assert entry["reserve_seconds"] >= 0


def test_own_incumbents_read_from_any_search_that_names_them():
    from types import SimpleNamespace

    from benchmarks.execute import own_incumbents

    traj = [(1.5, {"C": np.float64(2.0)}, 0.8), (4.0, {"C": 0.5}, 0.85)]
    incs = own_incumbents(SimpleNamespace(incumbent_trajectory_=traj))
    assert [i["elapsed"] for i in incs] == [1.5, 4.0]
    assert incs[0]["params"] == {"C": 2.0} and type(incs[0]["params"]["C"]) is float
    assert all(i["refit_fraction"] == 1.0 for i in incs)
    assert own_incumbents(SimpleNamespace(incumbent_trajectory_=[])) is None
    assert own_incumbents(SimpleNamespace()) is None


def test_resume_keeps_every_record_but_not_available(tmp_path):
    import json

    from benchmarks.run import has_record, record_path

    path = record_path(tmp_path, "svc-adult", "bayes", 2)
    assert path == tmp_path / "runs" / "svc-adult" / "bayes-seed2.json"
    path.parent.mkdir(parents=True)
    assert not has_record(path)
    for status, kept in [("ok", True), ("failed", True), ("not available", False)]:
        path.write_text(json.dumps({"status": status}))
        assert has_record(path) is kept


def _inc(t, x):
    return {"elapsed": t, "params": {"x": x}, "refit_fraction": 1.0, "cv_score": 0.0}


def _refits(*pairs):
    return {
        incumbent_key({"x": x}, 1.0): {"test_score": s, "fit_seconds": 10.0 * x}
        for x, s in pairs
    }


def test_race_run_row_adds_the_final_refit_and_flags_what_is_missing():
    from benchmarks.race_targets import run_row

    rec = {
        "task": "svc-t",
        "method": "m",
        "seed": 0,
        "status": "ok",
        "wall": 50.0,
        "n_trials": 7,
        "load_before": 1.0,
        "load_after": 2.5,
        "incumbents": [_inc(2.0, 1), _inc(9.0, 2)],
    }
    row = run_row(rec, _refits((1, 0.80), (2, 0.86)), 0.85, 60.0, 2)
    assert row["final"] == 0.86 and row["ttt"] == 9.0 and row["scored"]
    # the final incumbent is x=2, refit in 20 s
    assert row["refit_seconds"] == 20.0 and row["wall_with_refit"] == 70.0
    assert (row["load_before"], row["load_after"]) == (1.0, 2.5)
    pending = run_row(rec, _refits((1, 0.80)), 0.85, 60.0, 2)
    assert not pending["scored"] and math.isnan(pending["final"])
    failed = run_row({**rec, "status": "failed"}, _refits(), 0.85, 60.0, 2)
    assert failed["final"] == -math.inf and failed["ttt"] == math.inf
    assert failed["scored"]  # a failed run is a finished result


def _cell(finals, ttts, expected=3, scored=True):
    from benchmarks.race_targets import summarise

    rows = [
        {
            "seed": s,
            "final": f,
            "ttt": t,
            "scored": scored,
            **dict.fromkeys(
                ["wall_with_refit", "refit_seconds", "load_before", "load_after"], 1.0
            ),
            "n_trials": 5,
            "status": "ok",
        }
        for s, (f, t) in enumerate(zip(finals, ttts))
    ]
    return summarise(rows, list(range(expected)))


_RACE = ("hb", "halving", "bayes", "fabolas")


def _task_cells(ours_final=0.90, ours_ttt=10.0, halving_ttt=20.0, bayes_ttt=200.0):
    return {
        "hb": _cell([ours_final] * 3, [ours_ttt] * 3),
        "halving": _cell([0.89] * 3, [halving_ttt] * 3),
        "bayes": _cell([0.90] * 3, [bayes_ttt] * 3),
        "fabolas": _cell([0.903, 0.90, 0.91], [30.0] * 3),
    }


def test_race_final_accuracy_target_allows_three_tenths_of_a_point():
    from benchmarks.race_targets import INCOMPLETE, MET, MISSED, final_accuracy_check

    # best other: fabolas, median 0.903
    assert final_accuracy_check(_task_cells(0.9001), _RACE, "hb")[0] == MET
    verdict, figures = final_accuracy_check(_task_cells(0.8999), _RACE, "hb")
    assert verdict == MISSED and "fabolas" in figures and "-0.31 pp" in figures
    cells = _task_cells()
    cells["bayes"] = _cell([0.99] * 2, [1.0] * 2)  # a seed still to run
    assert final_accuracy_check(cells, _RACE, "hb")[0] == INCOMPLETE
    # earlier incumbents' refits pending: the final answers decide (a)
    cells["bayes"] = _cell([0.99] * 3, [1.0] * 3, scored=False)
    assert final_accuracy_check(cells, _RACE, "hb")[0] == MISSED
    cells["bayes"] = _cell([0.99, math.nan, 0.99], [1.0] * 3, scored=False)
    assert final_accuracy_check(cells, _RACE, "hb")[0] == INCOMPLETE
    del cells["bayes"]
    assert final_accuracy_check(cells, _RACE, "hb")[0] == INCOMPLETE


def test_race_time_to_target_targets():
    from benchmarks.race_targets import MET, MISSED, sooner_check

    def check(peer, factor, **kw):
        return sooner_check(_task_cells(**kw), _RACE, "hb", peer, factor)[0]

    assert check("halving", 1.0, ours_ttt=20.0) == MET  # a tie counts
    assert check("halving", 1.0, ours_ttt=20.5) == MISSED
    assert check("bayes", 10.0, ours_ttt=20.0) == MET  # exactly 10x
    assert check("bayes", 10.0, ours_ttt=21.0) == MISSED
    assert check("bayes", 10.0, bayes_ttt=math.inf) == MET
    # never reaching the target is never sooner, even than a peer that never did
    inf = math.inf
    assert check("halving", 1.0, ours_ttt=inf, halving_ttt=inf) == MISSED


def test_race_time_to_target_is_settled_when_most_runs_never_reach_it():
    from benchmarks.race_targets import INCOMPLETE, MISSED, sooner_check

    # pending refits can only raise the target: a fully refit run that never
    # reached it never will
    inf = math.inf
    cells = _task_cells()
    cells["fabolas"] = _cell([0.90] * 3, [30.0] * 3, scored=False)
    cells["hb"] = _cell([0.90] * 3, [inf, inf, 5.0])
    verdict, text = sooner_check(cells, _RACE, "hb", "halving", 1.0)
    assert verdict == MISSED and "2 of 3" in text
    # one settled never of three is not a median
    cells["hb"] = _cell([0.90] * 3, [inf, 5.0, 5.0])
    assert sooner_check(cells, _RACE, "hb", "halving", 1.0)[0] == INCOMPLETE
    # unsettled nevers (their own refits pending) decide nothing
    cells["hb"] = _cell([0.90] * 3, [inf] * 3, scored=False)
    assert sooner_check(cells, _RACE, "hb", "halving", 1.0)[0] == INCOMPLETE
    # a run still to come decides nothing either
    cells["hb"] = _cell([0.90] * 2, [inf] * 2)
    assert sooner_check(cells, _RACE, "hb", "halving", 1.0)[0] == INCOMPLETE


def test_race_verdicts_count_incomplete_tasks_as_unknown_never_as_met():
    from benchmarks.race_targets import INCOMPLETE, MET, MISSED, all_of, at_least

    assert at_least([MET] * 6 + [MISSED] * 2, 6) == MET
    assert at_least([MET] * 5 + [INCOMPLETE] * 3, 6) == INCOMPLETE
    assert at_least([MET] * 5 + [MISSED, MISSED, INCOMPLETE], 6) == INCOMPLETE
    assert at_least([MET] * 5 + [MISSED] * 3, 6) == MISSED
    assert at_least([INCOMPLETE] * 8, 6) == INCOMPLETE
    assert all_of([MET, MET]) == MET
    assert all_of([MET, INCOMPLETE]) == INCOMPLETE
    assert all_of([MISSED, INCOMPLETE]) == MISSED
    assert all_of([]) == INCOMPLETE


def test_race_targets_over_tasks_and_budgets():
    from benchmarks.race_targets import INCOMPLETE, MET, MISSED, evaluate_targets

    counted = [f"svc-{k}" for k in range(8)]
    cells = {}
    for k, task in enumerate(counted):
        # 6 tasks where the default is 20x sooner than bayes, 2 where it is 5x
        cells[(task, 60.0)] = _task_cells(bayes_ttt=200.0 if k < 6 else 50.0)
    # slower than halving on 3 tasks
    for task in counted[:3]:
        cells[(task, 60.0)]["halving"] = _cell([0.89] * 3, [5.0] * 3)
    cells[("hgb-x", 60.0)] = _task_cells(0.5)  # shown for (a), not counted in (b)
    tasks = [*counted, "hgb-x"]
    result = evaluate_targets(cells, tasks, [60.0, 300.0], _RACE, "hb", counted)
    v = result["verdicts"]
    assert v["a"][60.0][0] == MISSED  # hgb-x finishes 40 pp below
    assert result["per_task"][("hgb-x", 60.0)]["a"][0] == MISSED
    assert v["b"][60.0][0] == MISSED and v["b"][60.0][1].startswith("5 met")
    assert v["c"][60.0][0] == MET
    # nothing ran at 300 s: every verdict there is incomplete
    assert all(v[k][300.0][0] == INCOMPLETE for k in "abc")
    assert v["a"]["all"][0] == MISSED
    # a counted task missing a seed leaves (c) one short: incomplete, not met
    cells[(counted[0], 60.0)]["bayes"] = _cell([0.9] * 2, [200.0] * 2)
    v = evaluate_targets(cells, tasks, [60.0], _RACE, "hb", counted)["verdicts"]
    assert v["c"][60.0] == (INCOMPLETE, "5 met, 2 missed, 1 incomplete")
    # and once too few can still meet it, missed
    cells[(counted[1], 60.0)]["bayes"] = _cell([0.9] * 3, [20.0] * 3)
    v = evaluate_targets(cells, tasks, [60.0], _RACE, "hb", counted)["verdicts"]
    assert v["c"][60.0] == (MISSED, "4 met, 3 missed, 1 incomplete")


def test_race_plan_and_dry_run(tmp_path):
    import json

    from benchmarks.race import budget_dir, dry_run, plan

    runs = plan(tmp_path, ["svc-a", "svc-b"], ["m1", "m2"], [60.0, 300.0], [0, 1])
    assert len(runs) == 16
    # task by task, each at every budget, before the next task
    assert [r.task for r in runs[:8]] == ["svc-a"] * 8
    first = runs[0]
    assert first.path == budget_dir(tmp_path, 60.0) / "runs/svc-a/m1-seed0.json"
    first.path.parent.mkdir(parents=True)
    first.path.write_text(json.dumps({"status": "ok"}))
    runs[1].path.write_text(json.dumps({"status": "not available"}))
    lines = dry_run(runs, resume=True)
    assert lines[0].endswith("skip (record: ok)")
    assert lines[1].endswith("run (replaces record: not available)")
    assert lines[-1].startswith("15 of 16 runs to do")
    assert dry_run(runs, resume=False)[-1].startswith("16 of 16")


def test_race_meta_keeps_every_invocation(tmp_path):
    import json

    from benchmarks.race import _merged_meta

    old = {"methods": ["a", "b"], "tasks": ["t1"], "seeds": 3, "availability": {}}
    new = {
        "methods": ["b", "c"],
        "tasks": ["t2"],
        "seeds": 1,
        "availability": {"c": None},
        "command": "new",
    }
    path = tmp_path / "meta.json"
    assert _merged_meta(path, new) == new
    path.write_text(json.dumps(old))
    merged = _merged_meta(path, new)
    assert merged["methods"] == ["a", "b", "c"] and merged["tasks"] == ["t1", "t2"]
    assert merged["seeds"] == 3 and merged["command"] == "new"


def test_race_report_from_a_constructed_folder(tmp_path, monkeypatch):
    import json

    import pandas as pd

    from benchmarks import report
    from benchmarks.race_report import build

    monkeypatch.setattr(report, "_plot", lambda *args, **kwargs: None)
    methods = ["halving-bayes", "halving", "bayes"]
    folder = tmp_path / "budget-60"
    (folder / "runs" / "svc-t").mkdir(parents=True)
    (folder / "refits").mkdir()
    meta = {
        "command": "c",
        "date": "d",
        "cores": 2,
        "machine": "m",
        "versions": {},
        "budget": 60.0,
        "seeds": 1,
        "n_jobs": 2,
        "max_rows": None,
        "methods": methods,
        "availability": dict.fromkeys(methods),
    }
    (folder / "meta.json").write_text(json.dumps(meta))
    info = {"n_search": 90, "n_test": 30, "n_features": 2, "n_classes": 2}
    info.update(classification=True, notes=[], task="svc-t")
    (folder / "runs" / "svc-t" / "task.json").write_text(json.dumps(info))
    # the default reaches 0.90 at 2 s; halving at 8 s; bayes at 40 s
    for method, x, t in [
        ("halving-bayes", 1, 2.0),
        ("halving", 2, 8.0),
        ("bayes", 3, 40.0),
    ]:
        rec = {"task": "svc-t", "method": method, "seed": 0, "status": "ok"}
        rec.update(wall=55.0, n_trials=4, load_before=1.0, load_after=2.0)
        rec["incumbents"] = [_inc(t / 2, 9), _inc(t, x)]
        path = folder / "runs" / "svc-t" / f"{method}-seed0.json"
        path.write_text(json.dumps(rec))
    refits = _refits((9, 0.5), (1, 0.90), (2, 0.90), (3, 0.90))
    (folder / "refits" / "svc-t.json").write_text(json.dumps(refits))

    md = build(
        tmp_path,
        budgets=[60.0],
        tasks=["svc-t"],
        methods=methods,
        seeds=[0],
        recommended="halving-bayes",
        counted_tasks=["svc-t"],
    ).read_text()
    table = pd.read_csv(tmp_path / "race.csv").set_index("method")
    assert table.loc["halving-bayes", "ttt_median"] == 2.0
    assert table.loc["bayes", "final_median"] == pytest.approx(0.90)
    # wall time plus the final incumbent's refit (x=3: 30 s)
    assert table.loc["bayes", "wall_with_refit_median"] == 85.0
    assert table["complete"].all()
    assert "| svc-t | 60 | met: 90.00 % vs halving 90.00 % (+0.00 pp)" in md
    assert "met: 2 s vs halving 8 s (4.00x) | met: 2 s vs bayes 40 s (20.00x)" in md
    # one task of the 8 counted in (b) and (c): met on it, the target still short
    assert "**MISSED** (1 met, 0 missed, 0 incomplete)" in md
    assert (folder / "summary.md").is_file()


def test_throughput_pairs_compare_the_same_number_of_trials():
    from benchmarks.studies.throughput import best_after, pair_row, verdict

    def rec(scores, fractions, wall):
        trials = [
            {"score": s, "fraction": f} for s, f in zip(scores, fractions, strict=True)
        ]
        return {"n_trials": len(trials), "wall": wall, "trials": trials}

    # halving-like: the 0.95 on a small fraction never beats the full-data trials
    trials = rec([0.7, 0.95, 0.8, 0.9], [1.0, 0.1, 1.0, 1.0], 1.0)["trials"]
    assert best_after(trials, 2) == 0.7 and best_after(trials, 4) == 0.9
    assert math.isnan(best_after(trials, 0))
    one = {**rec([0.7, 0.8, np.nan], [1.0] * 3, 10.0), "load_before": 1.0}
    two = {**rec([0.7, 0.75, 0.85, 0.9, 0.95, 0.99], [1.0] * 6, 10.0)}
    one["load_after"] = two["load_before"] = two["load_after"] = 2.0
    row = pair_row(one, two)
    assert row["ratio"] == pytest.approx(2.0) and row["n_compared"] == 3
    # best after 3 trials each: 0.80 against 0.85
    assert row["best_diff"] == pytest.approx(0.05)
    assert verdict([row]) == (True, pytest.approx(2.0), pytest.approx(0.05))
    assert not verdict([{**row, "ratio": 1.7}])[0]
    assert not verdict([{**row, "best_diff": -0.006}])[0]
    # records from before the CPU accounting have none
    assert math.isnan(row["search_ms_1"]) and math.isnan(row["machine_busy_2"])
    two.update(search_cpu=1.5, machine_busy=0.9)
    row = pair_row(one, two)
    assert row["search_ms_2"] == pytest.approx(250.0)  # 1.5 s over six trials
    assert row["machine_busy_2"] == pytest.approx(0.9)


def test_machine_busy_share_from_two_readings():
    from benchmarks import execute

    # all ticks, then idle + iowait: 400 of 1,000 new ticks idle
    assert execute.busy_share((1000, 300), (2000, 700)) == pytest.approx(0.6)
    assert execute.busy_share(None, (2000, 700)) is None
    assert execute.busy_share((2000, 700), (2000, 700)) is None
    ticks = execute.machine_ticks()
    if ticks is not None:  # Linux
        assert ticks[0] >= ticks[1] >= 0


def test_refit_order_puts_every_runs_final_incumbent_first():
    def inc(elapsed, x):
        return {"elapsed": elapsed, "params": {"x": x}, "refit_fraction": 1.0}

    records = [
        {"incumbents": [inc(1.0, "a1"), inc(5.0, "a2"), inc(30.0, "a3")]},
        {"incumbents": [inc(0.5, "b1"), inc(9.0, "b2")]},
        {"status": "failed"},
    ]
    order = [p["x"] for p, _ in refit_order(records)]
    assert order == ["b2", "a3", "b1", "a1", "a2"]


def test_incumbent_replay_raw_rule_lets_a_lead_trial_displace_and_scaled_does_not():
    from benchmarks.refit import incumbent_key
    from benchmarks.studies.incumbent_replay import RawLedger, judge, replay
    from skbayes_search._rungs import RungLedger

    def trial(t, c, rows, score, role):
        return {
            "elapsed": t,
            "params": {"C": c},
            "resource": rows,
            "fraction": rows / 2700,
            "score": score,
            "seconds": 0.1,
            "role": role,
        }

    # rungs of 100, 300, 900 and all 2,700 rows: four configurations on 100
    # rows, two promoted (a gain of 0.1 each), then a lead trial on 900 rows
    run = {
        "trials": [
            trial(1.0, 1.0, 100, 0.50, "new"),
            trial(1.1, 2.0, 100, 0.60, "new"),
            trial(1.2, 3.0, 100, 0.55, "new"),
            trial(1.3, 4.0, 100, 0.58, "new"),
            trial(2.0, 2.0, 300, 0.70, "promoted"),
            trial(2.1, 4.0, 300, 0.68, "promoted"),
            trial(3.0, 9.0, 900, 0.75, "lead"),
        ]
    }
    raw = replay(run, RawLedger)
    scaled = replay(run, RungLedger)
    assert raw[-1][1:] == ({"C": 9.0}, 0.75)
    assert scaled[-1][1:] == ({"C": 2.0}, 0.70)
    scores = {
        incumbent_key({"C": c}, 1.0): {"test_score": s}
        for c, s in [(1.0, 0.60), (2.0, 0.90), (9.0, 0.70)]
    }
    judged = judge(raw, scores, target=85.0, budget=10.0)
    assert judged["ttt"] == 1.1 and judged["final"] == pytest.approx(70.0)
    assert judged["drops"] == 1 and judged["missing"] == []
    # 60 % from 1.0 to 1.1 s, then 90 % to 3.0 s and 70 % to 10 s
    assert judged["mean"] == pytest.approx((0.1 * 60 + 1.9 * 90 + 7 * 70) / 9.0)
    assert judge(scaled, scores, 85.0, 10.0)["drops"] == 0


def test_lead_mean_study_pins_the_loss_gp_mean_at_the_worst_loss():
    import skbayes_search.gp.surrogate as surrogate
    from benchmarks.studies.lead_mean import _loss_surrogate
    from skbayes_search.gp.inference import LogPosterior

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(8, 2))
    y = np.sin(4 * X[:, 0]) + X[:, 1]
    sampled = _loss_surrogate(None, seed=0).fit(X, y)
    pinned = _loss_surrogate(1.0, seed=0).fit(X, y)
    worst = (y.max() - y.mean()) / y.std()
    # the constant mean of every posterior sample, in standardised units
    assert np.allclose(pinned.thetas_[:, 0], worst, atol=0.25)
    assert np.all(np.abs(sampled.thetas_[:, 0] - worst) > 0.5)
    # far from every trial the pinned GP predicts the worst loss
    far = np.array([[3.0, 3.0]])
    assert pinned.predict_mean(far).mean() > y.max() - 0.3 * y.std()
    assert sampled.predict_mean(far).mean() < y.max() - 0.5 * y.std()
    # the library's posterior is back in place after the fit
    assert surrogate.LogPosterior is LogPosterior


def test_every_method_builds_a_search_with_valid_parameters():
    # the smoke run skips the default's variants, so a renamed option of
    # theirs must fail here
    from sklearn.datasets import make_classification

    from benchmarks.methods import MAIN, METHODS, VARIANTS, BuildContext, availability
    from benchmarks.tasks import ESTIMATORS, Task

    X, y = make_classification(n_samples=60, random_state=0)
    task = Task("svc-made", "made", True, ESTIMATORS["svc"], X, y, X, y)
    assert VARIANTS and set(MAIN) | set(VARIANTS) == set(METHODS)
    assert "halving-bayes" in MAIN and not set(MAIN) & set(VARIANTS)
    halving = {"n_candidates": "exhaust", "min_resources": "exhaust"}
    sizing = {"random_n_iter": 3, "grid_points": 2, "halving": halving}
    ctx = BuildContext(task, budget=5.0, seed=0, n_jobs=1, sizing=sizing)
    built = 0
    for name, method in METHODS.items():
        if availability(name) is not None:
            continue
        search, _, _ = method.build(ctx)
        if hasattr(search, "_parameter_constraints"):
            search._validate_params()
        built += 1
    assert built >= len(MAIN) - 3  # the optional peers may be missing


def test_subset_failures_study_tables_answers_and_errors():
    from benchmarks.studies.subset_failures import CASES, table

    est, space, grid, X, y = CASES["pca"]()
    assert est.steps[0][0] == "pca"
    assert set(space) == set(grid) == {"pca__n_components"}
    assert len(X) == len(y) == 6000
    rows = [
        {"case": "pca", "method": "halving", "seed": 2, "error": "All the 5 trials"},
        {
            "case": "knn",
            "method": "grid",
            "seed": 0,
            "answer": {"n_neighbors": 20},
            "cv": 0.782,
            "trials": 8,
            "nan": 0,
            "rows": 4000,
            "seconds": 1.7,
        },
    ]
    lines = table(rows).splitlines()
    assert lines[2].startswith("| pca | halving | 2 | error: All the 5 trials")
    assert lines[3] == "| knn | grid | 0 | 20 | 0.7820 | 0 / 8 | 4000 | 2 |"


def test_tradeoff_proposal_study_times_each_proposal_with_or_without_bound():
    from sklearn.datasets import make_classification
    from sklearn.svm import SVC

    import skbayes_search.strategies.tradeoff as module
    from benchmarks.studies.tradeoff_proposal import (
        SPACE,
        _without_bound,
        proposal_seconds,
    )
    from skbayes_search import TradeoffBayesSearchCV

    X, y = make_classification(120, 4, random_state=0)
    search = TradeoffBayesSearchCV(
        SVC(), SPACE, n_iter=6, cv=2, hyperparameter_sampling="map", random_state=0
    )
    # every proposal after the three design trials is timed; one job runs
    # one trial at a time
    seconds, pending, whole = proposal_seconds(search, X, y)
    assert seconds.size == pending.size == 3
    assert not pending.any()
    assert whole >= seconds.sum()

    make = module.make_tradeoff_acquisition

    def bounded(*args, **kwargs):
        func = lambda U: U[:, 0]  # noqa: E731
        func.upper_bound = lambda U: U[:, 0] + 1.0
        return func

    module.make_tradeoff_acquisition = bounded
    try:
        with _without_bound():
            acq = module.make_tradeoff_acquisition()
            assert not hasattr(acq, "upper_bound")
            assert acq(np.ones((2, 1))).tolist() == [1.0, 1.0]
        assert hasattr(module.make_tradeoff_acquisition(), "upper_bound")
    finally:
        module.make_tradeoff_acquisition = make
