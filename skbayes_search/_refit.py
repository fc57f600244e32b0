"""The final refit of the best trial's settings: ``best_estimator_``."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import _safe_split
from sklearn.utils.validation import _check_method_params, _num_samples

from ._evaluate import stratified_order, subset_size
from ._run_setup import SearchRun


def refit_best(search: Any, run: SearchRun) -> None:
    """Fit ``search.best_params_`` on the share of the rows the strategy asks for.

    Sets ``best_estimator_``, ``refit_time_``, ``feature_names_in_`` when the
    estimator has them, and ``refit_indices_`` when the share is below one.
    """
    X, y = run.X, run.y
    fit_params = run.routed_params.estimator.fit
    search.best_estimator_ = clone(run.base_estimator).set_params(
        **clone(search.best_params_, safe=False)
    )
    fraction = search._refit_fraction()
    if fraction < 1.0:
        n = _num_samples(X)
        order = stratified_order(
            np.arange(n),
            run.y_stratify,
            np.random.default_rng(run.rs.randint(2**31 - 1)),
        )
        min_rows = 1 if run.y_stratify is None else len(np.unique(run.y_stratify))
        idx = np.sort(order[: subset_size(fraction, n, min_rows)])
        # the rows best_estimator_ saw (a precomputed kernel at predict time
        # needs its columns for these rows)
        search.refit_indices_ = idx
        fit_params = _check_method_params(X, params=fit_params, indices=idx)
        # rows, and for a pairwise estimator (a precomputed kernel or distance
        # matrix) the same columns, as the trials' fits subset
        X, y = _safe_split(search.best_estimator_, X, y, idx)
        if _is_pairwise(search.best_estimator_):
            warnings.warn(
                f"best_estimator_ is a pairwise estimator refitted on "
                f"{len(idx)} of the {n} rows (a fraction of {fraction:.3g}); "
                "at predict time pass the kernel (or distances) against "
                "those rows only, refit_indices_.",
                UserWarning,
                # user code -> fit -> _fit -> _assemble -> refit_best
                stacklevel=4,
            )
    refit_start_time = time.time()
    with run.callbacks.refit(search.best_estimator_):
        if y is not None:
            search.best_estimator_.fit(X, y, **fit_params)
        else:
            search.best_estimator_.fit(X, **fit_params)
    search.refit_time_ = time.time() - refit_start_time
    if hasattr(search.best_estimator_, "feature_names_in_"):
        search.feature_names_in_ = search.best_estimator_.feature_names_in_


def _is_pairwise(estimator: Any) -> bool:
    try:
        return bool(get_tags(estimator).input_tags.pairwise)
    except Exception:  # an estimator without scikit-learn's tags
        return False
