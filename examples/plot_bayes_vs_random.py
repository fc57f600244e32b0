"""
BayesSearchCV against RandomizedSearchCV
========================================

Tune the regularisation of a logistic regression on the digits data and compare
the best cross-validated score found after each trial by Bayesian optimisation
and by random search, then look at what the Gaussian process learnt with
:func:`~skbayes_search.plotting.plot_objective`.
"""

import os

import matplotlib.pyplot as plt
from scipy.stats import loguniform
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RandomizedSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skbayes_search import BayesSearchCV
from skbayes_search.plotting import plot_convergence, plot_objective

# Examples run with tiny budgets when the docs are built in CI.
TINY = os.environ.get("SKBAYES_EXAMPLE_BUDGET", "normal") == "tiny"
n_iter = 6 if TINY else 15

X, y = load_digits(return_X_y=True)
if TINY:
    X, y = X[:600], y[:600]
model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
# One RandomizedSearchCV-style space serves both searches: scipy.stats
# distributions are valid search spaces for BayesSearchCV.
space = {
    "logisticregression__C": loguniform(1e-4, 1e2),
    "logisticregression__tol": loguniform(1e-5, 1e-1),
}

bayes = BayesSearchCV(model, space, n_iter=n_iter, cv=3, random_state=0).fit(X, y)
random = RandomizedSearchCV(model, space, n_iter=n_iter, cv=3, random_state=0).fit(X, y)
print(f"Bayes:  {bayes.best_score_:.4f} {bayes.best_params_}")
print(f"random: {random.best_score_:.4f} {random.best_params_}")

# %%
# Best score so far, trial by trial.
fig, ax = plt.subplots(figsize=(6, 4))
plot_convergence([bayes, random], x="trial", ax=ax)
ax.set_title("Digits, logistic regression")

# %%
# The partial dependence of the modelled score on each parameter (diagonal)
# and on the pair (contour), from a GP refitted on the Bayesian search's
# trials. The dots are the trials, the star the best one.
plot_objective(bayes, n_samples=50, n_points=20)
plt.show()
