"""The TrialStore file format: schema, JSON encoding and record checks.

This module holds the constants of the schema and its creation and check on a
connection that :class:`~skbayes_search.TrialStore` opened; values are encoded
as below by ``_store_json``, and trial records are checked and turned into rows
and back by ``_store_records``.

Schema (version 2)
------------------
The file is identified by ``PRAGMA application_id`` (``0x534B4253``, "SKBS") and its
layout by ``PRAGMA user_version`` (``2``). A file with another application id, or
with a newer schema version, is refused with a :class:`ValueError`. A file of
schema version 1 is upgraded in place on first use (columns ``runs.fingerprint``,
``runs.n_members``, ``trials.position`` and tables ``leases`` and ``claims`` are
added; nothing is rewritten). Its runs keep a null fingerprint, so they can still
be read (by transfer) but a search refuses to resume them until
:meth:`TrialStore.adopt_run` is called for one explicitly.

``runs``, one row per search run:

=================  =======  ====================================================
column             type     content
=================  =======  ====================================================
id                 INTEGER  primary key
name               TEXT     unique run name (the search's ``run_name``)
strategy           TEXT     strategy name, e.g. ``"bayes"`` or ``"fabolas"``
estimator_class    TEXT     qualified class name of the searched estimator
space_signature    TEXT     JSON, canonical (sorted keys, no spaces)
meta               TEXT     JSON object of dataset meta-features, e.g.
                            ``{"n_samples": 1000, "n_features": 8,
                            "n_classes": 2}`` (``n_classes`` null for regression)
settings           TEXT     JSON object, the search settings relevant to resume
created            REAL     Unix time the run was created
finished           REAL     Unix time of the last :meth:`TrialStore.finish_run`,
                            NULL until then
status             TEXT     ``"running"`` or ``"finished"``
fingerprint        TEXT     JSON object: what the run was made from (data,
                            CV splits, scoring, estimator; see
                            :func:`skbayes_search._journal_fingerprint.run_fingerprint`);
                            NULL for a run made by schema version 1 or without
                            one, ``{}`` once adopted (the next search records
                            its own)
n_members          INTEGER  number of leases ever granted on the run (seeds
                            the searches that cooperate on it apart)
=================  =======  ====================================================

``trials``, one row per finished trial, primary key ``(run_id, trial_index)``:

=================  =======  ====================================================
column             type     content
=================  =======  ====================================================
run_id             INTEGER  ``runs.id``
trial_index        INTEGER  0-based position in the order trials were added
params             TEXT     JSON object of hyperparameters
x                  TEXT     JSON list of floats, the unit-cube encoding
fraction           REAL     training fraction in (0, 1]
status             TEXT     ``"ok"`` or ``"failed"``
scores             TEXT     JSON ``{"test": {metric: [per split]},
                            "train": {metric: [per split]} or null}``
fit_times          TEXT     JSON list of seconds per split
score_times        TEXT     JSON list of seconds per split
n_test_samples     TEXT     JSON list of ints per split
extras             TEXT     JSON object (``iter``, ``elapsed_time``,
                            ``position``: place in the order the search proposed
                            its trials, ``stopped``: true for a failed trial
                            that the search's deadline stopped, strategy
                            columns, ...)
created            REAL     Unix time the trial was stored
position           INTEGER  ``extras["position"]``, unique within a run (NULL
                            for rows of schema version 1)
=================  =======  ====================================================

``leases``, one row per search holding a run (see :class:`TrialStore`), primary
key ``(run_id, owner)``: ``owner`` (TEXT, a token unique to the search), ``host``
(TEXT), ``pid`` and ``thread`` (INTEGER), ``mode`` (``"exclusive"`` or
``"cooperate"``), ``acquired`` and ``expires`` (REAL, Unix times). A lease is live
while it has not expired and, on the same host, its process (and, in the same
process, its thread) is alive.

``claims``, one row per trial position a cooperating search has claimed and not
yet written, primary key ``(run_id, position)``, with its ``owner``.

JSON encoding
-------------
Values are JSON, never pickle, because a store may come from someone else. numpy
scalars and arrays become plain numbers and lists. JSON has no NaN or infinity, so:

- in the per-split number lists (``scores``, ``fit_times``, ``score_times``) NaN is
  written as ``null`` and read back as ``nan``; this keeps the common case (a failed
  fit scored NaN) readable with SQLite's own JSON functions;
- every other non-finite float (infinities anywhere, NaN in ``params``, ``extras``,
  ``meta``, ``settings``) is written as ``{"$float": "nan" | "inf" | "-inf"}``;
- tuples are written as ``{"$tuple": [...]}`` so that a parameter value such as
  ``hidden_layer_sizes=(50, 50)`` comes back as the same tuple.

Objects with non-string keys or of any other type raise a :class:`TypeError` that
names the field; the caller must encode such values itself (e.g. a categorical
choice by its index).
"""

from __future__ import annotations

import os
import sqlite3

__all__ = ["SCHEMA_VERSION"]

