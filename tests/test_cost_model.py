"""The cost model behind the time budgets (skbayes_search._cost_model) and
FABOLAS's cost GP (skbayes_search.strategies._fabolas_cost)."""

import numpy as np
import pytest

from skbayes_search._cost_model import (
    FINAL_REACH,
    RESERVE_MAX_SHARE,
    Z95,
    cost_curve,
    full_data_cost,
    own_scaled_cost,
    reserve_seconds,
    scaled_cost,
    slow_cost,
    slow_full_data_cost,
    together_seconds,
    wall_seconds,
)
from skbayes_search.gp import GPSurrogate
from skbayes_search.gp.fabolas_kernels import fabolas_kernels
from skbayes_search.strategies._fabolas_cost import (
    CostModel,
    cost_upper_bound,
    overhead_seconds,
    row_cost,
)


# ----------------------------------------------------------------------
# the cost curve and the final-evaluation reserve
# ----------------------------------------------------------------------
def test_cost_curve_extrapolates_fixed_plus_variable_cost():
    f = np.geomspace(1 / 512, 1 / 8, 12)
    # fixed costs flatten the curve on tiny subsets: one power law through
    # all fractions has a slope far below the variable part's 1.7
    cost = 0.02 + 50.0 * f**1.7
    assert np.polyfit(np.log(f), np.log(cost), 1)[0] < 1.3
    c0, curve = cost_curve(f, cost)
    assert c0 == pytest.approx(cost.min())
    assert full_data_cost(c0, curve, f[-1], cost[-1]) == pytest.approx(50.02, rel=0.1)
    # a log-log slope that keeps growing is read as convex, and extrapolates
    # further than a line through the largest fractions does
    # (given enough fits over a wide enough span to read a curvature from)
    wide = np.geomspace(1 / 1024, 1 / 4, 16)
    bent = 0.02 + 10.0 * wide**1.2 + 40.0 * wide**2.2
    c0, curve = cost_curve(wide, bent)
    assert curve[0] > 0
    top = wide > wide[-1] / 16
    slope = np.polyfit(np.log(wide[top]), np.log(bent[top] - c0), 1)[0]
    line = c0 + (bent[-1] - c0) * wide[-1] ** -slope
    assert line < full_data_cost(c0, curve, wide[-1], bent[-1]) < 50.02
    # fewer fits, or a narrower span, give a line: the design's 10 fits over
    # a factor 8 are too few to tell curvature from scatter
    assert cost_curve(wide[-10:], bent[-10:])[1][0] == 0.0
    # too few, or too narrow a span of, mostly-variable costs: linear
    c0, curve = cost_curve([0.1, 0.12, 0.15], [1.0, 5.0, 20.0])
    assert full_data_cost(c0, curve, 0.1, 2.0) == pytest.approx(1.0 + 1.0 * 10)
    c0, curve = cost_curve(f, np.full(12, 0.3))
    assert full_data_cost(c0, curve, 0.1, 0.3) == pytest.approx(0.3 + 0.3 * 10)
    # read off few fits or a narrow span, growth is taken as at least linear
    c0, curve = cost_curve(f, 0.01 + f**0.5)
    assert full_data_cost(c0, curve, 0.1, 1.0) == pytest.approx(c0 + (1 - c0) * 10)
    # the implied exponent is kept in [0, 3]
    assert full_data_cost(0.0, np.array([0.0, 5.0, 0.0]), 0.1, 1.0) == pytest.approx(
        1000.0
    )
    assert full_data_cost(0.5, np.array([0.0, -1.0, 0.0]), 0.1, 2.0) == 2.0
    assert full_data_cost(0.0, curve, 1.0, 7.0) == 7.0


def test_cost_set_by_the_configuration_is_not_scaled_with_the_rows():
    # HistGradientBoosting-like costs: mostly fixed per configuration (its
    # number of iterations), growing slowly with the rows. Many fits over a
    # wide span show that slow growth, so the costliest configuration's fit
    # on the smallest subset is not scaled 800-fold to all rows.
    rng = np.random.default_rng(0)
    fractions = np.exp(rng.uniform(np.log(1 / 800), np.log(0.7), 60))
    fixed = np.exp(rng.uniform(np.log(0.03), np.log(0.6), 60))
    fractions[0], fixed[0] = 1 / 800, 0.6
    costs = fixed * (1.0 + 0.3 * fractions**0.7)
    truth = 1.3 * fixed[0]
    c0, curve = cost_curve(fractions, costs)
    assert 0.5 * truth < full_data_cost(c0, curve, fractions[0], costs[0]) < 2 * truth
    own = np.arange(60) == 0
    # five splits on two workers: three rounds of one split each
    wall = reserve_seconds(fractions, costs, own, n_splits=5, n_jobs=2)
    assert 0.5 * truth * 3 / 5 < wall < 3 * truth * 3 / 5


