"""The report arithmetic of the subset papers' scripts (000 multi-stage, 003
trade-off) on constructed records with known answers. No search is run here:
``--quick`` is the smoke run of each script."""

import math

import pytest

from benchmarks.papers import _subset_baselines as sb
from benchmarks.papers import multistage, tradeoff


def _inc(elapsed, test_score, fit_seconds=1.0, fraction=1.0):
    return {
        "elapsed": elapsed,
        "test_score": test_score,
        "fit_seconds": fit_seconds,
        "refit_fraction": fraction,
        "params": {},
    }


def test_anytime_mean_leaves_out_points_before_the_first_answer():
    incumbents = [_inc(1.0, 0.6), _inc(5.0, 0.8)]
    mean, missing = sb.anytime_mean(incumbents, [0.5, 2.0, 6.0, 10.0])
    # 0.5 s: no answer yet; 2 s: 0.6; 6 s and 10 s: 0.8 (a run keeps its answer)
    assert missing == 1
    assert mean == pytest.approx((0.6 + 0.8 + 0.8) / 3)


def test_anytime_mean_without_any_answer_is_nan():
    mean, missing = sb.anytime_mean([], [1.0, 2.0])
    assert math.isnan(mean) and missing == 2


def test_mean_sd_ignores_nan_and_formats():
    assert sb.mean_sd([1.0, 3.0, math.nan]) == pytest.approx((2.0, math.sqrt(2.0)))
    assert sb.fmt_mean_sd([0.5]) == "0.5000"
    assert sb.fmt_mean_sd([1.0, 3.0], 1) == "2.0 ± 1.4"
    assert sb.fmt_mean_sd([math.nan]) == "-"


def test_markdown_table_has_a_row_per_entry():
    text = sb.markdown_table(["a", "b"], [[1, 2], [3, 4]])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| 1 | 2 |", "| 3 | 4 |"]


def _record(method, seed, wall, incumbents, **extra):
    return {
        "method": method,
        "seed": seed,
        "wall_s": wall,
        "n_trials": 10,
        "incumbents": incumbents,
        "final": incumbents[-1],
        "loadavg_start": [1.0, 1.0, 1.0],
        "loadavg_end": [2.0, 2.0, 2.0],
        "settings": {},
        **extra,
    }


def test_multistage_reads_every_method_of_a_seed_on_the_slowest_runs_grid():
    # seed 0: the full run takes 100 s, so both runs are read at 10, 20, ... 100 s
    fast = _record("multistage", 0, 20.0, [_inc(15.0, 0.9)])
    slow = _record("bayes-full", 0, 100.0, [_inc(55.0, 0.7)])
    rows = {r["record"]["method"]: r for r in multistage.seed_rows([fast, slow])}
    assert rows["multistage"]["missing"] == 1  # 10 s is before its first answer
    assert rows["multistage"]["anytime"] == pytest.approx(0.9)
    assert rows["bayes-full"]["missing"] == 5  # 10..50 s
    assert rows["bayes-full"]["anytime"] == pytest.approx(0.7)


def test_tradeoff_summary_averages_the_alphas_and_divides_by_full_data_bo():
    recs = [
        _record("bayes-full", 0, 1.0, [_inc(1.0, 0.80, fit_seconds=2.0)]),
        _record(
            "bayes-subset30",
            0,
            1.0,
            [_inc(1.0, 0.76, fit_seconds=2.0)],
            final_on_subset={"test_score": 0.72, "fit_seconds": 0.5},
        ),
        _record("tradeoff-a0.1", 0, 1.0, [_inc(1.0, 0.78, fit_seconds=1.0)]),
        _record(
            "tradeoff-a0.9",
            0,
            1.0,
            [_inc(1.0, 0.74, fit_seconds=0.2, fraction=0.2)],
        ),
        # a seed without its full-data baseline has nothing to divide by
        _record("tradeoff-a0.1", 1, 1.0, [_inc(1.0, 0.5)]),
    ]
    # the median of the timed fits is the training time
    recs[2]["final"]["fit_seconds_all"] = [1.0, 9.0, 0.6]
    (row,) = tradeoff.seed_summary(recs)
    assert row["tradeoff"]["n"] == 2
    assert row["tradeoff"]["acc"] == pytest.approx(0.76)
    assert row["tradeoff"]["sec"] == pytest.approx((1.0 + 0.2) / 2)
    assert row["tradeoff"]["acc_ratio"] == pytest.approx(0.76 / 0.80)
    assert row["tradeoff"]["time_ratio"] == pytest.approx(0.6 / 2.0)
    assert row["subset"]["acc_ratio"] == pytest.approx(0.95)
    assert row["subset_trained_on_subset"]["time_ratio"] == pytest.approx(0.25)
