"""The Snoek et al. reproduction's report on constructed records (no fits)."""

import math

import numpy as np

from benchmarks.papers.snoek_report import (
    build_report,
    evaluations_row,
    incumbent_curve,
    seconds_to,
    sign_test,
    task_target,
    time_row,
    wins,
    workers_row,
)


def _record(scores, times, load=(1.0, 2.0)):
    trials = [
        {"elapsed": t, "score": s, "fraction": 1.0} for s, t in zip(scores, times)
    ]
    return {
        "status": "ok",
        "trials": trials,
        "n_trials": len(trials),
        "wall": times[-1] + 1.0,
        "load_before": load[0],
        "load_after": load[1],
    }


def test_incumbent_curve_and_time_to_target():
    rec = _record([0.70, 0.80, 0.75, np.nan, 0.90], [1.0, 2.0, 3.0, 4.0, 5.0])
    times, values = incumbent_curve(rec["trials"])
    np.testing.assert_allclose(times, [1.0, 2.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(values, [0.70, 0.80, 0.80, 0.80, 0.90])
    assert seconds_to(rec, 0.80) == 2.0
    assert seconds_to(rec, 0.95) == math.inf
    # The target sits 0.5 pp below the best score of any run.
    other = _record([0.91], [1.0])
    assert math.isclose(task_target([rec, other]), 0.905)


def test_wins_treats_rounding_as_a_tie():
    assert wins([0.01, 1e-12, -0.02, -1e-15, 0.03]) == "2/2/1"


def test_sign_test_counts_untied_seeds():
    # 5 of 5 one way: p = 2 / 32; ties and NaN are left out.
    assert sign_test([0.1] * 5 + [0.0, np.nan]) == "5/1/0 of 6 (sign test p = 0.062)"
    assert sign_test([]).endswith("(sign test p = 1)")


def test_evaluations_compare_at_the_shared_trial_count():
    # MCMC finds 0.9 at its third trial; MAP only at its fifth; N = 3.
    recs = {
        "ei-mcmc": {0: _record([0.5, 0.6, 0.9], [1, 2, 3])},
        "ei-map": {0: _record([0.5, 0.7, 0.8, 0.8, 0.95], [1, 2, 3, 4, 5])},
    }
    row = evaluations_row(recs)
    assert row["n"] == 3
    assert row["mcmc"] == "90.00" and row["map"] == "80.00"
    assert row["diff"] == "+10.00" and row["wins"] == "1/0/0"
    assert row["load"] == "1.0-2.0"
    early = evaluations_row(recs, 2)
    assert early["n"] == 2 and early["diff"] == "-10.00" and early["wins"] == "0/0/1"
    assert evaluations_row(recs, 4) is None
    assert evaluations_row({"ei-mcmc": recs["ei-mcmc"]}) is None


def test_time_row_reads_the_step_functions():
    recs = {
        "ei-mcmc": {0: _record([0.80, 0.906], [10.0, 30.0])},
        "eips-mcmc": {0: _record([0.85, 0.88, 0.91], [2.0, 4.0, 8.0])},
    }
    target = task_target([r for v in recs.values() for r in v.values()])
    row = time_row(recs, target, budget=40.0)
    assert row["ttt_ei"] == "30 (1/1)" and row["ttt_eips"] == "8 (1/1)"
    assert row["half_ei"] == "80.00" and row["half_eips"] == "91.00"
    assert row["trials"] == "2 / 3"


def test_workers_row_pairs_seeds():
    one = {s: _record([0.8, 0.85], [4.0, 9.0]) for s in (0, 1)}
    two = {s: _record([0.8, 0.84, 0.86, 0.87], [2.0, 4.0, 7.0, 9.0]) for s in (0, 1)}
    row = workers_row({"ei-mcmc": one, "ei-mcmc-2w": two})
    # 2 trials in 10 s against 4 in 10 s; best after 2 trials 85 vs 84.
    assert row["ratio"] == "2.00" and row["n"] == "2"
    assert row["diff"] == "-1.00" and row["wins"] == "0/0/2"


def test_report_has_a_row_per_task_and_the_papers_results():
    recs = {
        "ei-mcmc": {0: _record([0.8, 0.9], [1.0, 2.0])},
        "ei-map": {0: _record([0.8, 0.85], [1.0, 2.0])},
        "eips-mcmc": {0: _record([0.8, 0.9], [1.0, 2.0])},
        "ei-mcmc-2w": {0: _record([0.8, 0.9], [0.5, 1.0])},
    }
    meta = {"command": "c", "date": "d", "cores": 2, "machine": "m"}
    meta.update(max_rows=100, seeds=1, budget=4.0)
    text = build_report({"svc-a": recs, "svc-b": recs}, meta)
    assert text.count("| svc-a |") == 3 and text.count("| svc-b |") == 3
    assert "| 3a |" in text and "14.98" in text
