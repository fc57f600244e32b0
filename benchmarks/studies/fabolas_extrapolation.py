"""How well FABOLAS's loss model extrapolates to all data, after the fact.

Reads a finished benchmark directory: the trials of every ``fabolas`` run
(configuration, subset size, validation score) and the offline refits
(``refits/<task>.json``: every incumbent of every method refitted on all
search rows and scored on the test rows). At a few points of each run it fits
the search's own loss model (:func:`~skbayes_search.gp.fabolas_kernels.fabolas_kernels`,
same targets, same MCMC settings) to the trials seen so far and predicts the
full-data score of every refitted configuration. Reported per checkpoint:

- Spearman correlation between predicted and test accuracy;
- test accuracy of the configuration the model ranks first, against the
  best refitted one;
- median of predicted minus test accuracy over all refitted configurations,
  and over the ten best ones (a model that cannot see a region's learning
  curve rise under-predicts exactly those).

Validation and test scores differ a little (cross-validation on subsets of
the search rows against the test split), so only large gaps and ranks mean
something.

Usage::

    python -m benchmarks.studies.fabolas_extrapolation \\
        benchmarks/results/2026-11-23-svc-covertype --task svc-covertype_75k
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy.stats import spearmanr
from threadpoolctl import threadpool_limits

from skbayes_search._validation import min_resources_rows
from skbayes_search.gp import GPSurrogate
from skbayes_search.gp.fabolas_kernels import (
    error_kind,
    fabolas_kernels,
    loss_to_scores,
    scores_to_loss,
)
from skbayes_search.space import SearchSpace

from ..tasks import ESTIMATORS, space_ours


def _refitted(results: Path, task: str) -> tuple[list[dict], np.ndarray]:
    """Configurations refitted on all search rows, and their test scores."""
    refits = json.loads((results / "refits" / f"{task}.json").read_text())
    params, scores = [], []
    for key, value in refits.items():
        text, fraction = key.rsplit("@", 1)
        score = value.get("test_score")
        if float(fraction) == 1.0 and score is not None and np.isfinite(score):
            params.append(json.loads(text))
            scores.append(float(score))
    return params, np.asarray(scores)


def check_run(
    record: dict,
    task_info: dict,
    space: SearchSpace,
    refit_params: list[dict],
    refit_scores: np.ndarray,
    checkpoints: list[float],
    n_hyper_samples: int = 10,
) -> list[dict]:
    """Extrapolation quality of one run's loss model at each checkpoint."""
    n_search, n_splits = task_info["n_search"], record["n_splits"]
    n_train = n_search - math.ceil(n_search / n_splits)
    ctx = SimpleNamespace(
        n_classes=task_info.get("n_classes"), n_splits=n_splits, n_train=n_train
    )
    min_resources = min_resources_rows("auto", ctx)
    log_smin = math.log(min_resources / n_train)
    trials = [t for t in record["trials"] if np.isfinite(t["score"])]
    X_ref = space.to_unit(refit_params)
    top = np.argsort(-refit_scores)[:10]
    loss_kernel, _ = fabolas_kernels(space.n_dims)
    rows = []
    for share in checkpoints:
        seen = trials[: max(2, round(share * len(trials)))]
        X = space.to_unit([t["params"] for t in seen])
        fractions = np.array([t["resource"] / n_train for t in seen])
        s = np.clip(1.0 - np.log(fractions) / log_smin, 0.0, 1.0)
        scores = np.array([t["score"] for t in seen])
        kind = error_kind(scores)
        gp = GPSurrogate(
            loss_kernel,
            hyperparameter_sampling="mcmc",
            n_samples=n_hyper_samples,
            random_state=record["seed"],
        )
        with threadpool_limits(1):
            gp.fit(np.column_stack([X, s]), scores_to_loss(scores, kind))
            mean, _ = gp.predict(np.column_stack([X_ref, np.ones(len(X_ref))]))
        predicted = loss_to_scores(np.atleast_2d(mean).mean(axis=0), kind)
        gap = predicted - refit_scores
        rows.append(
            {
                "seed": record["seed"],
                "trials": len(seen),
                "largest_fraction": float(fractions.max()),
                "spearman": float(spearmanr(predicted, refit_scores).statistic),
                "first_ranked_test": float(refit_scores[np.argmax(predicted)]),
                "median_gap": float(np.median(gap)),
                "median_gap_top10": float(np.median(gap[top])),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.studies.fabolas_extrapolation",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("results", type=Path, help="a benchmarks.run output folder")
    parser.add_argument("--task", required=True)
    parser.add_argument(
        "--checkpoints",
        type=float,
        nargs="+",
        default=[0.25, 0.5, 1.0],
        help="shares of each run's trials to fit the model on",
    )
    args = parser.parse_args(argv)
    runs = args.results / "runs" / args.task
    task_info = json.loads((runs / "task.json").read_text())
    space = SearchSpace(space_ours(ESTIMATORS[args.task.split("-")[0]].params))
    refit_params, refit_scores = _refitted(args.results, args.task)
    print(
        f"{len(refit_params)} configurations refitted on all data; best test "
        f"score {refit_scores.max():.4f}\n"
    )
    print(
        "| seed | trials | largest fraction | Spearman | test score of first "
        "ranked | median gap | median gap, 10 best |"
    )
    print("|---|---|---|---|---|---|---|")
    for path in sorted(runs.glob("fabolas-seed*.json")):
        if path.name.endswith(".spec.json"):
            continue
        record = json.loads(path.read_text())
        if record.get("status") != "ok":
            continue
        for row in check_run(
            record, task_info, space, refit_params, refit_scores, args.checkpoints
        ):
            print(
                f"| {row['seed']} | {row['trials']} | {row['largest_fraction']:.3f} "
                f"| {row['spearman']:+.2f} | {row['first_ranked_test']:.4f} "
                f"| {row['median_gap']:+.3f} | {row['median_gap_top10']:+.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
