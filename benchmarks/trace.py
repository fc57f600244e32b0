"""Timestamps for peers that do not record when a trial finished.

:class:`TimedScorer` wraps the estimator's default scorer and appends one JSON
line per call (wall-clock time, searched parameter values, number of scored
rows, score) to a log file. It works across joblib worker processes and
Optuna's threads because each call appends one short line to the file.

:func:`trials_from_log` turns those lines back into trials: the calls for one
parameter setting, taken in time order, are cut into chunks of ``n_splits``
(one chunk per evaluation of that setting, e.g. per halving rung). A trial
finished when its last fold was scored; its resource is the number of rows its
folds scored, which for k-fold CV is the number of rows it was given (the
halving searches' ``n_resources``).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np


def normalize_params(params: dict[str, Any]) -> dict[str, Any]:
    """JSON-safe copy of ``params`` (numpy scalars -> Python numbers)."""
    out = {}
    for k, v in params.items():
        if isinstance(v, (bool, np.bool_)):
            out[k] = bool(v)
        elif isinstance(v, (int, np.integer)):
            out[k] = int(v)
        elif isinstance(v, (float, np.floating)):
            out[k] = float(v)
        else:
            out[k] = v
    return out


def params_key(params: dict[str, Any]) -> str:
    """Canonical string of a parameter setting (exact floats, sorted names)."""
    return json.dumps(normalize_params(params), sort_keys=True)


class TimedScorer:
    """Scorer that logs the time of every call, then returns the score.

    Parameters
    ----------
    scorer : callable
        ``scorer(estimator, X, y) -> float`` that does the scoring.
    log_path : str
        File the calls are appended to.
    param_names : list of str
        Names of the searched parameters, read from the fitted estimator.
    """

    def __init__(self, scorer: Any, log_path: str, param_names: list[str]) -> None:
        self.scorer = scorer
        self.log_path = log_path
        self.param_names = list(param_names)

    def __call__(self, estimator: Any, X: Any, y: Any = None, **kwargs: Any) -> float:
        score = self.scorer(estimator, X, y, **kwargs)
        all_params = estimator.get_params()
        line = {
            "t": time.time(),
            "n": len(X),
            "s": float(score),
            "p": normalize_params({k: all_params[k] for k in self.param_names}),
        }
        with open(self.log_path, "a") as fh:
            fh.write(json.dumps(line) + "\n")
        return score


def read_log(path: str | Path) -> list[dict]:
    """The calls a :class:`TimedScorer` logged (a torn last line is dropped)."""
    rows = []
    path = Path(path)
    if not path.is_file():
        return rows
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def trials_from_log(
    calls: Iterable[dict], n_splits: int, t0: float
) -> list[dict[str, Any]]:
    """Group scorer calls into finished trials.

    Parameters
    ----------
    calls : iterable of dict
        Lines of the log (keys ``t``, ``n``, ``s``, ``p``).
    n_splits : int
        Folds per trial.
    t0 : float
        Wall-clock time the search started.

    Returns
    -------
    trials : list of dict
        Keys ``elapsed`` (seconds since ``t0`` when the last fold was scored),
        ``score`` (mean over folds), ``resource`` (rows scored over the
        folds) and ``params``; sorted by ``elapsed``. A trailing chunk with
        fewer than ``n_splits`` calls (a trial cut off) is dropped.
    """
    by_key: dict[str, list[dict]] = defaultdict(list)
    for call in calls:
        by_key[params_key(call["p"])].append(call)
    trials = []
    for group in by_key.values():
        group.sort(key=lambda c: c["t"])
        for start in range(0, len(group) - n_splits + 1, n_splits):
            chunk = group[start : start + n_splits]
            trials.append(
                {
                    "elapsed": max(c["t"] for c in chunk) - t0,
                    "score": float(np.mean([c["s"] for c in chunk])),
                    "resource": int(sum(c["n"] for c in chunk)),
                    "params": chunk[0]["p"],
                }
            )
    trials.sort(key=lambda r: r["elapsed"])
    return trials
