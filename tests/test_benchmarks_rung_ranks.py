"""The rung-ranking study: per-rung agreement with all-data test accuracy."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.refit import incumbent_key
from benchmarks.studies.rung_ranks import main, rung_table, wanted


def _trial(a: float, rows: int, score: float) -> dict:
    return {"params": {"a": a}, "resource": rows, "score": score, "elapsed": 0.0}


def _scores(tests: dict[float, float]) -> dict:
    return {
        incumbent_key({"a": a}, 1.0): {"test_score": t, "fit_seconds": 1.0}
        for a, t in tests.items()
    }


def _run(seed: int = 0) -> dict:
    return {
        "seed": seed,
        "trials": [
            # 100 rows ranks the settings backwards, 300 rows as all data does
            _trial(1.0, 100, 0.9),
            _trial(2.0, 100, 0.8),
            _trial(3.0, 100, 0.7),
            _trial(4.0, 100, float("nan")),  # failed: left out
            _trial(1.0, 300, 0.6),
            _trial(2.0, 300, 0.7),
            _trial(3.0, 300, 0.8),
            _trial(5.0, 30, 0.5),  # below min_rows
        ],
    }


def test_rung_table_orders_and_best() -> None:
    scores = _scores({1.0: 0.70, 2.0: 0.80, 3.0: 0.85, 5.0: 0.1})
    table = rung_table(_run(), scores, min_rows=100)
    assert [r["rows"] for r in table] == [100, 300]
    low, high = table
    assert low["n"] == 3 and high["n"] == 3
    assert low["tau"] == pytest.approx(-1.0)
    assert high["tau"] == pytest.approx(1.0)
    # the 100-row rung's best trial is the worst setting on all data
    assert low["best_test"] == pytest.approx(0.70)
    assert low["max_test"] == pytest.approx(0.85)
    assert high["best_test"] == pytest.approx(0.85)


def test_rung_without_every_refit_is_left_out() -> None:
    scores = _scores({1.0: 0.70, 2.0: 0.80})  # 3.0 not refit
    assert rung_table(_run(), scores, min_rows=100) == []
    two = _scores({1.0: 0.70, 2.0: 0.80, 3.0: 0.85})
    run = {"seed": 0, "trials": _run()["trials"][:2]}
    (row,) = rung_table(run, two, min_rows=100)
    assert row["n"] == 2 and math.isnan(row["tau"])


def test_wanted_lists_each_missing_setting_once() -> None:
    scores = _scores({2.0: 0.80})
    todo = wanted([_run(0), _run(1)], scores, min_rows=100)
    assert [p["a"] for p, f in todo] == [1.0, 3.0]  # 4.0 failed
    assert all(f == 1.0 for _, f in todo)


def test_main_reads_folder_and_cache(tmp_path, capsys) -> None:
    runs = tmp_path / "race" / "budget-60" / "runs" / "svc-x"
    runs.mkdir(parents=True)
    (runs / "halving-bayes-seed0.json").write_text(json.dumps(_run(0)))
    (runs / "halving-bayes-seed0.spec.json").write_text("{}")
    cache = tmp_path / "cache"
    cache.mkdir()
    scores = _scores({1.0: 0.70, 2.0: 0.80, 3.0: 0.85, 4.0: 0.5})
    (cache / "svc-x.json").write_text(json.dumps(scores))
    argv = ["--folder", str(tmp_path / "race"), "--budget", "60", "--task", "svc-x"]
    assert main([*argv, "--cache", str(cache), "--min-rows", "100"]) == 0
    out = capsys.readouterr().out
    assert "| 0 | 100 | 3 | -1.00 | 70.00 | 85.00 |" in out
    assert "| 0 | 300 | 3 | 1.00 | 85.00 | 85.00 |" in out


def test_main_refuses_archived_runs(tmp_path) -> None:
    runs = tmp_path / "race" / "budget-60" / "runs" / "svc-x"
    runs.mkdir(parents=True)
    (runs / "halving-bayes-seed0.json").write_text(json.dumps({"seed": 0}))
    argv = ["--folder", str(tmp_path / "race"), "--budget", "60", "--task", "svc-x"]
    with pytest.raises(SystemExit, match="hold no trials"):
        main([*argv, "--cache", str(tmp_path / "c")])
    with pytest.raises(SystemExit, match="no halving-bayes-x runs"):
        main([*argv, "--cache", str(tmp_path / "c"), "--method", "halving-bayes-x"])
