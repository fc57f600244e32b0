"""
BayesSearchCV in place of GridSearchCV in a pipeline
====================================================

A :class:`~sklearn.model_selection.GridSearchCV` over a
:class:`~sklearn.pipeline.Pipeline` with a
:class:`~sklearn.compose.ColumnTransformer` becomes a
:class:`~skbayes_search.BayesSearchCV` by changing one line: the grid is a
valid search space as it is, and ranges let the search go between the grid
points.

The data are scikit-learn's bundled breast-cancer measurements (569 rows, 30
numeric columns) as a :class:`pandas.DataFrame`. To make the table mixed-type,
we add a categorical column derived from the data themselves: ``size``, the
tercile ("small", "medium", "large") of the ``mean radius`` column. Nothing is
downloaded.
"""

import os

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skbayes_search import BayesSearchCV, Real
from skbayes_search.plotting import plot_convergence

# Examples run with tiny budgets when the docs are built in CI.
TINY = os.environ.get("SKBAYES_EXAMPLE_BUDGET", "normal") == "tiny"

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
X["size"] = pd.qcut(X["mean radius"], 3, labels=["small", "medium", "large"])
X["size"] = X["size"].astype(str)
numeric = [c for c in X.columns if c != "size"]

model = Pipeline(
    [
        (
            "prepare",
            ColumnTransformer(
                [
                    ("num", StandardScaler(), numeric),
                    ("cat", OneHotEncoder(handle_unknown="ignore"), ["size"]),
                ]
            ),
        ),
        ("clf", LogisticRegression(max_iter=2000)),
    ]
)

# %%
# The grid search we had
# ----------------------
grid = {
    "clf__C": [0.001, 0.01, 0.1, 1, 10, 100],
    "clf__class_weight": [None, "balanced"],
}
if TINY:
    grid["clf__C"] = [0.01, 1, 100]
grid_search = GridSearchCV(model, grid, cv=5).fit(X, y)
print("grid:", grid_search.best_params_, round(grid_search.best_score_, 4))

# %%
# The same search, Bayesian
# -------------------------
# The same dictionary works (lists become categoricals); a log-uniform range
# for ``C`` lets the search try values between the grid points. We give it as
# many trials as the grid had points.
bayes = BayesSearchCV(
    model,
    {
        "clf__C": Real(1e-3, 1e2, prior="log-uniform"),
        "clf__class_weight": [None, "balanced"],
    },
    n_iter=len(grid_search.cv_results_["params"]),
    n_initial_points=4,
    cv=5,
    random_state=0,
).fit(X, y)
print("bayes:", bayes.best_params_, round(bayes.best_score_, 4))

# %%
# ``cv_results_`` has scikit-learn's keys plus a few of ours, and loads into a
# DataFrame; ``elapsed_time`` is when each trial finished.
columns = ["param_clf__C", "param_clf__class_weight", "mean_test_score"]
print(pd.DataFrame(bayes.cv_results_)[[*columns, "elapsed_time"]].head())

# %%
# Best score so far against the trial number. (Against wall time the grid
# search's times would be approximated from its fit and score times: it does
# not record when each candidate finished.)
fig, ax = plt.subplots(figsize=(6, 4))
plot_convergence(
    [grid_search, bayes], x="trial", labels=["GridSearchCV", "BayesSearchCV"], ax=ax
)
ax.set_title("Breast cancer with a derived categorical column")
plt.show()
