"""Yogatama & Mann's dataset-stream protocol at small scale (issue 6, paper 002).

Usage, from the repository root::

    python -m benchmarks.studies.transfer_stream --data-dir ../shared/datasets \\
        --out benchmarks/results/2026-11-22-transfer-stream [--orders N]

Protocol
--------
Estimator: ``make_pipeline(StandardScaler(), LogisticRegression(solver="saga"))``
with the elastic net's four hyperparameters (the paper's: the l1 and l2
penalties, as ``C`` and ``l1_ratio``, the convergence threshold and the
iteration cap)::

    C         Real(1e-3, 1e2, log-uniform)
    l1_ratio  Real(0, 1)
    tol       Real(1e-5, 1e-1, log-uniform)
    max_iter  Integer(2, 200)

Datasets: every classification data set of ``--sources`` (default: adult,
letter, magic, shuttle, pendigits, credit_default, connect_4, covertype_75k)
as a random sample of ``--n-rows`` rows, plus ``--copies`` perturbed copies of
each (the paper's synthetic data sets: a random 60-90 % of the rows and a
random 50-90 % of the features kept). All draws use one fixed seed, so every
method and order sees the same data. Classes with fewer than 3 members are
dropped (3-fold stratification).

For each order ``o`` (0 .. ``--orders`` - 1) the data sets are shuffled with
seed ``100 + o`` and, on each one in turn, these searches run with
``n_iter=10``, ``cv=3``, ``refit=False``, ``n_jobs=1`` and
``random_state=1000 o + position`` (the same for every method on a data set;
one seed for the whole stream, ``--same-seed``, would draw the same random
values on every data set):

``random``  sklearn's ``RandomizedSearchCV`` over the same box;
``bayes``   ``BayesSearchCV`` (independent GP-EI-MCMC, paper 004);
``indep``   ``TransferBayesSearchCV(kernel="sqe")`` with an empty store of its
            own: the transfer search's GP, first-trial and replacement rules
            without prior data (the paper's "independent GP");
``sqe``     ``TransferBayesSearchCV(kernel="sqe")`` on one store per order,
            holding the runs of all data sets earlier in the order;
``mkl``     the same with ``kernel="mkl"`` and its own store.

Every method gets the same data sets, orders, seeds and budget. The metric is
the paper's: for each data set and ``k = 1..10`` the methods are ranked by the
best mean CV accuracy among their first ``k`` trials (1 = best, ties share the
mean rank); ranks are averaged over ``k``, data sets and orders (and reported
per order and per ``k``).

Store cost: a store is filled with ``N`` = 10, 20, 40, 80 finished prior runs
(copies of the ``mkl`` runs of order 0 with their meta-features jittered, so
their content is real) and a ``TransferBayesSearchCV`` of each kernel runs 5
trials of a cheap model on a small task against it; the per-iteration cost is
its wall time minus the time spent fitting and scoring, divided by the trials.

Everything runs under ``threadpoolctl.threadpool_limits(1)``. Outputs in
``--out``: ``results.csv`` (one row per search and trial: method, order,
position, data set, trial, score, best so far, parameters), ``cost.csv`` and
``summary.md`` (tables, command, date, load averages).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
import tempfile
import time
import warnings

import numpy as np
import pandas as pd
from scipy.stats import loguniform, randint, rankdata, uniform
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RandomizedSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from skbayes_search import (
    BayesSearchCV,
    Integer,
    Real,
    TransferBayesSearchCV,
    TrialStore,
)
from skbayes_search.storage import TRIAL_FIELDS

METHODS = ("random", "bayes", "indep", "sqe", "mkl")
SOURCES = (
    "adult",
    "letter",
    "magic",
    "shuttle",
    "pendigits",
    "credit_default",
    "connect_4",
    "covertype_75k",
)
P = "logisticregression__"
SPACE = {
    P + "C": Real(1e-3, 1e2, prior="log-uniform"),
    P + "l1_ratio": Real(0.0, 1.0),
    P + "tol": Real(1e-5, 1e-1, prior="log-uniform"),
    P + "max_iter": Integer(2, 200),
}
DISTRIBUTIONS = {
    P + "C": loguniform(1e-3, 1e2),
    P + "l1_ratio": uniform(0.0, 1.0),
    P + "tol": loguniform(1e-5, 1e-1),
    P + "max_iter": randint(2, 201),
}
COST_SIZES = (10, 20, 40, 80)


def make_model():
    return make_pipeline(StandardScaler(), LogisticRegression(solver="saga"))


def load_datasets(data_dir, sources, n_rows, n_copies, seed=0):
    """Row samples of the sources and their perturbed copies, fixed by ``seed``."""
    rng = np.random.default_rng(seed)
    out = []
    for name in sources:
        df = pd.read_csv(os.path.join(data_dir, f"{name}.tsv.gz"), sep="\t")
        y_all = df.pop("target").to_numpy()
        X_all = df.to_numpy(dtype=float)
        idx = rng.choice(len(X_all), size=min(n_rows, len(X_all)), replace=False)
        X, y = X_all[idx], y_all[idx]
        out.append((name, X, y))
        for c in range(n_copies):
            rows = rng.random(len(X)) < rng.uniform(0.6, 0.9)
            cols = rng.random(X.shape[1]) < rng.uniform(0.5, 0.9)
            cols[rng.integers(X.shape[1])] = True
            out.append((f"{name}~{c}", X[rows][:, cols], y[rows]))
    clean = []
    for name, X, y in out:
        values, counts = np.unique(y, return_counts=True)
        keep = np.isin(y, values[counts >= 3])
        clean.append((name, X[keep], y[keep]))
    return clean


def run_search(method, X, y, *, store, name, seed, n_iter, cv):
    common = dict(n_iter=n_iter, cv=cv, refit=False, n_jobs=1, random_state=seed)
    if method == "random":
        search = RandomizedSearchCV(make_model(), DISTRIBUTIONS, **common)
    elif method == "bayes":
        search = BayesSearchCV(make_model(), SPACE, **common)
    else:
        kernel = "mkl" if method == "mkl" else "sqe"
        search = TransferBayesSearchCV(
            make_model(), SPACE, store=store, kernel=kernel, dataset_name=name, **common
        )
    search.fit(X, y)
    return search


def trial_rows(search, method, order, position, name, n_iter):
    res = search.cv_results_
    scores = np.nan_to_num(np.asarray(res["mean_test_score"], float), nan=0.0)
    rows = []
    best = -np.inf
    for t in range(n_iter):
        # a search that stopped early keeps its best
        if t < len(scores):
            best = max(best, scores[t])
            params = {k: res["param_" + k][t] for k in SPACE}
            score = scores[t]
        else:
            params, score = {}, np.nan
        rows.append(
            {
                "method": method,
                "order": order,
                "position": position,
                "dataset": name,
                "trial": t + 1,
                "score": score,
                "best_so_far": best,
                **{k[len(P) :]: params.get(k, np.nan) for k in SPACE},
            }
        )
    return rows


def rank_table(df, n_iter):
    """Ranks per (order, data set, k) of every method's best-so-far score."""
    piv = df.pivot_table(
        index=["order", "dataset", "trial"], columns="method", values="best_so_far"
    )
    methods = [m for m in METHODS if m in piv.columns]
    ranks = piv[methods].apply(lambda r: pd.Series(rankdata(-r.to_numpy()), methods), 1)
    return ranks.reset_index()


