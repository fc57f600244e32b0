"""Acquisition maximisation and the one greedy batch proposer.

:func:`maximize` is the one optimiser every strategy uses on its own
acquisition: scrambled Sobol candidates plus Gaussian perturbations of seed
points, L-BFGS-B polish of the best few on the box ``[0, 1]^D`` with
vectorised finite-difference gradients, snapping to valid points, and never a
point from ``exclude``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.optimize import minimize

from ._numerics import single_blas_thread, sobol_points

__all__ = ["QUICK", "maximize", "propose_batch"]

#: Maximisation settings for proposals that must cost little more than a fit
#: of a few milliseconds (cheap trials on small subsets): fewer candidates,
#: one polish (doc/strategies/halving.rst, "Proposal cost").
QUICK = {"n_candidates": 512, "n_polish": 1}

_EXCLUDE_TOL = 1e-9
# polish starts closer than this (max-norm) would usually converge to the same
# optimum; skipping them spends the polish budget on other basins
_MIN_START_SEPARATION = 0.05
_FD_STEP = 1e-5
# perturbation scales around seeds: local refinement up to a wide jump
_PERTURB_SCALES = (0.005, 0.02, 0.05, 0.1, 0.2)
# candidates scored per round when an upper bound orders them
_BOUND_BLOCK = 128


def _clip_unit(U: np.ndarray) -> np.ndarray:
    return np.clip(U, 0.0, 1.0)


def _evaluate(
    func: Callable, U: np.ndarray, chunk: int = 4096, nan: float = -np.inf
) -> np.ndarray:
    if U.shape[0] == 0:
        return np.empty(0)
    vals = np.concatenate(
        [
            np.asarray(func(U[i : i + chunk]), float).ravel()
            for i in range(0, len(U), chunk)
        ]
    )
    if vals.shape[0] != U.shape[0]:
        raise ValueError(
            f"func returned {vals.shape[0]} values for {U.shape[0]} points."
        )
    # nan would poison the ranking; by default the worst possible value
    return np.where(np.isnan(vals), nan, vals)


def _excluded_mask(U: np.ndarray, exclude: np.ndarray | None) -> np.ndarray:
    if exclude is None or exclude.shape[0] == 0 or U.shape[0] == 0:
        return np.zeros(U.shape[0], dtype=bool)
    out = np.zeros(U.shape[0], dtype=bool)
    # chunks keep the (m, n_exclude, D) difference tensor small
    step = max(1, 2_000_000 // max(1, exclude.size))
    for i in range(0, U.shape[0], step):
        d = np.abs(U[i : i + step, None, :] - exclude[None, :, :]).max(axis=2)
        out[i : i + step] = (d <= _EXCLUDE_TOL).any(axis=1)
    return out


def _starts(C: np.ndarray, vals: np.ndarray, n_polish: int) -> list[int]:
    """Rows of the best distinct candidates, the polish's starting points."""
    starts: list[int] = []
    for i in np.argsort(-vals, kind="stable"):
        if len(starts) >= n_polish or not np.isfinite(vals[i]):
            break
        if all(np.max(np.abs(C[i] - C[s])) > _MIN_START_SEPARATION for s in starts):
            starts.append(int(i))
    return starts


def _evaluate_bounded(
    func: Callable,
    bound: Callable,
    C: np.ndarray,
    n_polish: int,
    n_top: int,
    excl: np.ndarray | None,
) -> np.ndarray:
    """``func`` at the candidates that can matter, ``-inf`` at the others.

    Candidates are scored in decreasing order of ``bound`` (an upper bound on
    ``func``) until no unscored one could be among the polish's starting
    points or the ``n_top`` best admissible candidates: an unscored value is
    at most the largest bound left, which lies below the last start's value
    and the ``n_top``-th admissible value. The search's result is then the
    one scoring every candidate would give.
    """
    # an unknown bound must not prune
    b = _evaluate(bound, C, nan=np.inf)
    order = np.argsort(-b, kind="stable")
    excluded = _excluded_mask(C, excl)
    vals = np.full(C.shape[0], -np.inf)
    done = 0
    while done < C.shape[0]:
        idx = order[done : done + _BOUND_BLOCK]
        vals[idx] = _evaluate(func, C[idx])
        done += idx.size
        if done == C.shape[0]:
            break
        rest = b[order[done]]
        if rest == -np.inf:
            break  # every bound left is -inf, and so is every value left
        starts = _starts(C, vals, n_polish)
        if len(starts) < n_polish or (starts and not vals[starts[-1]] > rest):
            continue
        scored = order[:done]
        admissible = scored[~excluded[scored]]
        top = np.sort(vals[admissible])[::-1][:n_top]
        if top.size == n_top and top[-1] > rest:
            break
    return vals


