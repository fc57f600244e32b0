"""The numerical kernels every other module shares.

Jittered Cholesky factors and triangular solves (never an explicit inverse),
a cheap re-entrant one-thread BLAS limit, Gauss-Hermite rules, a stable
log-mean-exp and scrambled Sobol engines.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from scipy.linalg import lapack
from scipy.special import ndtri
from scipy.stats import qmc
from threadpoolctl import ThreadpoolController

__all__ = [
    "cholesky_jitter",
    "cholesky_psd",
    "gauss_hermite",
    "log_mean_exp",
    "single_blas_thread",
    "sobol_engine",
    "sobol_points",
    "solve_lower",
    "standard_normal_draws",
]

_LOCAL = threading.local()
_CONTROLLER: list[ThreadpoolController] = []


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """Limit BLAS to one thread; re-entrant and cheap when nested.

    Small GP matrices are far slower with several BLAS threads. Building a
    ``threadpoolctl`` limiter costs ~0.1-1 ms, which would dominate the inner
    loops of the acquisition optimiser, so the controller is created once and
    nested uses are no-ops.
    """
    if getattr(_LOCAL, "depth", 0):
        yield
        return
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    _LOCAL.depth = 1
    try:
        with _CONTROLLER[0].limit(limits=1):
            yield
    finally:
        _LOCAL.depth = 0


def solve_lower(L: np.ndarray, B: Any) -> np.ndarray:
    """Solve ``L X = B`` for lower-triangular ``L`` by forward substitution.

    Calls LAPACK ``trtrs`` directly: the acquisition optimiser solves tiny
    systems thousands of times and ``scipy.linalg.solve_triangular``'s input
    validation costs more than the solve. Pass ``L`` (and ``B``) in Fortran
    order to avoid copies.
    """
    B = np.asarray(B, dtype=float)
    if L.shape[0] == 0:
        return B.copy()
    vec = B.ndim == 1
    X, info = lapack.dtrtrs(L, B[:, None] if vec else B, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"Triangular solve failed (info={info}).")
    return X[:, 0] if vec else X


def _potrf(K: np.ndarray) -> np.ndarray | None:
    """Fortran-ordered lower Cholesky factor, or None if not positive definite."""
    # K is symmetric, so the transpose of a C-ordered K is the same matrix in
    # Fortran order and LAPACK can take it without reordering
    A = K.T if K.flags.c_contiguous else K
    L, info = lapack.dpotrf(A, lower=1, clean=1, overwrite_a=0)
    # NaN/inf anywhere in the lower triangle propagates to the last pivot
    if info != 0 or not np.isfinite(L[-1, -1]):
        return None
    return L


def cholesky_jitter(
    K: np.ndarray, *, jitter0: float = 0.0, max_tries: int = 9
) -> tuple[np.ndarray, float]:
    """Lower Cholesky factor of ``K + jitter * I`` with escalating jitter.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        Symmetric matrix, positive semi-definite up to rounding.
    jitter0 : float, default=0.0
        Jitter already known to be needed (tried first).
    max_tries : int, default=9
        Number of escalations (jitter grows tenfold from ``1e-10`` times the
        mean diagonal).

    Returns
    -------
    L : ndarray of shape (n, n)
        Lower-triangular factor (Fortran order).
    jitter : float
        The jitter that was added to the diagonal.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``K`` is not finite or stays indefinite after all escalations.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._numerics import cholesky_jitter
    >>> L, jitter = cholesky_jitter(np.ones((2, 2)))
    >>> bool(np.allclose(L @ L.T, np.ones((2, 2)), atol=1e-6)), jitter > 0
    (True, True)
    """
    n = K.shape[0]
    if n == 0:
        return np.zeros((0, 0), order="F"), 0.0
    jitter = float(jitter0)
    if jitter == 0.0:
        # fast path: most matrices factorise as they are
        L = _potrf(K)
        if L is not None:
            return L, 0.0
    if not np.all(np.isfinite(K)):
        raise np.linalg.LinAlgError("Covariance matrix has non-finite entries.")
    scale = max(float(np.mean(np.abs(np.diag(K)))), 1e-300)
    step = 1e-10 * scale
    for _ in range(max_tries + 1):
        if jitter > 0:
            Kj = K.copy()
            Kj[np.diag_indices(n)] += jitter
            L = _potrf(Kj)
            if L is not None:
                return L, jitter
        jitter = max(step, 10.0 * jitter)
        step *= 10.0
    raise np.linalg.LinAlgError(
        f"Matrix not positive definite even with jitter {jitter:.3g}."
    )


def cholesky_psd(K: np.ndarray) -> np.ndarray:
    """A square root ``L`` with ``L @ L.T ~ K`` for any symmetric PSD ``K``.

    :func:`cholesky_jitter` with more escalations (up to a tenth of the mean
    diagonal); a matrix still indefinite there is broken beyond repair, and an
    eigen-decomposition (negative eigenvalues clipped) still gives a square
    root, so a posterior over representer points never stops a search.
    """
    K = 0.5 * (K + K.T)
    try:
        return cholesky_jitter(K, max_tries=11)[0]
    except np.linalg.LinAlgError:
        vals, vecs = np.linalg.eigh(K)
        return vecs * np.sqrt(np.clip(vals, 0.0, None))


def gauss_hermite(n_nodes: int, log: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for expectations under a standard normal.

    Parameters
    ----------
    n_nodes : int
        Number of nodes (the rule is exact for polynomials of degree
        ``2 * n_nodes - 1``).
    log : bool, default=False
        Return the logs of the weights, normalised in log space (for sums
        taken with log-sum-exp).

    Returns
    -------
    nodes : ndarray of shape (n_nodes,)
    weights : ndarray of shape (n_nodes,)
        Non-negative, summing to one: ``E[g(w)] ~ sum(weights * g(nodes))``
        (their logs with ``log=True``).

    Examples
    --------
    >>> from skbayes_search._numerics import gauss_hermite
    >>> nodes, weights = gauss_hermite(3)
    >>> round(float((weights * nodes**2).sum()), 12)
    1.0
    """
    if n_nodes < 1:
        raise ValueError(f"n_nodes must be >= 1, got {n_nodes}.")
    nodes, weights = np.polynomial.hermite_e.hermegauss(int(n_nodes))
    if log:
        return nodes, np.log(weights) - np.log(weights.sum())
    return nodes, weights / weights.sum()


