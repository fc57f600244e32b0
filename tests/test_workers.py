"""The process pool that runs fits: stopping it must stay silent."""

import threading
import time

from skbayes_search._workers import FutureWorkers


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
