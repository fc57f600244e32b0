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
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import numpy as np

from ._store_format import (
    RUN_COLUMNS,
    RUNS_SQL,
    SCHEMA_VERSION,
    SQLITE_HEADER,
    TRIAL_COLUMNS,
    TRIAL_FIELDS,
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

__all__ = ["SCHEMA_VERSION", "TRIAL_FIELDS", "TrialStore", "from_json", "to_json"]

# Seconds one SQLite call waits for another writer, then attempts of the whole
# transaction; together about a minute before giving up.
_BUSY_TIMEOUT = 10.0
_N_ATTEMPTS = 6

_T = TypeVar("_T")


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
    are.

    Parameters
    ----------
    path : str or os.PathLike
        Path of the SQLite file; it is created on first use, its directory must
        exist.

    Attributes
    ----------
    path : str or os.PathLike
        The path given.

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
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = path
        self._reset()

    def _reset(self) -> None:
        self._connection: sqlite3.Connection | None = None
        self._pid: int | None = None
        # Guards the shared connection: joblib's threading backend or callbacks
        # may call the store from several threads.
        self._lock = threading.RLock()

    # -- Python protocol -------------------------------------------------------

    def __repr__(self) -> str:
        return f"{type(self).__name__}({os.fspath(self.path)!r})"

    def _key(self) -> str:
        return os.path.abspath(os.fspath(self.path))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TrialStore):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __getstate__(self) -> dict[str, Any]:
        # A connection cannot cross processes; the copy reconnects on first use.
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
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
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            with open(path, "rb") as f:
                header = f.read(len(SQLITE_HEADER))
            if header != SQLITE_HEADER:
                raise ValueError(
                    f"{os.fspath(self.path)!r} is not an SQLite database; expected a "
                    "skbayes_search TrialStore file or a path for a new one"
                )
        conn = sqlite3.connect(
            path,
            timeout=_BUSY_TIMEOUT,
            isolation_level=None,  # transactions are explicit (BEGIN IMMEDIATE)
            check_same_thread=False,  # access is serialised by self._lock
        )
        try:
            self._retry(lambda: self._check_schema(conn))
            # Only after the check, so that a foreign database is never modified.
            self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
            conn.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            conn.close()
            raise
        self._connection, self._pid = conn, os.getpid()
        return conn

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

        with self._lock:
            return self._retry(attempt)

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        def attempt() -> list[tuple]:
            return self._conn().execute(sql, args).fetchall()

        with self._lock:
            return self._retry(attempt)

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

        Returns
        -------
        run_id : int
            Id of the new or existing run.

        Raises
        ------
        ValueError
            If the run exists with another strategy, estimator class or search
            space: a run can only be resumed by the same search.

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

        def work(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "SELECT id, strategy, estimator_class, space_signature FROM runs "
                "WHERE name = ?",
                (name,),
            ).fetchone()
            if row is None:
                cursor = conn.execute(
                    "INSERT INTO runs (name, strategy, estimator_class, "
                    "space_signature, meta, settings, created, finished, status) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 'running')",
                    (
                        name,
                        strategy,
                        estimator_class,
                        signature,
                        meta_json,
                        settings_json,
                        time.time(),
                    ),
                )
                return int(cursor.lastrowid)
            run_id, *stored = row
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
            conn.execute(
                "UPDATE runs SET finished = NULL, status = 'running' WHERE id = ?",
                (run_id,),
            )
            return int(run_id)

        return self._write(work)

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

    @staticmethod
    def _decode_run(row: tuple) -> dict[str, Any]:
        run = dict(zip((*RUN_COLUMNS, "n_trials"), row))
        for key in ("space_signature", "meta", "settings"):
            run[key] = from_json(run[key])
        return run

    def _no_run(self, run_id: Any) -> str:
        return f"no run with id {run_id!r} in {os.fspath(self.path)!r}"

    # -- trials ---------------------------------------------------------------

    def add_trial(self, run_id: int, record: Mapping[str, Any]) -> int:
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

        Returns
        -------
        trial_index : int
            0-based position of the trial in its run.

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

        def work(conn: sqlite3.Connection) -> int:
            if not conn.execute(
                "SELECT 1 FROM runs WHERE id = ?", (run_id,)
            ).fetchone():
                raise ValueError(self._no_run(run_id))
            index = conn.execute(
                "SELECT COALESCE(MAX(trial_index) + 1, 0) FROM trials WHERE run_id = ?",
                (run_id,),
            ).fetchone()[0]
            names = ("run_id", "trial_index", *columns, "created")
            conn.execute(
                f"INSERT INTO trials ({', '.join(names)}) "
                f"VALUES ({', '.join('?' * len(names))})",
                (run_id, index, *columns.values(), time.time()),
            )
            return int(index)

        return self._write(work)

    def trials(self, run_id: int) -> list[dict[str, Any]]:
        """Return the trials of a run, ordered by ``trial_index``.

        Parameters
        ----------
        run_id : int
            Id returned by :meth:`open_run`.

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
            "ORDER BY trial_index",
            (run_id,),
        )
        if not rows and not self._read("SELECT 1 FROM runs WHERE id = ?", (run_id,)):
            raise ValueError(self._no_run(run_id))
        return [decode_trial(row) for row in rows]

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
                by_run[run_id].append(decode_trial(tuple(row)))
        return [{**run, "trials": by_run[run["id"]]} for run in runs]
