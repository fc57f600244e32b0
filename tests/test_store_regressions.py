"""The silent failures of a store, each as a regression test.

Written against behaviour only (public classes, ``ValueError`` /
``RuntimeError``), so that each fails on the store before these checks existed:
resuming a run on other data or other CV splits, two searches writing one run,
parameters edited in the file reaching ``best_params_``, bare ``sqlite3`` and
``json`` errors.
"""

import json
import os
import sqlite3

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skbayes_search import BayesSearchCV, Real
from skbayes_search.storage import TrialStore

X1, Y1 = make_classification(n_samples=60, n_features=4, random_state=0)
X2, Y2 = make_classification(n_samples=60, n_features=4, random_state=1)


class Counted(ClassifierMixin, BaseEstimator):
    """Counts its fits in a class attribute (n_jobs=1 keeps it in-process)."""

    n_fits = 0

    def __init__(self, a=0.5):
        self.a = a

    def fit(self, X, y):
        type(self).n_fits += 1
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    def score(self, X, y):
        return -((self.a - 0.3) ** 2)


def _search(path, n_iter=3, cv=3, estimator=None, **kwargs):
    return BayesSearchCV(
        Counted() if estimator is None else estimator,
        {"a": Real(0.0, 1.0)},
        n_iter=n_iter,
        n_initial_points=3,
        hyperparameter_sampling="map",
        cv=cv,
        random_state=0,
        store=path,
        run_name="run",
        **kwargs,
    )


def _n_trials(path):
    store = TrialStore(path)
    return len(store.trials(store.run_id("run")))


@pytest.mark.parametrize("n_iter", [3, 5])
def test_resuming_on_other_data_is_refused_before_any_fit(tmp_path, n_iter):
    # Before: the old trials and best_score_ came back (n_iter=3), or both
    # datasets were mixed in one cv_results_ (n_iter=5).
    path = str(tmp_path / "s.sqlite")
    _search(path).fit(X1, Y1)
    Counted.n_fits = 0
    with pytest.raises(ValueError, match=r"(?s)'run'.*s\.sqlite.*data X"):
        _search(path, n_iter=n_iter).fit(X2, Y2)
    assert Counted.n_fits == 0
    assert _n_trials(path) == 3
    # the same data resumes
    assert len(_search(path, n_iter=4).fit(X1, Y1).cv_results_["params"]) == 4


def test_resuming_with_other_targets_is_refused(tmp_path):
    path = str(tmp_path / "s.sqlite")
    _search(path).fit(X1, Y1)
    with pytest.raises(ValueError, match="targets y"):
        _search(path).fit(X1, 1 - Y1)


def test_resuming_with_other_cv_is_refused_and_leaves_the_run_intact(tmp_path):
    # Before: a row of 5 folds was written, then every resume failed with
    # "cannot reshape array of size 23 into shape (7,5)".
    path = str(tmp_path / "s.sqlite")
    _search(path, cv=3).fit(X1, Y1)
    Counted.n_fits = 0
    with pytest.raises(ValueError, match="CV splits"):
        _search(path, n_iter=4, cv=5).fit(X1, Y1)
    assert Counted.n_fits == 0
    assert _n_trials(path) == 3
    search = _search(path, n_iter=4, cv=3).fit(X1, Y1)
    assert len(search.cv_results_["params"]) == 4


def test_resuming_with_other_scoring_or_estimator_settings_is_refused(tmp_path):
    path = str(tmp_path / "s.sqlite")

    def search(estimator, scoring):
        return BayesSearchCV(
            estimator,
            {"C": Real(1e-2, 1e2, prior="log-uniform")},
            n_iter=3,
            n_initial_points=3,
            cv=3,
            scoring=scoring,
            random_state=0,
            store=path,
            run_name="run",
        )

    search(LogisticRegression(), "accuracy").fit(X1, Y1)
    with pytest.raises(ValueError, match="scoring"):
        search(LogisticRegression(), "roc_auc").fit(X1, Y1)
    with pytest.raises(ValueError, match="estimator"):
        search(LogisticRegression(tol=0.1), "accuracy").fit(X1, Y1)
    # the searched parameter's own default does not matter
    search(LogisticRegression(C=5.0), "accuracy").set_params(n_iter=4).fit(X1, Y1)


def test_resuming_with_other_n_jobs_is_not_refused(tmp_path):
    path = str(tmp_path / "s.sqlite")
    _search(path, n_jobs=1).fit(X1, Y1)
    with parallel_backend("threading", n_jobs=2):
        search = _search(path, n_iter=4, n_jobs=2).fit(X1, Y1)
    assert len(search.cv_results_["params"]) == 4


