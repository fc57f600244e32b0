"""The asynchronous loop: busy workers, pending trials, deadlines, max_time."""

import os
import time
import warnings

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.datasets import make_regression
from sklearn.exceptions import FitFailedWarning

from skbayes_search import (
    BayesSearchCV,
    Categorical,
    FabolasSearchCV,
    HalvingBayesSearchCV,
    MultiStageBayesSearchCV,
    Real,
    TradeoffBayesSearchCV,
    TransferBayesSearchCV,
)
from skbayes_search._trial import Trial
from skbayes_search.storage import TrialStore

X, Y = make_regression(n_samples=400, n_features=3, random_state=0)


class Sleepy(RegressorMixin, BaseEstimator):
    """Fits in ``pause`` seconds, or ``hang`` seconds when ``a > 1.5``; the
    score is a known function of ``a`` and ``b``. Writes its pid to ``pids``
    (a directory) when it hangs, so a test can see the process is gone."""

    def __init__(self, a=1.0, b=0.5, pause=0.0, hang=0.0, pids=None):
        self.a = a
        self.b = b
        self.pause = pause
        self.hang = hang
        self.pids = pids

    def fit(self, X, y=None):
        if self.hang and self.a > 1.5:
            if self.pids is not None:
                open(os.path.join(self.pids, str(os.getpid())), "w").close()
            time.sleep(self.hang)
        elif self.pause:
            time.sleep(self.pause)
        return self

    def score(self, X, y=None):
        return -((self.a - 1.0) ** 2) - (self.b - 0.5) ** 2


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of this process counts as ended
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def _wait_dead(pids, seconds=10.0):
    end = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _pid_dir(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    return pids


def _assert_hanging_fits_ended(pids):
    started = [int(p.name) for p in pids.iterdir()]
    assert started
    assert _wait_dead(started) == []


# ten trials of a two-parameter BayesSearchCV on two folds
SMALL_SEARCH = dict(
    search_spaces={"a": Real(0.1, 2.0), "b": Real(0.0, 1.0)},
    n_iter=10,
    n_initial_points=3,
    hyperparameter_sampling="map",
    cv=2,
    random_state=0,
)


class Recording(BayesSearchCV):
    """Records how many trials were running at each proposal."""

    def _ask(self, ctx, n_slots):
        type(self).pending_seen.append(len(ctx.pending))
        return super()._ask(ctx, n_slots)


@pytest.mark.parametrize("asynchronous", [True, False])
def test_proposals_see_the_running_trials_only_when_asynchronous(asynchronous):
    Recording.pending_seen = []
    search = Recording(
        Sleepy(pause=0.05), **SMALL_SEARCH, n_jobs=4, asynchronous=asynchronous
    )
    with parallel_backend("threading", n_jobs=4):
        search.fit(X, Y)
    assert len(search.cv_results_["params"]) == 10
    if asynchronous:
        # four workers, two folds a trial: proposals made while others run
        assert max(Recording.pending_seen) >= 1
    else:
        assert max(Recording.pending_seen) == 0


class LoggedSleepy(Sleepy):
    """Sleepy that logs when each fit starts and ends (threads share it)."""

    log = []

    def fit(self, X, y=None):
        start = time.perf_counter()
        super().fit(X, y)
        type(self).log.append((start, time.perf_counter()))
        return self


class SlowProposals(BayesSearchCV):
    """Takes 0.1 s a proposal, at most half a fit's time, and logs when each
    ends."""

    ends = []

    def _ask(self, ctx, n_slots):
        time.sleep(0.1)
        out = super()._ask(ctx, n_slots)
        if ctx.trials:
            type(self).ends.append(time.perf_counter())
        return out


@pytest.mark.parametrize("n_jobs, trial_timeout", [(1, None), (2, None), (2, 30.0)])
def test_workers_fit_while_a_proposal_is_made(n_jobs, trial_timeout):
    LoggedSleepy.log, SlowProposals.ends = [], []
    # with two workers, fits of 0.5 s: on a busy machine a proposal's own
    # work (the GP's) takes several times longer than on an idle one, and
    # must still end within one
    overlap = n_jobs == 2 and trial_timeout is None
    search = SlowProposals(
        LoggedSleepy(pause=0.5 if overlap else 0.2),
        **SMALL_SEARCH,
        n_jobs=n_jobs,
        trial_timeout=trial_timeout,
    )
    with parallel_backend("threading", n_jobs=n_jobs):
        search.fit(X, Y)
    assert len(search.cv_results_["params"]) == 10
    # proposals at whose end a fit was running (the refit's excluded)
    fits = LoggedSleepy.log[:-1]
    busy = [any(a < t < b for a, b in fits) for t in SlowProposals.ends]
    if n_jobs == 1 or trial_timeout is not None:
        # one worker proposes after each trial, and with a trial_timeout (a
        # trial's clock starts when it is submitted) a trial is submitted only
        # to a free worker: the workers wait for every proposal
        assert not any(busy)
    else:
        # two workers, two folds a trial: waiting for a free worker, each
        # proposal would outlast the other worker's fold and leave both idle
        assert sum(busy) >= 0.5 * len(busy) > 0


class CostlyWithPending(BayesSearchCV):
    """Takes 0.3 s a proposal while trials run (as fantasies cost), none
    otherwise, and records how many trials ran at each proposal."""

    pending_seen = []

    def _ask(self, ctx, n_slots):
        type(self).pending_seen.append(len(ctx.pending))
        if ctx.pending:
            time.sleep(0.3)
        return super()._ask(ctx, n_slots)


def test_proposals_wait_for_running_trials_when_that_is_sooner():
    # folds of 0.02 s: a proposal with a trial pending (0.3 s) outlasts the
    # running trial, so after one proposal of each kind the search waits for
    # the running trials and proposes without them
    CostlyWithPending.pending_seen = []
    search = CostlyWithPending(Sleepy(pause=0.02), **SMALL_SEARCH, n_jobs=2)
    with parallel_backend("threading", n_jobs=2):
        search.fit(X, Y)
    assert len(search.cv_results_["params"]) == 10
    seen = CostlyWithPending.pending_seen
    assert 1 <= sum(n > 0 for n in seen) <= 3 < len(seen) - 3


class ScriptedCostlyWithPending(BayesSearchCV):
    """Nine quick settings, then a = 2.0 (hangs); 0.3 s a proposal while
    trials run."""

    def _ask(self, ctx, n_slots):
        if ctx.pending:
            time.sleep(0.3)
        asked = len(ctx.trials) + len(ctx.pending)
        order = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 2.0]
        return [Trial({"a": a}) for a in order[asked : asked + n_slots]]


