"""Settings that fail on small subsets only: do the subset searches recover?

Usage (from the repository root)::

    python -m benchmarks.studies.subset_failures --seeds 0,1,2

Three generated cases where a fit fails, or scores ``nan``, for a subset's
size alone, never for the setting's:

- ``knn``: a k-NN on 6,000 noisy rows, ``n_neighbors`` in 1 to 300 (on a
  subset of fewer rows than neighbours, prediction fails);
- ``categories``: a one-hot encoded column of 40 levels, 20 of them rare, on
  5,000 rows (a small subset misses a level of the validation rows);
- ``pca``: PCA + logistic regression on 6,000 rows of 120 features,
  ``n_components`` in 2 to 120 (no more components than rows).

Each runs :class:`~skbayes_search.HalvingBayesSearchCV` and
:class:`~skbayes_search.FabolasSearchCV` (``n_iter`` 40, 3-fold CV, two
workers) per seed, and :class:`~sklearn.model_selection.GridSearchCV` over a
few values as the reference. Printed: a markdown table of each answer, its
CV score, the trials that failed or scored ``nan``, and the rows the answer
was measured on. To compare with another version of the library, run the
same command with that version first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.datasets import make_classification
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skbayes_search import FabolasSearchCV, HalvingBayesSearchCV, Integer, Real

#: (estimator, space, grid for the reference, X, y) of a case.
Case = tuple[Any, dict, dict, Any, np.ndarray]


def knn_case() -> Case:
    X, y = make_classification(6000, 5, n_informative=3, flip_y=0.35, random_state=0)
    grid = {"n_neighbors": [1, 5, 20, 50, 100, 150, 200, 300]}
    return KNeighborsClassifier(), {"n_neighbors": Integer(1, 300)}, grid, X, y


def categories_case() -> Case:
    rng = np.random.RandomState(0)
    n = 5000
    levels = [f"c{i}" for i in range(40)]
    p = np.r_[np.full(20, 0.045), np.full(20, 0.005)]
    cat = rng.choice(levels, size=n, p=p)
    num = rng.randn(n, 3)
    y = num[:, 0] + (np.char.str_len(cat.astype(str)) > 2) + 0.5 * rng.randn(n)
    X = pd.DataFrame({"cat": cat, "a": num[:, 0], "b": num[:, 1], "c": num[:, 2]})
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["cat"]), remainder=StandardScaler()),
        LogisticRegression(),
    )
    key = "logisticregression__C"
    space = {key: Real(1e-3, 1e2, prior="log-uniform")}
    return pipe, space, {key: [1e-3, 1e-2, 1e-1, 1, 10, 100]}, X, (y > 0.5).astype(int)


def pca_case() -> Case:
    X, y = make_classification(
        6000, 120, n_informative=80, n_redundant=0, random_state=0
    )
    pipe = make_pipeline(PCA(), LogisticRegression(max_iter=300))
    grid = {"pca__n_components": [5, 20, 50, 80, 100, 120]}
    return pipe, {"pca__n_components": Integer(2, 120)}, grid, X, y


CASES: dict[str, Callable[[], Case]] = {
    "knn": knn_case,
    "categories": categories_case,
    "pca": pca_case,
}
METHODS = {"halving": HalvingBayesSearchCV, "fabolas": FabolasSearchCV}


def run(case: str, method: str, seed: int, n_iter: int) -> dict[str, Any]:
    """One search of a case; its answer and how many trials failed."""
    est, space, grid, X, y = CASES[case]()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if method == "grid":
                search = GridSearchCV(est, grid, cv=3, n_jobs=2).fit(X, y)
            else:
                search = METHODS[method](
                    est, space, n_iter=n_iter, cv=3, n_jobs=2, random_state=seed
                ).fit(X, y)
        except ValueError as error:
            # the all-failed error: the search gave no answer
            first = str(error).splitlines()[0]
            return {"case": case, "method": method, "seed": seed, "error": first}
    res = search.cv_results_
    scores = np.asarray(res["mean_test_score"], dtype=float)
    rows = res.get("n_resources", [len(X) * 2 // 3] * len(scores))
    return {
        "case": case,
        "method": method,
        "seed": seed,
        "answer": search.best_params_,
        "cv": float(search.best_score_),
        "trials": len(scores),
        "nan": int(np.isnan(scores).sum()),
        "rows": int(rows[search.best_index_]),
        "seconds": time.perf_counter() - start,
    }


def table(results: list[dict[str, Any]]) -> str:
    """The results as a markdown table."""
    lines = [
        "| case | method | seed | answer | CV | failed or nan / trials | rows | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if "error" in r:
            head = f"| {r['case']} | {r['method']} | {r['seed']} |"
            lines.append(f"{head} error: {r['error']} | | | | |")
            continue
        answer = ", ".join(
            f"{k.split('__')[-1]}={v:.4g}" if isinstance(v, float) else f"{v}"
            for k, v in r["answer"].items()
        )
        lines.append(
            f"| {r['case']} | {r['method']} | {r['seed']} | {answer} | "
            f"{r['cv']:.4f} | {r['nan']} / {r['trials']} | {r['rows']} | "
            f"{r['seconds']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--methods", default="grid,halving,fabolas")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--n-iter", type=int, default=40)
    args = p.parse_args(argv)
    results = []
    for case in args.cases.split(","):
        for method in args.methods.split(","):
            seeds = [0] if method == "grid" else [int(s) for s in args.seeds.split(",")]
            for seed in seeds:
                results.append(run(case, method, seed, args.n_iter))
                print(table(results[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(results))


if __name__ == "__main__":
    main()
