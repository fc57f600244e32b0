"""One live search per run, cooperation on one run, and resuming after kills."""

import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import traceback

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

import skbayes_search
from skbayes_search import BayesSearchCV, FabolasSearchCV, Real
from skbayes_search.storage import RunHeldError, TrialStore

X = np.zeros((20, 2))
Y = np.zeros(20)


class Slow(RegressorMixin, BaseEstimator):
    """Sleeps in fit, so that a search is still running when another starts."""

    def __init__(self, a=0.5, b=0.5, delay=0.03):
        self.a = a
        self.b = b
        self.delay = delay

    broken = False

    def fit(self, X, y):
        if type(self).broken:
            raise RuntimeError("broken")
        time.sleep(self.delay)
        return self

    def score(self, X, y):
        return -((self.a - 0.3) ** 2) - (self.b - 0.6) ** 2


def _search(store, n_iter=8, **kwargs):
    # the initial design: the store is under test, not the GP
    kwargs.setdefault("n_initial_points", 8)
    return BayesSearchCV(
        Slow(),
        {"a": Real(0.0, 1.0), "b": Real(0.0, 1.0)},
        n_iter=n_iter,
        cv=2,
        random_state=0,
        hyperparameter_sampling="map",
        store=store,
        run_name="shared",
        **kwargs,
    )


def _work(path, cooperate, barrier, queue):
    # Runs in a spawned process; reports instead of raising.
    try:
        store = TrialStore(path, cooperate=cooperate)
        if barrier is not None:
            barrier.wait(timeout=60)
        search = _search(store).fit(X, Y)
        queue.put(("ok", len(search.cv_results_["params"])))
    except RunHeldError as exc:
        queue.put(("held", str(exc)))
    except BaseException:
        queue.put(("error", traceback.format_exc()))


def _spawn(n, path, cooperate, barrier, queue):
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_work, args=(path, cooperate, barrier, queue))
        for _ in range(n)
    ]
    for p in procs:
        p.start()
    return procs


def _join(procs, queue):
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return results


def test_a_second_process_on_a_held_run_gets_an_error(tmp_path):
    path = str(tmp_path / "s.sqlite")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    (first,) = _spawn(1, path, False, None, queue)
    store = TrialStore(path)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until the first search holds the run
        run = store.run_id("shared") if os.path.exists(path) else None
        if run is not None and store.leases(run):
            break
        time.sleep(0.02)
    # a search in this process is refused while the other one runs
    with pytest.raises(RunHeldError, match=r"(?s)'shared'.*s\.sqlite.*held"):
        _search(path).fit(X, Y)
    ((status, n),) = _join([first], queue)
    assert status == "ok" and n == 8
    trials = store.trials(store.run_id("shared"))
    assert len(trials) == 8
    assert store.leases(store.run_id("shared")) == []
    assert store.run(store.run_id("shared"))["status"] == "finished"


def test_two_cooperating_processes_share_the_budget(tmp_path):
    path = str(tmp_path / "s.sqlite")
    ctx = multiprocessing.get_context("spawn")
    queue, barrier = ctx.Queue(), ctx.Barrier(2)
    results = _join(_spawn(2, path, True, barrier, queue), queue)
    assert [status for status, _ in results] == ["ok", "ok"], results
    store = TrialStore(path)
    run = store.run_id("shared")
    trials = store.trials(run)
    positions = sorted(t["extras"]["position"] for t in trials)
    assert positions == list(range(8))
    configurations = {(tuple(t["x"]), t["fraction"]) for t in trials}
    assert len(configurations) == 8
    assert store.run(run)["status"] == "finished"
    assert store.leases(run) == []
    # a later search resumes all of them and runs nothing more
    assert len(_search(path).fit(X, Y).cv_results_["params"]) == 8


