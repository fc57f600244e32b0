"""Every finished trial is in the store; a killed search resumes where it stopped."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

import skbayes_search
from skbayes_search import BayesSearchCV, Real
from skbayes_search.storage import TrialStore


class Counted(RegressorMixin, BaseEstimator):
    """Counts its fits in a class attribute (n_jobs=1 keeps it in-process)."""

    n_fits = 0

    def __init__(self, a=0.5):
        self.a = a

    def fit(self, X, y=None):
        type(self).n_fits += 1
        return self

    def score(self, X, y=None):
        return -((self.a - 0.3) ** 2)


X_TOY = np.zeros((20, 2))
Y_TOY = np.zeros(20)


def _search(store, n_iter, estimator=None, **kwargs):
    kwargs.setdefault("n_initial_points", 3)
    return BayesSearchCV(
        Counted() if estimator is None else estimator,
        {"a": Real(0.0, 1.0)},
        n_iter=n_iter,
        cv=2,
        random_state=0,
        hyperparameter_sampling="map",
        store=store,
        run_name="run",
        **kwargs,
    )


def test_resume_reads_back_and_evaluates_no_trial_twice(tmp_path):
    path = tmp_path / "trials.sqlite"
    first = _search(str(path), 5).fit(X_TOY, Y_TOY)
    Counted.n_fits = 0
    second = _search(TrialStore(path), 9).fit(X_TOY, Y_TOY)
    # only the 4 new trials were fitted (2 splits each) plus the refit
    assert Counted.n_fits == 4 * 2 + 1
    assert len(second.cv_results_["params"]) == 9
    assert second.cv_results_["params"][:5] == first.cv_results_["params"]
    np.testing.assert_allclose(
        second.cv_results_["mean_test_score"][:5], first.cv_results_["mean_test_score"]
    )
    store = TrialStore(path)
    trials = store.trials(store.run_id("run"))
    assert [t["trial_index"] for t in trials] == list(range(9))
    assert store.run(store.run_id("run"))["status"] == "finished"
    assert second.run_name_ == "run"


def test_resume_mid_batch_runs_the_design_points_that_did_not_finish(
    tmp_path, killed_copy
):
    # Batches of 3 finish in any order. Simulate a kill after design points
    # 0, 1 and 3 finished (2 did not): the resumed search must run 2, 4 and 5
    # once each, and no finished point again.
    kw = dict(n_initial_points=6, n_points=3)
    first = _search(str(tmp_path / "a.db"), 6, **kw).fit(X_TOY, Y_TOY)
    design = first.cv_results_["params"]
    killed_copy(tmp_path / "a.db", tmp_path / "b.db", finished=(0, 1, 3))

    resumed = _search(str(tmp_path / "b.db"), 6, **kw).fit(X_TOY, Y_TOY)
    params = resumed.cv_results_["params"]
    assert params[:3] == [design[i] for i in (0, 1, 3)]
    assert sorted(params[3:], key=str) == sorted(
        [design[i] for i in (2, 4, 5)], key=str
    )


class SlowLow(Counted):
    """Fits with a small ``a`` take longest, so a parallel batch finishes in
    another order than the one it was proposed in."""

    def fit(self, X, y=None):
        time.sleep(0.5 * (1.0 - self.a))
        return self


def test_resume_reads_a_parallel_batch_back_in_proposal_order(tmp_path):
    path = str(tmp_path / "trials.sqlite")

    def search(n_iter):
        return _search(
            path,
            n_iter,
            SlowLow(),
            n_initial_points=4,
            n_points=4,
            n_jobs=4,
            asynchronous=False,
        )

    # four threads run the folds of two trials at once (they mostly sleep)
    with parallel_backend("threading", n_jobs=4):
        first = search(4).fit(X_TOY, Y_TOY)
        proposed = [p["a"] for p in first.cv_results_["params"]]
        store = TrialStore(path)
        stored = [row["params"]["a"] for row in store.trials(store.run_id("run"))]
        # the store holds the trials in the order they finished
        assert sorted(stored) == sorted(proposed)
        assert stored != proposed
        resumed = search(6).fit(X_TOY, Y_TOY)
    assert [p["a"] for p in resumed.cv_results_["params"][:4]] == proposed
    np.testing.assert_array_equal(
        resumed.cv_results_["mean_test_score"][:4], first.cv_results_["mean_test_score"]
    )
    assert len(resumed.cv_results_["params"]) == 6


def test_resume_with_another_space_or_estimator_is_an_error(tmp_path):
    path = str(tmp_path / "trials.sqlite")
    _search(path, 3).fit(X_TOY, Y_TOY)
    other = BayesSearchCV(
        Counted(), {"a": Real(0.0, 2.0)}, n_iter=3, store=path, run_name="run"
    )
    with pytest.raises(ValueError, match="space"):
        other.fit(X_TOY, Y_TOY)
    X, y = load_iris(return_X_y=True)
    other = BayesSearchCV(
        LogisticRegression(),
        {"a": Real(0.0, 1.0)},
        n_iter=3,
        store=path,
        run_name="run",
    )
    with pytest.raises(ValueError):
        other.fit(X, y)


def test_store_in_a_missing_directory_fails_before_any_fit(tmp_path):
    Counted.n_fits = 0
    search = _search(str(tmp_path / "missing" / "trials.sqlite"), 3)
    with pytest.raises(ValueError, match="missing"):
        search.fit(X_TOY, Y_TOY)
    assert Counted.n_fits == 0


def test_without_run_name_each_fit_is_a_fresh_run(tmp_path):
    path = str(tmp_path / "trials.sqlite")
    a = (
        _search(
            path,
            3,
        )
        .set_params(run_name=None)
        .fit(X_TOY, Y_TOY)
    )
    b = _search(path, 3).set_params(run_name=None).fit(X_TOY, Y_TOY)
    assert a.run_name_ != b.run_name_
    assert len(TrialStore(path).runs()) == 2


SCRIPT = textwrap.dedent(
    """
    import sys
    import time

    import numpy as np
    from sklearn.base import BaseEstimator, RegressorMixin

    import skbayes_search
    from skbayes_search import Real


    class Slow(RegressorMixin, BaseEstimator):
        def __init__(self, a=0.5, b=0.5):
            self.a = a
            self.b = b

        def fit(self, X, y):
            time.sleep(0.15)
            return self

        def score(self, X, y):
            return -((self.a - 0.3) ** 2) - (self.b - 0.6) ** 2


    strategy = {
        "BayesSearchCV": dict(n_iter=10),
        "MultiStageBayesSearchCV": dict(stages=(0.5, 1.0), n_iter=(6, 4), top_k=2),
    }
    name = sys.argv[2]
    getattr(skbayes_search, name)(
        Slow(),
        {"a": Real(0.0, 1.0), "b": Real(0.0, 1.0)},
        **strategy[name],
        n_initial_points=3,
        cv=2,
        random_state=0,
        hyperparameter_sampling="map",
        store=sys.argv[1],
        run_name="killed",
    ).fit(np.zeros((20, 2)), np.zeros(20))
    """
)


@pytest.mark.parametrize("strategy", ["BayesSearchCV", "MultiStageBayesSearchCV"])
def test_sigkill_then_restart_ends_with_exactly_n_iter_trials(tmp_path, strategy):
    script = tmp_path / "search.py"
    script.write_text(SCRIPT)
    path = tmp_path / "trials.sqlite"
    cmd = [sys.executable, str(script), str(path), strategy]
    # the child imports the same skbayes_search as this test, installed or not
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(skbayes_search.__file__))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    proc = subprocess.Popen(cmd, env=env)
    store = TrialStore(path)
    deadline = time.monotonic() + 120
    n_before = 0
    while time.monotonic() < deadline and proc.poll() is None:
        run = store.run_id("killed") if path.exists() else None
        n_before = len(store.trials(run)) if run is not None else 0
        if n_before >= 4:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the search ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    run = store.run_id("killed")
    n_killed = len(store.trials(run))
    assert 4 <= n_killed < 10
    assert store.run(run)["status"] == "running"

    subprocess.run(cmd, check=True, env=env, timeout=300)
    trials = store.trials(run)
    assert len(trials) == 10
    assert [t["trial_index"] for t in trials] == list(range(10))
    # a configuration runs once per fraction: nothing was evaluated twice
    keys = {(t["fraction"], *sorted(t["params"].items())) for t in trials}
    assert len(keys) == 10
    if strategy == "MultiStageBayesSearchCV":
        assert [t["fraction"] for t in trials] == [0.5] * 6 + [1.0] * 4
    assert store.run(run)["status"] == "finished"


class Sized(RegressorMixin, BaseEstimator):
    """Counts fits; its score depends on the parameter and the rows it saw."""

    n_fits = 0

    def __init__(self, a=0.5):
        self.a = a

    def fit(self, X, y=None):
        type(self).n_fits += 1
        self.n_rows_ = len(X)
        return self

    def score(self, X, y=None):
        return -((self.a - 0.3) ** 2) - 1.0 / self.n_rows_


SUBSET_STRATEGIES = {
    "MultiStageBayesSearchCV": (
        dict(stages=(0.5, 1.0), n_iter=(3, 2), top_k=1),
        dict(stages=(0.5, 1.0), n_iter=(4, 3), top_k=1),
    ),
    "FabolasSearchCV": (
        dict(
            n_iter=5,
            n_initial_points=3,
            min_resources=4,
            n_representers=8,
            n_hyper_samples=2,
        ),
        dict(
            n_iter=7,
            n_initial_points=3,
            min_resources=4,
            n_representers=8,
            n_hyper_samples=2,
        ),
    ),
    "HalvingBayesSearchCV": (
        dict(n_iter=8, n_initial_points=3, min_resources=5),
        dict(n_iter=14, n_initial_points=3, min_resources=5),
    ),
}


@pytest.mark.parametrize("name", sorted(SUBSET_STRATEGIES))
def test_subset_strategies_resume_without_repeating_trials(tmp_path, name):
    first_kwargs, second_kwargs = SUBSET_STRATEGIES[name]
    cls = getattr(skbayes_search, name)
    X, y = np.zeros((200, 2)), np.zeros(200)
    common = dict(cv=2, random_state=0, store=str(tmp_path / "s.sqlite"), run_name="r")
    first = cls(Sized(), {"a": Real(0.0, 1.0)}, **first_kwargs, **common).fit(X, y)
    n_first = len(first.cv_results_["params"])
    Sized.n_fits = 0
    second = cls(Sized(), {"a": Real(0.0, 1.0)}, **second_kwargs, **common).fit(X, y)
    n_second = len(second.cv_results_["params"])
    assert n_second > n_first
    # only new trials were fitted (2 splits each), plus the refit
    assert Sized.n_fits == 2 * (n_second - n_first) + 1
    assert second.cv_results_["params"][:n_first] == first.cv_results_["params"]
    np.testing.assert_array_equal(
        second.cv_results_["resource_fraction"][:n_first],
        first.cv_results_["resource_fraction"],
    )


class RowsSeen(Sized):
    """Records, per subset size, the training rows of every fit (column 0 of
    ``X`` holds each row's index)."""

    seen: dict = {}

    def fit(self, X, y=None):
        type(self).seen.setdefault(len(X), set()).add(frozenset(X[:, 0].tolist()))
        return super().fit(X, y)


@pytest.mark.parametrize("name", sorted(SUBSET_STRATEGIES))
def test_a_resumed_run_fits_its_subsets_on_the_stored_rows(tmp_path, name):
    # random_state=None draws new row orders at every fit: the resumed run
    # must still cut its subsets from the orders the stored trials used, so
    # that each of the two splits holds one set of rows per subset size
    first_kwargs, second_kwargs = SUBSET_STRATEGIES[name]
    cls = getattr(skbayes_search, name)
    X = np.column_stack([np.arange(200.0), np.zeros(200)])
    y = np.zeros(200)
    common = dict(cv=2, store=str(tmp_path / "s.sqlite"), run_name="r", refit=False)
    RowsSeen.seen = {}
    cls(RowsSeen(), {"a": Real(0.0, 1.0)}, **first_kwargs, **common).fit(X, y)
    first = RowsSeen.seen
    RowsSeen.seen = {}
    cls(RowsSeen(), {"a": Real(0.0, 1.0)}, **second_kwargs, **common).fit(X, y)
    second = RowsSeen.seen
    both = [n for n in first if n in second and n < 100]
    assert both, "the resumed run fitted no subset size the first run did"
    for n in both:
        assert len(first[n] | second[n]) == 2, n
