"""Kernels of the transfer-learning GP (Yogatama & Mann 2014).

The transfer GP sees every observation as ``[x, z, dataset, group]``: the
unit-cube hyperparameters ``x`` (``p`` columns), the standardised
meta-features ``z`` of the dataset the observation comes from (``q`` columns,
for the SQE kernel only), then a column holding the index of that dataset,
then a 0/1 column that is 1 for the current dataset and its nearest prior
datasets (the "neighbour group"). The kernels here read those columns; they
plug into :class:`~skbayes_search.gp.GaussianProcess` through the
:class:`~skbayes_search.gp.kernels.Kernel` interface and compose with its
:class:`~skbayes_search.gp.kernels.SumKernel` and
:class:`~skbayes_search.gp.kernels.ProductKernel`.

Two response-surface kernels are built from them:

- :func:`sqe_kernel`: squared-exponential ARD on ``(x, z)`` for all pairs,
  whatever their dataset (one common response surface, smooth in the
  dataset features);
- :func:`mkl_kernel`: ``w0 * SE-ARD(x, x') * [same dataset] + w1 *
  NN(x, x') * g g'``, where ``g`` is the neighbour-group flag and ``NN`` the
  positive semi-definite variant of the paper's ``1 - ||x - x'|| / B``
  described in :class:`NeighbourKernel`.

Why the group relation is ``g g'`` rather than the paper's "either point in
a neighbour dataset", and why the distance kernel is corrected, is explained
in ``doc/design/transfer.rst``: both keep the kernel positive semi-definite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.spatial.distance import cdist, pdist, squareform

from .kernels import Kernel, ProductKernel, SumKernel, _as_2d
from .stationary import StationaryARD

__all__ = [
    "DatasetKernel",
    "NeighbourKernel",
    "SquaredExponential",
    "check_kernel_weights",
    "mkl_kernel",
    "sqe_kernel",
]


def _check_dims(dims: Sequence[int] | None) -> list[int] | None:
    if dims is None:
        return None
    dims = [int(d) for d in dims]
    if not dims or min(dims) < 0:
        raise ValueError(f"dims must be non-empty column indices, got {dims!r}.")
    return dims


class SquaredExponential(StationaryARD):
    """Squared-exponential kernel with one length scale per column (ARD).

    ``k(x, x') = exp(-r^2 / 2)`` with ``r^2 = sum_d (x_d - x'_d)^2 / l_d^2``
    over the columns ``dims``. The hyperparameters are ``log l_d`` with a flat
    prior on ``log_length_bounds`` (inputs live in the unit cube). The signal
    amplitude is the GP's own hyperparameter, as for every kernel here.

    Parameters
    ----------
    dims, log_length_bounds, n_dims
        The columns looked at (non-empty, non-negative when given), the
        bounds of every log length scale and the input width when ``dims`` is
        None; see :class:`~skbayes_search.gp.stationary.StationaryARD`.
    """

    # unlike Matern52, empty or negative column lists are refused
    _dims_from = staticmethod(_check_dims)

    def _profile(self, r2: np.ndarray) -> np.ndarray:
        return np.exp(-0.5 * r2)

    def _profile_slope(self, r2: np.ndarray) -> np.ndarray:
        # -2 d/d(r^2) exp(-r^2 / 2) is the profile itself
        return self._profile(r2)

    # the generic contraction, not StationaryARD's expanded form, which rounds
    # differently and would move the transfer searches' results in the last bits
    gradient_dot = Kernel.gradient_dot


class _ParameterFree(Kernel):
    """A kernel with no hyperparameters of its own (a fixed correlation)."""

    @property
    def n_params(self) -> int:
        return 0

    @property
    def bounds(self) -> list[tuple[float, float]]:
        return []

    def gradient(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        return np.empty((0, *pre.shape))


class NeighbourKernel(_ParameterFree):
    """The paper's nearest-neighbour kernel ``1 - ||x - x'|| / B``, made PSD.

    Yogatama & Mann's second kernel is "one minus the normalized Euclidean
    distance", ``1 - ||x - x'||_2 / B`` with ``B`` a bound on ``||x||_2``;
    here ``B`` defaults to ``sqrt(p)``, ``p`` the number of columns looked
    at, which bounds both the norm of unit-cube inputs and their distances.
    As written it is not positive semi-definite on every set of points of
    the cube (from ``p = 8`` the corners with the centre and a smaller cube
    inside give a negative eigenvalue). Lévy's Brownian motion gives the
    remedy: ``b(x, x') = (||x - o|| + ||x' - o|| - ||x - x'||) / B`` is PSD for
    any centre ``o``, so with ``o`` the centre of the cube and
    ``a(x) = ||x - o|| / B`` this class uses

    ``k(x, x') = (1 - a(x)) (1 - a(x')) + b(x, x')
    = 1 - ||x - x'|| / B + a(x) a(x')``,

    a rank-one PSD term plus ``b``, so PSD for any ``B > 0``. It is the
    paper's kernel plus ``a(x) a(x')``, which on the unit cube with
    ``B = sqrt(p)`` is at most ``1/4`` (two corners) and about ``1/12`` on
    average. The similarity falls linearly with the distance, so the
    transferred surface is made of cones centred on the neighbours' trials:
    it peaks where they scored well. (A squared distance would make it an
    isotropic quadratic with a linear trend, whose extremes lie on the faces
    of the space.) The kernel has no hyperparameters, as in the paper.

    Parameters
    ----------
    dims : sequence of int
        Columns of ``X`` holding the unit-cube hyperparameters.
    bound : float, default=None
        ``B``; ``sqrt(len(dims))`` when None.
    """

    def __init__(self, dims: Sequence[int], bound: float | None = None):
        self.dims = _check_dims(dims)
        if self.dims is None:
            raise ValueError("NeighbourKernel needs the hyperparameter columns.")
        self.bound = float(math.sqrt(len(self.dims)) if bound is None else bound)
        if not (np.isfinite(self.bound) and self.bound > 0):
            raise ValueError(f"bound must be a positive number, got {bound!r}.")

    def __repr__(self) -> str:
        return f"NeighbourKernel(dims={self.dims}, bound={self.bound:g})"

    def set_n_dims(self, n_dims: int) -> NeighbourKernel:
        if n_dims < max(self.dims) + 1:
            raise ValueError(
                f"NeighbourKernel uses column {max(self.dims)} but X has {n_dims}."
            )
        return self

    def _radius(self, x: np.ndarray) -> np.ndarray:
        """``a(x)``: the distance from the cube's centre, over ``B``."""
        return np.sqrt(np.einsum("ij,ij->i", x - 0.5, x - 0.5)) / self.bound

    def precompute(self, X1: Any, X2: Any = None) -> Any:
        # no hyperparameters: the whole matrix is theta-independent
        x1 = _as_2d(X1)[:, self.dims]
        a1 = self._radius(x1)
        if X2 is None:
            # exactly symmetric, with an exact zero distance on the diagonal
            return 1.0 - squareform(pdist(x1)) / self.bound + np.outer(a1, a1)
        x2 = _as_2d(X2)[:, self.dims]
        return 1.0 - cdist(x1, x2) / self.bound + np.outer(a1, self._radius(x2))

    def evaluate(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        return pre

    def diag(self, theta: np.ndarray, X: Any) -> np.ndarray:
        return 1.0 + self._radius(_as_2d(X)[:, self.dims]) ** 2


class DatasetKernel(_ParameterFree):
    """A fixed weight times a relation between the datasets of two points.

    ``relation="same"``: ``weight * [c(x) == c(x')]`` on column ``column``
    (the dataset index), i.e. a block-diagonal matrix of ones per dataset.
    ``relation="product"``: ``weight * c(x) c(x')`` (with 0/1 group flags,
    one exactly when both points are in the group). Both are PSD; neither
    has hyperparameters. Multiplied with a kernel on ``x`` they restrict it
    to pairs in that relation.

    Parameters
    ----------
    column : int
        Column of ``X`` read.
    relation : {"same", "product"}, default="same"
    weight : float, default=1.0
        Non-negative multiplier (a kernel weight of the MKL combination).
    """

    def __init__(self, column: int, relation: str = "same", weight: float = 1.0):
        if relation not in ("same", "product"):
            raise ValueError(f"relation must be 'same' or 'product', got {relation!r}.")
        weight = float(weight)
        if not (np.isfinite(weight) and weight >= 0):
            raise ValueError(f"weight must be a non-negative number, got {weight!r}.")
        self.column = int(column)
        self.relation = relation
        self.weight = weight

    def __repr__(self) -> str:
        return (
            f"DatasetKernel(column={self.column}, relation={self.relation!r}, "
            f"weight={self.weight:g})"
        )

    def set_n_dims(self, n_dims: int) -> DatasetKernel:
        if n_dims < self.column + 1:
            raise ValueError(
                f"DatasetKernel reads column {self.column} but X has {n_dims}."
            )
        return self

    def precompute(self, X1: Any, X2: Any = None) -> Any:
        c1 = _as_2d(X1)[:, self.column]
        c2 = c1 if X2 is None else _as_2d(X2)[:, self.column]
        if self.relation == "same":
            M = (c1[:, None] == c2[None, :]).astype(float)
        else:
            M = np.outer(c1, c2)
        return self.weight * M

    def evaluate(self, theta: np.ndarray, pre: Any) -> np.ndarray:
        return pre

    def diag(self, theta: np.ndarray, X: Any) -> np.ndarray:
        c = _as_2d(X)[:, self.column]
        return self.weight * (np.ones_like(c) if self.relation == "same" else c * c)


def sqe_kernel(n_hyper: int, n_meta: int = 0) -> Kernel:
    """SE-ARD over the hyperparameters and dataset features, for all pairs.

    The paper's SQE form (its section 3.3): the GP input is the
    hyperparameters extended with the dataset's features, so the length scale
    of each feature says how far a dataset's response surface carries to
    datasets unlike it. ``n_meta=0`` pools every dataset on the
    hyperparameters alone.

    Parameters
    ----------
    n_hyper : int
        Number of unit-cube hyperparameter columns (the first ones of ``X``).
    n_meta : int, default=0
        Number of dataset-feature columns that follow them.

    Returns
    -------
    Kernel
        Its hyperparameters are the ``n_hyper + n_meta`` log length scales.
    """
    return SquaredExponential(dims=range(int(n_hyper) + int(n_meta)))


def check_kernel_weights(weights: Any) -> tuple[float, float]:
    """The ``kernel_weights`` of :func:`mkl_kernel`, validated.

    Raises
    ------
    ValueError
        Unless two finite non-negative numbers summing to 1.

    Examples
    --------
    >>> from skbayes_search.gp.transfer_kernels import check_kernel_weights
    >>> check_kernel_weights([0.3, 0.7])
    (0.3, 0.7)
    """
    w = np.asarray(weights, dtype=float).ravel()
    if (
        w.size != 2
        or not np.all(np.isfinite(w))
        or np.any(w < 0)
        or not math.isclose(float(w.sum()), 1.0, abs_tol=1e-9)
    ):
        raise ValueError(
            "kernel_weights must be two non-negative numbers summing to 1 "
            "(same-dataset SE weight, nearest-neighbour weight), got "
            f"{weights!r}."
        )
    return float(w[0]), float(w[1])


def mkl_kernel(n_hyper: int, weights: Sequence[float] = (0.3, 0.7)) -> Kernel:
    """The multiple-kernel combination of Yogatama & Mann (2014), made PSD.

    ``k = w0 * SE-ARD(x, x') * [d == d'] + w1 * NN(x, x') * g g'`` on inputs
    ``[x (n_hyper columns), d (dataset index), g (neighbour-group flag)]``;
    ``NN`` is :class:`NeighbourKernel` (see ``doc/design/transfer.rst`` for why this
    form).

    Parameters
    ----------
    n_hyper : int
        Number of unit-cube hyperparameter columns.
    weights : (float, float), default=(0.3, 0.7)
        ``(w0, w1)``.

    Returns
    -------
    Kernel
        Its hyperparameters are the SE log length scales.
    """
    n_hyper = int(n_hyper)
    hyper = range(n_hyper)
    w0, w1 = (float(w) for w in weights)
    same = ProductKernel(
        SquaredExponential(dims=hyper), DatasetKernel(n_hyper, "same", w0)
    )
    shared = ProductKernel(
        NeighbourKernel(dims=hyper), DatasetKernel(n_hyper + 1, "product", w1)
    )
    return SumKernel(same, shared)
