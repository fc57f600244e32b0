"""The TrialStore file format: schema, JSON encoding and record checks.

This module holds the constants, the encoding and decoding of values and rows,
and the creation and check of the schema on a connection that
:class:`~skbayes_search.TrialStore` opened.

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
                            :func:`skbayes_search._journal.run_fingerprint`);
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
                            its trials, strategy columns, ...)
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

import json
import math
import os
import sqlite3
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["SCHEMA_VERSION", "TRIAL_FIELDS", "from_json", "to_json"]

APPLICATION_ID = 0x534B4253  # "SKBS"
SCHEMA_VERSION = 2

SQLITE_HEADER = b"SQLite format 3\x00"
_FLOAT_TAG = "$float"
_TUPLE_TAG = "$tuple"

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

_TRIAL_REQUIRED = (
    "params",
    "x",
    "fraction",
    "status",
    "scores",
    "fit_times",
    "score_times",
    "n_test_samples",
)
_TRIAL_OPTIONAL = ("extras",)
#: Keys of a trial record as :meth:`TrialStore.add_trial` takes it (a stored
#: trial from :meth:`TrialStore.trials` has these plus its index and time).
TRIAL_FIELDS = (*_TRIAL_REQUIRED, *_TRIAL_OPTIONAL)
TRIAL_COLUMNS = ("trial_index", *TRIAL_FIELDS, "created")
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


# --------------------------------------------------------------------------- JSON


def _jsonable(
    value: Any, where: str, nan_as_null: bool, tag_tuples: bool = True
) -> Any:
    """Return ``value`` as plain JSON types; ``where`` locates it for errors."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isfinite(value):
            return value
        if nan_as_null and math.isnan(value):
            return None
        return {_FLOAT_TAG: repr(value)}
    if isinstance(value, np.ndarray):
        return [
            _jsonable(item, f"{where}[{i}]", nan_as_null, tag_tuples)
            for i, item in enumerate(value.tolist())
        ]
    if isinstance(value, (list, tuple)):
        items = [
            _jsonable(item, f"{where}[{i}]", nan_as_null, tag_tuples)
            for i, item in enumerate(value)
        ]
        return {_TUPLE_TAG: items} if tag_tuples and isinstance(value, tuple) else items
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"{where}: key {key!r} of type {type(key).__name__} is not a "
                    "string; JSON objects only have string keys"
                )
            out[str(key)] = _jsonable(
                item, f"{where}[{key!r}]", nan_as_null, tag_tuples
            )
        if len(out) == 1 and next(iter(out)) in (_FLOAT_TAG, _TUPLE_TAG):
            # Would read back as a float or tuple instead of this dict.
            raise TypeError(
                f"{where}: a dict whose only key is {next(iter(out))!r} is reserved "
                "by the store's encoding"
            )
        return out
    raise TypeError(
        f"{where}: value {value!r:.80} of type {type(value).__name__} is not "
        "JSON-serialisable; encode it first (e.g. a categorical choice by its index)"
    )


def _json_hook(obj: dict) -> Any:
    if len(obj) == 1:
        if _FLOAT_TAG in obj:
            return float(obj[_FLOAT_TAG])
        if _TUPLE_TAG in obj:
            return tuple(obj[_TUPLE_TAG])
    return obj


def to_json(value: Any, field: str = "value", *, nan_as_null: bool = False) -> str:
    """Encode ``value`` as JSON text, accepting numpy scalars and arrays.

    Parameters
    ----------
    value : object
        ``None``, bool, int, float, str, numpy scalars and arrays, and lists,
        tuples and string-keyed mappings of those.
    field : str, default="value"
        Name used in error messages.
    nan_as_null : bool, default=False
        Write NaN as ``null`` (for lists known to hold numbers, see
        :func:`from_json`) instead of ``{"$float": "nan"}``.

    Returns
    -------
    text : str
        Compact JSON; infinities are written as ``{"$float": "inf"}`` and tuples as
        ``{"$tuple": [...]}``.

    Raises
    ------
    TypeError
        If ``value`` holds anything else, naming ``field`` and where in it.
    """
    plain = _jsonable(value, field, nan_as_null)
    return json.dumps(plain, allow_nan=False, separators=(",", ":"))


def from_json(text: str, *, null_as_nan: bool = False) -> Any:
    """Decode JSON text written by :func:`to_json`.

    Parameters
    ----------
    text : str
        JSON text.
    null_as_nan : bool, default=False
        Read ``null`` list items as ``nan`` (the counterpart of
        ``to_json(..., nan_as_null=True)``).

    Returns
    -------
    value : object
        Plain Python values; tagged floats and tuples are restored.
    """
    value = json.loads(text, object_hook=_json_hook)
    return _null_to_nan(value) if null_as_nan else value


def _null_to_nan(value: Any) -> Any:
    if value is None:
        return math.nan
    if isinstance(value, list):
        return [_null_to_nan(item) for item in value]
    if isinstance(value, dict):
        # Dict values that are null are absent sections (e.g. "train"), not numbers.
        return {k: v if v is None else _null_to_nan(v) for k, v in value.items()}
    return value


def canonical(value: Any, field: str) -> str:
    """JSON with sorted keys and tuples as lists: equal signatures, equal text."""
    plain = _jsonable(value, field, nan_as_null=False, tag_tuples=False)
    return json.dumps(plain, allow_nan=False, separators=(",", ":"), sort_keys=True)


# ------------------------------------------------------------------ validation


