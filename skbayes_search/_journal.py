"""Journal of a search in a :class:`~skbayes_search.TrialStore`: write each
finished trial, read a killed run back so the search resumes where it stopped."""

from __future__ import annotations

import math
import os
import uuid
from typing import Any

import numpy as np

from ._trial import SearchContext, TrialRecord
from .storage import TrialStore, to_json

# Written in place of the traceback of a fit that failed in an earlier session.
FAILED_EARLIER = "The fit failed in an earlier session of this run (see the store)."


def as_store(store: TrialStore | str | os.PathLike | None) -> TrialStore | None:
    """The store a search was given: a TrialStore or a path to one."""
    if store is None or isinstance(store, TrialStore):
        return store
    return TrialStore(store)


def trial_score(row: dict) -> float:
    """The score a search ranked a stored trial by; nan for a failed fit.

    Parameters
    ----------
    row : dict
        A trial as :meth:`TrialStore.trials` returns it.

    Returns
    -------
    float
        The journal's ``score`` extra; for rows written without it, the mean
        over splits of the first test metric.
    """
    if row["status"] == "failed":
        return math.nan
    score = row["extras"].get("score")
    if score is None:
        test = row["scores"]["test"]
        score = np.mean(next(iter(test.values())))
    return float(score)


def _class_path(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


class SearchJournal:
    """One run of one search in a store.

    Parameters
    ----------
    store : TrialStore
        Where trials go.
    run_name : str or None
        Run to resume or create; ``None`` creates a fresh, uniquely named run.
    search : BaseBayesSearchCV
        The search writing the run.
    space : SearchSpace
        Its parsed space (the signature guards against resuming another one).
    meta : dict
        Dataset meta-features (``n_samples``, ``n_features``, ``n_classes``).
    """

    def __init__(
        self,
        store: TrialStore,
        run_name: str | None,
        search: Any,
        space: Any,
        meta: dict,
    ) -> None:
        self.store = store
        self.run_name = run_name or (f"{type(search).__name__}-{uuid.uuid4().hex[:12]}")
        self.run_id = store.open_run(
            self.run_name,
            strategy=type(search).__name__,
            estimator_class=_class_path(search.estimator),
            space_signature=space.signature(),
            meta=meta,
            settings={"n_splits": int(meta.get("n_splits", 0))},
        )
        # place of the next trial in the order the search proposed them
        self._next_position = 0

    def claim_positions(self, n: int) -> range:
        """Places, in proposal order, of a batch of ``n`` trials."""
        start = self._next_position
        self._next_position += n
        return range(start, start + n)

    def write(self, record: TrialRecord, outs: list[dict], position: int) -> None:
        """Commit one finished trial (before the next proposal).

        ``position`` is the trial's place in proposal order (see
        :meth:`claim_positions`); trials are committed as they finish, which
        within a parallel batch is another order.
        """
        params = {}
        for name, value in record.params.items():
            try:
                to_json(value, name)
            except TypeError:
                # Categories such as estimators are rebuilt from ``x``.
                value = None
            params[name] = value
        test = _per_metric([out["test_scores"] for out in outs])
        train = None
        if "train_scores" in outs[0]:
            train = _per_metric([out["train_scores"] for out in outs])
        self.store.add_trial(
            self.run_id,
            {
                "params": params,
                "x": np.asarray(record.x, dtype=float).tolist(),
                "fraction": record.fraction,
                "status": "failed" if record.failed else "ok",
                "scores": {"test": test, "train": train},
                "fit_times": [float(out["fit_time"]) for out in outs],
                "score_times": [float(out["score_time"]) for out in outs],
                "n_test_samples": [int(out["n_test_samples"]) for out in outs],
                "extras": {
                    **record.extras,
                    "iter": record.iter,
                    "elapsed_time": record.elapsed_time,
                    "n_resources": record.n_resources,
                    "score": record.score,
                    "position": int(position),
                },
            },
        )

    def read(
        self, ctx: SearchContext, multimetric: bool | None
    ) -> list[tuple[TrialRecord, list[dict]]]:
        """Finished trials of the run, as records and per-split outputs.

        In the order the search proposed them, so that a resumed search's
        ``cv_results_`` lists its earlier trials as the uninterrupted search
        did, whatever order the workers finished them in. Trials written
        without a position (by an older version) keep their store order.
        """
        rows = self.store.trials(self.run_id)
        for row in rows:
            row["extras"].setdefault("position", row["trial_index"])
        rows.sort(key=lambda row: row["extras"]["position"])
        self._next_position = max(
            (row["extras"]["position"] + 1 for row in rows), default=0
        )
        out = []
        for row in rows:
            x = np.asarray(row["x"], dtype=float)
            params = ctx.space.from_unit(x[None, :])[0]
            params.update({k: v for k, v in row["params"].items() if v is not None})
            extras = dict(row["extras"])
            iteration = int(extras.pop("iter"))
            elapsed = float(extras.pop("elapsed_time"))
            n_resources = int(extras.pop("n_resources"))
            score = float(extras.pop("score"))
            extras.pop("position")
            failed = row["status"] == "failed"
            fit_times = row["fit_times"]
            score_times = row["score_times"]
            splits = []
            for k in range(len(fit_times)):
                split = {
                    "fit_error": FAILED_EARLIER if failed else None,
                    "test_scores": _split_scores(row["scores"]["test"], k, multimetric),
                    "n_test_samples": int(row["n_test_samples"][k]),
                    "fit_time": float(fit_times[k]),
                    "score_time": float(score_times[k]),
                }
                if row["scores"].get("train") is not None:
                    split["train_scores"] = _split_scores(
                        row["scores"]["train"], k, multimetric
                    )
                splits.append(split)
            fit_time = float(np.sum(fit_times))
            record = TrialRecord(
                params=params,
                x=x,
                fraction=float(row["fraction"]),
                n_resources=n_resources,
                score=score,
                cost=fit_time + float(np.sum(score_times)),
                fit_time=fit_time,
                failed=failed,
                iter=iteration,
                elapsed_time=elapsed,
                extras=extras,
            )
            out.append((record, splits))
        return out

    def finish(self) -> None:
        """Mark the run finished (ready for transfer to later datasets)."""
        self.store.finish_run(self.run_id)


def _per_metric(scores: list) -> dict[str, list[float]]:
    # A failed fit under a callable multimetric scorer leaves a bare
    # error_score where the other splits have dicts.
    names = next((list(s) for s in scores if isinstance(s, dict)), None)
    if names is None:
        return {"score": [float(s) for s in scores]}
    return {
        name: [float(s[name]) if isinstance(s, dict) else float(s) for s in scores]
        for name in names
    }


def _split_scores(per_metric: dict, k: int, multimetric: bool | None) -> Any:
    if not multimetric and list(per_metric) == ["score"]:
        return float(per_metric["score"][k])
    return {name: float(values[k]) for name, values in per_metric.items()}