def test_a_wait_given_up_does_not_leave_the_loop_polling(monkeypatch):
    # the loop waits for the running trials instead of proposing, gives up
    # after the proposals' difference in cost, and the budget is then spent
    # while the last trial (1.5 s) runs: it waits for that trial, it does not
    # poll the workers with a timeout of zero until it ends
    from skbayes_search import _workers

    polls = []
    wait = _workers.FutureWorkers.wait

    def counted(self, timeout):
        polls.append(timeout)
        return wait(self, timeout)

    monkeypatch.setattr(_workers.FutureWorkers, "wait", counted)
    search = ScriptedCostlyWithPending(
        Sleepy(pause=0.02, hang=1.5), {"a": Real(0.1, 2.0)}, n_iter=10, cv=2, n_jobs=2
    )
    with parallel_backend("threading", n_jobs=2):
        search.fit(X, Y)
    assert len(search.cv_results_["params"]) == 10
    assert sum(t == 0 for t in polls) < 20


FINITE = {"a": Categorical([0.5, 1.0, 2.0]), "b": Categorical([0.2, 0.8])}


def _strategy(name, tmp_path):
    common = dict(cv=2, n_jobs=4, random_state=0)
    if name == "bayes":
        return BayesSearchCV(Sleepy(pause=0.02), FINITE, n_iter=6, **common)
    if name == "multistage":
        return MultiStageBayesSearchCV(
            Sleepy(pause=0.02), FINITE, n_iter=(6, 3), top_k=2, **common
        )
    if name == "fabolas":
        return FabolasSearchCV(
            Sleepy(pause=0.02),
            FINITE,
            n_iter=8,
            n_initial_points=4,
            n_representers=5,
            n_hyper_samples=2,
            min_resources=10,
            **common,
        )
    if name == "halving":
        # 200 training rows a split: rungs of 10, 30, 90 and 200 rows
        return HalvingBayesSearchCV(
            Sleepy(pause=0.02),
            FINITE,
            n_iter=10,
            n_initial_points=3,
            min_resources=10,
            **common,
        )
    if name == "tradeoff":
        # MAP hyperparameters: its two MCMC-sampled GPs took 20 s here, and
        # what is tested is the loop's pending trials, not the sampling
        return TradeoffBayesSearchCV(
            Sleepy(pause=0.02),
            FINITE,
            n_iter=8,
            fractions=(0.5, 1.0),
            hyperparameter_sampling="map",
            **common,
        )
    return TransferBayesSearchCV(
        Sleepy(pause=0.02), FINITE, store=tmp_path / "t.sqlite", n_iter=6, **common
    )


