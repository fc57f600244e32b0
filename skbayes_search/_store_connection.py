"""The SQLite connection of a TrialStore: opening and checking the file,
transactions, retries while another writer holds the lock, and errors that name
the file.

:class:`StoreConnection` is the base of :class:`~skbayes_search.TrialStore`;
the runs, trials and leases parts (``_store_runs``, ``_store_trials``,
``_store_leases``) read and write through its ``_read`` and ``_write``.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from ._store_format import SQLITE_HEADER, create_schema, is_busy, schema_state

# Seconds one SQLite call waits for another writer, then attempts of the whole
# transaction; together about a minute before giving up.
_BUSY_TIMEOUT = 10.0
_N_ATTEMPTS = 6

_T = TypeVar("_T")


class StoreConnection:
    """The connection layer of :class:`~skbayes_search.TrialStore`."""

    # ``path``, ``cooperate``, ``lease_seconds`` and the connection state
    # (``_connection``, ``_pid``, ``_lock``) are set by TrialStore.

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

    def _no_run(self, run_id: Any) -> str:
        return f"no run with id {run_id!r} in {os.fspath(self.path)!r}"

    def _where(self, conn: sqlite3.Connection, run_id: int) -> str:
        row = conn.execute("SELECT name FROM runs WHERE id = ?", (run_id,)).fetchone()
        name = row[0] if row else f"#{run_id}"
        return f"run {name!r} in store {os.fspath(self.path)!r}"
