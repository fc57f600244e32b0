"""The acquisition optimiser and the one batch proposer."""

import numpy as np
import pytest

from skbayes_search.acquisition import make_acquisition
from skbayes_search.gp import GPSurrogate
from skbayes_search.optimize import maximize, propose_batch
from tests.helpers import fitted_surrogate


def test_maximize_finds_known_maximum_and_is_reproducible():
    c = np.array([0.23, 0.71, 0.55])

    def f(U):
        return -np.sum((U - c) ** 2, axis=1) + 0.1 * np.cos(5 * U[:, 0])

    ref = maximize(
        lambda U: -np.sum((U - c) ** 2, axis=1), 3, rng=np.random.default_rng(0)
    )
    np.testing.assert_allclose(ref[0], c, atol=1e-4)
    assert ref[1] == pytest.approx(0.0, abs=1e-8)
    x1, v1 = maximize(f, 3, rng=np.random.default_rng(5), n_candidates=512)
    x2, v2 = maximize(f, 3, rng=np.random.default_rng(5), n_candidates=512)
    np.testing.assert_array_equal(x1, x2)
    assert v1 == v2 == pytest.approx(f(x1[None])[0])
    # a maximum on the boundary of the box
    xb, _ = maximize(lambda U: U.sum(axis=1), 2, rng=np.random.default_rng(0))
    np.testing.assert_allclose(xb, [1.0, 1.0])


def test_maximize_respects_exclude_and_snap():
    c = np.array([0.3, 0.6])

    def f(U):
        return -np.sum((U - c) ** 2, axis=1)

    def snap(U):
        return np.round(U * 10) / 10

    x, v = maximize(f, 2, rng=np.random.default_rng(0), snap=snap)
    np.testing.assert_allclose(x, c, atol=1e-12)
    x, v = maximize(f, 2, rng=np.random.default_rng(0), snap=snap, exclude=[c])
    assert np.max(np.abs(x - c)) > 1e-9
    # the next best grid points are the 4 neighbours at distance 0.1
    assert v == pytest.approx(-0.01)
    np.testing.assert_allclose(x, snap(x[None])[0])
    # an exhausted discrete space is reported, not silently repeated
    grid = np.array([[a, b] for a in (0.0, 1.0) for b in (0.0, 1.0)])
    with pytest.raises(ValueError, match="exhausted"):
        maximize(f, 2, rng=np.random.default_rng(0), snap=np.round, exclude=grid)


def test_maximize_uses_seeds_for_narrow_peaks():
    peak = np.array([0.4321, 0.8765, 0.1234, 0.5])

    def f(U):
        return np.exp(-np.sum((U - peak) ** 2, axis=1) / 1e-4)

    x, _ = maximize(f, 4, rng=np.random.default_rng(0), seeds=peak[None] + 0.003)
    np.testing.assert_allclose(x, peak, atol=1e-4)


def test_maximize_refine_decides_among_the_screened_best():
    c = np.array([0.3, 0.6])

    def precise(U):
        return -np.sum((U - c) ** 2, axis=1)

    def noisy(U):
        # deterministic "noise" much larger than the differences near c
        return precise(U) + 0.05 * np.sin(997.0 * U[:, 0] + 613.0 * U[:, 1])

    refined = []

    def refine(U):
        refined.append(len(U))
        return precise(U)

    kw = dict(n_candidates=256, n_polish=0)
    x_noisy, _ = maximize(noisy, 2, rng=np.random.default_rng(1), **kw)
    x, v = maximize(
        noisy, 2, rng=np.random.default_rng(1), refine=refine, n_refine=8, **kw
    )
    # the refined score is what is returned, only the screened best were
    # re-scored, and the winner of the screen was among them
    assert refined == [8]
    assert v == precise(x[None])[0]
    assert precise(x[None])[0] >= precise(x_noisy[None])[0]
    # an excluded screen winner is never re-scored or returned
    x2, _ = maximize(
        noisy,
        2,
        rng=np.random.default_rng(1),
        refine=precise,
        n_refine=8,
        exclude=[x],
        **kw,
    )
    assert np.max(np.abs(x2 - x)) > 1e-9


def _propose_gp(
    surrogate,
    n_points,
    *,
    X_observed,
    y_observed,
    rng,
    acquisition="ei",
    cost_surrogate=None,
    X_pending=None,
    snap=None,
    n_candidates=2048,
):
    """The GP-EI batch BayesSearchCV proposes, through the one batch proposer."""
    y_best = float(np.min(y_observed))

    def acquisition_for(pending):
        return make_acquisition(
            surrogate,
            acquisition,
            y_best=y_best,
            cost_surrogate=cost_surrogate,
            X_pending=pending,
            rng=rng,
        )

    return propose_batch(
        acquisition_for,
        n_points,
        X_observed.shape[1],
        rng=rng,
        snap=snap,
        seeds=X_observed[np.argsort(y_observed, kind="stable")[:5]],
        exclude=X_observed,
        pending=X_pending,
        n_candidates=n_candidates,
    )


