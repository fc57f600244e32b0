"""Property-based tests of the GP on random small inputs (hypothesis).

For random inputs, targets and hyperparameters inside the kernel's bounds:
the posterior variance is non-negative, the mean finite, and conditioning on
an observation never increases the variance (at that point or elsewhere).
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skbayes_search.gp import GaussianProcess, Matern52, initial_hyper

SETTINGS = settings(max_examples=50, deadline=None)


@st.composite
def problems(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 12))
    d = draw(st.integers(1, 4))
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    if draw(st.booleans()):
        X[n // 2 :] = X[: n - n // 2]  # repeated inputs
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    y = scale * rng.normal(size=n)
    kernel = Matern52().set_n_dims(d)
    theta = initial_hyper(kernel).copy()
    # the kernel's own parameters anywhere in their box
    bounds = np.asarray(kernel.bounds)
    k = len(bounds)
    theta[-k:] = bounds[:, 0] + rng.uniform(size=k) * (bounds[:, 1] - bounds[:, 0])
    theta[0] = float(np.mean(y))
    theta[1] = np.log(scale**2) + rng.uniform(-2, 2)  # log amplitude
    theta[2] = np.log(scale**2) + rng.uniform(-12, 0)  # log noise variance
    Xs = rng.uniform(size=(draw(st.integers(1, 6)), d))
    return kernel, X, y, theta, Xs, rng


@SETTINGS
@given(problems())
def test_variance_non_negative_and_mean_finite(problem):
    kernel, X, y, theta, Xs, _ = problem
    gp = GaussianProcess(kernel).fit(X, y, theta)
    for Z in (Xs, X):
        mean, var = gp.predict(Z)
        assert np.all(np.isfinite(mean))
        assert np.all(np.isfinite(var))
        assert np.all(var >= 0)
        _, cov = gp.predict(Z, full_cov=True)
        assert np.all(np.diag(cov) >= -1e-9 * max(1.0, np.abs(cov).max()))


@SETTINGS
@given(problems())
def test_conditioning_never_increases_variance(problem):
    kernel, X, y, theta, Xs, rng = problem
    gp = GaussianProcess(kernel).fit(X, y, theta)
    x_new = Xs[:1]
    y_new = rng.normal(size=1) * (np.std(y) + 1.0)
    conditioned = gp.condition(x_new, y_new)
    Z = np.vstack([x_new, Xs])
    _, before = gp.predict(Z)
    _, after = conditioned.predict(Z)
    tol = 1e-8 * max(1.0, float(before.max()))
    assert np.all(after <= before + tol)
    assert np.all(after >= 0)
