"""
Running a search on a Dask cluster
==================================

Every search evaluates its folds through :mod:`joblib`, so a
``joblib.parallel_backend("dask")`` block sends the fits to a Dask cluster:
nothing in the search changes. The surrogate model runs in the process that
called ``fit``; only the fits travel.

Here the cluster is a :class:`dask.distributed.LocalCluster` with two
workers in this process (``processes=False``), a stand-in for a real
cluster's scheduler address. Dask is an optional extra
(``pip install "skbayes-search[dask]"``): without it this example runs the
same search on the local joblib backend instead and says so.
"""

import os
import time

import joblib
import matplotlib.pyplot as plt
from sklearn.datasets import load_digits
from sklearn.svm import SVC

from skbayes_search import BayesSearchCV, Real
from skbayes_search.plotting import plot_fractions

# Examples run with tiny budgets when the docs are built in CI.
TINY = os.environ.get("SKBAYES_EXAMPLE_BUDGET", "normal") == "tiny"

X, y = load_digits(return_X_y=True)
if TINY:
    X, y = X[:600], y[:600]
search = BayesSearchCV(
    SVC(),
    {
        "C": Real(1e-2, 1e3, prior="log-uniform"),
        "gamma": Real(1e-5, 1e-1, prior="log-uniform"),
    },
    n_iter=6 if TINY else 20,
    cv=4,
    n_jobs=-1,  # as many fits at once as the backend has workers
    random_state=0,
)

try:
    from dask.distributed import Client, LocalCluster
except ImportError:
    Client = None
    print(
        "dask.distributed is not installed (pip install 'skbayes-search[dask]'): "
        "running on the local joblib backend instead."
    )

start = time.perf_counter()
if Client is not None:
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster) as client:
            print("dask workers:", len(client.scheduler_info()["workers"]))
            with joblib.parallel_backend("dask"):
                search.fit(X, y)
    where = "on a 2-worker Dask LocalCluster"
else:
    with joblib.parallel_backend("loky", n_jobs=2):
        search.fit(X, y)
    where = "locally (dask not installed)"
print(f"{where}: {time.perf_counter() - start:.1f} s, best {search.best_score_:.4f}")

# %%
# When each trial finished and how well it scored. The trials come in
# batches: with two workers and four folds, one trial's folds keep both busy.
fig, ax = plt.subplots(figsize=(6, 4))
plot_fractions(search, ax=ax)
ax.set_title(f"BayesSearchCV {where}")
plt.show()
