"""Tests of the Gaussian-process core (kernels, model, inference, surrogate)."""

import numpy as np
import pytest
from scipy import stats
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

from skbayes_search.gp import (
    BasisKernel,
    GaussianProcess,
    GPSurrogate,
    Kernel,
    LogPosterior,
    Matern52,
    ProductKernel,
    SumKernel,
    fit_map,
    hyper_bounds,
    initial_hyper,
    slice_sample,
)


def _data(n=15, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.sin(4 * X[:, 0]) + X[:, 1] ** 2 - 0.5 * X[:, -1] + 0.05 * rng.normal(size=n)
    return X, y


def _assert_psd(K, tol=1e-9):
    np.testing.assert_allclose(K, K.T, atol=1e-14)
    assert np.linalg.eigvalsh(K).min() > -tol * max(1.0, np.abs(K).max())


# --- kernels -------------------------------------------------------------------


def _kernels():
    return [
        (Matern52(n_dims=3), np.log([0.3, 0.5, 2.0])),
        (Matern52(dims=[0, 2]), np.log([0.2, 0.7])),
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
    X, _ = _data(25)
    K = kernel(theta, X)
    _assert_psd(K)
    np.testing.assert_allclose(np.diag(K), kernel.diag(theta, X), rtol=1e-12)
    X2 = _data(7, seed=3)[0]
    np.testing.assert_allclose(kernel(theta, X, X2), kernel(theta, X2, X).T, rtol=1e-12)
    assert kernel.n_params == theta.size == len(kernel.bounds)
    assert np.isfinite(kernel.log_prior(kernel.initial_theta()))


@pytest.mark.parametrize("kernel,theta", _kernels())
def test_kernel_gradients_match_finite_differences(kernel, theta):
    X, _ = _data(9)
    X2 = _data(5, seed=4)[0]
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
    X, _ = _data(n=30, d=3)
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
            _assert_psd(K)
            # a product with a Matern kernel stays PSD (Schur product theorem)
            km = ProductKernel(Matern52(dims=[0]), k)
            _assert_psd(km(np.concatenate([[np.log(0.3)], theta]), s))
    with pytest.raises(ValueError, match="basis"):
        BasisKernel(0, "nope")


# --- the exact GP --------------------------------------------------------------


def test_posterior_matches_scikit_learn():
    X, y = _data(20, 3)
    Xs = _data(11, 3, seed=5)[0]
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
    X, y = _data(18, 3)
    Xf = _data(4, 3, seed=7)[0]
    yf = np.array([0.3, -0.2, 1.1, 0.0])
    Xs = _data(9, 3, seed=8)[0]
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
    X, y = _data(12, 2)
    Xf = _data(3, 2, seed=9)[0]
    Yf = np.random.default_rng(0).normal(size=(3, 5))
    kernel = Matern52(n_dims=2)
    theta = _theta(kernel, 1)
    gp = GaussianProcess(kernel).fit(X, y, theta)
    cond = gp.condition(Xf, Yf)
    Xs = _data(6, 2, seed=10)[0]
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
    X, y = _data(10, 2)
    kernel = Matern52(n_dims=2)
    gp = GaussianProcess(kernel).fit(X, y, _theta(kernel, 2))
    Xs = _data(4, 2, seed=11)[0]
    draws = gp.sample(Xs, 20000, np.random.default_rng(0))
    mean, cov = gp.predict(Xs, full_cov=True)
    assert draws.shape == (20000, 4)
    sd = np.sqrt(np.diag(cov))
    np.testing.assert_allclose(draws.mean(0), mean, atol=5 * sd.max() / np.sqrt(20000))
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.05 * sd.max() ** 2)
    noisy = gp.sample(Xs, 20000, np.random.default_rng(1), noise=True)
    np.testing.assert_allclose(noisy.var(0), np.diag(cov) + gp.noise_var_, rtol=0.05)


# --- inference -----------------------------------------------------------------


def test_log_posterior_gradient():
    X, y = _data(14, 2)
    y = (y - y.mean()) / y.std()
    kernel = ProductKernel(Matern52(dims=[0]), BasisKernel(1, "loss"))
    lp = LogPosterior(kernel, X, y)
    theta = np.array([0.1, 0.2, np.log(0.05), np.log(0.4), 0.2, -0.3, 0.1])
    _, g = lp.value_and_grad(theta)
    num = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = 1e-6
        num[i] = (lp(theta + e) - lp(theta - e)) / 2e-6
    np.testing.assert_allclose(g, num, rtol=1e-4, atol=1e-6)
    gp = GaussianProcess(kernel).fit(X, y, theta)
    assert lp.log_likelihood(theta) == pytest.approx(gp.log_marginal_likelihood())


@pytest.mark.parametrize("method", ["coordinate", "random"])
def test_slice_sampler_recovers_gaussian_1d(method):
    mu, sd = 1.5, 0.7

    def logp(x):
        return -0.5 * ((x[0] - mu) / sd) ** 2

    s, lps = slice_sample(
        logp, [0.0], 4000, rng=np.random.default_rng(0), n_burn=20, method=method
    )
    assert s.shape == (4000, 1)
    np.testing.assert_allclose(lps, [logp(x) for x in s])
    assert abs(s.mean() - mu) < 0.06
    assert abs(s.var() / sd**2 - 1) < 0.1


@pytest.mark.parametrize("method", ["coordinate", "random"])
def test_slice_sampler_recovers_correlated_gaussian_2d(method):
    mu = np.array([1.0, -2.0])
    cov = np.array([[1.0, 1.2], [1.2, 4.0]])  # correlation 0.6
    prec = np.linalg.inv(cov)

    def logp(x):
        d = x - mu
        return -0.5 * d @ prec @ d

    s, _ = slice_sample(
        logp,
        [0.0, 0.0],
        6000,
        rng=np.random.default_rng(1),
        n_burn=50,
        method=method,
        widths=[1.0, 2.0],
    )
    np.testing.assert_allclose(s.mean(0), mu, atol=0.15)
    np.testing.assert_allclose(np.cov(s.T), cov, atol=0.25, rtol=0.12)


def test_slice_sampler_respects_support_and_is_reproducible():
    def logp(x):
        # half-normal on x >= 0
        return -0.5 * x[0] ** 2 if x[0] >= 0 else -np.inf

    a, _ = slice_sample(logp, [0.5], 3000, rng=np.random.default_rng(3))
    b, _ = slice_sample(logp, [0.5], 3000, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0
    assert abs(a.mean() - np.sqrt(2 / np.pi)) < 0.06
    with pytest.raises(ValueError, match="zero density"):
        slice_sample(logp, [-1.0], 5, rng=np.random.default_rng(0))


def test_fit_map_beats_default_start():
    X, y = _data(25, 2)
    y = (y - y.mean()) / y.std()
    kernel = Matern52(n_dims=2)
    theta, val = fit_map(kernel, X, y, rng=np.random.default_rng(0))
    lp = LogPosterior(kernel, X, y)
    assert val == pytest.approx(lp(theta))
    assert val > lp(initial_hyper(kernel)) + 1.0
    lo, hi = np.asarray(hyper_bounds(kernel)).T
    assert np.all(theta >= lo) and np.all(theta <= hi)


def test_fit_map_keeps_the_best_finite_point_when_the_optimiser_ends_off_it():
    # The optimiser's final points are scored through __call__; a posterior
    # that is not finite there (as at a length-scale bound after two equal
    # scores) must not make the fit fail when finite points were visited.
    X, y = _data(12, 2)
    y = (y - y.mean()) / y.std()
    kernel = Matern52(n_dims=2)

    class EndsOnACliff(LogPosterior):
        inside = False

        def value_and_grad(self, theta):
            self.inside = True
            try:
                return super().value_and_grad(theta)
            finally:
                self.inside = False

        def __call__(self, theta):
            return super().__call__(theta) if self.inside else -np.inf

    lp = EndsOnACliff(kernel, X, y)
    theta, val = fit_map(kernel, X, y, rng=np.random.default_rng(0), log_posterior=lp)
    assert np.isfinite(val)
    assert val == pytest.approx(LogPosterior(kernel, X, y).value_and_grad(theta)[0])
    assert val >= LogPosterior(kernel, X, y)(initial_hyper(kernel))


# --- surrogate -----------------------------------------------------------------


def _branin01(U):
    x1 = 15 * U[:, 0] - 5
    x2 = 15 * U[:, 1]
    return (
        (x2 - 5.1 / (4 * np.pi**2) * x1**2 + 5 / np.pi * x1 - 6) ** 2
        + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1)
        + 10
    )


@pytest.mark.parametrize("sampling", ["map", "mcmc"])
def test_surrogate_fits_smooth_functions(sampling):
    rng = np.random.default_rng(0)
    # 1-D
    X = rng.uniform(size=(15, 1))
    f = lambda U: np.sin(6 * U[:, 0]) + 0.5 * U[:, 0]  # noqa: E731
    s = GPSurrogate(hyperparameter_sampling=sampling, n_burn=40, random_state=0)
    s.fit(X, f(X))
    Xt = np.linspace(0.02, 0.98, 50)[:, None]
    mean, std = s.predict(Xt)
    n_models = 1 if sampling == "map" else 10
    assert mean.shape == std.shape == (n_models, 50)
    err = np.sqrt(np.mean((mean.mean(0) - f(Xt)) ** 2))
    assert err < 0.03 * np.ptp(f(Xt))
    # 2-D (Branin on the unit square, range ~300)
    X = stats.qmc.Sobol(2, seed=1).random(32)
    y = _branin01(X)
    s2 = GPSurrogate(hyperparameter_sampling=sampling, n_burn=40, random_state=0)
    s2.fit(X, y)
    Xt = rng.uniform(size=(200, 2))
    mean, _ = s2.predict(Xt)
    err = np.sqrt(np.mean((mean.mean(0) - _branin01(Xt)) ** 2))
    assert err < 0.05 * np.ptp(y)


@pytest.mark.parametrize("sampling", ["map", "mcmc"])
def test_surrogate_with_fabolas_product_kernel(sampling):
    # loss that falls with the subset size s (last column) like a learning curve
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(40, 3))
    f = lambda U: np.sin(4 * U[:, 0]) + U[:, 1] + 2 * (1 - U[:, 2]) ** 2  # noqa: E731
    kernel = ProductKernel(Matern52(dims=[0, 1]), BasisKernel(2, "loss"))
    s = GPSurrogate(kernel, hyperparameter_sampling=sampling, n_burn=30, random_state=0)
    s.fit(X, f(X))
    assert s.thetas_.shape[1] == 3 + 2 + 3
    Xt = rng.uniform(size=(100, 3))
    mean, _ = s.predict(Xt)
    err = np.sqrt(np.mean((mean.mean(0) - f(Xt)) ** 2))
    assert err < 0.1 * np.ptp(f(Xt))