def _polish(func: Callable, x0: np.ndarray, maxiter: int) -> np.ndarray:
    """L-BFGS-B on [0, 1]^D; value and gradient from one vectorised func call.

    The gradient is a central difference (forward differences are too coarse
    near the optimum for the line search), one-sided at the faces of the box so
    no probe leaves it.
    """
    D = x0.size
    eye = np.eye(D)

    def negative(x: np.ndarray) -> tuple[float, np.ndarray]:
        hi = np.minimum(x + _FD_STEP, 1.0)
        lo = np.maximum(x - _FD_STEP, 0.0)
        probes_hi = x + eye * (hi - x)
        probes_lo = x + eye * (lo - x)
        v = np.asarray(func(np.vstack([x, probes_hi, probes_lo])), float).ravel()
        if not np.isfinite(v[0]):
            return 1e300, np.zeros(D)
        g = (v[1 : D + 1] - v[D + 1 :]) / (hi - lo)
        g = np.where(np.isfinite(g), g, 0.0)
        return -float(v[0]), -g

    res = minimize(
        negative,
        x0,
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, 1.0)] * D,
        # a cap on evaluations too: where the acquisition is flat to rounding
        # (e.g. near-noise-free models) the line search can waste many calls
        options={"maxiter": maxiter, "maxfun": 2 * maxiter},
    )
    return _clip_unit(np.asarray(res.x, float))


