"""The asynchronous ask/tell loop every strategy runs in.

Workers stay busy: whenever the folds left to run would soon leave a worker
without work, the strategy is asked for the next trials, with the trials still
running in ``ctx.pending`` (strategies condition their proposals on them,
Snoek et al. 2012, section 3.3). With more than one worker (and no
``trial_timeout``) that is before a worker frees, with folds queued for the
time a proposal takes, so no worker waits for the search's own process; with
one, after each trial. The moment the last fold of a trial finishes, the
trial is recorded: committed to the store, then appended to ``ctx.trials``.
A trial past ``trial_timeout`` is stopped and recorded as failed with the
reason (its clock starts when a worker is free for it: trials proposed
together wait in the loop, not in the workers' queue, and a worker still
running a fit the backend could not stop is not free); at ``max_time`` the
running trials are stopped and left unrecorded (a resumed run proposes
again), and the final trials a strategy asks for (``_finalize``) get a short
grace period.
"""

from __future__ import annotations

import math
import time
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._failures import raise_if_all_failed
from ._trial import SearchContext, Trial
from ._workers import Workers

__all__ = ["FINAL_GRACE", "SearchLoop", "final_deadline"]

#: Share of ``max_time`` (at least ``_MIN_GRACE`` seconds) that the final
#: trials of a strategy (FABOLAS's full-data evaluation) may run past it.
FINAL_GRACE = 0.1
_MIN_GRACE = 1.0
# Proposing ahead: how many recent trials' fold times set the queue, and its
# margin over the folds run during one proposal.
_RECENT = 5
_AHEAD_MARGIN = 2.0
# The final trials' grace period left must be this many times what starting
# the worker processes afresh takes, for the fits left running at max_time to
# be stopped (else the final trials wait for them).
_RESTART_MARGIN = 3.0


def final_deadline(max_time: float | None) -> float:
    """Seconds after the start by which the final trials must be done."""
    if max_time is None:
        return math.inf
    return max_time + max(_MIN_GRACE, FINAL_GRACE * max_time)


@dataclass
class _Running:
    trial: Trial
    position: int | None
    outs: list
    started: float
    deadline: float
    n_left: int = field(init=False)

    def __post_init__(self) -> None:
        self.n_left = len(self.outs)


