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
    # 3-fold: 2,000 training and 1,000 validation rows per split
    y = np.repeat([0, 1, 2], [1500, 1000, 500])
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


def test_validation_size_caps_at_twice_the_training_rows_with_a_floor():
    from skbayes_search._evaluate import validation_size

    assert validation_size(100, 1000) == 500
    assert validation_size(400, 1000) == 800
    assert validation_size(600, 1000) == 1000
    assert validation_size(10, 300) == 300


def test_validation_rows_are_subsampled_only_when_asked():
    full, y = _evaluator(False)
    part, _ = _evaluator(True)
    previous = None
    # 100, 400 and 600 training rows per split: 500, 800 and all 1,000
    for fraction, expected in ((0.05, 500), (0.2, 800), (0.3, 1000)):
        sizes = []
        for (tr_f, te_f), (tr_p, te_p) in zip(
            full.subset_splits(fraction), part.subset_splits(fraction)
        ):
            # the training subsets are those of a search scoring every row
            np.testing.assert_array_equal(tr_f, tr_p)
            assert len(te_f) == 1000 and set(te_p) <= set(te_f)
            sizes.append(len(te_p))
            counts = np.bincount(y[te_p], minlength=3)
            assert np.all(np.abs(counts - np.array([3, 2, 1]) / 6 * len(te_p)) <= 2)
        assert sizes == [expected] * 3
        current = [set(te) for _, te in part.subset_splits(fraction)]
        if previous is not None:
            # nested: a larger trial's validation rows hold a smaller one's
            assert all(a < b for a, b in zip(previous, current))
        previous = current
    for (_, te_f), (_, te_p) in zip(full.subset_splits(1.0), part.subset_splits(1.0)):
        np.testing.assert_array_equal(te_f, te_p)
