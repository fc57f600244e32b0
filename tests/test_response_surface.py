"""The transfer search's response surface: standardisation, location/scale,
meta-features, prior datasets from store records, the trials kept per dataset,
training set, replacement."""

import math

import numpy as np
import pytest

from skbayes_search import Real
from skbayes_search._journal import trial_score
from skbayes_search._meta_features import (
    meta_distances,
    meta_feature_vector,
    nearest,
    standardise_features,
)
from skbayes_search._response_surface import (
    PriorDataset,
    ResponseSurface,
    contains,
    estimate_location_scale,
    informative_subset,
    prior_datasets,
    replace_coordinates,
    standardise,
)
from skbayes_search.space import SearchSpace
from skbayes_search.storage import TrialStore


# ---------------------------------------------------------------------------
# Standardisation and the training set
# ---------------------------------------------------------------------------
def test_standardise_matches_the_paper_estimates():
    losses = np.array([0.3, 0.1, 0.5, 0.2])
    y, mean, std = standardise(losses)
    assert mean == pytest.approx(0.275)
    # maximum-likelihood (1/t) standard deviation
    assert std == pytest.approx(np.sqrt(np.mean((losses - 0.275) ** 2)))
    np.testing.assert_allclose(y, (losses - mean) / std)
    # one trial, or equal values: zero responses, no division by zero
    y, mean, std = standardise(np.array([0.4]))
    assert y.tolist() == [0.0] and std == 1.0
    y, _, _ = standardise(np.array([0.4, 0.4, 0.4]))
    assert y.tolist() == [0.0, 0.0, 0.0]


def _prior(run_id, X, losses):
    return PriorDataset(
        run_id=run_id,
        name=f"run{run_id}",
        meta={},
        features=np.zeros(3),
        X=X,
        losses=losses,
    )


def test_current_responses_are_restandardised_every_iteration():
    rng = np.random.default_rng(0)
    # two prior datasets on very different scales
    p1 = _prior(1, rng.uniform(size=(5, 2)), 100.0 + 10.0 * rng.normal(size=5))
    p2 = _prior(2, rng.uniform(size=(4, 2)), 0.01 * rng.normal(size=4))
    surface = ResponseSurface([p1, p2], neighbours=[1], n_dims=2)
    y1, _, _ = standardise(p1.losses)
    y2, _, _ = standardise(p2.losses)
    np.testing.assert_allclose(surface.y_prior, np.concatenate([y1, y2]))
    # dataset index and neighbour flag columns
    np.testing.assert_array_equal(surface.X_prior[:, 2], [1] * 5 + [2] * 4)
    np.testing.assert_array_equal(surface.X_prior[:, 3], [0] * 5 + [1] * 4)

    X_cur = rng.uniform(size=(6, 2))
    losses = np.array([5.0, 1.0, 3.0, -2.0, 8.0, 0.5])
    previous = None
    for t in range(1, 7):
        X, y, mean, std = surface.training_set(X_cur[:t], losses[:t])
        # the prior part is untouched, the current part replaced as a whole
        np.testing.assert_array_equal(y[:9], surface.y_prior)
        assert mean == pytest.approx(losses[:t].mean())
        assert std == pytest.approx(losses[:t].std() if t > 1 else 1.0)
        np.testing.assert_allclose(y[9:], (losses[:t] - mean) / std)
        np.testing.assert_array_equal(X[9:, :2], X_cur[:t])
        np.testing.assert_array_equal(X[9:, 2:], np.tile([0.0, 1.0], (t, 1)))
        if previous is not None and t > 2:
            # earlier responses changed because the estimates changed
            assert not np.allclose(y[9 : 9 + t - 1], previous)
        previous = y[9:]
        assert np.mean(y[9:]) == pytest.approx(0.0, abs=1e-12)


def _location_scale_by_least_squares(f, m, prior_std, r, n_pseudo=2.0):
    # the MAP of f_t = mu + sigma m_t + N(0, prior_std^2 r) with
    # sigma ~ N(prior_std, prior_std^2 / n_pseudo) as one stacked least squares
    noise = prior_std * np.sqrt(r)
    A = np.vstack(
        [np.column_stack([np.ones_like(m), m]) / noise, [0.0, np.sqrt(n_pseudo)]]
    )
    b = np.r_[f / noise, np.sqrt(n_pseudo)]
    A[-1, 1] /= prior_std
    mu, sigma = np.linalg.lstsq(A, b, rcond=None)[0]
    return mu, sigma


