"""The shared numerical kernels."""

import numpy as np
import pytest
from scipy import stats
from threadpoolctl import threadpool_info

from skbayes_search._numerics import (
    cholesky_jitter,
    cholesky_psd,
    gauss_hermite,
    log_mean_exp,
    single_blas_thread,
    sobol_points,
    solve_lower,
    standard_normal_draws,
)


def _blas_threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_single_blas_thread_limits_and_nests():
    with single_blas_thread():
        assert all(n == 1 for n in _blas_threads())
        with single_blas_thread():  # nested: a no-op, still one thread
            assert all(n == 1 for n in _blas_threads())
        assert all(n == 1 for n in _blas_threads())


def test_solve_lower_matches_a_dense_solve():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((6, 6))
    L = np.linalg.cholesky(A @ A.T + 6 * np.eye(6))
    B = rng.standard_normal((6, 3))
    np.testing.assert_allclose(
        solve_lower(np.asfortranarray(L), B), np.linalg.solve(L, B)
    )
    np.testing.assert_allclose(solve_lower(L, B[:, 0]), np.linalg.solve(L, B[:, 0]))


def test_cholesky_jitter_adds_jitter_only_when_needed():
    K = np.array([[2.0, 1.0], [1.0, 2.0]])
    L, jitter = cholesky_jitter(K)
    assert jitter == 0.0
    np.testing.assert_allclose(L @ L.T, K)
    singular = np.ones((3, 3))
    L, jitter = cholesky_jitter(singular)
    assert 0 < jitter < 1e-3
    np.testing.assert_allclose(L @ L.T, singular + jitter * np.eye(3), atol=1e-12)


def test_cholesky_jitter_refuses_non_finite_and_indefinite():
    with pytest.raises(np.linalg.LinAlgError, match="non-finite"):
        cholesky_jitter(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky_jitter(np.diag([1.0, -1.0]))


def test_cholesky_psd_falls_back_to_an_eigen_square_root():
    K = np.diag([1.0, -1.0])  # indefinite beyond any jitter tried
    L = cholesky_psd(K)
    np.testing.assert_allclose(L @ L.T, np.diag([1.0, 0.0]), atol=1e-12)


def test_gauss_hermite_integrates_normal_moments():
    nodes, weights = gauss_hermite(5)
    assert weights.sum() == pytest.approx(1.0)
    for k, moment in [(0, 1), (1, 0), (2, 1), (4, 3), (6, 15)]:
        assert (weights * nodes**k).sum() == pytest.approx(moment, abs=1e-9)
    with pytest.raises(ValueError, match="n_nodes"):
        gauss_hermite(0)


def test_log_mean_exp_is_stable():
    v = np.array([[1000.0, 1000.0], [-np.inf, -np.inf], [0.0, np.log(3.0)]])
    out = log_mean_exp(v, axis=1)
    assert out[0] == pytest.approx(1000.0)
    assert out[1] == -np.inf
    assert out[2] == pytest.approx(np.log(2.0))


def test_sobol_points_are_reproducible_prefixes():
    a = sobol_points(5, 3, np.random.default_rng(1))
    b = sobol_points(8, 3, np.random.default_rng(1))
    assert a.shape == (5, 3)
    np.testing.assert_array_equal(a, b[:5])
    assert np.all((a >= 0) & (a < 1))


def test_standard_normal_draws_look_normal():
    z = standard_normal_draws(1024, 2, np.random.default_rng(0))
    assert z.shape == (1024, 2) and np.all(np.isfinite(z))
    assert stats.kstest(z[:, 0], "norm").pvalue > 0.01
