"""
FabolasSearchCV: the training-set size as a model input
=======================================================

:class:`~skbayes_search.FabolasSearchCV` (Klein et al. 2017) models the
validation error and the fit time over the configuration *and* the fraction of
the training rows, and picks each next trial to learn the most about the best
configuration on all data per second of predicted cost. Most of its trials run
on small subsets; the incumbent is evaluated once on all rows at the end.

An RBF SVM on the MAGIC telescope data shipped with the package.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from skbayes_search import FabolasSearchCV, Real
from skbayes_search.datasets import load_magic
from skbayes_search.plotting import plot_fractions

# Examples run with tiny budgets when the docs are built in CI.
TINY = os.environ.get("SKBAYES_EXAMPLE_BUDGET", "normal") == "tiny"

X, y = load_magic()
# the file is sorted by class: take a random sample of rows
rows = np.random.default_rng(0).permutation(len(y))[: 3000 if TINY else 12000]
X, y = X[rows], y[rows]
search = FabolasSearchCV(
    make_pipeline(StandardScaler(), SVC()),
    {
        "svc__C": Real(1e-2, 1e3, prior="log-uniform"),
        "svc__gamma": Real(1e-4, 1e1, prior="log-uniform"),
    },
    n_iter=14 if TINY else 40,
    max_time=None if TINY else 40,
    n_initial_points=6 if TINY else 10,
    n_representers=20 if TINY else 50,
    n_hyper_samples=3 if TINY else 10,
    cv=3,
    n_jobs=2,
    random_state=0,
).fit(X, y)

print(f"best on all data: {search.best_score_:.4f} {search.best_params_}")
print("trials:", len(search.cv_results_["params"]))

# %%
# Left: the training fraction of every trial against the time it finished,
# coloured by its validation score; the last point, on all rows, is the final
# evaluation of the incumbent. Right: the incumbent's score after every
# finished trial and model fit (``incumbent_trajectory_``): measured on a
# subset until a model exists, then the model's prediction for all data.
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
plot_fractions(search, ax=left)
times = [t for t, _, _ in search.incumbent_trajectory_]
predicted = [score for _, _, score in search.incumbent_trajectory_]
right.step(times, predicted, where="post", marker="o", markersize=3)
right.axhline(
    search.best_score_, color="r", linestyle="--", label="measured at the end"
)
right.set_xlabel("wall-clock seconds")
right.set_ylabel("incumbent's score (measured, then predicted)")
right.legend()
plt.show()