def _maximize(
    func: Callable[[np.ndarray], np.ndarray],
    n_dims: int,
    rng: np.random.Generator,
    snap: Callable[[np.ndarray], np.ndarray] | None,
    seeds: Any,
    exclude: Any,
    n_candidates: int,
    n_polish: int,
    maxiter: int,
    refine: Callable | None,
    n_refine: int,
    bound: Callable | None,
) -> tuple[np.ndarray, float]:
    n_dims = int(n_dims)
    if n_dims < 1:
        raise ValueError(f"n_dims must be >= 1, got {n_dims}.")
    snap_ = _clip_unit if snap is None else (lambda U: _clip_unit(snap(_clip_unit(U))))
    excl = None if exclude is None else np.atleast_2d(np.asarray(exclude, float))
    if excl is not None and excl.size == 0:
        excl = None
    if excl is not None:
        excl = excl.reshape(-1, n_dims)

    cands = [sobol_points(n_candidates, n_dims, rng)]
    if seeds is not None:
        S = np.atleast_2d(np.asarray(seeds, float)).reshape(-1, n_dims)
        if S.shape[0]:
            per_seed = max(
                len(_PERTURB_SCALES), min(64, n_candidates // (4 * S.shape[0]))
            )
            scales = np.resize(np.asarray(_PERTURB_SCALES), per_seed)
            noise = rng.standard_normal((S.shape[0], per_seed, n_dims))
            P = S[:, None, :] + scales[None, :, None] * noise
            cands.append(P.reshape(-1, n_dims))
    C = snap_(np.vstack(cands))
    n_top = n_refine if refine is not None else 1
    if bound is None:
        vals = _evaluate(func, C)
    else:
        vals = _evaluate_bounded(func, bound, C, n_polish, n_top, excl)

    # polish the best distinct starting points
    starts = [C[i] for i in _starts(C, vals, n_polish)]
    if starts:
        polished = snap_(np.vstack([_polish(func, s, maxiter) for s in starts]))
        C = np.vstack([C, polished])
        vals = np.concatenate([vals, _evaluate(func, polished)])

    if refine is not None:
        # screen with the cheap func, decide with the precise refine: the
        # best few admissible candidates are re-scored and only they compete,
        # so the winner is not the luckiest draw of a noisy screen
        order = np.argsort(-vals, kind="stable")
        admissible = np.isfinite(vals) & ~_excluded_mask(C, excl)
        top = order[admissible[order]][:n_refine]
        if top.size:
            C = C[top]
            vals = _evaluate(refine, C)

    for attempt in range(2):
        order = np.argsort(-vals, kind="stable")
        # the best candidate is nearly always admissible: checking a few
        # first spares comparing hundreds with every evaluated point
        lo, step = 0, 8
        while lo < order.size:
            idx = order[lo : lo + step]
            ok = ~_excluded_mask(C[idx], excl)
            if ok.any():
                j = idx[np.argmax(ok)]
                return C[j].copy(), float(vals[j])
            lo, step = lo + step, 256
        if attempt == 0:
            # every candidate collided with an excluded point (tiny discrete
            # space): one more round of fresh random points
            C = snap_(rng.uniform(size=(max(n_candidates, 256), n_dims)))
            vals = _evaluate(func, C)
    raise ValueError(
        "maximize: every candidate point is excluded; the search space seems exhausted."
    )


def maximize(
    func: Callable[[np.ndarray], np.ndarray],
    n_dims: int,
    *,
    rng: np.random.Generator,
    snap: Callable[[np.ndarray], np.ndarray] | None = None,
    seeds: Any = None,
    exclude: Any = None,
    n_candidates: int = 2048,
    n_polish: int = 5,
    maxiter: int = 50,
    refine: Callable[[np.ndarray], np.ndarray] | None = None,
    n_refine: int = 16,
    bound: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, float]:
    """Maximise a vectorised function over the unit cube.

    Parameters
    ----------
    func : callable
        ``func(U: ndarray (n, n_dims)) -> ndarray (n,)``, values to maximise
        (``-inf`` allowed, nan is treated as ``-inf``). Must be deterministic.
    n_dims : int
        Dimension ``D`` of the unit cube.
    rng : numpy.random.Generator
        Source of all randomness (same state, same result).
    snap : callable, optional
        Maps points to valid points (e.g. ``SearchSpace.snap``); applied to
        every candidate and to the polished points before they are scored.
    seeds : array-like of shape (k, n_dims), optional
        Points (e.g. the best observed) around which Gaussian perturbations at
        several scales are added to the candidates.
    exclude : array-like of shape (e, n_dims), optional
        Points never to return (max-abs distance <= 1e-9 after snapping); the
        next best candidate is returned instead.
    n_candidates : int, default=2048
        Scrambled Sobol candidates.
    n_polish : int, default=5
        Best distinct candidates polished with L-BFGS-B.
    maxiter : int, default=50
        L-BFGS-B iterations per polish.
    refine : callable, optional
        A more precise, more expensive version of ``func`` (for example a
        Monte Carlo estimate with more draws). When given, ``func`` only
        screens: the ``n_refine`` best admissible candidates are re-scored
        with ``refine`` and the best of them is returned.
    n_refine : int, default=16
        Candidates re-scored by ``refine``.
    bound : callable, optional
        A cheaper upper bound on ``func`` (same signature, never below it).
        The candidates are then scored with ``func`` best bound first, and
        only until no unscored one could change the result: the same point
        and value as without it, at a fraction of the calls.

    Returns
    -------
    x : ndarray of shape (n_dims,)
    value : float
        ``func(x)``, or ``refine(x)`` when ``refine`` is given.

    Raises
    ------
    ValueError
        If every candidate (and a fresh random batch) is excluded, i.e. the
        snapped space looks exhausted.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.optimize import maximize
    >>> x, value = maximize(
    ...     lambda U: -((U - 0.3) ** 2).sum(axis=1), 2, rng=np.random.default_rng(0)
    ... )
    >>> np.round(x, 3).tolist()
    [0.3, 0.3]
    """
    with single_blas_thread():
        return _maximize(
            func,
            int(n_dims),
            rng,
            snap,
            seeds,
            exclude,
            n_candidates,
            n_polish,
            maxiter,
            refine,
            int(n_refine),
            bound,
        )


def propose_batch(
    acquisition_for: Callable[[np.ndarray | None], Any],
    n_points: int,
    n_dims: int,
    *,
    rng: np.random.Generator,
    snap: Callable[[np.ndarray], np.ndarray] | None = None,
    seeds: Any = None,
    exclude: Any = None,
    pending: Any = None,
    accept: Callable[[np.ndarray, float, np.ndarray], np.ndarray] | None = None,
    **maximize_kwargs: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """The one batch proposer: a greedy batch conditioned on pending points.

    Point ``j`` maximises ``acquisition_for(P)``, where ``P`` holds
    ``pending`` and the points ``0..j-1`` already chosen: the strategy's
    acquisition conditioned on those evaluations still to come (Monte Carlo
    fantasies of their outcomes, Snoek et al. 2012, section 3.3, or whatever
    the strategy's acquisition does with them), so a batch spreads out
    instead of repeating one argmax.

    Parameters
    ----------
    acquisition_for : callable
        ``acquisition_for(P)`` with ``P`` of shape ``(k, n_dims)`` or None
        (nothing pending) returns the function to maximise, or a pair
        ``(screen, refine)`` passed to :func:`maximize` as ``func`` and
        ``refine``. A function with an ``upper_bound`` attribute (a callable)
        gives it to :func:`maximize` as ``bound``. It is called once per
        point, before the point's search.
    n_points : int
        Batch size.
    n_dims : int
        Dimension of the unit cube.
    rng : numpy.random.Generator
        Shared by the acquisitions and the optimiser, in that order per point.
    snap : callable, optional
        Maps unit points to valid points (``SearchSpace.snap``).
    seeds : array-like of shape (s, n_dims), optional
        Perturbation seeds for :func:`maximize` (e.g. the best observed).
    exclude : array-like of shape (e, n_dims), optional
        Points never proposed (the observed ones); pending and chosen points
        are excluded too.
    pending : array-like of shape (k, n_dims), optional
        Points under evaluation.
    accept : callable, optional
        ``accept(x, value, excluded)`` may replace a chosen point (e.g. a
        random replacement of some coordinates) before it counts as pending.
    **maximize_kwargs
        Further arguments of :func:`maximize` (``n_candidates``, ...).

    Returns
    -------
    U : ndarray of shape (n, n_dims)
        The batch, ``n <= n_points``: it ends early when the snapped space is
        exhausted or no candidate has a finite acquisition value.
    values : ndarray of shape (n,)
        Acquisition value of each point when it was chosen.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.optimize import propose_batch
    >>> def acquisition_for(P):
    ...     far = 0.0 if P is None else 0.3
    ...     return lambda U: -np.abs(U[:, 0] - 0.5) - far * (U[:, 0] < 0.6)
    >>> U, values = propose_batch(
    ...     acquisition_for, 2, 1, rng=np.random.default_rng(0), n_polish=0
    ... )
    >>> U.shape
    (2, 1)
    """
    excluded = (
        np.empty((0, n_dims))
        if exclude is None
        else np.atleast_2d(np.asarray(exclude, float)).reshape(-1, n_dims)
    )
    base = (
        np.empty((0, n_dims))
        if pending is None
        else np.atleast_2d(np.asarray(pending, float)).reshape(-1, n_dims)
    )
    chosen: list[np.ndarray] = []
    values: list[float] = []
    with single_blas_thread():
        for _ in range(int(n_points)):
            P = np.vstack([base, *chosen])
            acquisition = acquisition_for(P if P.shape[0] else None)
            func, refine = (
                acquisition if isinstance(acquisition, tuple) else (acquisition, None)
            )
            blocked = np.vstack([excluded, P])
            try:
                x, value = maximize(
                    func,
                    n_dims,
                    rng=rng,
                    snap=snap,
                    seeds=seeds,
                    exclude=blocked,
                    refine=refine,
                    bound=getattr(func, "upper_bound", None),
                    **maximize_kwargs,
                )
            except ValueError:
                break  # every valid point has been evaluated or is pending
            if not np.isfinite(value):
                break
            if accept is not None:
                x = accept(x, value, blocked)
            chosen.append(np.asarray(x, float).reshape(1, n_dims))
            values.append(float(value))
    U = np.vstack(chosen) if chosen else np.empty((0, n_dims))
    return U, np.asarray(values)
