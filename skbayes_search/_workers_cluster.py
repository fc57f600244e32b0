"""Workers on a cluster: the dask backend's client, or any other joblib
backend (ray's, spark's) run in batches.

Neither can stop a running fit: the search stops waiting for a fit past its
deadline, and the fit holds its worker until it ends (:attr:`Workers.held`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

from joblib import Parallel, delayed, effective_n_jobs

from ._workers import Workers

__all__ = ["BatchWorkers", "DaskWorkers"]


class BatchWorkers(Workers):
    """Run the queued jobs as one ``joblib.Parallel`` batch, and hand each
    result back as it finishes.

    For backends without futures: jobs submitted while a batch runs wait for
    the next batch, but every finished job is returned by the next
    :meth:`wait`, so the search commits each trial as it finishes instead of
    when its whole batch has. A thread reads the batch's results, so that a
    wait ends at its timeout (``max_time``, ``trial_timeout``) even while a fit
    runs on; such a fit cannot be stopped, and holds its worker until it ends.
    """

    def __init__(self, n_jobs: int | None, pre_dispatch: Any) -> None:
        super().__init__()
        self.n_workers = max(1, effective_n_jobs(n_jobs))
        self._parallel = Parallel(
            n_jobs=n_jobs, pre_dispatch=pre_dispatch, return_as="generator_unordered"
        )
        self._queue: list = []
        self._results: queue.Queue | None = None  # the running batch's
        self._batch_keys: set = set()  # its jobs not handed back yet
        self._ignored: set = set()
        self._closed = threading.Event()

    @property
    def held(self) -> int:  # type: ignore[override]
        return len(self._ignored & self._batch_keys)

    def submit(self, key: Hashable, func: Callable, kwargs: dict) -> None:
        self._queue.append((key, func, kwargs))

    def _start_batch(self) -> None:
        jobs, self._queue = self._queue, []
        self._batch_keys = {k for k, _, _ in jobs}
        self._ignored &= self._batch_keys
        self._results = queue.Queue()
        outputs = self._parallel(delayed(_tagged)(k, f, kw) for k, f, kw in jobs)
        threading.Thread(
            target=_drain, args=(outputs, self._results, self._closed), daemon=True
        ).start()

    def wait(self, timeout: float | None) -> list[tuple[Hashable, Any]]:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._results is None:
                if not self._queue:
                    return []
                self._start_batch()
            left = None if end is None else max(0.0, end - time.monotonic())
            try:
                item = self._results.get(timeout=left)
            except queue.Empty:
                return []
            if item is _BATCH_END:
                self._results = None
                continue
            if isinstance(item, BaseException):
                self._results = None
                raise item
            key, out = item
            self._batch_keys.discard(key)
            if key in self._ignored:
                self._ignored.discard(key)
                continue
            return [(key, out)]

    def discard(self, keys: set, stop: bool = True) -> float:
        self._queue = [job for job in self._queue if job[0] not in keys]
        # running in the batch: their results are dropped when they come
        self._ignored |= keys & self._batch_keys
        return 0.0

    def close(self) -> None:
        # the batch's thread stops it at its next result: jobs not yet
        # dispatched are dropped, a running fit ends unseen
        self._closed.set()
        self._results = None
        self._queue = []


_BATCH_END = object()


def _drain(outputs: Any, results: queue.Queue, closed: threading.Event) -> None:
    """Hand a batch's results to ``results`` as they come, then its end."""
    try:
        for item in outputs:
            if closed.is_set():
                outputs.close()
                return
            results.put(item)
    except BaseException as error:  # a job's (error_score="raise")
        results.put(error)
        return
    results.put(_BATCH_END)


def _tagged(key: Hashable, func: Callable, kwargs: dict) -> tuple[Hashable, Any]:
    return key, func(**kwargs)


class DaskWorkers(Workers):
    """The distributed client of joblib's dask backend.

    A cancelled future whose task is running does not stop it: the Dask
    worker runs it to its end and drops the result, and a task sent to that
    worker meanwhile waits behind it. A fit no longer waited for is therefore
    kept (not cancelled) until it ends, and counted in :attr:`held`.
    """

    def __init__(self, client: Any, n_jobs: int | None) -> None:
        super().__init__()
        self._client = client
        self.n_workers = max(1, effective_n_jobs(n_jobs))
        self._futures: dict[Any, Hashable] = {}
        # large arguments (X, y, fit parameters) go to the workers once
        self._scattered: dict[int, tuple[Any, Any]] = {}

    def _scatter(self, value: Any) -> Any:
        if not hasattr(value, "shape") or getattr(value, "nbytes", 0) < 1 << 16:
            return value
        key = id(value)
        if key not in self._scattered:
            remote = self._client.scatter(value, broadcast=True)
            self._scattered[key] = (value, remote)
        return self._scattered[key][1]

    def submit(self, key: Hashable, func: Callable, kwargs: dict) -> None:
        kwargs = {k: self._scatter(v) for k, v in kwargs.items()}
        self._futures[self._client.submit(func, pure=False, **kwargs)] = key

    def wait(self, timeout: float | None) -> list[tuple[Hashable, Any]]:
        from distributed import wait

        if not self._futures and not self.held:
            return []
        try:
            done, _ = wait(
                [*self._futures, *self._orphans],
                timeout=timeout,
                return_when="FIRST_COMPLETED",
            )
        except TimeoutError:
            return []
        out = []
        for future in done:
            if future not in self._futures:  # a held fit ended
                continue
            key = self._futures.pop(future)
            if future.status == "error":
                raise future.exception()
            out.append((key, future.result()))
        return out

    def discard(self, keys: set, stop: bool = True) -> float:
        for future in [f for f, k in self._futures.items() if k in keys]:
            self._futures.pop(future)
            self._orphans.append(future)
        return 0.0

    def close(self) -> None:
        # the scheduler drops what has not started; a running fit ends on
        # its worker, its result forgotten
        for future in [*self._futures, *self._orphans]:
            future.cancel()
        self._futures.clear()
        self._orphans.clear()
