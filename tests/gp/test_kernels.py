"""The kernels: values, gradients, positive semi-definiteness."""

import numpy as np
import pytest

from skbayes_search.gp import (
    BasisKernel,
    Kernel,
    Matern52,
    ProductKernel,
    SumKernel,
)
from tests.helpers import assert_psd, gp_data


def _kernels():
    return [
        (Matern52(n_dims=3), np.log([0.3, 0.5, 2.0])),
        (Matern52(dims=[0, 2]), np.log([0.2, 0.7])),
        (Matern52(n_dims=3, log_length_prior=(0.0, 1.0)), np.log([0.3, 4.0, 1.0])),
        (BasisKernel(2, "loss"), np.array([0.3, -1.2, -0.4])),
        (BasisKernel(2, "cost"), np.array([-0.5, 2.0, 0.1])),
        (
            ProductKernel(Matern52(dims=[0, 1]), BasisKernel(2, "loss")),
            np.array([np.log(0.3), np.log(0.6), 0.1, 0.5, -0.3]),
        ),
        (
            SumKernel(Matern52(dims=[0]), Matern52(dims=[1, 2])),
            np.log([0.4, 0.3, 0.9]),
        ),
    ]


@pytest.mark.parametrize("kernel,theta", _kernels())
def test_kernel_matrices_symmetric_psd_and_diag(kernel, theta):
    X, _ = gp_data(25)
    K = kernel(theta, X)
    assert_psd(K)
    np.testing.assert_allclose(np.diag(K), kernel.diag(theta, X), rtol=1e-12)
    X2 = gp_data(7, seed=3)[0]
    np.testing.assert_allclose(kernel(theta, X, X2), kernel(theta, X2, X).T, rtol=1e-12)
    assert kernel.n_params == theta.size == len(kernel.bounds)
    assert np.isfinite(kernel.log_prior(kernel.initial_theta()))


@pytest.mark.parametrize("kernel,theta", _kernels())
def test_evaluate_many_stacks_one_matrix_per_theta(kernel, theta):
    X, _ = gp_data(11)
    X2 = gp_data(6, seed=5)[0]
    rng = np.random.default_rng(2)
    thetas = theta + 0.3 * rng.standard_normal((4, theta.size))
    many = kernel.evaluate_many(thetas, X2, X)
    assert many.shape == (4, 6, 11)
    for K, t in zip(many, thetas):
        np.testing.assert_allclose(K, kernel(t, X2, X), rtol=1e-12, atol=1e-14)
    diags = kernel.diag_many(thetas, X2)
    assert diags.shape == (4, 6)
    for d, t in zip(diags, thetas):
        np.testing.assert_allclose(d, kernel.diag(t, X2), rtol=1e-12)


@pytest.mark.parametrize("kernel,theta", _kernels())
def test_kernel_gradients_match_finite_differences(kernel, theta):
    X, _ = gp_data(9)
    X2 = gp_data(5, seed=4)[0]
    pre = kernel.precompute(X, X2)
    analytic = kernel.gradient(theta, pre)
    numeric = Kernel.gradient(kernel, theta, pre)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-8)
    # the contraction used by the likelihood gradient, cross and symmetric
    W = np.random.default_rng(0).normal(size=analytic.shape[1:])
    np.testing.assert_allclose(
        kernel.gradient_dot(theta, pre, W),
        np.einsum("ij,pij->p", W, analytic),
        rtol=1e-10,
        atol=1e-10,
    )
    pre_sym = kernel.precompute(X)
    Ws = np.random.default_rng(1).normal(size=(9, 9))
    np.testing.assert_allclose(
        kernel.gradient_dot(theta, pre_sym, Ws),
        np.einsum("ij,pij->p", Ws, Kernel.gradient(kernel, theta, pre_sym)),
        rtol=1e-5,
        atol=1e-8,
    )


def test_matern_values_and_ard_columns():
    x = np.array([[0.0, 0.0]])
    x2 = np.array([[0.3, 0.4]])
    k = Matern52(n_dims=2)
    r = 0.5 / 1.0
    expected = (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)
    assert k(np.zeros(2), x, x2)[0, 0] == pytest.approx(expected, rel=1e-12)
    # a kernel restricted to column 0 ignores column 1
    k0 = Matern52(dims=[0])
    Xa = np.array([[0.1, 0.0], [0.5, 0.0]])
    Xb = np.array([[0.1, 0.9], [0.5, 0.2]])
    np.testing.assert_allclose(k0([0.0], Xa), k0([0.0], Xb))


def test_repeated_evaluations_on_cached_inputs_match_distances():
    # MCMC re-evaluates the kernel on one input set; from the second call on
    # r^2 comes from cached squared differences, which must give the matrix
    # the distance computation gives
    X, _ = gp_data(n=30, d=3)
    k = Matern52(dims=[0, 2])
    pre = k.precompute(X)
    rng = np.random.default_rng(1)
    for i in range(4):
        theta = rng.uniform(-3, 1, size=2)
        K = k.evaluate(theta, pre)
        assert ("sq" in pre[2]) == (i >= 1)  # a one-off call builds no table
        np.testing.assert_allclose(K, k(theta, X, X), rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(K, K.T)
        np.testing.assert_array_equal(np.diag(K), 1.0)


def test_basis_kernel_is_phi_sigma_phi_and_psd_for_any_theta():
    rng = np.random.default_rng(1)
    s = rng.uniform(size=(30, 1))
    for basis, second in [("loss", (1 - s[:, 0]) ** 2), ("cost", s[:, 0])]:
        k = BasisKernel(0, basis)
        for _ in range(20):
            theta = rng.uniform(-3, 3, size=3)
            Sigma = k.sigma(theta)
            assert np.linalg.eigvalsh(Sigma).min() > 0
            Phi = np.column_stack([np.ones(30), second])
            K = k(theta, s)
            np.testing.assert_allclose(K, Phi @ Sigma @ Phi.T, rtol=1e-12, atol=1e-12)
            assert_psd(K)
            # a product with a Matern kernel stays PSD (Schur product theorem)
            km = ProductKernel(Matern52(dims=[0]), k)
            assert_psd(km(np.concatenate([[np.log(0.3)], theta]), s))
    with pytest.raises(ValueError, match="basis"):
        BasisKernel(0, "nope")


def test_log_length_prior_is_a_truncated_normal_on_log_scales():
    kernel = Matern52(n_dims=2, log_length_prior=(np.log(0.5), 2.0))
    theta = np.log([0.1, 3.0])
    z = (theta - np.log(0.5)) / 2.0
    assert kernel.log_prior(theta) == pytest.approx(-0.5 * z @ z)
    step = 1e-6
    numeric = [
        (kernel.log_prior(theta + step * e) - kernel.log_prior(theta - step * e))
        / (2 * step)
        for e in np.eye(2)
    ]
    np.testing.assert_allclose(kernel.log_prior_grad(theta), numeric, rtol=1e-6)
    # the box still bounds it, and the flat default is unchanged
    assert kernel.log_prior(np.log([0.1, 20.0])) == -np.inf
    assert Matern52(n_dims=2).log_prior(theta) == 0.0
    np.testing.assert_array_equal(Matern52(n_dims=2).log_prior_grad(theta), 0.0)


@pytest.mark.parametrize("prior", [(0.0, 0.0), (0.0, -1.0), (np.nan, 1.0)])
def test_log_length_prior_refuses_a_degenerate_normal(prior):
    with pytest.raises(ValueError, match="log_length_prior"):
        Matern52(log_length_prior=prior)