class SearchLoop:
    """Ask, evaluate and record until the budget is spent.

    Parameters
    ----------
    search : BaseBayesSearchCV
        Its ``_ask`` and ``_finalize`` hooks propose the trials.
    ctx : SearchContext
        Shared with the strategy; ``ctx.pending`` holds the running trials.
    evaluator : TrialEvaluator
        Turns a trial into one job per split.
    workers : Workers
        Runs the jobs.
    commit : callable
        ``commit(trial, outs, position, finish) -> record`` writes a finished
        trial to the store, at once.
    publish : callable
        ``publish(record, outs)`` hands a committed trial to the strategy
        (``ctx.trials``) and to ``cv_results_``: at once when asynchronous,
        else when its whole batch is in, in proposal order.
    claim_position : callable
        Returns the trial's place in the run, claimed when it is proposed (a
        resumed search lists its trials in this order; cooperating searches
        share the budget through it).
    fit_kwargs : callable
        ``fit_kwargs(n)``: scikit-learn callback arguments of ``n`` fits.
    failed_out : callable
        ``failed_out(test_indices, seconds, message)``: the per-split result
        of a fit stopped at its deadline.
    trial_timeout : float or None
        Seconds a trial may run.
    n_points : int or None
        Trials per proposal; ``None`` asks for as many as keep the workers
        busy.
    stop_on_timeout : bool
        Raise instead of recording a late trial (``error_score="raise"``).
    asynchronous : bool
        Propose whenever a worker would idle; else propose a batch, wait for
        all of it, and propose again (the trials then depend neither on
        ``n_jobs`` nor on which fit finishes first).
    """

    def __init__(
        self,
        search: Any,
        ctx: SearchContext,
        evaluator: Any,
        workers: Workers,
        *,
        commit: Callable[[Trial, list, int | None, float], Any],
        publish: Callable[[Any, list], None],
        claim_position: Callable[[], int | None],
        fit_kwargs: Callable[[int], list[dict]],
        failed_out: Callable[[Any, float, str], dict],
        trial_timeout: float | None,
        n_points: int | None,
        stop_on_timeout: bool,
        asynchronous: bool = True,
    ) -> None:
        self.search = search
        self.ctx = ctx
        self.evaluator = evaluator
        self.workers = workers
        self.commit = commit
        self.publish = publish
        self.claim_position = claim_position
        self.fit_kwargs = fit_kwargs
        self.failed_out = failed_out
        self.trial_timeout = trial_timeout
        self.n_points = n_points
        self.stop_on_timeout = stop_on_timeout
        self.asynchronous = asynchronous
        self._running: dict[int, _Running] = {}
        self._next_id = 0
        # seconds of the latest proposal
        self._propose_seconds = 0.0
        # seconds of the recent proposals made with trials running, and without
        self._propose_costs: dict[bool, deque[float]] = {
            True: deque(maxlen=_RECENT),
            False: deque(maxlen=_RECENT),
        }
        # until when the loop waits for running trials instead of asking
        self._waiting_until: float | None = None
        # per-fold seconds of the latest finished trials
        self._fold_seconds: deque[float] = deque(maxlen=_RECENT)
        # committed trials of the current synchronous batch, not yet published
        self._batch: dict[int, tuple[Any, list]] = {}
        # proposed trials waiting for a free worker (with a trial_timeout only)
        self._backlog: deque[Trial] = deque()
        self._warned_held = False

    # ------------------------------------------------------------------
    def run(self) -> None:
        """The search: fill the workers, collect, repeat; then the final trials."""
        ctx = self.ctx
        asking = True
        while True:
            self._start_backlog()
            if asking:
                asking = self._fill()
            if not self._running and not (
                self.workers.held and (asking or self._backlog)
            ):
                break
            # (with nothing running, this waits for a held worker to free)
            self._collect(self.workers.wait(self._wait_timeout(self._stop_at())))
            self._expire()
            if time.perf_counter() >= self.ctx.start_time + self._stop_at():
                # max_time is a promise: running trials are stopped, not
                # waited for; none of them is recorded, except final ones,
                # which get the final trials' grace period
                self._abandon()
                break
        # the final trials, and any held since asked for
        final = self.search._finalize(ctx) or []
        grace = final_deadline(ctx.max_time)
        self._free_for_final(final, grace)
        self._submit(final)
        while self._running or self._backlog:
            self._collect(self.workers.wait(self._wait_timeout(grace)))
            self._expire(final=True)
            self._start_backlog()
            past_grace = time.perf_counter() >= ctx.start_time + grace
            if self._backlog and not self._running and past_grace:
                self._drop_held_final()
        raise_if_all_failed(ctx, at_end=True)

    # ------------------------------------------------------------------
    def _stop_at(self) -> float:
        """Seconds after the start at which running trials are stopped: at
        ``max_time``, or at the end of the grace period while no trial has
        finished yet (so that a result exists whenever a fit can finish)."""
        max_time = self.ctx.max_time
        if max_time is None:
            return math.inf
        return max_time if self.ctx.trials else final_deadline(max_time)

    def _folds_left(self) -> int:
        return sum(r.n_left for r in self._running.values())

    def _free_workers(self) -> int:
        """Workers not held by a fit the backend could not stop."""
        return self.workers.n_workers - self.workers.held

    def _wants_work(self) -> bool:
        if not self.asynchronous:
            return not self._running
        if self._folds_left() >= self._free_workers() + self._ahead():
            return False
        return not self._sooner_after_running()

    def _sooner_after_running(self) -> bool:
        """Whether the next trial starts sooner if the search waits for the
        running trials and then proposes without them pending.

        A strategy may pay much more for a proposal with trials pending (the
        trade-off search averages over fantasies of their score and time).
        Where fits are cheap next to that, a worker idles through the costly
        proposal anyway: waiting for the running trials, then proposing
        without them, starts the next trial sooner, and it sees their
        results. The wait is bounded by the difference of the two costs, so a
        running trial slower than predicted costs at most that.
        """
        recent = self._propose_costs
        if not self._running or not recent[True] or not recent[False]:
            self._waiting_until = None
            return False
        now = time.perf_counter()
        if self._waiting_until is None:
            saving = float(np.median(recent[True]) - np.median(recent[False]))
            fold = float(np.median(self._fold_seconds)) if self._fold_seconds else 0.0
            remaining = self._folds_left() * fold / max(1, self._free_workers())
            if not remaining < saving:
                return False
            self._waiting_until = now + saving
        return now < self._waiting_until

    def _ahead(self) -> int:
        """Folds to keep queued so that a worker freeing while the next trial
        is proposed finds work: twice those the workers run during one
        proposal (proposals vary in cost), at most one trial's. The cheapest
        recent folds set it, as trials on small subsets interleave with
        costly ones. One worker proposes after each trial, as a sequential
        search does (its proposals then see every result); with a
        ``trial_timeout`` trials are submitted only as a worker frees, since
        a trial's clock starts at its submission and waiting in a queue is
        not running."""
        n_workers = self.workers.n_workers
        fold = min(self._fold_seconds, default=0.0)
        if n_workers == 1 or self.trial_timeout is not None or not fold > 0:
            return 0
        folds = _AHEAD_MARGIN * n_workers * self._propose_seconds / fold
        return min(self.ctx.n_splits, math.ceil(folds))

    def _fill(self) -> bool:
        """Ask for trials while a worker would otherwise idle; False once the
        strategy or the budget has nothing more to give."""
        ctx = self.ctx
        while not self._backlog and self._wants_work():
            n_free = ctx.n_remaining()
            started = bool(ctx.trials or self._running)
            # the first trials run whatever max_time says, so a result exists
            if n_free <= 0 or (started and ctx.time_left() <= 0):
                return False
            start = time.perf_counter()
            with_pending = bool(ctx.pending)
            trials = self.search._ask(ctx, min(self._batch_size(), n_free))[:n_free]
            self._propose_seconds = time.perf_counter() - start
            self._propose_costs[with_pending].append(self._propose_seconds)
            self._waiting_until = None
            if not trials:
                # a strategy may wait for running trials before it proposes
                return bool(self._running)
            self._submit(trials)
        return True

    def _batch_size(self) -> int:
        if self.n_points is not None:
            return int(self.n_points)
        # enough trials for every worker: each trial runs n_splits folds
        idle = self._free_workers() - self._folds_left()
        return max(1, math.ceil(idle / self.ctx.n_splits))

    def _submit(self, trials: list[Trial]) -> None:
        """Start the trials, or with a ``trial_timeout`` hold those no worker
        is free for: a trial's clock starts when it is started, and a trial
        waiting behind others would run out of time without running."""
        for trial in trials:
            self.ctx.pending.append(trial)
            self._backlog.append(trial)
        self._start_backlog()

    def _start_backlog(self) -> None:
        ctx = self.ctx
        while self._backlog and (
            self.trial_timeout is None or self._folds_left() < self._free_workers()
        ):
            trial = self._backlog.popleft()
            jobs = self.evaluator.fold_jobs(
                trial.params,
                trial.fraction,
                self.fit_kwargs(ctx.n_splits),
                candidate_progress=(len(ctx.trials) + len(self._running), ctx.budget),
            )
            timeout = math.inf if self.trial_timeout is None else self.trial_timeout
            tid = self._begin(trial, len(jobs), timeout)
            for k, (func, kwargs) in enumerate(jobs):
                self.workers.submit((tid, k), func, kwargs)

    def _free_for_final(self, final: list[Trial], grace: float) -> None:
        """Stop the fits left running at ``max_time`` (their trials are not
        recorded) when they hold the workers the final trials need, and
        starting the workers afresh leaves most of the grace period."""
        if not (final or self._backlog) or self._running or not self.workers.held:
            return
        left = self.ctx.start_time + grace - time.perf_counter()
        if left >= _RESTART_MARGIN * self.workers.restart_seconds:
            self.workers.release_held()

    def _begin(self, trial: Trial, n_jobs: int, timeout: float) -> int:
        tid = self._next_id
        self._next_id += 1
        start = time.perf_counter()
        self._running[tid] = _Running(
            trial, self.claim_position(), [None] * n_jobs, start, start + timeout
        )
        return tid

    def _drop_held_final(self) -> None:
        """Record the final trials no worker was free for by the end of the
        grace period (every worker held by a fit the backend could not stop)
        as stopped."""
        now = time.perf_counter()
        reason = (
            "No worker was free for the final trial before max_time's grace "
            "period ended: the workers still ran fits the search had stopped "
            "waiting for."
        )
        while self._backlog:
            trial = self._backlog.popleft()
            trial.stopped = True
            tid = self._begin(trial, self.ctx.n_splits, 0.0)
            outs = [
                self.failed_out(test, 0.0, reason) for _, test in self.evaluator.splits
            ]
            self._finish(tid, outs, now)

    def _collect(self, results: list) -> None:
        finished = []
        for (tid, k), out in results:
            running = self._running.get(tid)
            if running is None:  # stopped at a deadline meanwhile
                continue
            running.outs[k] = out
            running.n_left -= 1
            if running.n_left == 0:
                finished.append(tid)
        finish = time.perf_counter()
        # trials finishing together are recorded in proposal order
        for tid in sorted(finished):
            self._finish(tid, self._running[tid].outs, finish)

    def _finish(self, tid: int, outs: list, finish: float) -> None:
        running = self._running.pop(tid)
        seconds = [o["fit_time"] + o["score_time"] for o in outs]
        self._fold_seconds.append(sum(seconds) / len(seconds))
        self.ctx.pending.remove(running.trial)
        record = self.commit(running.trial, outs, running.position, finish)
        self._batch[tid] = (record, outs)
        if self.asynchronous or not (self._running or self._backlog):
            self._publish_batch()

    def _publish_batch(self) -> None:
        for tid in sorted(self._batch):
            self.publish(*self._batch[tid])
        self._batch.clear()
        raise_if_all_failed(self.ctx)

    def _wait_timeout(self, stop_at: float) -> float | None:
        deadlines = [r.deadline for r in self._running.values()]
        deadlines.append(self.ctx.start_time + stop_at)
        if (
            self._waiting_until is not None
            and self._waiting_until > time.perf_counter()
        ):
            # (one past stays set until the next proposal: not a deadline)
            deadlines.append(self._waiting_until)
        soonest = min(deadlines, default=math.inf)
        if not math.isfinite(soonest):
            return None
        return max(0.0, soonest - time.perf_counter())

    def _expire(self, final: bool = False) -> None:
        """Stop the trials past their deadline and record them as failed."""
        now = time.perf_counter()
        limit = math.inf
        if final:
            limit = self.ctx.start_time + final_deadline(self.ctx.max_time)
        late = [
            tid for tid, r in self._running.items() if min(r.deadline, limit) <= now
        ]
        if not late:
            return
        n_splits = self.ctx.n_splits
        # at the end, the workers' close ends the late fits: no restart
        keys = {(tid, k) for tid in late for k in range(n_splits)}
        lost = self.workers.discard(keys, stop=not final)
        if not final and self.workers.held and not self._warned_held:
            self._warned_held = True
            warnings.warn(
                f"A trial ran past trial_timeout={self.trial_timeout}s under a "
                "joblib backend that cannot stop a running fit: the trial is "
                "recorded as failed, but its fits hold their workers until they "
                "end, and no trial is started on a held worker. The default "
                "backend (loky) stops such fits.",
                UserWarning,
                stacklevel=2,
            )
        for tid, running in self._running.items():
            if tid not in late:
                # their fits started again with the workers
                running.deadline += lost
        for tid in late:
            running = self._running[tid]
            seconds = now - running.started
            if running.deadline <= now:
                reason = (
                    f"The trial ran past trial_timeout={self.trial_timeout}s and "
                    "was stopped."
                )
            else:
                reason = (
                    f"The final trial ran past max_time={self.ctx.max_time}s plus "
                    "its grace period and was stopped."
                )
                running.trial.stopped = True
            if self.stop_on_timeout:
                raise TimeoutError(f"{reason} Parameters: {running.trial.params!r}.")
            outs = [
                out
                if out is not None
                else self.failed_out(self.evaluator.splits[k][1], seconds, reason)
                for k, out in enumerate(running.outs)
            ]
            self._finish(tid, outs, now)

    def _abandon(self) -> None:
        """Stop waiting for every running trial but the final ones (see
        ``Trial.final``), and drop those held; none of them is recorded.

        Their fits are left to finish, unless the final trials need their
        workers and the grace period leaves time to start the workers afresh
        (``_free_for_final``); the workers' ``close`` ends any still running
        when the search returns.
        """
        n_splits = self.ctx.n_splits
        stopped = [tid for tid, r in self._running.items() if not r.trial.final]
        keys = {(tid, k) for tid in stopped for k in range(n_splits)}
        self.workers.discard(keys, stop=False)
        for tid in stopped:
            self.ctx.pending.remove(self._running.pop(tid).trial)
        # and those not started yet are dropped, final ones kept
        for trial in [t for t in self._backlog if not t.final]:
            self._backlog.remove(trial)
            self.ctx.pending.remove(trial)
        self._publish_batch()
