"""Journal of a search in a :class:`~skbayes_search.TrialStore`: write each
finished trial, read a killed run back so the search resumes where it stopped.

A run records what it was made from (:func:`run_fingerprint`, in
``_journal_fingerprint``) and the store refuses to resume it from anything
else; a run is held by one live search at a time (a lease renewed by a
heartbeat thread), or shared by cooperating searches
(``TrialStore(path, cooperate=True)``) that claim trial positions atomically.
Every row read back is checked against the search space before it reaches the
search.
"""

from __future__ import annotations

import math
import os
import threading
import uuid
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ._journal_fingerprint import class_path, run_fingerprint
from ._trial import SearchContext, TrialRecord
from .storage import StoredTrialError, TrialStore, to_json

# Written in place of the traceback of a fit that failed in an earlier session.
FAILED_EARLIER = "The fit failed in an earlier session of this run (see the store)."
# Extras every trial row the journal writes carries.
_REQUIRED_EXTRAS = ("iter", "elapsed_time", "n_resources", "score")


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


# --------------------------------------------------------------------- journal


def _renew_until_stopped(
    store: TrialStore, run_id: int, token: str, interval: float, stop: threading.Event
) -> None:
    # The heartbeat: keeps the lease of a search whose trials take long.
    while not stop.wait(interval):
        try:
            if not store.renew_lease(run_id, token):
                return
        except Exception:  # a locked store: try again later
            continue


def _release(
    store: TrialStore, run_id: int, token: str, stop: threading.Event, pid: int
) -> None:
    # A journal dropped without finish() (the search raised): free the run.
    stop.set()
    if os.getpid() != pid:
        return  # a forked copy never releases its parent's lease
    try:
        store.release_run(run_id, token)
    except Exception:  # at exit, a closed store: the lease expires
        pass


