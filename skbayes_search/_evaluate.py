"""The one trial-evaluation path shared by every strategy.

A trial is ``(params, fraction)``. For every CV split the estimator is fitted
on a subset of ``round(fraction * n_train_split)`` of that split's training rows
and scored on the split's *full* validation rows, or, when the search asks for
it (``subsample_validation``), on at most twice as many validation rows as it
was fitted on, and at least :data:`MIN_VALIDATION_ROWS` (all of them where the
split has fewer).
Subsets are nested (a larger fraction contains every row of a smaller one),
reproducible (one fixed order per split, seeded once per search) and
stratified for classifiers (every prefix holds each class in proportion, and
any prefix at least as long as the number of classes holds every class at
least once).

Each fold is one job for the search's workers (:mod:`._workers`); passing
index subsets lets scikit-learn slice ``X``, ``y`` and sample-aligned fit
parameters such as ``sample_weight`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.model_selection._validation import _fit_and_score

from ._callbacks import SearchCallbacks


def stratified_order(
    train: np.ndarray, y: np.ndarray | None, rng: np.random.Generator
) -> np.ndarray:
    """Order ``train`` so that every prefix is a stratified subsample.

    Each class is shuffled, its members get evenly spaced keys in [0, 1)
    jittered within their slot, and rows are sorted by key: any prefix then
    holds each class in proportion (up to one row). The first member of
    every class is moved to the front so a prefix of ``n_classes`` rows
    already covers every class.

    Parameters
    ----------
    train : ndarray of int
        Training indices of one split.
    y : ndarray or None
        Targets of the whole data set; ``None`` for a plain permutation.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    ndarray of int
        A permutation of ``train``.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._evaluate import stratified_order
    >>> y = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1])
    >>> order = stratified_order(np.arange(9), y, np.random.default_rng(0))
    >>> sorted(y[order[:2]].tolist())  # a prefix of n_classes rows has every class
    [0, 1]
    >>> int(y[order[:6]].sum())  # and any prefix the classes in proportion
    2
    """
    train = np.asarray(train)
    if y is None:
        return rng.permutation(train)
    _, labels = np.unique(np.asarray(y)[train], return_inverse=True)
    keys = np.empty(len(train))
    firsts = []
    for c in range(labels.max() + 1 if len(labels) else 0):
        members = np.flatnonzero(labels == c)
        members = rng.permutation(members)
        n_c = len(members)
        keys[members] = (np.arange(n_c) + rng.random(n_c)) / n_c
        firsts.append(members[0])
    # Leading keys below 0 put one member of every class first.
    keys[firsts] = -1.0 + np.arange(len(firsts)) / max(len(firsts), 1)
    return train[np.argsort(keys, kind="stable")]


#: With ``subsample_validation``, a trial is scored on at most this many
#: validation rows per training row it was fitted on ...
VALIDATION_ROWS_PER_TRAINING_ROW = 2
#: ... and on at least this many (all where a split has fewer).
MIN_VALIDATION_ROWS = 500


def validation_size(n_train: int, n_validation: int) -> int:
    """Validation rows a trial fitted on ``n_train`` rows is scored on when
    validation rows are subsampled.

    On small subsets scoring can cost more than fitting: a kernel machine
    predicts each validation row against up to all its training rows, so an
    SVC fitted on 260 rows spent most of its trial scoring 3,000 validation
    rows per split. Capping the rows at twice the training rows cuts that
    cost on the smallest rungs; a trial on at least half as many training
    rows as a split validates on keeps every row. The floor keeps the
    standard error of an accuracy near 50 % at about 2 pp per split.

    Examples
    --------
    >>> from skbayes_search._evaluate import validation_size
    >>> validation_size(260, 3000), validation_size(2340, 3000)
    (520, 3000)
    >>> validation_size(50, 300)  # the floor, capped by the split's rows
    300
    """
    wanted = max(MIN_VALIDATION_ROWS, VALIDATION_ROWS_PER_TRAINING_ROW * n_train)
    return int(min(n_validation, wanted))


def subset_size(fraction: float, n_rows: int, min_rows: int = 1) -> int:
    """Rows used for a fraction of ``n_rows``: rounded, at least ``min_rows``.

    Examples
    --------
    >>> from skbayes_search._evaluate import subset_size
    >>> subset_size(0.3, 10), subset_size(0.01, 10, min_rows=2), subset_size(1.0, 10)
    (3, 2, 10)
    """
    return int(min(n_rows, max(min_rows, round(fraction * n_rows))))


class TrialEvaluator:
    """Evaluate batches of trials with fixed CV splits and nested subsets.

    Parameters
    ----------
    base_estimator : estimator
        Unfitted estimator cloned for every fit.
    X, y : indexable
        Search data.
    splits : list of (train, test) index arrays
        Fixed CV splits, computed once per search.
    y_stratify : ndarray or None
        Labels to stratify subsets by (``None`` for regressors).
    rng : numpy.random.Generator
        Seeds the per-split subset orders.
    fit_and_score_kwargs : dict
        Scorer, routed fit/score params, ``error_score`` and so on, passed to
        scikit-learn's ``_fit_and_score``.
    callbacks : SearchCallbacks, optional
        scikit-learn fit callbacks of the search; each fit becomes one of
        their tasks.
    subsample_validation : bool, default=False
        Score a trial on :func:`validation_size` of each split's validation
        rows (a nested, stratified prefix) instead of all of them.
    """

    def __init__(
        self,
        *,
        base_estimator: Any,
        X: Any,
        y: Any,
        splits: Sequence[tuple[np.ndarray, np.ndarray]],
        y_stratify: np.ndarray | None,
        rng: np.random.Generator,
        fit_and_score_kwargs: dict,
        callbacks: SearchCallbacks | None = None,
        subsample_validation: bool = False,
    ) -> None:
        self.base_estimator = base_estimator
        self.X = X
        self.y = y
        self.splits = [(np.asarray(tr), np.asarray(te)) for tr, te in splits]
        self.orders = [stratified_order(tr, y_stratify, rng) for tr, _ in self.splits]
        # drawn after the training orders, which stay those of a search that
        # scores on every validation row
        self.test_orders = (
            [stratified_order(te, y_stratify, rng) for _, te in self.splits]
            if subsample_validation
            else None
        )
        self.min_rows = 1
        if y_stratify is not None and len(y_stratify):
            self.min_rows = len(np.unique(np.asarray(y_stratify)))
        self.kwargs = fit_and_score_kwargs
        self.callbacks = callbacks

    @property
    def n_train(self) -> int:
        """Training rows of the smallest split."""
        return min(len(tr) for tr, _ in self.splits)

    def n_resources(self, fraction: float) -> int:
        """Training rows one fit of ``fraction`` sees (smallest split)."""
        return subset_size(fraction, self.n_train, self.min_rows)

    def subset_splits(self, fraction: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(train_subset, test_subset)`` pairs for one fraction, in split
        order; the test rows are all of the split's unless
        ``subsample_validation``."""
        out = []
        for k, (order, (_, test)) in enumerate(zip(self.orders, self.splits)):
            m = subset_size(fraction, len(order), self.min_rows)
            if self.test_orders is not None:
                test_order = self.test_orders[k]
                n = max(validation_size(m, len(test_order)), self.min_rows)
                test = np.sort(test_order[:n])
            out.append((np.sort(order[:m]), test))
        return out

    def fold_jobs(
        self,
        params: dict,
        fraction: float,
        callback_kwargs: list[dict],
        candidate_progress: tuple[int, int] | None = None,
    ) -> list[tuple[Callable, dict]]:
        """One ``(function, kwargs)`` job per split: fit ``params`` on the
        split's subset of ``fraction`` and score it on the split's test rows.

        ``callback_kwargs`` holds one dict of scikit-learn callback arguments
        per split (empty dicts without callbacks); ``candidate_progress``
        ``(trial, budget)`` goes to scikit-learn's verbose messages.
        """
        n_splits = len(self.splits)
        return [
            (
                _clone_fit_and_score,
                dict(
                    estimator=self.base_estimator,
                    X=self.X,
                    y=self.y,
                    train=train,
                    test=test,
                    parameters=params,
                    split_progress=(k, n_splits),
                    candidate_progress=candidate_progress,
                    **self.kwargs,
                    **callback_kwargs[k],
                ),
            )
            for k, (train, test) in enumerate(self.subset_splits(fraction))
        ]


def _clone_fit_and_score(estimator: Any, *, error_score: Any, **kwargs: Any) -> dict:
    """scikit-learn's ``_fit_and_score`` on a clone made where the fit runs.

    Cloning in the search's own process costs it a fraction of a millisecond
    per fold, time that is taken from the workers when fits are that cheap
    and the two share the cores.

    ``error_score`` is the score of a failed *fit*. A scorer that raises
    after a fit succeeded scores NaN instead: scikit-learn would record
    ``error_score`` there with nothing to tell it from a success, and a
    numeric ``error_score`` above every real score (``0`` with
    ``"neg_mean_squared_error"``) would then lead the search and be the
    answer.
    """
    if error_score == "raise":
        return _fit_and_score(estimator=clone(estimator), error_score="raise", **kwargs)
    out = _fit_and_score(estimator=clone(estimator), error_score=np.nan, **kwargs)
    if out["fit_error"] is not None:
        for key in ("test_scores", "train_scores"):
            if key in out:
                scores = out[key]
                out[key] = (
                    dict.fromkeys(scores, error_score)
                    if isinstance(scores, dict)
                    else error_score
                )
    return out