def _bumpy(U):
    """Several peaks, so the polish's starts and the exclusions matter."""
    return np.sin(7.0 * U[:, 0]) * np.cos(5.0 * U[:, 1]) - 0.3 * U[:, 0]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"exclude": "best"},
        {"refine": True},
        {"snap": True},
        {"n_polish": 0},
    ],
)
def test_maximize_with_an_upper_bound_gives_the_same_point_scoring_fewer(options):
    scored = []

    def func(U):
        scored.append(len(U))
        return _bumpy(U)

    def bound(U):
        # above func everywhere, tight near x = 0.2 and loose elsewhere
        return _bumpy(U) + 0.5 * np.abs(U[:, 0] - 0.2)

    kw = dict(n_candidates=2048, seeds=[[0.2, 0.6]])
    if options.get("exclude"):
        best, _ = maximize(_bumpy, 2, rng=np.random.default_rng(3), **kw)
        kw["exclude"] = [best]
    if options.get("refine"):
        kw.update(refine=lambda U: _bumpy(U) - 0.01 * U[:, 1], n_refine=4)
    if options.get("snap"):
        kw["snap"] = lambda U: np.round(U * 20) / 20
    if "n_polish" in options:
        kw["n_polish"] = options["n_polish"]
    plain = maximize(func, 2, rng=np.random.default_rng(0), **kw)
    n_plain = sum(scored)
    scored.clear()
    bounded = maximize(func, 2, rng=np.random.default_rng(0), bound=bound, **kw)
    np.testing.assert_array_equal(bounded[0], plain[0])
    assert bounded[1] == plain[1]
    assert sum(scored) < 0.5 * n_plain


def test_maximize_scores_every_candidate_whose_bound_is_unknown():
    scored = []

    def func(U):
        scored.append(len(U))
        return _bumpy(U)

    plain = maximize(func, 2, rng=np.random.default_rng(0), n_candidates=512)
    n_plain = sum(scored)
    scored.clear()
    x, v = maximize(
        func,
        2,
        rng=np.random.default_rng(0),
        n_candidates=512,
        bound=lambda U: np.full(len(U), np.nan),
    )
    assert (x.tolist(), v) == (plain[0].tolist(), plain[1])
    assert sum(scored) == n_plain


@pytest.mark.parametrize("acquisition", ["ei", "pi", "lcb", "ei_per_second"])
def test_propose_batch_distinct_new_and_reproducible(acquisition):
    s, X, y = fitted_surrogate(n=10, d=2, sampling="map")
    cost = None
    if acquisition == "ei_per_second":
        cost = GPSurrogate(hyperparameter_sampling="map", random_state=0)
        cost.fit(X, np.log(0.5 + 3 * X[:, 0]))
    kw = dict(
        acquisition=acquisition,
        X_observed=X,
        y_observed=y,
        n_candidates=256,
        cost_surrogate=cost,
    )
    U1, v1 = _propose_gp(s, 3, rng=np.random.default_rng(7), **kw)
    U2, v2 = _propose_gp(s, 3, rng=np.random.default_rng(7), **kw)
    np.testing.assert_array_equal(U1, U2)
    np.testing.assert_array_equal(v1, v2)
    assert U1.shape == (3, 2) and np.all((U1 >= 0) & (U1 <= 1))
    D = np.abs(U1[:, None, :] - U1[None, :, :]).max(axis=2)
    assert np.all(D[~np.eye(3, dtype=bool)] > 1e-9)
    Dobs = np.abs(U1[:, None, :] - X[None, :, :]).max(axis=2)
    assert Dobs.min() > 1e-9


def test_propose_batch_pending_moves_second_point_away():
    s, X, y = fitted_surrogate(n=8, d=1, sampling="mcmc")
    kw = dict(X_observed=X, y_observed=y, n_candidates=256)
    (x_first,), _ = _propose_gp(s, 1, rng=np.random.default_rng(0), **kw)
    U, _ = _propose_gp(s, 2, rng=np.random.default_rng(0), **kw)
    np.testing.assert_allclose(U[0], x_first)
    assert abs(U[1, 0] - U[0, 0]) > 0.03
    # the same happens when the first point is declared pending
    (x_next,), _ = _propose_gp(
        s, 1, rng=np.random.default_rng(1), X_pending=x_first[None], **kw
    )
    assert abs(x_next[0] - x_first[0]) > 0.03


def test_propose_batch_snaps_and_avoids_observed_on_a_grid():
    s, X, y = fitted_surrogate(n=10, d=2, sampling="map")

    def snap(U):
        return np.round(U * 4) / 4

    Xg = snap(X)
    s.fit(Xg, y)
    U, _ = _propose_gp(
        s,
        4,
        X_observed=Xg,
        y_observed=y,
        snap=snap,
        rng=np.random.default_rng(0),
        n_candidates=128,
    )
    np.testing.assert_allclose(U, snap(U))
    allpts = np.vstack([Xg, U])
    assert len(np.unique(allpts, axis=0)) == len(np.unique(Xg, axis=0)) + 4
