"""Persistent journal of search runs and their trials in an SQLite file.

A :class:`TrialStore` lets a search resume after it was killed (finished trials are
read back, the surrogate is rebuilt and the budget continues) and lets
:class:`~skbayes_search.TransferBayesSearchCV` learn from earlier runs on other
datasets. It uses only the standard library's :mod:`sqlite3`.

The file format (schema version 1 and the JSON encoding of values) is
documented in :mod:`skbayes_search._store_format`, which implements it.

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

import contextlib
import errno
import math
import os
import random
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import numpy as np

from ._store_format import (
    RUN_COLUMNS,
    RUNS_SQL,
    SCHEMA_VERSION,
    SQLITE_HEADER,
    TRIAL_COLUMNS,
    TRIAL_FIELDS,
    StoredTrialError,
    canonical,
    check_mapping,
    check_str,
    create_schema,
    decode_trial,
    encode_trial,
    from_json,
    is_busy,
    schema_state,
    to_json,
)

__all__ = [
    "SCHEMA_VERSION",
    "TRIAL_FIELDS",
    "RunHeldError",
    "StoredTrialError",
    "TrialStore",
    "from_json",
    "to_json",
]

# Seconds one SQLite call waits for another writer, then attempts of the whole
# transaction; together about a minute before giving up.
_BUSY_TIMEOUT = 10.0
_N_ATTEMPTS = 6
# Default seconds a lease lasts without renewal (a search renews it every quarter
# of that while it runs, and with every trial it writes).
_LEASE_SECONDS = 60.0
_HOST = socket.gethostname()

_T = TypeVar("_T")


class RunHeldError(RuntimeError):
    """A run is held by another live search (or this search lost its lease)."""


# What each part of a run's fingerprint is, for messages (see
# skbayes_search._journal.run_fingerprint).
_FINGERPRINT_LABELS = {
    "X": "data X",
    "y": "targets y",
    "cv_splits": "CV splits",
    "scoring": "scoring",
    "train_scores": "return_train_score",
    "estimator": "estimator",
}


def _short(value: Any) -> str:
    """A fingerprint part for a message: compact JSON, cut at 200 characters."""
    text = "none" if value is None else canonical(value, "fingerprint")
    return text if len(text) <= 200 else text[:197] + "..."


def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    except OSError as exc:  # pragma: no cover - platform specific
        return exc.errno != errno.ESRCH
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc: trust kill
    return state not in (b"Z", b"X")


def _lease_live(host: str, pid: int, thread: int, expires: float, now: float) -> bool:
    """Whether a lease row still holds its run.

    Expired leases never do. On this host, a lease of a dead process does not;
    in this process, neither does a lease of a thread that has ended or of the
    calling thread (a thread runs one search at a time, so its earlier search
    ended without releasing the run, e.g. by an exception).
    """
    if expires <= now:
        return False
    if host != _HOST:
        return True
    if pid != os.getpid():
        return _pid_alive(pid)
    if thread == threading.get_ident():
        return False
    return any(t.ident == thread for t in threading.enumerate())


# ----------------------------------------------------------------------- store


class TrialStore:
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
        lease_seconds: float = _LEASE_SECONDS,
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
        if self.lease_seconds != _LEASE_SECONDS:
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
        self.lease_seconds = state.get("lease_seconds", _LEASE_SECONDS)
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

    # -- connection ------------------------------------------------------------

    def _retry(self, work: Callable[[], _T]) -> _T:
        """Run ``work`` again while SQLite reports the database as locked."""
        for attempt in range(_N_ATTEMPTS - 1):
            try:
                return work()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
            # Jitter so that waiting writers do not collide again in step.
            time.sleep(random.uniform(0.05, 0.2) * 2**attempt)
        return work()

    def _conn(self) -> sqlite3.Connection:
        """Return the connection of this process, opening and checking the file."""
        if self._connection is not None and self._pid == os.getpid():
            return self._connection
        # A connection inherited through fork must not be used (nor closed) here.
        self._connection = None
        path = os.path.abspath(os.fspath(self.path))
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            raise ValueError(
                f"TrialStore path {os.fspath(self.path)!r}: directory {directory!r} "
                "does not exist; create it first"
            )
        if os.path.isdir(path):
            raise ValueError(
                f"TrialStore path {os.fspath(self.path)!r} is a directory; expected "
                "an SQLite file (existing or to be created)"
            )
        exists = os.path.exists(path)
        if exists and not os.path.isfile(path):
            raise ValueError(
                f"TrialStore path {os.fspath(self.path)!r} is not a regular file; "
                "expected an SQLite file (existing or to be created)"
            )
        if not os.access(directory, os.W_OK | os.X_OK):
            raise PermissionError(
                f"TrialStore path {os.fspath(self.path)!r}: directory {directory!r} "
                "is not writable; the store needs to write the file and its "
                "journal (-wal, -shm) there. Choose a writable directory."
            )
        if exists and not os.access(path, os.R_OK | os.W_OK):
            raise PermissionError(
                f"TrialStore path {os.fspath(self.path)!r} is not readable and "
                "writable by this process"
            )
        if exists and os.path.getsize(path) > 0:
            with open(path, "rb") as f:
                header = f.read(len(SQLITE_HEADER))
            if header != SQLITE_HEADER:
                raise ValueError(
                    f"{os.fspath(self.path)!r} is not an SQLite database; expected a "
                    "skbayes_search TrialStore file or a path for a new one"
                )
        conn = None
        try:
            conn = sqlite3.connect(
                path,
                timeout=_BUSY_TIMEOUT,
                isolation_level=None,  # transactions are explicit (BEGIN IMMEDIATE)
                check_same_thread=False,  # access is serialised by self._lock
            )
            self._retry(lambda: self._check_schema(conn))
            # Only after the check, so that a foreign database is never modified.
            self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
            conn.execute("PRAGMA foreign_keys=ON")
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, sqlite3.Error) and not (
                isinstance(exc, sqlite3.OperationalError) and is_busy(exc)
            ):
                raise self._open_error(exc) from exc
            raise
        self._connection, self._pid = conn, os.getpid()
        return conn

    def _open_error(self, exc: sqlite3.Error) -> Exception:
        """The error to raise for an SQLite error while opening the file."""
        where = f"TrialStore {os.fspath(self.path)!r}"
        text = str(exc)
        if any(word in text.lower() for word in ("unable to open", "readonly")):
            return PermissionError(
                f"{where}: SQLite cannot open or write the file ({text}); check "
                "that the file and its directory are writable by this process"
            )
        return ValueError(
            f"{where} is not a readable SQLite database ({text}); expected a "
            "skbayes_search TrialStore file"
        )

    def _schema_state(self, conn: sqlite3.Connection) -> str:
        """Return "store" or "empty", raise ValueError for anything else."""
        return schema_state(conn, self.path)

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        create_schema(conn, self.path)

    def _write(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work`` in one immediate transaction, retrying while locked."""

        def attempt() -> _T:
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
            return result

        with self._lock, self._named_errors():
            return self._retry(attempt)

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        def attempt() -> list[tuple]:
            return self._conn().execute(sql, args).fetchall()

        with self._lock, self._named_errors():
            return self._retry(attempt)

    @contextlib.contextmanager
    def _named_errors(self) -> Iterator[None]:
        """Turn an SQLite error (but "locked") into one naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):
                raise
            raise ValueError(
                f"TrialStore {os.fspath(self.path)!r}: SQLite error ({exc}); the "
                "file is damaged or was modified outside skbayes_search"
            ) from exc

    # -- runs -----------------------------------------------------------------

    def open_run(
        self,
        name: str,
        *,
        strategy: str,
        estimator_class: str,
        space_signature: Any,
        meta: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
        fingerprint: Mapping[str, Any] | None = None,
    ) -> int:
        """Create the run ``name``, or return its id if it exists.

        Parameters
        ----------
        name : str
            Unique name of the run.
        strategy : str
            Name of the search strategy.
        estimator_class : str
            Qualified class name of the searched estimator.
        space_signature : list or dict
            JSON-able description of the search space
            (:meth:`SearchSpace.signature`).
        meta : dict, default=None
            Dataset meta-features, e.g. ``n_samples``, ``n_features``,
            ``n_classes``.
        settings : dict, default=None
            Search settings relevant to resume.
        fingerprint : dict, default=None
            JSON-able description of what the run is made from (the searches
            record the data, CV splits, scoring and estimator; see
            :func:`skbayes_search._journal.run_fingerprint`). Recorded with a new
            run; an existing run must have recorded an equal one. ``None``
            neither records nor checks anything.

        Returns
        -------
        run_id : int
            Id of the new or existing run.

        Raises
        ------
        ValueError
            If the run exists with another strategy, estimator class or search
            space, or (with ``fingerprint``) with another fingerprint or none:
            a run can only be resumed by the same search on the same data. The
            message names the store, the run and what differs.

        Notes
        -----
        Opening an existing run marks it as running again (``status``
        ``"running"``, ``finished`` None) until the next :meth:`finish_run`, so
        that an interrupted resume does not pass for a finished run. Its ``meta``
        and ``settings`` are kept as first stored.
        """
        check_str(name, "name")
        check_str(strategy, "strategy")
        check_str(estimator_class, "estimator_class")
        signature = canonical(space_signature, "space_signature")
        meta_json = to_json(dict(check_mapping(meta, "meta")), "meta")
        settings_json = to_json(dict(check_mapping(settings, "settings")), "settings")
        fingerprint_json = None
        if fingerprint is not None:
            fingerprint_json = canonical(
                dict(check_mapping(fingerprint, "fingerprint")), "fingerprint"
            )

        def work(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT id, fingerprint, strategy, estimator_class, space_signature "
                "FROM runs WHERE name = ?",
                (name,),
            ).fetchone()
            if row is None:
                cursor = conn.execute(
                    "INSERT INTO runs (name, strategy, estimator_class, "
                    "space_signature, meta, settings, created, finished, status, "
                    "fingerprint) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 'running', ?)",
                    (
                        name,
                        strategy,
                        estimator_class,
                        signature,
                        meta_json,
                        settings_json,
                        time.time(),
                        fingerprint_json,
                    ),
                )
                return int(cursor.lastrowid)
            run_id, stored_fingerprint, *stored = row
            given = (strategy, estimator_class, signature)
            labels = ("strategy", "estimator_class", "space_signature")
            diffs = [
                f"{label}: stored {old:.200}, given {new:.200}"
                for label, old, new in zip(labels, stored, given)
                if old != new
            ]
            if diffs:
                raise ValueError(
                    f"run {name!r} in {os.fspath(self.path)!r} was made by another "
                    f"search and cannot be resumed by this one ({'; '.join(diffs)}). "
                    "Use another run_name, or the same strategy, estimator and "
                    "search space."
                )
            if fingerprint_json is not None:
                self._check_fingerprint(
                    conn, name, run_id, stored_fingerprint, fingerprint_json
                )
            conn.execute(
                "UPDATE runs SET finished = NULL, status = 'running' WHERE id = ?",
                (run_id,),
            )
            return int(run_id)

        return self._write(work)

    def _check_fingerprint(
        self,
        conn: sqlite3.Connection,
        name: str,
        run_id: int,
        stored_json: str | None,
        given_json: str,
    ) -> None:
        where = f"run {name!r} in store {os.fspath(self.path)!r}"
        if stored_json is None:
            raise ValueError(
                f"{where} records no fingerprint of the data, CV splits, scoring "
                "and estimator it was made with (it was made by an older "
                "skbayes_search, or through TrialStore.open_run without one), so "
                "resuming it could mix trials of other data into this search. "
                "Start a new run (another run_name), or, if you know it was made "
                "from exactly the data and settings given now, adopt it "
                f"explicitly first: TrialStore({os.fspath(self.path)!r})"
                f".adopt_run({name!r})."
            )
        stored = self._decode_json(stored_json, f"{where}: fingerprint")
        given = from_json(given_json)
        if stored == {}:
            # adopted: this search's fingerprint becomes the run's
            conn.execute(
                "UPDATE runs SET fingerprint = ? WHERE id = ?", (given_json, run_id)
            )
            return
        if not isinstance(stored, dict):
            raise ValueError(f"{where}: its fingerprint is damaged ({stored_json:.80})")
        order = list(_FINGERPRINT_LABELS)
        keys = sorted(
            set(stored) | set(given),
            key=lambda k: (order.index(k) if k in order else len(order), k),
        )
        differ = [k for k in keys if stored.get(k) != given.get(k)]
        if differ:
            labels = [_FINGERPRINT_LABELS.get(k, k) for k in differ]
            details = "; ".join(
                f"{k}: stored {_short(stored.get(k))}, given {_short(given.get(k))}"
                for k in differ
            )
            raise ValueError(
                f"{where} cannot be resumed by this search: it was made from other "
                f"{', '.join(labels)} ({details}). A run continues only on the "
                "data, CV splits, scoring and estimator it was made with; use "
                "another run_name to start a new run."
            )

    def _decode_json(self, text: Any, where: str) -> Any:
        try:
            return from_json(text)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where} is not readable JSON ({exc})") from None

    def adopt_run(self, name: str) -> None:
        """Let the next search that opens run ``name`` record its fingerprint.

        A run made by an older skbayes_search (or through :meth:`open_run`
        without a fingerprint) records nothing of the data, CV splits, scoring
        and estimator it was made from, and searches refuse to resume it. Call
        this once, if you know what the run was made from, to let the next
        search resume it and record its own fingerprint; later searches are
        then checked against that one.

        Parameters
        ----------
        name : str
            Run name.
        """
        check_str(name, "name")

        def work(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(
                "UPDATE runs SET fingerprint = '{}' WHERE name = ?", (name,)
            )
            if cursor.rowcount == 0:
                raise ValueError(f"no run named {name!r} in {os.fspath(self.path)!r}")

        self._write(work)

    def finish_run(self, run_id: int) -> None:
        """Mark a run as finished (status ``"finished"``, ``finished`` set to now).

        Parameters
        ----------
        run_id : int
            Id returned by :meth:`open_run`.
        """

        def work(conn: sqlite3.Connection) -> None:
            cursor = conn.execute(
                "UPDATE runs SET finished = ?, status = 'finished' WHERE id = ?",
                (time.time(), int(run_id)),
            )
            if cursor.rowcount == 0:
                raise ValueError(self._no_run(run_id))

        self._write(work)

    def run_id(self, name: str) -> int | None:
        """Return the id of run ``name``, or None if there is none.

        Parameters
        ----------
        name : str
            Run name.

        Returns
        -------
        run_id : int or None
        """
        rows = self._read("SELECT id FROM runs WHERE name = ?", (name,))
        return int(rows[0][0]) if rows else None

    def run(self, run_id: int) -> dict[str, Any]:
        """Return one run as a dict, like an item of :meth:`runs`.

        Parameters
        ----------
        run_id : int
            Id returned by :meth:`open_run`.

        Returns
        -------
        run : dict
            See :meth:`runs`.
        """
        rows = self._read(RUNS_SQL + " WHERE id = ?", (int(run_id),))
        if not rows:
            raise ValueError(self._no_run(run_id))
        return self._decode_run(rows[0])

    def runs(
        self,
        *,
        estimator_class: str | None = None,
        space_signature: Any = None,
        finished: bool | None = None,
        exclude: int | str | Iterable[int | str] | None = None,
    ) -> list[dict[str, Any]]:
        """Return the runs matching all given filters, oldest first.

        Parameters
        ----------
        estimator_class : str, default=None
            Keep only runs of this estimator class.
        space_signature : list or dict, default=None
            Keep only runs over an equal search space.
        finished : bool, default=None
            Keep only finished (True) or unfinished (False) runs.
        exclude : int, str or iterable of those, default=None
            Run ids (int) or names (str) to leave out, e.g. the current run.

        Returns
        -------
        runs : list of dict
            One dict per run with keys ``id``, ``name``, ``strategy``,
            ``estimator_class``, ``space_signature``, ``meta``, ``settings``
            (decoded JSON), ``created``, ``finished`` (Unix times, ``finished`` None
            until finished), ``status`` and ``n_trials``.
        """
        where, args = [], []
        if estimator_class is not None:
            where.append("estimator_class = ?")
            args.append(estimator_class)
        if space_signature is not None:
            where.append("space_signature = ?")
            args.append(canonical(space_signature, "space_signature"))
        if finished is not None:
            where.append(f"finished IS {'NOT ' if finished else ''}NULL")
        if exclude is not None:
            if isinstance(exclude, (int, np.integer, str)):
                exclude = [exclude]
            for item in exclude:
                where.append("name != ?" if isinstance(item, str) else "id != ?")
                args.append(item if isinstance(item, str) else int(item))
        sql = RUNS_SQL
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id"
        return [self._decode_run(row) for row in self._read(sql, tuple(args))]

    def _decode_run(self, row: tuple) -> dict[str, Any]:
        run = dict(zip((*RUN_COLUMNS, "n_trials"), row))
        for key in ("space_signature", "meta", "settings", "fingerprint"):
            if run[key] is not None:
                try:
                    run[key] = from_json(run[key])
                except (ValueError, TypeError) as exc:
                    raise ValueError(
                        f"run {run['name']!r} in store {os.fspath(self.path)!r}: "
                        f"its {key} is not readable JSON "
                        f"({exc}); the store was modified or is damaged"
                    ) from None
        return run

    def _no_run(self, run_id: Any) -> str:
        return f"no run with id {run_id!r} in {os.fspath(self.path)!r}"

    # -- trials ---------------------------------------------------------------

    def add_trial(
        self,
        run_id: int,
        record: Mapping[str, Any],
        *,
        lease: str | None = None,
        skip_duplicate: bool = False,
    ) -> int | None:
        """Append one finished trial to a run and commit it.

        Parameters
        ----------
        run_id : int
            Id returned by :meth:`open_run`.
        record : dict
            With keys ``params`` (dict), ``x`` (unit-cube vector), ``fraction``
            (float in (0, 1]), ``status`` (``"ok"`` or ``"failed"``), ``scores``
            (``{"test": {metric: [per split]}, "train": {...} or None}``),
            ``fit_times``, ``score_times``, ``n_test_samples`` (one value per
            split) and optionally ``extras`` (dict). numpy values are accepted.
            ``extras["position"]`` (an int), if given with a ``lease``, must be
            unique among the run's trials written under a lease.
        lease : str, default=None
            The lease token of the search writing (see :meth:`hold_run`): the
            write is refused if the search no longer holds the run, and renews
            the lease. Its claim on the trial's position is settled.
        skip_duplicate : bool, default=False
            Do not store the trial if the run already has one of the same
            configuration (``x``) and ``fraction``; return None instead (the
            position claimed for it is given back).

        Returns
        -------
        trial_index : int or None
            0-based position of the trial in its run; None if skipped.

        Raises
        ------
        ValueError
            If keys are missing or unknown, a value is out of range, the per-split
            lists differ in length, or the run does not exist.
        TypeError
            If a value cannot be stored as JSON; the message names the field.
        """
        columns = encode_trial(record)
        run_id = int(run_id)
        position = (record.get("extras") or {}).get("position")
        if position is not None:
            if isinstance(position, (bool, np.bool_)) or not isinstance(
                position, (int, np.integer)
            ):
                raise TypeError(f"extras['position'] must be an int, got {position!r}")
            if position < 0:
                raise ValueError(f"extras['position'] must be >= 0, got {position!r}")
            position = int(position)

        def work(conn: sqlite3.Connection) -> int | None:
            if not conn.execute(
                "SELECT 1 FROM runs WHERE id = ?", (run_id,)
            ).fetchone():
                raise ValueError(self._no_run(run_id))
            if lease is not None:
                self._renew(conn, run_id, lease)
            if (
                skip_duplicate
                and conn.execute(
                    "SELECT 1 FROM trials WHERE run_id = ? AND x = ? AND fraction = ?",
                    (run_id, columns["x"], columns["fraction"]),
                ).fetchone()
            ):
                if lease is not None and position is not None:
                    conn.execute(
                        "DELETE FROM claims WHERE run_id = ? AND position = ? "
                        "AND owner = ?",
                        (run_id, position, lease),
                    )
                return None
            index = conn.execute(
                "SELECT COALESCE(MAX(trial_index) + 1, 0) FROM trials WHERE run_id = ?",
                (run_id,),
            ).fetchone()[0]
            names = ("run_id", "trial_index", *columns, "created", "position")
            # Positions are unique among the trials searches write (under a
            # lease); rows added by hand keep theirs in extras only.
            column = position if lease is not None else None
            try:
                conn.execute(
                    f"INSERT INTO trials ({', '.join(names)}) "
                    f"VALUES ({', '.join('?' * len(names))})",
                    (run_id, index, *columns.values(), time.time(), column),
                )
            except sqlite3.IntegrityError as exc:
                raise ValueError(
                    f"{self._where(conn, run_id)}: position {position} already has "
                    f"a trial ({exc})"
                ) from None
            if column is not None:
                conn.execute(
                    "DELETE FROM claims WHERE run_id = ? AND position = ?",
                    (run_id, column),
                )
            return int(index)

        return self._write(work)

    def _where(self, conn: sqlite3.Connection, run_id: int) -> str:
        row = conn.execute("SELECT name FROM runs WHERE id = ?", (run_id,)).fetchone()
        name = row[0] if row else f"#{run_id}"
        return f"run {name!r} in store {os.fspath(self.path)!r}"

    # -- leases -----------------------------------------------------------------

    def hold_run(self, run_id: int) -> tuple[str, int]:
        """Take the lease of a run for one search.

        In a store with ``cooperate=False`` the lease is exclusive: refused
        while any live search holds the run. With ``cooperate=True`` it is
        shared with other cooperating searches and refused while a search that
        does not cooperate holds the run. Leases of searches that are gone
        (expired, or of a dead process on this host) are cleared first.

        Parameters
        ----------
        run_id : int
            Id returned by :meth:`open_run`.

        Returns
        -------
        token : str
            The lease, to pass to :meth:`renew_lease`, :meth:`add_trial`,
            :meth:`claim_positions` and :meth:`release_run`.
        member : int
            How many leases the run granted before this one (0 for the first
            search ever to hold it).

        Raises
        ------
        RunHeldError
            If the run is held; the message names the store, the run and the
            holder.
        """
        run_id = int(run_id)
        token = uuid.uuid4().hex
        mode = "cooperate" if self.cooperate else "exclusive"

        def work(conn: sqlite3.Connection) -> tuple[str, int]:
            row = conn.execute(
                "SELECT n_members FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise ValueError(self._no_run(run_id))
            live = self._live_leases(conn, run_id)
            blocking = [lease for lease in live if "exclusive" in (mode, lease["mode"])]
            if blocking:
                raise RunHeldError(self._held_message(conn, run_id, blocking[0]))
            now = time.time()
            conn.execute(
                "INSERT INTO leases (run_id, owner, host, pid, thread, mode, "
                "acquired, expires) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    token,
                    _HOST,
                    os.getpid(),
                    threading.get_ident(),
                    mode,
                    now,
                    now + self.lease_seconds,
                ),
            )
            conn.execute(
                "UPDATE runs SET n_members = n_members + 1 WHERE id = ?", (run_id,)
            )
            return token, int(row[0])

        return self._write(work)

    def _live_leases(
        self, conn: sqlite3.Connection, run_id: int, own: str | None = None
    ) -> list[dict[str, Any]]:
        """Live leases on a run other than ``own``; clears the dead ones."""
        now = time.time()
        live = []
        for owner, host, pid, thread, mode, acquired, expires in conn.execute(
            "SELECT owner, host, pid, thread, mode, acquired, expires FROM leases "
            "WHERE run_id = ?",
            (run_id,),
        ).fetchall():
            if owner == own:
                continue
            if _lease_live(host, pid, thread, expires, now):
                live.append(
                    dict(
                        owner=owner,
                        host=host,
                        pid=pid,
                        mode=mode,
                        acquired=acquired,
                        expires=expires,
                    )
                )
            else:
                for table in ("leases", "claims"):
                    conn.execute(
                        f"DELETE FROM {table} WHERE run_id = ? AND owner = ?",
                        (run_id, owner),
                    )
        return live

    def _held_message(
        self, conn: sqlite3.Connection, run_id: int, lease: dict[str, Any]
    ) -> str:
        now = time.time()
        kind = "a cooperating search" if lease["mode"] == "cooperate" else "a search"
        if self.cooperate and lease["mode"] == "exclusive":
            advice = (
                "It does not cooperate: wait for it to end, or use another run_name."
            )
        elif lease["mode"] == "cooperate":
            advice = (
                "Give this search TrialStore(path, cooperate=True) too to share the "
                "run's budget with it, wait for it to end, or use another run_name."
            )
        else:
            advice = (
                "Wait for it to end, use another run_name, or let searches share "
                "one run with TrialStore(path, cooperate=True) in every one of them."
            )
        return (
            f"{self._where(conn, run_id)} is held by {kind} still running (process "
            f"{lease['pid']} on host {lease['host']!r}, since "
            f"{now - lease['acquired']:.0f} s; its lease expires in "
            f"{lease['expires'] - now:.0f} s unless renewed). {advice}"
        )

    def _renew(self, conn: sqlite3.Connection, run_id: int, token: str) -> None:
        cursor = conn.execute(
            "UPDATE leases SET expires = ? WHERE run_id = ? AND owner = ?",
            (time.time() + self.lease_seconds, run_id, token),
        )
        if cursor.rowcount == 0:
            raise RunHeldError(
                f"{self._where(conn, run_id)}: this search lost its lease on the run "
                f"(it was not renewed for {self.lease_seconds:g} s and another "
                "search may have taken the run over); stopping rather than "
                "writing trials twice."
            )

    def renew_lease(self, run_id: int, token: str) -> bool:
        """Extend a lease by ``lease_seconds``; False if it is no longer held.

        Parameters
        ----------
        run_id : int
        token : str
            Returned by :meth:`hold_run`.

        Returns
        -------
        held : bool
        """

        def work(conn: sqlite3.Connection) -> bool:
            try:
                self._renew(conn, int(run_id), token)
            except RunHeldError:
                return False
            return True

        return self._write(work)

    def release_run(self, run_id: int, token: str, *, finish: bool = False) -> bool:
        """Give a lease up (and the positions it claimed and did not fill).

        Parameters
        ----------
        run_id : int
        token : str
            Returned by :meth:`hold_run`.
        finish : bool, default=False
            Mark the run finished (as :meth:`finish_run`) if no other live
            search holds it.

        Returns
        -------
        finished : bool
            Whether the run was marked finished.
        """
        run_id = int(run_id)

        def work(conn: sqlite3.Connection) -> bool:
            for table in ("leases", "claims"):
                conn.execute(
                    f"DELETE FROM {table} WHERE run_id = ? AND owner = ?",
                    (run_id, token),
                )
            if finish and not self._live_leases(conn, run_id):
                conn.execute(
                    "UPDATE runs SET finished = ?, status = 'finished' WHERE id = ?",
                    (time.time(), run_id),
                )
                return True
            return False

        return self._write(work)

    def leases(self, run_id: int) -> list[dict[str, Any]]:
        """The live leases on a run (the searches holding it now).

        Parameters
        ----------
        run_id : int

        Returns
        -------
        leases : list of dict
            Keys ``owner``, ``host``, ``pid``, ``mode`` (``"exclusive"`` or
            ``"cooperate"``), ``acquired`` and ``expires`` (Unix times).
        """
        return self._write(lambda conn: self._live_leases(conn, int(run_id)))

    def claim_positions(self, run_id: int, token: str, n: int, below: int) -> list[int]:
        """Claim up to ``n`` free trial positions of a run, smallest first.

        A position is free when no trial of the run has it and no live search
        has claimed it. The claim is atomic: two cooperating searches never
        get the same position.

        Parameters
        ----------
        run_id : int
        token : str
            Returned by :meth:`hold_run`.
        n : int
            Positions wanted.
        below : int
            The run's budget: only positions ``0 .. below - 1`` are claimed.

        Returns
        -------
        positions : list of int
            At most ``n``; empty when the budget is all claimed.
        """
        run_id = int(run_id)

        def work(conn: sqlite3.Connection) -> list[int]:
            self._renew(conn, run_id, token)
            self._live_leases(conn, run_id, own=token)  # frees the dead's claims
            taken = {
                p
                for (p,) in conn.execute(
                    "SELECT position FROM trials WHERE run_id = ? AND position "
                    "IS NOT NULL UNION SELECT position FROM claims WHERE run_id = ?",
                    (run_id, run_id),
                ).fetchall()
            }
            free = [p for p in range(int(below)) if p not in taken][: int(n)]
            conn.executemany(
                "INSERT INTO claims (run_id, position, owner) VALUES (?, ?, ?)",
                [(run_id, p, token) for p in free],
            )
            return free

        return self._write(work)

    def trials(self, run_id: int, *, since: int = 0) -> list[dict[str, Any]]:
        """Return the trials of a run, ordered by ``trial_index``.

        Parameters
        ----------
        run_id : int
            Id returned by :meth:`open_run`.
        since : int, default=0
            Only the trials with ``trial_index >= since`` (what was added since
            an earlier read).

        Returns
        -------
        trials : list of dict
            One dict per trial with the keys of :meth:`add_trial`'s record
            (``extras`` always present) plus ``trial_index`` and ``created``.
            Values are plain Python: lists of floats (NaN restored) for ``x``,
            ``fit_times``, ``score_times`` and the score lists, a list of ints for
            ``n_test_samples``, tuples restored in ``params``.
        """
        run_id = int(run_id)
        rows = self._read(
            f"SELECT {', '.join(TRIAL_COLUMNS)} FROM trials WHERE run_id = ? "
            "AND trial_index >= ? ORDER BY trial_index",
            (run_id, int(since)),
        )
        if not rows and not self._read("SELECT 1 FROM runs WHERE id = ?", (run_id,)):
            raise ValueError(self._no_run(run_id))
        return self._decode_trials(run_id, rows)

    def _decode_trials(self, run_id: int, rows: list[tuple]) -> list[dict[str, Any]]:
        out = []
        for row in rows:
            try:
                out.append(decode_trial(row))
            except StoredTrialError:
                # Again, with the store, run and trial in the message.
                names = self._read("SELECT name FROM runs WHERE id = ?", (run_id,))
                name = names[0][0] if names else f"#{run_id}"
                decode_trial(
                    row,
                    f"store {os.fspath(self.path)!r}, run {name!r}, trial {row[0]!r}",
                )
                raise
        return out

    def finished_runs(
        self,
        *,
        estimator_class: str,
        space_signature: Any,
        exclude: int | str | Iterable[int | str] | None = None,
    ) -> list[dict[str, Any]]:
        """Finished runs of one estimator class over one search space, with trials.

        What a search transferring from earlier datasets reads: each run's
        dataset meta-features and its trials' parameters and scores.

        Parameters
        ----------
        estimator_class : str
            Qualified class name of the searched estimator.
        space_signature : list or dict
            Search space (:meth:`SearchSpace.signature`); only runs over an
            equal space are returned.
        exclude : int, str or iterable of those, default=None
            Run ids (int) or names (str) to leave out, e.g. the current run.

        Returns
        -------
        runs : list of dict
            Oldest first; the keys of :meth:`runs` plus ``trials``, the run's
            trials as :meth:`trials` returns them.

        Examples
        --------
        >>> import tempfile, os
        >>> from skbayes_search.storage import TrialStore
        >>> store = TrialStore(os.path.join(tempfile.mkdtemp(), "runs.db"))
        >>> run = store.open_run("done", strategy="bayes", estimator_class="SVC",
        ...                      space_signature={"C": ["real", 0.1, 10]},
        ...                      meta={"n_samples": 100})
        >>> store.finish_run(run)
        >>> [(r["name"], r["meta"], r["trials"]) for r in store.finished_runs(
        ...     estimator_class="SVC", space_signature={"C": ["real", 0.1, 10]})]
        [('done', {'n_samples': 100}, [])]
        """
        runs = self.runs(
            estimator_class=estimator_class,
            space_signature=space_signature,
            finished=True,
            exclude=exclude,
        )
        if not runs:
            return []
        ids = [run["id"] for run in runs]
        by_run: dict[int, list[dict[str, Any]]] = {run_id: [] for run_id in ids}
        # chunks stay below old SQLite builds' limit of 999 bound variables
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self._read(
                f"SELECT run_id, {', '.join(TRIAL_COLUMNS)} FROM trials "
                f"WHERE run_id IN ({', '.join('?' * len(chunk))}) "
                "ORDER BY run_id, trial_index",
                tuple(chunk),
            )
            for run_id, *row in rows:
                by_run[run_id].extend(self._decode_trials(run_id, [tuple(row)]))
        return [{**run, "trials": by_run[run["id"]]} for run in runs]
