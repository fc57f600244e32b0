"""What a study reads from a race folder: one method's runs of a task, and
the test scores of the folder's refits and of the study's own."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..refit import refit_incumbents
from ..tasks import load_task


def race_runs(base: Path, task: str, method: str) -> list[dict[str, Any]]:
    """The records of ``method``'s runs of ``task`` in the race budget folder
    ``base`` (``<folder>/budget-<seconds>``), by seed file name."""
    files = sorted((base / "runs" / task).glob(f"{method}-seed*.json"))
    return [json.loads(f.read_text()) for f in files if "spec" not in f.name]


def add_refit_options(p: argparse.ArgumentParser) -> None:
    """``--cache``, ``--refit``, ``--data-dir`` and ``--n-jobs``."""
    p.add_argument("--cache", required=True, help="folder of the study's own refits")
    p.add_argument("--refit", action="store_true", help="refit what no cache holds")
    p.add_argument("--data-dir", default=None, help="default ../shared/datasets")
    p.add_argument("--n-jobs", type=int, default=2)


def study_scores(
    base: Path,
    task: str,
    args: argparse.Namespace,
    wanted: Callable[[dict], list[tuple[dict, float]]],
) -> dict[str, dict[str, float]]:
    """Test scores of the race budget folder ``base``'s refit cache for
    ``task``, merged with the study's own cache in ``args.cache``.

    With ``args.refit``, ``wanted(scores)`` (scores: the folder's cache)
    lists the ``(params, fraction)`` to refit first, into the study's cache
    only: the folder's best refit defines the race's targets, and a study's
    refits of settings that were never incumbents must not move them.
    """
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    own = base / "refits" / f"{task}.json"
    extra = cache / f"{task}.json"
    scores = json.loads(own.read_text()) if own.is_file() else {}
    if args.refit:
        todo = wanted(scores)
        if todo:
            loaded = load_task(task, args.data_dir)
            refit_incumbents(loaded, todo, extra, args.n_jobs)
    if extra.is_file():
        scores = {**scores, **json.loads(extra.read_text())}
    return scores