class SearchJournal:
    """One run of one search in a store.

    Opening the journal refuses, before any fit, to resume a run made from
    other data, CV splits, scoring, estimator, strategy or search space, and a
    run another live search holds.

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
    X, y : array-like
        The data (fingerprinted, see :func:`run_fingerprint`).
    splits : list of (train, test) index arrays
        The search's fixed CV splits.
    scoring : object
        The search's ``scoring``.
    estimator : estimator
        The searched estimator.
    subset_seed : int
        Seed of the training-row orders the subsets are cut from, kept with
        a new run.

    Attributes
    ----------
    subset_seed : int
        The seed the run was made with: a resumed run, or another search
        cooperating on it, must fit its subsets on the rows the stored
        trials were fitted on, whatever its ``random_state``. A run stored
        without one keeps the seed given.
    """

    def __init__(
        self,
        store: TrialStore,
        run_name: str | None,
        search: Any,
        space: Any,
        meta: dict,
        *,
        X: Any,
        y: Any,
        splits: list,
        scoring: Any,
        estimator: Any,
        subset_seed: int,
    ) -> None:
        self.store = store
        self.run_name = run_name or (f"{type(search).__name__}-{uuid.uuid4().hex[:12]}")
        self.cooperate = bool(getattr(store, "cooperate", False))
        self._search = search
        if self.cooperate:
            _check_cooperative(search)
        self.run_id = store.open_run(
            self.run_name,
            strategy=type(search).__name__,
            estimator_class=class_path(estimator),
            space_signature=space.signature(),
            meta=meta,
            settings={
                "n_splits": int(meta.get("n_splits", 0)),
                "subset_seed": int(subset_seed),
            },
            fingerprint=run_fingerprint(
                X=X,
                y=y,
                splits=splits,
                scoring=scoring,
                estimator=estimator,
                searched=list(space.names),
                return_train_score=bool(getattr(search, "return_train_score", False)),
                subsample_validation=search._subsample_validation(),
            ),
        )
        stored = store.run(self.run_id)["settings"] or {}
        self.subset_seed = int(stored.get("subset_seed", subset_seed))
        self.lease, self.member = store.hold_run(self.run_id)
        stop = threading.Event()
        self._stop = stop
        self._finalizer = weakref.finalize(
            self, _release, store, self.run_id, self.lease, stop, os.getpid()
        )
        threading.Thread(
            target=_renew_until_stopped,
            args=(store, self.run_id, self.lease, store.lease_seconds / 4, stop),
            name=f"skbayes-lease-{self.run_name}",
            daemon=True,
        ).start()
        # place of the next trial in the order the search proposed them
        self._next_position = 0
        # cooperation: positions claimed and not yet given to trials, the
        # positions this search has in its context, the next row to look at
        self._reserved: list[int] = []
        self._known: set[int] = set()
        self._since = 0
        self._absorb: Callable[[TrialRecord, list[dict]], None] | None = None
        self._multimetric: bool | None = None

    def _where(self, trial: Any = None) -> str:
        where = f"store {os.fspath(self.store.path)!r}, run {self.run_name!r}"
        return where if trial is None else f"{where}, trial {trial!r}"

    # -- positions --------------------------------------------------------------

    def claim_positions(self, n: int) -> range | list[int]:
        """Places, in proposal order, of a batch of ``n`` trials.

        Cooperating, the places are claimed in the store (from those the
        search reserved when it counted what remains, see :meth:`resume`).
        """
        if not self.cooperate:
            start = self._next_position
            self._next_position += n
            return range(start, start + n)
        if n > len(self._reserved):
            raise RuntimeError(
                f"{self._where()}: {type(self._search).__name__} asked for {n} "
                f"trials where {len(self._reserved)} positions of the shared "
                "budget are left; cooperating searches run only within the run's "
                "budget."
            )
        positions, self._reserved = self._reserved[:n], self._reserved[n:]
        return positions

    def _n_remaining(self, ctx: SearchContext) -> int:
        # Cooperating: what remains is what this search could claim of the
        # run's budget; it looks at the others' new trials first.
        if not self._reserved:
            self._follow(ctx)
            # enough positions to keep the workers busy (each trial runs
            # n_splits fits), or the search's n_points
            want = getattr(self._search, "n_points", None) or math.ceil(
                ctx.n_jobs_effective / max(1, ctx.n_splits)
            )
            want = max(1, int(want))
            self._reserved = self.store.claim_positions(
                self.run_id, self.lease, want, below=ctx.budget
            )
        return len(self._reserved)

    # -- writing ----------------------------------------------------------------

    def write(self, record: TrialRecord, outs: list[dict], position: int) -> None:
        """Commit one finished trial (before the next proposal).

        ``position`` is the trial's place in proposal order (see
        :meth:`claim_positions`); trials are committed as they finish, which
        within a parallel batch is another order. Cooperating, a configuration
        another search has already stored is not stored twice (its position
        goes back to the run's budget).
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
        index = self.store.add_trial(
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
                    **({"stopped": True} if record.stopped else {}),
                },
            },
            lease=self.lease,
            skip_duplicate=self.cooperate,
        )
        if index is not None:
            self._known.add(int(position))

    # -- reading ----------------------------------------------------------------

    def resume(
        self,
        ctx: SearchContext,
        multimetric: bool | None,
        absorb: Callable[[TrialRecord, list[dict]], None],
    ) -> None:
        """Give the run's finished trials to ``absorb``, in proposal order.

        Cooperating, the search also keeps reading the other searches' trials
        (each time it counts what remains of the budget), counts the budget
        of the whole run, and draws from a seed of its own so that it does not
        propose what the others do.
        """
        for record, outs in self.read(ctx, multimetric):
            absorb(record, outs)
        if not self.cooperate:
            return
        self._absorb, self._multimetric = absorb, multimetric
        if self.member:
            sequence = np.random.SeedSequence([ctx.seed, self.member])
            ctx.seed = int(sequence.generate_state(1)[0]) % (2**31 - 1)
            ctx.rng = np.random.default_rng(ctx.seed)
        # The search loop counts what remains through the context.
        ctx.n_remaining = lambda: self._n_remaining(ctx)  # type: ignore[method-assign]

    def _follow(self, ctx: SearchContext) -> None:
        """Absorb the trials other cooperating searches finished since."""
        rows = self.store.trials(self.run_id, since=self._since)
        if not rows:
            return
        self._since = rows[-1]["trial_index"] + 1
        new = [row for row in rows if row["extras"].get("position") not in self._known]
        for row in sorted(new, key=lambda row: row["extras"].get("position", -1)):
            record, outs = self._record(row, ctx, self._multimetric)
            self._known.add(row["extras"].get("position"))
            self._absorb(record, outs)

    def read(
        self, ctx: SearchContext, multimetric: bool | None
    ) -> list[tuple[TrialRecord, list[dict]]]:
        """Finished trials of the run, as records and per-split outputs.

        In the order the search proposed them, so that a resumed search's
        ``cv_results_`` lists its earlier trials as the uninterrupted search
        did, whatever order the workers finished them in. Trials written
        without a position (by an older version) keep their store order.

        Raises
        ------
        StoredTrialError
            If a row cannot be read, or holds parameters outside the search
            space, unknown names, values of the wrong type, another number of
            CV splits or a repeated position; the message names the store, the
            run and the trial.
        """
        rows = self.store.trials(self.run_id)
        if rows:
            self._since = rows[-1]["trial_index"] + 1
        seen: dict[int, int] = {}
        for row in rows:
            position = row["extras"].setdefault("position", row["trial_index"])
            if (
                isinstance(position, bool)
                or not isinstance(position, int)
                or position < 0
            ):
                raise StoredTrialError(
                    f"{self._where(row['trial_index'])}: position {position!r} is "
                    "not a non-negative integer"
                )
            if position in seen:
                raise StoredTrialError(
                    f"{self._where(row['trial_index'])}: position {position} "
                    f"repeats the position of trial {seen[position]}; the run was "
                    "written by two searches at once. Start a new run."
                )
            seen[position] = row["trial_index"]
        rows.sort(key=lambda row: row["extras"]["position"])
        self._next_position = max(
            (row["extras"]["position"] + 1 for row in rows), default=0
        )
        self._known.update(seen)
        return [self._record(row, ctx, multimetric) for row in rows]

    def _record(
        self, row: dict, ctx: SearchContext, multimetric: bool | None
    ) -> tuple[TrialRecord, list[dict]]:
        """One checked row as a record and its per-split outputs."""
        where = self._where(row["trial_index"])
        space = ctx.space
        x = np.asarray(row["x"], dtype=float)
        if x.shape != (space.n_dims,) or np.any(x < -1e-9) or np.any(x > 1 + 1e-9):
            raise StoredTrialError(
                f"{where}: x {row['x']!r:.120} is not a point of the {space.n_dims}-"
                "dimensional unit cube of the search space"
            )
        stored = row["params"]
        if not isinstance(stored, dict):
            raise StoredTrialError(f"{where}: params {stored!r:.120} is not a dict")
        params = space.from_unit(x[None, :])[0]
        params.update({k: v for k, v in stored.items() if v is not None})
        try:
            space.validate(params)
        except (TypeError, ValueError) as exc:
            raise StoredTrialError(
                f"{where}: its parameters are not a point of the search space "
                f"({exc}); the store was modified outside skbayes_search. Delete "
                "the row or start a new run."
            ) from None
        if not np.allclose(space.to_unit([params])[0], x, rtol=0.0, atol=1e-6):
            raise StoredTrialError(
                f"{where}: its parameters {stored!r:.200} and its unit-cube point "
                "x disagree; the store was modified outside skbayes_search"
            )
        extras = dict(row["extras"])
        missing = [k for k in _REQUIRED_EXTRAS if k not in extras]
        if missing:
            raise StoredTrialError(f"{where}: extras lacks {missing}")
        try:
            iteration = int(extras.pop("iter"))
            elapsed = float(extras.pop("elapsed_time"))
            n_resources = int(extras.pop("n_resources"))
            score = float(extras.pop("score"))
        except (TypeError, ValueError) as exc:
            raise StoredTrialError(f"{where}: extras {exc}") from None
        extras.pop("position", None)
        stopped = extras.pop("stopped", False) is True
        fit_times = row["fit_times"]
        score_times = row["score_times"]
        if len(fit_times) != ctx.n_splits:
            raise StoredTrialError(
                f"{where}: it has {len(fit_times)} CV splits, the search {ctx.n_splits}"
            )
        failed = row["status"] == "failed"
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
            stopped=stopped,
        )
        return record, splits

    def finish(self) -> None:
        """Mark the run finished (ready for transfer to later datasets) and
        give it up; cooperating, the last search to end marks it finished."""
        self._stop.set()
        self._finalizer.detach()
        self.store.release_run(self.run_id, self.lease, finish=True)


def _check_cooperative(search: Any) -> None:
    from ._base import BaseBayesSearchCV

    if type(search)._finalize is not BaseBayesSearchCV._finalize:
        raise ValueError(
            f"{type(search).__name__} cannot cooperate with other searches on one "
            "run (TrialStore(cooperate=True)): it runs trials beyond its n_iter "
            "budget when it ends. Cooperation is for strategies whose budget is "
            "n_iter trials, such as BayesSearchCV."
        )


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
