"""The FABOLAS kernels, the fraction axis and the loss targets."""

import warnings

import numpy as np
import pytest

from skbayes_search.gp import GaussianProcess
from skbayes_search.gp.fabolas_kernels import (
    FractionAxis,
    error_kind,
    fabolas_kernels,
    loss_to_scores,
    scores_to_loss,
)


# ----------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------
def test_basis_kernels_psd_and_loss_correlation_closed_form():
    rng = np.random.default_rng(0)
    loss_k, cost_k = fabolas_kernels(2)
    X = np.column_stack([rng.random((40, 2)), rng.random(40)])
    X[:5, 2] = 1.0
    for kernel in (loss_k, cost_k, loss_k.k2, cost_k.k2):
        for _ in range(5):
            theta = np.asarray(kernel.sample_theta(rng))
            K = kernel(theta, X)
            np.testing.assert_allclose(K, K.T, atol=1e-12)
            assert np.linalg.eigvalsh(K).min() > -1e-9 * np.abs(K).max()

    # correlation of f(x, s~) with f(x, 1) under the loss model: with
    # phi(s~) = (1, (1 - s~)^2) and phi(1) = (1, 0) it is
    # (S11 + S12 q) / sqrt(S11 (S11 + 2 S12 q + S22 q^2)),  q = (1 - s~)^2,
    # whatever the Matern part and the amplitude
    basis = loss_k.k2
    theta_basis = np.array([0.3, -0.7, -0.4])
    S = basis.sigma(theta_basis)
    theta = np.concatenate([[np.log(0.3), np.log(0.5)], theta_basis])
    gp_theta = np.concatenate([[0.0, np.log(2.5), np.log(1e-3)], theta])
    gp = GaussianProcess(loss_k).fit(np.array([[0.9, 0.9, 0.0]]), [0.0], gp_theta)
    x = np.array([0.2, 0.6])
    for s in (0.0, 0.25, 0.5, 0.9, 1.0):
        q = (1.0 - s) ** 2
        expected = (S[0, 0] + S[0, 1] * q) / np.sqrt(
            S[0, 0] * (S[0, 0] + 2 * S[0, 1] * q + S[1, 1] * q**2)
        )
        pts = np.array([[*x, s], [*x, 1.0]])
        K = loss_k(theta, pts)
        assert K[0, 1] / np.sqrt(K[0, 0] * K[1, 1]) == pytest.approx(expected)
        # the same through the GP prior (amplitude cancels); the observation
        # is far away, so the posterior barely differs from the prior
        kp = gp.amplitude_ * K
        assert kp[0, 1] / np.sqrt(kp[0, 0] * kp[1, 1]) == pytest.approx(expected)
    # the hyperprior on the log length scales is the paper's [-10, 2]
    assert loss_k.k1.bounds == [(-10.0, 2.0)] * 2


def test_fraction_axis_round_trips_and_snaps_to_whole_rows():
    axis = FractionAxis(n_train=1000, min_rows=10)
    f = np.array([0.01, 0.05, 0.3, 1.0])
    np.testing.assert_allclose(axis.to_fraction(axis.to_s(f)), f)
    assert axis.to_s(0.001) == 0.0 and axis.to_s(2.0) == 1.0  # clipped
    # s~ snaps to the fraction of whole rows a fit sees, at least min_rows
    s = axis.snap(np.array([-0.5, axis.to_s(0.1234), 1.3]))
    np.testing.assert_allclose(axis.to_fraction(s), [0.01, 0.123, 1.0])
    assert axis.fraction_of(axis.to_s(0.1234)) == 0.123
    U = np.array([[0.123456, 0.5], [0.9, 0.0]])
    snapped = axis.snap_inputs(U, lambda X: np.round(X, 2))
    np.testing.assert_allclose(snapped[:, 0], [0.12, 0.9])
    np.testing.assert_allclose(snapped[:, 1], axis.snap(U[:, 1]))
    np.testing.assert_allclose(axis.input_fractions(U), axis.to_fraction(U[:, 1]))
    np.testing.assert_array_equal(axis.with_s(U[:, :1], 1.0)[:, 1], 1.0)
    # disabled (plain BO on all data): no s~ column, every fraction is 1
    off = FractionAxis(n_train=1000, min_rows=100, enabled=False)
    np.testing.assert_array_equal(off.with_s(U, 1.0), U)
    np.testing.assert_array_equal(off.input_fractions(U), 1.0)
    assert off.fraction_of(0.0) == 1.0
    np.testing.assert_array_equal(off.snap_inputs(U, lambda X: X.round(1)), U.round(1))


def test_scores_map_to_log_errors_and_back():
    acc = np.array([0.9, 0.99, 1.0, np.nan])
    assert error_kind(acc) == "one_minus"
    loss = scores_to_loss(acc.copy(), "one_minus")
    np.testing.assert_allclose(loss[:3], np.log([0.1, 0.01, 1e-4]))
    assert loss[3] == loss[:3].max()  # a failure gets the worst finite loss
    np.testing.assert_allclose(loss_to_scores(loss[:2], "one_minus"), acc[:2])
    mse = np.array([-4.0, -0.5])
    assert error_kind(mse) == "neg"
    np.testing.assert_allclose(loss_to_scores(scores_to_loss(mse, "neg"), "neg"), mse)
    big = np.array([3.0, 7.0])
    assert error_kind(big) == "linear"
    np.testing.assert_array_equal(scores_to_loss(big, "linear"), -big)
    np.testing.assert_array_equal(loss_to_scores(-big, "linear"), big)


def test_an_axis_whose_fewest_rows_are_all_rows_maps_every_fraction_to_one():
    # min_resources at or above the training rows (tiny data sets, where the
    # search falls back to all data): no 0 / 0, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = FractionAxis(n_train=8, min_rows=8).to_s(np.array([0.5, 1.0]))
    np.testing.assert_array_equal(s, [1.0, 1.0])
