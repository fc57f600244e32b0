"""Tests of the SQLite trial store."""

import copy
import json
import math
import multiprocessing
import pickle
import sqlite3
import traceback

import numpy as np
import pytest
from sklearn.base import clone

from skbayes_search.storage import SCHEMA_VERSION, TrialStore, from_json, to_json

SIGNATURE = [{"C": ["real", 0.001, 1000.0, "log-uniform"], "kernel": ["rbf", "lin"]}]
META = {"n_samples": 1000, "n_features": 8, "n_classes": 2}


def make_record(i=0, **changes):
    record = {
        "params": {"C": 10.0**i, "kernel": "rbf"},
        "x": [0.25, 1.0, 0.0],
        "fraction": 0.5,
        "status": "ok",
        "scores": {
            "test": {"accuracy": [0.8, 0.9, 0.85], "f1": [0.7, 0.8, 0.75]},
            "train": None,
        },
        "fit_times": [0.5, 0.6, 0.4],
        "score_times": [0.01, 0.02, 0.01],
        "n_test_samples": [34, 33, 33],
        "extras": {"iter": i, "elapsed_time": 1.5 * i},
    }
    record.update(changes)
    return record


def open_demo_run(store, name="run", **changes):
    kwargs = dict(
        strategy="bayes",
        estimator_class="sklearn.svm._classes.SVC",
        space_signature=SIGNATURE,
        meta=META,
        settings={"n_iter": 20, "random_state": 0},
    )
    kwargs.update(changes)
    return store.open_run(name, **kwargs)


def test_round_trip(tmp_path):
    path = tmp_path / "store.db"
    with TrialStore(path) as store:
        run = open_demo_run(store)
        record = make_record(
            params={
                "C": np.float64(0.5),
                "degree": np.int64(3),
                "shrinking": np.bool_(True),
                "kernel": np.str_("rbf"),
                "hidden": (np.int32(50), 50),
                "class_weight": None,
                "missing": float("nan"),
                "nested": {"a": [1, 2.5, None]},
            },
            x=np.array([0.25, 1.0, 0.0]),
            fraction=np.float32(0.25),
            status="failed",
            scores={
                "test": {"accuracy": np.array([0.8, np.nan, 0.85])},
                "train": {"accuracy": [1.0, np.nan, -np.inf]},
            },
            fit_times=np.array([0.5, 0.6, np.nan]),
            n_test_samples=np.array([34, 33, 33]),
            extras={"iter": np.int64(2), "predicted": np.nan, "bound": np.inf},
        )
        assert store.add_trial(run, record) == 0
        assert store.add_trial(run, make_record(1)) == 1
        store.finish_run(run)

    # A new object on the same file sees everything.
    store = TrialStore(str(path))
    (trial, second) = store.trials(run)
    assert trial["trial_index"] == 0 and second["trial_index"] == 1
    params = trial["params"]
    assert params["C"] == 0.5 and isinstance(params["C"], float)
    assert params["degree"] == 3 and isinstance(params["degree"], int)
    assert params["shrinking"] is True
    assert params["kernel"] == "rbf"
    assert params["hidden"] == (50, 50) and isinstance(params["hidden"], tuple)
    assert params["class_weight"] is None
    assert math.isnan(params["missing"])
    assert params["nested"] == {"a": [1, 2.5, None]}
    assert trial["x"] == [0.25, 1.0, 0.0]
    assert trial["fraction"] == 0.25
    assert trial["status"] == "failed"
    acc = trial["scores"]["test"]["accuracy"]
    assert acc[0] == 0.8 and math.isnan(acc[1]) and acc[2] == 0.85
    train = trial["scores"]["train"]["accuracy"]
    assert train[0] == 1.0 and math.isnan(train[1]) and train[2] == -math.inf
    assert trial["fit_times"][:2] == [0.5, 0.6] and math.isnan(trial["fit_times"][2])
    assert trial["score_times"] == [0.01, 0.02, 0.01]
    assert trial["n_test_samples"] == [34, 33, 33]
    assert trial["extras"]["iter"] == 2 and math.isnan(trial["extras"]["predicted"])
    assert trial["extras"]["bound"] == math.inf
    assert second["scores"] == make_record(1)["scores"]
    assert second["params"] == make_record(1)["params"]
    assert trial["created"] <= second["created"]

    (info,) = store.runs()
    assert info["id"] == run and info["name"] == "run"
    assert info["strategy"] == "bayes"
    assert info["estimator_class"] == "sklearn.svm._classes.SVC"
    assert info["space_signature"] == SIGNATURE
    assert info["meta"] == META
    assert info["settings"] == {"n_iter": 20, "random_state": 0}
    assert info["status"] == "finished" and info["finished"] >= info["created"]
    assert info["n_trials"] == 2
    store.close()