def test_reserve_covers_a_slower_configuration_than_the_incumbent():
    # SVC-like costs per split on 18,000 rows: fixed, scoring (linear) and
    # fitting (quadratic) parts, the fit three times slower for every other
    # configuration (large C). The reserve is set aside for a fast incumbent
    # tried on 1/8 of the rows, but the final evaluation may be of a slow one
    # (the incumbent can change after the last proposal): its 60 s fits on
    # five splits and two workers take three rounds.
    def per_split(fractions, slowdown):
        return 0.01 + fractions + 20.0 * fractions**2 * slowdown

    n = 80
    slowdown = np.where(np.arange(n) % 2 == 0, 3.0, 1.0)
    own = np.arange(n) == 1
    truth = 3 * per_split(1.0, 3.0)
    ratios = []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        fractions = np.exp(rng.uniform(np.log(20 / 18_000), np.log(0.7), n))
        fractions[1] = 1 / 8
        costs = 5 * per_split(fractions, slowdown)
        wall = reserve_seconds(fractions, costs, own, n_splits=5, n_jobs=2)
        c0, curve = cost_curve(fractions, costs)
        alone = 1.5 * full_data_cost(c0, curve, 1 / 8, costs[1]) * 3 / 5
        assert alone < truth  # its own fit, scaled, would leave it short
        assert wall > alone
        ratios.append(wall / truth)
        # one cost curve for every configuration: the own fit decides
        same = 5 * per_split(fractions, 1.0)
        c0, curve = cost_curve(fractions, same)
        own_only = 1.5 * full_data_cost(c0, curve, 1 / 8, same[1]) * 3 / 5
        assert reserve_seconds(fractions, same, own, 5, 2) == pytest.approx(own_only)
        assert 0 < slow_full_data_cost(fractions, same, c0, curve) * 3 / 5 < own_only
        # too few fits read the curve for a population bound
        assert slow_full_data_cost(fractions[:5], same[:5], c0, curve) == 0.0
    # a 95 % bound of a two-valued population: about the slow value
    assert np.median(ratios) >= 1.0
    assert 0.8 < min(ratios) and max(ratios) < 3.0


def test_slow_cost_scales_the_larger_fits_to_any_fraction():
    rng = np.random.default_rng(0)
    fractions = np.exp(rng.uniform(np.log(1 / 900), np.log(0.7), 60))
    slowdown = np.where(np.arange(60) % 2 == 0, 3.0, 1.0)
    costs = 5 * (0.01 + fractions + 20.0 * fractions**2 * slowdown)
    c0, curve = cost_curve(fractions, costs)
    to = np.array([1 / 64, 1 / 8, 0.5, 1.0])
    bound = slow_cost(fractions, costs, c0, curve, to)
    assert bound[-1] == pytest.approx(slow_full_data_cost(fractions, costs, c0, curve))
    assert np.all(np.diff(bound) > 0)
    # a slow fit: above what the slow configurations cost there, not far above
    slow = 5 * (0.01 + to + 60.0 * to**2)
    assert np.all(bound[1:] > 0.8 * slow[1:]) and np.all(bound < 3 * slow)


def test_two_clusters_of_fits_give_a_line_not_a_curvature():
    # a cost convex in log-log, seen on tiny subsets and on one much larger
    # size (as FABOLAS's probes leave them): the scatter within the clusters
    # would set the curvature, so the curve is their line
    def cost(f):
        log_f = np.log(f)
        return 0.001 + np.exp(0.1 * log_f**2 + 2.5 * log_f + 4.0)

    f = np.r_[np.full(12, 1 / 512), np.full(12, 1 / 128), np.full(8, 1 / 8)]
    noise = np.random.default_rng(1).uniform(0.8, 1.25, f.size)
    _, curve = cost_curve(f, cost(f) * noise)
    assert curve[0] == 0.0
    # as many fits spread over the span show the curvature
    spread = np.geomspace(1 / 512, 1 / 8, 32)
    _, bent = cost_curve(spread, cost(spread))
    assert bent[0] > 0.0


