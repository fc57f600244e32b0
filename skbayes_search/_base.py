"""The search base every strategy shares: validation, the ask/tell loop,
trial evaluation and recording, budgets, failures, best selection, refit."""

from __future__ import annotations

import numbers
import os
import time
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import _fit_context, clone, is_classifier
from sklearn.model_selection import check_cv
from sklearn.model_selection._search import BaseSearchCV
from sklearn.model_selection._validation import _insert_error_scores
from sklearn.utils import check_random_state, get_tags, indexable
from sklearn.utils._param_validation import Interval
from sklearn.utils.metaestimators import _safe_split
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import (
    _check_method_params,
    _num_features,
    _num_samples,
)

from ._callbacks import SearchCallbacks
from ._evaluate import TrialEvaluator, stratified_order, subset_size
from ._failures import warn_about_failures
from ._journal import SearchJournal, as_store
from ._loop import SearchLoop
from ._progress import progress_bar, report_trial
from ._trial import SearchContext, Trial, TrialRecord
from ._validation import COUNT, NON_EMPTY_STR
from ._workers import make_workers
from .space import SearchSpace
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


@dataclass
class _Run:
    """What one ``fit`` prepares and its phases share."""

    X: Any
    y: Any
    scorers: Any
    refit_metric: str
    routed_params: Any
    splits: list
    rs: np.random.RandomState
    seed_subsets: int
    y_stratify: np.ndarray | None
    ctx: SearchContext
    journal: SearchJournal | None
    callbacks: SearchCallbacks
    base_estimator: Any
    fit_and_score_kwargs: dict
    all_out: list[dict] = field(default_factory=list)


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
        run = self._prepare(X, y, params)
        evaluator = TrialEvaluator(
            base_estimator=run.base_estimator,
            X=run.X,
            y=run.y,
            splits=run.splits,
            y_stratify=run.y_stratify,
            rng=np.random.default_rng(run.seed_subsets),
            fit_and_score_kwargs=run.fit_and_score_kwargs,
            callbacks=run.callbacks,
        )
        self._resume(run)
        self._search(run, evaluator)
        return self._assemble(run)

    def _prepare(self, X: Any, y: Any, params: dict) -> _Run:
        """Validate everything and fix the splits, before any estimator is fit."""
        start = time.perf_counter()
        scorers, refit_metric = self._get_scorers()
        X, y = indexable(X, y)
        params = _check_method_params(X, params=params)
        routed_params = self._get_routed_params_for_fit(params)

        space = SearchSpace(
            self.search_spaces,
            estimator_params=set(self.estimator.get_params(deep=True)),
        )
        cv = check_cv(self.cv, y, classifier=is_classifier(self.estimator))
        split_params = routed_params.splitter.split
        self.n_splits_ = cv.get_n_splits(X, y, **split_params)
        # The splits are fixed once so that every trial, whatever its
        # fraction, is scored on the same validation rows.
        splits = [
            (_as_indices(train, X), _as_indices(test, X))
            for train, test in cv.split(X, y, **split_params)
        ]
        if len(splits) != self.n_splits_:
            raise ValueError(
                "cv.split and cv.get_n_splits return inconsistent results. "
                f"Expected {self.n_splits_} splits, got {len(splits)}"
            )
        if not splits:
            raise ValueError(
                f"cv gave no (train, test) split, got cv={self.cv!r}; pass an "
                "int, a CV splitter or a non-empty iterable of splits."
            )
        for k, (train, test) in enumerate(splits):
            if not len(train) or not len(test):
                raise ValueError(
                    f"cv: split {k} has {len(train)} training and {len(test)} "
                    "test rows; every split needs both."
                )

        rs = check_random_state(self.random_state)
        seed_subsets, seed_search = (int(s) for s in rs.randint(2**31 - 1, size=2))
        y_stratify = None
        n_classes = None
        if (
            is_classifier(self.estimator)
            and y is not None
            and type_of_target(y) in ("binary", "multiclass")
        ):
            y_stratify = np.asarray(y)
            n_classes = len(np.unique(y_stratify))

        ctx = SearchContext(
            space=space,
            rng=np.random.default_rng(seed_search),
            seed=seed_search,
            n_train=min(len(train) for train, _ in splits),
            n_classes=n_classes,
            n_splits=self.n_splits_,
            budget=self._total_budget(),
            max_time=self.max_time,
            n_jobs_effective=effective_n_jobs(self.n_jobs),
            start_time=start,
        )
        self._check_strategy_params(ctx)
        journal = None
        store = as_store(getattr(self, "store", None))
        if store is not None:
            # Opening the run validates the store, refuses to resume a run
            # made from other data, splits, scoring, estimator or space, and
            # takes the run's lease, before any fit.
            journal = SearchJournal(
                store,
                getattr(self, "run_name", None),
                self,
                space,
                meta={
                    "n_samples": int(_num_samples(X)),
                    "n_features": _num_features_or_none(X),
                    "n_classes": n_classes,
                    "n_splits": self.n_splits_,
                },
                X=X,
                y=y,
                splits=splits,
                scoring=self.scoring,
                estimator=self.estimator,
            )
            self.run_name_ = journal.run_name
            ctx.journal = journal

        sample_weight = params.get("sample_weight")
        callbacks = SearchCallbacks(
            self,
            X,
            y,
            None if sample_weight is None else {"sample_weight": sample_weight},
        )
        return _Run(
            X=X,
            y=y,
            scorers=scorers,
            refit_metric=refit_metric,
            routed_params=routed_params,
            splits=splits,
            rs=rs,
            seed_subsets=seed_subsets,
            y_stratify=y_stratify,
            ctx=ctx,
            journal=journal,
            callbacks=callbacks,
            base_estimator=clone(self.estimator),
            fit_and_score_kwargs=dict(
                scorer=scorers,
                fit_params=routed_params.estimator.fit,
                score_params=routed_params.scorer.score,
                return_train_score=self.return_train_score,
                return_n_test_samples=True,
                return_times=True,
                return_parameters=False,
                error_score=self.error_score,
                verbose=self.verbose,
            ),
        )

    def _resume(self, run: _Run) -> None:
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

    def _search(self, run: _Run, evaluator: TrialEvaluator) -> None:
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
            raise ValueError(
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

    def _assemble(self, run: _Run) -> BaseBayesSearchCV:
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

        if self.refit or not self.multimetric_:
            self.best_index_ = int(self._select_best(results, refit_metric))
            if not callable(self.refit):
                self.best_score_ = results[f"mean_test_{refit_metric}"][
                    self.best_index_
                ]
            self.best_params_ = results["params"][self.best_index_]
        self._end_search(ctx, results)

        if self.refit:
            self._refit_best(
                run.base_estimator,
                run.X,
                run.y,
                run.routed_params.estimator.fit,
                run.y_stratify,
                run.rs,
                run.callbacks,
            )

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
        }
        keys: list[str] = []
        for t in ctx.trials:
            keys.extend(k for k in t.extras if k not in keys)
        for key in keys:
            more[key] = [t.extras.get(key, np.nan) for t in ctx.trials]
        return more

    # ------------------------------------------------------------------
    # refit
    # ------------------------------------------------------------------
    def _refit_best(
        self,
        base_estimator: Any,
        X: Any,
        y: Any,
        fit_params: dict,
        y_stratify: np.ndarray | None,
        rs: np.random.RandomState,
        callbacks: SearchCallbacks,
    ) -> None:
        self.best_estimator_ = clone(base_estimator).set_params(
            **clone(self.best_params_, safe=False)
        )
        fraction = self._refit_fraction()
        if fraction < 1.0:
            n = _num_samples(X)
            order = stratified_order(
                np.arange(n), y_stratify, np.random.default_rng(rs.randint(2**31 - 1))
            )
            min_rows = 1 if y_stratify is None else len(np.unique(y_stratify))
            idx = np.sort(order[: subset_size(fraction, n, min_rows)])
            # the rows best_estimator_ saw (a precomputed kernel at predict
            # time needs its columns for these rows)
            self.refit_indices_ = idx
            fit_params = _check_method_params(X, params=fit_params, indices=idx)
            # rows, and for a pairwise estimator (a precomputed kernel or
            # distance matrix) the same columns, as the trials' fits subset
            X, y = _safe_split(self.best_estimator_, X, y, idx)
            if _is_pairwise(self.best_estimator_):
                warnings.warn(
                    f"best_estimator_ is a pairwise estimator refitted on "
                    f"{len(idx)} of the {n} rows (a fraction of {fraction:.3g}); "
                    "at predict time pass the kernel (or distances) against "
                    "those rows only, refit_indices_.",
                    UserWarning,
                    stacklevel=4,
                )
        refit_start_time = time.time()
        with callbacks.refit(self.best_estimator_):
            if y is not None:
                self.best_estimator_.fit(X, y, **fit_params)
            else:
                self.best_estimator_.fit(X, **fit_params)
        self.refit_time_ = time.time() - refit_start_time
        if hasattr(self.best_estimator_, "feature_names_in_"):
            self.feature_names_in_ = self.best_estimator_.feature_names_in_


def _is_pairwise(estimator: Any) -> bool:
    try:
        return bool(get_tags(estimator).input_tags.pairwise)
    except Exception:  # an estimator without scikit-learn's tags
        return False


def _num_features_or_none(X: Any) -> int | None:
    try:
        return int(_num_features(X))
    except TypeError:
        return None


def _as_indices(split: Any, X: Any) -> np.ndarray:
    """Row indices of one side of a CV split, which may be a boolean mask.

    scikit-learn's searches accept ``(mask_train, mask_test)`` pairs; read as
    indices, a mask would put rows 0 and 1 in every fold.
    """
    split = np.asarray(split)
    if split.dtype != bool:
        return split
    if split.shape != (_num_samples(X),):
        raise ValueError(
            f"cv: a boolean mask of shape {split.shape} does not match the "
            f"{_num_samples(X)} samples of X."
        )
    return np.flatnonzero(split)