def test_nan_is_stored_as_null_in_score_lists(tmp_path):
    # The documented on-disk encoding, readable by other tools.
    path = tmp_path / "store.db"
    store = TrialStore(path)
    run = open_demo_run(store)
    store.add_trial(run, make_record(scores={"test": {"acc": [np.nan, 0.5, 1.0]}}))
    store.close()
    conn = sqlite3.connect(path)
    scores, fit_times = conn.execute("SELECT scores, fit_times FROM trials").fetchone()
    conn.close()
    assert json.loads(scores) == {"test": {"acc": [None, 0.5, 1.0]}, "train": None}
    assert json.loads(fit_times) == [0.5, 0.6, 0.4]


def test_json_helpers():
    value = {"a": (1, np.float32(2.5)), "b": [np.nan, np.inf], "c": np.arange(3)}
    back = from_json(to_json(value))
    assert back["a"] == (1, 2.5) and back["c"] == [0, 1, 2]
    assert math.isnan(back["b"][0]) and back["b"][1] == math.inf
    assert to_json([np.nan, 1.0], nan_as_null=True) == "[null,1.0]"
    assert from_json("[null,1.0]")[0] is None
    assert math.isnan(from_json("[null,1.0]", null_as_nan=True)[0])
    with pytest.raises(TypeError, match="only key"):
        to_json({"$tuple": [1]})


@pytest.mark.parametrize(
    "params, where",
    [
        ({"estimator": object()}, r"params\['estimator'\]"),
        ({"class_weight": {0: 1.0, 1: 5.0}}, r"params\['class_weight'\]: key 0"),
        ({"z": 1j}, r"params\['z'\]"),
    ],
)
def test_unserialisable_value_names_the_field(tmp_path, params, where):
    store = TrialStore(tmp_path / "store.db")
    run = open_demo_run(store)
    with pytest.raises(TypeError, match=where):
        store.add_trial(run, make_record(params=params))
    with pytest.raises(TypeError, match=r"extras\['f'\]"):
        store.add_trial(run, make_record(extras={"f": set()}))
    with pytest.raises(TypeError, match="meta"):
        open_demo_run(store, "other", meta={"n_samples": object()})
    # Nothing half-written.
    assert store.trials(run) == []
    assert [r["name"] for r in store.runs()] == ["run"]


@pytest.mark.parametrize(
    "changes, match",
    [
        ({"status": "crashed"}, "status"),
        ({"fraction": 0.0}, "fraction"),
        ({"fraction": 1.5}, "fraction"),
        ({"fit_times": [0.1, 0.2]}, "differ in length"),
        ({"n_test_samples": [3.5, 3, 3]}, "integers"),
        ({"x": [0.1, np.nan]}, "finite"),
        ({"scores": {"accuracy": [1, 1, 1]}}, "scores"),
        ({"scores": {"test": {}}}, "scores"),
        ({"bogus": 1}, r"unknown keys \['bogus'\]"),
    ],
)
def test_invalid_record(tmp_path, changes, match):
    store = TrialStore(tmp_path / "store.db")
    run = open_demo_run(store)
    with pytest.raises(ValueError, match=match):
        store.add_trial(run, make_record(**changes))
    record = make_record()
    del record["x"]
    with pytest.raises(ValueError, match=r"missing keys \['x'\]"):
        store.add_trial(run, record)
    assert store.trials(run) == []


def test_unknown_run(tmp_path):
    store = TrialStore(tmp_path / "store.db")
    with pytest.raises(ValueError, match="no run with id 7"):
        store.add_trial(7, make_record())
    with pytest.raises(ValueError, match="no run with id 7"):
        store.finish_run(7)
    with pytest.raises(ValueError, match="no run with id 7"):
        store.trials(7)
    with pytest.raises(ValueError, match="no run with id 7"):
        store.run(7)
    assert store.run_id("missing") is None


