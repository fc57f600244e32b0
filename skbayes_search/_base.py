"""The search base every strategy shares: its parameters and their
constraints, ``fit`` (prepare, resume, search, assemble), the recording of
each trial, failures, best selection. What ``fit`` fixes before any estimator
is fitted lives in :mod:`._run_setup`, the final refit in :mod:`._refit`."""

from __future__ import annotations

import numbers
import os
import time
from functools import partial
from typing import Any

import numpy as np
from sklearn.base import _fit_context
from sklearn.model_selection._search import BaseSearchCV
from sklearn.model_selection._validation import _insert_error_scores
from sklearn.utils._param_validation import Interval

from ._evaluate import TrialEvaluator
from ._failures import rank_failures_last, warn_about_failures
from ._loop import SearchLoop
from ._progress import progress_bar, report_trial
from ._refit import refit_best
from ._run_setup import SearchRun, prepare_run
from ._trial import SearchContext, Trial, TrialRecord
from ._validation import COUNT, NON_EMPTY_STR
from ._workers import make_workers
from .storage import TrialStore

#: Columns every strategy adds to scikit-learn's ``cv_results_``.
BASE_RESULT_COLUMNS = ("n_resources", "resource_fraction", "iter", "elapsed_time")


#: The constructor parameters every strategy shares, set by the base's __init__.
SHARED_PARAMS = (
    "estimator",
    "search_spaces",
    "n_iter",
    "max_time",
    "trial_timeout",
    "asynchronous",
    "scoring",
    "n_jobs",
    "refit",
    "cv",
    "verbose",
    "pre_dispatch",
    "random_state",
    "error_score",
    "return_train_score",
    "store",
    "run_name",
)


def shared_params(values: dict[str, Any]) -> dict[str, Any]:
    """The shared parameters among a strategy ``__init__``'s ``locals()``.

    scikit-learn reads a strategy's parameters from its ``__init__``
    signature, so each strategy lists them all; this passes the shared ones
    on to :class:`BaseBayesSearchCV` without writing them out again.
    """
    return {name: values[name] for name in SHARED_PARAMS}


#: Private attributes scikit-learn's ``_fit_context`` sets during ``fit`` and
#: removes itself afterwards (the callbacks' teardown needs them).
_SKLEARN_FIT_STATE = frozenset({"_callback_fit_ctx", "_skl_callbacks_to_teardown"})


class NoTrialFinishedError(ValueError):
    """``fit`` ended at ``max_time`` before any trial finished: there is no
    answer to report (the message says how to get one)."""


