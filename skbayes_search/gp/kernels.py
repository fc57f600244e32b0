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

This module holds the interface and its algebra (products and sums); the
concrete kernels live in :mod:`~skbayes_search.gp.stationary` (Matern 5/2 ARD)
and :mod:`~skbayes_search.gp.basis_kernel`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Kernel", "ProductKernel", "SumKernel"]


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

    def evaluate_many(self, thetas: np.ndarray, X1: Any, X2: Any) -> np.ndarray:
        """``k(X1, X2)`` under each row of ``thetas``, shape ``(J, n1, n2)``.

        An acquisition integrated over hyperparameter samples needs the same
        cross-covariances under every sample; kernels that can compute them
        in one vectorised pass override this (the default evaluates one row
        at a time on shared precomputed inputs).
        """
        pre = self.precompute(X1, X2)
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        return np.stack([self.evaluate(t, pre) for t in thetas])

    def diag_many(self, thetas: np.ndarray, X: Any) -> np.ndarray:
        """:meth:`diag` under each row of ``thetas``, shape ``(J, n)``."""
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        return np.stack([self.diag(t, X) for t in thetas])

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

    def _many(
        self, thetas: np.ndarray, X1: Any, X2: Any = None, diag: bool = False
    ) -> tuple[Any, Any]:
        thetas = np.atleast_2d(np.asarray(thetas, dtype=float))
        n1 = self.k1.n_params
        t1, t2 = thetas[:, :n1], thetas[:, n1:]
        if diag:
            return self.k1.diag_many(t1, X1), self.k2.diag_many(t2, X1)
        return self.k1.evaluate_many(t1, X1, X2), self.k2.evaluate_many(t2, X1, X2)


class ProductKernel(_CompositeKernel):
    """Elementwise product ``k1(x, x') * k2(x, x')`` (PSD by the Schur theorem)."""

    def __repr__(self) -> str:
        return f"ProductKernel({self.k1!r}, {self.k2!r})"

    def evaluate(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        t1, t2 = self._split(theta)
        return self.k1.evaluate(t1, pre[0]) * self.k2.evaluate(t2, pre[1])

    def evaluate_many(self, thetas: np.ndarray, X1: Any, X2: Any) -> np.ndarray:
        K1, K2 = self._many(thetas, X1, X2)
        return K1 * K2

    def diag_many(self, thetas: np.ndarray, X: Any) -> np.ndarray:
        D1, D2 = self._many(thetas, X, diag=True)
        return D1 * D2

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

    def evaluate_many(self, thetas: np.ndarray, X1: Any, X2: Any) -> np.ndarray:
        K1, K2 = self._many(thetas, X1, X2)
        return K1 + K2

    def diag_many(self, thetas: np.ndarray, X: Any) -> np.ndarray:
        D1, D2 = self._many(thetas, X, diag=True)
        return D1 + D2

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
