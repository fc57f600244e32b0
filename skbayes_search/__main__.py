"""The main job: tune an SVM on bundled real data, BayesSearchCV against
RandomizedSearchCV at the same number of trials, and print a result table.

Run with ``python -m skbayes_search`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import time

from scipy.stats import loguniform
from sklearn.model_selection import RandomizedSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from . import BayesSearchCV, Real
from .datasets import load_magic


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m skbayes_search", description=__doc__
    )
    parser.add_argument("--n-rows", type=int, default=6000, help="rows of MAGIC used")
    parser.add_argument("--n-iter", type=int, default=25, help="trials per search")
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    X, y = load_magic()
    if args.n_rows < len(y):
        X, _, y, _ = train_test_split(
            X, y, train_size=args.n_rows, stratify=y, random_state=args.seed
        )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=args.seed
    )
    model = make_pipeline(StandardScaler(), SVC())
    common = dict(n_iter=args.n_iter, cv=3, n_jobs=args.n_jobs, random_state=args.seed)
    searches = {
        "BayesSearchCV": BayesSearchCV(
            model,
            {
                "svc__C": Real(1e-3, 1e3, prior="log-uniform"),
                "svc__gamma": Real(1e-4, 1e1, prior="log-uniform"),
            },
            **common,
        ),
        "RandomizedSearchCV": RandomizedSearchCV(
            model,
            {"svc__C": loguniform(1e-3, 1e3), "svc__gamma": loguniform(1e-4, 1e1)},
            **common,
        ),
    }
    print(
        f"MAGIC gamma telescope: {len(y_train)} training rows, {len(y_test)} test "
        f"rows; SVC(C, gamma); {args.n_iter} trials each, 3-fold CV\n"
    )
    header = (
        f"{'search':<20} {'best CV acc':>11} {'test acc':>9} {'wall s':>8}  best params"
    )
    print(header)
    print("-" * len(header))
    for name, search in searches.items():
        start = time.perf_counter()
        search.fit(X_train, y_train)
        wall = time.perf_counter() - start
        test = search.score(X_test, y_test)
        params = ", ".join(
            f"{k.split('__')[-1]}={v:.3g}" for k, v in search.best_params_.items()
        )
        row = f"{name:<20} {search.best_score_:>11.4f} {test:>9.4f} {wall:>8.1f}"
        print(f"{row}  {params}")


if __name__ == "__main__":
    main()
