"""The report code of benchmarks.papers.transfer: ranks, spreads and tests (no fits)."""

import numpy as np
import pandas as pd
import pytest

from benchmarks.papers.transfer import (
    build_report,
    method_ranks,
    order_summary,
    paired_tests,
)


def _searches(values):
    """One row per (method, order, dataset) from {method: [[per dataset] per order]}."""
    return pd.DataFrame(
        [
            {"method": m, "order": o, "dataset": f"d{d}", "dev": v}
            for m, per_order in values.items()
            for o, row in enumerate(per_order)
            for d, v in enumerate(row)
        ]
    )


def test_ranks_are_per_pair_best_first_and_ties_share():
    frame = _searches({"a": [[0.9, 0.5]], "b": [[0.8, 0.5]], "c": [[0.7, 0.6]]})
    ranks = method_ranks(frame, "dev", ["a", "b", "c"])
    assert ranks.loc[(0, "d0")].tolist() == [1.0, 2.0, 3.0]
    assert ranks.loc[(0, "d1")].tolist() == [2.5, 2.5, 1.0]


def test_pairs_missing_a_method_are_left_out():
    frame = _searches({"a": [[0.9, 0.5]], "b": [[0.8, np.nan]]})
    ranks = method_ranks(frame, "dev", ["a", "b"])
    assert list(ranks.index) == [(0, "d0")]


def test_order_summary_spreads_over_orders_not_pairs():
    # a wins both pairs of order 0 and loses both of order 1: mean rank 1.5,
    # per-order means 1 and 2, so the sd over orders is that of (1, 2)
    frame = _searches({"a": [[1, 1], [0, 0]], "b": [[0, 0], [1, 1]]})
    summary = order_summary(method_ranks(frame, "dev", ["a", "b"]))
    assert summary.loc["a", "mean"] == pytest.approx(1.5)
    assert summary.loc["a", "sd"] == pytest.approx(np.std([1, 2], ddof=1))
    assert summary.loc["a", "n_orders"] == 2


def test_paired_tests_are_one_sided_for_mkl():
    rng = np.random.default_rng(0)
    good = rng.uniform(0.8, 0.9, size=(4, 6))
    frame = _searches({"mkl": good, "indep": good - 0.1, "bayes": good + 0.1})
    tests = paired_tests(method_ranks(frame, "dev", ["bayes", "indep", "mkl"]))
    # mkl beats indep on all 24 pairs, loses to bayes on all of them
    assert tests.loc["indep", "wins"] == 24 and tests.loc["indep", "losses"] == 0
    assert tests.loc["indep", "wilcoxon_p"] < 1e-4
    assert tests.loc["bayes", "wilcoxon_p"] > 0.99
    assert tests.loc["indep", "mean_diff"] == pytest.approx(-1.0)
    # every order differs by the same rank: t is infinite, one way or the other
    assert tests.loc["indep", "ttest_p"] == 0.0
    assert tests.loc["bayes", "ttest_p"] == 1.0


def test_paired_t_test_runs_over_orders():
    # mkl wins orders 0 and 1 on both data sets, and order 2 on one of them
    frame = _searches(
        {
            "mkl": [[0.9, 0.9], [0.9, 0.9], [0.9, 0.1]],
            "indep": [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]],
        }
    )
    tests = paired_tests(method_ranks(frame, "dev", ["indep", "mkl"]))
    # per-order mean rank differences -1, -1, 0: t = -2 on 2 degrees of freedom
    assert tests.loc["indep", "ttest_p"] == pytest.approx(0.0918, abs=1e-3)
    assert tests.loc["indep", "n_pairs"] == 6


def test_report_builds_from_records_with_partial_orders():
    def record(method, order, position, scores, test):
        return {
            "method": method,
            "order": order,
            "position": position,
            "dataset": f"d{position}",
            "scores": scores,
            "params": [{} for _ in scores],
            "test_score": test,
            "loadavg": [2.0, 2.0, 2.0],
            "seconds": 1.0,
        }

    records = [
        record("mkl", 0, 0, [0.5, 0.9], 0.8),
        record("indep", 0, 0, [0.6, 0.7], 0.7),
        record("mkl", 0, 1, [0.8, 0.8], 0.9),
        record("indep", 0, 1, [0.7, 0.9], 0.6),
        # order 1 stopped after mkl's first search: that pair is not ranked
        record("mkl", 1, 0, [0.1, 0.2], 0.2),
    ]
    report = build_report(records, 2, ["- header"])
    assert "2 complete (order, data set) pairs over 2 orders" in report
    # test ranks: mkl better on both pairs
    assert "| indep | test | -1.00 | 2 / 0 / 2 |" in report
    assert "| indep | dev | +0.00 | 1 / 1 / 2 |" in report
