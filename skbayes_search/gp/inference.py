"""Hyperpriors, slice sampling and MAP estimation of GP hyperparameters.

The full hyperparameter vector is ``theta = [mean, log_amplitude,
log_noise_var, *kernel_params]`` (see :class:`~skbayes_search.gp.model.
GaussianProcess`), for outputs standardised to zero mean and unit variance.
Priors (after Spearmint; the reasoning is in ``doc/design/core.rst``):

- ``mean ~ N(0, 2^2)`` truncated to ``[-10, 10]`` (broad for standardised y);
- amplitude log-normal: ``log_amplitude ~ N(0, 1)`` truncated to ``[-10, 10]``;
- noise variance ``nu``: horseshoe with scale ``0.1``, using the usual
  closed-form surrogate ``p(nu) ~ log(1 + 3 (0.1 / nu)^2)``; we sample
  ``log nu``, so the Jacobian ``nu`` is included; truncated to
  ``nu in [1e-6, e^2]`` (the floor keeps near-duplicate inputs well
  conditioned);
- kernel parameters: whatever ``kernel.log_prior`` says (Matern52: top-hat
  on the log length scales).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.linalg import cho_solve, lapack
from scipy.optimize import minimize

from .._numerics import cholesky_jitter, single_blas_thread, solve_lower
from .kernels import Kernel

__all__ = [
    "LogPosterior",
    "fit_map",
    "hyper_bounds",
    "initial_hyper",
    "log_hyperprior",
    "sample_hyperprior",
    "slice_sample",
]

MEAN_PRIOR_SD = 2.0
LOG_AMP_PRIOR_SD = 1.0
NOISE_HORSESHOE_SCALE = 0.1
_BASE_BOUNDS = [(-10.0, 10.0), (-10.0, 10.0), (float(np.log(1e-6)), 2.0)]
_LOG_2PI = np.log(2.0 * np.pi)


def hyper_bounds(kernel: Kernel) -> list[tuple[float, float]]:
    """Box of the full hyperparameter vector for ``kernel``.

    Examples
    --------
    >>> from skbayes_search.gp import Matern52, hyper_bounds
    >>> len(hyper_bounds(Matern52().set_n_dims(2)))  # mean, amplitude, noise, 2 scales
    5
    """
    return list(_BASE_BOUNDS) + list(kernel.bounds)


def initial_hyper(kernel: Kernel) -> np.ndarray:
    """Default starting point: zero mean, unit amplitude, small noise.

    Examples
    --------
    >>> from skbayes_search.gp import Matern52, initial_hyper
    >>> initial_hyper(Matern52().set_n_dims(2)).shape
    (5,)
    """
    return np.concatenate([[0.0, 0.0, np.log(1e-2)], kernel.initial_theta()])


def sample_hyperprior(kernel: Kernel, rng: np.random.Generator) -> np.ndarray:
    """A random starting point for MAP restarts (roughly from the priors).

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import Matern52, log_hyperprior, sample_hyperprior
    >>> kernel = Matern52().set_n_dims(2)
    >>> theta = sample_hyperprior(kernel, np.random.default_rng(0))
    >>> bool(np.isfinite(log_hyperprior(theta, kernel)))
    True
    """
    base = np.array(
        [
            rng.normal(0.0, 0.5),
            rng.normal(0.0, LOG_AMP_PRIOR_SD),
            rng.uniform(np.log(1e-6), np.log(1e-1)),
        ]
    )
    return np.concatenate([base, kernel.sample_theta(rng)])


def _horseshoe_log_noise(log_nu: float) -> tuple[float, float]:
    # log p(log nu) = log log1p(3 s^2 / nu^2) + log nu, and its derivative
    # scalar maths: this runs once per MCMC step
    a = 3.0 * NOISE_HORSESHOE_SCALE**2 * math.exp(-2.0 * log_nu)
    lg = math.log1p(a)
    value = math.log(lg) + log_nu
    grad = 1.0 - 2.0 * a / ((1.0 + a) * lg)
    return value, grad


def log_hyperprior(theta: np.ndarray, kernel: Kernel) -> float:
    """Log prior density of the full hyperparameter vector (``-inf`` outside).

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import Matern52, initial_hyper, log_hyperprior
    >>> kernel = Matern52().set_n_dims(1)
    >>> theta = initial_hyper(kernel)
    >>> bool(np.isfinite(log_hyperprior(theta, kernel)))
    True
    >>> theta[2] = 5.0  # noise variance e^5, above its bound
    >>> log_hyperprior(theta, kernel)
    -inf
    """
    theta = np.asarray(theta, dtype=float)
    mean, log_amp, log_nu = theta[:3].tolist()
    for v, (lo, hi) in zip((mean, log_amp, log_nu), _BASE_BOUNDS):
        if not lo <= v <= hi:
            return -np.inf
    lp = -0.5 * (mean / MEAN_PRIOR_SD) ** 2
    lp += -0.5 * (log_amp / LOG_AMP_PRIOR_SD) ** 2
    lp += _horseshoe_log_noise(log_nu)[0]
    return float(lp + kernel.log_prior(theta[3:]))


def log_hyperprior_grad(theta: np.ndarray, kernel: Kernel) -> np.ndarray:
    """Gradient of :func:`log_hyperprior` inside the bounds.

    Examples
    --------
    >>> from skbayes_search.gp import Matern52, initial_hyper
    >>> from skbayes_search.gp.inference import log_hyperprior_grad
    >>> kernel = Matern52().set_n_dims(1)
    >>> log_hyperprior_grad(initial_hyper(kernel), kernel).shape
    (4,)
    """
    theta = np.asarray(theta, dtype=float)
    g = np.empty(theta.size)
    g[0] = -theta[0] / MEAN_PRIOR_SD**2
    g[1] = -theta[1] / LOG_AMP_PRIOR_SD**2
    g[2] = _horseshoe_log_noise(theta[2])[1]
    g[3:] = kernel.log_prior_grad(theta[3:])
    return g


class LogPosterior:
    """Unnormalised log posterior of the hyperparameters given ``(X, y)``.

    Caches what does not change between evaluations: theta-free kernel pieces
    (``kernel.precompute``), the kernel matrix while only mean/amplitude/noise
    move, and the Cholesky factor while only the mean moves. A coordinate-wise
    slice sampler therefore pays for a kernel evaluation only when a kernel
    parameter changes, and nothing but O(n) work when the mean changes.

    Parameters
    ----------
    kernel : Kernel
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import LogPosterior, Matern52, initial_hyper
    >>> X = np.linspace(0, 1, 5)[:, None]
    >>> kernel = Matern52().set_n_dims(1)
    >>> log_posterior = LogPosterior(kernel, X, np.sin(6 * X[:, 0]))
    >>> value, grad = log_posterior.value_and_grad(initial_hyper(kernel))
    >>> bool(np.isfinite(value)), grad.shape
    (True, (4,))
    """

    def __init__(self, kernel: Kernel, X: np.ndarray, y: np.ndarray):
        self.kernel = kernel
        self.X = np.atleast_2d(np.asarray(X, dtype=float))
        self.y = np.asarray(y, dtype=float).ravel()
        self.n = self.y.size
        self._pre = kernel.precompute(self.X)
        self._rhs = np.asfortranarray(np.column_stack([self.y, np.ones(self.n)]))
        self._lo, self._hi = np.asarray(hyper_bounds(kernel), dtype=float).T
        self._kkey: bytes | None = None
        self._C: np.ndarray | None = None
        self._fkey: bytes | None = None
        self.n_evals = 0

    def _factor(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        kkey = theta[3:].tobytes()
        if kkey != self._kkey:
            self._C = self.kernel.evaluate(theta[3:], self._pre)
            self._kkey = kkey
            self._fkey = None
        fkey = theta[1:].tobytes()
        if fkey != self._fkey:
            K = math.exp(theta[1]) * self._C
            K.flat[:: self.n + 1] += math.exp(theta[2])
            L, _ = cholesky_jitter(K)
            self._Ly1 = solve_lower(L, self._rhs)
            self._L = L
            self._logdet = 2.0 * np.sum(np.log(np.diag(L)))
            self._fkey = fkey
        return self._L, self._Ly1, self._logdet

    def log_likelihood(self, theta: np.ndarray) -> float:
        """Log marginal likelihood (``-inf`` if the factorisation fails)."""
        theta = np.asarray(theta, dtype=float)
        self.n_evals += 1
        try:
            _, Ly1, logdet = self._factor(theta)
        except np.linalg.LinAlgError:
            return -np.inf
        z = Ly1[:, 0] - theta[0] * Ly1[:, 1]
        return float(-0.5 * (z @ z) - 0.5 * logdet - 0.5 * self.n * _LOG_2PI)

    def __call__(self, theta: np.ndarray) -> float:
        """Log prior + log likelihood (``-inf`` outside the prior support)."""
        theta = np.asarray(theta, dtype=float)
        if not ((theta >= self._lo).all() and (theta <= self._hi).all()):
            return -np.inf
        lp = log_hyperprior(theta, self.kernel)
        if not np.isfinite(lp):
            return -np.inf
        return lp + self.log_likelihood(theta)

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Log posterior and its analytic gradient."""
        theta = np.asarray(theta, dtype=float)
        value = self(theta)
        if not np.isfinite(value):
            return value, np.zeros(theta.size)
        L = self._L
        amp, nu = np.exp(theta[1]), np.exp(theta[2])
        alpha = cho_solve((L, True), self.y - theta[0], check_finite=False)
        # K^{-1} is needed for the trace terms of the gradient only (LAPACK
        # potri builds it from the Cholesky factor; only its lower triangle
        # is filled)
        Kinv, info = lapack.dpotri(L, lower=1)
        if info != 0:
            Kinv = cho_solve((L, True), np.eye(self.n), check_finite=False)
        else:
            Kinv = np.tril(Kinv) + np.tril(Kinv, -1).T
        W = np.outer(alpha, alpha) - Kinv
        g = np.empty(theta.size)
        g[0] = alpha.sum()
        g[1] = 0.5 * amp * np.sum(W * self._C)
        g[2] = 0.5 * nu * np.trace(W)
        if theta.size > 3:
            g[3:] = 0.5 * amp * self.kernel.gradient_dot(theta[3:], self._pre, W)
        g += log_hyperprior_grad(theta, self.kernel)
        return value, g


