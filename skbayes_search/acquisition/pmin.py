"""The distribution of the minimiser on representer points, and what one
observation is expected to teach about it (Hennig & Schuler 2012).

``p_min`` is estimated from joint draws of ``f`` at the representers
(:func:`pmin_monte_carlo`); :class:`RepresenterPosterior` keeps those draws
fixed (common random numbers) and scores many candidates at once by the
exact rank-1 update of the representers' posterior, applied to the same
draws by Matheron's rule and averaged over the observation by Gauss-Hermite
quadrature: :meth:`~RepresenterPosterior.relative_entropy` (to the uniform
measure on the representers, the form of Klein et al. 2017, eq. 3 and 7) and
:meth:`~RepresenterPosterior.information_gain` (the entropy reduction). The
derivation and the measured Monte Carlo error are in
``doc/design/fabolas.rst``.
"""

from __future__ import annotations

import numpy as np

from .._numerics import cholesky_psd, gauss_hermite, solve_lower

__all__ = [
    "N_QUADRATURE",
    "RepresenterPosterior",
    "entropy",
    "information_gain",
    "pmin_monte_carlo",
    "rank_one_update",
]

#: Default number of Gauss-Hermite nodes for the expectation over y.
N_QUADRATURE = 5
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
        S = self._n_draws(n_samples)
        base_entropy = float(entropy(pmin_monte_carlo(self.samples_[:S])))
        return base_entropy - self.expected_entropy(
            cross_cov, var_y, n_quadrature, n_samples
        )

    def relative_entropy(
        self,
        cross_cov: np.ndarray,
        var_y: np.ndarray,
        n_quadrature: int = N_QUADRATURE,
        n_samples: int | None = None,
    ) -> np.ndarray:
        """Expected relative entropy of ``p_min | y`` to the uniform measure.

        ``E_y[KL(p_min | y || u)] = log N - E_y[H(p_min | y)]``, the
        integrand of entropy search as Klein et al. (2017) write it in eq. 3
        and eq. 7, with ``u`` uniform on the ``N`` representers. It exceeds
        :meth:`information_gain` by ``log N - H(p_min)``, the same for every
        candidate, so the two rank candidates alike until they are divided
        by a cost. Parameters as in :meth:`information_gain`.

        Returns
        -------
        ndarray of shape (C,)
            In nats, at least 0.
        """
        n = self.n_representers
        return np.log(n) - self.expected_entropy(
            cross_cov, var_y, n_quadrature, n_samples
        )

    def _n_draws(self, n_samples: int | None) -> int:
        S = self.samples_.shape[0]
        if n_samples is None:
            return S
        if int(n_samples) < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}.")
        return min(S, int(n_samples))

    def expected_entropy(
        self,
        cross_cov: np.ndarray,
        var_y: np.ndarray,
        n_quadrature: int = N_QUADRATURE,
        n_samples: int | None = None,
    ) -> np.ndarray:
        """``E_y[H(p_min | y)]`` for each candidate, in nats.

        The shared part of :meth:`information_gain` and
        :meth:`relative_entropy`; parameters as there.
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
        S = self._n_draws(n_samples)
        samples, normals = self.samples_[:S], self.normals[:S]
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
            out[sl] = expected_h
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