def test_slow_cost_reads_the_largest_fits_when_there_are_enough():
    # FABOLAS's probes: most fits on tiny subsets, a few configurations on a
    # much larger one. Scaled from the tiny ones, the spread between
    # configurations would be multiplied with the 100-fold extrapolation's
    # error; the bound reads the fits nearest all rows instead.
    rng = np.random.default_rng(0)
    tiny = np.full(30, 0.01)
    large = np.full(6, 0.125)
    f = np.concatenate([tiny, large])
    per_row = np.concatenate([rng.uniform(10.0, 80.0, 30), rng.uniform(30.0, 40.0, 6)])
    costs = 0.01 + f * per_row
    c0, curve = cost_curve(f, costs)
    bound = slow_cost(f, costs, c0, curve, 1.0)[0]
    from_large = slow_cost(large, costs[30:], c0, curve, 1.0)[0]
    assert bound == pytest.approx(from_large)
    # with too few large fits, the larger half of all fits still counts
    few = np.r_[np.full(30, 0.01), 0.125, 0.125]
    assert slow_cost(few, 0.01 + few * 40.0, c0, curve, 1.0)[0] > 0


def test_scaled_cost_broadcasts_and_keeps_same_fraction():
    c0, curve = 0.1, np.array([0.0, 2.0, 0.0])
    out = scaled_cost(c0, curve, np.array([[0.1], [0.2]]), 1.0, np.array([0.1, 0.4]))
    assert out.shape == (2, 2)
    assert out[0, 0] == 1.0  # same fraction: the cost itself
    # variable part 0.9 times (0.4 / 0.1)^2 on top of the fixed 0.1
    assert out[0, 1] == pytest.approx(0.1 + 0.9 * 16.0)
    assert out[1, 1] == pytest.approx(0.1 + 0.9 * 4.0)
    assert full_data_cost(c0, curve, 0.1, 1.0) == pytest.approx(0.1 + 0.9 * 100.0)


def test_wall_seconds_counts_rounds_of_splits():
    assert wall_seconds(10.0, 5, 1) == 10.0
    assert wall_seconds(10.0, 5, 2) == pytest.approx(6.0)  # 3 rounds of 2 s
    assert wall_seconds(10.0, 5, 5) == pytest.approx(2.0)
    assert wall_seconds(10.0, 5, 50) == pytest.approx(2.0)  # idle extra workers
    assert wall_seconds(10.0, 5, 0) == 10.0


def test_together_seconds_shares_the_workers_between_trials():
    # one trial of 5 splits on 2 workers: 3 rounds; two: 10 splits, 5 rounds
    assert together_seconds(3.0, 1, 5, 2) == pytest.approx(3.0)
    assert together_seconds(3.0, 2, 5, 2) == pytest.approx(5.0)
    # enough workers for every split: the trials run side by side
    assert together_seconds(3.0, 2, 3, 8) == pytest.approx(3.0)
    # one worker: the trials' splits run one after another
    assert together_seconds(3.0, 3, 3, 1) == pytest.approx(9.0)


def test_row_cost_is_rows_times_folds_and_never_zero():
    np.testing.assert_array_equal(
        row_cost([0.0001, 0.25, 1.0], n_train=400, n_splits=5), [5.0, 500.0, 2000.0]
    )


def test_reserve_is_zero_without_an_own_trial():
    assert reserve_seconds([0.1, 0.2], [1.0, 2.0], [False, False], 5, 1) == 0.0


def test_overhead_seconds(monkeypatch):
    assert overhead_seconds(0.25, 3.0, started=0.0) == 0.25
    assert overhead_seconds("measured", 3.0, started=0.0) == 3.0
    monkeypatch.setattr("time.perf_counter", lambda: 12.5)
    # the first proposal: the time since it started
    assert overhead_seconds("measured", None, started=10.0) == 2.5


