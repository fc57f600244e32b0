"""The posterior interface: original units, conditioning and fantasies."""

import numpy as np
import pytest

from skbayes_search.gp import (
    BasisKernel,
    GPSurrogate,
    Matern52,
    PosteriorStack,
    ProductKernel,
)


@pytest.fixture
def fitted():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(12, 2))
    y = 50.0 + 10.0 * np.sin(4 * X[:, 0]) + X[:, 1]
    gp = GPSurrogate(n_samples=3, n_burn=30, random_state=0).fit(X, y)
    return gp, X, y, rng


def test_predictions_are_in_original_units(fitted):
    gp, X, y, _ = fitted
    means, stds = gp.predict(X)
    for i, post in enumerate(gp.posteriors):
        mean, var = post.predict(X)
        np.testing.assert_allclose(mean, means[i])
        np.testing.assert_allclose(np.sqrt(var), stds[i])
        m, s = post.mean_std(X)
        np.testing.assert_allclose(m, means[i])
        np.testing.assert_allclose(s, stds[i])
        # at the training inputs the mean is near the (original-unit) data
        assert np.abs(mean - y).max() < 0.2 * y.std()
    np.testing.assert_allclose(gp.predict_mean(X), means)
    assert gp.n_models == len(gp.posteriors) == 3


def test_joint_cross_covariance_and_noise_agree(fitted):
    gp, _, _, rng = fitted
    Z = rng.uniform(size=(4, 2))
    U = rng.uniform(size=(5, 2))
    post = gp.posteriors[0]
    _, cov = post.predict(np.vstack([U, Z]), full_cov=True)
    np.testing.assert_allclose(post.cross_cov(U, Z), cov[:5, 5:], atol=1e-10)
    cross, var = post.cross_cov_to(Z)(U)
    np.testing.assert_allclose(cross, cov[:5, 5:], atol=1e-10)
    np.testing.assert_allclose(var, np.diag(cov)[:5], atol=1e-10)
    assert post.noise_var > 0


def test_samples_match_the_joint_posterior(fitted):
    gp, _, _, rng = fitted
    Z = rng.uniform(size=(3, 2))
    post = gp.posteriors[1]
    draws = post.sample(Z, 4000, np.random.default_rng(1))
    mean, cov = post.predict(Z, full_cov=True)
    np.testing.assert_allclose(
        draws.mean(axis=0), mean, atol=5 * np.sqrt(cov.max() / 4000) + 1e-6
    )
    np.testing.assert_allclose(
        np.cov(draws.T), cov, atol=0.1 * np.abs(cov).max() + 1e-8
    )


def test_conditioning_on_an_observation_pins_the_mean(fitted):
    gp, _, _, rng = fitted
    x = rng.uniform(size=(1, 2))
    post = gp.posteriors[0]
    value = post.mean(x) + 3.0
    conditioned = post.condition(x, value)
    mean, var = conditioned.predict(x)
    assert var[0] < post.predict(x)[1][0]
    # the noise keeps the mean from reaching the value, but it moves there
    assert abs(mean[0] - value[0]) < abs(post.mean(x)[0] - value[0])


def test_fantasies_share_draws_with_the_same_generator(fitted):
    gp, _, _, rng = fitted
    P = rng.uniform(size=(2, 2))
    a = gp.fantasize(P, 5, np.random.default_rng(3))
    b = gp.fantasize(P, 5, np.random.default_rng(3))
    assert len(a) == gp.n_models
    for (pa, da), (_, db) in zip(a, b):
        np.testing.assert_array_equal(da, db)
        assert da.shape == (2, 5) and pa.n_targets == 5
        # each fantasy target reproduces its own fantasised values (to noise)
        mean, _ = pa.predict(P)
        assert mean.shape == (2, 5)
        assert np.abs(mean - da).max() < np.abs(da - da.mean()).max() + 1e-9


_batched = PosteriorStack._predict_batched


def _assert_stack_matches(stack, posteriors, U):
    means, variances = stack.predict(U)
    assert means.shape == (len(U), len(posteriors), stack.n_targets)
    assert variances.shape == (len(U), len(posteriors))
    for j, post in enumerate(posteriors):
        mean, var = post.predict(U)
        np.testing.assert_allclose(
            means[:, j, :], mean.reshape(len(U), -1), rtol=1e-9, atol=1e-9
        )
        np.testing.assert_allclose(variances[:, j], var, rtol=1e-7, atol=1e-12)


def test_stack_predicts_every_posterior_as_it_would_alone(fitted, monkeypatch):
    gp, X, _, rng = fitted
    stack = PosteriorStack(gp.posteriors)
    assert stack._batched and len(stack) == 3
    U = np.vstack([rng.uniform(size=(40, 2)), X[:3]])
    calls = []
    monkeypatch.setattr(
        PosteriorStack,
        "_predict_batched",
        lambda self, U: calls.append(len(U)) or _batched(self, U),
    )
    _assert_stack_matches(stack, gp.posteriors, U)
    assert calls == [len(U)]
    # many candidates go one posterior at a time, with the same answer
    many = rng.uniform(size=(PosteriorStack._MAX_BATCHED_ROWS + 1, 2))
    _assert_stack_matches(stack, gp.posteriors, many)
    assert calls == [len(U)]


def test_stack_of_fantasies_keeps_every_target(fitted):
    gp, _, _, rng = fitted
    fantasies = gp.fantasize(rng.uniform(size=(2, 2)), 5, np.random.default_rng(3))
    posteriors = [post for post, _ in fantasies]
    stack = PosteriorStack(posteriors)
    assert stack._batched and stack.n_targets == 5
    _assert_stack_matches(stack, posteriors, rng.uniform(size=(9, 2)))


def test_stack_with_a_product_kernel_and_near_duplicate_inputs():
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(30, 3))
    X[1] = X[0] + 1e-9  # an ill-conditioned factor
    y = np.cos(3 * X[:, 0]) * (1 + X[:, 2]) + 0.01 * rng.standard_normal(30)
    kernel = ProductKernel(Matern52(dims=[0, 1]), BasisKernel(2, "loss"))
    gp = GPSurrogate(kernel, n_samples=4, n_burn=20, random_state=0).fit(X, y)
    stack = PosteriorStack(gp.posteriors)
    assert stack._batched
    _assert_stack_matches(stack, gp.posteriors, np.vstack([X[:2], X[:2] + 1e-4]))


def test_stack_of_posteriors_on_different_inputs_predicts_them_one_by_one(fitted):
    gp, X, y, rng = fitted
    other = GPSurrogate(n_samples=2, n_burn=20, random_state=1).fit(X[:8], y[:8])
    posteriors = gp.posteriors[:1] + other.posteriors
    stack = PosteriorStack(posteriors)
    assert not stack._batched
    _assert_stack_matches(stack, posteriors, rng.uniform(size=(5, 2)))
    assert not PosteriorStack(gp.posteriors[:1])._batched


def test_stack_refuses_posteriors_with_different_target_counts(fitted):
    gp, _, _, rng = fitted
    (fantasy, _), *_ = gp.fantasize(rng.uniform(size=(1, 2)), 4, rng)
    with pytest.raises(ValueError, match="same number of targets"):
        PosteriorStack([gp.posteriors[0], fantasy])
    with pytest.raises(ValueError, match="at least one posterior"):
        PosteriorStack([])
