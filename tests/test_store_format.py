"""Schema upgrade, adopted runs, leases and claims, fingerprints, checked rows."""

import json
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

import skbayes_search
from skbayes_search import _journal_fingerprint
from skbayes_search._journal_fingerprint import data_fingerprint, run_fingerprint
from skbayes_search._store_format import APPLICATION_ID
from skbayes_search.storage import (
    SCHEMA_VERSION,
    RunHeldError,
    StoredTrialError,
    TrialStore,
)

# The schema of version 1, as an older skbayes_search wrote it.
V1_SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, strategy TEXT NOT NULL,
    estimator_class TEXT NOT NULL, space_signature TEXT NOT NULL,
    meta TEXT NOT NULL, settings TEXT NOT NULL, created REAL NOT NULL,
    finished REAL,
    status TEXT NOT NULL CHECK (status IN ('running', 'finished'))
);
CREATE TABLE trials (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    trial_index INTEGER NOT NULL CHECK (trial_index >= 0),
    params TEXT NOT NULL, x TEXT NOT NULL,
    fraction REAL NOT NULL CHECK (fraction > 0 AND fraction <= 1),
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    scores TEXT NOT NULL, fit_times TEXT NOT NULL, score_times TEXT NOT NULL,
    n_test_samples TEXT NOT NULL, extras TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (run_id, trial_index)
);
"""

RECORD = {
    "params": {"C": 1.0},
    "x": [0.5],
    "fraction": 1.0,
    "status": "ok",
    "scores": {"test": {"score": [0.9, 0.8]}},
    "fit_times": [0.1, 0.1],
    "score_times": [0.01, 0.01],
    "n_test_samples": [5, 5],
}


def _v1_store(path):
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute("PRAGMA user_version=1")
    conn.execute(
        "INSERT INTO runs VALUES (1, 'old', 'BayesSearchCV', 'x.E', '[]', '{}', "
        "'{}', 0, 1, 'finished')"
    )
    conn.execute(
        "INSERT INTO trials VALUES (1, 0, '{\"C\":1.0}', '[0.5]', 1.0, 'ok', "
        "'{\"test\":{\"score\":[0.9]},\"train\":null}', '[0.1]', '[0.01]', '[5]', "
        "'{\"iter\":0}', 0)"
    )
    conn.commit()
    conn.close()


def test_a_version_1_store_is_upgraded_and_its_runs_are_refused_until_adopted(
    tmp_path,
):
    path = str(tmp_path / "old.sqlite")
    _v1_store(path)
    store = TrialStore(path)
    (run,) = store.finished_runs(estimator_class="x.E", space_signature=[])
    assert run["name"] == "old" and run["fingerprint"] is None
    assert len(run["trials"]) == 1
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
    kwargs = dict(strategy="BayesSearchCV", estimator_class="x.E", space_signature=[])
    with pytest.raises(ValueError, match=r"(?s)'old'.*old\.sqlite.*adopt_run"):
        store.open_run("old", **kwargs, fingerprint={"X": 1})
    # without a fingerprint (a reader, not a resuming search) it opens
    assert store.open_run("old", **kwargs) == 1
    store.adopt_run("old")
    assert store.open_run("old", **kwargs, fingerprint={"X": 1}) == 1
    assert store.run(1)["fingerprint"] == {"X": 1}
    with pytest.raises(ValueError, match="data X"):
        store.open_run("old", **kwargs, fingerprint={"X": 2})
    with pytest.raises(ValueError, match="no run named"):
        store.adopt_run("missing")


def test_fingerprint_difference_names_each_part(tmp_path):
    store = TrialStore(tmp_path / "s.sqlite")
    kwargs = dict(strategy="s", estimator_class="e", space_signature=[])
    fp = {"X": 1, "y": 2, "cv_splits": 3, "scoring": 4, "estimator": 5}
    store.open_run("r", **kwargs, fingerprint=fp)
    with pytest.raises(ValueError, match=r"other CV splits, scoring \("):
        store.open_run("r", **kwargs, fingerprint={**fp, "cv_splits": 0, "scoring": 0})


def test_leases_are_exclusive_or_cooperative(tmp_path):
    path = str(tmp_path / "s.sqlite")
    alone, shared = TrialStore(path), TrialStore(path, cooperate=True)
    run = alone.open_run("r", strategy="s", estimator_class="e", space_signature=[])
    # from another thread: a live search of this process
    import threading

    tokens = {}

    def hold(store, key):
        tokens[key] = store.hold_run(run)

    thread = threading.Thread(target=hold, args=(shared, "a"))
    thread.start()
    thread.join()
    # the holding thread has ended: its lease is stale
    assert alone.leases(run) == []
    token, member = alone.hold_run(run)
    assert member == 1
    with pytest.raises(RunHeldError, match=r"(?s)'r'.*s\.sqlite.*cooperate"):
        # this thread's own earlier lease is stale too, so use a fresh row of
        # a live process elsewhere
        conn = sqlite3.connect(path)
        conn.execute(
            "INSERT INTO leases VALUES (?, 'x', 'elsewhere', 1, 1, 'exclusive', 0, "
            "1e12)",
            (run,),
        )
        conn.commit()
        conn.close()
        shared.hold_run(run)
    assert alone.renew_lease(run, token)
    assert alone.release_run(run, token, finish=True) is False  # 'x' holds it
    assert not alone.renew_lease(run, token)


def test_claims_are_unique_and_bounded_by_the_budget(tmp_path):
    path = str(tmp_path / "s.sqlite")
    store = TrialStore(path, cooperate=True)
    run = store.open_run("r", strategy="s", estimator_class="e", space_signature=[])
    token, _ = store.hold_run(run)
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO leases VALUES (?, 'other', 'elsewhere', 1, 1, 'cooperate', 0, "
        "1e12)",
        (run,),
    )
    conn.execute("INSERT INTO claims VALUES (?, 1, 'other')", (run,))
    conn.commit()
    conn.close()
    assert store.claim_positions(run, token, 2, below=5) == [0, 2]
    record = {**RECORD, "extras": {"position": 0}}
    assert store.add_trial(run, record, lease=token, skip_duplicate=True) == 0
    # the same configuration again is not stored; its position is given back
    again = {**RECORD, "extras": {"position": 2}}
    assert store.add_trial(run, again, lease=token, skip_duplicate=True) is None
    assert store.claim_positions(run, token, 5, below=5) == [2, 3, 4]
    assert store.claim_positions(run, token, 5, below=5) == []
    with pytest.raises(ValueError, match="position 0 already has a trial"):
        store.add_trial(
            run, {**RECORD, "x": [0.1], "extras": {"position": 0}}, lease=token
        )
    # rows added by hand (no lease) keep their position in extras only
    store.add_trial(run, {**RECORD, "x": [0.1], "extras": {"position": 0}})
    store.release_run(run, token)
    with pytest.raises(RunHeldError, match="lost its lease"):
        store.add_trial(run, {**RECORD, "x": [0.2]}, lease=token)


@pytest.mark.parametrize(
    "column, value, match",
    [
        ("params", "{oops", "params: JSONDecodeError"),
        ("scores", '{"train": null}', "scores"),
        ("fit_times", "[0.1]", "per-split lists differ"),
        ("x", '"text"', "x"),
        ("n_test_samples", "[5.5, 5]", "integers"),
    ],
)
def test_unreadable_rows_name_store_run_and_trial(tmp_path, column, value, match):
    path = str(tmp_path / "s.sqlite")
    store = TrialStore(path)
    run = store.open_run("r", strategy="s", estimator_class="e", space_signature=[])
    store.add_trial(run, RECORD)
    store.add_trial(run, RECORD)
    conn = sqlite3.connect(path)
    conn.execute(f"UPDATE trials SET {column} = ? WHERE trial_index = 1", (value,))
    conn.commit()
    conn.close()
    with pytest.raises(
        StoredTrialError, match=rf"(?s)s\.sqlite.*'r'.*trial 1.*{match}"
    ):
        store.trials(run)
    store.finish_run(run)
    with pytest.raises(StoredTrialError, match="trial 1"):
        store.finished_runs(estimator_class="e", space_signature=[])


def test_store_arguments_are_checked(tmp_path):
    with pytest.raises(TypeError, match="path"):
        TrialStore(3)
    with pytest.raises(TypeError, match="cooperate"):
        TrialStore("a.db", cooperate="yes")
    with pytest.raises(ValueError, match="lease_seconds"):
        TrialStore("a.db", lease_seconds=0)
    store = TrialStore(tmp_path / "a.db", cooperate=True, lease_seconds=5)
    assert "cooperate=True" in repr(store) and "lease_seconds=5.0" in repr(store)
    assert store != TrialStore(tmp_path / "a.db")
    import pickle

    copy = pickle.loads(pickle.dumps(store))
    assert copy == store and copy.lease_seconds == 5.0


def test_data_fingerprint_is_deterministic_and_samples_big_arrays(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.random((3000, 4))
    assert data_fingerprint(X) == data_fingerprint(X.copy(order="F"))
    assert "sampled_rows" not in data_fingerprint(X)
    monkeypatch.setattr(_journal_fingerprint, "FULL_HASH_BYTES", 1000)
    monkeypatch.setattr(_journal_fingerprint, "SAMPLED_ROWS", 100)
    sampled = data_fingerprint(X)
    assert sampled["sampled_rows"] == 100
    changed = X.copy()
    changed[-1, 0] += 1.0  # the last row is always sampled
    assert data_fingerprint(changed) != sampled
    shuffled = X[rng.permutation(len(X))]
    assert data_fingerprint(shuffled) != sampled


def test_fingerprint_of_pandas_sparse_and_object_data():
    pd = pytest.importorskip("pandas")
    from scipy import sparse

    frame = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]})
    assert data_fingerprint(frame) == data_fingerprint(frame.copy())
    assert data_fingerprint(frame) != data_fingerprint(frame.rename(columns={"a": "c"}))
    matrix = sparse.random(20, 5, density=0.3, random_state=0, format="csc")
    # the values, whatever the format (the type is recorded beside them)
    csc, csr = data_fingerprint(matrix), data_fingerprint(matrix.tocsr())
    assert csc["sha256"] == csr["sha256"] and csc["type"] != csr["type"]
    assert data_fingerprint(np.array(["a", None], dtype=object))["dtype"] == "object"


FINGERPRINT_SCRIPT = """
import json
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import make_scorer, accuracy_score
from skbayes_search._journal_fingerprint import run_fingerprint
X = np.arange(40.0).reshape(20, 2)
y = np.arange(20) % 2
splits = [(np.arange(10), np.arange(10, 20)), (np.arange(10, 20), np.arange(10))]
print(json.dumps(run_fingerprint(
    X=X, y=y, splits=splits, scoring={"acc": make_scorer(accuracy_score)},
    estimator=LogisticRegression(random_state=np.random.RandomState(0)),
    searched=["C"])))
"""


def test_run_fingerprint_is_the_same_in_another_process():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(skbayes_search.__file__))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, "-c", FINGERPRINT_SCRIPT],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    ns = {}
    exec(FINGERPRINT_SCRIPT.replace("print(json.dumps(", "fp = (("), ns)
    assert json.loads(out) == json.loads(json.dumps(ns["fp"]))
    params = ns["fp"]["estimator"]["params"]
    assert "C" not in params and "n_jobs" not in params
    assert "0x" not in json.dumps(ns["fp"])
    assert run_fingerprint is ns["run_fingerprint"]