def _slice_1d(
    log_density: Callable[[np.ndarray], float],
    x: np.ndarray,
    logp: float,
    direction: np.ndarray,
    rng: np.random.Generator,
    max_steps_out: int,
) -> tuple[np.ndarray, float]:
    """One slice-sampling update of ``x`` along ``direction`` (Neal 2003).

    Stepping out with at most ``max_steps_out`` unit steps, then shrinkage.
    """
    log_y = logp - rng.exponential()
    left = -rng.uniform()
    right = left + 1.0
    j = int(rng.integers(max_steps_out + 1))
    k = max_steps_out - j
    while j > 0 and log_density(x + left * direction) > log_y:
        left -= 1.0
        j -= 1
    while k > 0 and log_density(x + right * direction) > log_y:
        right += 1.0
        k -= 1
    for _ in range(200):
        t = rng.uniform(left, right)
        x_new = x + t * direction
        lp_new = log_density(x_new)
        if lp_new > log_y:
            return x_new, lp_new
        if t < 0:
            left = t
        else:
            right = t
    # the interval collapsed onto x (only with a degenerate density): stay put
    return x, logp


def slice_sample(
    log_density: Callable[[np.ndarray], float],
    x0: Any,
    n_samples: int,
    *,
    rng: np.random.Generator,
    n_burn: int = 0,
    thin: int = 1,
    widths: float | Any = 1.0,
    method: str = "coordinate",
    max_steps_out: int = 10,
    logp0: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Univariate slice sampling with stepping out and shrinkage.

    One *sweep* is, for ``method="coordinate"``, one update of every
    coordinate (in a random order) and, for ``method="random"``, one update
    along a random direction (isotropic, scaled by ``widths``).

    Parameters
    ----------
    log_density : callable
        ``log_density(x) -> float``, unnormalised; ``-inf`` outside support.
    x0 : array-like of shape (d,)
        Starting state; must have finite log density.
    n_samples : int
        Number of samples returned.
    rng : numpy.random.Generator
    n_burn : int, default=0
        Sweeps discarded before the first kept sample.
    thin : int, default=1
        Sweeps between kept samples (the last kept sample is the chain's final
        state, so a later call can continue from ``samples[-1]``).
    widths : float or array-like of shape (d,), default=1.0
        Initial bracket width per coordinate.
    method : {"coordinate", "random"}, default="coordinate"
    max_steps_out : int, default=10
    logp0 : float, optional
        ``log_density(x0)`` if already known.

    Returns
    -------
    samples : ndarray of shape (n_samples, d)
    log_densities : ndarray of shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import slice_sample
    >>> samples, _ = slice_sample(
    ...     lambda x: -0.5 * float(x @ x), np.zeros(1), 2000,
    ...     rng=np.random.default_rng(0),
    ... )
    >>> round(float(samples.std()), 1)  # a standard normal
    1.0
    """
    if method not in ("coordinate", "random"):
        raise ValueError(f"method must be 'coordinate' or 'random', got {method!r}.")
    x = np.array(x0, dtype=float).ravel()
    d = x.size
    w = np.broadcast_to(np.asarray(widths, dtype=float), (d,)).copy()
    logp = log_density(x) if logp0 is None else float(logp0)
    if not np.isfinite(logp):
        raise ValueError("slice_sample: the starting point has zero density.")
    thin = max(int(thin), 1)

    def sweep(x: np.ndarray, logp: float) -> tuple[np.ndarray, float]:
        if method == "coordinate":
            for i in rng.permutation(d):
                e = np.zeros(d)
                e[i] = w[i]
                x, logp = _slice_1d(log_density, x, logp, e, rng, max_steps_out)
        else:
            v = rng.standard_normal(d)
            v *= w / np.linalg.norm(v)
            x, logp = _slice_1d(log_density, x, logp, v, rng, max_steps_out)
        return x, logp

    for _ in range(int(n_burn)):
        x, logp = sweep(x, logp)
    samples = np.empty((int(n_samples), d))
    logps = np.empty(int(n_samples))
    for s in range(int(n_samples)):
        for _ in range(thin):
            x, logp = sweep(x, logp)
        samples[s] = x
        logps[s] = logp
    return samples, logps


def fit_map(
    kernel: Kernel,
    X: Any,
    y: Any,
    *,
    rng: np.random.Generator,
    n_restarts: int = 3,
    theta0: Any = None,
    maxiter: int = 200,
    log_posterior: LogPosterior | None = None,
) -> tuple[np.ndarray, float]:
    """Maximum a posteriori hyperparameters by L-BFGS-B with restarts.

    Uses the analytic gradient of :class:`LogPosterior`.

    Parameters
    ----------
    kernel : Kernel
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Standardised outputs.
    rng : numpy.random.Generator
        Draws the restart points.
    n_restarts : int, default=3
        Total number of starts: ``theta0`` (or the default start) plus
        ``n_restarts - 1`` random draws from the priors.
    theta0 : array-like, optional
        First start (e.g. the previous optimum when refitting).
    maxiter : int, default=200
    log_posterior : LogPosterior, optional
        Reuse an existing evaluator for ``(X, y)``.

    Returns
    -------
    theta : ndarray
        Best hyperparameters found.
    log_post : float
        Their log posterior.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import LogPosterior, Matern52, fit_map, initial_hyper
    >>> X = np.linspace(0, 1, 5)[:, None]
    >>> y = np.sin(6 * X[:, 0])
    >>> kernel = Matern52().set_n_dims(1)
    >>> theta, log_post = fit_map(kernel, X, y, rng=np.random.default_rng(0))
    >>> bool(log_post >= LogPosterior(kernel, X, y)(initial_hyper(kernel)))
    True
    """
    with single_blas_thread():
        return _fit_map(kernel, X, y, rng, n_restarts, theta0, maxiter, log_posterior)


def _fit_map(
    kernel: Kernel,
    X: Any,
    y: Any,
    rng: np.random.Generator,
    n_restarts: int,
    theta0: Any,
    maxiter: int,
    log_posterior: LogPosterior | None,
) -> tuple[np.ndarray, float]:
    lp = log_posterior if log_posterior is not None else LogPosterior(kernel, X, y)
    bounds = hyper_bounds(kernel)
    lo, hi = np.asarray(bounds).T
    starts = [initial_hyper(kernel) if theta0 is None else np.asarray(theta0, float)]
    starts += [sample_hyperprior(kernel, rng) for _ in range(max(n_restarts, 1) - 1)]

    # L-BFGS-B can stop on a point whose posterior is not finite (length
    # scales at their bound), so the best finite point it visited is kept.
    visited: dict[str, Any] = {"theta": None, "val": -np.inf}

    def negative(theta: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = lp.value_and_grad(theta)
        if not np.isfinite(v):
            # a large finite value lets L-BFGS-B back off instead of stopping
            return 1e25, np.zeros(theta.size)
        if v > visited["val"]:
            visited["theta"], visited["val"] = np.array(theta, dtype=float), v
        return -v, -g

    best_theta, best_val = None, -np.inf
    for start in starts:
        start = np.clip(start, lo, hi)
        res = minimize(
            negative,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": maxiter},
        )
        val = lp(res.x)
        if val > best_val:
            best_theta, best_val = res.x, val
    if visited["val"] > best_val:
        best_theta, best_val = visited["theta"], visited["val"]
    if best_theta is None:
        raise np.linalg.LinAlgError("MAP fit failed from every start.")
    return np.asarray(best_theta, dtype=float), float(best_val)