def test_reopen_returns_same_run(tmp_path):
    path = tmp_path / "store.db"
    first = open_demo_run(TrialStore(path), "a")
    other = open_demo_run(TrialStore(path), "b")
    # Signatures equal up to key order and tuple/list spelling are the same space.
    same_space = [{"kernel": ("rbf", "lin"), "C": ("real", 0.001, 1e3, "log-uniform")}]
    store = TrialStore(path)
    assert open_demo_run(store, "a", space_signature=same_space) == first
    assert store.run_id("a") == first and store.run_id("b") == other
    assert first != other
    assert len(store.runs()) == 2


def test_reopen_marks_run_running_and_keeps_settings(tmp_path):
    store = TrialStore(tmp_path / "store.db")
    run = open_demo_run(store)
    store.add_trial(run, make_record())
    store.finish_run(run)
    assert store.run(run)["status"] == "finished"
    assert open_demo_run(store, settings={"n_iter": 50}) == run
    info = store.run(run)
    assert info["status"] == "running" and info["finished"] is None
    assert info["settings"] == {"n_iter": 20, "random_state": 0}
    assert info["n_trials"] == 1
    # Trials are kept and numbering continues.
    assert store.add_trial(run, make_record(1)) == 1
    store.finish_run(run)
    assert store.run(run)["status"] == "finished"


def test_open_run_validation(tmp_path):
    store = TrialStore(tmp_path / "store.db")
    with pytest.raises(ValueError, match="name must not be empty"):
        open_demo_run(store, "")
    with pytest.raises(TypeError, match="strategy must be a str"):
        open_demo_run(store, strategy=None)
    with pytest.raises(TypeError, match="settings must be a dict"):
        open_demo_run(store, settings=[1])
    assert store.runs() == []


@pytest.mark.parametrize(
    "changes, match",
    [
        ({"space_signature": [{"C": ["real", 0.01, 10.0]}]}, "space_signature"),
        ({"estimator_class": "sklearn.svm._classes.SVR"}, "estimator_class"),
        ({"strategy": "fabolas"}, "strategy"),
    ],
)
def test_resume_with_other_search_raises(tmp_path, changes, match):
    store = TrialStore(tmp_path / "store.db")
    open_demo_run(store, "a")
    with pytest.raises(ValueError, match=f"cannot be resumed.*{match}"):
        open_demo_run(store, "a", **changes)
    # A new name is fine.
    open_demo_run(store, "b", **changes)


def test_runs_filters(tmp_path):
    store = TrialStore(tmp_path / "store.db")
    a = open_demo_run(store, "a")
    b = open_demo_run(store, "b", estimator_class="sklearn.svm._classes.SVR")
    c = open_demo_run(store, "c", space_signature={"alpha": [0, 1]})
    store.finish_run(a)
    store.finish_run(c)

    def ids(**filters):
        return [run["id"] for run in store.runs(**filters)]

    assert ids() == [a, b, c]
    assert ids(estimator_class="sklearn.svm._classes.SVC") == [a, c]
    assert ids(space_signature=SIGNATURE) == [a, b]
    assert ids(finished=True) == [a, c]
    assert ids(finished=False) == [b]
    assert ids(exclude=a) == [b, c]
    assert ids(exclude=["b", c]) == [a]
    assert ids(
        estimator_class="sklearn.svm._classes.SVC", finished=True, exclude=c
    ) == [a]


