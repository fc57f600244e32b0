import math

import numpy as np
import pytest

from skbayes_search._fidelity import (
    AGREEMENT_THRESHOLD,
    MIN_PAIRS,
    Agreement,
    agreement_between,
    agreement_by_level,
    find_tie,
    rank_agreement,
    size_level,
    smallest_trusted_level,
)


def test_rank_agreement_drops_failed_pairs_and_needs_three():
    assert rank_agreement([0.1, np.nan, 0.3, 0.4], [0.2, 0.9, 0.3, 0.5]) == 1.0
    assert math.isnan(rank_agreement([0.1, 0.2], [0.2, 0.3]))
    assert math.isnan(rank_agreement([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]))


def test_crossing_learning_curves_mislead_and_parallel_ones_do_not():
    rng = np.random.default_rng(0)
    full = rng.uniform(0.6, 0.9, size=8)
    keys = list(range(8)) * 3
    levels = [0] * 8 + [1] * 8 + [2] * 8
    # level 0 ranks them backwards; levels 1 and 2 agree (with some noise)
    scores = np.concatenate([1.5 - full, full + 0.01 * rng.standard_normal(8), full])
    agreements = agreement_by_level(keys, levels, scores)
    assert agreements[0].misleads and agreements[0].tau < -0.5
    assert agreements[1].judged and not agreements[1].misleads
    assert smallest_trusted_level(agreements) == 1


def test_pairs_use_the_next_larger_level_each_configuration_reached():
    # "a".."f" at levels 0 and 2 only: paired across the gap
    keys = list("abcdef") * 2
    levels = [0] * 6 + [2] * 6
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6] * 2
    agreements = agreement_by_level(keys, levels, scores)
    assert set(agreements) == {0}
    assert agreements[0].n_pairs == 6 and agreements[0].tau == pytest.approx(1.0)


def test_too_few_pairs_are_not_judged():
    a = Agreement(0, -1.0, MIN_PAIRS - 1)
    assert not a.judged and not a.misleads
    assert smallest_trusted_level({0: a}, lowest=0) == 0
    assert Agreement(0, AGREEMENT_THRESHOLD, MIN_PAIRS).misleads is False


@pytest.mark.parametrize("lowest", [0, 2])
def test_smallest_trusted_level_is_above_the_largest_misleading_one(lowest):
    agreements = {
        0: Agreement(0, -0.5, 9),
        1: Agreement(1, 0.8, 9),
        2: Agreement(2, 0.0, 6),
        3: Agreement(3, 0.9, 6),
    }
    assert smallest_trusted_level(agreements, lowest) == 3
    assert smallest_trusted_level({}, lowest) == lowest


def test_agreement_between_pairs_only_the_two_named_levels():
    # "a".."f" ranked alike at levels 0 and 1; at level 0 and 3 reversed;
    # agreement_by_level would mix the level-1 and level-3 scores into the
    # pairs of level 0, agreement_between keeps them apart
    keys = list("abcdef") * 3
    levels = [0] * 6 + [1] * 6 + [3] * 6
    low = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    scores = low + [v + 0.05 for v in low] + [0.9 - v for v in low]
    near = agreement_between(keys, levels, scores, 0, 1)
    far = agreement_between(keys, levels, scores, 0, 3)
    assert near.level == far.level == 0
    assert near.tau == pytest.approx(1.0) and not near.misleads
    assert far.tau == pytest.approx(-1.0) and far.misleads
    # a configuration missing at either level is left out; failures too
    scores[17] = np.nan
    assert agreement_between(keys, levels, scores, 0, 3).n_pairs == 5
    assert agreement_between(keys, levels, scores, 1, 2).n_pairs == 0
    assert math.isnan(agreement_between(keys, levels, scores, 1, 2).tau)


def test_size_level_floors_on_the_ladder_and_tops_at_all_rows():
    assert size_level(10, 10, 4, 1000) == 0
    assert size_level(39, 10, 4, 1000) == 0
    assert size_level(40, 10, 4, 1000) == 1
    assert size_level(999, 10, 4, 1000) == 3  # below all rows: never the top
    assert size_level(1000, 10, 4, 1000) == 4  # ceil(log4(100)) = 4
    assert size_level(5, 10, 4, 1000) == 0  # below the floor
    # a ladder that ends exactly on all rows
    assert size_level(640, 10, 4, 640) == 3
    assert size_level(160, 10, 4, 640) == 2


# ----------------------------------------------------------------------
# find_tie: sizes whose scores tie too often to choose from
# ----------------------------------------------------------------------
def test_find_tie_needs_min_pairs_scores():
    tied = [0.6583] * (MIN_PAIRS - 1)
    assert find_tie(tied, keep=1 / 3) is None
    assert find_tie([*tied, 0.6583], keep=1 / 3) is not None
    # failed fits do not count towards the minimum
    assert find_tie([*tied, np.nan], keep=1 / 3) is None


def test_find_tie_counts_near_ties_against_the_kept_share():
    plateau = [0.6583, 0.6584, 0.6583, 0.55, 0.52, 0.60]
    # three of six within 1 % of the range below the best: more than a third
    assert find_tie(plateau, keep=1 / 3).at_best
    # keeping half, three tied is not too many
    assert find_tie(plateau, keep=1 / 2) is None
    # a clear best and a spread below it choose fine
    assert find_tie([0.80, 0.75, 0.70, 0.66, 0.66, 0.66], keep=1 / 3) is None
    # two good settings close together among chance scores are no plateau
    assert find_tie([0.168, 0.532, 0.673, 0.094, 0.678], keep=1 / 3) is None


def test_find_tie_when_most_scores_share_a_plateau_below_the_best():
    # HistGradientBoosting on 180 rows of adult: a minimum leaf above half
    # the rows fits no split, and those settings all score the majority
    # class; the few that split rank above them for the leaf size alone
    floor = [0.7607, 0.7607, 0.7608, 0.7607]
    tie = find_tie([*floor, 0.7869, 0.8012, 0.8101], keep=1 / 3)
    assert not tie.at_best
    assert (tie.low, tie.high, tie.best) == (0.7607, 0.7608, 0.8101)
    # half on the floor is not most
    assert find_tie([*floor[:3], 0.7869, 0.8012, 0.8101], keep=1 / 3) is None
    # the plateau need not be the lowest score: failed-looking outliers below
    assert find_tie([0.05, *floor, 0.80, 0.81], keep=1 / 3) is not None
    # scores close together but spread over the range are no plateau
    spread = np.linspace(0.70, 0.80, 11)
    assert find_tie(spread, keep=1 / 3) is None
