"""Progress reporting: a tqdm bar at verbose=1, printed lines otherwise."""

import sys

import pytest
from sklearn.datasets import load_iris
from sklearn.tree import DecisionTreeClassifier

from skbayes_search import BayesSearchCV, Integer

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
