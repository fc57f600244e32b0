"""
Resuming a killed search from its store
=======================================

Give a search a :class:`~skbayes_search.TrialStore` (an SQLite file) and a
``run_name``, and every trial is committed the moment it finishes. If the
process dies (a kill, a crash, a pre-empted cloud machine), running the same
search again with the same ``run_name`` reads the finished trials back,
rebuilds the model and continues until the budget is spent, without
evaluating any finished trial again.

Here the "kill" is a small budget: the first session stops after a third of
the trials (as a ``max_time`` or a killed process would stop it), the second
one resumes with the full budget. The store lives in a temporary directory.
"""

import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from skbayes_search import BayesSearchCV, Real, TrialStore

# Examples run with tiny budgets when the docs are built in CI.
TINY = os.environ.get("SKBAYES_EXAMPLE_BUDGET", "normal") == "tiny"
n_iter = 10 if TINY else 30

X, y = load_breast_cancer(return_X_y=True)
workdir = tempfile.mkdtemp()
store = TrialStore(os.path.join(workdir, "trials.sqlite"))


def make_search(n_iter):
    return BayesSearchCV(
        make_pipeline(StandardScaler(), SVC()),
        {
            "svc__C": Real(1e-2, 1e3, prior="log-uniform"),
            "svc__gamma": Real(1e-5, 1e0, prior="log-uniform"),
        },
        n_iter=n_iter,
        cv=5,
        random_state=0,
        store=store,
        run_name="svc-cancer",
    )


# %%
# First session: stopped early (here by its budget; a killed process leaves
# the store in the same state, minus the trials that were still running).
first = make_search(n_iter // 3).fit(X, y)
n_first = len(first.cv_results_["params"])
print(f"first session: {n_first} trials, best {first.best_score_:.4f}")

# %%
# Second session: the same search, the same ``run_name``, the whole budget.
# It reads the first session's trials back and runs only the rest.
second = make_search(n_iter).fit(X, y)
results = second.cv_results_
print(f"after resuming: {len(results['params'])} trials, best {second.best_score_:.4f}")
assert len(results["params"]) == n_iter
print("runs in the store:", [run["name"] for run in store.runs()])

# %%
# The resumed ``cv_results_`` begins with the first session's rows, in the
# order they were proposed. ``elapsed_time`` continues from where the first
# session stopped.
fig, ax = plt.subplots(figsize=(6, 4))
scores = np.asarray(results["mean_test_score"])
trial = np.arange(1, len(scores) + 1)
ax.plot(trial[:n_first], scores[:n_first], "o", label="first session")
ax.plot(trial[n_first:], scores[n_first:], "s", label="after resuming")
ax.step(trial, np.maximum.accumulate(scores), "k-", where="post", label="best so far")
ax.axvline(n_first + 0.5, color="grey", linestyle=":")
ax.set_xlabel("trial")
ax.set_ylabel("mean validation accuracy")
ax.legend(loc="lower right")
plt.show()