def test_location_scale_estimate_uses_the_transferred_prediction():
    rng = np.random.default_rng(0)
    # one trial: the prior scale, and the response equals its prediction
    mean, std = estimate_location_scale(np.array([0.2]), np.array([-1.5]), 0.04, 0.5)
    assert std == pytest.approx(0.04)
    assert (0.2 - mean) / std == pytest.approx(-1.5)
    # a good first trial is not declared average, as the moments would
    y, _, _ = standardise(np.array([0.2]))
    assert y[0] == 0.0
    # the closed form is the MAP of the regression
    for t in (2, 3, 6, 20):
        m = rng.normal(size=t)
        f = 0.3 + 0.05 * m + 0.01 * rng.normal(size=t)
        got = estimate_location_scale(f, m, 0.2, 0.3)
        np.testing.assert_allclose(
            got, _location_scale_by_least_squares(f, m, 0.2, 0.3), rtol=1e-10
        )
    # the data's slope takes over from the prior scale as trials accumulate
    errors = []
    for t in (2, 5, 20, 200):
        m = np.linspace(-2.0, 2.0, t)
        mean, std = estimate_location_scale(0.3 + 0.05 * m, m, 0.2, 0.3)
        errors.append(abs(std - 0.05))
        assert 0.05 <= std <= 0.2
        # the mean of the scores is not the dataset's mean when the trials
        # sit where the prediction is good
        mean_good, _ = estimate_location_scale(0.3 + 0.05 * m[:2], m[:2] - 1.0, 0.05, 1)
        assert mean_good > 0.3 + 0.05 * np.mean(m[:2])
    assert errors == sorted(errors, reverse=True) and errors[-1] < 0.01
    # a falling slope (the transfer is wrong here) floors the scale
    m = np.linspace(-1.0, 1.0, 30)
    _, std = estimate_location_scale(-m, m, 0.2, 0.1)
    assert std == pytest.approx(0.02)


def test_training_set_with_predictions_and_without_neighbours():
    rng = np.random.default_rng(1)
    p1 = _prior(1, rng.uniform(size=(5, 2)), 100.0 + 10.0 * rng.normal(size=5))
    p2 = _prior(2, rng.uniform(size=(4, 2)), 0.01 * rng.normal(size=4))
    surface = ResponseSurface([p1, p2], neighbours=[0, 1], n_dims=2)
    _, _, s1 = standardise(p1.losses)
    _, _, s2 = standardise(p2.losses)
    assert surface.prior_std == pytest.approx(np.median([s1, s2]))
    X_cur = rng.uniform(size=(3, 2))
    losses = np.array([0.4, 0.1, 0.3])
    predicted = np.array([0.5, -1.0, 0.2])
    _, y, mean, std = surface.training_set(X_cur, losses, predicted, 0.4)
    expected = estimate_location_scale(losses, predicted, surface.prior_std, 0.4)
    assert (mean, std) == pytest.approx(expected)
    np.testing.assert_allclose(y[9:], (losses - mean) / std)
    np.testing.assert_array_equal(y[:9], surface.y_prior)
    # no neighbour to take a scale from: the paper's moment estimates
    lonely = ResponseSurface([p1, p2], neighbours=[], n_dims=2)
    _, y, mean, std = lonely.training_set(X_cur, losses, predicted, 0.4)
    assert (mean, std) == pytest.approx((losses.mean(), losses.std()))


