"""GPSurrogate: fits, units, refits, validation."""

import numpy as np
import pytest
from scipy import stats

from skbayes_search.gp import (
    BasisKernel,
    GPSurrogate,
    Matern52,
    ProductKernel,
)
from tests.helpers import gp_data


def _branin01(U):
    x1 = 15 * U[:, 0] - 5
    x2 = 15 * U[:, 1]
    return (
        (x2 - 5.1 / (4 * np.pi**2) * x1**2 + 5 / np.pi * x1 - 6) ** 2
        + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1)
        + 10
    )


@pytest.mark.parametrize("sampling", ["map", "mcmc"])
def test_surrogate_fits_smooth_functions(sampling):
    rng = np.random.default_rng(0)
    # 1-D
    X = rng.uniform(size=(15, 1))
    f = lambda U: np.sin(6 * U[:, 0]) + 0.5 * U[:, 0]  # noqa: E731
    s = GPSurrogate(hyperparameter_sampling=sampling, n_burn=40, random_state=0)
    s.fit(X, f(X))
    Xt = np.linspace(0.02, 0.98, 50)[:, None]
    mean, std = s.predict(Xt)
    n_models = 1 if sampling == "map" else 10
    assert mean.shape == std.shape == (n_models, 50)
    err = np.sqrt(np.mean((mean.mean(0) - f(Xt)) ** 2))
    assert err < 0.03 * np.ptp(f(Xt))
    # 2-D (Branin on the unit square, range ~300)
    X = stats.qmc.Sobol(2, seed=1).random(32)
    y = _branin01(X)
    s2 = GPSurrogate(hyperparameter_sampling=sampling, n_burn=40, random_state=0)
    s2.fit(X, y)
    Xt = rng.uniform(size=(200, 2))
    mean, _ = s2.predict(Xt)
    err = np.sqrt(np.mean((mean.mean(0) - _branin01(Xt)) ** 2))
    assert err < 0.05 * np.ptp(y)


@pytest.mark.parametrize("sampling", ["map", "mcmc"])
def test_surrogate_with_fabolas_product_kernel(sampling):
    # loss that falls with the subset size s (last column) like a learning curve
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(40, 3))
    f = lambda U: np.sin(4 * U[:, 0]) + U[:, 1] + 2 * (1 - U[:, 2]) ** 2  # noqa: E731
    kernel = ProductKernel(Matern52(dims=[0, 1]), BasisKernel(2, "loss"))
    s = GPSurrogate(kernel, hyperparameter_sampling=sampling, n_burn=30, random_state=0)
    s.fit(X, f(X))
    assert s.thetas_.shape[1] == 3 + 2 + 3
    Xt = rng.uniform(size=(100, 3))
    mean, _ = s.predict(Xt)
    err = np.sqrt(np.mean((mean.mean(0) - f(Xt)) ** 2))
    assert err < 0.1 * np.ptp(f(Xt))


def test_surrogate_units_refit_and_reproducibility():
    X, y = gp_data(20, 2)
    a = GPSurrogate(n_burn=10, n_samples=4, random_state=3).fit(X, y)
    b = GPSurrogate(n_burn=10, n_samples=4, random_state=3).fit(X, 100 * y + 7)
    ma, sa = a.predict(X[:5])
    mb, sb = b.predict(X[:5])
    np.testing.assert_allclose(mb, 100 * ma + 7, rtol=1e-8)
    np.testing.assert_allclose(sb, 100 * sa, rtol=1e-8)
    assert a.y_mean_ == pytest.approx(y.mean())
    assert a.y_std_ == pytest.approx(y.std())
    assert len(a.models_) == 4 and a.thetas_.shape == (4, 5)
    # models_ live in standardised units
    np.testing.assert_allclose(a.models_[0].y_, (y - y.mean()) / y.std())
    # refits continue the chain: same state -> the refit starts where it stopped
    state = a.state_.copy()
    X2, y2 = gp_data(21, 2)
    a.fit(X2, y2)
    assert a.n_fits_ == 2 and not np.allclose(a.state_, state)
    # reproducible given random_state across refits
    c = GPSurrogate(n_burn=10, n_samples=4, random_state=3).fit(X, y).fit(X2, y2)
    np.testing.assert_array_equal(c.thetas_, a.thetas_)
    # the user's kernel is not modified
    k = Matern52()
    GPSurrogate(k, n_burn=2, n_samples=2, random_state=0).fit(X, y)
    assert k.n_dims is None


