"""
TradeoffBayesSearchCV: accuracy against training time
=====================================================

:class:`~skbayes_search.TradeoffBayesSearchCV` looks for a model that scores
well *and* trains fast: every trial is a configuration and a share of the
training rows, scored by ``score - alpha * normalised training time``. The
chosen model is refitted on its own share.

Gradient boosting on 5,000 rows (sampled at random; the file is sorted by
class) of the MAGIC telescope data that ship with
the package.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

from skbayes_search import Integer, Real, TradeoffBayesSearchCV
from skbayes_search.analysis import tradeoff_curve
from skbayes_search.datasets import load_magic
from skbayes_search.plotting import plot_tradeoff

# Examples run with tiny budgets when the docs are built in CI.
TINY = os.environ.get("SKBAYES_EXAMPLE_BUDGET", "normal") == "tiny"

X, y = load_magic()
rows = np.random.default_rng(0).permutation(len(y))[: 2000 if TINY else 5000]
X, y = X[rows], y[rows]
search = TradeoffBayesSearchCV(
    HistGradientBoostingClassifier(early_stopping=False),
    {
        "max_iter": Integer(10, 30 if TINY else 200),
        "learning_rate": Real(0.02, 0.5, prior="log-uniform"),
        "max_leaf_nodes": Integer(4, 31),
    },
    alpha=0.05,
    n_iter=6 if TINY else 20,
    cv=3,
    n_jobs=2,
    random_state=0,
).fit(X, y)

best = search.best_index_
results = search.cv_results_
print(
    f"chosen: {search.best_params_}, fraction {search.best_train_fraction_}, "
    f"score {search.best_score_:.4f}, "
    f"training time {results['mean_train_time'][best]:.2f} s"
)
print("Pareto front rows:", search.pareto_front_.tolist())

# %%
# Left: every trial's score against its training time, the Pareto front in
# red. Right: which trial the rule would pick for other values of ``alpha``,
# read from the same trials (no new fits).
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
plot_tradeoff(search, ax=left)
left.scatter(
    results["mean_fit_time"][best],
    results["mean_test_score"][best],
    s=150,
    facecolors="none",
    edgecolors="k",
    label=f"chosen at alpha={search.alpha}",
)
left.legend()
alphas = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5]
rows = tradeoff_curve(search, alphas)
right.plot(alphas, results["mean_test_score"][rows], "o-", label="validation score")
right.set_xscale("symlog", linthresh=0.01)
right.set_xlabel("alpha")
right.set_ylabel("score of the selected trial")
twin = right.twinx()
twin.plot(alphas, results["mean_train_time"][rows], "s--", color="C1")
twin.set_ylabel("its training time (s)", color="C1")
right.set_title("the selected trial for each alpha")
plt.show()