def log_mean_exp(v: Any, axis: int = -1) -> np.ndarray:
    """``log(mean(exp(v), axis))`` without overflow; all ``-inf`` gives ``-inf``.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._numerics import log_mean_exp
    >>> round(float(np.exp(log_mean_exp(np.log([[1.0, 3.0]]), axis=1)[0])), 12)
    2.0
    """
    v = np.asarray(v, dtype=float)
    m = np.max(v, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.mean(np.exp(v - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis)


def sobol_engine(n_dims: int, rng: np.random.Generator) -> qmc.Sobol:
    """A scrambled Sobol engine that draws its scrambling from ``rng``."""
    try:
        return qmc.Sobol(int(n_dims), scramble=True, rng=rng)
    except TypeError:  # scipy < 1.15 names it seed
        return qmc.Sobol(int(n_dims), scramble=True, seed=rng)


def sobol_points(n: int, n_dims: int, rng: np.random.Generator) -> np.ndarray:
    """The first ``n`` points of a scrambled Sobol sequence in ``[0, 1)^d``.

    Drawing a power of two and keeping a prefix avoids scipy's balance
    warning without a (thread-unsafe) warnings filter; any prefix of a
    scrambled Sobol sequence is still well spread.
    """
    m = max(0, math.ceil(math.log2(max(int(n), 1))))
    return sobol_engine(n_dims, rng).random_base2(m)[: int(n)]


def standard_normal_draws(
    n_samples: int, n_dims: int, rng: np.random.Generator
) -> np.ndarray:
    """Fixed standard-normal draws for common random numbers.

    Scrambled Sobol points mapped through the normal quantile: they cover the
    space more evenly than pseudo-random draws, which lowers the variance of
    Monte Carlo estimates for the same ``n_samples``.

    Parameters
    ----------
    n_samples : int
        Number of draws ``S``.
    n_dims : int
        Dimension of each draw.
    rng : numpy.random.Generator
        Seeds the scrambling.

    Returns
    -------
    ndarray of shape (n_samples, n_dims)
    """
    u = sobol_points(max(int(n_samples), 2), n_dims, rng)[: int(n_samples)]
    # keep strictly inside (0, 1) so the quantile stays finite
    return ndtri(np.clip(u, 1e-12, 1.0 - 1e-12))