STRATEGIES = ["bayes", "multistage", "fabolas", "halving", "tradeoff", "transfer"]


@pytest.mark.parametrize("name", STRATEGIES)
def test_no_strategy_proposes_a_running_trial_again(name, tmp_path):
    search = _strategy(name, tmp_path)
    with parallel_backend("threading", n_jobs=4), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X, Y)
    res = search.cv_results_
    keys = [
        (tuple(sorted(p.items())), round(float(f), 9))
        for p, f in zip(res["params"], res["resource_fraction"])
    ]
    assert len(keys) == len(set(keys)), keys
    assert len(keys) >= 4


def test_a_trial_past_trial_timeout_is_stopped_and_recorded(tmp_path):
    pids = _pid_dir(tmp_path)
    search = BayesSearchCV(
        Sleepy(hang=60.0, pids=str(pids)),
        {"a": Categorical([0.5, 1.0, 2.0, 3.0])},
        n_iter=4,
        cv=2,
        # the fits that do not hang take milliseconds; 3 s leaves them room
        # on a busy machine, where starting a worker process takes seconds
        trial_timeout=3.0,
        random_state=0,
    )
    with pytest.warns(FitFailedWarning, match="trial_timeout=3.0s"):
        search.fit(X, Y)
    res = search.cv_results_
    scores = dict(zip([p["a"] for p in res["params"]], res["mean_test_score"]))
    # the two hanging configurations failed, the search went on
    assert np.isnan(scores[2.0]) and np.isnan(scores[3.0])
    assert np.isfinite(scores[0.5]) and np.isfinite(scores[1.0])
    assert search.best_params_ == {"a": 1.0}
    # the processes that ran the hanging fits were ended
    _assert_hanging_fits_ended(pids)


def test_trials_waiting_for_a_worker_do_not_run_out_of_trial_timeout():
    # FABOLAS proposes its initial design at once: eight trials of 0.4 s
    # each (two folds of 0.2 s) would wait up to 2.8 s for the one worker,
    # longer than trial_timeout, had their clocks started when proposed
    search = FabolasSearchCV(
        Sleepy(pause=0.2),
        {"a": Real(0.1, 2.0), "b": Real(0.0, 1.0)},
        n_iter=10,
        n_initial_points=4,
        n_representers=5,
        n_hyper_samples=2,
        min_resources=10,
        cv=2,
        trial_timeout=2.0,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitFailedWarning)
        search.fit(X, Y)
    assert not search.cv_results_["fit_failed"].any()
    assert len(search.cv_results_["params"]) == 10


def test_max_time_stops_a_hanging_first_trial(tmp_path):
    pids = _pid_dir(tmp_path)
    search = BayesSearchCV(
        Sleepy(hang=60.0, pids=str(pids)),
        {"a": Categorical([2.0, 3.0])},
        n_iter=2,
        cv=2,
        max_time=1.0,
        random_state=0,
    )
    # no trial can finish: the search ends with an error, not after 60 s
    with pytest.raises(ValueError, match="No trial finished within max_time"):
        search.fit(X, Y)
    _assert_hanging_fits_ended(pids)


def test_max_time_stops_running_trials_and_keeps_the_finished(tmp_path):
    pids = _pid_dir(tmp_path)
    search = BayesSearchCV(
        Sleepy(hang=60.0, pids=str(pids)),
        # the design evaluates a = 0.5 and 1.0 before it reaches a hanging one
        {"a": Categorical([0.5, 1.0, 2.0, 3.0])},
        n_iter=4,
        n_initial_points=4,
        cv=2,
        max_time=3.0,
        random_state=0,
    )
    search.fit(X, Y)
    params = [p["a"] for p in search.cv_results_["params"]]
    # the hanging trials were stopped unrecorded; the finished ones are kept
    assert set(params) <= {0.5, 1.0}
    assert params
    assert _wait_dead([int(p.name) for p in pids.iterdir()]) == []


