"""Entropy search on a finite set of representer points (Hennig & Schuler 2012).

The maths of FABOLAS's acquisition (Klein et al. 2017, paper 001), written on
Gaussian posterior moments and, for the full acquisition, on the surrogate's
posterior interface:

- :func:`sample_representers` and :func:`representers_by_ei` pick the ``N``
  representer points ``Z`` on which the distribution of the minimiser,
  ``p_min``, is represented;
- :func:`pmin_monte_carlo` estimates ``p_min`` from joint draws of ``f(Z)``;
  :class:`RepresenterPosterior` keeps those draws fixed (common random
  numbers) and its :meth:`~RepresenterPosterior.information_gain` is the
  expected entropy reduction of ``p_min`` from a fantasised observation at
  each of many candidates: the exact rank-1 update of ``f(Z)``'s posterior
  applied to the same draws by Matheron's rule, averaged over the
  observation by Gauss-Hermite quadrature;
- :func:`fabolas_acquisition` divides the gain by the predicted cost plus
  the optimiser's overhead (paper eq. 7), and :func:`entropy_search_per_cost`
  builds the screening and precise versions of that acquisition over a
  surrogate's hyperparameter samples.

The derivation, the cost per candidate and the measured Monte Carlo error are
in ``doc/design/fabolas.rst``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._numerics import (
    cholesky_psd,
    gauss_hermite,
    log_mean_exp,
    solve_lower,
    standard_normal_draws,
)
from .analytic import log_ei

__all__ = [
    "RepresenterPosterior",
    "entropy",
    "entropy_search_per_cost",
    "fabolas_acquisition",
    "gauss_hermite",
    "information_gain",
    "pmin_monte_carlo",
    "rank_one_update",
    "representers_by_ei",
    "sample_representers",
    "standard_normal_draws",
]

#: Default number of Monte Carlo draws of f(Z) used to estimate p_min.
N_PMIN_SAMPLES = 1024
#: Default number of Gauss-Hermite nodes for the expectation over y.
N_QUADRATURE = 5
#: Leading draws on which :func:`entropy_search_per_cost` screens candidates.
N_SCREEN_SAMPLES = 128
# Elements of the (chunk, S, N) work array per chunk (about 16 MB of float64).
_CHUNK_ELEMENTS = 2_000_000


def entropy(p: np.ndarray, axis: int = -1) -> np.ndarray:
    """Shannon entropy ``-sum p log p`` (with ``0 log 0 = 0``) along ``axis``."""
    p = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return -terms.sum(axis=axis)


def rank_one_update(
    mean: np.ndarray, cov: np.ndarray, cross_cov: np.ndarray, var_y: float, w: float
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior of ``f(Z)`` after observing ``y = mu_y + sqrt(var_y) w``.

    Parameters
    ----------
    mean, cov : ndarray of shape (N,) and (N, N)
        Current posterior mean ``m`` and covariance ``K`` of ``f(Z)``.
    cross_cov : ndarray of shape (N,)
        ``c = Cov(f(Z), f(x))`` at the observed point ``x``.
    var_y : float
        ``v = Var f(x) + noise variance``, the predictive variance of ``y``.
    w : float
        Standardised observation ``(y - mu_y) / sqrt(v)``.

    Returns
    -------
    mean, cov : ndarray of shape (N,) and (N, N)
        ``m + c w / sqrt(v)`` and ``K - c c^T / v``.
    """
    c = np.asarray(cross_cov, dtype=float)
    return (
        np.asarray(mean, dtype=float) + c * (w / np.sqrt(var_y)),
        np.asarray(cov, dtype=float) - np.outer(c, c) / var_y,
    )


def pmin_monte_carlo(samples: np.ndarray) -> np.ndarray:
    """``p_min``: the share of joint draws ``samples`` of ``f(Z)``, shape
    ``(S, N)``, in which each representer is the minimiser (sums to one)."""
    samples = np.asarray(samples, dtype=float)
    counts = np.bincount(np.argmin(samples, axis=1), minlength=samples.shape[1])
    return counts / samples.shape[0]


