"""
Tuning gradient boosting on mixed-type data
===========================================

:class:`~sklearn.ensemble.HistGradientBoostingClassifier` handles categorical
columns natively, and has more hyperparameters than a grid can cover: five
here, two of them on a log scale. A grid of three values each would be 243
fits per split; :class:`~skbayes_search.BayesSearchCV` gets a good setting in
25 trials.

The data are scikit-learn's bundled wine recognition data (178 rows, 13
numeric columns, 3 classes) as a DataFrame, with one added
categorical column derived from the data: ``hue_band``, the quartile of the
``hue`` column ("q1" to "q4"). Nothing is downloaded.
"""

import os

import matplotlib.pyplot as plt
import pandas as pd
from scipy.stats import loguniform, randint
from sklearn.datasets import load_wine
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import RandomizedSearchCV

from skbayes_search import BayesSearchCV, Integer, Real
from skbayes_search.plotting import plot_convergence, plot_objective

# Examples run with tiny budgets when the docs are built in CI.
TINY = os.environ.get("SKBAYES_EXAMPLE_BUDGET", "normal") == "tiny"
n_iter = 5 if TINY else 25

X, y = load_wine(return_X_y=True, as_frame=True)
X["hue_band"] = pd.qcut(X["hue"], 4, labels=["q1", "q2", "q3", "q4"])
X = X.drop(columns="hue")  # the band replaces the column it came from
print(X.dtypes.value_counts())

model = HistGradientBoostingClassifier(
    categorical_features="from_dtype", early_stopping=False, random_state=0
)
space = {
    "learning_rate": Real(0.01, 1.0, prior="log-uniform"),
    "max_iter": Integer(10, 20 if TINY else 150),
    "max_leaf_nodes": Integer(2, 31),
    "min_samples_leaf": Integer(2, 40),
    "l2_regularization": Real(1e-4, 10.0, prior="log-uniform"),
}
bayes = BayesSearchCV(model, space, n_iter=n_iter, cv=3, n_jobs=2, random_state=0).fit(
    X, y
)
# the same space for RandomizedSearchCV, as scipy.stats distributions
random_space = {
    "learning_rate": loguniform(0.01, 1.0),
    "max_iter": randint(10, (20 if TINY else 150) + 1),
    "max_leaf_nodes": randint(2, 32),
    "min_samples_leaf": randint(2, 41),
    "l2_regularization": loguniform(1e-4, 10.0),
}
random = RandomizedSearchCV(
    model, random_space, n_iter=n_iter, cv=3, n_jobs=2, random_state=0
).fit(X, y)
print(f"Bayes:  {bayes.best_score_:.4f}")
print(f"random: {random.best_score_:.4f}")

# %%
# Best score so far against wall-clock time. Random search records no finish
# times, so its times are approximated from its fits' durations (marked in
# the legend).
fig, ax = plt.subplots(figsize=(6, 4))
plot_convergence([bayes, random], ax=ax)

# %%
# What the model learnt: the partial dependence of the score on three of the
# parameters and their pairs (a GP refitted on the Bayesian search's trials,
# averaged over the other two).
plot_objective(
    bayes,
    dimensions=["learning_rate", "max_leaf_nodes", "l2_regularization"],
    n_samples=30 if TINY else 60,
    n_points=12 if TINY else 20,
)
plt.show()
