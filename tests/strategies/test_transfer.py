"""TransferBayesSearchCV: per-dataset response surface, transfer kernels, warm start."""

import gc
import glob
import os
import shutil
import tempfile

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

from skbayes_search import BayesSearchCV, Categorical, Real, TrialStore
from skbayes_search._meta_features import standardise_features
from skbayes_search._response_surface import estimate_location_scale
from skbayes_search.space import SearchSpace
from skbayes_search.storage import TRIAL_FIELDS
from skbayes_search.strategies.transfer import TransferBayesSearchCV

# ---------------------------------------------------------------------------
# scikit-learn compatibility
# ---------------------------------------------------------------------------
EXPECTED_FAILED_CHECKS = {
    "check_supervised_y_2d": "DataConversionWarning not caught",
    "check_requires_y_none": "Doesn't fail gracefully",
}

# parametrize_with_checks builds its instances at collection time, before any
# pytest fixture exists, so they name a placeholder store in the temporary
# directory (a fixed name keeps the test ids stable, e.g. for pytest-xdist).
# It is never written: each check runs on a clone with a fresh store of its
# own under tmp_path, so that no check sees the runs of another.
_CHECKS_STORE = os.path.join(tempfile.gettempdir(), "skbayes-transfer-checks.sqlite")


def _check_instances():
    # Every fit of a check adds a finished run to the store, and the next fit
    # of the check transfers from it. Checks that fit twice and compare
    # predictions (check_fit_idempotent,
    # check_regressors_int, check_*_data_not_an_array, ...) can therefore
    # only pass where the store cannot change the selected model: the spaces
    # below are finite and n_iter covers them, so every fit evaluates every
    # configuration and picks the same best one, whatever order transfer
    # proposes them in. Transfer itself still runs (the first trial of each
    # fit after the first is the best point predicted from the earlier runs).
    common = dict(cv=2, error_score="raise", random_state=0)
    return [
        TransferBayesSearchCV(
            Ridge(),
            {"alpha": [0.1, 1.0]},
            store=_CHECKS_STORE,
            n_iter=2,
            **common,
        ),
        TransferBayesSearchCV(
            KNeighborsClassifier(),
            {"n_neighbors": [1, 3]},
            store=_CHECKS_STORE,
            kernel="sqe",
            n_iter=2,
            **common,
        ),
    ]


@parametrize_with_checks(
    _check_instances(), expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS
)
def test_sklearn_compatible(estimator, check, tmp_path):
    estimator = clone(estimator).set_params(store=str(tmp_path / "store.sqlite"))
    with threadpool_limits(1):
        check(estimator)


# ---------------------------------------------------------------------------
# A family of near-identical synthetic tasks
# ---------------------------------------------------------------------------
SPACE = {"a": Real(1e-2, 1e2, prior="log-uniform"), "b": Real(0.0, 1.0)}


class Bowl(RegressorMixin, BaseEstimator):
    """Scores a known function of ``(a, b)``; the task is read from the data.

    Row 0 of ``X`` holds the task: the optimum ``(ca, cb)`` in unit-cube
    coordinates, the score level and the score scale. Fitting does nothing,
    so a trial costs microseconds.
    """

    def __init__(self, a=1.0, b=0.5):
        self.a = a
        self.b = b

    def fit(self, X, y=None):
        self.n_fits_ = 1
        return self

    def score(self, X, y=None):
        ca, cb, level, scale = X[0, :4]
        ua = (np.log10(self.a) + 2.0) / 4.0
        return level - scale * ((ua - ca) ** 2 + (self.b - cb) ** 2)


def _task(rng, n_samples, center=(0.2, 0.8)):
    """Data of one task: the optimum shifted slightly, level and scale varied."""
    shift = rng.uniform(-0.03, 0.03, size=2)
    row = [
        center[0] + shift[0],
        center[1] + shift[1],
        rng.uniform(0.3, 0.9),
        rng.uniform(0.5, 3.0),
    ]
    X = np.tile(row, (n_samples, 1))
    return X, np.zeros(n_samples), row


def _regret(scores, row):
    return row[2] - np.max(scores)