def measure_cost(source_store, work_dir, sizes, seed=0):
    """Per-iteration strategy cost with ``N`` prior runs in the store."""
    src = TrialStore(source_store)
    runs = [r for r in src.runs(finished=True)]
    rng = np.random.default_rng(seed)
    X, y = load_small_task(seed)
    rows = []
    for n in sizes:
        path = os.path.join(work_dir, f"cost-{n}.sqlite")
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
                make_model(),
                SPACE,
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


def write_summary(out, df, ranks, cost, args, elapsed, n_data):
    n_iter = args.n_iter
    methods = [m for m in METHODS if m in ranks.columns]
    lines = [
        "# Transfer stream benchmark (paper 002 protocol, small scale)",
        "",
        f"- command: `{' '.join(shlex.quote(a) for a in sys.argv)}`",
        f"- date (UTC): {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}",
        f"- machine: {os.cpu_count()} cores, {platform.python_version()}, "
        f"load averages at the end {os.getloadavg()[0]:.2f} (1 min), "
        f"{os.getloadavg()[2]:.2f} (15 min); all single-threaded, nice 19",
        f"- {n_data} data sets ({len(args.sources)} sources x (1 + {args.copies} "
        f"perturbed copies), {args.n_rows}-row samples), {args.orders} orders, "
        f"n_iter={n_iter}, cv={args.cv}; wall time {elapsed / 60:.1f} min",
        "- seeds: "
        + (
            "random_state=order on every data set (--same-seed)"
            if args.same_seed
            else "random_state=1000 * order + position, the same for every method"
        ),
        "",
        f"## Mean rank over the first {n_iter} trials (1 = best of {len(methods)})",
        "",
        "| method | mean rank | sd over orders | per order |",
        "|---|---|---|---|",
    ]
    for m in methods:
        per_order = ranks.groupby("order")[m].mean()
        lines.append(
            f"| {m} | {ranks[m].mean():.2f} | {per_order.std(ddof=1):.2f} | "
            + ", ".join(f"{v:.2f}" for v in per_order)
            + " |"
        )
    ks = [k for k in (1, 2, 3, 5, 10) if k <= n_iter]
    lines += [
        "",
        "## Mean rank by number of trials k",
        "",
        "| method | " + " | ".join(f"k={k}" for k in ks) + " |",
        "|---|" + "---|" * len(ks),
    ]
    for m in methods:
        by_k = ranks.groupby("trial")[m].mean()
        lines.append(f"| {m} | " + " | ".join(f"{by_k[k]:.2f}" for k in ks) + " |")
    best = df[df.trial == n_iter].groupby("method")["best_so_far"].mean()
    lines += [
        "",
        f"Mean best CV accuracy after {n_iter} trials: "
        + ", ".join(f"{m} {best[m]:.4f}" for m in methods if m in best),
        "",
    ]
    if cost is not None and len(cost):
        piv = cost.pivot(
            index=["n_prior_runs", "n_prior_trials"],
            columns="kernel",
            values="per_iteration_s",
        )
        lines += [
            "## Per-iteration cost of the transfer search vs prior runs in the store",
            "",
            "Wall time of a 5-trial search minus its fit/score time, per trial "
            "(store read, response surface, GP fit, acquisition).",
            "",
            "| prior runs | prior trials | sqe (s) | mkl (s) |",
            "|---|---|---|---|",
        ]
        for (n, n_trials), row in piv.iterrows():
            lines.append(f"| {n} | {n_trials} | {row['sqe']:.3f} | {row['mkl']:.3f} |")
        lines.append("")
    with open(os.path.join(out, "summary.md"), "w") as fh:
        fh.write("\n".join(lines))
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.studies.transfer_stream",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--data-dir", default="../shared/datasets")
    parser.add_argument("--orders", type=int, default=3)
    parser.add_argument("--out", required=True)
    parser.add_argument("--sources", nargs="+", default=list(SOURCES))
    parser.add_argument("--n-rows", type=int, default=800)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--n-iter", type=int, default=10)
    parser.add_argument("--cv", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--no-cost", action="store_true", help="skip the store cost")
    parser.add_argument(
        "--same-seed",
        action="store_true",
        help="random_state=order on every data set (one seed for the stream)",
    )
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", UserWarning)
    data = load_datasets(args.data_dir, args.sources, args.n_rows, args.copies)
    print(f"{len(data)} data sets, {args.orders} orders", flush=True)
    start = time.perf_counter()
    rows = []
    work = tempfile.mkdtemp(prefix="transfer-stream-")
    with threadpool_limits(1):
        for order in range(args.orders):
            perm = np.random.default_rng(100 + order).permutation(len(data))
            stores = {
                m: os.path.join(work, f"{m}-{order}.sqlite") for m in ("sqe", "mkl")
            }
            for position, i in enumerate(perm):
                name, X, y = data[i]
                for method in args.methods:
                    if method == "indep":
                        store = os.path.join(work, f"indep-{order}-{position}.sqlite")
                    else:
                        store = stores.get(method)
                    search = run_search(
                        method,
                        X,
                        y,
                        store=store,
                        name=name,
                        seed=order if args.same_seed else 1000 * order + position,
                        n_iter=args.n_iter,
                        cv=args.cv,
                    )
                    rows += trial_rows(
                        search, method, order, position, name, args.n_iter
                    )
            pd.DataFrame(rows).to_csv(
                os.path.join(args.out, "results.csv"), index=False
            )
            print(
                f"order {order} done, {time.perf_counter() - start:.0f} s", flush=True
            )
        df = pd.DataFrame(rows)
        ranks = rank_table(df, args.n_iter)
        cost = None
        if not args.no_cost and "mkl" in args.methods:
            cost = measure_cost(os.path.join(work, "mkl-0.sqlite"), work, COST_SIZES)
            cost.to_csv(os.path.join(args.out, "cost.csv"), index=False)
    elapsed = time.perf_counter() - start
    write_summary(args.out, df, ranks, cost, args, elapsed, len(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
