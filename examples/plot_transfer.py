"""
TransferBayesSearchCV: warm-starting from earlier datasets
==========================================================

When the same model is tuned on dataset after dataset,
:class:`~skbayes_search.TransferBayesSearchCV` (Yogatama and Mann 2014) reads
the earlier runs from a :class:`~skbayes_search.TrialStore` and fits one
Gaussian process over all of them, after standardising each dataset's scores.
Its first trials then start where good settings were on similar datasets.

The stream here: an RBF SVM tuned on four datasets that ship with
scikit-learn (breast cancer, wine, iris, digits), then on a sample of the
MAGIC telescope data that ship with this package, compared with a
:class:`~skbayes_search.BayesSearchCV` that starts from nothing.
"""

import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from skbayes_search import BayesSearchCV, Real, TransferBayesSearchCV, TrialStore
from skbayes_search.datasets import load_magic
from skbayes_search.plotting import plot_convergence

# Examples run with tiny budgets when the docs are built in CI.
TINY = os.environ.get("SKBAYES_EXAMPLE_BUDGET", "normal") == "tiny"
n_iter = 5 if TINY else 10

model = make_pipeline(StandardScaler(), SVC())
space = {
    "svc__C": Real(1e-2, 1e3, prior="log-uniform"),
    "svc__gamma": Real(1e-4, 1e1, prior="log-uniform"),
}
store = TrialStore(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))

# %%
# The earlier datasets: each search leaves its run in the store.
loaders = [load_breast_cancer, load_wine, load_iris, load_digits]
for load in loaders[:2] if TINY else loaders:
    X, y = load(return_X_y=True)
    X, y = X[:600], y[:600]
    TransferBayesSearchCV(
        model,
        space,
        store=store,
        dataset_name=load.__name__[5:],
        n_iter=n_iter,
        cv=3,
        random_state=0,
    ).fit(X, y)
print("runs in the store:", len(store.runs(finished=True)))

# %%
# The new dataset: transfer against a search that starts from nothing.
X, y = load_magic()
rows = np.random.default_rng(0).permutation(len(y))[:800]  # sorted by class
X, y = X[rows], y[rows]
transfer = TransferBayesSearchCV(
    model,
    space,
    store=store,
    dataset_name="magic",
    n_iter=n_iter,
    cv=3,
    random_state=0,
).fit(X, y)
scratch = BayesSearchCV(
    model, space, n_iter=n_iter, n_initial_points=3, cv=3, random_state=0
).fit(X, y)
for run in transfer.transfer_runs_:
    print(
        f"{run['dataset_name']:>14}: distance {run['distance']:.2f}, "
        f"{run['n_trials']} trials"
    )

# %%
# Best score so far on the new dataset, trial by trial.
fig, ax = plt.subplots(figsize=(6, 4))
plot_convergence(
    [transfer, scratch],
    x="trial",
    labels=[
        "TransferBayesSearchCV (4 prior runs)"
        if not TINY
        else "TransferBayesSearchCV (2 prior runs)",
        "BayesSearchCV",
    ],
    ax=ax,
)
ax.set_title("MAGIC sample, after tuning on other datasets")
plt.show()