def test_a_killed_lease_is_given_up(tmp_path):
    path = str(tmp_path / "s.sqlite")
    _search(path, n_iter=2, n_initial_points=2).fit(X, Y)
    store = TrialStore(path)
    run = store.run_id("shared")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid of this host that is gone
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO leases VALUES (?, 'dead', ?, ?, 1, 'exclusive', 0, 1e12)",
            (run, __import__("socket").gethostname(), child.pid),
        )
        conn.execute(
            "INSERT INTO leases VALUES (?, 'expired', 'elsewhere', 1, 1, "
            "'exclusive', 0, 1)",
            (run,),
        )
    conn.close()
    assert store.leases(run) == []
    assert (
        len(_search(path, n_iter=3, n_initial_points=2).fit(X, Y).cv_results_["params"])
        == 3
    )


def test_a_search_that_raised_does_not_hold_its_run_in_this_thread(tmp_path):
    # The failed search's journal (and its heartbeat) outlive the exception,
    # kept by the traceback; the next fit in the same thread takes the run.
    path = str(tmp_path / "s.sqlite")
    Slow.broken = True
    try:
        with pytest.raises(ValueError, match="failed"):
            _search(path, n_iter=2, n_initial_points=2).fit(X, Y)
    finally:
        Slow.broken = False
    store = TrialStore(path)
    assert len(store.trials(store.run_id("shared"))) == 2
    search = _search(path, n_iter=4, n_initial_points=2).fit(X, Y)
    assert len(search.cv_results_["params"]) == 4


def test_strategies_with_final_trials_refuse_to_cooperate(tmp_path):
    store = TrialStore(str(tmp_path / "s.sqlite"), cooperate=True)
    search = FabolasSearchCV(
        Slow(), {"a": Real(0.0, 1.0)}, n_iter=3, cv=2, store=store, run_name="f"
    )
    with pytest.raises(ValueError, match="cannot cooperate"):
        search.fit(np.zeros((40, 2)), np.zeros(40))


SCRIPT = textwrap.dedent(
    """
    import sys
    import time

    import numpy as np
    from sklearn.base import BaseEstimator, RegressorMixin

    from skbayes_search import BayesSearchCV, Real


    class Slow(RegressorMixin, BaseEstimator):
        def __init__(self, a=0.5, b=0.5):
            self.a = a
            self.b = b

        def fit(self, X, y):
            time.sleep(0.05)
            return self

        def score(self, X, y):
            return -((self.a - 0.3) ** 2) - (self.b - 0.6) ** 2


    BayesSearchCV(
        Slow(),
        {"a": Real(0.0, 1.0), "b": Real(0.0, 1.0)},
        n_iter=10,
        n_initial_points=10,
        cv=2,
        random_state=0,
        hyperparameter_sampling="map",
        store=sys.argv[1],
        run_name="killed",
    ).fit(np.zeros((20, 2)), np.zeros(20))
    """
)


def _rows(path):
    if not os.path.exists(path):
        return []
    store = TrialStore(path)
    run = store.run_id("killed")
    if run is None:
        return []
    return [(t["extras"]["position"], tuple(t["x"])) for t in store.trials(run)]


def test_sigkill_at_random_moments_then_resume_loses_nothing(tmp_path):
    script = tmp_path / "search.py"
    script.write_text(SCRIPT)
    path = str(tmp_path / "s.sqlite")
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(skbayes_search.__file__))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    cmd = [sys.executable, str(script), path]
    rng = random.Random(0)
    kept = set()
    for _ in range(2):
        proc = subprocess.Popen(cmd, env=env)
        # a random moment: after 1 to 4 more trials are in the store
        target = len(kept) + rng.randint(1, 4)
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if len(_rows(path)) >= target:
                time.sleep(rng.uniform(0.0, 0.05))
                break
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        rows = set(_rows(path))
        assert kept <= rows  # nothing finished was lost
        kept = rows
    subprocess.run(cmd, env=env, check=True, timeout=120)
    rows = _rows(path)
    assert set(kept) <= set(rows)
    assert sorted(p for p, _ in rows) == list(range(10))
    assert len({x for _, x in rows}) == 10
    store = TrialStore(path)
    assert store.run(store.run_id("killed"))["status"] == "finished"
