"""
MultiStageBayesSearchCV: cheap stages first
===========================================

:class:`~skbayes_search.MultiStageBayesSearchCV` runs Bayesian optimisation
first on a subset of each split's training rows, then hands its best
configurations on to a stage on all rows. Here an RBF SVM on the MAGIC
telescope data that ship with the package (4,000 rows sampled at random):
the first stage fits on 20 % of the rows, where an SVM trains more than five
times faster.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from skbayes_search import BayesSearchCV, MultiStageBayesSearchCV, Real
from skbayes_search.datasets import load_magic
from skbayes_search.plotting import plot_convergence, plot_fractions

# Examples run with tiny budgets when the docs are built in CI.
TINY = os.environ.get("SKBAYES_EXAMPLE_BUDGET", "normal") == "tiny"
n_rows = 1500 if TINY else 4000

X, y = load_magic()
# the file is sorted by class: take a random sample of rows
rows = np.random.default_rng(0).permutation(len(y))[:n_rows]
X, y = X[rows], y[rows]
model = make_pipeline(StandardScaler(), SVC())
space = {
    "svc__C": Real(1e-2, 1e2, prior="log-uniform"),
    "svc__gamma": Real(1e-4, 1e1, prior="log-uniform"),
}
stage_iter = (8, 4) if TINY else (14, 6)

multistage = MultiStageBayesSearchCV(
    model,
    space,
    stages=(0.2, 1.0),
    n_iter=stage_iter,
    top_k=3,
    cv=3,
    n_jobs=2,
    random_state=0,
).fit(X, y)
bayes = BayesSearchCV(
    model, space, n_iter=sum(stage_iter), cv=3, n_jobs=2, random_state=0
).fit(X, y)

print(f"multi-stage: {multistage.best_score_:.4f} {multistage.best_params_}")
print(f"bayes:       {bayes.best_score_:.4f} {bayes.best_params_}")
print("best per stage:", multistage.stage_best_params_)

# %%
# Left: the best *full-data* score so far against wall-clock time (the
# multi-stage search has none until its second stage starts). Right: where
# the multi-stage search spent its trials.
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
plot_convergence([multistage, bayes], full_data_only=True, ax=left)
plot_fractions(multistage, ax=right)
right.set_title("training fraction of each trial")
plt.show()