# ----------------------------------------------------------------------
# the cost GP's bound and the CostModel
# ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def cost_gp():
    """A FABOLAS cost GP on costs that grow with the fraction and with x."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.random(30), rng.random(30)])
    fractions = np.exp((1.0 - X[:, 1]) * np.log(1 / 64))
    costs = (0.05 + 20.0 * fractions) * (1.0 + X[:, 0])
    _, kernel = fabolas_kernels(1)
    gp = GPSurrogate(kernel, n_samples=3, n_burn=20, random_state=0)
    return gp.fit(X, np.log(costs)), X, fractions, costs


def test_cost_upper_bound_is_the_mean_of_the_samples_95_bounds(cost_gp):
    gp, X, _, _ = cost_gp
    means, stds = gp.predict(X)
    expected = np.exp(means + Z95 * stds).mean(axis=0)
    np.testing.assert_allclose(cost_upper_bound(gp, X), expected, rtol=1e-12)
    assert np.all(cost_upper_bound(gp, X) > np.exp(means).mean(axis=0))


def test_cost_model_joins_the_gp_bound_and_the_curve(cost_gp):
    gp, X, fractions, costs = cost_gp
    model = CostModel(gp, fractions, costs, n_splits=5, n_jobs=2)
    assert (model.c0, *model.curve) == (
        cost_curve(fractions, costs)[0],
        *cost_curve(fractions, costs)[1],
    )
    np.testing.assert_array_equal(model.upper(X), cost_upper_bound(gp, X))
    slow = slow_cost(fractions, costs, model.c0, model.curve, fractions)
    np.testing.assert_array_equal(
        model.cautious(X, fractions), np.maximum(model.upper(X), slow)
    )
    own = np.arange(30) == 3
    x_full = np.array([[X[3, 0], 1.0]])
    expected = max(
        reserve_seconds(fractions, costs, own, 5, 2),
        wall_seconds(float(cost_upper_bound(gp, x_full)[0]), 5, 2),
    )
    assert model.full_data_seconds(x_full, own) == expected
    assert model.final_reserve(x_full, own, max_time=1e6) == expected
    capped = model.final_reserve(x_full, own, max_time=expected)
    assert capped == RESERVE_MAX_SHARE * expected


@pytest.mark.parametrize("row", [18, 11])
def test_a_final_is_out_of_reach_only_when_both_predictions_say_so(cost_gp, row):
    # row 18 (a fit on 2 % of the rows): its own cost scaled up overshoots
    # (39.6 s against 26.0 s), the GP's mean does not (25.6 s); row 11: the
    # other way round. The smaller one decides.
    gp, X, fractions, costs = cost_gp
    model = CostModel(gp, fractions, costs, n_splits=5, n_jobs=2)
    own = np.arange(30) == row
    x_full = np.array([[X[row, 0], 1.0]])
    scaled = own_scaled_cost(model.c0, model.curve, fractions[own], costs[own], 1.0)
    central = float(cost_upper_bound(gp, x_full, z=0.0)[0])
    assert abs(scaled - central) > 0.2 * min(scaled, central)
    seconds = wall_seconds(min(scaled, central), 5, 2) / FINAL_REACH
    assert model.final_in_reach(x_full, own, seconds)
    assert not model.final_in_reach(x_full, own, 0.99 * seconds)
    # with no trial of its own there is nothing to predict from
    assert model.final_in_reach(x_full, np.zeros(30, dtype=bool), 1e-9)


def test_own_growth_counts_only_where_fits_are_mostly_variable():
    line = np.array([0.0, 1.0, 0.0])
    # steeper than the curve (variable parts 1 -> 8 over a doubling: cubic)
    assert own_scaled_cost(0.1, line, [0.25, 0.5], [1.1, 8.1], 1.0) == pytest.approx(
        0.1 + 8.0 * 2**3
    )
    # the same growth where the fixed part is most of the cost reads the curve
    fixed = own_scaled_cost(2.0, line, [0.25, 0.5], [2.5, 5.5], 1.0)
    assert fixed == pytest.approx(2.0 + 3.5 * 2)
    # flatter than the curve: never below it
    assert own_scaled_cost(0.0, line, [0.25, 0.5], [4.0, 4.0], 1.0) == pytest.approx(
        8.0
    )
    # scaled down (or to its own fraction) it is the curve's alone
    assert own_scaled_cost(0.0, line, [0.25, 0.5], [1.0, 8.0], 0.5) == pytest.approx(
        8.0
    )
