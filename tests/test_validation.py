"""Checks shared by strategies."""

import warnings

import numpy as np
import pytest

from skbayes_search._validation import check_fractions, warn_if_space_small


@pytest.mark.parametrize(
    "value",
    [[], [[0.5]], [0.0], [1.5], [np.nan], [True], ["a"], "0.5", None],
)
def test_check_fractions_names_the_parameter(value):
    with pytest.raises(ValueError, match="my_fractions"):
        check_fractions(value, "my_fractions")


def test_check_fractions_orders_and_ends():
    np.testing.assert_array_equal(check_fractions((0.5, 0.25), "f"), [0.5, 0.25])
    with pytest.raises(ValueError, match="strictly increasing"):
        check_fractions((0.5, 0.25), "stages", increasing=True)
    with pytest.raises(ValueError, match=r"must be 1\.0"):
        check_fractions((0.25, 0.5), "stages", last_is_one=True)


def test_small_space_warning_only_when_smaller():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_space_small(4, 4, "it stops.")
        warn_if_space_small(float("inf"), 10, "it stops.")
    with pytest.warns(
        UserWarning, match=r"only 3 distinct .* n_iter=\(2, 5\); it stops"
    ):
        warn_if_space_small(3, (2, 5), "it stops.")
