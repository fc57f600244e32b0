"""Analytic acquisitions: log EI/PI/LCB, integration, fantasies."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from skbayes_search.acquisition import lcb, log_ei, log_h, log_pi, make_acquisition
from skbayes_search.gp import GPSurrogate
from tests.helpers import fitted_surrogate


def _plain_ei(mean, std, best):
    u = (best - mean) / std
    return std * (stats.norm.pdf(u) + u * stats.norm.cdf(u))


# --- elementwise acquisitions ---------------------------------------------------


def test_log_ei_equals_log_of_plain_ei_where_well_conditioned():
    rng = np.random.default_rng(0)
    mean = rng.normal(size=500)
    std = rng.uniform(0.05, 3.0, size=500)
    best = 0.3
    u = (best - mean) / std
    ok = u > -5  # plain EI is accurate here
    expected = np.log(_plain_ei(mean[ok], std[ok], best))
    np.testing.assert_allclose(log_ei(mean, std, best)[ok], expected, rtol=1e-10)


def test_log_h_matches_high_precision_reference_everywhere():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60

    def ref(u):
        u = mpmath.mpf(u)
        return float(mpmath.log(mpmath.npdf(u) + u * mpmath.ncdf(u)))

    us = np.concatenate([np.linspace(-30, 8, 77), -np.logspace(1, 6, 26), [-1.0, -1e3]])
    got = log_h(us)
    want = np.array([ref(u) for u in us])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_log_ei_finite_and_monotone_deep_in_the_tail():
    u = -np.logspace(0, 3.5, 2000)[::-1]  # -3162 ... -1, increasing
    std = 1.0
    mean = -u  # best = 0
    plain = _plain_ei(mean, std, 0.0)
    assert np.sum(plain == 0.0) > 1000  # plain EI underflows over most of this range
    le = log_ei(mean, std, 0.0)
    assert np.all(np.isfinite(le))
    assert np.all(np.diff(le) > 0)
    # still monotone on fine grids across the branch switches at -1 and -1e3
    for b in (-1.0, -1e3):
        grid = np.linspace(b * (1 + 1e-4), b * (1 - 1e-4), 1001)
        assert np.all(np.diff(log_h(grid)) > 0)
    # far tail: h(u) ~ phi(u) / u^2
    want = -0.5e10 - 0.5 * np.log(2 * np.pi) - 2 * np.log(1e5)
    assert log_h(np.array([-1e5]))[0] == pytest.approx(want, rel=1e-14)


def test_log_pi_and_lcb():
    mean = np.array([0.0, 1.0, 50.0])
    std = np.array([1.0, 2.0, 1.0])
    np.testing.assert_allclose(
        log_pi(mean, std, 0.5)[:2], np.log(stats.norm.cdf((0.5 - mean[:2]) / std[:2]))
    )
    assert np.isfinite(log_pi(mean, std, 0.5)[2])
    assert log_pi(mean, std, 0.5)[2] < -1000
    np.testing.assert_allclose(lcb(mean, std, 2.0), mean - 2 * std)


# --- integrated acquisitions -----------------------------------------------------


def test_integrated_acquisitions_match_hand_computation():
    s, X, y = fitted_surrogate()
    U = np.random.default_rng(1).uniform(size=(30, 2))
    mean, std = s.predict(U)
    best = y.min()
    ei = make_acquisition(s, "ei", y_best=best)(U)
    want = np.log(np.mean(_plain_ei(mean, std, best), axis=0))
    np.testing.assert_allclose(ei, want, rtol=1e-8)
    pi = make_acquisition(s, "pi", y_best=best)(U)
    want = logsumexp(log_pi(mean, std, best), axis=0) - np.log(len(mean))
    np.testing.assert_allclose(pi, want, rtol=1e-10)
    neg_lcb = make_acquisition(s, "lcb", y_best=best, kappa=1.5)(U)
    np.testing.assert_allclose(neg_lcb, -np.mean(mean - 1.5 * std, axis=0), rtol=1e-10)

    cost = GPSurrogate(hyperparameter_sampling="map", random_state=0).fit(
        X, np.log(1 + X[:, 0])
    )
    eips = make_acquisition(s, "ei_per_second", y_best=best, cost_surrogate=cost)(U)
    # EI times the expected inverse duration of a log-normal cost
    c_mean, c_std = cost.predict(U)
    inv = np.log(np.mean(np.exp(-c_mean + 0.5 * c_std**2), axis=0))
    np.testing.assert_allclose(eips, ei + inv, rtol=1e-10)
    with pytest.raises(ValueError, match="cost_surrogate"):
        make_acquisition(s, "ei_per_second", y_best=best)
    with pytest.raises(ValueError, match="acquisition"):
        make_acquisition(s, "ucb", y_best=best)


def test_fantasies_lower_ei_at_and_near_pending_point():
    s, _, y = fitted_surrogate(sampling="map")
    U = np.random.default_rng(2).uniform(size=(400, 2))
    base = make_acquisition(s, "ei", y_best=y.min())
    x_p = U[np.argmax(base(U))][None, :]
    fant = make_acquisition(
        s, "ei", y_best=y.min(), X_pending=x_p, rng=np.random.default_rng(0)
    )
    near = x_p + np.array([[0.0, 0.0], [0.01, 0.0], [0.0, -0.01]])
    assert np.all(fant(near) < base(near) - 0.5)
    # deterministic once built (common random numbers)
    np.testing.assert_array_equal(fant(U), fant(U))
    # far from the pending point the acquisition hardly changes
    far = U[np.linalg.norm(U - x_p, axis=1) > 0.6]
    assert np.median(np.abs(fant(far) - base(far))) < np.median(
        np.abs(fant(near) - base(near))
    )


# --- optimisers -----------------------------------------------------------------
