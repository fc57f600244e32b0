"""Trial records of a TrialStore: the checks a record passes before it is
written, its encoding as a ``trials`` row, and the decoding and check of a row
read back."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._store_json import from_json, to_json

__all__ = ["TRIAL_FIELDS"]

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
