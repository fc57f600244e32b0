"""FABOLAS's two GP models: their kernels, inputs and targets (paper 001).

The loss and the cost are modelled over ``(x, s~)``, a configuration's
unit-cube encoding ``x`` plus the training fraction on a log scale
``s~ = log(s / s_min) / log(1 / s_min)`` (:class:`FractionAxis`), with the
kernels of eq. 6 (:func:`fabolas_kernels`). The loss model is fitted on log
validation errors (:func:`scores_to_loss`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .basis_kernel import BasisKernel
from .kernels import Kernel, ProductKernel
from .stationary import Matern52

__all__ = [
    "FractionAxis",
    "error_kind",
    "fabolas_kernels",
    "loss_to_scores",
    "scores_to_loss",
]

#: Bounds of the log length scales: paper 001's [-10, 2] (section 3.4), read as
#: bounds on log l; reading them as bounds on log lambda (lambda multiplies the
#: squared distance) would give [-1, 5], which the design page measures and
#: declines.
LOG_LENGTH_BOUNDS = (-10.0, 2.0)
# a perfect score would otherwise give log 0
_ERROR_FLOOR = 1e-4


def fabolas_kernels(n_x: int, with_fraction: bool = True) -> tuple[Kernel, Kernel]:
    """The loss and cost kernels of FABOLAS (paper 001, eq. 6).

    Parameters
    ----------
    n_x : int
        Width of the configuration's unit-cube encoding; the fraction
        ``s~`` is column ``n_x``.
    with_fraction : bool, default=True
        False gives the plain Matern kernel over ``x`` (the fallback to
        BO on all data).

    Returns
    -------
    loss_kernel, cost_kernel : Kernel
        ``Matern52_ARD(x) * BasisKernel(s~, "loss")`` and
        ``Matern52_ARD(x) * BasisKernel(s~, "cost")``, log length scales
        bounded to the paper's [-10, 2].

    Examples
    --------
    >>> from skbayes_search.gp.fabolas_kernels import fabolas_kernels
    >>> loss_kernel, cost_kernel = fabolas_kernels(2)
    >>> loss_kernel.k2
    BasisKernel(dim=2, basis='loss')
    """
    x_dims = list(range(int(n_x)))

    def kernel(basis: str) -> Kernel:
        k = Matern52(dims=x_dims, log_length_bounds=LOG_LENGTH_BOUNDS)
        if not with_fraction:
            return k
        return ProductKernel(k, BasisKernel(int(n_x), basis=basis))

    return kernel("loss"), kernel("cost")


class FractionAxis:
    """The training fraction ``s`` as the models' input ``s~`` in [0, 1].

    ``s~ = 1 - log(s) / log(s_min)``, so ``s~ = 0`` is ``min_rows`` rows and
    ``s~ = 1`` all ``n_train`` rows.

    Parameters
    ----------
    n_train : int
        Training rows of the smallest split.
    min_rows : int
        Fewest rows per fit.
    enabled : bool, default=True
        False (plain BO on all data): inputs carry no ``s~`` column and every
        fraction is 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp.fabolas_kernels import FractionAxis
    >>> axis = FractionAxis(n_train=1000, min_rows=10)
    >>> axis.to_s(np.array([0.01, 0.1, 1.0]))
    array([0. , 0.5, 1. ])
    >>> axis.fraction_of(0.5)
    0.1
    """

    def __init__(self, n_train: int, min_rows: int, enabled: bool = True) -> None:
        self.n_train = int(n_train)
        self.min_rows = int(min_rows)
        self.enabled = bool(enabled)
        self.log_smin = float(np.log(min_rows / n_train))

    def to_s(self, fraction: Any) -> np.ndarray:
        """``s~`` of training fractions (clipped to [0, 1])."""
        if self.log_smin >= 0.0:
            # min_rows covers every row: one size, all data
            return np.ones_like(np.asarray(fraction, dtype=float))
        s = 1.0 - np.log(np.asarray(fraction, dtype=float)) / self.log_smin
        return np.clip(s, 0.0, 1.0)

    def to_fraction(self, s: Any) -> np.ndarray:
        """Training fractions of ``s~`` values."""
        return np.exp((1.0 - np.asarray(s, dtype=float)) * self.log_smin)

    def snap(self, s: Any) -> np.ndarray:
        """``s~`` of the row count a fit at ``s~`` really sees."""
        rows = np.round(self.to_fraction(np.clip(s, 0.0, 1.0)) * self.n_train)
        rows = np.clip(rows, self.min_rows, self.n_train)
        return self.to_s(rows / self.n_train)

    def snap_inputs(self, U: np.ndarray, snap_x: Any) -> np.ndarray:
        """Model inputs ``U`` with ``x`` snapped by ``snap_x`` and ``s~`` to
        whole rows."""
        U = np.array(U, dtype=float, copy=True)
        n_x = U.shape[1] - 1 if self.enabled else U.shape[1]
        U[:, :n_x] = snap_x(U[:, :n_x])
        if self.enabled:
            U[:, n_x] = self.snap(U[:, n_x])
        return U

    def input_fractions(self, U: np.ndarray) -> np.ndarray:
        """Training fractions of model inputs ``U`` (all 1 when disabled)."""
        return self.to_fraction(U[:, -1]) if self.enabled else np.ones(len(U))

    def fraction_of(self, s: float) -> float:
        """The fraction a trial proposed at ``s~`` runs on (whole rows)."""
        if not self.enabled:
            return 1.0
        rows = round(float(self.to_fraction(s)) * self.n_train)
        return min(1.0, max(rows, self.min_rows) / self.n_train)

    def with_s(self, X: np.ndarray, s: Any) -> np.ndarray:
        """Model inputs: ``X`` with the column ``s~`` appended (if enabled)."""
        if not self.enabled:
            return np.asarray(X, dtype=float)
        s_col = np.broadcast_to(np.asarray(s, dtype=float), (X.shape[0],))
        return np.column_stack([X, s_col])


def error_kind(scores: np.ndarray) -> str:
    """How scores map to a positive error whose log the loss model fits.

    ``"neg"`` (all scores <= 0, e.g. ``neg_mean_squared_error``): error =
    -score; ``"one_minus"`` (all scores <= 1, e.g. accuracy, r2): error =
    1 - score; otherwise ``"linear"``: the model fits -score directly.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp.fabolas_kernels import error_kind
    >>> error_kind(np.array([0.7, 0.9])), error_kind(np.array([-3.0, np.nan]))
    ('one_minus', 'neg')
    """
    ok = scores[np.isfinite(scores)]
    if ok.size == 0 or np.all(ok <= 0):
        return "neg"
    if np.all(ok <= 1):
        return "one_minus"
    return "linear"


def scores_to_loss(scores: np.ndarray, kind: str) -> np.ndarray:
    """Loss-model targets (to minimise); failures get the worst finite loss.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp.fabolas_kernels import scores_to_loss
    >>> np.exp(scores_to_loss(np.array([0.9, np.nan]), "one_minus")).round(3)
    array([0.1, 0.1])
    """
    if kind == "neg":
        loss = np.log(np.maximum(-scores, _ERROR_FLOOR))
    elif kind == "one_minus":
        loss = np.log(np.maximum(1.0 - scores, _ERROR_FLOOR))
    else:
        loss = -scores
    finite = np.isfinite(loss)
    loss[~finite] = loss[finite].max() if finite.any() else 0.0
    return loss


def loss_to_scores(loss: np.ndarray, kind: str) -> np.ndarray:
    """Inverse of :func:`scores_to_loss` for predicted losses."""
    if kind == "neg":
        return -np.exp(loss)
    if kind == "one_minus":
        return 1.0 - np.exp(loss)
    return -loss
