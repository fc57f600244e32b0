"""Runs of a TrialStore: create or reopen one (checking what it was made
from), adopt, finish, look up and list them."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ._store_connection import StoreConnection
from ._store_format import RUN_COLUMNS, RUNS_SQL
from ._store_json import canonical, from_json, to_json
from ._store_records import check_mapping, check_str

# What each part of a run's fingerprint is, for messages (see
# skbayes_search._journal_fingerprint.run_fingerprint).
_FINGERPRINT_LABELS = {
    "X": "data X",
    "y": "targets y",
    "cv_splits": "CV splits",
    "scoring": "scoring",
    "train_scores": "return_train_score",
    "estimator": "estimator",
    "validation_rows": "validation rows (subsample_validation)",
}


def _short(value: Any) -> str:
    """A fingerprint part for a message: compact JSON, cut at 200 characters."""
    text = "none" if value is None else canonical(value, "fingerprint")
    return text if len(text) <= 200 else text[:197] + "..."


class StoreRuns(StoreConnection):
    """The runs part of :class:`~skbayes_search.TrialStore`."""

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
            :func:`skbayes_search._journal_fingerprint.run_fingerprint`).
            Recorded with a new run; an existing run must have recorded an
            equal one. ``None`` neither records nor checks anything.

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
