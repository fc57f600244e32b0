"""Every strategy on a dask cluster through joblib's dask backend."""

import os
import warnings

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.datasets import make_regression

from tests.test_loop import (
    STRATEGIES,
    _strategy,
    check_fits_no_backend_can_stop_hold_their_workers,
)

distributed = pytest.importorskip("distributed")

X, Y = make_regression(n_samples=400, n_features=3, random_state=0)


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.mark.parametrize("name", STRATEGIES)
def test_every_strategy_runs_on_a_dask_cluster(name, client, tmp_path):
    search = _strategy(name, tmp_path)
    with parallel_backend("dask"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X, Y)
    res = search.cv_results_
    assert len(res["params"]) >= 4
    assert np.isfinite(res["mean_test_score"]).all()
    assert search.best_params_ in res["params"]


class DiesOnce(RegressorMixin, BaseEstimator):
    """The first fit (flagged by a file) ends its worker process."""

    def __init__(self, a=1.0, flag=None):
        self.a = a
        self.flag = flag

    def fit(self, X, y=None):
        if self.flag is not None and not os.path.exists(self.flag):
            open(self.flag, "w").close()
            os._exit(1)
        return self

    def score(self, X, y=None):
        return -((self.a - 1.0) ** 2)


def test_a_worker_killed_mid_search_loses_nothing_finished(tmp_path):
    from skbayes_search import BayesSearchCV, Real, TrialStore

    store = tmp_path / "s.sqlite"
    search = BayesSearchCV(
        DiesOnce(flag=str(tmp_path / "died")),
        {"a": Real(0.0, 2.0)},
        n_iter=6,
        n_initial_points=3,
        hyperparameter_sampling="map",
        cv=2,
        n_jobs=2,
        store=store,
        run_name="run",
        random_state=0,
    )
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster),
        parallel_backend("dask"),
    ):
        search.fit(X, Y)
    assert (tmp_path / "died").exists()  # a worker did die under a fit
    res = search.cv_results_
    assert len(res["params"]) == 6
    assert np.isfinite(res["mean_test_score"]).all()
    stored = TrialStore(store)
    assert len(stored.trials(stored.run_id("run"))) == 6


def test_fits_dask_cannot_stop_hold_their_workers(client):
    # a cancelled Dask future whose task runs does not stop it
    with parallel_backend("dask"):
        check_fits_no_backend_can_stop_hold_their_workers()