class RepresenterPosterior:
    """Joint posterior of ``f`` at the representers, with fixed draws.

    Parameters
    ----------
    mean, cov : ndarray of shape (N,) and (N, N)
        Posterior mean and covariance of ``f(Z)``.
    normals : ndarray of shape (S, N + 1)
        Standard-normal draws (see :func:`standard_normal_draws`); the last
        column drives the fantasised observation. Share one array between
        all posteriors of one acquisition so that candidates are compared
        with common random numbers.

    Attributes
    ----------
    chol_ : ndarray of shape (N, N)
        Lower Cholesky factor of ``cov`` (jittered if needed).
    samples_ : ndarray of shape (S, N)
        Joint draws of ``f(Z)``.
    pmin_ : ndarray of shape (N,)
        Monte Carlo estimate of ``p_min``.
    entropy_ : float
        Entropy of :attr:`pmin_`.
    """

    def __init__(self, mean: np.ndarray, cov: np.ndarray, normals: np.ndarray):
        mean = np.asarray(mean, dtype=float).ravel()
        cov = np.asarray(cov, dtype=float)
        normals = np.asarray(normals, dtype=float)
        n = mean.size
        if cov.shape != (n, n):
            raise ValueError(f"cov must have shape ({n}, {n}), got {cov.shape}.")
        if normals.ndim != 2 or normals.shape[1] != n + 1:
            raise ValueError(
                f"normals must have shape (S, {n + 1}), got {normals.shape}."
            )
        self.mean = mean
        self.cov = cov
        self.normals = normals
        self.chol_ = cholesky_psd(cov)
        self.samples_ = mean + normals[:, :n] @ self.chol_.T
        self.pmin_ = pmin_monte_carlo(self.samples_)
        self.entropy_ = float(entropy(self.pmin_))

    @property
    def n_representers(self) -> int:
        """Number of representer points ``N``."""
        return self.mean.size

    def fantasy_samples(self, cross_cov: np.ndarray, var_y: float, w: float):
        """Draws of ``f(Z)`` after one fantasised observation (one candidate).

        ``cross_cov`` is ``Cov(f(Z), f(x))``, ``var_y`` the predictive
        variance of the observation at ``x`` (noise included), ``w`` the
        standardised fantasy outcome. Returns exact draws, shape ``(S, N)``,
        from the rank-1 updated posterior (:func:`rank_one_update`), made
        from the common random numbers.
        """
        c = np.asarray(cross_cov, dtype=float).ravel()
        innovation = self._innovations(
            c[None, :], np.array([float(var_y)]), self.normals
        )[:, 0]
        shift = (np.sqrt(var_y) * w - innovation) / var_y
        return self.samples_ + shift[:, None] * c[None, :]

    def _innovations(
        self, cross_cov: np.ndarray, var_y: np.ndarray, normals: np.ndarray
    ) -> np.ndarray:
        # joint draws of y - E[y] consistent with the draws of f(Z) made from
        # the same rows of normals: (S, C)
        n = self.n_representers
        A = solve_lower(self.chol_, cross_cov.T)
        explained = np.einsum("nc,nc->c", A, A)
        # rounding (or jitter in chol_) can make the unexplained part slightly
        # negative when y is almost a function of f(Z)
        resid = np.sqrt(np.clip(var_y - explained, 0.0, None))
        return normals[:, :n] @ A + normals[:, n][:, None] * resid[None, :]

    def information_gain(
        self,
        cross_cov: np.ndarray,
        var_y: np.ndarray,
        n_quadrature: int = N_QUADRATURE,
        n_samples: int | None = None,
    ) -> np.ndarray:
        """Expected entropy reduction of ``p_min`` for each candidate.

        Parameters
        ----------
        cross_cov : ndarray of shape (C, N)
            ``Cov(f(Z), f(x_c))`` for every candidate ``x_c``.
        var_y : ndarray of shape (C,)
            Predictive variance of the observation at each candidate, noise
            included (must be positive).
        n_quadrature : int, default=5
            Gauss-Hermite nodes for the expectation over the observation.
        n_samples : int, optional
            Use only the first ``n_samples`` draws (all by default): a
            cheaper, noisier estimate for screening many candidates, still
            exactly zero where ``c = 0``.

        Returns
        -------
        ndarray of shape (C,)
            ``H(p_min) - E_y[H(p_min | y)]`` in nats.
        """
        C = np.atleast_2d(np.asarray(cross_cov, dtype=float))
        v = np.asarray(var_y, dtype=float).ravel()
        n_cand, n = C.shape
        if n != self.n_representers:
            raise ValueError(
                f"cross_cov must have {self.n_representers} columns, got {n}."
            )
        if v.size != n_cand:
            raise ValueError("cross_cov and var_y disagree on the candidates.")
        if np.any(~(v > 0)):
            raise ValueError("var_y must be positive (include the noise variance).")
        nodes, weights = gauss_hermite(n_quadrature)
        S = self.samples_.shape[0]
        if n_samples is not None:
            if int(n_samples) < 1:
                raise ValueError(f"n_samples must be >= 1, got {n_samples}.")
            S = min(S, int(n_samples))
        samples, normals = self.samples_[:S], self.normals[:S]
        base_entropy = float(entropy(pmin_monte_carlo(samples)))
        out = np.empty(n_cand)
        chunk = max(1, min(n_cand, _CHUNK_ELEMENTS // (S * n)))
        # one work array reused for every chunk and node: allocating it anew
        # costs more than the arithmetic done in it
        buf = np.empty((chunk, S, n))
        for start in range(0, n_cand, chunk):
            sl = slice(start, start + chunk)
            Cc, vc = C[sl], v[sl]
            k = Cc.shape[0]
            work = buf[:k]
            innov = self._innovations(Cc, vc, normals).T  # (k, S)
            inv_sd = 1.0 / np.sqrt(vc)[:, None]
            expected_h = np.zeros(k)
            offsets = np.arange(k)[:, None] * n
            for w, weight in zip(nodes, weights):
                # f'(Z) = f(Z) + c t with t = (sqrt(v) w - innovation) / v
                t = (w - innov * inv_sd) * inv_sd  # (k, S)
                # einsum writes the outer products about 40 % faster than a
                # broadcast multiply; this line is a third of a proposal
                np.einsum("ks,kn->ksn", t, Cc, out=work)
                work += samples[None, :, :]
                idx = np.argmin(work, axis=2) + offsets  # (k, S)
                counts = np.bincount(idx.ravel(), minlength=k * n).reshape(k, n)
                expected_h += weight * entropy(counts / S)
            out[sl] = base_entropy - expected_h
        return out


def information_gain(
    mean: np.ndarray,
    cov: np.ndarray,
    cross_cov: np.ndarray,
    var_y: np.ndarray,
    normals: np.ndarray,
    n_quadrature: int = N_QUADRATURE,
) -> np.ndarray:
    """Expected information gain about ``argmin f(Z)`` from observing ``y``.

    Wraps :class:`RepresenterPosterior`; build that once to score many
    batches of candidates against the same representers.

    Parameters
    ----------
    mean, cov : ndarray of shape (N,) and (N, N)
        Posterior mean and covariance of ``f`` at the representers.
    cross_cov, var_y : ndarray of shape (C, N) and (C,)
        ``Cov(f(Z), f(x_c))`` and ``Var f(x_c) + noise variance`` for each
        candidate.
    normals : ndarray of shape (S, N + 1)
        Common standard-normal draws (:func:`standard_normal_draws`).
    n_quadrature : int, default=5
        Gauss-Hermite nodes.

    Returns
    -------
    ndarray of shape (C,)
        Information gain in nats (``H(p_min) - E_y[H(p_min | y)]``).
    """
    post = RepresenterPosterior(mean, cov, normals)
    return post.information_gain(cross_cov, var_y, n_quadrature=n_quadrature)


def sample_representers(
    log_weights: np.ndarray,
    n_representers: int,
    rng: np.random.Generator,
    *,
    include: Any = (),
) -> np.ndarray:
    """Indices of pool points drawn without replacement proportionally to weights.

    The Gumbel-top-k trick on ``log_weights`` (e.g. log expected improvement
    at ``s = 1``): plausible minima are favoured, every finite weight keeps a
    chance.

    Parameters
    ----------
    log_weights : ndarray of shape (P,)
        Log proposal weights of the pool points; ``-inf`` excludes a point.
    n_representers : int
        Number of indices to return (at most ``P``).
    rng : numpy.random.Generator
        Source of the Gumbel noise.
    include : sequence of int, default=()
        Pool indices that are always selected (e.g. the incumbent).

    Returns
    -------
    ndarray of int of shape (min(n_representers, P),)
        Distinct pool indices, the ``include`` ones first.
    """
    lw = np.asarray(log_weights, dtype=float).ravel()
    n_pool = lw.size
    n = min(int(n_representers), n_pool)
    chosen = list(dict.fromkeys(int(i) for i in include))[:n]
    # Gumbel-perturbed log weights: the top k are a draw without replacement
    # with probabilities proportional to the weights
    keys = np.where(np.isfinite(lw), lw, -np.inf) + rng.gumbel(size=n_pool)
    taken = set(chosen)
    rest = [int(i) for i in np.argsort(-keys, kind="stable") if int(i) not in taken]
    return np.asarray(chosen + rest[: n - len(chosen)], dtype=int)


def fabolas_acquisition(
    info_gain: np.ndarray, log_cost_mean: np.ndarray, overhead: float = 0.0
) -> np.ndarray:
    """Information gain per second (Klein et al. 2017, eq. 7).

    Parameters
    ----------
    info_gain : ndarray of shape (M, C) or (C,)
        Gain of each candidate under each loss-model hyperparameter sample.
    log_cost_mean : ndarray of shape (Mc, C) or (C,)
        Predicted mean log seconds under each cost-model sample.
    overhead : float, default=0.0
        Seconds the optimiser spends per proposal: thinking counts as much
        as evaluating.

    Returns
    -------
    ndarray of shape (C,)
        ``mean_M(gain) / (mean_Mc(exp(log_cost)) + overhead)``.
    """
    gain = np.atleast_2d(np.asarray(info_gain, dtype=float)).mean(axis=0)
    cost = np.exp(np.atleast_2d(np.asarray(log_cost_mean, dtype=float))).mean(axis=0)
    if gain.shape != cost.shape:
        raise ValueError("info_gain and log_cost_mean disagree on the candidates.")
    if overhead < 0:
        raise ValueError(f"overhead must be >= 0, got {overhead}.")
    denom = cost + float(overhead)
    return gain / np.maximum(denom, 1e-12)


def representers_by_ei(
    posteriors: Sequence[Any],
    pool: np.ndarray,
    incumbent: np.ndarray,
    n_representers: int,
    rng: np.random.Generator,
    *,
    include: Any = (),
) -> np.ndarray:
    """Representers drawn from ``pool`` in proportion to expected improvement.

    A pool point's weight is its expected improvement below each posterior's
    mean at ``incumbent`` (model input, shape ``(1, d)``), averaged over the
    ``posteriors`` (one per hyperparameter sample of the loss model); the
    other arguments are those of :func:`sample_representers`.

    Returns
    -------
    ndarray of int of shape (min(n_representers, P),)
        Pool indices, the ``include`` ones first.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import GPSurrogate
    >>> from skbayes_search.acquisition.entropy import representers_by_ei
    >>> X = np.linspace(0, 1, 6)[:, None]
    >>> gp = GPSurrogate(hyperparameter_sampling="map").fit(X, (X[:, 0] - 0.3) ** 2)
    >>> pool, rng = np.linspace(0, 1, 50)[:, None], np.random.default_rng(0)
    >>> representers_by_ei(gp.posteriors, pool, X[1:2], 5, rng, include=[15])[0]
    np.int64(15)
    """
    log_eis = []
    for post in posteriors:
        mean, std = post.mean_std(pool)
        best = post.mean(incumbent)[0]
        log_eis.append(log_ei(mean, std, best))
    log_weights = log_mean_exp(np.vstack(log_eis), axis=0)
    return sample_representers(log_weights, n_representers, rng, include=include)


def entropy_search_per_cost(
    posteriors: Sequence[Any],
    Z: np.ndarray,
    log_cost: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    *,
    overhead: float = 0.0,
    cost: Callable[[np.ndarray], np.ndarray] | None = None,
    max_cost: float = np.inf,
    n_samples: int = N_PMIN_SAMPLES,
    n_screen: int = N_SCREEN_SAMPLES,
    n_quadrature: int = N_QUADRATURE,
    pmap: Callable = map,
) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """FABOLAS's acquisition: information gain about ``argmin f(Z)`` per second.

    The gain (:meth:`RepresenterPosterior.information_gain`) is averaged over
    the loss model's posteriors and divided by the predicted cost plus
    ``overhead`` (:func:`fabolas_acquisition`).

    Parameters
    ----------
    posteriors : sequence of Posterior
        The loss model's posteriors, possibly conditioned on pending points.
    Z : ndarray of shape (N, d)
        Representer points (model inputs).
    log_cost : callable
        ``U -> `` predicted mean log seconds per cost-model sample, shape
        ``(Mc, m)`` (e.g. ``GPSurrogate.predict_mean``).
    rng : numpy.random.Generator
        Seeds the common standard-normal draws (consumed here, once).
    overhead : float, default=0.0
        Seconds added to every candidate's predicted cost.
    cost, max_cost : callable and float, default=None and inf
        Candidates whose cautious cost ``cost(U)`` exceeds ``max_cost``
        seconds get ``-inf``.
    n_samples, n_screen : int, default=1024 and 128
        Monte Carlo draws of ``f(Z)`` for the precise estimate, and the
        leading ones the screening estimate uses.
    n_quadrature : int, default=5
        Gauss-Hermite nodes for the expectation over the observation.
    pmap : callable, default=map
        Maps the work of each posterior (a thread pool's ``map`` spreads
        it); the result does not depend on it.

    Returns
    -------
    screen, precise : callable
        ``U (m, d) -> (m,)`` estimates on the first ``n_screen`` and on all
        draws: :func:`~skbayes_search.optimize.maximize`'s ``func`` and
        ``refine``. Run them under ``single_blas_thread``.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import GPSurrogate
    >>> from skbayes_search.acquisition.entropy import entropy_search_per_cost
    >>> X, Z = np.linspace(0, 1, 6)[:, None], np.linspace(0, 1, 8)[:, None]
    >>> gp = GPSurrogate(hyperparameter_sampling="map").fit(X, np.sin(6 * X[:, 0]))
    >>> screen, precise = entropy_search_per_cost(
    ...     gp.posteriors, Z, gp.predict_mean, np.random.default_rng(0)
    ... )
    >>> precise(np.array([[0.1], [0.7]])).shape
    (2,)
    """
    normals = standard_normal_draws(n_samples, len(Z) + 1, rng)

    def prepare(post: Any) -> tuple:
        mean_z, cov_z = post.predict(Z, full_cov=True)
        rep = RepresenterPosterior(mean_z, cov_z, normals)
        return rep, post.cross_cov_to(Z), post.noise_var

    parts = list(pmap(prepare, posteriors))

    def precise(U: np.ndarray, n_draws: int | None = None) -> np.ndarray:
        U = np.atleast_2d(U)

        def gain(part: tuple) -> np.ndarray:
            rep, cov_to, noise_var = part
            cross, var_f = cov_to(U)
            return rep.information_gain(
                cross, var_f + noise_var, n_quadrature, n_samples=n_draws
            )

        gains = np.vstack(list(pmap(gain, parts)))
        values = fabolas_acquisition(gains, log_cost(U), overhead)
        if cost is not None and np.isfinite(max_cost):
            values = np.where(cost(U) > max_cost, -np.inf, values)
        return values

    def screen(U: np.ndarray) -> np.ndarray:
        return precise(U, n_screen)

    return screen, precise
