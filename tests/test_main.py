"""The main job's command line (``python -m skbayes_search``)."""

import math
import re
import subprocess
import sys

import pytest

from skbayes_search import _demo
from skbayes_search.__main__ import build_parser
from skbayes_search._base import NoTrialFinishedError
from skbayes_search._demo import conclude, halving_seconds, size_peers


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--n-rows", "-5"),
        ("--n-rows", "10"),
        ("--n-rows", "100000"),
        ("--n-rows", "many"),
        ("--n-iter", "0"),
        ("--n-jobs", "0"),
        ("--budget", "0"),
        ("--budget", "-3"),
        ("--budget", "inf"),
        ("--seed", "-1"),
    ],
)
def test_bad_arguments_exit_2_naming_the_parameter(flag, value, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([flag, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert flag in err
    assert "Traceback" not in err


def test_bad_argument_from_the_command_line_has_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "skbayes_search", "--n-iter", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "--n-iter" in proc.stderr and "at least 1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--budget", "--n-rows", "--n-jobs", "--seed", "--quiet", "--out"):
        assert flag in out
    assert "(default: 30.0)" in out


def test_peers_are_sized_to_the_budget():
    # 1 s per fit on all rows, time linear in the rows, 2 workers, 3 folds.
    n_iter, n_candidates = size_peers(30, 9000, 1.0, 1.0, 2, cap=10_000)
    assert n_iter == int(30 * 2 / (3 * 1.02))
    assert halving_seconds(n_candidates, 9000, 1.0, 1.0, 2) <= 30
    assert n_candidates > 3
    assert halving_seconds(n_candidates, 9000, 1.0, 1.0, 2) > 15
    assert size_peers(30, 9000, 1.0, 1.0, 2, cap=5) == (5, 5)


def _row(method, test):
    return dict(method=method, best_cv=test, test=test, trials=5, wall=30.0)


@pytest.mark.parametrize(
    "ours, peer, start",
    [(0.90, 0.85, "We won"), (0.85, 0.90, "We lost"), (0.871, 0.870, "A tie")],
)
def test_the_verdict_follows_the_numbers(ours, peer, start):
    rows = [
        _row("BayesSearchCV", ours),
        _row("FabolasSearchCV", ours - 0.01),
        _row("RandomizedSearchCV", peer),
        _row("HalvingRandomSearchCV", peer - 0.01),
    ]
    assert conclude(rows, 4755).startswith(start)


def test_a_tiny_run_completes_and_writes_its_table(tmp_path):
    out = tmp_path / "demo"
    cmd = [sys.executable, "-m", "skbayes_search", "--budget", "3", "--n-rows", "600"]
    proc = subprocess.run(
        [*cmd, "--quiet", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    table = (out / "results.md").read_text()
    for method in (
        "BayesSearchCV",
        "HalvingBayesSearchCV",
        "FabolasSearchCV",
        "RandomizedSearchCV",
        "HalvingRandomSearchCV",
    ):
        assert f"| {method} |" in table
        assert f"| {method} |" in proc.stdout
    assert (out / "results.csv").exists()


def test_a_method_without_a_finished_trial_is_a_row_not_a_crash(
    tmp_path, monkeypatch, capsys
):
    # A slow or busy machine: a fit on all rows outlasts the budget, and the
    # search ends at max_time with nothing to report.
    class Late(_demo.BayesSearchCV):
        def fit(self, X, y=None, **params):
            raise NoTrialFinishedError("No trial finished within max_time")

    monkeypatch.setattr(_demo, "BayesSearchCV", Late)
    rows = _demo.run(budget=1, n_rows=600, n_jobs=1, quiet=True, out=tmp_path)
    by_method = {r["method"]: r for r in rows}
    assert len(by_method) == 5
    late = by_method["BayesSearchCV"]
    assert late["trials"] == 0 and math.isnan(late["test"])
    # the peers have no time limit: they always finish (our other searches
    # may not, on a busy machine, in 1 s)
    assert by_method["RandomizedSearchCV"]["trials"] > 0
    assert by_method["HalvingRandomSearchCV"]["trials"] > 0
    out = capsys.readouterr().out
    assert "| BayesSearchCV | - | - | 0 |" in out
    named = [line for line in out.splitlines() if "finished no trial" in line]
    assert len(named) == 1 and re.search(r"(^| )BayesSearchCV ", named[0])
    assert (tmp_path / "results.md").exists()


def test_the_verdict_names_methods_without_a_result():
    nan = math.nan
    rows = [
        dict(method="BayesSearchCV", best_cv=nan, test=nan, trials=0, wall=31.0),
        _row("FabolasSearchCV", 0.85),
        _row("RandomizedSearchCV", 0.90),
    ]
    verdict = conclude(rows, 4755)
    assert verdict.startswith("We lost")
    assert "BayesSearchCV finished no trial within the budget" in verdict
    rows = [
        dict(method=m, best_cv=nan, test=nan, trials=0, wall=31.0)
        for m in ("BayesSearchCV", "FabolasSearchCV")
    ] + [_row("RandomizedSearchCV", 0.90)]
    verdict = conclude(rows, 4755)
    assert verdict.startswith("No comparison")
    assert "BayesSearchCV and FabolasSearchCV finished no trial" in verdict
