"""Persistent journal of search runs and their trials in an SQLite file.

A :class:`TrialStore` lets a search resume after it was killed (finished trials are
read back, the surrogate is rebuilt and the budget continues) and lets
:class:`~skbayes_search.TransferBayesSearchCV` learn from earlier runs on other
datasets. It uses only the standard library's :mod:`sqlite3`.

The file format (the schema and the JSON encoding of values) is documented in
:mod:`skbayes_search._store_format`. :class:`TrialStore` is defined here; its
methods come from private base classes, one module per concern: the connection
(``_store_connection``), runs (``_store_runs``), trials (``_store_trials``) and
leases (``_store_leases``).

Concurrency
-----------
The file is in WAL mode; each write is one ``BEGIN IMMEDIATE`` transaction, committed
before the method returns, so a killed search loses at most the trial being run.
Writers wait for each other (busy timeout) and retry when SQLite still reports the
database as locked, so several processes may write to one store at once. WAL needs a
local file system (not NFS).

A *run* is held by one live search at a time (a lease, see :class:`TrialStore`),
unless the searches ask to cooperate on it (``TrialStore(path, cooperate=True)``).
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from typing import Any

import numpy as np

from ._store_format import SCHEMA_VERSION
from ._store_json import from_json, to_json
from ._store_leases import LEASE_SECONDS, RunHeldError, StoreLeases
from ._store_records import TRIAL_FIELDS, StoredTrialError
from ._store_runs import StoreRuns
from ._store_trials import StoreTrials

__all__ = [
    "SCHEMA_VERSION",
    "TRIAL_FIELDS",
    "RunHeldError",
    "StoredTrialError",
    "TrialStore",
    "from_json",
    "to_json",
]


class TrialStore(StoreTrials, StoreRuns, StoreLeases):
    """Journal of search runs and their trials in one SQLite file.

    Pass a store to a search (``store=TrialStore("runs.db"), run_name="svc-1"``) to
    resume the run after an interruption, or to let a transfer search read earlier
    runs. Every trial is committed as soon as it is added. Several processes may
    write to the same file at once. See :mod:`skbayes_search._store_format` for
    the schema and the JSON encoding; values are never pickled.

    Creating a ``TrialStore`` is cheap and touches no file: the path is checked,
    and the file opened or created, on first use. A store can therefore be a
    scikit-learn parameter: it is picklable and copyable (the open connection is not
    carried over, the copy reconnects), and two stores are equal when their paths
    and ``cooperate`` are.

    **What a run is made from.** A search records in its run a fingerprint of its
    data ``X`` and ``y``, CV splits, scoring and estimator (and the run keeps its
    strategy and search space). Resuming the run with anything else is refused
    with a :class:`ValueError` naming the store, the run and what differs, before
    any fit. A run made by an older version (schema 1) records no fingerprint and
    is refused too, until :meth:`adopt_run` is called for it.

    **One search per run.** A search holds its run through a lease in the store
    while it runs (renewed as it goes, released when it ends). A second search on
    a held run raises :class:`RunHeldError` naming the store and the run. A
    killed search gives its run up: at once on the same host (its process is
    gone), after ``lease_seconds`` from another host.

    **Cooperation.** Searches given ``TrialStore(path, cooperate=True)`` may run
    at once on one run (from several processes or hosts): they share its budget
    (``n_iter`` counts the trials of all of them), each trial position is claimed
    by one of them only, a configuration is stored once, each reads the others'
    finished trials as they come (its ``cv_results_`` holds all the run's trials it
    has seen) and each stops when the run's budget is claimed. A search that does
    not cooperate is refused while cooperating ones hold the run, and the other
    way round. Cooperation is for strategies whose budget is ``n_iter`` trials
    (:class:`~skbayes_search.BayesSearchCV`,
    :class:`~skbayes_search.TradeoffBayesSearchCV`,
    :class:`~skbayes_search.TransferBayesSearchCV`).

    Parameters
    ----------
    path : str or os.PathLike
        Path of the SQLite file; it is created on first use, its directory must
        exist.
    cooperate : bool, default=False
        Let several searches work on one run at once, sharing its budget.
    lease_seconds : float, default=60.0
        How long a lease lasts without renewal: the time after which a run
        held by a search killed on another host may be taken over.

    Attributes
    ----------
    path : str or os.PathLike
        The path given.
    cooperate : bool
    lease_seconds : float

    Examples
    --------
    >>> import tempfile, os
    >>> from skbayes_search.storage import TrialStore
    >>> path = os.path.join(tempfile.mkdtemp(), "runs.db")
    >>> with TrialStore(path) as store:
    ...     run = store.open_run("demo", strategy="bayes",
    ...                          estimator_class="sklearn.svm.SVC",
    ...                          space_signature={"C": ["real", 0.1, 10]})
    ...     store.add_trial(run, {
    ...         "params": {"C": 1.0}, "x": [0.5], "fraction": 1.0,
    ...         "status": "ok", "scores": {"test": {"score": [0.9, 0.8]}},
    ...         "fit_times": [0.1, 0.1], "score_times": [0.01, 0.01],
    ...         "n_test_samples": [50, 50]})
    ...     store.trials(run)[0]["scores"]["test"]["score"]
    0
    [0.9, 0.8]

    Two processes sharing one run of 8 trials (run this as a script; each
    process runs about half of the trials):

    .. code-block:: python

        from multiprocessing import Process

        from sklearn.datasets import load_iris
        from sklearn.linear_model import LogisticRegression

        from skbayes_search import BayesSearchCV, Real, TrialStore


        def work():
            X, y = load_iris(return_X_y=True)
            BayesSearchCV(
                LogisticRegression(max_iter=500),
                {"C": Real(1e-3, 1e3, prior="log-uniform")},
                n_iter=8,
                cv=3,
                random_state=0,
                store=TrialStore("runs.db", cooperate=True),
                run_name="shared",
            ).fit(X, y)


        if __name__ == "__main__":
            workers = [Process(target=work) for _ in range(2)]
            for p in workers:
                p.start()
            for p in workers:
                p.join()
            store = TrialStore("runs.db")
            print(len(store.trials(store.run_id("shared"))))  # 8
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        cooperate: bool = False,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(
                "TrialStore: path must be a str or os.PathLike naming the SQLite "
                f"file, got {path!r} ({type(path).__name__})"
            )
        if not os.fspath(path):
            raise ValueError("TrialStore: path must not be empty")
        if not isinstance(cooperate, (bool, np.bool_)):
            raise TypeError(
                f"TrialStore: cooperate must be a bool, got {cooperate!r} "
                f"({type(cooperate).__name__})"
            )
        if (
            isinstance(lease_seconds, (bool, np.bool_))
            or not isinstance(lease_seconds, (int, float, np.integer, np.floating))
            or not math.isfinite(lease_seconds)
            or lease_seconds <= 0
        ):
            raise ValueError(
                "TrialStore: lease_seconds must be a positive number of seconds, "
                f"got {lease_seconds!r}"
            )
        self.path = path
        self.cooperate = bool(cooperate)
        self.lease_seconds = float(lease_seconds)
        self._reset()

    def _reset(self) -> None:
        self._connection: sqlite3.Connection | None = None
        self._pid: int | None = None
        # Guards the shared connection: joblib's threading backend or callbacks
        # may call the store from several threads.
        self._lock = threading.RLock()

    # -- Python protocol -------------------------------------------------------

    def __repr__(self) -> str:
        extra = ""
        if self.cooperate:
            extra += ", cooperate=True"
        if self.lease_seconds != LEASE_SECONDS:
            extra += f", lease_seconds={self.lease_seconds!r}"
        return f"{type(self).__name__}({os.fspath(self.path)!r}{extra})"

    def _key(self) -> tuple[str, bool]:
        return os.path.abspath(os.fspath(self.path)), self.cooperate

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TrialStore):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __getstate__(self) -> dict[str, Any]:
        # A connection cannot cross processes; the copy reconnects on first use.
        return {
            "path": self.path,
            "cooperate": self.cooperate,
            "lease_seconds": self.lease_seconds,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self.cooperate = state.get("cooperate", False)
        self.lease_seconds = state.get("lease_seconds", LEASE_SECONDS)
        self._reset()

    def __enter__(self) -> TrialStore:
        with self._lock:
            self._conn()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; the store reopens it when used again."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None
            self._pid = None
