"""The store cost of :mod:`benchmarks.studies.transfer_stream`: seconds per
transfer iteration with ``N`` finished prior runs in the store."""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd

from skbayes_search import TransferBayesSearchCV, TrialStore
from skbayes_search.storage import TRIAL_FIELDS

from ._transfer_models import LOGREG, StreamModel

COST_SIZES = (10, 20, 40, 80)


def measure_cost(source_store, work_dir, sizes, seed=0, model: StreamModel = LOGREG):
    """Per-iteration strategy cost with ``N`` prior runs in the store, all of
    them runs of ``model`` (the probe tunes it too, so that they are its prior
    runs)."""
    src = TrialStore(source_store)
    runs = [r for r in src.runs(finished=True)]
    rng = np.random.default_rng(seed)
    X, y = load_small_task(seed)
    rows = []
    for n in sizes:
        path = os.path.join(work_dir, f"cost-{n}.sqlite")
        if os.path.exists(path):
            # a rerun measures afresh, not on top of the last run's copies
            os.remove(path)
        store = TrialStore(path)
        n_trials = 0
        for i in range(n):
            run = runs[i % len(runs)]
            meta = dict(run["meta"] or {})
            if i >= len(runs):
                # jitter the copies' meta-features so neighbour ranks differ
                meta["n_samples"] = int(meta["n_samples"] * rng.uniform(0.8, 1.2))
            rid = store.open_run(
                f"copy-{i}",
                strategy=run["strategy"],
                estimator_class=run["estimator_class"],
                space_signature=run["space_signature"],
                meta=meta,
            )
            for trial in src.trials(run["id"]):
                n_trials += 1
                store.add_trial(
                    rid,
                    {k: trial[k] for k in TRIAL_FIELDS},
                )
            store.finish_run(rid)
        for kernel in ("sqe", "mkl"):
            n_iter = 5
            search = TransferBayesSearchCV(
                model.make(),
                model.space,
                store=store,
                kernel=kernel,
                run_name=f"probe-{kernel}",
                n_iter=n_iter,
                cv=3,
                refit=False,
                n_jobs=1,
                random_state=seed,
            )
            start = time.perf_counter()
            search.fit(X, y)
            wall = time.perf_counter() - start
            res = search.cv_results_
            cv_time = float(np.sum(res["mean_fit_time"] + res["mean_score_time"])) * 3
            rows.append(
                {
                    "n_prior_runs": n,
                    "n_prior_trials": n_trials,
                    "kernel": kernel,
                    "per_iteration_s": (wall - cv_time) / n_iter,
                }
            )
            print(
                f"cost N={n} {kernel}: {rows[-1]['per_iteration_s']:.3f} s", flush=True
            )
        store.close()
    src.close()
    return pd.DataFrame(rows)


def load_small_task(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(150, 5))
    y = (X[:, 0] + rng.normal(scale=0.5, size=150) > 0).astype(int)
    return X, y