# ---------------------------------------------------------------------------
# Random replacement
# ---------------------------------------------------------------------------
def test_random_replacement_per_parameter():
    space = SearchSpace(
        {"a": Real(0.0, 1.0), "b": Real(1e-2, 1e2, "log-uniform"), "c": ["x", "y", "z"]}
    )
    rng = np.random.default_rng(0)
    x = space.to_unit([{"a": 0.5, "b": 1.0, "c": "y"}])[0]
    assert replace_coordinates(space, x, rng, 0.0) == (x, 0)
    counts = []
    for _ in range(400):
        new, n = replace_coordinates(space, x, rng, 0.25)
        params = space.from_unit(new[None, :])[0]
        changed = (params["a"] != 0.5) + (params["b"] != 1.0)
        # a categorical redraw may land on the same category
        assert changed <= n <= changed + 1
        np.testing.assert_array_equal(new, space.snap(new[None, :])[0])
        counts.append(n)
    assert np.mean(counts) / 3 == pytest.approx(0.25, abs=0.05)
    new, n = replace_coordinates(space, x, rng, 1.0)
    assert n == 3

    # conditional space: the sub-space choice is one more coordinate
    space = SearchSpace(
        [
            {"kind": ["rbf"], "C": Real(0.1, 10.0), "gamma": Real(0.1, 1.0)},
            {"kind": ["poly"], "C": Real(0.1, 10.0), "degree": [2, 3]},
        ]
    )
    x = space.to_unit([{"kind": "poly", "C": 1.0, "degree": 3}])[0]
    kinds = []
    for _ in range(200):
        new, n = replace_coordinates(space, x, rng, 0.5)
        params = space.from_unit(new[None, :])[0]
        np.testing.assert_array_equal(new, space.to_unit([params])[0])
        assert 0 <= n <= 4
        kinds.append(params["kind"])
        if params["kind"] == "poly" and n == 0:
            assert params == {"kind": "poly", "C": 1.0, "degree": 3}
    # rbf when the selector is redrawn onto it (0.5 * 0.5), or when "kind"
    # is redrawn to "rbf", which only the rbf sub-space holds (0.5^3)
    assert kinds.count("rbf") / 200 == pytest.approx(0.375, abs=0.1)


# ---------------------------------------------------------------------------
# Meta-features, prior datasets, prior points
# ---------------------------------------------------------------------------
def test_meta_features_and_distances():
    vec = meta_feature_vector({"n_samples": 100, "n_features": 8, "n_classes": None})
    np.testing.assert_allclose(vec, [np.log(100), np.log(8), 0.0])
    # unknown n_features: nan, left out of the distance
    vec = meta_feature_vector({"n_samples": 100, "n_features": None, "n_classes": 3})
    assert math.isnan(vec[1]) and vec[2] == 3.0
    others = np.array([[np.log(100), 1.0, 3.0], [np.log(10), 2.0, 0.0]])
    d = meta_distances(vec, others)
    np.testing.assert_allclose(d, [0.0, np.hypot(np.log(10), 3.0)])
    assert meta_distances(vec, np.empty((0, 3))).shape == (0,)


def test_contains_uses_a_tolerance():
    points = np.array([[0.1, 0.2], [0.5, 0.5]])
    assert contains(points, np.array([0.5, 0.5 + 1e-12]))
    assert not contains(points, np.array([0.5, 0.51]))
    assert not contains(np.empty((0, 2)), np.array([0.5, 0.5]))


def _trial(x, score, *, fraction=1.0, status="ok", dataset_name=None, extra=True):
    extras = {"score": score} if extra else {}
    if dataset_name is not None:
        extras["dataset_name"] = dataset_name
    return {
        "x": x,
        "fraction": fraction,
        "status": status,
        "scores": {"test": {"acc": [score - 0.1, score + 0.1]}},
        "extras": extras,
    }


def test_trial_score_reads_the_journal_extra_or_the_first_metric():
    assert trial_score(_trial([0.5], 0.7)) == 0.7
    assert trial_score(_trial([0.5], 0.7, extra=False)) == pytest.approx(0.7)
    assert math.isnan(trial_score(_trial([0.5], 0.7, status="failed")))


def test_prior_datasets_from_store_records():
    runs = [
        {
            "id": 3,
            "name": "a",
            "meta": {"n_samples": 20, "n_features": 2, "n_classes": None},
            "trials": [
                _trial([0.1, 0.2], 0.5, dataset_name="d"),
                _trial([0.3, 0.4], 0.9, dataset_name="d"),
                # subset trials measure another function: left out
                _trial([0.5, 0.5], 1.0, fraction=0.5),
                # a failed fit gets the run's worst loss
                _trial([0.6, 0.6], 0.0, status="failed"),
                # another encoding width: left out
                _trial([0.1], 0.4),
            ],
        },
        # one finite score: no deviation from the mean, left out
        {"id": 4, "name": "b", "meta": None, "trials": [_trial([0.1, 0.1], 0.2)]},
    ]
    (data,) = prior_datasets(runs, n_dims=2)
    assert (data.run_id, data.name, data.dataset_name) == (3, "a", "d")
    np.testing.assert_array_equal(data.X, [[0.1, 0.2], [0.3, 0.4], [0.6, 0.6]])
    np.testing.assert_allclose(data.losses, [-0.5, -0.9, -0.5])
    np.testing.assert_allclose(data.features, [np.log(20), np.log(2), 0.0])