def _copy_store(src, dst_dir):
    """Copy a closed store file (and any WAL side files)."""
    for path in glob.glob(src + "*"):
        shutil.copy(path, os.path.join(dst_dir, os.path.basename(path)))
    return os.path.join(dst_dir, os.path.basename(src))


N_PRIOR = 6


@pytest.fixture(scope="module")
def prior_store(tmp_path_factory):
    """A store with 6 finished runs on near-identical tasks (the stream)."""
    path = str(tmp_path_factory.mktemp("prior") / "runs.sqlite")
    rng = np.random.default_rng(123)
    with threadpool_limits(1):
        for i in range(N_PRIOR):
            X, y, _ = _task(rng, 40 + 5 * i)
            TransferBayesSearchCV(
                Bowl(), SPACE, store=path, n_iter=8, cv=2, random_state=i
            ).fit(X, y)
    TrialStore(path).close()
    return path


class KeepState(TransferBayesSearchCV):
    """Keeps the GPs, predictions and surface, which fit otherwise drops."""

    def _end_search(self, ctx, results):
        super()._end_search(ctx, results)
        self.kept_surrogate_ = self._surrogate
        self.kept_prior_gp_ = self._prior_gp
        self.kept_predicted_ = np.array(self._predicted)
        self.kept_predicted_var_ = np.array(self._predicted_var)
        self.kept_surface_ = self._surface


def test_search_records_running_estimates_and_feeds_them_to_the_gp(
    prior_store, tmp_path
):
    store = _copy_store(prior_store, str(tmp_path))
    X, y, _ = _task(np.random.default_rng(7), 50)
    with threadpool_limits(1):
        search = KeepState(
            Bowl(), SPACE, store=store, n_iter=5, cv=2, random_state=0
        ).fit(X, y)
    res = search.cv_results_
    scores = res["mean_test_score"]
    surface = search.kept_surface_
    # every trial was predicted once from the prior datasets alone
    U = SearchSpace(SPACE).to_unit(list(res["params"]))
    mean, _ = search.kept_prior_gp_.predict(surface.augment(U))
    predicted = search.kept_predicted_
    np.testing.assert_allclose(predicted[:4], mean[0, :4])
    assert np.isnan(res["dataset_score_mean"][0])
    for t in range(1, 5):
        # the estimates used for proposal t are those of trials 0..t-1
        residual = np.clip(search.kept_predicted_var_[:t].mean(), 0.05, 1.0)
        mu, sigma = estimate_location_scale(
            -scores[:t], predicted[:t], surface.prior_std, residual
        )
        assert res["dataset_score_mean"][t] == pytest.approx(-mu)
        assert res["dataset_score_std"][t] == pytest.approx(sigma)
    # after one trial the response is its prediction, not the moments' zero
    assert res["dataset_score_std"][1] == pytest.approx(surface.prior_std)
    # the last GP fit saw the current dataset's responses standardised with
    # the estimates of the first 4 trials, after all prior responses
    gp_y = search.kept_surrogate_.y_
    np.testing.assert_allclose(gp_y[-4:], (-scores[:4] - mu) / sigma)
    np.testing.assert_allclose(gp_y[:-4], surface.y_prior)


@pytest.mark.parametrize("kernel", ["mkl", "sqe"])
def test_first_trial_is_the_best_predicted_prior_configuration(
    prior_store, tmp_path, kernel
):
    store = _copy_store(prior_store, str(tmp_path))
    X, y, _ = _task(np.random.default_rng(9), 45)
    with threadpool_limits(1):
        search = KeepState(
            Bowl(), SPACE, store=store, kernel=kernel, n_iter=1, cv=2, random_state=0
        ).fit(X, y)
    surface = search.kept_surface_
    first = SearchSpace(SPACE).to_unit([search.cv_results_["params"][0]])[0]
    tried = np.unique(surface.X_prior[:, :2], axis=0)
    # a configuration tried before, not an extrapolated corner
    assert np.abs(tried - first).max(axis=1).min() < 1e-9
    mean, _ = search.kept_prior_gp_.predict(surface.augment(tried))
    best = tried[np.argmin(mean[0])]
    np.testing.assert_allclose(first, best, atol=1e-9)


