"""Yogatama & Mann's dataset-stream protocol at small scale (issue 6, paper 002).

Usage, from the repository root::

    python -m benchmarks.studies.transfer_stream --data-dir ../shared/datasets \\
        --out benchmarks/results/2026-11-22-transfer-stream [--orders N]

Protocol
--------
Estimator (``--model``, ``_transfer_models.py``): ``logreg`` (the default),
``make_pipeline(StandardScaler(), LogisticRegression(solver="saga",
random_state=0))`` with the elastic net's four hyperparameters (the paper's:
the l1 and l2 penalties, as ``C`` and ``l1_ratio``, the convergence threshold
and the iteration cap)::

    C         Real(1e-3, 1e2, log-uniform)
    l1_ratio  Real(0, 1)
    tol       Real(1e-5, 1e-1, log-uniform)
    max_iter  Integer(2, 200)

or ``ensemble``, the paper's second experiment: a weighted majority vote of
six classifiers whose 14 hyperparameters and 6 vote weights are searched
together.

Datasets: every classification data set of ``--sources`` (default: adult,
letter, magic, shuttle, pendigits, credit_default, connect_4, covertype_75k)
as a random sample of ``--n-rows`` rows, plus ``--copies`` perturbed copies of
each (the paper's synthetic data sets: a random 60-90 % of the rows and a
random 50-90 % of the features kept), plus with ``--binary N`` one binary data
set for each of up to N of a multiclass sample's most frequent classes: that
class against the rest, on the sample's rows and features. All draws use one
fixed seed, so every method and order sees the same data. Classes with fewer
than 3 members are dropped (3-fold stratification).

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
trials of the stream's model on a small task against it; the per-iteration cost is
its wall time minus the time spent fitting and scoring, divided by the trials
(``_transfer_cost.py``).

Each data set is split once into a search part (70 %, where the searches run
their CV: the "development" score) and a held-out test part (30 %) on which
the configuration each search chose is scored after a refit on the search
part (the paper's "test" score).

Everything runs under ``threadpoolctl.threadpool_limits(1)``. Outputs in
``--out``: ``stream.json`` (the options that decide what a record holds:
model, sources, rows, copies, trials, folds, test share, seeding, the transfer
searches' weights and replacement; a run given other ones on the same
``--out`` is refused, so that one stream never mixes them), ``records/``
(one JSON file per search: method, order, position,
data set, seed, every trial's CV score and parameters, the test score, the
load average; ``--resume`` skips the searches that have one), ``stores/``
(the transfer searches' stores, which a resumed stream continues),
``results.csv`` (one row per search and trial: method, order, position, data
set, trial, score, best so far, parameters), ``cost.csv`` and ``summary.md``
(tables, command, date, load averages).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Iterator

import numpy as np
import pandas as pd
from scipy.stats import rankdata
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import RandomizedSearchCV, train_test_split
from threadpoolctl import threadpool_limits

from skbayes_search import BayesSearchCV, TransferBayesSearchCV

from ._transfer_models import MODELS, StreamModel
from ._transfer_options import METHODS, add_arguments, check_options, holds_records


def load_datasets(
    data_dir, sources, n_rows, n_copies, seed=0, test_size=0.3, n_binary=0
):
    """Row samples of the sources and their perturbed copies, fixed by ``seed``,
    and of each multiclass sample up to ``n_binary`` one-against-the-rest
    data sets (:func:`one_vs_rest`).

    Each is ``(name, X, y, X_test, y_test)``: the search part and a stratified
    held-out ``test_size`` share (empty when ``test_size`` is 0).
    """
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
        out += one_vs_rest(name, X, y, n_binary, test_size)
    return [_split(name, X, y, test_size, seed) for name, X, y in out]


def one_vs_rest(name, X, y, n_binary, test_size=0.3):
    """``(f"{name}={label}", X, y == label)`` for up to ``n_binary`` of the
    most frequent classes of a sample with more than two; a class with too
    few members for 3-fold stratification of the search part is left out
    (ties of frequency go to the smaller label)."""
    values, counts = np.unique(y, return_counts=True)
    if len(values) <= 2:
        return []
    order = np.lexsort((values, -counts))[:n_binary]
    return [
        (f"{name}={values[i]}", X, (y == values[i]).astype(int))
        for i in order
        if _stratifiable(min(counts[i], len(y) - counts[i]), test_size)
    ]


def _stratifiable(count, test_size):
    """Whether a class of ``count`` members keeps the 3 that 3-fold
    stratification needs in the search part."""
    return count * (1 - test_size) >= 3.5


def _split(name, X, y, test_size, seed):
    """``(name, X, y, X_test, y_test)``; classes too rare for 3-fold CV dropped."""
    values, counts = np.unique(y, return_counts=True)
    keep = np.isin(y, values[_stratifiable(counts, test_size)])
    X, y = X[keep], y[keep]
    if not test_size:
        return name, X, y, X[:0], y[:0]
    X, X_test, y, y_test = train_test_split(
        X, y, test_size=test_size, stratify=y, random_state=seed
    )
    return name, X, y, X_test, y_test


def run_search(
    method,
    X,
    y,
    *,
    model: StreamModel,
    store,
    name,
    seed,
    n_iter,
    cv,
    refit=False,
    run_name=None,
    mkl_weights=None,
    random_replacement=None,
):
    common = dict(n_iter=n_iter, cv=cv, refit=refit, n_jobs=1, random_state=seed)
    if method == "random":
        search = RandomizedSearchCV(model.make(), model.space, **common)
    elif method == "bayes":
        search = BayesSearchCV(model.make(), model.space, **common)
    else:
        kernel = "mkl" if method == "mkl" else "sqe"
        options = {}
        if kernel == "mkl" and mkl_weights is not None:
            options["kernel_weights"] = mkl_weights
        if random_replacement is not None:
            options["random_replacement"] = random_replacement
        search = TransferBayesSearchCV(
            model.make(),
            model.space,
            store=store,
            kernel=kernel,
            **options,
            dataset_name=name,
            run_name=run_name,
            **common,
        )
    search.fit(X, y)
    return search


def search_record(search, model, method, order, position, name, seed, test):
    """One search as a JSON-ready dict: its trials' CV scores and parameters.

    ``test`` is ``(X_test, y_test)``; with test rows and a refitted search, the
    chosen configuration's accuracy on them is ``test_score`` (else nan).
    """
    res = search.cv_results_
    X_test, y_test = test
    test_score = math.nan
    if len(y_test) and hasattr(search, "best_estimator_"):
        test_score = float(search.best_estimator_.score(X_test, y_test))
    return {
        "method": method,
        "order": int(order),
        "position": int(position),
        "dataset": name,
        "seed": int(seed),
        # a failed fit counts as accuracy 0 in the ranks
        "scores": np.nan_to_num(
            np.asarray(res["mean_test_score"], float), nan=0.0
        ).tolist(),
        "params": [
            {model.short(k): _plain(res["param_" + k][t]) for k in model.space}
            for t in range(len(res["mean_test_score"]))
        ],
        "test_score": test_score,
        "loadavg": list(os.getloadavg()),
    }


def _plain(value):
    return value.item() if hasattr(value, "item") else value


def trial_rows(record, n_iter):
    """One row per trial ``1..n_iter`` of a record, with the best score so far."""
    rows = []
    best = -np.inf
    for t in range(n_iter):
        # a search that stopped early keeps its best
        if t < len(record["scores"]):
            score = record["scores"][t]
            best = max(best, score)
            params = record["params"][t]
        else:
            params, score = {}, np.nan
        rows.append(
            {
                "method": record["method"],
                "order": record["order"],
                "position": record["position"],
                "dataset": record["dataset"],
                "trial": t + 1,
                "score": score,
                "best_so_far": best,
                **params,
            }
        )
    return rows


def record_path(records_dir, method, order, position):
    return os.path.join(records_dir, f"{method}-o{order:03d}-p{position:03d}.json")


def read_records(records_dir):
    """Every record in ``records_dir``, sorted by (order, position, method)."""
    out = []
    for entry in sorted(os.listdir(records_dir)):
        if entry.endswith(".json"):
            with open(os.path.join(records_dir, entry)) as fh:
                out.append(json.load(fh))
    return sorted(out, key=lambda r: (r["order"], r["position"], r["method"]))


def stream_runs(
    data,
    orders,
    methods,
    out,
    *,
    model: StreamModel,
    n_iter,
    cv,
    same_seed=False,
    resume=False,
    mkl_weights=None,
    random_replacement=None,
) -> Iterator[dict]:
    """Run the stream, yielding each new record once written to ``out/records``.

    Orders run one after the other and, within an order, the data sets in the
    order's permutation, every method on one data set before the next (a
    transfer search reads the stores of the data sets before it). The stores
    live in ``out/stores``, so ``resume=True`` skips every search with a
    record and continues the stores where they stopped; a search killed
    half-way resumes its run in the store (runs are named by order and
    position).
    """
    records_dir = os.path.join(out, "records")
    stores_dir = os.path.join(out, "stores")
    os.makedirs(records_dir, exist_ok=True)
    os.makedirs(stores_dir, exist_ok=True)
    if not resume and holds_records(records_dir):
        raise SystemExit(
            f"{records_dir} already holds records: pass --resume to continue "
            "that stream, or choose another --out."
        )
    for order in orders:
        perm = np.random.default_rng(100 + order).permutation(len(data))
        for position, i in enumerate(perm):
            name, X, y, X_test, y_test = data[i]
            seed = order if same_seed else 1000 * order + position
            for method in methods:
                path = record_path(records_dir, method, order, position)
                if os.path.exists(path):
                    continue
                if method == "indep":
                    store = f"indep-{order}-{position}.sqlite"
                else:
                    store = (
                        f"{method}-{order}.sqlite" if method in ("sqe", "mkl") else None
                    )
                start = time.perf_counter()
                search = run_search(
                    method,
                    X,
                    y,
                    model=model,
                    store=store and os.path.join(stores_dir, store),
                    name=name,
                    seed=seed,
                    n_iter=n_iter,
                    cv=cv,
                    refit=bool(len(y_test)),
                    run_name=f"o{order}-p{position}-{name}",
                    mkl_weights=mkl_weights,
                    random_replacement=random_replacement,
                )
                record = search_record(
                    search,
                    model,
                    method,
                    order,
                    position,
                    name,
                    seed,
                    (X_test, y_test),
                )
                record["seconds"] = time.perf_counter() - start
                record["n_iter"], record["cv"] = n_iter, cv
                # write then rename: a killed run never leaves half a record
                with open(path + ".tmp", "w") as fh:
                    json.dump(record, fh)
                os.replace(path + ".tmp", path)
                yield record


def rank_table(df, n_iter):
    """Ranks per (order, data set, k) of every method's best-so-far score."""
    piv = df.pivot_table(
        index=["order", "dataset", "trial"], columns="method", values="best_so_far"
    )
    methods = [m for m in METHODS if m in piv.columns]
    ranks = piv[methods].apply(lambda r: pd.Series(rankdata(-r.to_numpy()), methods), 1)
    return ranks.reset_index()


