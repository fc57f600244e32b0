"""Workers that run fold fits and hand each back the moment it finishes.

The search keeps every worker busy by proposing a trial whenever one frees
up, so it needs futures rather than joblib's batch ``Parallel`` call. The
workers follow joblib's active backend:

- loky (the default) and multiprocessing: joblib's reusable memory-mapping
  process executor (large arrays are memory-mapped, not copied per fit); a
  fit past its deadline is stopped by ending the worker processes, and the
  other running fits are started again;
- ``joblib.parallel_backend("dask")``: the backend's distributed client,
  with the data scattered to the workers once; a fit lost with its worker
  is resubmitted by the scheduler; a running fit cannot be stopped (Dask
  only forgets its result), so the search stops waiting for it and counts
  its worker as held until it ends;
- threading: a thread pool (a running fit cannot be stopped either; its
  thread is held the same way);
- one job and nothing to stop: fits run inline, one after the other;
- any other backend: a batch through ``joblib.Parallel`` whenever the search
  waits, whose results come back one by one as they finish (trials proposed
  meanwhile wait for the next batch); a running fit cannot be stopped.

The dask and batch workers live in :mod:`._workers_cluster`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import queue
import time
import uuid
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

from joblib import effective_n_jobs
from joblib.parallel import get_active_backend

__all__ = ["Workers", "make_workers"]

# A fit lost with its worker process (a crash, not an exception of the fit)
# is started again this many times before the search gives up.
_MAX_RESUBMITS = 3


class Workers:
    """Fold jobs in, finished results out.

    Attributes
    ----------
    n_workers : int
        Fits that run at the same time.
    can_stop : bool
        Whether :meth:`discard` stops a running fit (else it only stops
        waiting for it).
    """

    n_workers: int = 1
    can_stop: bool = False
    #: Seconds it took to start the workers (processes import scikit-learn).
    startup_seconds: float = 0.0

    def __init__(self) -> None:
        # futures of the fits no longer waited for that may still be running
        self._orphans: list[Any] = []

    @property
    def held(self) -> int:
        """Fits no longer waited for that still occupy a worker (a backend
        that cannot stop a fit runs it to its end): a trial started meanwhile
        would wait behind them."""
        self._orphans = [f for f in self._orphans if not f.done()]
        return len(self._orphans)

    def submit(self, key: Hashable, func: Callable, kwargs: dict) -> None:
        """Start ``func(**kwargs)``; its result comes back under ``key``."""
        raise NotImplementedError

    def wait(self, timeout: float | None) -> list[tuple[Hashable, Any]]:
        """Results of the jobs that finished, waiting up to ``timeout`` seconds
        for at least one (``None``: until one finishes), or for a held fit to
        end (which frees its worker but returns nothing).

        An exception raised by a job (``error_score="raise"``) is raised here.
        """
        raise NotImplementedError

    def discard(self, keys: set, stop: bool = True) -> float:
        """Stop the jobs under ``keys`` (where the backend can), or with
        ``stop=False`` only stop waiting for them: they finish unseen, and
        :meth:`close` stops those still running.

        Returns the seconds the other jobs lost (workers started again).
        """
        raise NotImplementedError

    def release_held(self) -> float:
        """Stop the held fits where the backend can (by starting the workers
        afresh); returns the seconds that took."""
        return 0.0

    #: Seconds starting the workers afresh is expected to take.
    restart_seconds: float = 0.0

    def close(self) -> None:
        """Release the workers; no fit of this search runs after this."""


class InlineWorkers(Workers):
    """Run the jobs in this process, one per :meth:`wait` (nothing to stop).

    A strategy may submit several trials at once (an initial design); each
    fit runs only when the search waits, so every trial is committed the
    moment its last fold finishes, with its own finishing time, before the
    next fit starts.
    """

    def __init__(self) -> None:
        super().__init__()
        self._queue: deque = deque()

    def submit(self, key: Hashable, func: Callable, kwargs: dict) -> None:
        self._queue.append((key, func, kwargs))

    def wait(self, timeout: float | None) -> list[tuple[Hashable, Any]]:
        if not self._queue:
            return []
        key, func, kwargs = self._queue.popleft()
        return [(key, func(**kwargs))]

    def discard(self, keys: set, stop: bool = True) -> float:
        self._queue = deque(job for job in self._queue if job[0] not in keys)
        return 0.0

    def close(self) -> None:
        self._queue.clear()


def _broken(executor: cf.Executor) -> bool:
    flags = getattr(executor, "_flags", None)
    return flags is None or flags.broken is not None


class FutureWorkers(Workers):
    """A ``concurrent.futures`` executor: a process or a thread pool."""

    def __init__(self, n_workers: int, processes: bool) -> None:
        self.n_workers = n_workers
        self.can_stop = processes
        self._processes = processes
        self._context = f"skbayes-{uuid.uuid4().hex}"
        self._executor = self._new_executor()
        super().__init__()
        self._futures: dict[cf.Future, tuple[Hashable, Callable, dict, int]] = {}
        if processes:
            # started (and scikit-learn imported) before the first fit, so a
            # deadline measures fits, not interpreter start-up
            start = time.perf_counter()
            list(self._executor.map(_warm_up, range(n_workers)))
            self.startup_seconds = time.perf_counter() - start

    def _new_executor(self) -> cf.Executor:
        if not self._processes:
            return cf.ThreadPoolExecutor(self.n_workers)
        from joblib._parallel_backends import LokyBackend
        from joblib.executor import get_memmapping_executor

        # the thread limits joblib gives its own workers (no oversubscription),
        # and a context of our own for the memory-mapped arrays
        env = LokyBackend()._prepare_worker_env(n_jobs=self.n_workers)
        executor = get_memmapping_executor(
            self.n_workers, env=env, context_id=self._context
        )
        self._use_own_folder(executor)
        return executor

    def _use_own_folder(self, executor: cf.Executor) -> None:
        """Memory-map this search's arrays into its own folder.

        The executor is shared with every joblib call of the process, and its
        arrays go to the folder of whichever context was made current last
        (joblib's backend makes its own current at each ``Parallel`` call); in
        another context's folder :meth:`close` would not find them, and the
        resource tracker would report them leaked at the interpreter's exit.
        """
        manager = getattr(executor, "_temp_folder_manager", None)
        if manager is not None:
            manager.set_current_context(self._context)

    def submit(self, key: Hashable, func: Callable, kwargs: dict, tries: int = 0):
        if self._processes:
            self._use_own_folder(self._executor)
        future = self._executor.submit(func, **kwargs)
        self._futures[future] = (key, func, kwargs, tries)

    def wait(self, timeout: float | None) -> list[tuple[Hashable, Any]]:
        if not self._futures and not self.held:
            return []
        done, _ = cf.wait(
            [*self._futures, *self._orphans],
            timeout=timeout,
            return_when=cf.FIRST_COMPLETED,
        )
        out = []
        for future in done:
            if future not in self._futures:  # a held fit ended
                continue
            key, func, kwargs, tries = self._futures.pop(future)
            error = future.exception()
            if error is None:
                out.append((key, future.result()))
            elif _worker_lost(error) and tries < _MAX_RESUBMITS:
                # the process died under the fit, not the fit itself
                if self._processes and _broken(self._executor):
                    # a lost worker takes the pool's others with it; their
                    # references to the mapped arrays were never released
                    # (the pool is replaced once, for the first of its lost
                    # fits: the others go to the new one)
                    self._clean_folder(force=True)
                    self._executor = self._new_executor()
                self.submit(key, func, kwargs, tries + 1)
            else:
                raise error
        return out

    def discard(self, keys: set, stop: bool = True) -> float:
        mine = [f for f, job in self._futures.items() if job[0] in keys]
        for f in mine:
            self._futures.pop(f)
        if not self._processes:
            self._orphans.extend(f for f in mine if not f.cancel())
            return 0.0
        # a process pool's futures are never cancelled: loky's manager thread
        # dies on a cancelled one while shutting down, leaving its workers
        # alive (and the interpreter waiting for them at exit)
        unfinished = [f for f in mine if not f.done()]
        if unfinished and stop:
            return self._restart()
        self._orphans.extend(unfinished)
        return 0.0

    @property
    def restart_seconds(self) -> float:  # type: ignore[override]
        if not self._processes:
            return 0.0
        # the pool may have been running before this search (no start-up
        # measured): assume a start as slow as a cold one
        return max(FutureWorkers._last_restart, self.startup_seconds)

    # the latest measured restart of a process pool, in this Python session
    _last_restart: float = 1.5

    def release_held(self) -> float:
        if not self._processes or not self.held:
            return 0.0
        return self._restart()

    def _restart(self) -> float:
        """End every worker process (the only way to stop a running fit) and
        start the other unfinished jobs again; returns the seconds it took."""
        start = time.perf_counter()
        self._kill()
        self._executor = self._new_executor()
        list(self._executor.map(_warm_up, range(self.n_workers)))
        lost = time.perf_counter() - start
        FutureWorkers._last_restart = lost
        unfinished = [(f, job) for f, job in self._futures.items() if not f.done()]
        for f, (key, func, kwargs, tries) in unfinished:
            self._futures.pop(f)
            self.submit(key, func, kwargs, tries)
        return lost

    def _kill(self) -> None:
        """End the worker processes (running fits with them)."""
        # Shutting down with kill_workers, loky's manager thread drops the
        # jobs not yet sent to a worker but then still reads their ids from
        # its queue: it dies on the first with a KeyError traceback printed
        # to the user, and leaves its queues behind. With the queue emptied
        # first it finds nothing to read; the dropped jobs' futures still get
        # loky's ShutdownExecutorError, so nothing is lost.
        ids = getattr(self._executor, "_work_ids", None)
        if ids is not None:
            with contextlib.suppress(queue.Empty):
                while True:
                    ids.get_nowait()
        self._executor.shutdown(wait=True, kill_workers=True)
        # the ended workers never released their references to the mapped
        # arrays, so the counts are off: remove the copies outright, as
        # joblib does after ending its own workers
        self._clean_folder(force=True)

    def _clean_folder(self, force: bool) -> None:
        manager = getattr(self._executor, "_temp_folder_manager", None)
        if manager is not None:
            manager._clean_temporary_resources(
                context_id=self._context, force=force, allow_non_empty=force
            )

    def close(self) -> None:
        busy = [f for f in [*self._futures, *self._orphans] if not f.done()]
        if self._processes:
            if busy:
                # a fit of this search is still running: end its process
                self._kill()
            else:
                # the memory-mapped copies of this search's arrays, as
                # joblib's own backend removes them after each Parallel call
                self._clean_folder(force=False)
        else:
            for f in busy:
                f.cancel()
            self._executor.shutdown(wait=False, cancel_futures=True)
        self._futures.clear()
        self._orphans.clear()


def _warm_up(_: int) -> None:
    import sklearn.model_selection._validation  # noqa: F401


def _worker_lost(error: BaseException) -> bool:
    """Whether ``error`` says the worker process died, not that the job failed."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        from joblib.externals.loky.process_executor import (
            ShutdownExecutorError,
            TerminatedWorkerError,
        )
    except ImportError:  # pragma: no cover - loky ships with joblib
        return isinstance(error, BrokenProcessPool)
    return isinstance(
        error, BrokenProcessPool | TerminatedWorkerError | ShutdownExecutorError
    )


def make_workers(
    n_jobs: int | None, pre_dispatch: Any = "2*n_jobs", need_stop: bool = False
) -> Workers:
    """Workers for joblib's active backend (see the module docstring).

    Parameters
    ----------
    n_jobs : int or None
        The search's ``n_jobs``, resolved as joblib resolves it.
    pre_dispatch : int or str
        Passed to ``joblib.Parallel`` for backends run in batches.
    need_stop : bool
        A deadline may have to stop a running fit (``trial_timeout`` or
        ``max_time``): one job then runs in a worker process, not inline.
    """
    from ._workers_cluster import BatchWorkers, DaskWorkers

    backend, _ = get_active_backend()
    name = type(backend).__name__
    n = max(1, effective_n_jobs(n_jobs))
    if name == "DaskDistributedBackend":
        return DaskWorkers(backend.client, n_jobs)
    if name == "ThreadingBackend":
        return FutureWorkers(n, processes=False)
    if name in ("LokyBackend", "MultiprocessingBackend", "SequentialBackend"):
        if n == 1 and not need_stop:
            return InlineWorkers()
        return FutureWorkers(n, processes=True)
    return BatchWorkers(n_jobs, pre_dispatch)