def test_timeout_with_error_score_raise_raises():
    search = BayesSearchCV(
        Sleepy(hang=30.0),
        {"a": Categorical([2.0])},
        n_iter=1,
        cv=2,
        trial_timeout=0.5,
        error_score="raise",
    )
    with pytest.raises(TimeoutError, match="trial_timeout"):
        search.fit(X, Y)


class OneFastOneSlow(BayesSearchCV):
    """Asks for a = 0.5 (instant), then a = 2.0 (hangs), flagged final or not."""

    final = False

    def _ask(self, ctx, n_slots):
        asked = len(ctx.trials) + len(ctx.pending)
        if asked >= 2:
            return []
        trial = Trial({"a": 0.5 if asked == 0 else 2.0})
        trial.final = self.final and asked == 1
        return [trial]


class FinalSlow(OneFastOneSlow):
    final = True


class HangFirst(BayesSearchCV):
    """Asks for a = 2.0 (hangs) first, then quick settings one at a time."""

    def _ask(self, ctx, n_slots):
        asked = len(ctx.trials) + len(ctx.pending)
        order = [2.0, 0.5, 0.8, 1.0, 1.2]
        return [Trial({"a": a}) for a in order[asked : asked + n_slots]]


def check_fits_no_backend_can_stop_hold_their_workers():
    """Both folds of the first trial hang for 4 s on the two workers, past a
    0.5 s trial_timeout, and the backend cannot stop them: the four trials
    after it wait for a worker, and run, instead of running out of time in
    the queue behind the hanging fits."""
    search = HangFirst(
        Sleepy(hang=4.0, pause=0.05),
        {"a": Real(0.1, 2.0)},
        n_iter=5,
        cv=2,
        n_jobs=2,
        trial_timeout=0.5,
    )
    with (
        pytest.warns(UserWarning, match="cannot stop a running fit"),
        pytest.warns(FitFailedWarning, match="1 of 5"),
    ):
        search.fit(X, Y)
    failed = dict(
        zip(
            [p["a"] for p in search.cv_results_["params"]],
            search.cv_results_["fit_failed"],
        )
    )
    assert failed == {2.0: True, 0.5: False, 0.8: False, 1.0: False, 1.2: False}
    assert search.best_params_ == {"a": 1.0}


def test_fits_the_threading_backend_cannot_stop_hold_their_workers():
    with parallel_backend("threading"):
        check_fits_no_backend_can_stop_hold_their_workers()


class HangThenFinal(OneFastOneSlow):
    """Asks for a = 0.5 (instant) and a = 2.0 (hangs), then, after the
    budget, a final a = 1.0."""

    def _finalize(self, ctx):
        trial = Trial({"a": 1.0})
        trial.final = True
        return [trial]

    def _end_search(self, ctx, results):
        self.records_ = list(ctx.trials)


def hang_then_final(hang, **deadlines):
    """HangThenFinal on one worker, its a = 2.0 hanging ``hang`` seconds."""
    return HangThenFinal(
        Sleepy(hang=hang), {"a": Real(0.1, 2.0)}, n_iter=2, cv=2, n_jobs=1, **deadlines
    )


def test_fits_left_running_at_max_time_are_stopped_for_the_final_trial(monkeypatch):
    # at max_time the hanging a = 2.0 holds the one worker process for 120 s
    # more; with a grace period long enough to start a worker afresh (even on
    # a busy machine, where that takes seconds), it is ended so that the
    # final trial runs, instead of waiting for it
    from skbayes_search import _loop

    monkeypatch.setattr(_loop, "_MIN_GRACE", 40.0)
    search = hang_then_final(120.0, max_time=2.0)
    search.fit(X, Y)
    assert [p["a"] for p in search.cv_results_["params"]] == [0.5, 1.0]
    assert not search.cv_results_["fit_failed"].any()
    assert search.best_params_ == {"a": 1.0}


