"""Exact Gaussian-process regression with a constant mean and Gaussian noise.

Only Cholesky factors and triangular solves are used (the covariance matrix is
never inverted). Conditioning on fantasised observations extends the Cholesky
factor by a block instead of refactorising, which is what makes Monte Carlo
acquisitions over pending points cheap.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._numerics import cholesky_jitter, solve_lower
from .kernels import Kernel

__all__ = ["GaussianProcess"]

_LOG_2PI = np.log(2.0 * np.pi)
# smallest posterior variance reported (standardised units); keeps std > 0 so
# acquisitions never divide by zero at observed inputs
_VAR_FLOOR = 1e-12


class GaussianProcess:
    """Exact GP regression model for given hyperparameters.

    The hyperparameter vector is ``theta = [mean, log_amplitude,
    log_noise_var, *kernel_params]``: ``y = mean + f(x) + eps`` with
    ``f ~ GP(0, amplitude * kernel(x, x'))`` and ``eps ~ N(0, noise_var)``.

    ``y`` may have several columns (targets sharing inputs and
    hyperparameters); Monte Carlo fantasies use this to share one Cholesky
    factor across all fantasised outcomes.

    The methods do not limit BLAS threads themselves (a limit per call would
    cost more than the small solves it wraps); call them inside
    :func:`~skbayes_search._numerics.single_blas_thread` when used in a loop.

    Parameters
    ----------
    kernel : Kernel
        Correlation kernel.

    Attributes
    ----------
    X_ : ndarray of shape (n, d)
    y_ : ndarray of shape (n,) or (n, n_targets)
    theta_ : ndarray
    L_ : ndarray of shape (n, n)
        Lower Cholesky factor of ``amplitude * K + (noise_var + jitter_) * I``.
    z_ : ndarray of shape (n,) or (n, n_targets)
        ``L_^{-1} (y_ - mean)``.
    jitter_ : float
        Diagonal jitter that the factorisation needed.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import GaussianProcess, Matern52, initial_hyper
    >>> X = np.linspace(0, 1, 5)[:, None]
    >>> kernel = Matern52().set_n_dims(1)
    >>> gp = GaussianProcess(kernel).fit(X, np.sin(6 * X[:, 0]), initial_hyper(kernel))
    >>> mean, var = gp.predict(X)
    >>> mean.shape, bool(np.all(var < 0.05))
    ((5,), True)
    """

    def __init__(self, kernel: Kernel):
        self.kernel = kernel

    def __repr__(self) -> str:
        return f"GaussianProcess({self.kernel!r})"

    # -- hyperparameters -------------------------------------------------------
    @property
    def mean_(self) -> float:
        return float(self.theta_[0])

    @property
    def amplitude_(self) -> float:
        return float(np.exp(self.theta_[1]))

    @property
    def noise_var_(self) -> float:
        return float(np.exp(self.theta_[2]))

    @property
    def kernel_theta_(self) -> np.ndarray:
        return self.theta_[3:]

    def _k(self, X1: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        return self.amplitude_ * self.kernel(self.kernel_theta_, X1, X2)

    # -- fitting ---------------------------------------------------------------
    def fit(self, X: Any, y: Any, theta: Any) -> GaussianProcess:
        """Factorise the training covariance for fixed hyperparameters.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,) or (n, n_targets)
        theta : array-like of shape (3 + kernel.n_params,)

        Returns
        -------
        self : GaussianProcess
        """
        X = np.atleast_2d(np.asarray(X, dtype=float))
        y = np.asarray(y, dtype=float)
        theta = np.asarray(theta, dtype=float).ravel()
        self.kernel.set_n_dims(X.shape[1])
        if theta.size != 3 + self.kernel.n_params:
            raise ValueError(
                f"theta has {theta.size} entries, expected "
                f"3 + {self.kernel.n_params} for {self.kernel!r}."
            )
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}.")
        self.X_, self.y_, self.theta_ = X, y, theta
        K = self._k(X)
        K[np.diag_indices_from(K)] += self.noise_var_
        L, self.jitter_ = cholesky_jitter(K)
        # Fortran order lets LAPACK use L without copying it on every solve
        self.L_ = np.asfortranarray(L)
        self.z_ = solve_lower(self.L_, y - self.mean_)
        return self

    # -- prediction ------------------------------------------------------------
    def _solve_cross(self, Xs: np.ndarray) -> np.ndarray:
        # k(Xs, X) is C-ordered, so its transpose is Fortran-ordered: no copy
        Ks = self._k(Xs, self.X_).T
        return solve_lower(self.L_, Ks)

    def predict(self, Xs: Any, full_cov: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance (or covariance) of the latent ``f``.

        Parameters
        ----------
        Xs : array-like of shape (m, d)
        full_cov : bool, default=False
            Return the joint ``(m, m)`` covariance instead of the variances.

        Returns
        -------
        mean : ndarray of shape (m,) or (m, n_targets)
        var_or_cov : ndarray of shape (m,) or (m, m)
        """
        Xs = np.atleast_2d(np.asarray(Xs, dtype=float))
        V = self._solve_cross(Xs)
        mean = self.mean_ + V.T @ self.z_
        if full_cov:
            cov = self._k(Xs) - V.T @ V
            cov = 0.5 * (cov + cov.T)
            return mean, cov
        prior = self.amplitude_ * self.kernel.diag(self.kernel_theta_, Xs)
        var = prior - np.einsum("ij,ij->j", V, V)
        return mean, np.maximum(var, _VAR_FLOOR)

    def cross_cov(self, X1: Any, X2: Any) -> np.ndarray:
        """Posterior covariance ``Cov[f(X1), f(X2)]``, shape ``(n1, n2)``."""
        X1 = np.atleast_2d(np.asarray(X1, dtype=float))
        X2 = np.atleast_2d(np.asarray(X2, dtype=float))
        V1 = self._solve_cross(X1)
        V2 = self._solve_cross(X2)
        return self._k(X1, X2) - V1.T @ V2

    def log_marginal_likelihood(self) -> float:
        """Log evidence ``log p(y | X, theta)`` (summed over targets)."""
        n = self.L_.shape[0]
        n_targets = 1 if self.z_.ndim == 1 else self.z_.shape[1]
        logdet = 2.0 * np.sum(np.log(np.diag(self.L_)))
        return float(
            -0.5 * np.sum(self.z_**2) - n_targets * (0.5 * logdet + 0.5 * n * _LOG_2PI)
        )

    # -- fantasies -------------------------------------------------------------
    def condition(self, Xf: Any, yf: Any) -> GaussianProcess:
        """A new GP that also observed ``yf`` at ``Xf`` (hyperparameters fixed).

        The Cholesky factor is extended by a ``k``-row block (``k = len(Xf)``)
        at ``O(n^2 k)`` cost instead of refactorising. ``yf`` of shape
        ``(k, T)`` gives a ``T``-target GP (``T`` fantasies sharing one factor);
        a single-target model is then broadcast to ``T`` targets.

        Parameters
        ----------
        Xf : array-like of shape (k, d)
        yf : array-like of shape (k,) or (k, T)

        Returns
        -------
        GaussianProcess
            Fitted model; ``self`` is unchanged.
        """
        Xf = np.atleast_2d(np.asarray(Xf, dtype=float))
        yf = np.asarray(yf, dtype=float)
        if yf.shape[0] != Xf.shape[0]:
            raise ValueError(f"Xf has {Xf.shape[0]} rows but yf has {yf.shape[0]}.")
        y_old, z_old = self.y_, self.z_
        if yf.ndim == 2 and y_old.ndim == 1:
            T = yf.shape[1]
            y_old = np.repeat(y_old[:, None], T, axis=1)
            z_old = np.repeat(z_old[:, None], T, axis=1)
        elif yf.ndim == 1 and y_old.ndim == 2:
            yf = np.repeat(yf[:, None], y_old.shape[1], axis=1)
        elif yf.ndim == 2 and yf.shape[1] != y_old.shape[1]:
            raise ValueError("yf must have as many columns as the model's y.")

        n, k = self.L_.shape[0], Xf.shape[0]
        K12 = self._k(self.X_, Xf)
        K22 = self._k(Xf)
        # the same jitter as the base factor, so the result equals a refit
        K22[np.diag_indices(k)] += self.noise_var_ + self.jitter_
        L21T = solve_lower(self.L_, K12)
        S = K22 - L21T.T @ L21T
        S = 0.5 * (S + S.T)
        L22, extra = cholesky_jitter(S)
        L = np.zeros((n + k, n + k), order="F")
        L[:n, :n] = self.L_
        L[n:, :n] = L21T.T
        L[n:, n:] = L22
        rhs = yf - self.mean_ - L21T.T @ z_old
        z2 = solve_lower(L22, rhs)

        new = GaussianProcess(self.kernel)
        new.X_ = np.vstack([self.X_, Xf])
        new.y_ = np.concatenate([y_old, yf], axis=0)
        new.theta_ = self.theta_
        new.L_ = L
        new.jitter_ = self.jitter_ + extra
        new.z_ = np.concatenate([z_old, z2], axis=0)
        return new

    def sample(
        self,
        Xs: Any,
        n: int,
        rng: np.random.Generator,
        noise: bool = False,
    ) -> np.ndarray:
        """Joint posterior draws at ``Xs``.

        Parameters
        ----------
        Xs : array-like of shape (m, d)
        n : int
            Number of draws.
        rng : numpy.random.Generator
        noise : bool, default=False
            Draw noisy observations ``y`` instead of the latent ``f``.

        Returns
        -------
        ndarray of shape (n, m) (or (n, m, n_targets) for a multi-target GP)
        """
        mean, cov = self.predict(Xs, full_cov=True)
        if noise:
            cov[np.diag_indices_from(cov)] += self.noise_var_
        Lc, _ = cholesky_jitter(cov)
        eps = rng.standard_normal((n, *mean.shape))
        return mean[None] + np.einsum("ij,nj...->ni...", Lc, eps)