def test_independent_search_keeps_the_paper_moments(tmp_path):
    X, y, _ = _task(np.random.default_rng(8), 30)
    with threadpool_limits(1):
        search = TransferBayesSearchCV(
            Bowl(),
            SPACE,
            store=str(tmp_path / "s.sqlite"),
            n_iter=4,
            cv=2,
            random_state=0,
        ).fit(X, y)
    res = search.cv_results_
    scores = res["mean_test_score"]
    for t in range(1, 4):
        assert res["dataset_score_mean"][t] == pytest.approx(scores[:t].mean())
        expected_std = scores[:t].std() if t > 1 else 1.0
        assert res["dataset_score_std"][t] == pytest.approx(expected_std)


# ---------------------------------------------------------------------------
# Proposals
# ---------------------------------------------------------------------------
def test_first_trial_is_the_default_point_without_history(tmp_path):
    X, y, _ = _task(np.random.default_rng(0), 30)
    search = TransferBayesSearchCV(
        Bowl(), SPACE, store=str(tmp_path / "s.sqlite"), n_iter=3, cv=2, random_state=0
    ).fit(X, y)
    first = search.cv_results_["params"][0]
    assert first["a"] == pytest.approx(1.0) and first["b"] == pytest.approx(0.5)
    assert search.transfer_runs_ == []
    # the run is in the store, finished, ready for the next dataset
    store = TrialStore(tmp_path / "s.sqlite")
    (run,) = store.runs(finished=True)
    assert run["name"] == search.run_name_
    assert run["n_trials"] == 3


@pytest.mark.parametrize("kernel", ["mkl", "sqe"])
def test_transfer_beats_an_independent_gp_on_the_first_trials(
    prior_store, tmp_path, kernel
):
    n_first = 3
    regrets = {"transfer": [], "independent": []}
    for seed in range(3):
        X, y, row = _task(np.random.default_rng(1000 + seed), 47)
        seed_dir = tmp_path / f"{kernel}{seed}"
        seed_dir.mkdir()
        store = _copy_store(prior_store, str(seed_dir))
        with threadpool_limits(1):
            transfer = TransferBayesSearchCV(
                Bowl(),
                SPACE,
                store=store,
                kernel=kernel,
                n_iter=n_first,
                cv=2,
                random_state=seed,
            ).fit(X, y)
            # the paper's independent GP: the same model with no history
            independent = TransferBayesSearchCV(
                Bowl(),
                SPACE,
                store=str(seed_dir / "empty.sqlite"),
                kernel=kernel,
                n_iter=n_first,
                cv=2,
                random_state=seed,
            ).fit(X, y)
        assert len(transfer.transfer_runs_) == N_PRIOR
        regrets["transfer"].append(
            _regret(transfer.cv_results_["mean_test_score"], row)
        )
        regrets["independent"].append(
            _regret(independent.cv_results_["mean_test_score"], row)
        )
    transfer, independent = (np.array(regrets[k]) for k in ("transfer", "independent"))
    # wide margin: transfer's best-of-3 regret is a fraction of the GP's
    assert transfer.mean() < 0.2 * independent.mean()
    assert np.all(transfer < independent)


def _write_run(store, name, X, rng, n_trials, center):
    """A finished run of Bowl on the task ``X``, through the public store API.

    Half of its trials lie near ``center`` (as a search's would), the rest
    anywhere.
    """
    space = SearchSpace(SPACE)
    run = store.open_run(
        name,
        strategy="TransferBayesSearchCV",
        estimator_class=f"{Bowl.__module__}.{Bowl.__qualname__}",
        space_signature=space.signature(),
        meta={"n_samples": len(X), "n_features": X.shape[1], "n_classes": None},
    )
    U = rng.uniform(size=(n_trials, 2))
    near = n_trials // 2
    U[:near] = np.clip(np.asarray(center) + 0.05 * rng.normal(size=(near, 2)), 0, 1)
    for params in space.from_unit(U):
        score = Bowl(**params).score(X)
        store.add_trial(
            run,
            {
                "params": params,
                "x": space.to_unit([params])[0].tolist(),
                "fraction": 1.0,
                "status": "ok",
                "scores": {"test": {"score": [score, score]}},
                "fit_times": [0.0, 0.0],
                "score_times": [0.0, 0.0],
                "n_test_samples": [1, 1],
                "extras": {"score": score},
            },
        )
    store.finish_run(run)