def test_surrogate_refit_continues_chain_without_burn_in(monkeypatch):
    import skbayes_search.gp.surrogate as surrogate_module

    calls = []
    original = surrogate_module.slice_sample

    def counting(*args, **kwargs):
        calls.append((args[2], kwargs.get("n_burn", 0), np.array(args[1])))
        return original(*args, **kwargs)

    monkeypatch.setattr(surrogate_module, "slice_sample", counting)
    X, y = gp_data(20, 2)
    s = GPSurrogate(n_burn=30, n_samples=5, random_state=0, n_burn_refit=1)
    s.fit(X[:19], y[:19])
    # first fit: 30 burn-in sweeps (used to adapt the widths), then 5 samples
    assert [c[:2] for c in calls] == [(30, 0), (5, 0)]
    last = s.state_.copy()
    calls.clear()
    s.fit(X, y)
    assert [c[:2] for c in calls] == [(5, 1)]
    np.testing.assert_array_equal(calls[0][2], last)


def test_surrogate_map_reoptimises_only_after_enough_new_data(monkeypatch):
    import skbayes_search.gp.surrogate as surrogate_module

    calls = []
    original = surrogate_module.fit_map

    def counting(*args, **kwargs):
        calls.append(args[1].shape[0])
        return original(*args, **kwargs)

    monkeypatch.setattr(surrogate_module, "fit_map", counting)
    X, y = gp_data(50, 2)
    s = GPSurrogate(
        hyperparameter_sampling="map", random_state=0, reoptimize_growth=0.25
    )
    for n in range(20, 41):
        s.fit(X[:n], y[:n])
    # optimised at 20 rows, then whenever more than a quarter of the rows
    # last optimised on are new: 26 (6 > 5), 33 (7 > 6.5)
    assert calls == [20, 26, 33]
    kept = s.state_.copy()
    # the kept optimum conditions on the new rows: the posterior fits them
    mean, _ = s.predict(X[33:40])
    assert s.n_fits_ == 21
    np.testing.assert_array_equal(s.thetas_[0], kept)
    np.testing.assert_allclose(mean[0], y[33:40], atol=0.3 * np.ptp(y))
    # a sliding window counts its new rows, not its size: 5 new rows of 33
    calls.clear()
    s.fit(X[5:38], y[5:38])
    assert calls == []
    # 12 new rows (33..44) are more than a quarter of 33
    s.fit(X[14:45], y[14:45])
    assert calls == [31]
    # 0 (the default) re-optimises on every fit
    calls.clear()
    s0 = GPSurrogate(hyperparameter_sampling="map", random_state=0)
    for n in (20, 21, 22):
        s0.fit(X[:n], y[:n])
    assert calls == [20, 21, 22]


def test_surrogate_validation():
    X, y = gp_data(5, 2)
    with pytest.raises(ValueError, match="hyperparameter_sampling"):
        GPSurrogate(hyperparameter_sampling="grid").fit(X, y)
    with pytest.raises(ValueError, match="finite"):
        GPSurrogate().fit(X, np.r_[y[:-1], np.nan])
    for bad in (-0.1, np.inf, True, "0.2"):
        with pytest.raises(ValueError, match="reoptimize_growth"):
            GPSurrogate(reoptimize_growth=bad).fit(X, y)
    # constant y does not break standardisation
    s = GPSurrogate(hyperparameter_sampling="map", random_state=0).fit(X, np.ones(5))
    assert s.y_std_ == 1.0
    mean, _ = s.predict(X)
    np.testing.assert_allclose(mean, 1.0, atol=1e-3)
