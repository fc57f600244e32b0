"""Small builders several test modules share."""

import numpy as np

from skbayes_search._trial import SearchContext, TrialRecord
from skbayes_search.gp import GPSurrogate
from skbayes_search.space import SearchSpace


def gp_data(n=15, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.sin(4 * X[:, 0]) + X[:, 1] ** 2 - 0.5 * X[:, -1] + 0.05 * rng.normal(size=n)
    return X, y


def assert_psd(K, tol=1e-9):
    np.testing.assert_allclose(K, K.T, atol=1e-14)
    assert np.linalg.eigvalsh(K).min() > -tol * max(1.0, np.abs(K).max())


def fitted_surrogate(n=12, d=2, seed=0, sampling="mcmc", n_samples=4):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.sin(5 * X[:, 0]) + (X[:, -1] - 0.3) ** 2
    s = GPSurrogate(
        hyperparameter_sampling=sampling,
        n_samples=n_samples,
        n_burn=20,
        random_state=seed,
    ).fit(X, y)
    return s, X, y


def search_context(space, **overrides):
    """A SearchContext over ``space`` (a SearchSpace or its dict), with
    small defaults that ``overrides`` replace."""
    if not isinstance(space, SearchSpace):
        space = SearchSpace(space)
    params = dict(
        rng=np.random.default_rng(0),
        seed=0,
        n_train=10,
        n_classes=2,
        n_splits=2,
        budget=100,
        max_time=None,
        n_jobs_effective=1,
        start_time=0.0,
    )
    params.update(overrides)
    return SearchContext(space=space, **params)


def one_parameter_record(a, n_resources, fraction, score, extras):
    """A finished trial of a search over one parameter ``a``, as the rung
    ledgers read it."""
    return TrialRecord(
        params={"a": a},
        x=np.array([a]),
        fraction=fraction,
        n_resources=n_resources,
        score=score,
        cost=1.0,
        fit_time=1.0,
        failed=False,
        iter=0,
        elapsed_time=1.0,
        extras=extras,
    )
