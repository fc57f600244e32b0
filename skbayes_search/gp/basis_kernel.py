"""The basis-function kernel over one input dimension (FABOLAS's kernel on
the subset size)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernels import Kernel, _as_2d

__all__ = ["BasisKernel"]


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
