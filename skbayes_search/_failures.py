"""Failed fits: the warning that counts them, the error when all fail, their
place in the ranks, and the warning when the answer rests on a subset for
want of a full-data fit."""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

import numpy as np
from scipy.stats import rankdata
from sklearn.exceptions import FitFailedWarning

from ._trial import SearchContext

# After this many trials on all rows (or the whole budget, if smaller) that
# all failed, the estimator is taken to be misconfigured and the search stops,
# as scikit-learn's searches do when every fit fails. Failures on subsets do
# not count: they may be the subset's (too few rows of a class for an inner
# cross-validation, a category the subset misses), and the subset searches
# move up to larger subsets when they are.
FAIL_FAST_TRIALS = 5

# Why an answer of a subset search rests on a subset.
FINAL_NOT_STARTED = (
    "its evaluation on all data was predicted not to finish within max_time "
    "and the final trial's grace period, so it was not started"
)
NO_FULL_SUCCESS = "no trial on all data succeeded"
FINAL_STOPPED = (
    "its evaluation on all data ran past max_time and the final trial's grace "
    "period and was stopped"
)


def raise_if_all_failed(ctx: SearchContext, at_end: bool = False) -> None:
    """Stop a search whose every trial so far failed.

    Raised once ``FAIL_FAST_TRIALS`` trials on all rows (or the whole
    budget) have failed in every fit, as has every trial on a subset, or at
    the end of the search (``at_end``). The message holds the
    fits' errors, each with its count, as scikit-learn's searches report them
    (``_warn_or_raise_about_fit_failures``): the reason is in the error, not
    behind a rerun with ``error_score='raise'``.
    """
    n = len(ctx.trials)
    if n == 0 or not all(_every_fit_failed(t, ctx.n_splits) for t in ctx.trials):
        # as in scikit-learn, some fits that succeeded mean the estimator can
        # work: the search goes on (and warns about the failures at the end)
        return
    n_full = sum(t.fraction >= 1.0 for t in ctx.trials)
    if at_end or n >= ctx.budget or n_full >= min(ctx.budget, FAIL_FAST_TRIALS):
        errors = Counter(e for t in ctx.trials for e in getattr(t, "fit_errors", ()))
        details = (
            f"\n\nBelow are more details about the failures:\n{_summary(errors)}"
            if errors
            else ""
        )
        raise ValueError(
            f"All the {n} trials failed ({n * ctx.n_splits} fits). It is very "
            "likely that your model is misconfigured. You can try to debug "
            f"the error by setting error_score='raise'.{details}"
        )


def _every_fit_failed(trial: Any, n_splits: int) -> bool:
    """Whether all of a trial's fits failed (a trial read back from a store
    keeps no errors: failed, it counts as wholly failed)."""
    errors = getattr(trial, "fit_errors", ())
    return trial.failed and (not errors or len(errors) >= n_splits)


def _summary(errors: Counter) -> str:
    """scikit-learn's summary of fit errors: each error once, with its count."""
    return "\n".join(
        f"{'-' * 80}\n{count} fits failed with the following error:\n{error}"
        for error, count in errors.items()
    )


def warn_about_failures(
    ctx: SearchContext, all_out: list[dict], error_score: Any
) -> None:
    """One FitFailedWarning counting the failed trials and their errors."""
    failed = [t for t in ctx.trials if t.failed]
    nan = [t for t in ctx.trials if not t.failed and not np.isfinite(t.score)]
    n_failed, n_nan = len(failed), len(nan)
    if n_nan:
        warnings.warn(
            f"{n_nan} of {len(ctx.trials)} trials fitted but scored NaN or inf"
            f"{_likely_causes(nan)}; the surrogate saw them as the worst observed "
            "score. Check the scoring for folds where it is undefined (e.g. "
            "one class only).",
            UserWarning,
            stacklevel=4,
        )
    if not n_failed:
        return
    errors = Counter(
        out["fit_error"] for out in all_out if out["fit_error"] is not None
    )
    summary = _summary(errors)
    warnings.warn(
        f"{n_failed} of {len(ctx.trials)} trials failed{_likely_causes(failed)}; "
        "their scores are set "
        f"to error_score={error_score!r} and the surrogate saw them as "
        "the worst observed score. If these failures are not expected, "
        f"you can try to debug them by setting error_score='raise'.\n{summary}",
        FitFailedWarning,
        # user code -> fit -> _fit -> _assemble -> here
        stacklevel=4,
    )


def _likely_causes(trials: list) -> str:
    """What the failure warnings say of the trials' likely causes: how many
    were stopped at a deadline, and how many of the others ran on a subset."""
    # the search's own deadlines record "TimeoutError: <reason>", where a
    # fit's exception is recorded as its traceback
    stopped = [
        bool(t.fit_errors) and all(e.startswith("TimeoutError: ") for e in t.fit_errors)
        for t in trials
    ]
    n = sum(t.fraction < 1.0 for t, s in zip(trials, stopped) if not s)
    parts = []
    if any(stopped):
        parts.append(f"{sum(stopped)} stopped at trial_timeout or max_time")
    if n:
        whom = "of the others" if any(stopped) else "of them"
        parts.append(
            f"{n} {whom} on subsets of the rows, where a size too small for the "
            "model can be the cause"
        )
    return f" ({'; '.join(parts)})" if parts else ""


def rank_failures_last(results: dict, failed: np.ndarray) -> dict:
    """Rank failed trials with the worst, in place; return the results the
    answer is chosen from, where their mean test scores read NaN.

    A numeric ``error_score`` is recorded as the failed fits' score, and
    scikit-learn ranks it like any other: with ``error_score=0`` and a score
    that is negative when it succeeds (``"neg_mean_squared_error"``) a
    failed trial ranks first and would be the answer. Its recorded scores
    stay as ``error_score`` set them; its rank ties with the worst, as
    scikit-learn ranks a NaN score.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._failures import rank_failures_last
    >>> results = {"mean_test_score": np.array([-3.0, 0.0, -2.0]),
    ...            "rank_test_score": np.array([3, 1, 2], dtype=np.int32)}
    >>> chosen_from = rank_failures_last(results, np.array([False, True, False]))
    >>> results["rank_test_score"], chosen_from["mean_test_score"]
    (array([2, 3, 1], dtype=int32), array([-3., nan, -2.]))
    """
    failed = np.asarray(failed, dtype=bool)
    if not failed.any():
        return results
    view = dict(results)
    for key in [k for k in results if k.startswith("rank_test_")]:
        mean_key = "mean_test_" + key.removeprefix("rank_test_")
        means = np.array(results[mean_key], float)
        means[failed] = np.nan
        view[mean_key] = means
        if np.isnan(means).all():
            ranks = np.ones(len(means), dtype=np.int32)
        else:
            worst = np.nanmin(means) - 1
            ranks = rankdata(-np.nan_to_num(means, nan=worst), method="min")
        results[key] = np.asarray(ranks, dtype=np.int32)
        view[key] = results[key]
    return view


def warn_answer_on_subset(search: str, n_rows: int, why: str) -> None:
    """The warning that ``best_`` is measured on ``n_rows`` rows, not on all
    data, and ``why`` (a reason such as :data:`FINAL_NOT_STARTED`)."""
    warnings.warn(
        f"{search}: best_ is measured on {n_rows} rows, not on all data: {why}.",
        UserWarning,
        # user code -> fit's _fit_context wrapper -> fit -> _fit -> _assemble
        # -> _select_best -> here
        stacklevel=7,
    )
