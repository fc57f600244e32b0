"""What a strategy sees of a running search: trials asked for, trials finished."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Trial:
    """A configuration to evaluate on a fraction of each split's training rows.

    Parameters
    ----------
    params : dict
        Estimator parameters.
    fraction : float, default=1.0
        Share of each split's training rows to fit on, in (0, 1].
    iter : int, default=0
        Iteration (BO step or stage) recorded in ``cv_results_["iter"]``.
    extras : dict, default={}
        Extra ``cv_results_`` columns for this trial (strategy-specific).
    final : bool, default=False
        The search's answer depends on it: when ``max_time`` comes while it
        runs, it is not stopped with the others but gets the final trials'
        grace period.
    stopped : bool, default=False
        Set by the search loop when the end of that grace period stopped it:
        recorded as failed, it says nothing against the configuration.

    Examples
    --------
    >>> from skbayes_search._trial import Trial
    >>> Trial({"C": 1.0}, fraction=0.25, iter=3)
    Trial(params={'C': 1.0}, fraction=0.25, iter=3, extras={})
    """

    params: dict
    fraction: float = 1.0
    iter: int = 0
    extras: dict = field(default_factory=dict)
    final: bool = field(default=False, repr=False)
    stopped: bool = field(default=False, repr=False)


@dataclass
class TrialRecord:
    """A finished trial, as strategies read it back.

    ``score`` is the mean validation score of the metric the search optimises
    (``nan`` when the trial failed); ``cost`` is fit plus score time in
    seconds, summed over splits.
    """

    params: dict
    x: np.ndarray
    fraction: float
    n_resources: int
    score: float
    cost: float
    fit_time: float
    failed: bool
    iter: int
    elapsed_time: float
    extras: dict = field(default_factory=dict)
    #: The failed fits' error messages (scikit-learn's ``fit_error``), so
    #: that a search whose every trial failed can say why.
    fit_errors: tuple = ()
    #: Stopped by the search's deadline (:attr:`Trial.stopped`), not failed
    #: for a fault of its own.
    stopped: bool = False

    @classmethod
    def from_fits(
        cls,
        trial: Trial,
        outs: list[dict],
        *,
        x: np.ndarray,
        n_resources: int,
        elapsed_time: float,
        metric: str | None,
    ) -> TrialRecord:
        """The record of ``trial`` from scikit-learn's per-split results.

        ``metric`` picks the optimised score of a multi-metric scoring (the
        first one when None or absent).
        """
        scores = []
        for out in outs:
            s = out["test_scores"]
            if isinstance(s, dict):
                s = s[metric] if metric in s else next(iter(s.values()))
            scores.append(float(s))
        fit_time = float(sum(out["fit_time"] for out in outs))
        return cls(
            params=trial.params,
            x=x,
            fraction=float(trial.fraction),
            n_resources=n_resources,
            score=float(np.mean(scores)),
            cost=fit_time + float(sum(out["score_time"] for out in outs)),
            fit_time=fit_time,
            failed=any(out["fit_error"] is not None for out in outs),
            iter=int(trial.iter),
            elapsed_time=elapsed_time,
            extras=dict(trial.extras),
            fit_errors=tuple(
                out["fit_error"] for out in outs if out["fit_error"] is not None
            ),
            stopped=bool(trial.stopped),
        )


class SearchContext:
    """State of one search shared between the base and its strategy.

    Strategies read the finished trials and the budget from here; only the
    base appends to :attr:`trials`.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._trial import SearchContext, TrialRecord
    >>> from skbayes_search.space import Real, SearchSpace
    >>> ctx = SearchContext(
    ...     space=SearchSpace({"C": Real(0.1, 10.0)}), rng=np.random.default_rng(0),
    ...     seed=0, n_train=100, n_classes=2, n_splits=3, budget=10,
    ...     max_time=None, n_jobs_effective=1, start_time=0.0,
    ... )
    >>> def record(score):
    ...     return TrialRecord(
    ...         params={"C": 1.0}, x=np.array([0.1]), fraction=1.0, n_resources=100,
    ...         score=score, cost=0.5, fit_time=0.4, failed=np.isnan(score), iter=0,
    ...         elapsed_time=1.0,
    ...     )
    >>> ctx.trials += [record(0.8), record(0.9), record(float("nan"))]  # the base
    >>> ctx.losses()  # minus the scores; the failure gets the worst loss
    array([-0.8, -0.9, -0.8])
    >>> ctx.n_remaining(), ctx.n_succeeded(), ctx.time_left()
    (7, 2, inf)
    """

    def __init__(
        self,
        *,
        space: Any,
        rng: np.random.Generator,
        seed: int,
        n_train: int,
        n_classes: int | None,
        n_splits: int,
        budget: int,
        max_time: float | None,
        n_jobs_effective: int,
        start_time: float,
    ) -> None:
        self.space = space
        self.rng = rng
        self.seed = seed
        self.n_train = n_train
        self.n_classes = n_classes
        self.n_splits = n_splits
        self.budget = budget
        self.max_time = max_time
        self.n_jobs_effective = n_jobs_effective
        self.start_time = start_time
        self.trials: list[TrialRecord] = []
        #: Trials proposed and still running (the loop keeps this list); a
        #: strategy conditions its next proposals on them.
        self.pending: list[Trial] = []
        #: The run's journal in the search's store (None without a store);
        #: a strategy reading other runs reads them through its store.
        self.journal: Any = None

    def elapsed(self) -> float:
        """Seconds since the search's ``fit`` started."""
        return time.perf_counter() - self.start_time

    def time_left(self) -> float:
        """Seconds left of ``max_time`` (``inf`` without a time budget)."""
        if self.max_time is None:
            return float("inf")
        return self.max_time - self.elapsed()

    def n_remaining(self) -> int:
        """Trials left of the count budget (running trials count as spent)."""
        return max(0, self.budget - len(self.trials) - len(self.pending))

    def X_pending(self) -> np.ndarray:
        """Unit-cube encodings of the running trials, shape (k, n_dims)."""
        if not self.pending:
            return np.empty((0, self.space.n_dims))
        return self.space.to_unit([t.params for t in self.pending])

    def X(self, trials: list[TrialRecord] | None = None) -> np.ndarray:
        """Unit-cube encodings of finished trials, shape (n, n_dims)."""
        trials = self.trials if trials is None else trials
        if not trials:
            return np.empty((0, self.space.n_dims))
        return np.vstack([t.x for t in trials])

    def scores(self, trials: list[TrialRecord] | None = None) -> np.ndarray:
        """Validation scores of finished trials (``nan`` for failures).

        A failed trial reads as ``nan`` whatever ``error_score`` put in its
        record, so a numeric ``error_score`` never reaches a surrogate.
        """
        trials = self.trials if trials is None else trials
        return np.array([np.nan if t.failed else t.score for t in trials], dtype=float)

    def losses(self, trials: list[TrialRecord] | None = None) -> np.ndarray:
        """Finite surrogate targets: minus the score, failures penalised.

        A failed (or non-finite) trial gets the worst finite loss seen among
        ``trials`` so the surrogate learns to avoid the region without being
        distorted by an arbitrary constant.
        """
        loss = -self.scores(trials)
        finite = np.isfinite(loss)
        penalty = loss[finite].max() if finite.any() else 0.0
        loss[~finite] = penalty
        return loss

    def costs(self, trials: list[TrialRecord] | None = None) -> np.ndarray:
        """Fit plus score seconds of finished trials, floored at 1 ms."""
        trials = self.trials if trials is None else trials
        return np.maximum([t.cost for t in trials], 1e-3)

    def n_succeeded(self) -> int:
        """Number of finished trials with a finite score."""
        return int(np.isfinite(self.scores()).sum()) if self.trials else 0
