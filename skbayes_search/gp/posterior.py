"""The posterior interface: the only door into a fitted GP from outside ``gp/``.

A :class:`~skbayes_search.gp.GPSurrogate` keeps one exact GP per retained
hyperparameter sample, fitted on standardised targets. Acquisitions and
strategies read each of them through a :class:`Posterior`, which speaks the
surrogate's original units (the losses or log costs it was fitted on):
marginal and joint predictions, cross-covariances, joint samples, the noise
variance, and conditioning on fantasised outcomes of pending points. A
:class:`PosteriorStack` predicts many posteriors at the same points at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._numerics import cholesky_jitter, solve_lower
from .model import _VAR_FLOOR, GaussianProcess

__all__ = ["Posterior", "PosteriorStack"]


def _rows(X: Any) -> np.ndarray:
    return np.atleast_2d(np.asarray(X, dtype=float))


class Posterior:
    """Posterior of the latent function under one hyperparameter sample.

    Every quantity is in the surrogate's original units: a model fitted on
    ``(y - loc) / scale`` is read back as ``loc + scale * f``. The methods do
    not limit BLAS threads; callers in loops run them inside
    :func:`~skbayes_search._numerics.single_blas_thread`.

    Parameters
    ----------
    model : GaussianProcess
        Fitted exact GP on standardised targets.
    loc, scale : float
        Standardisation of the targets the model was fitted on.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import GPSurrogate
    >>> X = np.linspace(0, 1, 6)[:, None]
    >>> gp = GPSurrogate(hyperparameter_sampling="map", random_state=0)
    >>> gp = gp.fit(X, 3.0 + np.sin(6 * X[:, 0]))
    >>> post = gp.posteriors[0]
    >>> mean, var = post.predict(X[:2])
    >>> bool(np.allclose(mean, 3.0 + np.sin(6 * X[:2, 0]), atol=0.1))
    True
    """

    def __init__(self, model: GaussianProcess, loc: float, scale: float) -> None:
        self._model = model
        self.loc = float(loc)
        self.scale = float(scale)

    @property
    def noise_var(self) -> float:
        """Observation noise variance."""
        return self._model.noise_var_ * self.scale**2

    @property
    def n_targets(self) -> int:
        """Outcomes modelled side by side (fantasies); 1 for a fitted model."""
        z = self._model.z_
        return 1 if z.ndim == 1 else z.shape[1]

    def predict(self, X: Any, full_cov: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance (or joint covariance) of ``f`` at ``X``.

        Returns
        -------
        mean : ndarray of shape (m,), or (m, n_targets) after conditioning
            on fantasies
        var_or_cov : ndarray of shape (m,), or (m, m) with ``full_cov``
        """
        mu, var = self._model.predict(_rows(X), full_cov=full_cov)
        return self.loc + self.scale * mu, self.scale**2 * var

    def mean(self, X: Any) -> np.ndarray:
        """Mean of ``f`` at ``X``."""
        return self.predict(X)[0]

    def mean_std(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of ``f`` at ``X``."""
        mu, var = self._model.predict(_rows(X))
        return self.loc + self.scale * mu, self.scale * np.sqrt(var)

    def cross_cov(self, X1: Any, X2: Any) -> np.ndarray:
        """``Cov[f(X1), f(X2)]``, shape ``(n1, n2)``."""
        return self.scale**2 * self._model.cross_cov(_rows(X1), _rows(X2))

    def cross_cov_to(
        self, Z: Any
    ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """Covariances with a fixed set ``Z``, for many batches of candidates.

        The triangular solve against ``Z`` is done once; the returned function
        maps candidates ``U`` of shape ``(m, d)`` to ``(Cov[f(U), f(Z)],
        Var[f(U)])`` of shapes ``(m, len(Z))`` and ``(m,)``.
        """
        gp = self._model
        theta, amp, s2 = gp.kernel_theta_, gp.amplitude_, self.scale**2
        Z = _rows(Z)
        Vz = solve_lower(gp.L_, amp * gp.kernel(theta, gp.X_, Z))

        def cov(U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            U = _rows(U)
            Vu = solve_lower(gp.L_, amp * gp.kernel(theta, gp.X_, U))
            cross = amp * gp.kernel(theta, U, Z) - Vu.T @ Vz
            var = amp * gp.kernel.diag(theta, U) - np.einsum("ij,ij->j", Vu, Vu)
            return s2 * cross, s2 * np.maximum(var, 0.0)

        return cov

    def sample(
        self, X: Any, n: int, rng: np.random.Generator, noise: bool = False
    ) -> np.ndarray:
        """Joint draws of ``f`` (or of noisy ``y``) at ``X``, shape ``(n, m)``."""
        return self.loc + self.scale * self._model.sample(_rows(X), n, rng, noise)

    def condition(self, X: Any, y: Any) -> Posterior:
        """This posterior after also observing ``y`` at ``X``.

        ``y`` of shape ``(k, T)`` gives ``T`` outcomes side by side that
        share one extended Cholesky factor (hyperparameters stay fixed).
        """
        ys = (np.asarray(y, dtype=float) - self.loc) / self.scale
        return Posterior(self._model.condition(_rows(X), ys), self.loc, self.scale)

    def fantasize(
        self, X_pending: Any, n_fantasies: int, rng: np.random.Generator
    ) -> tuple[Posterior, np.ndarray]:
        """Condition on ``n_fantasies`` joint noisy outcomes at ``X_pending``.

        The outcomes are drawn from this posterior's predictive distribution
        (Snoek et al. 2012, eq. 7), consuming one
        ``rng.standard_normal((k, n_fantasies))`` call.

        Returns
        -------
        posterior : Posterior
            With ``n_fantasies`` targets.
        draws : ndarray of shape (k, n_fantasies)
            The fantasised outcomes, in original units.
        """
        gp = self._model
        Xp = _rows(X_pending)
        k = Xp.shape[0]
        mu, cov = gp.predict(Xp, full_cov=True)
        cov[np.diag_indices(k)] += gp.noise_var_
        chol, _ = cholesky_jitter(cov)
        draws = mu[:, None] + chol @ rng.standard_normal((k, n_fantasies))
        conditioned = Posterior(gp.condition(Xp, draws), self.loc, self.scale)
        return conditioned, self.loc + self.scale * draws


class PosteriorStack:
    """Several posteriors on the same training inputs, predicted in one pass.

    An acquisition integrated over hyperparameter samples (and over each
    sample's fantasies) predicts every posterior at the same few candidates
    many times per proposal; one posterior at a time, most of that time goes
    to Python overhead. When the posteriors share their
    training inputs and kernel, the stack computes the inverse of every
    Cholesky factor once (at its first such prediction) and then predicts a
    few points (up to
    ``_MAX_BATCHED_ROWS``) under all of them with batched matrix products;
    more points, a single posterior, or posteriors that do not share their
    inputs, it predicts one posterior after the other. The results
    agree with :meth:`Posterior.predict` to rounding.

    Parameters
    ----------
    posteriors : sequence of Posterior
        Each with the same number of targets (fantasies).

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search.gp import GPSurrogate, PosteriorStack
    >>> X = np.linspace(0, 1, 8)[:, None]
    >>> gp = GPSurrogate(random_state=0).fit(X, np.sin(6 * X[:, 0]))
    >>> stack = PosteriorStack(gp.posteriors)
    >>> means, variances = stack.predict(X[:3])
    >>> means.shape, variances.shape  # points, posteriors (, targets)
    ((3, 10, 1), (3, 10))
    >>> mean, var = gp.posteriors[4].predict(X[:3])
    >>> bool(np.allclose(means[:, 4, 0], mean) and np.allclose(variances[:, 4], var))
    True
    """

    #: Most points predicted in one batched pass. Beyond it Python overhead is
    #: a small share, and one triangular solve per posterior does half the
    #: arithmetic of a product with the full inverse and needs no
    #: ``(points, training points, dimensions)`` temporary.
    _MAX_BATCHED_ROWS = 64

    def __init__(self, posteriors: Sequence[Posterior]) -> None:
        self.posteriors = list(posteriors)
        if not self.posteriors:
            raise ValueError("PosteriorStack needs at least one posterior.")
        targets = {p.n_targets for p in self.posteriors}
        if len(targets) != 1:
            raise ValueError(
                "posteriors must have the same number of targets, got "
                f"{sorted(targets)}."
            )
        self.n_targets = targets.pop()
        models = [p._model for p in self.posteriors]
        first = models[0]
        # one posterior alone gains nothing from batching
        self._batched = (
            len(models) > 1
            and first.X_.shape[0] > 0
            and all(
                m.kernel is first.kernel
                and m.X_.shape == first.X_.shape
                and np.array_equal(m.X_, first.X_)
                for m in models
            )
        )
        # the inverse factors are computed at the first batched prediction,
        # so a stack that only ever predicts many points never pays for them
        self._linv = self._alpha = None
        if not self._batched:
            return
        self._X = first.X_
        self._kernel = first.kernel
        self._thetas = np.stack([m.kernel_theta_ for m in models])
        self._amp = np.array([m.amplitude_ for m in models])
        self._mean = np.array([m.mean_ for m in models])
        self._loc = np.array([p.loc for p in self.posteriors])
        self._scale = np.array([p.scale for p in self.posteriors])

    def __len__(self) -> int:
        return len(self.posteriors)

    def predict(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Means and variances of ``f`` at ``X`` under every posterior.

        Returns
        -------
        mean : ndarray of shape (m, n_posteriors, n_targets)
        var : ndarray of shape (m, n_posteriors)
        """
        X = _rows(X)
        if self._batched and X.shape[0] <= self._MAX_BATCHED_ROWS:
            return self._predict_batched(X)
        parts = [p.predict(X) for p in self.posteriors]
        mean = np.stack([mu.reshape(X.shape[0], -1) for mu, _ in parts], axis=1)
        return mean, np.stack([var for _, var in parts], axis=1)

    def _inverse_factors(self) -> tuple[np.ndarray, np.ndarray]:
        """Every ``L^-1`` and the mean weights ``L^-T z``, computed once."""
        if self._linv is None:
            models = [p._model for p in self.posteriors]
            n = self._X.shape[0]
            eye = np.eye(n)
            self._linv = np.stack([solve_lower(m.L_, eye) for m in models])
            z = np.stack([m.z_.reshape(n, -1) for m in models])
            self._alpha = np.matmul(self._linv.transpose(0, 2, 1), z)
        return self._linv, self._alpha

    def _predict_batched(self, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        linv, alpha = self._inverse_factors()
        # K[j] = amp_j k_j(U, X): (J, m, n)
        K = self._kernel.evaluate_many(self._thetas, U, self._X)
        K *= self._amp[:, None, None]
        mean = self._mean[:, None, None] + np.matmul(K, alpha)
        V = np.matmul(linv, K.transpose(0, 2, 1))
        prior = self._amp[:, None] * self._kernel.diag_many(self._thetas, U)
        var = np.maximum(prior - np.einsum("jnm,jnm->jm", V, V), _VAR_FLOOR)
        loc, scale = self._loc[:, None, None], self._scale[:, None, None]
        mean = (loc + scale * mean).transpose(1, 0, 2)
        return mean, (self._scale[:, None] ** 2 * var).T
