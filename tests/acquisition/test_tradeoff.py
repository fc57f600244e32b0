"""The expected improvement of the trade-off T = L - alpha * o."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import integrate, special
from scipy.stats import norm

from skbayes_search._numerics import single_blas_thread
from skbayes_search.acquisition import log_ei, make_acquisition
from skbayes_search.acquisition.tradeoff import (
    N_FANTASIES,
    _members,
    log_ei_tradeoff,
    make_tradeoff_acquisition,
)
from skbayes_search.gp import GPSurrogate
from skbayes_search.optimize import maximize

_SQRT_2PI = math.sqrt(2.0 * math.pi)


@pytest.fixture(scope="module")
def surrogates():
    rng = np.random.default_rng(1)
    X = rng.random((12, 2))
    loss = np.sin(4 * X[:, 0]) + X[:, 1] ** 2
    log_t = np.log(0.05 + 2.0 * X[:, 1])  # time grows along the 2nd input
    loss_s = GPSurrogate(hyperparameter_sampling="mcmc", n_burn=30, random_state=0)
    time_s = GPSurrogate(hyperparameter_sampling="mcmc", n_burn=30, random_state=1)
    with single_blas_thread():
        loss_s.fit(X, loss)
        time_s.fit(X, log_t)
    U = rng.random((64, 2))
    return loss_s, time_s, loss, log_t, U


def _gaussian_ei(mean, std, best):
    """E[max(T - best, 0)] for T ~ N(mean, std^2), via scipy (not log_ei)."""
    z = (mean - best) / std
    return std * (z * norm.cdf(z) + norm.pdf(z))


def test_acquisition_is_ei_when_alpha_is_zero(surrogates):
    loss_s, time_s, loss, _, U = surrogates
    kwargs = dict(tradeoff_best=-loss.min(), time_scale=2.05, alpha=0.0)
    with single_blas_thread():
        a_t = make_tradeoff_acquisition(loss_s, time_s, log=False, **kwargs)(U)
        log_a = make_tradeoff_acquisition(loss_s, time_s, **kwargs)(U)
        ei = make_acquisition(loss_s, "ei", y_best=loss.min())(U)  # log of EI
    np.testing.assert_allclose(np.log(a_t), ei, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(log_a, ei, rtol=1e-10, atol=1e-12)
    # EI from the GP's own predictions, by numerical integration
    mean, std = loss_s.predict(U[:3])
    z = np.linspace(-10, 10, 20001)
    pdf = np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi)
    for j in range(3):
        ei_j = np.mean(
            [
                np.trapezoid(np.maximum(loss.min() - (m + s * z), 0) * pdf, z)
                for m, s in zip(mean[:, j], std[:, j])
            ]
        )
        assert a_t[j] == pytest.approx(ei_j, rel=1e-4, abs=1e-10)


def test_alpha_zero_with_pending_points_is_the_fantasy_ei(surrogates):
    # the batch case reduces too: the same fantasies as BayesSearchCV's EI
    loss_s, time_s, loss, _, U = surrogates
    pending = U[:2]
    with single_blas_thread():
        a_t = make_tradeoff_acquisition(
            loss_s,
            time_s,
            tradeoff_best=-loss.min(),
            time_scale=2.0,
            alpha=0.0,
            X_pending=pending,
            rng=np.random.default_rng(3),
        )(U)
        ei = make_acquisition(
            loss_s,
            "ei",
            y_best=loss.min(),
            X_pending=pending,
            n_fantasies=N_FANTASIES,
            rng=np.random.default_rng(3),
        )(U)
        plain = make_acquisition(loss_s, "ei", y_best=loss.min())(U)
    np.testing.assert_allclose(a_t, ei, rtol=1e-10, atol=1e-12)
    assert not np.allclose(a_t, plain)


def _quad_ei_tradeoff(mean_L, std_L, mean_g, std_g, alpha, best):
    """EI_T by adaptive quadrature over the log time (scipy), one case."""

    # scalar math in the integrand: scipy.stats' per-call overhead made this
    # reference the slowest test of the suite
    def integrand(z):
        o = math.exp(mean_g + std_g * z)
        u = (mean_L - alpha * o - best) / std_L
        ei = std_L * (u * special.ndtr(u) + math.exp(-0.5 * u * u) / _SQRT_2PI)
        return ei * math.exp(-0.5 * z * z) / _SQRT_2PI

    # epsrel four orders below the comparison's rtol
    return integrate.quad(integrand, -12, 12, limit=200, epsabs=0, epsrel=1e-8)[0]


def test_acquisition_integrates_every_sample_pair(surrogates):
    # E over every (score sample, time sample) pair of the EI of T given the
    # log time, integrated over the log time by scipy's adaptive quadrature
    loss_s, time_s, loss, log_t, U = surrogates
    alpha, scale = 2.0, 2.05
    o = np.exp(log_t) / scale
    t_best = float(np.median(-loss - alpha * o))
    V = U[:4]
    with single_blas_thread():
        got = make_tradeoff_acquisition(
            loss_s,
            time_s,
            tradeoff_best=t_best,
            time_scale=scale,
            alpha=alpha,
            log=False,
        )(V)
    mL, sL = loss_s.predict(V)  # loss = -L
    mg, sg = time_s.predict(V)
    mg = mg - np.log(scale)
    want = np.array(
        [
            np.mean(
                [
                    _quad_ei_tradeoff(
                        -mL[i, c], sL[i, c], mg[j, c], sg[j, c], alpha, t_best
                    )
                    for i in range(len(mL))
                    for j in range(len(mg))
                ]
            )
            for c in range(len(V))
        ]
    )
    assert want.max() > 0.05
    # below ~1e-30 the scipy reference loses digits (z * cdf + pdf cancels)
    big = want > 1e-30
    assert big.sum() >= 3
    np.testing.assert_allclose(got[big], want[big], rtol=1e-3, atol=0)
    # pairing the samples instead would be a different (noisier) average
    paired = [
        np.mean(
            [
                _quad_ei_tradeoff(
                    -mL[i, c], sL[i, c], mg[i, c], sg[i, c], alpha, t_best
                )
                for i in range(len(mL))
            ]
        )
        for c in range(len(V))
    ]
    assert np.max(np.abs(np.log(got) - np.log(paired))) > 0.1


def test_acquisition_matches_monte_carlo_of_the_tradeoff(surrogates):
    # E[max(L - alpha * o - T*, 0)] by brute force: L from the score GP, o
    # drawn log-normal from the (here sharp) time GP, every pair of samples
    loss_s, time_s, loss, log_t, U = surrogates
    alpha, scale = 2.0, 2.05
    o = np.exp(log_t) / scale
    # a middling reference, so that many candidates have a sizeable EI_T
    t_best = float(np.median(-loss - alpha * o))
    V = U[:16]
    with single_blas_thread():
        got = make_tradeoff_acquisition(
            loss_s,
            time_s,
            tradeoff_best=t_best,
            time_scale=scale,
            alpha=alpha,
            log=False,
        )(V)
    mL, sL = loss_s.predict(V)
    mg, sg = time_s.predict(V)
    rng = np.random.default_rng(0)
    n = 4000
    L = -(
        mL[:, None, :, None]
        + sL[:, None, :, None] * rng.standard_normal((mL.shape[0], 1, len(V), n))
    )
    g = mg[None, :, :, None] + sg[None, :, :, None] * rng.standard_normal(
        (1, mg.shape[0], len(V), n)
    )
    mc = np.maximum(L - alpha * np.exp(g) / scale - t_best, 0).mean(axis=(0, 1, 3))
    assert mc.max() > 0.05  # the check is not about negligible values
    np.testing.assert_allclose(got, mc, rtol=0.05, atol=2e-3)
    # the time term matters here: ignoring it would not pass
    with single_blas_thread():
        no_time = make_tradeoff_acquisition(
            loss_s,
            None,
            tradeoff_best=t_best,
            time_scale=scale,
            alpha=alpha,
            log=False,
        )(V)
    assert np.abs(no_time - mc).max() > 0.1


class _FixedPosterior:
    """Stands in for a Posterior: latent mean ``mean + slope * U[:, 0]``."""

    def __init__(self, mean, var, slope=0.0):
        self._mean, self.var, self.slope = mean, var, slope

    def predict(self, U, full_cov=False):
        U = np.atleast_2d(U)
        return self._mean + self.slope * U[:, 0], np.full(len(U), self.var)

    def mean_std(self, U):
        mean, var = self.predict(U)
        return mean, np.sqrt(var)


def _fixed_surrogate(mean, std, slope=0.0):
    return _sample_surrogate([(mean, std, slope)])


def _sample_surrogate(samples):
    """A surrogate whose hyperparameter samples are ``(mean, std, slope)``."""
    posteriors = [_FixedPosterior(m, s**2, b) for m, s, b in samples]
    return SimpleNamespace(posteriors=posteriors, n_models=len(posteriors))


def _moment_matched_ei(mean_L, std_L, mean_g, std_g, alpha, best):
    """The former acquisition: o replaced by the Gaussian with its moments."""
    m_o = np.exp(mean_g + std_g**2 / 2)
    v_o = np.expm1(std_g**2) * np.exp(2 * mean_g + std_g**2)
    return _gaussian_ei(mean_L - alpha * m_o, np.sqrt(std_L**2 + alpha**2 * v_o), best)


@pytest.mark.parametrize("time_sd", [1.0, 1.5])
def test_acquisition_matches_monte_carlo_for_wide_time_uncertainty(time_sd):
    # the regime of real searches (log-time sd >= 0.5): two score samples
    # times two time samples, candidates from slow and hopeless to fast and
    # promising; o = exp(g) / scale drawn log-normal, L Gaussian
    alpha, scale, t_best = 0.3, 2.0, 0.80
    loss_samples = [(-0.78, 0.02, -0.08), (-0.79, 0.03, -0.06)]  # loss = -L
    time_samples = [(np.log(1.2), time_sd, -3.0), (np.log(0.8), time_sd, -2.5)]
    V = np.linspace(0.0, 1.0, 6)[:, None]
    with single_blas_thread():
        got = make_tradeoff_acquisition(
            _sample_surrogate(loss_samples),
            _sample_surrogate(time_samples),
            tradeoff_best=t_best,
            time_scale=scale,
            alpha=alpha,
            log=False,
        )(V)
    rng = np.random.default_rng(0)
    n = 400_000
    mc = np.zeros(len(V))
    moment = np.zeros(len(V))
    for m_l, s_l, b_l in loss_samples:
        for m_g, s_g, b_g in time_samples:
            mean_L = -(m_l + b_l * V[:, 0])
            mean_g = m_g + b_g * V[:, 0] - np.log(scale)
            L = mean_L[:, None] + s_l * rng.standard_normal((len(V), n))
            o = np.exp(mean_g[:, None] + s_g * rng.standard_normal((len(V), n)))
            mc += np.maximum(L - alpha * o - t_best, 0).mean(axis=1) / 4
            moment += _moment_matched_ei(mean_L, s_l, mean_g, s_g, alpha, t_best) / 4
    # EI_T from about 1e-4 (slow, hopeless at its median time) to 0.04
    assert mc.min() > 1e-5
    np.testing.assert_allclose(got, mc, rtol=0.05)
    # the former moment matching overstated these several-fold
    assert np.max(moment / mc) > 2.0


def test_acquisition_never_exceeds_the_score_ei():
    # o >= 0 can only lower T: EI_T <= E[max(L - T*, 0)], also far in the
    # tails (log space) and for absurd time predictions
    rng = np.random.default_rng(0)
    n = 20_000
    mean_L = rng.uniform(0.0, 1.0, n)
    std_L = 10 ** rng.uniform(-4, 0, n)
    mean_g = rng.uniform(-10, 10, n)
    std_g = 10 ** rng.uniform(-3, 1, n)
    alpha = 0.3
    best = rng.uniform(0.0, 1.2, n)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = log_ei_tradeoff(mean_L, std_L, mean_g, std_g, alpha, best)
    bound = log_ei(-mean_L, std_L, -best)
    assert np.all(np.isfinite(got))
    assert np.all(got <= bound + 1e-12 * np.abs(bound))
    # the bound is tight when the time is negligible
    tiny = log_ei_tradeoff(
        mean_L, std_L, np.full(n, -40.0), np.minimum(std_g, 1.0), alpha, best
    )
    np.testing.assert_allclose(tiny, bound, rtol=1e-9)
    # and through the acquisition, averaged over samples
    loss_s = _sample_surrogate([(-0.8, 0.02, 0.3), (-0.85, 0.01, 0.2)])
    time_s = _sample_surrogate([(0.0, 1.5, -2.0), (-1.0, 0.7, 1.0)])
    U = rng.random((64, 1))
    with single_blas_thread():
        a_t = make_tradeoff_acquisition(
            loss_s, time_s, tradeoff_best=0.75, time_scale=1.0, alpha=0.5
        )(U)
        a_l = make_tradeoff_acquisition(
            loss_s, None, tradeoff_best=0.75, time_scale=1.0, alpha=0.5
        )(U)
    assert np.all(a_t <= a_l + 1e-12)
    assert np.all(a_t < a_l - 0.1)  # and not trivially equal


def _ei_t_at(mean_g, std_g, *, mean_L=0.84, std_L=0.02, alpha=0.3, best=0.76):
    """EI_T of one candidate through the acquisition (time scale 2 s)."""
    with single_blas_thread():
        return make_tradeoff_acquisition(
            _fixed_surrogate(-mean_L, std_L),
            _fixed_surrogate(mean_g, std_g),
            tradeoff_best=best,
            time_scale=2.0,
            alpha=alpha,
            log=False,
        )(np.zeros((1, 1)))[0]


SDS = (0.01, 0.25, 0.5, 1.0, 1.5)


def test_acquisition_grows_with_time_uncertainty_at_fixed_means():
    # the same expected score and expected normalised time, a wider time GP:
    # EI_T only grows (E[max(c - alpha * o, 0)] is convex in o and wider
    # log-normals of one mean are larger in the convex order)
    mean_o = 0.25
    # E[o] stays 0.25 (time scale 2 s)
    values = [_ei_t_at(np.log(mean_o * 2.0) - s**2 / 2, s) for s in SDS]
    assert np.all(np.diff(values) > 0)
    # the sharp end is the EI of L shifted by alpha * E[o]
    assert values[0] == pytest.approx(
        _gaussian_ei(0.84 - 0.3 * mean_o, 0.02, 0.76), rel=1e-3
    )


def test_time_uncertainty_at_fixed_median_helps_only_a_losing_candidate():
    # median o = 0.5: T = 0.84 - 0.15 = 0.69 loses to T* = 0.76, and only a
    # faster outcome can win, so a wider time raises EI_T
    losing = [_ei_t_at(np.log(0.5 * 2.0), s) for s in SDS]
    assert np.all(np.diff(losing) > 0)
    assert losing[-1] > 100 * losing[0]
    # median o = 0.05: T = 0.825 wins clearly; a wider time adds slow
    # outcomes that lose more than the fast ones gain
    winning = [_ei_t_at(np.log(0.05 * 2.0), s) for s in SDS]
    assert np.all(np.diff(winning) < 0)
    # neither ever exceeds the EI of the score alone
    assert max(losing + winning) < _gaussian_ei(0.84, 0.02, 0.76)


def test_pending_points_condition_both_gps(surrogates):
    loss_s, time_s, loss, _, U = surrogates
    pending = U[:2]
    with single_blas_thread():
        members = _members(time_s, pending, 4, np.random.default_rng(0))
        assert len(members) == time_s.n_models
        for post, log_t_f in members:
            assert log_t_f.shape == (2, 4)
            # the conditioned time GP is no longer unsure at the pending points
            _, var = post.predict(pending)
            assert np.all(var < 10 * post.noise_var + 1e-6)
        kwargs = dict(tradeoff_best=float(np.max(-loss)), time_scale=2.05, alpha=2.0)
        alone = make_tradeoff_acquisition(loss_s, time_s, **kwargs)(U)
        batch = make_tradeoff_acquisition(
            loss_s, time_s, X_pending=pending, rng=np.random.default_rng(0), **kwargs
        )(U)
    # a pending point is worth much less once its outcome is fantasised
    assert np.all(batch[:2] < alone[:2] - np.log(10))


@pytest.mark.parametrize("n_pending", [0, 2])
def test_the_upper_bound_is_never_below_the_acquisition(surrogates, n_pending):
    loss_s, time_s, loss, log_t, U = surrogates
    rng = np.random.default_rng(n_pending)
    U = np.vstack([U, rng.random((500, 2))])
    pending = rng.random((n_pending, 2)) if n_pending else None
    for alpha, scale in [(0.05, 1.0), (0.3, 0.5), (2.0, 0.1)]:
        # the incumbent as the search has it: the best trade-off observed
        best = float(np.max(-loss - alpha * np.exp(log_t) / scale))
        acq = make_tradeoff_acquisition(
            loss_s,
            time_s,
            tradeoff_best=best,
            time_scale=scale,
            alpha=alpha,
            X_pending=pending,
            rng=np.random.default_rng(0),
        )
        with single_blas_thread():
            value, bound = acq(U), acq.upper_bound(U)
        assert np.all(bound >= value)
        # and it is near enough to prune: within a factor of 20 (in EI) at
        # the best tenth of the candidates
        top = value >= np.quantile(value, 0.9)
        assert np.median(bound[top] - value[top]) < math.log(20.0)


def test_the_bound_leaves_the_proposal_unchanged(surrogates):
    loss_s, time_s, loss, log_t, U = surrogates
    best = float(np.max(-loss - 0.3 * np.exp(log_t)))
    for n_pending, snap in [(0, None), (1, None), (0, lambda V: np.round(V * 8) / 8)]:
        acq = make_tradeoff_acquisition(
            loss_s,
            time_s,
            tradeoff_best=best,
            time_scale=1.0,
            alpha=0.3,
            X_pending=U[:n_pending] if n_pending else None,
            rng=np.random.default_rng(0),
        )
        kw = dict(snap=snap, seeds=U[:3], exclude=U[3:8], n_candidates=1024)
        # maximize uses a bound only when given one
        plain = maximize(acq, 2, rng=np.random.default_rng(1), **kw)
        bounded = maximize(
            acq, 2, rng=np.random.default_rng(1), bound=acq.upper_bound, **kw
        )
        assert bounded[0].tolist() == plain[0].tolist()
        assert bounded[1] == plain[1]
