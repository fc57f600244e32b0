"""Entropy search per second: FABOLAS's acquisition (Klein et al. 2017, eq. 7).

Written on the surrogate's posterior interface:

- :func:`sample_representers` and :func:`representers_by_ei` pick the ``N``
  representer points ``Z`` on which the distribution of the minimiser,
  ``p_min``, is represented;
- :mod:`~skbayes_search.acquisition.pmin` estimates ``p_min`` and what a
  fantasised observation is expected to teach about it (relative entropy to
  the uniform measure, as the paper writes eq. 7, or entropy reduction);
  its names are re-exported here;
- :func:`fabolas_acquisition` divides that information by the predicted
  cost plus the optimiser's overhead, and :func:`entropy_search_per_cost`
  builds the screening and precise versions of that acquisition over a
  surrogate's hyperparameter samples.

The derivation, the cost per candidate and the measured Monte Carlo error are
in ``doc/design/fabolas.rst``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._numerics import gauss_hermite, log_mean_exp, standard_normal_draws
from .analytic import log_ei
from .pmin import (
    N_QUADRATURE,
    RepresenterPosterior,
    entropy,
    information_gain,
    pmin_monte_carlo,
    rank_one_update,
)

__all__ = [
    "INFORMATION",
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
#: Leading draws on which :func:`entropy_search_per_cost` screens candidates.
N_SCREEN_SAMPLES = 128
#: What :func:`entropy_search_per_cost` divides by the cost: the paper's
#: expected relative entropy to the uniform measure, or the entropy reduction.
INFORMATION = ("relative_entropy", "entropy_reduction")


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
    """Information per second (Klein et al. 2017, eq. 7).

    Parameters
    ----------
    info_gain : ndarray of shape (M, C) or (C,)
        Information of each candidate under each loss-model hyperparameter
        sample (:meth:`RepresenterPosterior.relative_entropy` in eq. 7).
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
    information: str = "relative_entropy",
    cost: Callable[[np.ndarray], np.ndarray] | None = None,
    max_cost: float = np.inf,
    n_samples: int = N_PMIN_SAMPLES,
    n_screen: int = N_SCREEN_SAMPLES,
    n_quadrature: int = N_QUADRATURE,
    pmap: Callable = map,
) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """FABOLAS's acquisition: information about ``argmin f(Z)`` per second.

    The information is averaged over the loss model's posteriors and
    divided by the predicted cost plus ``overhead``
    (:func:`fabolas_acquisition`).

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
    information : {"relative_entropy", "entropy_reduction"}, \
            default="relative_entropy"
        ``"relative_entropy"``: the expected relative entropy of the
        updated ``p_min`` to the uniform measure on ``Z``
        (:meth:`RepresenterPosterior.relative_entropy`), eq. 7 as Klein et
        al. write it; ``"entropy_reduction"``: ``H(p_min)`` minus its
        expected value after the observation
        (:meth:`RepresenterPosterior.information_gain`), the form their
        footnote 3 sets aside. Divided by a cost, the first favours cheap
        candidates more (it adds ``log N - H(p_min)`` to every one).
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
    if information not in INFORMATION:
        raise ValueError(
            f"information must be one of {INFORMATION}, got {information!r}."
        )
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
            measure = (
                rep.relative_entropy
                if information == "relative_entropy"
                else rep.information_gain
            )
            return measure(cross, var_f + noise_var, n_quadrature, n_samples=n_draws)

        gains = np.vstack(list(pmap(gain, parts)))
        values = fabolas_acquisition(gains, log_cost(U), overhead)
        if cost is not None and np.isfinite(max_cost):
            values = np.where(cost(U) > max_cost, -np.inf, values)
        return values

    def screen(U: np.ndarray) -> np.ndarray:
        return precise(U, n_screen)

    return screen, precise
