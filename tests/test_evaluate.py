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