def test_prior_datasets_from_the_store_public_api(tmp_path):
    path = tmp_path / "s.sqlite"
    store = TrialStore(path)
    signature = {"a": ["real", 0.0, 1.0]}
    for name, finish in (("old", True), ("running", False), ("current", False)):
        run = store.open_run(
            name,
            strategy="TransferBayesSearchCV",
            estimator_class="Est",
            space_signature=signature,
            meta={"n_samples": 10, "n_features": 1, "n_classes": 2},
        )
        for x, score in ((0.2, 0.6), (0.8, 0.4)):
            store.add_trial(
                run,
                {
                    "params": {"a": x},
                    "x": [x],
                    "fraction": 1.0,
                    "status": "ok",
                    "scores": {"test": {"score": [score, score]}},
                    "fit_times": [0.1, 0.1],
                    "score_times": [0.1, 0.1],
                    "n_test_samples": [5, 5],
                    "extras": {"score": score},
                },
            )
        if finish:
            store.finish_run(run)
    runs = store.finished_runs(
        estimator_class="Est", space_signature=signature, exclude="current"
    )
    (data,) = prior_datasets(runs, n_dims=1)
    assert data.name == "old"
    np.testing.assert_allclose(data.losses, [-0.6, -0.4])


def test_tried_configurations_and_best_prior_points():
    p1 = _prior(1, np.array([[0.9, 0.9], [0.1, 0.1], [0.9, 0.9]]), np.array([1, 3, 2]))
    p2 = _prior(2, np.array([[0.5, 0.5], [0.2, 0.2]]), np.array([5.0, 0.0]))
    surface = ResponseSurface([p1, p2], neighbours=[1], n_dims=2)
    np.testing.assert_array_equal(
        surface.tried_configurations(group_only=False),
        [[0.1, 0.1], [0.2, 0.2], [0.5, 0.5], [0.9, 0.9]],
    )
    np.testing.assert_array_equal(
        surface.tried_configurations(group_only=True), [[0.2, 0.2], [0.5, 0.5]]
    )
    np.testing.assert_array_equal(
        surface.best_prior_points(1, group_only=True), [[0.2, 0.2]]
    )
    # responses, not losses, rank the points across datasets
    np.testing.assert_array_equal(
        surface.best_prior_points(2, group_only=False), [[0.9, 0.9], [0.2, 0.2]]
    )
    # without neighbours every prior dataset's configurations count
    lonely = ResponseSurface([p1, p2], neighbours=[], n_dims=2)
    assert len(lonely.tried_configurations(group_only=True)) == 4


def test_meta_features_are_standardised_across_datasets():
    rng = np.random.default_rng(0)
    F = np.column_stack(
        [rng.normal(7.0, 2.0, 6), rng.normal(3.0, 0.5, 6), np.full(6, 2.0)]
    )
    F[4, 1] = np.nan  # n_features unknown for one dataset
    Z = standardise_features(F)
    np.testing.assert_allclose(Z[:, 0], (F[:, 0] - F[:, 0].mean()) / F[:, 0].std())
    known = np.isfinite(F[:, 1])
    col = F[known, 1]
    np.testing.assert_allclose(Z[known, 1], (col - col.mean()) / col.std())
    # the unknown value sits at the mean; a feature without spread is 0
    assert Z[4, 1] == 0.0
    assert np.all(Z[:, 2] == 0.0)
    # a shift and scale of a feature (other units) leaves its z-scores as they are
    G = F.copy()
    G[:, 0] = 10.0 + 3.0 * G[:, 0]
    np.testing.assert_allclose(standardise_features(G), Z, atol=1e-12)
    # one dataset: nothing to standardise against
    assert np.all(standardise_features(F[:1]) == 0.0)