def test_gp_holds_the_nearest_datasets_with_at_most_max_trials_each(tmp_path):
    store = TrialStore(tmp_path / "s.sqlite")
    rng = np.random.default_rng(0)
    for i, n in enumerate([30, 300, 40, 3000, 35]):
        X, _, row = _task(rng, n)
        _write_run(store, f"prior-{i}", X, rng, 9, row[:2])
    X, y, _ = _task(rng, 33)
    with threadpool_limits(1):
        search = KeepState(
            Bowl(),
            SPACE,
            store=store,
            n_neighbors=3,
            max_trials_per_dataset=4,
            n_iter=3,
            cv=2,
            random_state=0,
        ).fit(X, y)
    runs = search.transfer_runs_
    assert [r["n_trials"] for r in runs] == [9] * 5
    assert [r["neighbor"] for r in runs] == [True, False, True, False, True]
    assert [r["n_used"] for r in runs] == [4, 0, 4, 0, 4]
    # the GPs' training sets: 3 x 4 prior trials (and the current ones)
    assert search.kept_surface_.X_prior.shape[0] == 12
    assert search.kept_prior_gp_.X_.shape[0] == 12
    assert search.kept_surrogate_.X_.shape[0] == 12 + 2
    # no cap: every trial of the neighbours, now the first search's run (3
    # trials, the nearest) and the two nearest of the others
    search.set_params(max_trials_per_dataset=None, n_iter=1).fit(X, y)
    assert [r["n_used"] for r in search.transfer_runs_] == [9, 0, 0, 0, 9, 3]


@pytest.mark.parametrize("kernel", ["sqe", "mkl"])
def test_sqe_inputs_hold_the_standardised_meta_features(tmp_path, kernel):
    store = TrialStore(tmp_path / "s.sqlite")
    rng = np.random.default_rng(1)
    for i, n in enumerate([30, 300, 3000]):
        X, _, row = _task(rng, n)
        _write_run(store, f"prior-{i}", X, rng, 4, row[:2])
    X, y, _ = _task(rng, 100)
    with threadpool_limits(1):
        search = KeepState(
            Bowl(), SPACE, store=store, kernel=kernel, n_iter=2, cv=2, random_state=0
        ).fit(X, y)
    surface = search.kept_surface_
    current = surface.augment(np.full((1, 2), 0.5))[0]
    if kernel == "mkl":
        # the neighbour kernel places datasets by the neighbour group only
        assert surface.X_prior.shape[1] == 2 + 2
        assert current.tolist() == [0.5, 0.5, 0.0, 1.0]
        return
    # only log n_samples varies across these datasets: one feature column,
    # standardised across the current and the prior datasets
    F = np.vstack(
        [search.meta_features_, [r["meta_features"] for r in search.transfer_runs_]]
    )
    z = standardise_features(F)[:, 0]
    assert surface.X_prior.shape[1] == 2 + 1 + 2
    assert current[2] == pytest.approx(z[0])
    np.testing.assert_allclose(surface.X_prior[:, 2], np.repeat(z[1:], 4))
    # one length scale per hyperparameter and per feature
    assert search.kept_surrogate_.kernel_.n_params == 3


@pytest.mark.parametrize("n_current, center", [(35, (0.2, 0.8)), (2500, (0.8, 0.2))])
def test_sqe_transfers_from_datasets_with_similar_meta_features(
    tmp_path, n_current, center
):
    """Small datasets peak at one corner, large ones at the other: the first
    trial follows the prior datasets of the current one's size."""
    store = TrialStore(tmp_path / "s.sqlite")
    rng = np.random.default_rng(2)
    for i, n in enumerate([30, 2000, 40, 3000, 35, 2500]):
        c = (0.2, 0.8) if n < 100 else (0.8, 0.2)
        X, _, row = _task(rng, n, center=c)
        _write_run(store, f"prior-{i}", X, rng, 8, row[:2])
    X, y, _ = _task(rng, n_current, center=center)
    with threadpool_limits(1):
        search = TransferBayesSearchCV(
            Bowl(), SPACE, store=store, kernel="sqe", n_iter=1, cv=2, random_state=0
        ).fit(X, y)
    first = SearchSpace(SPACE).to_unit([search.cv_results_["params"][0]])[0]
    assert np.abs(first - np.asarray(center)).max() < 0.15


