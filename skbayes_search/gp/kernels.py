"""Covariance functions for the Gaussian-process core.

Every kernel is a stateless description; its hyperparameters are passed in as a
flat vector ``theta`` (in the space the samplers work in, mostly logarithms).
This keeps the model, the slice sampler and the MAP optimiser generic: they only
need ``n_params``, ``bounds``, ``log_prior`` and the evaluation methods, so new
kernels (e.g. a dataset-dependent transfer kernel) plug in without touching
:mod:`skbayes_search.gp.model` or :mod:`skbayes_search.gp.inference`.

The kernel returned by a :class:`Kernel` is the *correlation shape* only; the
signal amplitude and the noise variance are hyperparameters of
:class:`~skbayes_search.gp.model.GaussianProcess`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.spatial.distance import cdist, pdist, squareform

__all__ = [
    "BasisKernel",
    "Kernel",
    "Matern52",
    "ProductKernel",
    "StationaryARD",
    "SumKernel",
]

_SQRT5 = np.sqrt(5.0)


def _as_2d(X: Any) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D array of inputs, got shape {X.shape}.")
    return X


class Kernel:
    """Base class of all kernels.

    Subclasses implement :meth:`n_params`, :meth:`bounds`, :meth:`evaluate`
    and :meth:`diag`; they may override :meth:`precompute` to cache pieces of
    work that do not depend on ``theta`` (the samplers evaluate the same inputs
    under many ``theta``) and :meth:`gradient` / :meth:`log_prior_grad` with
    analytic versions (the defaults use central finite differences).

    ``k1 * k2`` and ``k1 + k2`` build :class:`ProductKernel` and
    :class:`SumKernel`.
    """

    @property
    def n_params(self) -> int:
        """Number of hyperparameters of this kernel."""
        raise NotImplementedError

    @property
    def bounds(self) -> list[tuple[float, float]]:
        """Box of admissible ``theta`` (in the sampled, mostly log, space)."""
        raise NotImplementedError

    def initial_theta(self) -> np.ndarray:
        """A sensible starting point inside :attr:`bounds`."""
        b = np.asarray(self.bounds, dtype=float).reshape(-1, 2)
        return 0.5 * (b[:, 0] + b[:, 1])

    def sample_theta(self, rng: np.random.Generator) -> np.ndarray:
        """Draw a starting point for optimiser restarts (uniform in the box)."""
        b = np.asarray(self.bounds, dtype=float).reshape(-1, 2)
        return rng.uniform(b[:, 0], b[:, 1])

    def log_prior(self, theta: np.ndarray) -> float:
        """Log prior density of ``theta``; ``-inf`` outside :attr:`bounds`.

        The default is a flat (top-hat) prior on the box.
        """
        return 0.0 if self._in_bounds(theta) else -np.inf

    def log_prior_grad(self, theta: np.ndarray) -> np.ndarray:
        """Gradient of :meth:`log_prior` (central differences by default)."""
        theta = np.asarray(theta, dtype=float)
        grad = np.zeros(theta.size)
        lo, hi = np.asarray(self.bounds, dtype=float).reshape(-1, 2).T
        for i in range(theta.size):
            # stay inside the box so a top-hat prior does not produce inf - inf
            h = 1e-6 * max(1.0, abs(theta[i]))
            tp, tm = theta.copy(), theta.copy()
            tp[i] = min(theta[i] + h, hi[i])
            tm[i] = max(theta[i] - h, lo[i])
            if tp[i] == tm[i]:
                continue
            grad[i] = (self.log_prior(tp) - self.log_prior(tm)) / (tp[i] - tm[i])
        return grad

    def _in_bounds(self, theta: np.ndarray) -> bool:
        theta = np.asarray(theta, dtype=float)
        if theta.size == 0:
            return True
        lo, hi = np.asarray(self.bounds, dtype=float).reshape(-1, 2).T
        return bool((theta >= lo).all() and (theta <= hi).all())

    def set_n_dims(self, n_dims: int) -> Kernel:
        """Tell the kernel the input width (kernels that need it override this)."""
        return self

    def precompute(self, X1: Any, X2: Any = None) -> Any:
        """Cache theta-independent work for the pair of input sets.

        ``X2=None`` means the symmetric case ``X2 = X1`` (kernels may exploit
        it to return an exactly symmetric matrix).
        """
        X1 = _as_2d(X1)
        return (X1, None if X2 is None else _as_2d(X2))

    def evaluate(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        """Kernel matrix for the inputs cached in ``pre`` (from :meth:`precompute`)."""
        raise NotImplementedError

    def __call__(self, theta: np.ndarray, X1: Any, X2: Any = None) -> np.ndarray:
        """Kernel matrix ``k(X1, X2)`` (``k(X1, X1)`` when ``X2`` is None)."""
        return self.evaluate(np.asarray(theta, dtype=float), self.precompute(X1, X2))

    def diag(self, theta: np.ndarray, X: Any) -> np.ndarray:
        """Diagonal of ``k(X, X)`` without forming the matrix."""
        raise NotImplementedError

    def gradient(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        """Derivatives of the kernel matrix, shape ``(n_params, n1, n2)``.

        The default uses central finite differences; subclasses override it
        with analytic derivatives.
        """
        theta = np.asarray(theta, dtype=float)
        K0 = self.evaluate(theta, pre)
        out = np.empty((theta.size, *K0.shape))
        for i in range(theta.size):
            h = 1e-6 * max(1.0, abs(theta[i]))
            tp, tm = theta.copy(), theta.copy()
            tp[i] += h
            tm[i] -= h
            out[i] = (self.evaluate(tp, pre) - self.evaluate(tm, pre)) / (2 * h)
        return out

    def gradient_dot(self, theta: np.ndarray, pre: Any, W: np.ndarray) -> np.ndarray:
        """``sum_ij W_ij dK_ij / dtheta_p`` for every parameter ``p``.

        This contraction is all the marginal-likelihood gradient needs;
        kernels can compute it without materialising :meth:`gradient`.
        """
        return np.einsum("ij,pij->p", W, self.gradient(theta, pre))

    def __mul__(self, other: Kernel) -> ProductKernel:
        return ProductKernel(self, other)

    def __add__(self, other: Kernel) -> SumKernel:
        return SumKernel(self, other)


#: Largest cached table of per-dimension squared differences (float64
#: elements, 16 MB); beyond it the kernel computes distances on each call.
_MAX_SQ_DIFFS = 2_000_000


class StationaryARD(Kernel):
    """Base of the stationary kernels of an ARD-scaled distance.

    ``k(x, x') = f(r^2)`` with ``r^2 = sum_d (x_d - x'_d)^2 / l_d^2`` over the
    columns ``dims`` and ``f(0) = 1`` (the amplitude is the GP's). The
    hyperparameters are ``log l_d``; their prior is flat (top-hat) on
    ``log_length_bounds``. This class holds the column selection, the box and
    prior, and the scaled distances; a subclass gives only the radial profile
    ``f`` (:meth:`_profile`) and its slope ``w = -2 df / d(r^2)``
    (:meth:`_profile_slope`), from which ``dk / d log l_d = w(r^2)
    (x_d - x'_d)^2 / l_d^2``.

    Parameters
    ----------
    dims : sequence of int or None, default=None
        Columns of ``X`` the kernel looks at; all columns when None (the
        number of parameters is then fixed by :meth:`set_n_dims` or at the
        first call).
    log_length_bounds : (float, float), default=(log 0.01, log 10)
        Bounds of every log length scale.
    n_dims : int or None, default=None
        Number of input columns when ``dims`` is None.
    """

    def __init__(
        self,
        dims: Sequence[int] | None = None,
        *,
        log_length_bounds: tuple[float, float] = (np.log(0.01), np.log(10.0)),
        n_dims: int | None = None,
    ):
        self.dims = self._dims_from(dims)
        self.log_length_bounds = (
            float(log_length_bounds[0]),
            float(log_length_bounds[1]),
        )
        if not self.log_length_bounds[0] < self.log_length_bounds[1]:
            raise ValueError("log_length_bounds must be (low, high) with low < high.")
        self.n_dims = n_dims if self.dims is None else len(self.dims)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dims={self.dims}, n_dims={self.n_dims})"

    @staticmethod
    def _dims_from(dims: Sequence[int] | None) -> list[int] | None:
        """The ``dims`` argument as a list of ints (subclasses may refuse some)."""
        return None if dims is None else [int(d) for d in dims]

    def _profile(self, r2: np.ndarray) -> np.ndarray:
        """``f(r^2)`` elementwise; may overwrite ``r2`` (a fresh temporary)."""
        raise NotImplementedError

    def _profile_slope(self, r2: np.ndarray) -> np.ndarray:
        """``-2 df / d(r^2)`` elementwise; may overwrite ``r2``."""
        raise NotImplementedError

    def set_n_dims(self, n_dims: int) -> StationaryARD:
        """Fix the number of columns when ``dims`` is None (returns self)."""
        name = type(self).__name__
        if self.dims is not None:
            if n_dims < max(self.dims) + 1:
                raise ValueError(
                    f"{name} uses column {max(self.dims)} but X has {n_dims}."
                )
            return self
        if self.n_dims is not None and self.n_dims != int(n_dims):
            raise ValueError(
                f"{name} was set up for {self.n_dims} columns, got {n_dims}."
            )
        self.n_dims = int(n_dims)
        return self

    @property
    def n_params(self) -> int:
        if self.n_dims is None:
            raise ValueError(
                f"{type(self).__name__}(dims=None) does not know the input width "
                "yet; call set_n_dims(n_dims) first."
            )
        return self.n_dims

    @property
    def bounds(self) -> list[tuple[float, float]]:
        return [self.log_length_bounds] * self.n_params

    def initial_theta(self) -> np.ndarray:
        # a medium length scale on the unit cube; clipped into the box
        lo, hi = self.log_length_bounds
        return np.full(self.n_params, np.clip(np.log(0.5), lo, hi))

    def _cols(self, X: np.ndarray) -> np.ndarray:
        if self.dims is None:
            if self.n_dims is None:
                self.n_dims = X.shape[1]
            elif X.shape[1] != self.n_dims:
                raise ValueError(
                    f"{type(self).__name__} expects {self.n_dims} columns, got "
                    f"{X.shape[1]}."
                )
            return X
        return X[:, self.dims]

    def log_prior(self, theta: np.ndarray) -> float:
        # top-hat: constant inside the box (this runs once per MCMC step)
        lo, hi = self.log_length_bounds
        theta = np.asarray(theta, dtype=float)
        return 0.0 if theta.min() >= lo and theta.max() <= hi else -np.inf

    def log_prior_grad(self, theta: np.ndarray) -> np.ndarray:
        return np.zeros(np.size(theta))

    def precompute(self, X1: Any, X2: Any = None) -> Any:
        A = self._cols(_as_2d(X1))
        B = None if X2 is None else self._cols(_as_2d(X2))
        # symmetric case: a slot for the per-dimension squared differences,
        # filled by the second evaluation (see _cached_r2)
        return (A, B, {} if B is None else None)

    def _cached_r2(self, theta: np.ndarray, pre: Any) -> np.ndarray | None:
        """Condensed ``r^2`` from cached squared differences, or None.

        MCMC evaluates the kernel on the same inputs hundreds of times with
        new length scales. With the squared differences per dimension cached,
        ``r^2`` is one matrix-vector product instead of a ``pdist`` call
        (about 4x faster at 60 points). Building the table costs several
        ``pdist`` calls, so a one-off evaluation does not build it.
        """
        cache = pre[2] if len(pre) > 2 else None
        if cache is None:
            return None
        sq = cache.get("sq")
        if sq is None:
            A = pre[0]
            n = A.shape[0]
            cache["calls"] = cache.get("calls", 0) + 1
            if cache["calls"] < 2 or n * (n - 1) // 2 * A.shape[1] > _MAX_SQ_DIFFS:
                return None
            i, j = np.triu_indices(n, 1)
            sq = cache["sq"] = (A[i] - A[j]) ** 2
        return sq @ np.exp(-2.0 * np.asarray(theta, dtype=float))

    @staticmethod
    def _scaled(theta: np.ndarray, pre: Any) -> tuple[np.ndarray, np.ndarray | None]:
        """The cached inputs divided by the length scales (``None`` stays)."""
        A, B = pre[0], pre[1]
        inv_l = np.exp(-np.asarray(theta, dtype=float))
        return A * inv_l, None if B is None else B * inv_l

    def evaluate(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        # r^2 comes from differences (cached, or inside (c|p)dist), so that
        # of nearby points has no cancellation; the symmetric case does half
        # the work and is exactly symmetric with a unit diagonal
        r2 = self._cached_r2(theta, pre)
        if r2 is not None:
            K = squareform(self._profile(r2))
            np.fill_diagonal(K, 1.0)
            return K
        As, Bs = self._scaled(theta, pre)
        if Bs is None:
            if As.shape[0] < 2:
                return np.ones((As.shape[0], As.shape[0]))
            K = squareform(self._profile(pdist(As, "sqeuclidean")))
            np.fill_diagonal(K, 1.0)
            return K
        return self._profile(cdist(As, Bs, "sqeuclidean"))

    def diag(self, theta: np.ndarray, X: Any) -> np.ndarray:
        return np.ones(_as_2d(X).shape[0])

    def gradient(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        As, Bs = self._scaled(theta, pre)
        Bs = As if Bs is None else Bs
        w = self._profile_slope(cdist(As, Bs, "sqeuclidean"))
        # one (n1, n2) slice per length scale, so no (n1, n2, d) temporary
        out = np.empty((As.shape[1], As.shape[0], Bs.shape[0]))
        for d in range(As.shape[1]):
            diff = As[:, d, None] - Bs[None, :, d]
            np.multiply(diff, diff, out=out[d])
            out[d] *= w
        return out

    def gradient_dot(self, theta: np.ndarray, pre: Any, W: np.ndarray) -> np.ndarray:
        # sum_ij M_ij (a_id - b_jd)^2 with M = W * w, expanded into matrix
        # products so no (n1, n2, d) tensor is formed
        As, Bs = self._scaled(theta, pre)
        Bs = As if Bs is None else Bs
        M = W * self._profile_slope(cdist(As, Bs, "sqeuclidean"))
        rows = M.sum(axis=1)
        cols = M.sum(axis=0)
        cross = np.einsum("id,id->d", As, M @ Bs)
        return (As * As).T @ rows + (Bs * Bs).T @ cols - 2.0 * cross


class Matern52(StationaryARD):
    """Matern-5/2 kernel with one length scale per selected input column (ARD).

    ``k(x, x') = (1 + sqrt(5) r + 5/3 r^2) exp(-sqrt(5) r)`` with
    ``r^2 = sum_d (x_d - x'_d)^2 / l_d^2`` over the columns ``dims``. The
    hyperparameters are ``log l_d``; their prior is flat (top-hat) on
    ``log_length_bounds`` (inputs live in the unit cube, so the default
    ``[log 0.01, log 10]`` spans everything from very wiggly to almost linear).

    Parameters
    ----------
    dims, log_length_bounds, n_dims
        The columns looked at, the bounds of every log length scale and the
        input width when ``dims`` is None; see :class:`StationaryARD`.
    """

    def _profile(self, r2: np.ndarray) -> np.ndarray:
        # (1 + r + r^2 / 3) exp(-r) with r = sqrt(5 r2), in place
        r = r2
        np.sqrt(r, out=r)
        r *= _SQRT5
        k = r * r
        k *= 1.0 / 3.0
        k += r
        k += 1.0
        np.negative(r, out=r)
        np.exp(r, out=r)
        k *= r
        return k

    def _profile_slope(self, r2: np.ndarray) -> np.ndarray:
        # 5/3 (1 + sqrt5 r) exp(-sqrt5 r): regular at r = 0
        r = np.sqrt(r2) * _SQRT5
        return (5.0 / 3.0) * (1.0 + r) * np.exp(-r)


class BasisKernel(Kernel):
    """Finite-basis kernel ``phi(s)^T Sigma phi(s')`` on one input column.

    Used by FABOLAS on the (log-scaled) dataset-fraction column ``s``:
    ``basis="loss"`` uses ``phi(s) = (1, (1 - s)^2)`` and ``basis="cost"``
    uses ``phi(s) = (1, s)``.

    ``Sigma`` is a full 2x2 covariance parametrised by its lower Cholesky
    factor ``L = [[exp(a), 0], [b, exp(c)]]``, ``Sigma = L L^T``, with
    ``theta = (a, b, c)``. Because the diagonal of ``L`` is an exponential,
    ``Sigma`` is positive definite for every ``theta`` and the kernel matrix is
    positive semi-definite (rank at most 2). Priors: ``a, c ~ N(0, 1)`` (log
    diagonal) and ``b ~ N(0, 1)``, truncated to :attr:`bounds`.

    Parameters
    ----------
    dim : int
        Column of ``X`` holding ``s`` (expected in [0, 1]).
    basis : {"loss", "cost"}, default="loss"
        Which basis functions to use.
    """

    _bounds = [(-8.0, 5.0), (-20.0, 20.0), (-8.0, 5.0)]

    def __init__(self, dim: int, basis: str = "loss"):
        if basis not in ("loss", "cost"):
            raise ValueError(f"basis must be 'loss' or 'cost', got {basis!r}.")
        self.dim = int(dim)
        self.basis = basis

    def __repr__(self) -> str:
        return f"BasisKernel(dim={self.dim}, basis={self.basis!r})"

    @property
    def n_params(self) -> int:
        return 3

    @property
    def bounds(self) -> list[tuple[float, float]]:
        return list(self._bounds)

    def initial_theta(self) -> np.ndarray:
        return np.zeros(3)

    def sample_theta(self, rng: np.random.Generator) -> np.ndarray:
        lo, hi = np.asarray(self._bounds).T
        return np.clip(rng.standard_normal(3), lo, hi)

    def log_prior(self, theta: np.ndarray) -> float:
        if not self._in_bounds(theta):
            return -np.inf
        return float(-0.5 * np.sum(np.asarray(theta) ** 2))

    def log_prior_grad(self, theta: np.ndarray) -> np.ndarray:
        return -np.asarray(theta, dtype=float)

    def phi(self, X: Any) -> np.ndarray:
        """Basis functions of column ``dim`` of ``X``, shape ``(n, 2)``."""
        s = _as_2d(X)[:, self.dim]
        second = (1.0 - s) ** 2 if self.basis == "loss" else s
        return np.column_stack([np.ones_like(s), second])

    @staticmethod
    def chol_factor(theta: np.ndarray) -> np.ndarray:
        """Lower Cholesky factor of ``Sigma`` for ``theta = (a, b, c)``."""
        a, b, c = np.asarray(theta, dtype=float)
        return np.array([[np.exp(a), 0.0], [b, np.exp(c)]])

    def sigma(self, theta: np.ndarray) -> np.ndarray:
        """The 2x2 covariance ``Sigma = L L^T`` of the basis weights."""
        L = self.chol_factor(theta)
        return L @ L.T

    def precompute(self, X1: Any, X2: Any = None) -> Any:
        P1 = self.phi(X1)
        return (P1, None if X2 is None else self.phi(X2))

    def evaluate(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        P1, P2 = pre
        # (P1 L)(P2 L)^T is exactly symmetric in the symmetric case
        G1 = P1 @ self.chol_factor(theta)
        G2 = G1 if P2 is None else P2 @ self.chol_factor(theta)
        return G1 @ G2.T

    def diag(self, theta: np.ndarray, X: Any) -> np.ndarray:
        G = self.phi(X) @ self.chol_factor(theta)
        return np.einsum("ij,ij->i", G, G)

    def gradient(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        P1, P2 = pre
        P2 = P1 if P2 is None else P2
        a, _, c = np.asarray(theta, dtype=float)
        L = self.chol_factor(theta)
        dLs = [
            np.array([[np.exp(a), 0.0], [0.0, 0.0]]),
            np.array([[0.0, 0.0], [1.0, 0.0]]),
            np.array([[0.0, 0.0], [0.0, np.exp(c)]]),
        ]
        out = np.empty((3, P1.shape[0], P2.shape[0]))
        for i, dL in enumerate(dLs):
            dS = dL @ L.T + L @ dL.T
            out[i] = P1 @ dS @ P2.T
        return out


class _CompositeKernel(Kernel):
    def __init__(self, k1: Kernel, k2: Kernel):
        if not isinstance(k1, Kernel) or not isinstance(k2, Kernel):
            raise TypeError("Both operands must be Kernel instances.")
        self.k1 = k1
        self.k2 = k2

    def _split(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        theta = np.asarray(theta, dtype=float)
        n1 = self.k1.n_params
        return theta[:n1], theta[n1:]

    @property
    def n_params(self) -> int:
        return self.k1.n_params + self.k2.n_params

    @property
    def bounds(self) -> list[tuple[float, float]]:
        return list(self.k1.bounds) + list(self.k2.bounds)

    def set_n_dims(self, n_dims: int) -> _CompositeKernel:
        self.k1.set_n_dims(n_dims)
        self.k2.set_n_dims(n_dims)
        return self

    def initial_theta(self) -> np.ndarray:
        return np.concatenate([self.k1.initial_theta(), self.k2.initial_theta()])

    def sample_theta(self, rng: np.random.Generator) -> np.ndarray:
        return np.concatenate([self.k1.sample_theta(rng), self.k2.sample_theta(rng)])

    def log_prior(self, theta: np.ndarray) -> float:
        t1, t2 = self._split(theta)
        return self.k1.log_prior(t1) + self.k2.log_prior(t2)

    def log_prior_grad(self, theta: np.ndarray) -> np.ndarray:
        t1, t2 = self._split(theta)
        return np.concatenate([self.k1.log_prior_grad(t1), self.k2.log_prior_grad(t2)])

    def precompute(self, X1: Any, X2: Any = None) -> Any:
        return (self.k1.precompute(X1, X2), self.k2.precompute(X1, X2))


class ProductKernel(_CompositeKernel):
    """Elementwise product ``k1(x, x') * k2(x, x')`` (PSD by the Schur theorem)."""

    def __repr__(self) -> str:
        return f"ProductKernel({self.k1!r}, {self.k2!r})"

    def evaluate(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        t1, t2 = self._split(theta)
        return self.k1.evaluate(t1, pre[0]) * self.k2.evaluate(t2, pre[1])

    def diag(self, theta: np.ndarray, X: Any) -> np.ndarray:
        t1, t2 = self._split(theta)
        return self.k1.diag(t1, X) * self.k2.diag(t2, X)

    def gradient(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        t1, t2 = self._split(theta)
        K1 = self.k1.evaluate(t1, pre[0])
        K2 = self.k2.evaluate(t2, pre[1])
        parts = []
        if t1.size:
            parts.append(self.k1.gradient(t1, pre[0]) * K2)
        if t2.size:
            parts.append(self.k2.gradient(t2, pre[1]) * K1)
        if not parts:
            return np.empty((0, *K1.shape))
        return np.concatenate(parts, axis=0)

    def gradient_dot(self, theta: np.ndarray, pre: Any, W: np.ndarray) -> np.ndarray:
        # d(K1 * K2) = dK1 * K2 + K1 * dK2, so each factor sees W * (other)
        t1, t2 = self._split(theta)
        parts = []
        if t1.size:
            K2 = self.k2.evaluate(t2, pre[1])
            parts.append(self.k1.gradient_dot(t1, pre[0], W * K2))
        if t2.size:
            K1 = self.k1.evaluate(t1, pre[0])
            parts.append(self.k2.gradient_dot(t2, pre[1], W * K1))
        return np.concatenate(parts) if parts else np.empty(0)


class SumKernel(_CompositeKernel):
    """Sum ``k1(x, x') + k2(x, x')``."""

    def __repr__(self) -> str:
        return f"SumKernel({self.k1!r}, {self.k2!r})"

    def evaluate(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        t1, t2 = self._split(theta)
        return self.k1.evaluate(t1, pre[0]) + self.k2.evaluate(t2, pre[1])

    def diag(self, theta: np.ndarray, X: Any) -> np.ndarray:
        t1, t2 = self._split(theta)
        return self.k1.diag(t1, X) + self.k2.diag(t2, X)

    def gradient(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        t1, t2 = self._split(theta)
        parts = []
        if t1.size:
            parts.append(self.k1.gradient(t1, pre[0]))
        if t2.size:
            parts.append(self.k2.gradient(t2, pre[1]))
        if not parts:
            K = self.evaluate(theta, pre)
            return np.empty((0, *K.shape))
        return np.concatenate(parts, axis=0)

    def gradient_dot(self, theta: np.ndarray, pre: Any, W: np.ndarray) -> np.ndarray:
        t1, t2 = self._split(theta)
        parts = []
        if t1.size:
            parts.append(self.k1.gradient_dot(t1, pre[0], W))
        if t2.size:
            parts.append(self.k2.gradient_dot(t2, pre[1], W))
        return np.concatenate(parts) if parts else np.empty(0)