def check_str(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{field} must not be empty")
    return value


def check_mapping(value: Any, field: str) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{field} must be a dict or None, got {type(value).__name__}")
    return value


def _per_split(
    value: Any, field: str, kind: str, allow_empty: bool = False
) -> np.ndarray:
    """Validate a 1-D sequence of numbers (``kind`` "f" or "i"), non-empty
    unless ``allow_empty``."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{field} must be a 1-D sequence of numbers, got {value!r:.80}"
        ) from None
    if arr.ndim != 1 or (arr.size == 0 and not allow_empty):
        raise ValueError(
            f"{field} must be a non-empty 1-D sequence of numbers, "
            f"got shape {arr.shape}"
        )
    if kind == "i":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{field} must hold integers, got {value!r:.80}")
        return arr.astype(np.int64)
    return arr


def encode_trial(record: Any) -> dict[str, Any]:
    """Validate a trial record and return its columns as SQL values."""
    if not isinstance(record, Mapping):
        raise TypeError(f"record must be a dict, got {type(record).__name__}")
    missing = [k for k in _TRIAL_REQUIRED if k not in record]
    unknown = sorted(str(k) for k in record if k not in TRIAL_FIELDS)
    if missing or unknown:
        raise ValueError(
            f"invalid trial record: missing keys {missing}, unknown keys {unknown}; "
            f"expected {list(_TRIAL_REQUIRED)} and optionally {list(_TRIAL_OPTIONAL)}"
        )

    params = record["params"]
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")

    # a space of one fixed configuration has no coordinates
    x = _per_split(record["x"], "x", "f", allow_empty=True)
    if not np.all(np.isfinite(x)):
        raise ValueError(f"x must be finite, got {x.tolist()}")

    fraction = record["fraction"]
    if (
        isinstance(fraction, (bool, np.bool_))
        or not isinstance(fraction, (int, float, np.integer, np.floating))
        or not 0.0 < float(fraction) <= 1.0
    ):
        raise ValueError(f"fraction must be a number in (0, 1], got {fraction!r}")

    status = record["status"]
    if status not in ("ok", "failed"):
        raise ValueError(f"status must be 'ok' or 'failed', got {status!r}")

    fit_times = _per_split(record["fit_times"], "fit_times", "f")
    n_splits = fit_times.size
    per_split = {
        "fit_times": fit_times,
        "score_times": _per_split(record["score_times"], "score_times", "f"),
        "n_test_samples": _per_split(record["n_test_samples"], "n_test_samples", "i"),
    }

    scores = record["scores"]
    if not isinstance(scores, Mapping) or "test" not in scores:
        raise ValueError(
            'scores must be a dict {"test": {metric: [per split]}, '
            f'"train": {{...}} or None}}, got {scores!r:.80}'
        )
    unknown = sorted(str(k) for k in scores if k not in ("test", "train"))
    if unknown:
        raise ValueError(
            f'scores has unknown keys {unknown}; expected "test" and optionally "train"'
        )
    clean_scores: dict[str, dict[str, np.ndarray] | None] = {"train": None}
    for part in ("test", "train"):
        metrics = scores.get(part)
        if part == "train" and metrics is None:
            continue
        if not isinstance(metrics, Mapping) or not metrics:
            raise ValueError(
                f'scores["{part}"] must be a non-empty dict {{metric: [per split]}}'
                f", got {metrics!r:.80}"
            )
        clean_scores[part] = {}
        for metric, values in metrics.items():
            if not isinstance(metric, str):
                raise TypeError(f'scores["{part}"] keys must be str, got {metric!r}')
            where = f'scores["{part}"][{metric!r}]'
            clean_scores[part][metric] = per_split[where] = _per_split(
                values, where, "f"
            )

    lengths = {name: arr.size for name, arr in per_split.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(
            f"per-split lists differ in length ({n_splits} splits in fit_times): "
            f"{lengths}"
        )

    extras = check_mapping(record.get("extras"), "extras")
    return {
        "params": to_json(params, "params"),
        "x": to_json(x, "x"),
        "fraction": float(fraction),
        "status": status,
        "scores": to_json(clean_scores, "scores", nan_as_null=True),
        "fit_times": to_json(fit_times, "fit_times", nan_as_null=True),
        "score_times": to_json(
            per_split["score_times"], "score_times", nan_as_null=True
        ),
        "n_test_samples": to_json(per_split["n_test_samples"], "n_test_samples"),
        "extras": to_json(extras, "extras"),
    }


class StoredTrialError(ValueError):
    """A trial row of a store that cannot be read back, or that the search
    reading it cannot accept (the message names the store, run and trial)."""


def decode_trial(row: tuple, where: str = "trial") -> dict[str, Any]:
    """Decode and check one ``trials`` row (in :data:`TRIAL_COLUMNS` order).

    Raises
    ------
    StoredTrialError
        If a column is not the JSON the store writes, or the decoded record
        would not pass :func:`encode_trial` (missing or mistyped fields,
        per-split lists of unequal lengths, ...); ``where`` starts the message.
    """
    trial = dict(zip(TRIAL_COLUMNS, row))
    key = "trial_index"
    try:
        for key in ("params", "x", "n_test_samples", "extras"):
            trial[key] = from_json(_text(trial[key]))
        for key in ("scores", "fit_times", "score_times"):
            trial[key] = from_json(_text(trial[key]), null_as_nan=True)
        key = "row"
        # The checks a record passes on its way in, so that a row edited in
        # the file is refused the same way (and never surfaces as a KeyError
        # or TypeError deep in a search).
        encode_trial({k: trial[k] for k in TRIAL_FIELDS})
        if not isinstance(trial["extras"], Mapping):
            raise TypeError("extras must be a dict")
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise StoredTrialError(
            f"{where}: unreadable row ({key}: {type(exc).__name__}: {exc}). The "
            "store was modified outside skbayes_search or is damaged; delete the "
            "row or start a new run (another run_name)."
        ) from None
    return trial


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected JSON text, got {type(value).__name__}")
    return value


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
