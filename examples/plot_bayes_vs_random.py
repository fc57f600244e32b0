"""
BayesSearchCV against RandomizedSearchCV
========================================

Tune the regularisation of a logistic regression on the digits data and compare
the best cross-validated score found after each trial by Bayesian optimisation
and by random search.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import loguniform
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RandomizedSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skbayes_search import BayesSearchCV, Real

X, y = load_digits(return_X_y=True)
model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=300))
n_iter = 15

bayes = BayesSearchCV(
    model,
    {"logisticregression__C": Real(1e-4, 1e2, prior="log-uniform")},
    n_iter=n_iter,
    cv=3,
    random_state=0,
).fit(X, y)
random = RandomizedSearchCV(
    model,
    {"logisticregression__C": loguniform(1e-4, 1e2)},
    n_iter=n_iter,
    cv=3,
    random_state=0,
).fit(X, y)

for name, search in [("BayesSearchCV", bayes), ("RandomizedSearchCV", random)]:
    best_so_far = np.maximum.accumulate(search.cv_results_["mean_test_score"])
    plt.plot(np.arange(1, n_iter + 1), best_so_far, marker="o", label=name)
plt.xlabel("trial")
plt.ylabel("best mean CV accuracy so far")
plt.legend()
plt.show()
