"""The exact GP: posterior, conditioning, jitter, samples."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

from skbayes_search.gp import (
    GaussianProcess,
    Matern52,
)
from tests.helpers import gp_data


def test_posterior_matches_scikit_learn():
    X, y = gp_data(20, 3)
    Xs = gp_data(11, 3, seed=5)[0]
    mean_c, amp, noise = 0.4, 1.7, 3e-3
    ls = np.array([0.3, 0.8, 1.5])
    theta = np.concatenate([[mean_c, np.log(amp), np.log(noise)], np.log(ls)])
    gp = GaussianProcess(Matern52()).fit(X, y, theta)

    alpha = 1e-10  # scikit-learn's default diagonal term; folded into our noise
    sk_kernel = ConstantKernel(amp, "fixed") * Matern(
        length_scale=ls, length_scale_bounds="fixed", nu=2.5
    ) + WhiteKernel(noise - alpha, "fixed")
    sk = GaussianProcessRegressor(
        sk_kernel, alpha=alpha, optimizer=None, normalize_y=False
    ).fit(X, y - mean_c)
    sk_mean, sk_std = sk.predict(Xs, return_std=True)
    _, sk_cov = sk.predict(Xs, return_cov=True)

    mean, var = gp.predict(Xs)
    _, cov = gp.predict(Xs, full_cov=True)
    np.testing.assert_allclose(mean, sk_mean + mean_c, atol=1e-6)
    # scikit-learn's predictive variance includes the WhiteKernel noise
    np.testing.assert_allclose(var + noise - alpha, sk_std**2, atol=1e-6)
    np.testing.assert_allclose(
        cov + (noise - alpha) * np.eye(len(Xs)), sk_cov, atol=1e-6
    )
    assert gp.log_marginal_likelihood() == pytest.approx(
        sk.log_marginal_likelihood_value_, abs=1e-6
    )
    np.testing.assert_allclose(gp.cross_cov(Xs, Xs), cov, atol=1e-10)


def _theta(kernel, seed=0):
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [
            [0.2, np.log(1.3), np.log(1e-2)],
            kernel.initial_theta() + 0.1 * rng.normal(size=kernel.n_params),
        ]
    )


def test_condition_equals_refit():
    X, y = gp_data(18, 3)
    Xf = gp_data(4, 3, seed=7)[0]
    yf = np.array([0.3, -0.2, 1.1, 0.0])
    Xs = gp_data(9, 3, seed=8)[0]
    kernel = Matern52(n_dims=3)
    theta = _theta(kernel)
    gp = GaussianProcess(kernel).fit(X, y, theta)
    cond = gp.condition(Xf, yf)
    ref = GaussianProcess(kernel).fit(
        np.vstack([X, Xf]), np.concatenate([y, yf]), theta
    )
    m1, c1 = cond.predict(Xs, full_cov=True)
    m2, c2 = ref.predict(Xs, full_cov=True)
    np.testing.assert_allclose(m1, m2, atol=1e-10)
    np.testing.assert_allclose(c1, c2, atol=1e-10)
    np.testing.assert_allclose(cond.L_, ref.L_, atol=1e-10)
    assert cond.log_marginal_likelihood() == pytest.approx(
        ref.log_marginal_likelihood(), abs=1e-8
    )
    np.testing.assert_allclose(
        cond.cross_cov(Xs[:3], Xs[3:]), ref.cross_cov(Xs[:3], Xs[3:]), atol=1e-10
    )
    # the original model is untouched
    assert gp.X_.shape[0] == 18
    # conditioning twice equals conditioning once on both blocks
    two = gp.condition(Xf[:2], yf[:2]).condition(Xf[2:], yf[2:])
    np.testing.assert_allclose(two.predict(Xs)[0], m2, atol=1e-10)


def test_condition_multi_target_fantasies():
    X, y = gp_data(12, 2)
    Xf = gp_data(3, 2, seed=9)[0]
    Yf = np.random.default_rng(0).normal(size=(3, 5))
    kernel = Matern52(n_dims=2)
    theta = _theta(kernel, 1)
    gp = GaussianProcess(kernel).fit(X, y, theta)
    cond = gp.condition(Xf, Yf)
    Xs = gp_data(6, 2, seed=10)[0]
    mean, var = cond.predict(Xs)
    assert mean.shape == (6, 5)
    for t in range(5):
        ref = GaussianProcess(kernel).fit(
            np.vstack([X, Xf]), np.concatenate([y, Yf[:, t]]), theta
        )
        mt, vt = ref.predict(Xs)
        np.testing.assert_allclose(mean[:, t], mt, atol=1e-10)
        np.testing.assert_allclose(var, vt, atol=1e-10)


def test_jitter_handles_duplicate_inputs():
    X = np.vstack([np.full((3, 2), 0.5), [[0.1, 0.2]]])
    y = np.array([1.0, 1.0, 1.0, 0.0])
    kernel = Matern52(n_dims=2)
    theta = np.array([0.0, 0.0, -40.0, 0.0, 0.0])  # practically noise free
    gp = GaussianProcess(kernel).fit(X, y, theta)
    assert gp.jitter_ > 0
    mean, var = gp.predict(X)
    assert np.all(np.isfinite(mean)) and np.all(var > 0)


def test_sample_moments_match_prediction():
    X, y = gp_data(10, 2)
    kernel = Matern52(n_dims=2)
    gp = GaussianProcess(kernel).fit(X, y, _theta(kernel, 2))
    Xs = gp_data(4, 2, seed=11)[0]
    draws = gp.sample(Xs, 20000, np.random.default_rng(0))
    mean, cov = gp.predict(Xs, full_cov=True)
    assert draws.shape == (20000, 4)
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_allclose(draws.mean(0), mean, atol=5 * sd.max() / np.sqrt(20000))
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.05 * sd.max() ** 2)
    noisy = gp.sample(Xs, 20000, np.random.default_rng(1), noise=True)
    np.testing.assert_allclose(noisy.var(0), np.diag(cov) + gp.noise_var_, rtol=0.05)