def test_finished_runs_of_one_estimator_and_space_with_their_trials(tmp_path):
    store = TrialStore(tmp_path / "store.db")
    svc = "sklearn.svm._classes.SVC"
    a = open_demo_run(store, "a")
    b = open_demo_run(store, "b", meta={"n_samples": 50, "n_features": None})
    running = open_demo_run(store, "running")
    other_class = open_demo_run(store, "svr", estimator_class="sklearn.svm.SVR")
    other_space = open_demo_run(store, "space", space_signature={"alpha": [0, 1]})
    for i in range(3):
        store.add_trial(b, make_record(i, status="failed" if i == 1 else "ok"))
        store.add_trial(a, make_record(i + 10))
    store.add_trial(running, make_record(0))
    for run in (a, b, other_class, other_space):
        store.finish_run(run)

    runs = store.finished_runs(estimator_class=svc, space_signature=SIGNATURE)
    # oldest first, the fields of runs() plus the trials
    assert [run["id"] for run in runs] == [a, b]
    assert runs[1]["meta"] == {"n_samples": 50, "n_features": None}
    assert {k: v for k, v in runs[0].items() if k != "trials"} == store.run(a)
    for run in runs:
        assert run["trials"] == store.trials(run["id"])
    assert [t["extras"]["iter"] for t in runs[0]["trials"]] == [10, 11, 12]
    assert [t["status"] for t in runs[1]["trials"]] == ["ok", "failed", "ok"]
    assert runs[1]["trials"][0]["scores"]["test"]["accuracy"] == [0.8, 0.9, 0.85]
    # the current run left out, by id or name
    names = [
        r["name"]
        for r in store.finished_runs(
            estimator_class=svc, space_signature=SIGNATURE, exclude=a
        )
    ]
    assert names == ["b"]
    assert (
        store.finished_runs(
            estimator_class=svc, space_signature=SIGNATURE, exclude=["a", "b"]
        )
        == []
    )
    # a finished run without trials comes with an empty list
    empty = open_demo_run(store, "empty")
    store.finish_run(empty)
    runs = store.finished_runs(estimator_class=svc, space_signature=SIGNATURE)
    assert runs[-1]["name"] == "empty" and runs[-1]["trials"] == []


def test_trial_indices_unique_and_ordered(tmp_path):
    store = TrialStore(tmp_path / "store.db")
    a = open_demo_run(store, "a")
    b = open_demo_run(store, "b")
    got = []
    for i in range(10):
        got.append(store.add_trial(a, make_record(i)))
        if i % 3 == 0:
            store.add_trial(b, make_record(i))
    assert got == list(range(10))
    trials = store.trials(a)
    assert [t["trial_index"] for t in trials] == list(range(10))
    assert [t["extras"]["iter"] for t in trials] == list(range(10))
    assert [t["trial_index"] for t in store.trials(b)] == [0, 1, 2, 3]
    # A fresh connection continues the numbering.
    assert TrialStore(store.path).add_trial(a, make_record(10)) == 10


def test_not_a_sqlite_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some text, long enough to have a header\n" * 3)
    with pytest.raises(ValueError, match=r"notes.txt.*is not an SQLite database"):
        TrialStore(path).runs()


def test_sqlite_file_of_another_program(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE contacts (name TEXT)")
        conn.execute("INSERT INTO contacts VALUES ('ann')")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"another program.*contacts.*TrialStore"):
        TrialStore(path).open_run(
            "a", strategy="bayes", estimator_class="X", space_signature=[]
        )
    # The foreign file is left untouched (no schema, no switch to WAL).
    assert path.read_bytes() == before
    assert not (tmp_path / "other.db-wal").exists()


def test_newer_schema_version(tmp_path):
    path = tmp_path / "store.db"
    store = TrialStore(path)
    open_demo_run(store)
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(ValueError, match=f"schema version {SCHEMA_VERSION + 1}.*newer"):
        TrialStore(path).trials(1)


def test_empty_sqlite_file_becomes_a_store(tmp_path):
    path = tmp_path / "store.db"
    sqlite3.connect(path).close()
    path.touch()
    run = open_demo_run(TrialStore(path))
    assert TrialStore(path).run_id("run") == run


def test_missing_directory(tmp_path):
    path = tmp_path / "nowhere" / "store.db"
    store = TrialStore(path)  # cheap: nothing checked yet
    for use in (
        store.runs,
        lambda: store.run_id("a"),
        lambda: open_demo_run(store),
        lambda: store.add_trial(0, make_record()),
    ):
        with pytest.raises(ValueError, match=r"nowhere.*does not exist"):
            use()
    with pytest.raises(ValueError, match="does not exist"):
        with store:
            pass
    assert not (tmp_path / "nowhere").exists()


