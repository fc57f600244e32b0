"""Tests of the entropy-search maths used by FABOLAS."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from skbayes_search._numerics import log_mean_exp
from skbayes_search.acquisition import log_ei
from skbayes_search.acquisition.entropy import (
    RepresenterPosterior,
    entropy,
    entropy_search_per_cost,
    fabolas_acquisition,
    gauss_hermite,
    information_gain,
    pmin_monte_carlo,
    rank_one_update,
    representers_by_ei,
    sample_representers,
    standard_normal_draws,
)
from skbayes_search.gp import GPSurrogate


def _sqexp(A, B, length=0.3):
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-0.5 * d2 / length**2)


def _gp_posterior(X, y, Xs, noise):
    """Plain numpy GP posterior (zero mean, unit amplitude)."""
    K = _sqexp(X, X) + noise * np.eye(len(X))
    Ks = _sqexp(X, Xs)
    mean = Ks.T @ np.linalg.solve(K, y)
    cov = _sqexp(Xs, Xs) - Ks.T @ np.linalg.solve(K, Ks)
    return mean, cov


@pytest.fixture
def problem():
    """A 1-D GP posterior on 5 observations, 12 representers, 1 candidate."""
    rng = np.random.default_rng(0)
    X = rng.random((5, 1))
    y = np.sin(6 * X[:, 0])
    Z = np.linspace(0, 1, 12)[:, None]
    x = np.array([[0.37]])
    noise = 1e-2
    return X, y, Z, x, noise


def test_rank_one_update_equals_refit(problem):
    X, y, Z, x, noise = problem
    both = np.vstack([Z, x])
    mean, cov = _gp_posterior(X, y, both, noise)
    m_z, K_z = mean[:-1], cov[:-1, :-1]
    c = cov[:-1, -1]
    v = cov[-1, -1] + noise
    y_new = 0.8
    w = (y_new - mean[-1]) / np.sqrt(v)
    m_upd, K_upd = rank_one_update(m_z, K_z, c, v, w)

    # the same posterior computed from scratch with the observation appended
    m_ref, K_ref = _gp_posterior(np.vstack([X, x]), np.append(y, y_new), Z, noise)
    np.testing.assert_allclose(m_upd, m_ref, atol=1e-8)
    np.testing.assert_allclose(K_upd, K_ref, atol=1e-8)


def test_fantasy_samples_follow_rank_one_update(problem):
    X, y, Z, x, noise = problem
    mean, cov = _gp_posterior(X, y, np.vstack([Z, x]), noise)
    m_z, K_z, c = mean[:-1], cov[:-1, :-1], cov[:-1, -1]
    v = cov[-1, -1] + noise
    normals = standard_normal_draws(2**15, len(Z) + 1, np.random.default_rng(1))
    post = RepresenterPosterior(m_z, K_z, normals)
    w = -2.5
    F = post.fantasy_samples(c, v, w)
    m_upd, K_upd = rank_one_update(m_z, K_z, c, v, w)
    np.testing.assert_allclose(F.mean(axis=0), m_upd, atol=0.02)
    np.testing.assert_allclose(np.cov(F.T), K_upd, atol=0.02)
    # the update really changed things (else the test above is vacuous)
    assert np.abs(m_upd - m_z).max() > 0.2
    assert np.abs(K_upd - K_z).max() > 0.01


def test_pmin_sums_to_one_and_concentrates():
    n = 8
    mean = np.zeros(n)
    mean[3] = -6.0
    cov = 0.5 * np.eye(n) + 0.5
    normals = standard_normal_draws(512, n + 1, np.random.default_rng(0))
    post = RepresenterPosterior(mean, cov, normals)
    assert post.pmin_.sum() == pytest.approx(1.0)
    assert post.pmin_[3] > 0.99
    # symmetric representers share the mass evenly
    post = RepresenterPosterior(np.zeros(n), np.eye(n), normals)
    assert post.pmin_.sum() == pytest.approx(1.0)
    assert np.all(np.abs(post.pmin_ - 1 / n) < 0.05)
    assert post.entropy_ == pytest.approx(np.log(n), abs=0.05)
    np.testing.assert_allclose(pmin_monte_carlo(np.array([[1.0, 0.0, 2.0]])), [0, 1, 0])


def test_information_gain_zero_where_certain_larger_where_uncertain(problem):
    X, y, Z, _, _ = problem
    # an observed point of a (nearly) noise-free model has a tiny predictive
    # variance; 0.45 lies in the widest gap between observations
    cand = np.array([X[0], [0.45]])
    mean, cov = _gp_posterior(X, y, np.vstack([Z, cand]), 1e-8)
    n = len(Z)
    normals = standard_normal_draws(1024, n + 1, np.random.default_rng(2))
    var_f = np.diag(cov)[n:]
    assert var_f[0] < 1e-6 < 1e-3 < var_f[1]
    ig = information_gain(mean[:n], cov[:n, :n], cov[:n, n:].T, var_f + 1e-2, normals)
    assert abs(ig[0]) < 2e-3
    assert ig[1] > 0.05
    # zero covariance with the representers: exactly no information
    ig0 = information_gain(
        mean[:n], cov[:n, :n], np.zeros((1, n)), np.array([1.0]), normals
    )
    assert ig0[0] == 0.0


def test_relative_entropy_is_the_gain_plus_a_constant(problem):
    # E[KL(p' || u)] = log N - E[H(p')] = gain + (log N - H(p)), the same
    # offset for every candidate; a candidate that cannot move f(Z) keeps it
    X, y, Z, _, noise = problem
    cands = np.array([[0.1], [0.37], [0.95]])
    n = len(Z)
    mean, cov = _gp_posterior(X, y, np.vstack([Z, cands]), noise)
    normals = standard_normal_draws(512, n + 1, np.random.default_rng(5))
    post = RepresenterPosterior(mean[:n], cov[:n, :n], normals)
    cross, var_y = cov[n:, :n], np.diag(cov)[n:] + noise
    kl = post.relative_entropy(cross, var_y)
    gain = post.information_gain(cross, var_y)
    offset = np.log(n) - post.entropy_
    np.testing.assert_allclose(kl - gain, offset, atol=1e-12)
    assert offset > 0 and np.all(kl >= 0)
    zero = post.relative_entropy(np.zeros((1, n)), np.array([1.0]))
    assert zero[0] == pytest.approx(offset, abs=1e-12)
    # on the leading draws, the offset is that of the smaller estimate
    lead = post.relative_entropy(cross, var_y, n_samples=64)
    small = RepresenterPosterior(mean[:n], cov[:n, :n], normals[:64])
    np.testing.assert_allclose(lead, small.relative_entropy(cross, var_y))


def test_information_gain_matches_brute_force(problem):
    """Vectorised CRN estimate vs fresh sampling from each updated posterior."""
    X, y, Z, _, noise = problem
    cands = np.array([[0.1], [0.37], [0.6], [0.95]])
    n = len(Z)
    mean, cov = _gp_posterior(X, y, np.vstack([Z, cands]), noise)
    m_z, K_z = mean[:n], cov[:n, :n]
    C = cov[:n, n:].T
    v = np.diag(cov)[n:] + noise
    normals = standard_normal_draws(4096, n + 1, np.random.default_rng(3))
    ig = information_gain(m_z, K_z, C, v, normals, n_quadrature=7)

    rng = np.random.default_rng(4)
    nodes, weights = gauss_hermite(7)
    h0 = entropy(pmin_monte_carlo(rng.multivariate_normal(m_z, K_z, 20000)))
    brute = []
    for c, vc in zip(C, v):
        h = 0.0
        for w, wt in zip(nodes, weights):
            m1, K1 = rank_one_update(m_z, K_z, c, vc, w)
            draws = rng.multivariate_normal(m1, K1, 20000, method="eigh")
            h += wt * entropy(pmin_monte_carlo(draws))
        brute.append(h0 - h)
    np.testing.assert_allclose(ig, brute, atol=0.06)
    assert np.ptp(brute) > 0.1  # the candidates really differ


def test_information_gain_on_leading_draws_equals_a_smaller_posterior(problem):
    X, y, Z, x, noise = problem
    cand = np.vstack([x, [[0.05]], [[0.9]]])
    mean, cov = _gp_posterior(X, y, np.vstack([Z, cand]), noise)
    n = len(Z)
    cross, var_y = cov[n:, :n], np.diag(cov)[n:] + noise
    normals = standard_normal_draws(1024, n + 1, np.random.default_rng(3))
    post = RepresenterPosterior(mean[:n], cov[:n, :n], normals)
    small = RepresenterPosterior(mean[:n], cov[:n, :n], normals[:128])
    np.testing.assert_allclose(
        post.information_gain(cross, var_y, n_samples=128),
        small.information_gain(cross, var_y),
        rtol=1e-12,
        atol=1e-12,
    )
    # still exactly zero where the observation cannot move f(Z)
    zero = post.information_gain(np.zeros((1, n)), np.array([1.0]), n_samples=128)
    assert zero[0] == pytest.approx(0.0, abs=1e-12)
    # the screening estimate is close to the full one on this problem
    np.testing.assert_allclose(
        post.information_gain(cross, var_y, n_samples=128),
        post.information_gain(cross, var_y),
        atol=0.1,
    )
    with pytest.raises(ValueError, match="n_samples"):
        post.information_gain(cross, var_y, n_samples=0)


def test_information_gain_validation():
    post = RepresenterPosterior(np.zeros(3), np.eye(3), np.zeros((4, 4)))
    with pytest.raises(ValueError, match="var_y"):
        post.information_gain(np.zeros((1, 3)), np.array([0.0]))
    with pytest.raises(ValueError, match="columns"):
        post.information_gain(np.zeros((1, 2)), np.array([1.0]))
    with pytest.raises(ValueError, match="normals"):
        RepresenterPosterior(np.zeros(3), np.eye(3), np.zeros((4, 3)))


def test_gauss_hermite_moments():
    nodes, weights = gauss_hermite(5)
    assert weights.sum() == pytest.approx(1.0)
    assert np.sum(weights * nodes**2) == pytest.approx(1.0)
    assert np.sum(weights * nodes**4) == pytest.approx(3.0)


def test_sample_representers_includes_and_prefers_heavy_points():
    rng = np.random.default_rng(0)
    log_w = np.log(np.r_[np.full(10, 100.0), np.full(90, 1.0)])
    hits = np.zeros(100)
    for _ in range(200):
        idx = sample_representers(log_w, 10, rng, include=[55])
        assert idx[0] == 55
        assert len(set(idx)) == 10
        hits[idx] += 1
    # the ten heavy points are drawn far more often than the light ones
    assert hits[:10].mean() > 10 * hits[10:].mean()
    idx = sample_representers(np.r_[0.0, -np.inf, 0.0], 5, rng)
    assert sorted(idx[:2]) == [0, 2]


def test_fabolas_acquisition_trades_gain_against_cost():
    gain = np.array([[1.0, 1.0, 2.0], [1.0, 1.0, 2.0]])
    log_cost = np.log([[1.0, 10.0, 10.0]])
    a = fabolas_acquisition(gain, log_cost)
    np.testing.assert_allclose(a, [1.0, 0.1, 0.2])
    # a large overhead makes cost differences negligible: the gain decides
    a = fabolas_acquisition(gain, log_cost, overhead=1000.0)
    assert np.argmax(a) == 2
    with pytest.raises(ValueError, match="overhead"):
        fabolas_acquisition(gain, log_cost, overhead=-1.0)


# ----------------------------------------------------------------------
# the acquisition over a surrogate's posteriors
# ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def surrogate():
    """A two-sample GP on a 1-D loss with its minimum near 0.3."""
    X = np.linspace(0.0, 1.0, 7)[:, None]
    y = 2.0 + 3.0 * (X[:, 0] - 0.3) ** 2
    gp = GPSurrogate(n_samples=2, n_burn=20, random_state=0)
    return gp.fit(X, y), X


def test_representers_by_ei_weights_by_mean_ei_over_the_posteriors(surrogate):
    gp, X = surrogate
    pool = np.linspace(0.0, 1.0, 60)[:, None]
    idx = representers_by_ei(
        gp.posteriors, pool, X[2:3], 10, np.random.default_rng(1), include=[7]
    )
    # the same draw from the weights computed by hand
    log_eis = []
    for post in gp.posteriors:
        mean, var = post.predict(pool)
        log_eis.append(log_ei(mean, np.sqrt(var), post.predict(X[2:3])[0][0]))
    log_w = log_mean_exp(np.vstack(log_eis), axis=0)
    expected = sample_representers(log_w, 10, np.random.default_rng(1), include=[7])
    np.testing.assert_array_equal(idx, expected)
    assert idx[0] == 7 and len(set(idx)) == 10
    # points near the minimum are drawn far more often than the far end
    rng = np.random.default_rng(2)
    hits = np.zeros(60)
    for _ in range(100):
        hits[representers_by_ei(gp.posteriors, pool, X[2:3], 5, rng)] += 1
    assert hits[12:24].mean() > 3 * hits[48:].mean()


@pytest.mark.parametrize("information", ["relative_entropy", "entropy_reduction"])
def test_entropy_search_per_cost_is_the_mean_information_per_second(
    surrogate, information
):
    gp, _ = surrogate
    Z = np.linspace(0.0, 1.0, 9)[:, None]
    U = np.array([[0.05], [0.3], [0.62], [0.95]])

    def log_cost(V):
        return np.log(1.0 + V[:, 0])[None, :]

    screen, precise = entropy_search_per_cost(
        gp.posteriors,
        Z,
        log_cost,
        np.random.default_rng(3),
        overhead=0.5,
        information=information,
        n_samples=256,
        n_screen=64,
    )
    normals = standard_normal_draws(256, len(Z) + 1, np.random.default_rng(3))
    gains, gains_screen = [], []
    for post in gp.posteriors:
        rep = RepresenterPosterior(*post.predict(Z, full_cov=True), normals)
        cross = post.cross_cov(U, Z)
        var_y = post.predict(U)[1] + post.noise_var
        measure = getattr(
            rep,
            "relative_entropy"
            if information == "relative_entropy"
            else "information_gain",
        )
        gains.append(measure(cross, var_y))
        gains_screen.append(measure(cross, var_y, n_samples=64))
    expected = fabolas_acquisition(np.vstack(gains), log_cost(U), 0.5)
    np.testing.assert_allclose(precise(U), expected, rtol=1e-9, atol=1e-12)
    expected = fabolas_acquisition(np.vstack(gains_screen), log_cost(U), 0.5)
    np.testing.assert_allclose(screen(U), expected, rtol=1e-9, atol=1e-12)
    assert np.all(expected[[0, 3]] > 0)  # informative candidates


def test_the_paper_form_favours_cheap_candidates_more(surrogate):
    # eq. 7 as written adds log N - H(p_min) to every candidate's information,
    # so divided by a cost it moves the choice towards the cheap end
    gp, _ = surrogate
    Z = np.linspace(0.0, 1.0, 9)[:, None]
    U = np.linspace(0.0, 1.0, 41)[:, None]

    def log_cost(V):  # cost rises steeply towards U = 1
        return 4.0 * V[:, 0][None, :]

    def argmax(information):
        _, precise = entropy_search_per_cost(
            gp.posteriors,
            Z,
            log_cost,
            np.random.default_rng(0),
            information=information,
            n_samples=256,
        )
        return int(np.argmax(precise(U)))

    assert argmax("relative_entropy") < argmax("entropy_reduction")
    with pytest.raises(ValueError, match="information"):
        entropy_search_per_cost(
            gp.posteriors, Z, log_cost, np.random.default_rng(0), information="kl"
        )


def test_entropy_search_per_cost_marks_unaffordable_and_ignores_threads(surrogate):
    gp, _ = surrogate
    Z = np.linspace(0.0, 1.0, 6)[:, None]
    U = np.array([[0.1], [0.5], [0.9]])
    calls = []

    def cost(V):
        calls.append(len(V))
        return 10.0 * V[:, 0]

    def acquisition(max_cost, pmap=map):
        return entropy_search_per_cost(
            gp.posteriors,
            Z,
            lambda V: np.zeros((1, len(V))),
            np.random.default_rng(4),
            cost=cost,
            max_cost=max_cost,
            n_samples=128,
            pmap=pmap,
        )

    free = acquisition(np.inf)[1](U)
    assert not calls  # no budget: the cost is never computed
    bounded = acquisition(5.0)[1](U)
    np.testing.assert_array_equal(
        bounded, np.where(10.0 * U[:, 0] > 5.0, -np.inf, free)
    )
    with ThreadPoolExecutor(2) as pool:
        threaded = acquisition(5.0, pool.map)[1](U)
    np.testing.assert_array_equal(threaded, bounded)
