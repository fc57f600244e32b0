"""Acquisition functions (minimisation convention).

The elementwise functions :func:`log_ei`, :func:`log_pi` and :func:`lcb` work
on predictive means and standard deviations. :func:`make_acquisition` turns a
fitted :class:`~skbayes_search.gp.GPSurrogate` (read through its posterior
interface) into a vectorised function of
unit-cube points to *maximise*: the acquisition integrated over the
hyperparameter samples (Snoek et al. 2012, eq. 6), optionally divided by the
predicted cost (EI per second) and averaged over Monte Carlo fantasies of
pending evaluations (eq. 7).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtr

from .._numerics import log_mean_exp, single_blas_thread
from ..gp import PosteriorStack

__all__ = [
    "ACQUISITIONS",
    "lcb",
    "log_ei",
    "log_h",
    "log_inverse_cost",
    "log_pi",
    "make_acquisition",
]

ACQUISITIONS = ("ei", "ei_per_second", "pi", "lcb")

_INV_SQRT2 = 1.0 / np.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)
_SQRT_2PI = np.sqrt(2.0 * np.pi)
_TINY = np.finfo(float).tiny
_HALF_LOG_PI_2 = 0.5 * np.log(np.pi / 2.0)
# below this the Mills-ratio series is exact to double precision and the
# erfcx form starts losing digits to cancellation in 1 - |u| erfcx(.)
_U_ASYMPTOTIC = -1e3


def log_h(u: Any) -> np.ndarray:
    """``log(phi(u) + u Phi(u))``, the log of EI for unit std, stable for all u.

    Follows the LogEI formulation of Ament et al. (NeurIPS 2023): the direct
    formula for ``u > -1``; ``log phi(u) + log1mexp(w)`` with
    ``w = log(erfcx(-u/sqrt2) |u|) + log(pi/2)/2`` for moderately negative
    ``u`` (there ``-0.26 < w < 0``, so ``log1mexp(w) = log(-expm1(w))`` is
    accurate); and the asymptotic expansion ``log phi(u) - 2 log|u| +
    log(1 - 3/u^2 + 15/u^4)`` far in the tail, where ``1 - |u| erfcx(.)``
    would lose digits to cancellation.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.acquisition import log_h
    >>> round(float(np.exp(log_h(0.0))), 4)  # phi(0) = 1 / sqrt(2 pi)
    0.3989
    >>> bool(np.isfinite(log_h(-1e6)))  # no underflow far in the tail
    True
    """
    u = np.asarray(u, dtype=float)
    # every branch is evaluated on clipped input (no warnings, no boolean
    # indexing: this runs in the acquisition optimiser's inner loop), and a
    # branch no element needs is skipped (a NaN fails both tests below, so
    # with one every branch is computed)
    uu = np.maximum(u, -1.0)
    upper = np.log(np.exp(-0.5 * uu * uu) / _SQRT_2PI + uu * ndtr(uu))
    lowest = np.min(u) if u.size else 0.0
    if lowest > -1.0:
        return upper
    um = np.clip(u, _U_ASYMPTOTIC, -1.0)
    w = np.log(erfcx(-um * _INV_SQRT2) * -um) + _HALF_LOG_PI_2
    mid = -0.5 * um * um - _LOG_SQRT_2PI + np.log(-np.expm1(w))
    if lowest >= _U_ASYMPTOTIC:
        return np.where(u > -1.0, upper, mid)
    ut = np.minimum(u, _U_ASYMPTOTIC)
    inv2 = 1.0 / (ut * ut)
    tail = (
        -0.5 * ut * ut
        - _LOG_SQRT_2PI
        + np.log(inv2)
        + np.log1p(inv2 * (15.0 * inv2 - 3.0))
    )
    return np.where(u > -1.0, upper, np.where(u < _U_ASYMPTOTIC, tail, mid))


def log_ei(mean: Any, std: Any, best: Any) -> np.ndarray:
    """Log expected improvement below ``best`` (minimisation), elementwise.

    ``EI = std * h(u)`` with ``u = (best - mean) / std``; finite (no
    underflow) however far ``mean`` lies above ``best``.

    Parameters
    ----------
    mean, std, best : array-like, broadcastable
        Predictive mean and (positive) standard deviation; incumbent value.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.acquisition import log_ei
    >>> round(float(np.exp(log_ei(0.0, 1.0, 0.0))), 4)
    0.3989
    >>> bool(np.isfinite(log_ei(50.0, 1.0, 0.0)))  # however far above best
    True
    """
    std = np.maximum(np.asarray(std, float), _TINY)
    u = (np.asarray(best, float) - np.asarray(mean, float)) / std
    return np.log(std) + log_h(u)


def log_pi(mean: Any, std: Any, best: Any) -> np.ndarray:
    """Log probability of improving on ``best`` (minimisation), elementwise.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.acquisition import log_pi
    >>> float(np.exp(log_pi(0.0, 1.0, 0.0)))
    0.5
    """
    std = np.maximum(np.asarray(std, float), _TINY)
    return log_ndtr((np.asarray(best, float) - np.asarray(mean, float)) / std)


def lcb(mean: Any, std: Any, kappa: float) -> np.ndarray:
    """Lower confidence bound ``mean - kappa * std`` (to be minimised).

    Examples
    --------
    >>> from skbayes_search.acquisition import lcb
    >>> lcb([1.0, 2.0], [0.5, 0.1], kappa=2.0)
    array([0. , 1.8])
    """
    return np.asarray(mean, float) - kappa * np.asarray(std, float)


def log_inverse_cost(cost_surrogate: Any, U: np.ndarray) -> np.ndarray:
    """Log of the expected inverse duration, ``log E[1 / c(U)]``.

    The cost model is a GP on ``log c``: with posterior mean ``mu`` and
    variance ``var`` at a point, ``1 / c`` is log-normal with mean
    ``exp(-mu + var / 2)`` (Snoek et al. 2012, section 3.2, EI per second),
    averaged here over the hyperparameter samples. Uncertain costs are thus
    favoured over ``exp(-mu)`` alone, as the expected rate of improvement
    asks.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import GPSurrogate
    >>> X = np.linspace(0, 1, 8)[:, None]
    >>> cost = GPSurrogate(hyperparameter_sampling="map", random_state=0)
    >>> cost = cost.fit(X, np.log(1.0 + 9.0 * X[:, 0]))  # 1 s to 10 s
    >>> rates = np.exp(log_inverse_cost(cost, np.array([[0.0], [1.0]])))
    >>> bool(rates[0] > 5 * rates[1])  # the cheap end is about 10 times faster
    True
    """
    return _log_inverse_cost(PosteriorStack(cost_surrogate.posteriors), U)


def _log_inverse_cost(stack: PosteriorStack, U: np.ndarray) -> np.ndarray:
    mu, var = stack.predict(U)
    return log_mean_exp(-mu[:, :, 0] + 0.5 * var, axis=1)


def make_acquisition(
    surrogate: Any,
    acquisition: str = "ei",
    *,
    y_best: float,
    cost_surrogate: Any = None,
    X_pending: Any = None,
    n_fantasies: int | None = None,
    kappa: float = 2.0,
    rng: np.random.Generator | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """Integrated acquisition of a fitted surrogate as a function to maximise.

    Parameters
    ----------
    surrogate : GPSurrogate
        Fitted loss surrogate.
    acquisition : {"ei", "ei_per_second", "pi", "lcb"}, default="ei"
        Returned values: log of the integrated EI (original units), log EI plus
        the log of the expected inverse duration (:func:`log_inverse_cost`),
        log of the integrated PI, or minus the average LCB.
    y_best : float
        Incumbent loss in original units (usually the smallest observed loss).
    cost_surrogate : GPSurrogate, optional
        Fitted on log cost; required for ``"ei_per_second"``.
    X_pending : array-like of shape (k, d), optional
        Points under evaluation; the acquisition is averaged over Monte Carlo
        fantasies of their outcomes.
    n_fantasies : int, optional
        Joint fantasies per hyperparameter sample. Default: about 32 in total,
        ``max(3, ceil(32 / n_models))`` per sample.
    kappa : float, default=2.0
        LCB exploration weight.
    rng : numpy.random.Generator, optional
        Draws the fantasies (once, so the returned function is deterministic).

    Returns
    -------
    callable
        ``func(U: ndarray (m, d)) -> ndarray (m,)`` to maximise.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.acquisition import make_acquisition
    >>> from skbayes_search.gp import GPSurrogate
    >>> X = np.linspace(0, 1, 6)[:, None]
    >>> y = (X[:, 0] - 0.4) ** 2
    >>> gp = GPSurrogate(hyperparameter_sampling="map", random_state=0).fit(X, y)
    >>> acquisition = make_acquisition(gp, "ei", y_best=float(y.min()))
    >>> values = acquisition(np.array([[0.4], [0.95]]))
    >>> bool(values[0] > values[1])  # more expected improvement near the minimum
    True
    """
    if acquisition not in ACQUISITIONS:
        raise ValueError(
            f"acquisition must be one of {ACQUISITIONS}, got {acquisition!r}."
        )
    if acquisition == "ei_per_second" and cost_surrogate is None:
        raise ValueError("acquisition='ei_per_second' needs a cost_surrogate.")
    posteriors = surrogate.posteriors
    n_models = len(posteriors)

    pending = None if X_pending is None else np.atleast_2d(np.asarray(X_pending, float))
    if pending is not None and pending.shape[0] > 0:
        if rng is None:
            raise ValueError("rng is required to draw fantasies for X_pending.")
        if n_fantasies is None:
            n_fantasies = max(3, int(np.ceil(32 / n_models)))
        with single_blas_thread():
            fantasies = surrogate.fantasize(pending, n_fantasies, rng)
        # the incumbent of each fantasy includes its own fantasised values
        members = [
            (post, np.minimum(float(y_best), draws.min(axis=0)))
            for post, draws in fantasies
        ]
    else:
        members = [(p, np.array([float(y_best)])) for p in posteriors]

    bests = np.concatenate([best for _, best in members])
    # building a stack does no arithmetic: its inverse factors are computed
    # at its first batched prediction, inside func's single BLAS thread
    stack = PosteriorStack([post for post, _ in members])
    costs = (
        PosteriorStack(cost_surrogate.posteriors)
        if acquisition == "ei_per_second"
        else None
    )

    def func(U: np.ndarray) -> np.ndarray:
        U = np.atleast_2d(np.asarray(U, dtype=float))
        m = U.shape[0]
        with single_blas_thread():
            # predictions of every (sample, fantasy) pair side by side, so the
            # acquisition formula runs once on an (m, n_members) array
            mean, var = stack.predict(U)
            mus = mean.reshape(m, bests.size)
            sds = np.repeat(np.sqrt(var), stack.n_targets, axis=1)
            if acquisition in ("ei", "ei_per_second"):
                out = log_mean_exp(log_ei(mus, sds, bests), axis=1)
            elif acquisition == "pi":
                out = log_mean_exp(log_pi(mus, sds, bests), axis=1)
            else:
                # minus the LCB; averaging over fantasies of the conditioned
                # means gives back the unconditioned mean
                out = -lcb(mus, sds, kappa).mean(axis=1)
            if costs is not None:
                out += _log_inverse_cost(costs, U)
        return out

    return func