def test_directory_as_path(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        TrialStore(tmp_path).runs()


def test_repr_eq_hash(tmp_path):
    store = TrialStore(tmp_path / "store.db")
    assert repr(store) == f"TrialStore({str(tmp_path / 'store.db')!r})"
    assert store == TrialStore(str(tmp_path / "store.db"))
    assert store != TrialStore(tmp_path / "other.db")
    assert len({store, TrialStore(str(tmp_path / "store.db"))}) == 1


@pytest.mark.parametrize("used", [False, True])
def test_pickle_and_clone(tmp_path, used):
    store = TrialStore(tmp_path / "store.db")
    if used:
        run = open_demo_run(store)
        store.add_trial(run, make_record())
    for copied in (
        pickle.loads(pickle.dumps(store)),
        copy.deepcopy(store),
        clone(store, safe=False),
    ):
        assert copied == store and copied is not store
        assert copied._connection is None
        # The copy works on the same file, and so does the original afterwards.
        run = open_demo_run(copied)
        copied.add_trial(run, make_record())
        assert len(store.trials(run)) == len(copied.trials(run))
        copied.close()
    assert len(store.trials(run)) == (4 if used else 3)


def test_close_and_reuse(tmp_path):
    store = TrialStore(tmp_path / "store.db")
    run = open_demo_run(store)
    store.close()
    store.close()
    assert store.add_trial(run, make_record()) == 0
    with store:
        assert store.run_id("run") == run
    assert store._connection is None
    assert len(store.trials(run)) == 1


# -- two processes ------------------------------------------------------------


def _write_run(path, name, n_trials, barrier, queue):
    # Runs in a spawned process; reports instead of raising so the parent sees why.
    try:
        store = TrialStore(path)
        barrier.wait(timeout=60)
        run = open_demo_run(store, name)
        indices = [store.add_trial(run, make_record(i)) for i in range(n_trials)]
        store.finish_run(run)
        queue.put((name, "ok", indices))
    except BaseException:
        queue.put((name, "error", traceback.format_exc()))


def test_two_processes_write_at_once(tmp_path):
    # The store file does not exist yet: both processes also race to create it.
    path = str(tmp_path / "store.db")
    n_trials = 100
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_write_run, args=(path, name, n_trials, barrier, queue))
        for name in ("p0", "p1")
    ]
    for proc in procs:
        proc.start()
    results = {}
    for _ in procs:
        name, status, payload = queue.get(timeout=120)
        results[name] = (status, payload)
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    for name, (status, payload) in results.items():
        assert status == "ok", f"{name} failed:\n{payload}"
        assert payload == list(range(n_trials))

    store = TrialStore(path)
    runs = store.runs(finished=True)
    assert sorted(r["name"] for r in runs) == ["p0", "p1"]
    for run in runs:
        assert run["n_trials"] == n_trials
        trials = store.trials(run["id"])
        assert [t["trial_index"] for t in trials] == list(range(n_trials))
        assert [t["extras"]["iter"] for t in trials] == list(range(n_trials))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_schema_check_sees_one_snapshot_while_another_process_creates_it(tmp_path):
    # Another process creating the schema between the check's reads must not
    # make a new store look like a foreign database (tables without the
    # application id): the check reads one snapshot.
    path = tmp_path / "new.sqlite"
    path.touch()
    store = TrialStore(path)
    reader = sqlite3.connect(path, isolation_level=None, timeout=0)

    def create_schema_elsewhere():
        # the store's own schema creation, on a connection that does not wait:
        # its COMMIT is refused while the reader holds its snapshot
        other = sqlite3.connect(path, isolation_level=None, timeout=0)
        try:
            TrialStore(path)._check_schema(other)
        except sqlite3.OperationalError:
            pass
        finally:
            other.close()

    class Interleaved:
        """The reader's connection, with the creator running after its first read."""

        in_transaction = property(lambda self: reader.in_transaction)

        def execute(self, sql, *args):
            # the statement is finished (rows fetched) before the creator runs
            rows = reader.execute(sql, *args).fetchall()
            if sql.startswith("PRAGMA application_id"):
                create_schema_elsewhere()
            return Rows(rows)

    class Rows(list):
        def fetchone(self):
            return self[0] if self else None

        def fetchall(self):
            return list(self)

    assert store._schema_state(Interleaved()) in {"empty", "store"}
    reader.close()
