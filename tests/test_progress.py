"""Progress reporting: a tqdm bar at verbose=1, printed lines otherwise."""

import sys

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.tree import DecisionTreeClassifier

from skbayes_search import BayesSearchCV, Integer, MultiStageBayesSearchCV

X, y = load_iris(return_X_y=True)


def _search(verbose):
    return BayesSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": Integer(1, 6)},
        n_iter=4,
        n_initial_points=2,
        cv=3,
        verbose=verbose,
        random_state=0,
    )


def test_verbose_1_shows_a_bar_over_the_budget(capsys):
    pytest.importorskip("tqdm")
    _search(1).fit(X, y)
    out, err = capsys.readouterr()
    assert "4/4" in err and "BayesSearchCV" in err and "best=" in err
    assert "trial 1/4" not in out


def test_verbose_1_without_tqdm_prints_one_line_per_trial(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    _search(1).fit(X, y)
    out, _ = capsys.readouterr()
    assert [line.split()[2] for line in out.splitlines() if "trial" in line] == [
        "1/4",
        "2/4",
        "3/4",
        "4/4",
    ]


def test_verbose_2_prints_lines_and_no_bar(capsys):
    _search(2).fit(X, y)
    out, err = capsys.readouterr()
    assert sum("] trial " in line for line in out.splitlines()) == 4
    assert "4/4 [" not in err


def test_verbose_0_is_silent(capsys):
    _search(0).fit(X, y)
    out, err = capsys.readouterr()
    assert out == "" and "4/4" not in err


def test_bar_with_parallel_workers(capsys):
    # the bar stays in the parent process: the workers' fits must not
    # receive it (a tqdm bar does not unpickle)
    pytest.importorskip("tqdm")
    search = _search(1).set_params(n_jobs=2, asynchronous=False).fit(X, y)
    _, err = capsys.readouterr()
    assert "4/4" in err
    assert search.cv_results_["params"] == _search(0).fit(X, y).cv_results_["params"]


def test_the_best_shown_compares_trials_on_the_same_rows(capsys):
    # a score on a subset does not compare with one on all rows: until a
    # trial has run on every training row, the best says on how many it is
    search = MultiStageBayesSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": Integer(1, 6)},
        stages=(0.3, 1.0),
        n_iter=(4, 2),
        top_k=2,
        n_initial_points=2,
        cv=3,
        verbose=2,
        random_state=0,
    ).fit(X, y)
    lines = [
        line for line in capsys.readouterr().out.splitlines() if "] trial " in line
    ]
    res = search.cv_results_
    subset = res["resource_fraction"] < 1.0
    for k, line in enumerate(lines):
        best = line.split(" best=")[1].split(" elapsed=")[0]
        done = np.arange(len(lines)) <= k
        if (done & ~subset).any():
            expected = res["mean_test_score"][done & ~subset].max()
            assert best == f"{expected:.5g}"
        else:
            rows = res["n_resources"][done].max()
            assert best == f"{res['mean_test_score'][done].max():.5g} on {rows} rows"
    assert subset[0] and not subset[-1]
