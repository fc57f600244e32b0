"""The shared evaluation path: nested, stratified, reproducible subsets."""

import numpy as np
import pytest

from skbayes_search._evaluate import stratified_order, subset_size


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_prefix_is_stratified(seed):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], [600, 300, 100])
    train = rng.permutation(len(y))[:800]
    order = stratified_order(train, y, np.random.default_rng(seed))
    assert sorted(order) == sorted(train)
    shares = np.bincount(y[train]) / len(train)
    for m in (50, 100, 400, 800):
        counts = np.bincount(y[order[:m]], minlength=3)
        # proportional up to a couple of rows (jitter within slots)
        assert np.all(np.abs(counts - shares * m) <= 2.0)


def test_first_rows_cover_every_class():
    y = np.array([0] * 500 + [1] * 3 + [2] * 2)
    order = stratified_order(np.arange(len(y)), y, np.random.default_rng(0))
    assert set(y[order[:3]]) == {0, 1, 2}


def test_orders_are_reproducible_and_nested():
    y = np.arange(300) % 4
    a = stratified_order(np.arange(300), y, np.random.default_rng(7))
    b = stratified_order(np.arange(300), y, np.random.default_rng(7))
    c = stratified_order(np.arange(300), y, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    small = set(a[: subset_size(0.1, 300)])
    large = set(a[: subset_size(0.5, 300)])
    assert small < large


def test_regression_is_a_plain_permutation():
    order = stratified_order(np.arange(10, 60), None, np.random.default_rng(0))
    assert sorted(order) == list(range(10, 60))


def test_subset_size_rounds_and_clips():
    assert subset_size(0.25, 100) == 25
    assert subset_size(1e-6, 100, min_rows=3) == 3
    assert subset_size(1.0, 77) == 77


def _evaluator(subsample_validation, seed=0):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    from skbayes_search._evaluate import TrialEvaluator

    rng = np.random.default_rng(5)
    y = np.repeat([0, 1, 2], [300, 200, 100])
    X = rng.normal(size=(len(y), 2))
    splits = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    return TrialEvaluator(
        base_estimator=LogisticRegression(),
        X=X,
        y=y,
        splits=splits,
        y_stratify=y,
        rng=np.random.default_rng(seed),
        fit_and_score_kwargs={},
        subsample_validation=subsample_validation,
    ), y


def test_validation_rows_follow_the_fraction_only_when_asked():
    full, y = _evaluator(False)
    part, _ = _evaluator(True)
    for fraction in (0.1, 0.3):
        for (tr_f, te_f), (tr_p, te_p), big in zip(
            full.subset_splits(fraction),
            part.subset_splits(fraction),
            part.subset_splits(3 * fraction),
        ):
            # the training subsets are those of a search scoring every row
            np.testing.assert_array_equal(tr_f, tr_p)
            assert len(te_f) == 200
            assert len(te_p) == subset_size(fraction, 200)
            # nested, inside the split's validation rows, stratified
            assert set(te_p) < set(big[1]) < set(te_f)
            counts = np.bincount(y[te_p], minlength=3)
            assert np.all(np.abs(counts - np.array([3, 2, 1]) / 6 * len(te_p)) <= 2)
    for (_, te_f), (_, te_p) in zip(full.subset_splits(1.0), part.subset_splits(1.0)):
        np.testing.assert_array_equal(te_f, te_p)
