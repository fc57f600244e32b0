"""Leases of a TrialStore: which live search holds a run, and the trial
positions cooperating searches claim."""

from __future__ import annotations

import errno
import os
import socket
import sqlite3
import threading
import time
import uuid
from typing import Any

from ._store_connection import StoreConnection

# Default seconds a lease lasts without renewal (a search renews it every quarter
# of that while it runs, and with every trial it writes).
LEASE_SECONDS = 60.0
_HOST = socket.gethostname()


class RunHeldError(RuntimeError):
    """A run is held by another live search (or this search lost its lease)."""


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


class StoreLeases(StoreConnection):
    """The leases part of :class:`~skbayes_search.TrialStore`."""

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