def results_frame(records, n_iter):
    """One row per (record, trial) of the records, as ``results.csv`` holds."""
    return pd.DataFrame([row for r in records for row in trial_rows(r, n_iter)])


def run_logged(args: argparse.Namespace) -> list:
    """Load the stream's data sets and run every search of ``args`` still
    missing, one line each; return the data sets. The one run loop of the
    study and of ``benchmarks.papers.transfer``."""
    check_options(args)
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.simplefilter("ignore", UserWarning)
    data = load_datasets(
        args.data_dir,
        args.sources,
        args.n_rows,
        args.copies,
        test_size=args.test_size,
        n_binary=args.binary,
    )
    print(f"{len(data)} data sets, {args.orders} orders", flush=True)
    with threadpool_limits(1):
        for record in stream_runs(
            data,
            range(args.first_order, args.orders),
            args.methods,
            args.out,
            model=MODELS[args.model],
            n_iter=args.n_iter,
            cv=args.cv,
            same_seed=args.same_seed,
            resume=args.resume,
            mkl_weights=args.mkl_weights and tuple(args.mkl_weights),
            random_replacement=args.random_replacement,
        ):
            print(
                f"order {record['order']} position {record['position']} "
                f"{record['method']}: {record['seconds']:.1f} s, "
                f"load {record['loadavg'][0]:.2f}",
                flush=True,
            )
    return data


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.studies.transfer_stream",
        description=__doc__.splitlines()[0],
    )
    add_arguments(parser)
    parser.add_argument("--no-cost", action="store_true", help="skip the store cost")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    data = run_logged(args)
    with threadpool_limits(1):
        df = results_frame(read_records(os.path.join(args.out, "records")), args.n_iter)
        df.to_csv(os.path.join(args.out, "results.csv"), index=False)
        ranks = rank_table(df, args.n_iter)
        cost = None
        if not args.no_cost and "mkl" in args.methods:
            from ._transfer_cost import COST_SIZES, measure_cost

            stores = os.path.join(args.out, "stores")
            cost = measure_cost(
                os.path.join(stores, "mkl-0.sqlite"),
                stores,
                COST_SIZES,
                model=MODELS[args.model],
            )
            cost.to_csv(os.path.join(args.out, "cost.csv"), index=False)
    elapsed = time.perf_counter() - start
    from ._transfer_report import write_summary

    write_summary(args.out, df, ranks, cost, args, elapsed, len(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
