"""Expected improvement of the trade-off ``T = L - alpha * o``.

``L`` is the latent score of a loss surrogate (``L = -loss``) and
``o = exp(g) / time_scale`` with ``g`` the latent log training seconds of an
independent time surrogate, so ``o`` is log-normal. Given ``g``, ``T`` is
Gaussian and its expected improvement closed form; :func:`log_ei_tradeoff`
takes the expectation over ``g`` by Gauss-Hermite quadrature, and
:func:`make_tradeoff_acquisition` integrates it over the hyperparameter
samples of both surrogates and over fantasies of pending points. Both
surrogates are read only through their posterior interface
(:attr:`~skbayes_search.gp.GPSurrogate.posteriors` and
:meth:`~skbayes_search.gp.GPSurrogate.fantasize`). The design and its
measurements: ``doc/design/tradeoff.rst``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._numerics import gauss_hermite, log_mean_exp
from .analytic import log_ei

__all__ = ["log_ei_tradeoff", "make_tradeoff_acquisition"]

# Gauss-Hermite nodes of the expectation over the log time (accuracy in the
# design notes)
N_NODES = 20
# Joint fantasies per hyperparameter sample for the 2nd.. point of a batch.
N_FANTASIES = 4
# Cap on the log normalised time at a node, so an absurd prediction gives a
# huge but finite negative log EI instead of -inf or an overflowing u^2.
_LOG_TIME_CAP = 50.0
# Quadrature terms evaluated at once, bounding the temporaries of log_ei.
_CHUNK_TERMS = 1 << 19

_NODES, _LOG_WEIGHTS = gauss_hermite(N_NODES, log=True)
# Bins of the node times in the acquisition's upper bound (_upper_bound).
_N_BOUND_BINS = 16
# Nodes within this many standard deviations set the bins' span.
_BOUND_Z = 4.5
_TINY_WIDTH = 1e-12
_BOUND_SLACK = 1e-9


def log_ei_tradeoff(
    mean_L: Any,
    std_L: Any,
    mean_g: Any,
    std_g: Any,
    alpha: float,
    best: Any,
    axis: tuple[int, ...] = (),
) -> np.ndarray:
    """Log ``E[max(L - alpha * o - best, 0)]``, ``L`` Gaussian, ``o`` log-normal.

    ``L ~ N(mean_L, std_L^2)`` and ``o = exp(g)``, ``g ~ N(mean_g, std_g^2)``,
    independent (``g`` is the log of the *normalised* time). Each of the
    :data:`N_NODES` Gauss-Hermite nodes of ``g`` gives a closed-form log EI
    (:func:`~skbayes_search.acquisition.log_ei` on ``-T``), combined in log
    space, so the value stays finite and sloped where the EI underflows. The
    result never exceeds the log EI of ``L`` alone.

    Parameters
    ----------
    mean_L, std_L, mean_g, std_g, best : array-like, broadcastable
        Score mean and standard deviation, log normalised-time mean and
        standard deviation, incumbent ``T*``.
    alpha : float
        Weight of the normalised time, ``> 0``.
    axis : tuple of int, default=()
        Axes of the broadcast inputs to *average* over as well (e.g.
        hyperparameter samples and fantasies): the log of the mean of
        ``EI_T`` over them is returned.

    Returns
    -------
    ndarray
        Log ``EI_T``, of the broadcast shape without ``axis``.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.acquisition.tradeoff import log_ei_tradeoff
    >>> fast = log_ei_tradeoff(0.9, 0.02, np.log(0.01), 0.5, 0.3, 0.85)
    >>> slow = log_ei_tradeoff(0.9, 0.02, np.log(0.5), 0.5, 0.3, 0.85)
    >>> bool(fast > slow)
    True
    >>> log_ei_tradeoff([0.9, 0.8], 0.02, -1.0, 0.5, 0.3, 0.85, axis=(0,)).shape
    ()
    """
    mean_L = np.asarray(mean_L, float)[..., None]
    std_L = np.asarray(std_L, float)[..., None]
    best = np.asarray(best, float)[..., None]
    log_o = np.minimum(
        np.asarray(mean_g, float)[..., None]
        + np.asarray(std_g, float)[..., None] * _NODES,
        _LOG_TIME_CAP,
    )
    vals = log_ei(alpha * np.exp(log_o) - mean_L, std_L, -best) + _LOG_WEIGHTS
    axis = tuple(a % (vals.ndim - 1) for a in axis)
    n_avg = int(np.prod([vals.shape[a] for a in axis]))
    # the averaged axes and the nodes side by side in the last axis
    vals = np.moveaxis(vals, axis, range(-len(axis) - 1, -1))
    vals = vals.reshape(*vals.shape[: vals.ndim - len(axis) - 1], -1)
    # log of the node sum, then of the mean over the averaged axes; not
    # log_mean_exp(vals) + log(N_NODES), whose rounding moves the pinned path
    top = vals.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    total = np.exp(vals - top).sum(axis=-1)
    with np.errstate(divide="ignore"):
        return np.log(total) + top[..., 0] - np.log(n_avg)


def _upper_bound(
    mean_L: np.ndarray,
    std_L: np.ndarray,
    mean_g: np.ndarray,
    std_g: np.ndarray,
    alpha: float,
    best: np.ndarray,
) -> np.ndarray:
    """An upper bound on :func:`log_ei_tradeoff` averaged over the samples.

    The quadrature's terms are the score's EI at ``best + alpha * o`` for the
    nodes ``o`` of every time sample, and that EI falls as ``o`` grows. Each
    candidate's node times are binned (:data:`_N_BOUND_BINS` bins, even in
    ``log o`` over the central nodes, the first from the smallest node) and
    every node is replaced by its bin's lower edge, and each fantasy's
    ``best`` by its smallest over the time samples. The node weights of a
    bin then add up over the time samples, so the bound costs one EI per
    loss sample, fantasy and bin instead of one per loss sample, time
    sample, fantasy and node: with ten time samples, a twelfth as many.
    """
    n = mean_L.shape[0]
    n_fant = mean_L.shape[3]
    n_avg = mean_L.shape[1] * mean_g.shape[2] * n_fant
    # (candidates, time samples, fantasies, nodes)
    log_o = np.minimum(
        mean_g[:, 0, :, :, None] + std_g[:, 0, :, :, None] * _NODES, _LOG_TIME_CAP
    )
    # the first edge is the smallest node time; the others span evenly the
    # node times of the central nodes, so the far nodes (of negligible
    # weight) do not widen the bins
    lo = log_o.min(axis=(1, 2, 3))
    inner = log_o[..., np.abs(_NODES) <= _BOUND_Z]
    a = inner.min(axis=(1, 2, 3))
    width = np.maximum(inner.max(axis=(1, 2, 3)) - a, _TINY_WIDTH) / (_N_BOUND_BINS - 1)
    edges = np.concatenate(
        [lo[:, None], a[:, None] + width[:, None] * np.arange(_N_BOUND_BINS - 1)],
        axis=1,
    )
    offset = (log_o - a[:, None, None, None]) / width[:, None, None, None]
    bins = np.clip(np.floor(offset) + 1, 0, _N_BOUND_BINS - 1).astype(int)
    # a node that rounding put in the bin above its own
    below = log_o < np.take_along_axis(edges, bins.reshape(n, -1), axis=1).reshape(
        bins.shape
    )
    bins = bins - below
    # summed node weights per (candidate, fantasy, bin)
    flat = (
        np.arange(n)[:, None, None, None] * n_fant
        + np.arange(n_fant)[None, None, :, None]
    ) * _N_BOUND_BINS + bins
    weights = np.broadcast_to(np.exp(_LOG_WEIGHTS), log_o.shape)
    W = np.bincount(
        flat.ravel(), weights=weights.ravel(), minlength=n * n_fant * _N_BOUND_BINS
    ).reshape(n, 1, n_fant, _N_BOUND_BINS)
    # (candidates, loss samples, fantasies, bins)
    best_lo = best.min(axis=1)[None, :, :, None]
    vals = log_ei(
        alpha * np.exp(edges)[:, None, None, :] - mean_L[:, :, 0, :, None],
        std_L[:, :, 0, :, None],
        -best_lo,
    )
    with np.errstate(divide="ignore"):
        vals = vals + np.log(W)
    vals = vals.reshape(n, -1)
    # the terms' sum over the n_avg samples' mean; rounding slack: the bound
    # must not fall below the value it bounds
    return log_mean_exp(vals, axis=1) + np.log(vals.shape[1] / n_avg) + _BOUND_SLACK


def _members(
    surrogate: Any,
    X_pending: np.ndarray | None,
    n_fantasies: int,
    rng: np.random.Generator | None,
) -> list[tuple[Any, np.ndarray | None]]:
    """Per hyperparameter sample: the posterior to predict with, its fantasies.

    Without pending points, each posterior and ``None``; with them, each
    posterior conditioned on ``n_fantasies`` joint noisy draws of the pending
    targets and those draws, shape ``(n_pending, n_fantasies)``, drawn as
    :func:`~skbayes_search.acquisition.make_acquisition` draws them (so at
    ``alpha = 0`` the two agree draw for draw).
    """
    if X_pending is None or len(X_pending) == 0:
        return [(p, None) for p in surrogate.posteriors]
    return surrogate.fantasize(X_pending, n_fantasies, rng)


def make_tradeoff_acquisition(
    loss_surrogate: Any,
    time_surrogate: Any | None,
    *,
    tradeoff_best: float,
    time_scale: float,
    alpha: float,
    X_pending: Any = None,
    rng: np.random.Generator | None = None,
    n_fantasies: int = N_FANTASIES,
    log: bool = True,
) -> Callable[[np.ndarray], np.ndarray]:
    """Expected improvement of ``T = L - alpha * o``, integrated, to maximise.

    ``EI_T(U) = E[max(L(U) - alpha * o(U) - T*, 0)]`` with ``L = -loss`` from
    ``loss_surrogate`` and ``o = exp(g) / time_scale``, ``g`` the log seconds
    of ``time_surrogate``. ``EI_T`` is averaged over every pair of a loss and
    a time hyperparameter sample (the two posteriors are independent, so
    their joint is the product) and, with ``X_pending``, over joint fantasies
    of the pending points under both surrogates: fantasy ``f`` of a loss
    sample pairs with fantasy ``f`` of a time sample, and each fantasy raises
    ``T*`` to its best fantasised pending ``T``. The time scale stays fixed.
    At ``alpha = 0`` (or without a time surrogate) this is the expected
    improvement of the score, equal to
    :func:`~skbayes_search.acquisition.make_acquisition`'s ``"ei"``.

    Parameters
    ----------
    loss_surrogate : GPSurrogate
        Fitted on ``-L`` (losses, original units).
    time_surrogate : GPSurrogate or None
        Fitted on log training seconds; unused when ``alpha == 0``.
    tradeoff_best : float
        The incumbent ``T*``, the best ``T`` of the finished trials.
    time_scale : float
        Seconds that map to ``o = 1``.
    alpha : float
        Weight of the normalised time, ``>= 0``.
    X_pending : array-like of shape (k, d), optional
        Points under evaluation (earlier points of the batch).
    rng : numpy.random.Generator, optional
        Draws the fantasies, once (the returned function is deterministic);
        required with ``X_pending``.
    n_fantasies : int, default=4
        Joint fantasies per hyperparameter sample.
    log : bool, default=True
        Return ``log EI_T`` (same maximiser, usable slopes where ``EI_T``
        underflows) instead of ``EI_T``.

    Returns
    -------
    callable
        ``func(U: ndarray (m, d)) -> ndarray (m,)``. Call it (and build it)
        inside :func:`~skbayes_search._numerics.single_blas_thread`; it does
        not enter one itself, since the optimiser calls it hundreds of times.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.acquisition import make_tradeoff_acquisition
    >>> from skbayes_search.gp import GPSurrogate
    >>> X = np.linspace(0, 1, 6)[:, None]
    >>> loss = GPSurrogate(hyperparameter_sampling="map", random_state=0)
    >>> loss = loss.fit(X, -(0.7 + 0.2 * X[:, 0]))
    >>> time = GPSurrogate(hyperparameter_sampling="map", random_state=1)
    >>> time = time.fit(X, np.log(0.1 + X[:, 0]))
    >>> acq = make_tradeoff_acquisition(
    ...     loss, time, tradeoff_best=0.6, time_scale=1.1, alpha=0.3, log=False
    ... )
    >>> ei_t = acq(np.array([[0.2], [0.9]]))
    >>> ei_t.shape, bool(np.all(ei_t >= 0))
    ((2,), True)
    """
    use_time = alpha > 0 and time_surrogate is not None
    pending = None
    if X_pending is not None and len(X_pending) > 0:
        pending = np.atleast_2d(np.asarray(X_pending, dtype=float))
    loss_members = _members(loss_surrogate, pending, n_fantasies, rng)
    n_fant = n_fantasies if pending is not None else 1
    log_scale = float(np.log(time_scale))
    if use_time:
        time_members = _members(time_surrogate, pending, n_fantasies, rng)
    else:
        time_members = [(None, None)]

    # T* of every (loss sample, time sample, fantasy) combination
    best = np.full((len(loss_members), len(time_members), n_fant), tradeoff_best)
    if pending is not None:
        for i, (_, loss_f) in enumerate(loss_members):
            for j, (_, log_t_f) in enumerate(time_members):
                T_f = -loss_f
                if use_time:
                    T_f = T_f - alpha * np.exp(log_t_f - log_scale)
                best[i, j] = np.maximum(best[i, j], T_f.max(axis=0))

    # posteriors at U, shaped to broadcast as (candidates, loss samples, time
    # samples, fantasies)
    def score_posterior(U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = U.shape[0]
        mean_L = np.empty((n, len(loss_members), 1, n_fant))
        var_L = np.empty((n, len(loss_members), 1, 1))
        for i, (post, _) in enumerate(loss_members):
            mu, var = post.predict(U)
            mean_L[:, i, 0, :] = -mu.reshape(n, -1)
            var_L[:, i, 0, 0] = var
        return mean_L, np.sqrt(var_L)

    def time_posterior(U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = U.shape[0]
        mean_g = np.empty((n, 1, len(time_members), n_fant))
        std_g = np.empty((n, 1, len(time_members), 1))
        for j, (post, _) in enumerate(time_members):
            mu, std = post.mean_std(U)
            mean_g[:, 0, j, :] = mu.reshape(n, -1) - log_scale
            std_g[:, 0, j, 0] = std
        return mean_g, std_g

    def func(U: np.ndarray) -> np.ndarray:
        U = np.atleast_2d(np.asarray(U, dtype=float))
        n = U.shape[0]
        mean_L, std_L = score_posterior(U)
        if not use_time:
            vals = log_ei(-mean_L, std_L, -best).reshape(n, -1)
            out = log_mean_exp(vals, axis=1)
            return out if log else np.exp(out)
        mean_g, std_g = time_posterior(U)
        # candidates per chunk of the (candidates, loss samples, time samples,
        # fantasies, nodes) quadrature tensor
        step = max(1, _CHUNK_TERMS // (best.size * N_NODES))
        out = np.concatenate(
            [
                log_ei_tradeoff(
                    mean_L[c : c + step],
                    std_L[c : c + step],
                    mean_g[c : c + step],
                    std_g[c : c + step],
                    alpha,
                    best,
                    axis=(1, 2, 3),
                )
                for c in range(0, n, step)
            ]
        )
        return out if log else np.exp(out)

    if use_time:

        def upper_bound(U: np.ndarray) -> np.ndarray:
            U = np.atleast_2d(np.asarray(U, dtype=float))
            out = _upper_bound(*score_posterior(U), *time_posterior(U), alpha, best)
            return out if log else np.exp(out)

        func.upper_bound = upper_bound  # type: ignore[attr-defined]
    return func