def test_a_final_trial_no_worker_is_free_for_is_recorded_as_stopped():
    # the one thread is held by a hanging fit past trial_timeout until after
    # max_time's grace period (2 s): the final trial never gets a worker, and
    # is recorded as stopped rather than waited for
    search = hang_then_final(6.0, trial_timeout=0.3, max_time=1.0)
    with (
        parallel_backend("threading"),
        pytest.warns(UserWarning, match="cannot stop a running fit"),
        pytest.warns(FitFailedWarning, match="2 of 3"),
    ):
        search.fit(X, Y)
    assert [p["a"] for p in search.cv_results_["params"]] == [0.5, 2.0, 1.0]
    assert list(search.cv_results_["fit_failed"]) == [False, True, True]
    assert [r.stopped for r in search.records_] == [False, False, True]
    assert search.best_params_ == {"a": 0.5}


class FinalSlowSeen(FinalSlow):
    """Keeps the records it ends with."""

    def _end_search(self, ctx, results):
        super()._end_search(ctx, results)
        self.records_ = list(ctx.trials)


def test_a_final_trial_stopped_at_its_grace_is_recorded_as_stopped(tmp_path):
    # the final trial hangs for 30 s: stopped at the end of the grace period,
    # it is a failed row of cv_results_ whose record says it was stopped, not
    # failed for a fault of its own, also once read back from the store.
    # It is asked once the instant first trial is done, and only if max_time
    # has not passed: max_time leaves room for starting two worker processes
    # on a busy machine
    store = TrialStore(tmp_path / "t.db")
    search = FinalSlowSeen(
        Sleepy(hang=30.0),
        {"a": Categorical([0.5, 2.0])},
        n_iter=2,
        cv=2,
        max_time=4.0,
        random_state=0,
        n_jobs=2,
        store=store,
        run_name="run",
    )
    with pytest.warns(FitFailedWarning):
        search.fit(X, Y)
    assert [p["a"] for p in search.cv_results_["params"]] == [0.5, 2.0]
    assert np.isnan(search.cv_results_["mean_test_score"][1])
    assert [r.stopped for r in search.records_] == [False, True]
    assert "stopped" not in search.cv_results_
    again = clone(search).set_params(max_time=None, n_jobs=1)
    with pytest.warns(FitFailedWarning):
        again.fit(X, Y)
    assert [r.stopped for r in again.records_] == [False, True]


@pytest.mark.parametrize("cls", [OneFastOneSlow, FinalSlow])
def test_a_final_trial_running_at_max_time_gets_the_grace_period(cls):
    # the slow trial ends 1.3 s after the start: past max_time=1.0, within
    # its 1 s grace
    search = cls(
        Sleepy(hang=1.3),
        {"a": Categorical([0.5, 2.0])},
        n_iter=2,
        cv=2,
        max_time=1.0,
        random_state=0,
    )
    with parallel_backend("threading", n_jobs=2):
        search.fit(X, Y)
    params = [p["a"] for p in search.cv_results_["params"]]
    if cls.final:
        assert params == [0.5, 2.0]
        assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    else:
        assert params == [0.5]


class Interrupting(Sleepy):
    """Raises KeyboardInterrupt (a Ctrl-C) in the ``stop_at``-th fit."""

    n_fits = 0
    stop_at = 0

    def fit(self, X, y=None):
        type(self).n_fits += 1
        if type(self).n_fits == type(self).stop_at:
            raise KeyboardInterrupt
        return super().fit(X, y)


@pytest.mark.parametrize("name", STRATEGIES)
def test_with_one_job_each_trial_is_committed_before_the_next_fit(name, tmp_path):
    # a strategy may ask for several trials at once (FABOLAS's initial
    # design); run inline, their fits must still be committed one by one
    path = tmp_path / "interrupted.sqlite"
    search = _strategy(name, tmp_path)
    if name != "transfer":
        search.set_params(store=path)
    path = search.store
    search.set_params(estimator=Interrupting(), n_jobs=1, run_name="interrupted")
    Interrupting.n_fits, Interrupting.stop_at = 0, 7
    with warnings.catch_warnings(), pytest.raises(KeyboardInterrupt):
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X, Y)
    store = TrialStore(path)
    # two folds a trial: the six fits before the interrupt are three trials
    assert len(store.trials(store.run_id("interrupted"))) == 3