def test_surrogate_units_refit_and_reproducibility():
    X, y = _data(20, 2)
    a = GPSurrogate(n_burn=10, n_samples=4, random_state=3).fit(X, y)
    b = GPSurrogate(n_burn=10, n_samples=4, random_state=3).fit(X, 100 * y + 7)
    ma, sa = a.predict(X[:5])
    mb, sb = b.predict(X[:5])
    np.testing.assert_allclose(mb, 100 * ma + 7, rtol=1e-8)
    np.testing.assert_allclose(sb, 100 * sa, rtol=1e-8)
    assert a.y_mean_ == pytest.approx(y.mean())
    assert a.y_std_ == pytest.approx(y.std())
    assert len(a.models_) == 4 and a.thetas_.shape == (4, 5)
    # models_ live in standardised units
    np.testing.assert_allclose(a.models_[0].y_, (y - y.mean()) / y.std())
    # refits continue the chain: same state -> the refit starts where it stopped
    state = a.state_.copy()
    X2, y2 = _data(21, 2)
    a.fit(X2, y2)
    assert a.n_fits_ == 2 and not np.allclose(a.state_, state)
    # reproducible given random_state across refits
    c = GPSurrogate(n_burn=10, n_samples=4, random_state=3).fit(X, y).fit(X2, y2)
    np.testing.assert_array_equal(c.thetas_, a.thetas_)
    # the user's kernel is not modified
    k = Matern52()
    GPSurrogate(k, n_burn=2, n_samples=2, random_state=0).fit(X, y)
    assert k.n_dims is None


