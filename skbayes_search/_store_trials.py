"""Trials of a TrialStore: append one (under a lease), read a run's trials
back, and the finished runs with their trials that transfer reads."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ._store_leases import StoreLeases
from ._store_records import (
    TRIAL_COLUMNS,
    StoredTrialError,
    decode_trial,
    encode_trial,
)
from ._store_runs import StoreRuns


class StoreTrials(StoreRuns, StoreLeases):
    """The trials part of :class:`~skbayes_search.TrialStore` (written into a
    run, under a lease)."""

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