def _related_task(rng):
    """A task whose optimum moves with its size (and so with its meta-features)."""
    t = rng.uniform()
    return _task(rng, int(30 * 2 ** (3 * t)), (0.25 + 0.3 * t, 0.75 - 0.3 * t))


@pytest.mark.parametrize("kernel", ["mkl", "sqe"])
def test_warm_start_beats_bayes_search_on_a_stream_of_related_datasets(
    tmp_path, kernel
):
    """Datasets arrive one at a time; after a few trials on each, the
    transfer search is closer to the optimum than BayesSearchCV, on average."""
    store = TrialStore(tmp_path / "stream.sqlite")
    rng = np.random.default_rng(1)
    for i in range(6):
        X, _, row = _related_task(rng)
        _write_run(store, f"prior-{i}", X, rng, 8, row[:2])
    n_trials, regrets = 3, {"transfer": [], "bayes": []}
    for i in range(10):
        X, y, row = _related_task(rng)
        with threadpool_limits(1):
            # each search joins the store: later datasets transfer from it
            transfer = TransferBayesSearchCV(
                Bowl(),
                SPACE,
                store=store,
                kernel=kernel,
                n_iter=n_trials,
                cv=2,
                random_state=i,
            ).fit(X, y)
            bayes = BayesSearchCV(
                Bowl(), SPACE, n_iter=n_trials, cv=2, random_state=i
            ).fit(X, y)
        for name, search in (("transfer", transfer), ("bayes", bayes)):
            scores = search.cv_results_["mean_test_score"]
            regrets[name].append(_regret(scores, row) / row[3])
    # wide margin: half the regret of BayesSearchCV's first trials
    assert np.mean(regrets["transfer"]) < 0.5 * np.mean(regrets["bayes"])


def test_prior_runs_are_filtered_by_estimator_space_status_and_fraction(tmp_path):
    path = str(tmp_path / "s.sqlite")
    rng = np.random.default_rng(3)
    X, y, _ = _task(rng, 30)
    # same estimator and space, another strategy: used
    BayesSearchCV(
        Bowl(),
        SPACE,
        n_iter=3,
        n_initial_points=3,
        cv=2,
        store=path,
        random_state=0,
        run_name="bayes",
    ).fit(X, y)
    # another space: not used
    TransferBayesSearchCV(
        Bowl(),
        {"a": Real(1e-2, 1e2, prior="log-uniform"), "b": Real(0.0, 2.0)},
        store=path,
        n_iter=3,
        cv=2,
        random_state=0,
        run_name="other-space",
    ).fit(X, y)
    store = TrialStore(path)
    # unfinished run of the right kind: not used
    bayes = store.run(store.run_id("bayes"))
    unfinished = store.open_run(
        "unfinished",
        strategy="TransferBayesSearchCV",
        estimator_class=bayes["estimator_class"],
        space_signature=bayes["space_signature"],
        meta={"n_samples": 30, "n_features": 4, "n_classes": None},
    )
    trial = store.trials(bayes["id"])[0]
    for _ in range(3):
        store.add_trial(
            unfinished,
            {k: trial[k] for k in TRIAL_FIELDS},
        )
    search = TransferBayesSearchCV(
        Bowl(),
        SPACE,
        store=store,
        n_iter=2,
        cv=2,
        random_state=0,
        run_name="new",
        dataset_name="task-3",
    ).fit(X, y)
    assert [r["name"] for r in search.transfer_runs_] == ["bayes"]
    assert search.transfer_runs_[0]["n_trials"] == 3
    assert list(search.cv_results_["dataset_name"]) == ["task-3", "task-3"]
    # a later search sees the label of this run
    later = TransferBayesSearchCV(
        Bowl(),
        SPACE,
        store=store,
        n_iter=1,
        cv=2,
        random_state=0,
    ).fit(X, y)
    assert [r["dataset_name"] for r in later.transfer_runs_] == [None, "task-3"]


def _negated_score(estimator, X, y):
    return -estimator.score(X, y)