def test_surrogate_refit_continues_chain_without_burn_in(monkeypatch):
    import skbayes_search.gp.surrogate as surrogate_module

    calls = []
    original = surrogate_module.slice_sample

    def counting(*args, **kwargs):
        calls.append((args[2], kwargs.get("n_burn", 0), np.array(args[1])))
        return original(*args, **kwargs)

    monkeypatch.setattr(surrogate_module, "slice_sample", counting)
    X, y = _data(20, 2)
    s = GPSurrogate(n_burn=30, n_samples=5, random_state=0, n_burn_refit=1)
    s.fit(X[:19], y[:19])
    # first fit: 30 burn-in sweeps (used to adapt the widths), then 5 samples
    assert [c[:2] for c in calls] == [(30, 0), (5, 0)]
    last = s.state_.copy()
    calls.clear()
    s.fit(X, y)
    assert [c[:2] for c in calls] == [(5, 1)]
    np.testing.assert_array_equal(calls[0][2], last)


def test_surrogate_validation():
    X, y = _data(5, 2)
    with pytest.raises(ValueError, match="hyperparameter_sampling"):
        GPSurrogate(hyperparameter_sampling="grid").fit(X, y)
    with pytest.raises(ValueError, match="finite"):
        GPSurrogate().fit(X, np.r_[y[:-1], np.nan])
    # constant y does not break standardisation
    s = GPSurrogate(hyperparameter_sampling="map", random_state=0).fit(X, np.ones(5))
    assert s.y_std_ == 1.0
    mean, _ = s.predict(X)
    np.testing.assert_allclose(mean, 1.0, atol=1e-3)
