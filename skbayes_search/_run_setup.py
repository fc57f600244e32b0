"""What one ``fit`` fixes before any estimator is fitted: the scorers, the CV
splits, the seeds, the search context and the store's journal.

Everything here validates; nothing fits. A bad ``cv``, a store made from other
data or a strategy setting the data cannot support raises from here, so the
user hears of it before the first trial costs anything.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import clone, is_classifier
from sklearn.model_selection import check_cv
from sklearn.utils import check_random_state, indexable
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import (
    _check_method_params,
    _num_features,
    _num_samples,
)

from ._callbacks import SearchCallbacks
from ._journal import SearchJournal, as_store
from ._trial import SearchContext
from .space import SearchSpace


@dataclass
class SearchRun:
    """What one ``fit`` prepares and its phases (resume, search, assembly) share."""

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


def prepare_run(search: Any, X: Any, y: Any, params: dict) -> SearchRun:
    """Validate everything and fix the splits for ``search.fit(X, y, **params)``.

    Sets ``search.n_splits_`` and, with a store, ``search.run_name_``.
    """
    start = time.perf_counter()
    scorers, refit_metric = search._get_scorers()
    X, y = indexable(X, y)
    params = _check_method_params(X, params=params)
    routed_params = search._get_routed_params_for_fit(params)

    space = SearchSpace(
        search.search_spaces,
        estimator_params=set(search.estimator.get_params(deep=True)),
    )
    cv = check_cv(search.cv, y, classifier=is_classifier(search.estimator))
    split_params = routed_params.splitter.split
    search.n_splits_ = cv.get_n_splits(X, y, **split_params)
    splits = fixed_splits(search.cv, cv, X, y, split_params, search.n_splits_)

    rs = check_random_state(search.random_state)
    seed_subsets, seed_search = (int(s) for s in rs.randint(2**31 - 1, size=2))
    y_stratify = None
    n_classes = None
    if (
        is_classifier(search.estimator)
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
        n_splits=search.n_splits_,
        budget=search._total_budget(),
        max_time=search.max_time,
        n_jobs_effective=effective_n_jobs(search.n_jobs),
        start_time=start,
    )
    search._check_strategy_params(ctx)
    journal = None
    store = as_store(getattr(search, "store", None))
    if store is not None:
        # Opening the run validates the store, refuses to resume a run made
        # from other data, splits, scoring, estimator or space, and takes the
        # run's lease, before any fit.
        journal = SearchJournal(
            store,
            getattr(search, "run_name", None),
            search,
            space,
            meta={
                "n_samples": int(_num_samples(X)),
                "n_features": _num_features_or_none(X),
                "n_classes": n_classes,
                "n_splits": search.n_splits_,
            },
            X=X,
            y=y,
            splits=splits,
            scoring=search.scoring,
            estimator=search.estimator,
            subset_seed=seed_subsets,
        )
        search.run_name_ = journal.run_name
        ctx.journal = journal
        seed_subsets = journal.subset_seed

    sample_weight = params.get("sample_weight")
    callbacks = SearchCallbacks(
        search,
        X,
        y,
        None if sample_weight is None else {"sample_weight": sample_weight},
    )
    return SearchRun(
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
        base_estimator=clone(search.estimator),
        fit_and_score_kwargs=dict(
            scorer=scorers,
            fit_params=routed_params.estimator.fit,
            score_params=routed_params.scorer.score,
            return_train_score=search.return_train_score,
            return_n_test_samples=True,
            return_times=True,
            return_parameters=False,
            error_score=search.error_score,
            verbose=search.verbose,
        ),
    )


def fixed_splits(
    cv_param: Any, cv: Any, X: Any, y: Any, split_params: dict, n_splits: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The CV splits as index arrays, drawn once and checked.

    They are fixed once so that every trial, whatever its fraction, is scored
    on the same validation rows. ``cv_param`` is the user's ``cv`` as given,
    for the messages.
    """
    splits = [
        (_as_indices(train, X), _as_indices(test, X))
        for train, test in cv.split(X, y, **split_params)
    ]
    if len(splits) != n_splits:
        raise ValueError(
            "cv.split and cv.get_n_splits return inconsistent results. "
            f"Expected {n_splits} splits, got {len(splits)}"
        )
    if not splits:
        raise ValueError(
            f"cv gave no (train, test) split, got cv={cv_param!r}; pass an "
            "int, a CV splitter or a non-empty iterable of splits."
        )
    for k, (train, test) in enumerate(splits):
        if not len(train) or not len(test):
            raise ValueError(
                f"cv: split {k} has {len(train)} training and {len(test)} "
                "test rows; every split needs both."
            )
    return splits


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