APPLICATION_ID = 0x534B4253  # "SKBS"
SCHEMA_VERSION = 2

SQLITE_HEADER = b"SQLite format 3\x00"

# Tables and indices schema version 2 added to version 1 (created as they are
# in a new file, and added by the upgrade of a version 1 file).
_V2_ADDITIONS = """
CREATE UNIQUE INDEX trials_position ON trials (run_id, position)
    WHERE position IS NOT NULL;
CREATE TABLE leases (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    thread INTEGER NOT NULL,
    mode TEXT NOT NULL CHECK (mode IN ('exclusive', 'cooperate')),
    acquired REAL NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (run_id, owner)
);
CREATE TABLE claims (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    position INTEGER NOT NULL CHECK (position >= 0),
    owner TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
"""
_V1_TO_V2 = (
    """
ALTER TABLE runs ADD COLUMN fingerprint TEXT;
ALTER TABLE runs ADD COLUMN n_members INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN position INTEGER CHECK (position >= 0);
"""
    + _V2_ADDITIONS
)

_SCHEMA = (
    """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    strategy TEXT NOT NULL,
    estimator_class TEXT NOT NULL,
    space_signature TEXT NOT NULL,
    meta TEXT NOT NULL,
    settings TEXT NOT NULL,
    created REAL NOT NULL,
    finished REAL,
    status TEXT NOT NULL CHECK (status IN ('running', 'finished')),
    fingerprint TEXT,
    n_members INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE trials (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    trial_index INTEGER NOT NULL CHECK (trial_index >= 0),
    params TEXT NOT NULL,
    x TEXT NOT NULL,
    fraction REAL NOT NULL CHECK (fraction > 0 AND fraction <= 1),
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    scores TEXT NOT NULL,
    fit_times TEXT NOT NULL,
    score_times TEXT NOT NULL,
    n_test_samples TEXT NOT NULL,
    extras TEXT NOT NULL,
    created REAL NOT NULL,
    position INTEGER CHECK (position >= 0),
    PRIMARY KEY (run_id, trial_index)
);
"""
    + _V2_ADDITIONS
)

RUN_COLUMNS = (
    "id",
    "name",
    "strategy",
    "estimator_class",
    "space_signature",
    "meta",
    "settings",
    "created",
    "finished",
    "status",
    "fingerprint",
)
RUNS_SQL = (
    f"SELECT {', '.join(RUN_COLUMNS)}, "
    "(SELECT COUNT(*) FROM trials WHERE trials.run_id = runs.id) AS n_trials FROM runs"
)


def is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    message = str(exc).lower()
    return "locked" in message or "busy" in message


# ---------------------------------------------------------------------- schema


def schema_state(conn: sqlite3.Connection, path: str | os.PathLike) -> str:
    """Return "store", "v1" (a store to upgrade) or "empty"; raise ValueError
    for anything else."""
    # The three reads must see one snapshot: read one by one, they can
    # straddle another process's creation of the schema and see tables
    # without the application id (a new store mistaken for a foreign one).
    own_snapshot = not conn.in_transaction
    try:
        if own_snapshot:
            conn.execute("BEGIN")
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master ORDER BY name"
                ).fetchall()
            ]
        finally:
            if own_snapshot and conn.in_transaction:
                conn.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):
            raise
        raise ValueError(
            f"{os.fspath(path)!r} is not a readable SQLite database ({exc}); "
            "expected a skbayes_search TrialStore file"
        ) from exc
    if app_id == 0 and version == 0 and not tables:
        return "empty"
    if app_id != APPLICATION_ID:
        raise ValueError(
            f"{os.fspath(path)!r} is an SQLite database of another program "
            f"(application_id={app_id}, tables {tables[:5]}); expected a "
            "skbayes_search TrialStore file"
        )
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"{os.fspath(path)!r} is a skbayes_search TrialStore of schema "
            f"version {version}, written by a newer skbayes_search; this version "
            f"reads schema version {SCHEMA_VERSION}. Upgrade skbayes_search."
        )
    if version == 1 and {"runs", "trials"} <= set(tables):
        return "v1"
    needed = {"runs", "trials", "leases", "claims"}
    if version < SCHEMA_VERSION or not needed <= set(tables):
        raise ValueError(
            f"{os.fspath(path)!r} is a damaged skbayes_search TrialStore "
            f"(schema version {version}, tables {tables}); expected schema "
            f"version {SCHEMA_VERSION} with tables {sorted(needed)}"
        )
    return "store"


def create_schema(conn: sqlite3.Connection, path: str | os.PathLike) -> None:
    """Create the schema in an empty database, upgrade a version 1 store; check
    any other."""
    # A read-only look first, so that a foreign file is not even locked.
    if schema_state(conn, path) == "store":
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Another process may have created (or upgraded) the schema while we
        # waited.
        state = schema_state(conn, path)
        if state != "store":
            script = _SCHEMA if state == "empty" else _V1_TO_V2
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.rollback()
        raise