def test_prior_runs_scored_otherwise_are_not_transferred(tmp_path):
    # a run that ranked the settings by another score would steer the first
    # trials towards that score's optimum
    path = str(tmp_path / "s.sqlite")
    X, y, _ = _task(np.random.default_rng(4), 30)
    common = dict(n_iter=3, n_initial_points=3, cv=2, store=path, random_state=0)
    BayesSearchCV(
        Bowl(), SPACE, scoring=_negated_score, run_name="negated", **common
    ).fit(X, y)
    BayesSearchCV(Bowl(), SPACE, run_name="plain", **common).fit(X, y)
    with pytest.warns(UserWarning, match=r"1 of 2 finished runs .* another scoring"):
        search = TransferBayesSearchCV(
            Bowl(), SPACE, store=path, n_iter=2, cv=2, random_state=0
        ).fit(X, y)
    assert [r["name"] for r in search.transfer_runs_] == ["plain"]


def test_neighbours_are_the_nearest_datasets_in_meta_feature_space(tmp_path):
    path = str(tmp_path / "s.sqlite")
    rng = np.random.default_rng(5)
    for n in (20, 400, 60):
        X, y, _ = _task(rng, n)
        TransferBayesSearchCV(
            Bowl(),
            SPACE,
            store=path,
            n_iter=2,
            cv=2,
            random_state=0,
            random_replacement=0.0,
        ).fit(X, y)
    X, y, _ = _task(rng, 50)
    search = KeepState(
        Bowl(), SPACE, store=path, n_iter=2, cv=2, random_state=0, n_neighbors=2
    ).fit(X, y)
    runs = search.transfer_runs_
    np.testing.assert_allclose(search.meta_features_, [np.log(50), np.log(4), 0.0])
    np.testing.assert_allclose(
        [r["distance"] for r in runs], np.abs(np.log([20, 400, 60]) - np.log(50))
    )
    assert [r["neighbor"] for r in runs] == [True, False, True]
    assert [r["n_used"] for r in runs] == [2, 0, 2]
    # the GP holds the neighbours' trials only (oldest first)
    surface = search.kept_surface_
    np.testing.assert_array_equal(surface.X_prior[:, -2], [1, 1, 2, 2])
    assert surface.in_group.all()
    # user-supplied meta-features move the current dataset
    search.set_params(meta_features={"n_samples": 400}, n_iter=1).fit(X, y)
    assert [r["neighbor"] for r in search.transfer_runs_][1]
    search.set_params(meta_features=[np.log(20), np.log(4), 0.0]).fit(X, y)
    assert search.transfer_runs_[0]["distance"] == pytest.approx(0.0)


def test_resume_continues_the_run_without_transferring_from_itself(tmp_path):
    path = str(tmp_path / "s.sqlite")
    X, y, _ = _task(np.random.default_rng(9), 30)
    first = TransferBayesSearchCV(
        Bowl(), SPACE, store=path, n_iter=3, cv=2, random_state=0, run_name="r"
    ).fit(X, y)
    second = TransferBayesSearchCV(
        Bowl(), SPACE, store=path, n_iter=5, cv=2, random_state=0, run_name="r"
    ).fit(X, y)
    assert second.transfer_runs_ == []
    assert second.cv_results_["params"][:3] == first.cv_results_["params"]
    assert len(second.cv_results_["params"]) == 5
    store = TrialStore(path)
    assert len(store.trials(store.run_id("r"))) == 5


def test_prior_runs_are_read_on_the_journal_connection(tmp_path, monkeypatch):
    import skbayes_search.storage as storage

    path = str(tmp_path / "s.sqlite")
    X, y, _ = _task(np.random.default_rng(4), 30)
    TransferBayesSearchCV(Bowl(), SPACE, store=path, n_iter=2, cv=2).fit(X, y)
    gc.collect()  # the first search's store is gone: the second opens its own
    connect = storage.sqlite3.connect
    opened = []

    def counting_connect(*args, **kwargs):
        opened.append(args)
        return connect(*args, **kwargs)

    monkeypatch.setattr(storage.sqlite3, "connect", counting_connect)
    search = TransferBayesSearchCV(
        Bowl(), SPACE, store=path, n_iter=2, cv=2, random_state=0
    ).fit(X, y)
    assert len(search.transfer_runs_) == 1
    # one connection for the journal and the transfer reads
    assert len(opened) == 1


