"""The process pool that runs fits: stopping it must stay silent."""

import os
import subprocess
import sys
import threading
import time

import pytest
from joblib import parallel_backend, register_parallel_backend
from joblib.parallel import ThreadingBackend

from skbayes_search import Real
from skbayes_search._workers import FutureWorkers, make_workers
from tests.test_loop import OneFastOneSlow, Sleepy, X, Y


def _sleep(seconds):
    time.sleep(seconds)
    return seconds


def test_stopping_fits_still_queued_prints_no_thread_traceback(monkeypatch):
    # more fits than the two workers and loky's spare slot hold, so some are
    # still queued in the executor when the pool is stopped
    errors = []
    monkeypatch.setattr(
        threading, "excepthook", lambda args: errors.append(args.exc_value)
    )
    workers = FutureWorkers(2, processes=True)
    for i in range(8):
        workers.submit(i, _sleep, {"seconds": 5.0})
    time.sleep(0.3)
    workers.close()
    assert errors == []


_SEARCH_IN_A_FRESH_INTERPRETER = """
import time
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier
from skbayes_search import BayesSearchCV, Real


class SlowWhenLarge(ClassifierMixin, BaseEstimator):
    def __init__(self, c=1.0):
        self.c = c

    def fit(self, X, y):
        if self.c > {hang_above}:
            time.sleep(60)
        self.dummy_ = DummyClassifier().fit(X, y)
        self.classes_ = self.dummy_.classes_
        return self

    def predict(self, X):
        return self.dummy_.predict(X)


rng = np.random.RandomState(0)
X = rng.rand(4000, 40)  # 1.3 MB: memory-mapped for the workers
y = rng.randint(0, 2, 4000)
search = BayesSearchCV(
    SlowWhenLarge(), {{"c": Real(0.0, 1.0)}}, n_iter=4, n_jobs=2, cv=2,
    random_state=0, trial_timeout={timeout},
)
search.fit(X, y)
print("trials", len(search.cv_results_["params"]))
print("failed", int(search.cv_results_["fit_failed"].sum()))
"""


@pytest.mark.parametrize(
    "hang_above, timeout", [(2.0, None), (0.5, 3.0)], ids=["fits", "fits-stopped"]
)
def test_a_search_leaves_no_memory_mapped_copy_of_the_data_behind(hang_above, timeout):
    # the copies of X the workers read are removed when the search ends, also
    # after its workers were ended to stop a fit past trial_timeout: nothing
    # is left for joblib's resource tracker to report at the interpreter's exit
    code = _SEARCH_IN_A_FRESH_INTERPRETER.format(hang_above=hang_above, timeout=timeout)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "trials 4" in done.stdout
    if timeout is not None:
        assert "failed 0" not in done.stdout  # some fit was stopped
    assert "leaked" not in done.stderr, done.stderr


class _OtherBackend(ThreadingBackend):
    """A backend the workers know nothing of (as ray's or spark's)."""


def test_other_backends_hand_back_each_result_as_it_finishes():
    register_parallel_backend("skbayes-test-other", _OtherBackend)
    with parallel_backend("skbayes-test-other", n_jobs=2):
        workers = make_workers(2)
    assert type(workers).__name__ == "BatchWorkers"
    with parallel_backend("skbayes-test-other", n_jobs=2):
        for k in range(5):
            workers.submit(k, _square, {"x": k})
        workers.discard({3})
        first = workers.wait(None)
        # one result per wait, so the search commits each trial on its own
        assert len(first) == 1
        # a job of the running batch not handed back yet
        dropped = min({0, 1, 2, 4} - {first[0][0]})
        workers.discard({dropped})
        workers.submit(9, _square, {"x": 9})  # waits for the next batch
        got = dict(first)
        while out := workers.wait(None):
            assert len(out) == 1
            got.update(out)
    workers.close()
    assert got == {k: k * k for k in (0, 1, 2, 4, 9) if k != dropped}


def _square(x):
    return x * x


class _MarksItsEnd(Sleepy):
    """Sleepy that, when it hangs, creates ``pids/ended`` once it is done."""

    def fit(self, X, y=None):
        super().fit(X, y)
        if self.hang and self.a > 1.5:
            open(os.path.join(self.pids, "ended"), "w").close()
        return self


def test_max_time_ends_the_wait_for_a_fit_under_other_backends(tmp_path):
    # the second trial's fits hang for 20 s: at max_time the search stops
    # waiting for them, as it does on the backends whose fits it can stop;
    # it returns while they still run, and leaves the trial unrecorded
    register_parallel_backend("skbayes-test-other", _OtherBackend)
    search = OneFastOneSlow(
        _MarksItsEnd(hang=20.0, pids=str(tmp_path)),
        {"a": Real(0.1, 2.0)},
        n_iter=2,
        cv=2,
        n_jobs=2,
        max_time=1.5,
    )
    with parallel_backend("skbayes-test-other", n_jobs=2):
        search.fit(X, Y)
    assert not (tmp_path / "ended").exists()
    assert [p["a"] for p in search.cv_results_["params"]] == [0.5]