def test_a_second_search_on_a_held_run_is_refused(tmp_path):
    # Before: both searches ran their full budget into one run. A lease row
    # of a live search elsewhere holds the run.
    path = str(tmp_path / "s.sqlite")
    _search(path).fit(X1, Y1)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO leases VALUES (1, 'other', 'another-host', 1, 1, "
            "'exclusive', 0, 1e12)"
        )
    conn.close()
    Counted.n_fits = 0
    with pytest.raises(RuntimeError, match=r"(?s)'run'.*s\.sqlite.*held"):
        _search(path, n_iter=6).fit(X1, Y1)
    assert Counted.n_fits == 0
    assert _n_trials(path) == 3


def _edit_first_trial(path, column, value):
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE trials SET {column} = ? WHERE trial_index = 0", (value,))
    conn.close()


def test_an_edited_pipeline_memory_never_reaches_best_params(tmp_path):
    # Before: a "memory" path written into a row became best_params_ and the
    # refit pipeline cached (and read) pickles there.
    path = str(tmp_path / "s.sqlite")
    pipe = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression())])

    def search():
        return BayesSearchCV(
            pipe,
            {"clf__C": Real(1e-2, 1e2, prior="log-uniform")},
            n_iter=3,
            n_initial_points=3,
            cv=3,
            random_state=0,
            store=path,
            run_name="run",
        )

    search().fit(X1, Y1)
    cache = str(tmp_path / "cache")
    _edit_first_trial(path, "params", json.dumps({"clf__C": 1.0, "memory": cache}))
    with pytest.raises(ValueError, match=r"(?s)s\.sqlite.*'run'.*trial 0.*memory"):
        search().fit(X1, Y1)
    assert not os.path.exists(cache)


@pytest.mark.parametrize(
    "params, match",
    [
        ('{"a": 7.5}', "a=7.5"),
        ('{"a": "0.5"}', "a='0.5'"),
        ('{"a": 0.5, "b": 1}', "unknown"),
        ("{not json", "unreadable"),
    ],
)
def test_edited_or_garbage_params_are_refused(tmp_path, params, match):
    path = str(tmp_path / "s.sqlite")
    _search(path).fit(X1, Y1)
    _edit_first_trial(path, "params", params)
    with pytest.raises(ValueError, match=r"(?s)s\.sqlite.*'run'.*trial 0.*" + match):
        _search(path, n_iter=4).fit(X1, Y1)


def test_a_row_without_its_extras_is_refused(tmp_path):
    # Before: a bare KeyError('iter').
    path = str(tmp_path / "s.sqlite")
    _search(path).fit(X1, Y1)
    _edit_first_trial(path, "extras", '{"position": 0}')
    with pytest.raises(ValueError, match=r"(?s)'run'.*trial 0.*iter"):
        _search(path, n_iter=4).fit(X1, Y1)


def test_store_none_is_a_type_error_naming_path():
    with pytest.raises(TypeError, match="path"):
        TrialStore(None)


def test_a_malformed_database_is_named(tmp_path):
    # Before: a bare sqlite3.DatabaseError "database disk image is malformed".
    path = str(tmp_path / "s.sqlite")
    _search(path).fit(X1, Y1)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(open(path, "rb").read())
    for offset in range(4096, len(data), 4096):  # every page but the first
        data[offset : offset + 100] = b"\xff" * 100
    open(path, "wb").write(bytes(data))
    with pytest.raises(ValueError, match=r"s\.sqlite.*malformed"):
        TrialStore(path).trials(1)
    with pytest.raises(ValueError, match=r"s\.sqlite"):
        _search(path).fit(X1, Y1)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_an_unwritable_directory_is_named():
    # /proc takes no new files, even for root.
    with pytest.raises(OSError, match=r"/proc.*(writable|write)"):
        TrialStore("/proc/trials.sqlite").runs()


def test_resuming_with_other_validation_rows_is_refused(tmp_path):
    # Scores on part of the validation rows must not be ranked beside
    # scores on all of them.
    from skbayes_search import HalvingBayesSearchCV

    path = str(tmp_path / "s.sqlite")
    X, y = make_classification(n_samples=400, n_features=4, random_state=0)

    def search(subsample_validation, n_iter):
        return HalvingBayesSearchCV(
            LogisticRegression(),
            {"C": Real(1e-2, 1e2, prior="log-uniform")},
            n_iter=n_iter,
            n_initial_points=3,
            min_resources=20,
            cv=3,
            random_state=0,
            subsample_validation=subsample_validation,
            store=path,
            run_name="run",
        )

    search(True, 4).fit(X, y)
    with pytest.raises(ValueError, match="subsample_validation"):
        search(False, 5).fit(X, y)
    assert _n_trials(path) == 4
    assert len(search(True, 5).fit(X, y).cv_results_["params"]) == 5