@pytest.mark.parametrize("asynchronous", [False, True])
def test_batches_and_finite_spaces(tmp_path, asynchronous):
    X, y, _ = _task(np.random.default_rng(2), 30)
    space = {"a": Categorical([0.1, 1.0, 10.0]), "b": [0.2, 0.8]}
    search = TransferBayesSearchCV(
        Bowl(),
        space,
        store=str(tmp_path / "s.sqlite"),
        n_iter=10,
        cv=2,
        random_state=0,
        n_jobs=4,
        asynchronous=asynchronous,
    )
    with parallel_backend("threading"), pytest.warns(UserWarning, match="only 6"):
        search.fit(X, y)
    if not asynchronous:
        # 4 workers over 2 folds: two trials per batch
        assert list(search.cv_results_["iter"]) == [0, 0, 1, 1, 2, 2]
    params = search.cv_results_["params"]
    # the space has 6 points: all evaluated once, then the search stops
    assert len(params) == 6
    assert len({(p["a"], p["b"]) for p in params}) == 6


class Counted(RegressorMixin, BaseEstimator):
    n_fits = 0

    def __init__(self, a=1.0, b=0.5):
        self.a = a
        self.b = b

    def fit(self, X, y=None):
        type(self).n_fits += 1
        return self

    def score(self, X, y=None):
        return 0.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(store=None), "needs a store"),
        (dict(kernel_weights=(0.5, 0.6)), "summing to 1"),
        (dict(kernel_weights=(1.2, -0.2)), "non-negative"),
        (dict(kernel_weights=(1.0,)), "two"),
        (dict(n_neighbors=0), "n_neighbors"),
        (dict(n_neighbors=True), "n_neighbors"),
        (dict(max_trials_per_dataset=0), "max_trials_per_dataset"),
        (dict(max_trials_per_dataset=2.5), "max_trials_per_dataset"),
        (dict(random_replacement=1.5), "random_replacement"),
        (dict(random_replacement=-0.1), "random_replacement"),
        (dict(kernel="rbf"), "kernel"),
        (dict(meta_features={"n_rows": 3}), "unknown keys"),
        (dict(meta_features={"n_samples": 0}), "n_samples"),
        (dict(meta_features=[1.0, 2.0]), "three features"),
        (dict(store="MISSING"), "missing"),
    ],
)
def test_bad_input_raises_before_any_fit(tmp_path, kwargs, match):
    params = dict(store=str(tmp_path / "s.sqlite"), n_iter=2, cv=2)
    params.update(kwargs)
    if params["store"] == "MISSING":
        params["store"] = str(tmp_path / "missing" / "s.sqlite")
    Counted.n_fits = 0
    X, y = np.zeros((10, 2)), np.zeros(10)
    with pytest.raises(ValueError, match=match):
        TransferBayesSearchCV(Counted(), SPACE, **params).fit(X, y)
    assert Counted.n_fits == 0


def test_reusing_a_run_name_with_another_space_is_an_error(tmp_path):
    path = str(tmp_path / "s.sqlite")
    X, y = np.zeros((10, 2)), np.zeros(10)
    TransferBayesSearchCV(
        Counted(), SPACE, store=path, run_name="r", n_iter=2, cv=2
    ).fit(X, y)
    Counted.n_fits = 0
    other = {"a": Real(1e-2, 1e2, prior="log-uniform"), "b": Real(0.0, 2.0)}
    with pytest.raises(ValueError, match="space"):
        TransferBayesSearchCV(
            Counted(), other, store=path, run_name="r", n_iter=2, cv=2
        ).fit(X, y)
    assert Counted.n_fits == 0


@pytest.mark.parametrize("space", [{"C": [1.0]}, {}])
def test_a_single_configuration_is_evaluated(space, tmp_path):
    import warnings

    from sklearn.linear_model import LogisticRegression

    X = np.random.default_rng(0).normal(size=(40, 2))
    y = np.arange(40) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search = TransferBayesSearchCV(
            LogisticRegression(),
            space,
            store=str(tmp_path / "runs.db"),
            n_iter=3,
            cv=2,
            random_state=0,
        ).fit(X, y)
    assert search.cv_results_["params"] == [{k: v[0] for k, v in space.items()}]