class BaseBayesSearchCV(BaseSearchCV):
    """Base class of the skbayes_search meta-estimators.

    Owns ``fit``: it validates every parameter before any estimator is
    fitted, fixes the CV splits once, runs the strategy's ask/tell loop and
    evaluates every trial through the one evaluation path
    (:class:`~skbayes_search._evaluate.TrialEvaluator`), records each trial
    the moment it finishes, enforces ``n_iter``/``max_time``, turns failing
    fits into recorded ``error_score`` values, selects the best trial and
    refits. Subclasses only decide *what* to evaluate next (``_ask``).

    Warning: This class should not be used directly. Use derived classes
    instead.
    """

    _parameter_constraints: dict = {
        **BaseSearchCV._parameter_constraints,
        "search_spaces": [dict, list],
        "n_iter": [COUNT],
        "max_time": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "trial_timeout": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "asynchronous": ["boolean"],
        "random_state": ["random_state"],
        "store": [TrialStore, str, os.PathLike, None],
        "run_name": [NON_EMPTY_STR, None],
    }

    def __init__(
        self,
        estimator: Any,
        search_spaces: dict | list,
        *,
        n_iter: Any = 50,
        max_time: float | None = None,
        trial_timeout: float | None = None,
        asynchronous: bool = True,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: bool | str | Any = True,
        cv: Any = None,
        verbose: int = 0,
        pre_dispatch: int | str = "2*n_jobs",
        random_state: Any = None,
        error_score: str | float = np.nan,
        return_train_score: bool = False,
        store: Any = None,
        run_name: str | None = None,
    ) -> None:
        # The parameters every strategy shares, set in one place; a strategy's
        # own __init__ still lists them all, as scikit-learn's get_params
        # reads the concrete class's signature.
        super().__init__(
            estimator=estimator,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.search_spaces = search_spaces
        self.n_iter = n_iter
        self.max_time = max_time
        self.trial_timeout = trial_timeout
        self.asynchronous = asynchronous
        self.random_state = random_state
        self.store = store
        self.run_name = run_name

    # ------------------------------------------------------------------
    # Strategy hooks
    # ------------------------------------------------------------------
    def _check_strategy_params(self, ctx: SearchContext) -> None:
        """Validate strategy settings against the data, before any fit."""

    def _subsample_validation(self) -> bool:
        """Whether a trial on a fraction of the training rows is scored on
        the same fraction of the validation rows (otherwise on all)."""
        return False

    def _init_search(self, ctx: SearchContext) -> None:
        """Reset per-search strategy state (surrogates, chains)."""

    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        """Next trials to evaluate; an empty list ends the search."""
        raise NotImplementedError

    def _finalize(self, ctx: SearchContext) -> list[Trial]:
        """Trials to run once after the budget is spent (even past max_time)."""
        return []

    def _end_search(self, ctx: SearchContext, results: dict) -> None:
        """Set strategy-specific fitted attributes once the search is over.

        Called after the best trial is selected, before the refit; private
        attributes the strategy created during ``fit`` are dropped after it.
        """

    def _total_budget(self) -> int:
        """Number of trials the search may run."""
        return int(self.n_iter)

    def _refit_fraction(self) -> float:
        """Share of the data ``best_estimator_`` is refitted on."""
        return 1.0

    def _select_best(self, results: dict, refit_metric: str) -> int:
        """Index of the best row; scikit-learn's rule by default."""
        return self._select_best_index(self.refit, refit_metric, results)

    # ------------------------------------------------------------------
    # fit
    # ------------------------------------------------------------------
    @_fit_context(
        # the wrapped estimator is validated when it is fitted
        prefer_skip_nested_validation=False
    )
    def fit(self, X: Any, y: Any = None, **params: Any) -> BaseBayesSearchCV:
        """Run the search: evaluate trials until the budget is spent, then refit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
            Targets; ``None`` for unsupervised estimators.
        **params : dict of str -> object
            Parameters passed to the estimator's ``fit``, the scorer and the
            CV splitter, routed exactly as in scikit-learn's search
            estimators. Sample-aligned fit parameters are subsampled along
            with ``X`` and ``y``.

        Returns
        -------
        self : object
            The fitted search.
        """
        state_before = set(vars(self))
        try:
            return self._fit(X, y, **params)
        finally:
            # Surrogates, chains and other per-search state of the strategy
            # live only while fit runs: the fitted search stays light to
            # pickle and a second fit starts afresh.
            for key in set(vars(self)) - state_before - _SKLEARN_FIT_STATE:
                if key.startswith("_"):
                    delattr(self, key)

    def _fit(self, X: Any, y: Any, **params: Any) -> BaseBayesSearchCV:
        run = prepare_run(self, X, y, params)
        evaluator = TrialEvaluator(
            base_estimator=run.base_estimator,
            X=run.X,
            y=run.y,
            splits=run.splits,
            y_stratify=run.y_stratify,
            rng=np.random.default_rng(run.seed_subsets),
            fit_and_score_kwargs=run.fit_and_score_kwargs,
            callbacks=run.callbacks,
            subsample_validation=self._subsample_validation(),
        )
        self._resume(run)
        self._search(run, evaluator)
        return self._assemble(run)

    def _resume(self, run: SearchRun) -> None:
        """Read a killed run's finished trials back from the store."""
        if run.journal is None:
            return
        ctx = run.ctx
        multimetric = isinstance(self.scoring, (list, tuple, dict)) or None

        def absorb(record: TrialRecord, outs: list[dict]) -> None:
            ctx.trials.append(record)
            run.all_out.extend(outs)

        # Cooperating searches also absorb each other's trials later on.
        run.journal.resume(ctx, multimetric, absorb)
        if ctx.trials:
            # The clock (and max_time) continues where the run stopped.
            ctx.start_time = time.perf_counter() - max(
                t.elapsed_time for t in ctx.trials
            )

    def _search(self, run: SearchRun, evaluator: TrialEvaluator) -> None:
        """The asynchronous loop, each trial recorded the moment it ends."""
        ctx, journal = run.ctx, run.journal
        metric = self.refit if isinstance(self.refit, str) else None
        trial_timeout = self.trial_timeout
        # the tqdm bar, if any (kept out of the search's state, which the
        # workers may receive)
        progress = progress_bar(
            self.verbose, ctx.budget, len(ctx.trials), type(self).__name__
        )

        def commit(trial: Trial, outs: list, position: int | None, finish: float):
            record = TrialRecord.from_fits(
                trial,
                outs,
                x=ctx.space.to_unit([trial.params])[0],
                n_resources=evaluator.n_resources(trial.fraction),
                elapsed_time=finish - ctx.start_time,
                metric=metric,
            )
            # Committed the moment it finishes: a killed search loses at most
            # the trials still running.
            if journal is not None:
                journal.write(record, outs, position)
            return record

        def publish(record: TrialRecord, outs: list) -> None:
            ctx.trials.append(record)
            run.all_out.extend(outs)
            report_trial(type(self).__name__, self.verbose, ctx, record, progress)

        workers = make_workers(
            self.n_jobs,
            self.pre_dispatch,
            need_stop=self.max_time is not None or trial_timeout is not None,
        )
        # Starting worker processes (once per Python session) is not charged
        # to max_time: the budget is for fits and proposals.
        ctx.start_time += workers.startup_seconds
        loop = SearchLoop(
            self,
            ctx,
            evaluator,
            workers,
            commit=commit,
            publish=publish,
            claim_position=(
                (lambda: journal.claim_positions(1)[0])
                if journal is not None
                else (lambda: None)
            ),
            fit_kwargs=run.callbacks.fit_kwargs,
            failed_out=partial(self._stopped_fit, run.scorers),
            trial_timeout=trial_timeout,
            n_points=getattr(self, "n_points", None),
            stop_on_timeout=self.error_score == "raise",
            asynchronous=self.asynchronous,
        )
        try:
            run.callbacks.begin_search()
            self._init_search(ctx)
            loop.run()
            run.callbacks.end_search()
        finally:
            workers.close()
            if progress is not None:
                progress.close()
        if not ctx.trials:
            raise NoTrialFinishedError(
                f"No trial finished within max_time={self.max_time}s; give the "
                "search more time or make one fit cheaper."
            )
        if journal is not None:
            journal.finish()

    def _stopped_fit(self, scorers: Any, test: Any, seconds: float, reason: str):
        """The per-split result of a fit stopped at a deadline, in the form of
        scikit-learn's ``_fit_and_score`` for a failed fit."""
        score = np.nan if self.error_score == "raise" else self.error_score
        if hasattr(scorers, "_scorers"):
            score = {name: score for name in scorers._scorers}
        out = {
            "fit_error": f"TimeoutError: {reason}",
            "test_scores": score,
            "n_test_samples": len(test),
            "fit_time": float(seconds),
            "score_time": 0.0,
        }
        if self.return_train_score:
            out["train_scores"] = score
        return out

    def _assemble(self, run: SearchRun) -> BaseBayesSearchCV:
        """cv_results_, the best trial, the refit and the fitted attributes."""
        ctx, all_out, scorers = run.ctx, run.all_out, run.scorers
        refit_metric = run.refit_metric
        warn_about_failures(ctx, all_out, self.error_score)
        if callable(self.scoring):
            _insert_error_scores(all_out, self.error_score)
        results = self._format_results(
            [t.params for t in ctx.trials],
            self.n_splits_,
            all_out,
            self._more_results(ctx),
        )
        first_test_score = all_out[0]["test_scores"]
        self.multimetric_ = isinstance(first_test_score, dict)
        if callable(self.scoring) and self.multimetric_:
            self._check_refit_for_multimetric(first_test_score)
            refit_metric = self.refit

        # a failed trial is never the answer, whatever error_score it records
        chosen_from = rank_failures_last(results, [t.failed for t in ctx.trials])
        if self.refit or not self.multimetric_:
            self.best_index_ = int(self._select_best(chosen_from, refit_metric))
            if not callable(self.refit):
                self.best_score_ = results[f"mean_test_{refit_metric}"][
                    self.best_index_
                ]
            self.best_params_ = results["params"][self.best_index_]
        self._end_search(ctx, results)

        if self.refit:
            refit_best(self, run)

        if hasattr(scorers, "_scorers"):
            self.scorer_ = scorers._scorers
        else:
            self.scorer_ = scorers
        self.cv_results_ = results
        run.callbacks.end()
        return self

    # ------------------------------------------------------------------
    # recording
    # ------------------------------------------------------------------
    def _more_results(self, ctx: SearchContext) -> dict[str, list]:
        """Extra ``cv_results_`` columns (a hook: strategies may add columns
        that depend on the whole search, e.g. a final normalisation)."""
        more: dict[str, list] = {
            "n_resources": [t.n_resources for t in ctx.trials],
            "resource_fraction": [t.fraction for t in ctx.trials],
            "iter": [t.iter for t in ctx.trials],
            "elapsed_time": [t.elapsed_time for t in ctx.trials],
            "fit_failed": [t.failed for t in ctx.trials],
        }
        keys: list[str] = []
        for t in ctx.trials:
            keys.extend(k for k in t.extras if k not in keys)
        for key in keys:
            more[key] = [t.extras.get(key, np.nan) for t in ctx.trials]
        return more
