"""The GP surrogate ensemble used by every search strategy."""

from __future__ import annotations

import copy
import numbers
from typing import Any

import numpy as np

from .._numerics import single_blas_thread
from .inference import (
    LogPosterior,
    fit_map,
    hyper_bounds,
    initial_hyper,
    slice_sample,
)
from .kernels import Kernel
from .model import GaussianProcess
from .posterior import Posterior
from .stationary import Matern52

__all__ = ["GPSurrogate", "as_generator"]


def as_generator(random_state: Any) -> np.random.Generator:
    """A numpy Generator from None, an int, a Generator or a RandomState.

    Examples
    --------
    >>> from skbayes_search.gp import as_generator
    >>> bool(as_generator(0).integers(100) == as_generator(0).integers(100))
    True
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    if random_state is None or isinstance(random_state, numbers.Integral):
        return np.random.default_rng(random_state)
    raise ValueError(f"Cannot build a random generator from {random_state!r}.")


def _row_keys(X: np.ndarray, y: np.ndarray) -> set[bytes]:
    """One key per observation: its inputs and its output."""
    rows = np.ascontiguousarray(np.column_stack([X, y]))
    return {row.tobytes() for row in rows}


class GPSurrogate:
    """Gaussian-process surrogate with hyperparameters integrated out or fixed.

    ``fit`` standardises ``y`` and either slice-samples the hyperparameter
    posterior (``"mcmc"``, Snoek et al. 2012) or maximises it (``"map"``).
    One :class:`GaussianProcess` per retained hyperparameter sample is kept;
    code outside ``gp/`` reads them only through :attr:`posteriors` (one
    :class:`~skbayes_search.gp.posterior.Posterior` per sample, in original
    units), and acquisitions average over them.

    Refits continue where the previous fit stopped: the MCMC chain resumes
    from its last state (``n_burn`` sweeps only on the first fit, then
    ``n_burn_refit`` sweeps), and MAP starts from the previous optimum (plus
    ``n_restarts_refit`` random restarts; every ``restart_every``-th fit uses
    ``n_restarts`` starts again so a stale local optimum gets left).

    Parameters
    ----------
    kernel : Kernel or None, default=None
        Correlation kernel; None means :class:`Matern52` ARD over all columns.
        The kernel is copied, never modified.
    hyperparameter_sampling : {"mcmc", "map"}, default="mcmc"
    n_samples : int, default=10
        Hyperparameter samples kept (MCMC only; MAP keeps one model).
    n_burn : int, default=100
        Burn-in sweeps on the first fit.
    random_state : int, Generator or None, default=None
        Seeds the sampler and the MAP restarts; a Generator is used (and
        advanced) as is.
    thin : int, default=1
        Sweeps between kept samples.
    n_burn_refit : int, default=1
        Sweeps discarded at the start of every refit (the data changed).
    n_restarts : int, default=3
        MAP starts on the first fit.
    n_restarts_refit : int, default=0
        Extra random MAP starts on refits (besides the previous optimum).
    restart_every : int, default=10
        Every ``restart_every``-th MAP optimisation also runs ``n_restarts - 1``
        random starts.
    reoptimize_growth : float, default=0.0
        MAP only: a refit re-optimises the hyperparameters once more than
        ``reoptimize_growth`` times as many observations as the last
        optimisation saw are new to it (absent from its data); until then the
        previous optimum conditions on the new data (one Cholesky
        factorisation instead of an L-BFGS run, for callers whose proposals
        would otherwise cost more than their fits). 0 re-optimises on every
        fit.
    method : {"coordinate", "random"}, default="coordinate"
        Slice-sampling direction scheme.

    Attributes
    ----------
    models_ : list of GaussianProcess
    thetas_ : ndarray of shape (n_models, 3 + kernel.n_params)
    y_mean_, y_std_ : float
        Standardisation of ``y``.
    kernel_ : Kernel
        The fitted copy of ``kernel``.
    X_, y_ : ndarray
        Training data in original units.
    n_fits_ : int
    widths_ : ndarray
        Slice-sampling bracket widths (MCMC), adapted once from the burn-in.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import GPSurrogate
    >>> X = np.linspace(0, 1, 8)[:, None]
    >>> gp = GPSurrogate(n_samples=4, n_burn=20, random_state=0)
    >>> gp = gp.fit(X, np.sin(6 * X[:, 0]))
    >>> gp.n_models, len(gp.posteriors)
    (4, 4)
    >>> mean, std = gp.predict(X[:3])
    >>> mean.shape
    (4, 3)
    """

    def __init__(
        self,
        kernel: Kernel | None = None,
        *,
        hyperparameter_sampling: str = "mcmc",
        n_samples: int = 10,
        n_burn: int = 100,
        random_state: Any = None,
        thin: int = 1,
        n_burn_refit: int = 1,
        n_restarts: int = 3,
        n_restarts_refit: int = 0,
        restart_every: int = 10,
        reoptimize_growth: float = 0.0,
        method: str = "coordinate",
    ):
        self.kernel = kernel
        self.hyperparameter_sampling = hyperparameter_sampling
        self.n_samples = n_samples
        self.n_burn = n_burn
        self.random_state = random_state
        self.thin = thin
        self.n_burn_refit = n_burn_refit
        self.n_restarts = n_restarts
        self.n_restarts_refit = n_restarts_refit
        self.restart_every = restart_every
        self.reoptimize_growth = reoptimize_growth
        self.method = method

    def _check_params(self) -> None:
        if self.hyperparameter_sampling not in ("mcmc", "map"):
            raise ValueError(
                "hyperparameter_sampling must be 'mcmc' or 'map', got "
                f"{self.hyperparameter_sampling!r}."
            )
        for name in ("n_samples", "thin", "n_restarts", "restart_every"):
            v = getattr(self, name)
            if not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}.")
        for name in ("n_burn", "n_burn_refit", "n_restarts_refit"):
            v = getattr(self, name)
            if not isinstance(v, numbers.Integral) or v < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {v!r}.")
        growth = self.reoptimize_growth
        if (
            not isinstance(growth, numbers.Real)
            or isinstance(growth, bool)
            or not np.isfinite(growth)
            or growth < 0
        ):
            raise ValueError(
                f"reoptimize_growth must be a non-negative number, got {growth!r}."
            )
        if self.kernel is not None and not isinstance(self.kernel, Kernel):
            raise TypeError(f"kernel must be a Kernel or None, got {self.kernel!r}.")

    def fit(self, X: Any, y: Any) -> GPSurrogate:
        """Fit (or refit, continuing the chain) on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Inputs in the unit cube.
        y : array-like of shape (n,)
            Finite losses (to be minimised).

        Returns
        -------
        self : GPSurrogate
        """
        self._check_params()
        X = np.atleast_2d(np.asarray(X, dtype=float))
        y = np.asarray(y, dtype=float).ravel()
        if X.shape[0] != y.size or y.size == 0:
            raise ValueError(f"Need matching non-empty X, y; got {X.shape}, {y.shape}.")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("X and y must be finite (failed trials need a penalty).")

        first = not hasattr(self, "state_") or self._n_dims != X.shape[1]
        if first:
            self.widths_ = None
            kernel = Matern52() if self.kernel is None else copy.deepcopy(self.kernel)
            kernel.set_n_dims(X.shape[1])
            self.kernel_ = kernel
            self._rng = as_generator(self.random_state)
            self._n_dims = X.shape[1]
            self.n_fits_ = 0
            self._n_optimised = 0
            self._rows_optimised: set[bytes] = set()

        self.y_mean_ = float(np.mean(y))
        std = float(np.std(y))
        self.y_std_ = std if std > 1e-12 * max(1.0, abs(self.y_mean_)) else 1.0
        ys = (y - self.y_mean_) / self.y_std_
        self.X_, self.y_ = X, y

        with single_blas_thread():
            lp = LogPosterior(self.kernel_, X, ys)
            if self.hyperparameter_sampling == "map":
                self.thetas_ = self._fit_map(lp, X, ys, first)
            else:
                self.thetas_ = self._fit_mcmc(lp, first)
            self.models_ = [
                GaussianProcess(self.kernel_).fit(X, ys, t) for t in self.thetas_
            ]
        self.n_fits_ += 1
        return self

    def _fit_map(
        self, lp: LogPosterior, X: np.ndarray, ys: np.ndarray, first: bool
    ) -> np.ndarray:
        if not first and self._keeps_hyperparameters(lp):
            return self.state_[None, :]
        if first:
            n_starts, theta0 = self.n_restarts, None
        else:
            n_starts, theta0 = 1 + self.n_restarts_refit, self.state_
            if (self._n_optimised + 1) % self.restart_every == 0:
                n_starts = max(n_starts, self.n_restarts)
        theta, _ = fit_map(
            self.kernel_,
            X,
            ys,
            rng=self._rng,
            n_restarts=n_starts,
            theta0=theta0,
            log_posterior=lp,
        )
        self._n_optimised += 1
        if self.reoptimize_growth > 0:
            self._rows_optimised = _row_keys(self.X_, self.y_)
        self.state_ = theta
        return theta[None, :]

    def _keeps_hyperparameters(self, lp: LogPosterior) -> bool:
        """Whether a refit on ``(X_, y_)`` keeps the last optimum."""
        if self.reoptimize_growth <= 0:
            return False
        seen = self._rows_optimised
        n_new = sum(key not in seen for key in _row_keys(self.X_, self.y_))
        if n_new > self.reoptimize_growth * len(seen):
            return False
        # new data can make the old optimum impossible (e.g. a duplicate
        # input under a noise-free model): then it is re-optimised
        return bool(np.isfinite(lp(self.state_)))

    def _fit_mcmc(self, lp: LogPosterior, first: bool) -> np.ndarray:
        lo, hi = np.asarray(hyper_bounds(self.kernel_)).T
        if first or getattr(self, "widths_", None) is None:
            self.widths_ = np.ones(lo.size)
        if first:
            x0, n_burn = initial_hyper(self.kernel_), self.n_burn
        else:
            x0, n_burn = np.clip(self.state_, lo, hi), self.n_burn_refit
        logp0 = lp(x0)
        if not np.isfinite(logp0):
            # the previous state can become impossible (e.g. a new duplicate
            # input with a noise-free model); restart from the default
            x0 = initial_hyper(self.kernel_)
            logp0 = lp(x0)
            n_burn = max(n_burn, self.n_burn)
        if first and n_burn >= 20:
            burn, lps = slice_sample(
                lp,
                x0,
                n_burn,
                rng=self._rng,
                widths=self.widths_,
                method=self.method,
                logp0=logp0,
            )
            # bracket widths from the second half of burn-in: about three
            # posterior standard deviations needs few stepping-out and
            # shrinkage evaluations (any fixed width leaves the chain valid)
            sd = burn[n_burn // 2 :].std(axis=0)
            self.widths_ = np.clip(3.0 * sd, 0.05, 0.5 * (hi - lo))
            x0, logp0, n_burn = burn[-1], lps[-1], 0
        samples, _ = slice_sample(
            lp,
            x0,
            self.n_samples,
            rng=self._rng,
            n_burn=n_burn,
            thin=self.thin,
            widths=self.widths_,
            method=self.method,
            logp0=logp0,
        )
        self.state_ = samples[-1].copy()
        return samples

    def predict(self, Xs: Any) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and std of the latent function, in original units.

        Parameters
        ----------
        Xs : array-like of shape (m, d)

        Returns
        -------
        mean, std : ndarray of shape (n_models, m)
        """
        Xs = np.atleast_2d(np.asarray(Xs, dtype=float))
        means = np.empty((len(self.models_), Xs.shape[0]))
        stds = np.empty_like(means)
        with single_blas_thread():
            for i, m in enumerate(self.models_):
                mu, var = m.predict(Xs)
                means[i] = self.y_mean_ + self.y_std_ * mu
                stds[i] = self.y_std_ * np.sqrt(var)
        return means, stds

    # -- the posterior interface -------------------------------------------
    @property
    def n_models(self) -> int:
        """Number of retained hyperparameter samples."""
        return len(self.models_)

    @property
    def posteriors(self) -> list[Posterior]:
        """One posterior per hyperparameter sample, in original units."""
        return [Posterior(m, self.y_mean_, self.y_std_) for m in self.models_]

    def predict_mean(self, Xs: Any) -> np.ndarray:
        """Posterior means per hyperparameter sample, shape ``(n_models, m)``.

        Unlike :meth:`predict` it enters no BLAS thread limit, for callers
        that already run under one in a loop.
        """
        Xs = np.atleast_2d(np.asarray(Xs, dtype=float))
        means = [m.predict(Xs)[0] for m in self.models_]
        return self.y_mean_ + self.y_std_ * np.vstack(means)

    def fantasize(
        self, X_pending: Any, n_fantasies: int, rng: np.random.Generator
    ) -> list[tuple[Posterior, np.ndarray]]:
        """Every hyperparameter sample conditioned on joint fantasies.

        See :meth:`Posterior.fantasize`; ``rng`` is consumed once per sample,
        in order, so two callers with the same generator state get the same
        fantasies.

        Returns
        -------
        list of (Posterior, ndarray of shape (k, n_fantasies))
        """
        return [p.fantasize(X_pending, n_fantasies, rng) for p in self.posteriors]