def test_nearest_datasets_ties_go_to_the_older_run():
    distances = np.array([2.0, 0.5, 1.0, 0.5, 3.0])
    assert nearest(distances, 2).tolist() == [1, 3]
    assert nearest(distances, 3).tolist() == [1, 2, 3]
    assert nearest(distances, 10).tolist() == [0, 1, 2, 3, 4]
    assert nearest(np.empty(0), 3).tolist() == []


# ---------------------------------------------------------------------------
# The trials of each prior dataset the GP holds
# ---------------------------------------------------------------------------
def test_informative_subset_keeps_the_best_and_spreads_the_rest():
    rng = np.random.default_rng(0)
    # 20 trials near the optimum (0.2, 0.2) and 4 far away, in the corners
    corners = np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.6, 0.6]])
    X = np.vstack([0.2 + 0.05 * rng.normal(size=(20, 2)), corners])
    responses = np.r_[np.sort(rng.normal(-1.0, 0.3, 20)), [2.0, 1.5, 1.8, 0.5]]
    keep = informative_subset(X, responses, 8)
    assert len(keep) == 8 and keep.tolist() == sorted(set(keep.tolist()))
    # the 4 best responses, then the points farthest from those kept: the
    # corners, not more of the crowd around the optimum
    assert set(range(4)) <= set(keep.tolist())
    assert set(range(20, 24)) <= set(keep.tolist())
    # an odd cap rounds towards the best
    assert set(range(3)) <= set(informative_subset(X, responses, 5).tolist())
    # no cap, or a cap above the count: every trial, in order
    assert informative_subset(X, responses, None).tolist() == list(range(24))
    assert informative_subset(X, responses, 30).tolist() == list(range(24))
    assert informative_subset(X, responses, 1).tolist() == [0]


def test_surface_caps_each_dataset_after_standardising_all_its_trials():
    rng = np.random.default_rng(2)
    p1 = _prior(1, rng.uniform(size=(12, 2)), rng.normal(size=12))
    p2 = _prior(2, rng.uniform(size=(3, 2)), rng.normal(size=3))
    surface = ResponseSurface([p1, p2], neighbours=[0, 1], n_dims=2, max_per_dataset=5)
    assert surface.n_used == [5, 3]
    y1, _, s1 = standardise(p1.losses)
    keep = informative_subset(p1.X, y1, 5)
    # the kept trials keep the responses standardised with all twelve
    np.testing.assert_array_equal(surface.X_prior[:5, :2], p1.X[keep])
    np.testing.assert_allclose(surface.y_prior[:5], y1[keep])
    # the scale of the current dataset comes from all trials too
    _, _, s2 = standardise(p2.losses)
    assert surface.prior_std == pytest.approx(np.median([s1, s2]))


def test_surface_with_dataset_features():
    rng = np.random.default_rng(3)
    p1 = _prior(1, rng.uniform(size=(2, 2)), np.array([0.1, 0.3]))
    p2 = _prior(2, rng.uniform(size=(3, 2)), np.array([0.2, 0.5, 0.1]))
    features = np.array([[0.0, 0.5], [-1.0, 1.0], [1.0, -1.5]])
    surface = ResponseSurface([p1, p2], neighbours=[0, 1], n_dims=2, features=features)
    # [x, z, dataset, group]
    np.testing.assert_array_equal(surface.X_prior[:2, 2:], [[-1.0, 1.0, 1, 1]] * 2)
    np.testing.assert_array_equal(surface.X_prior[2:, 2:], [[1.0, -1.5, 2, 1]] * 3)
    U = rng.uniform(size=(4, 2))
    np.testing.assert_array_equal(
        surface.augment(U), np.column_stack([U, np.tile([0.0, 0.5, 0.0, 1.0], (4, 1))])
    )
    X, y, _, _ = surface.training_set(U, np.arange(4.0))
    assert X.shape == (9, 6) and y.shape == (9,)
    # the tried configurations are the hyperparameter columns only
    assert surface.tried_configurations(group_only=True).shape == (5, 2)
    with pytest.raises(ValueError, match="one row per dataset"):
        ResponseSurface([p1, p2], neighbours=[0], n_dims=2, features=features[:2])
