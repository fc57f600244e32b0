"""Progress reporting of a search: a tqdm bar or one printed line per trial."""

from __future__ import annotations

from typing import Any

import numpy as np


def progress_bar(verbose: int, total: int, initial: int, desc: str) -> Any:
    """A tqdm bar over the trial budget when ``verbose == 1`` and tqdm is
    installed, else None (the search then prints one line per trial when
    ``verbose > 0``).

    A bar is kept to ``verbose == 1`` because ``verbose > 1`` asks for the
    detail of every trial, which a bar would hide.
    """
    if verbose != 1:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=initial, desc=desc, unit="trial", leave=True)


def best_so_far(trials: list) -> str:
    """The best score of the finished trials, as a progress line shows it.

    Scores on subsets of the rows do not compare with scores on all of them
    (a small subset can score higher by chance), so the best is taken among
    the trials on the most rows that succeeded, which are named unless they
    are all the training rows.
    """
    ok = [t for t in trials if not t.failed and np.isfinite(t.score)]
    if not ok:
        return "nan"
    most = max(t.n_resources for t in ok)
    best = max(t.score for t in ok if t.n_resources == most)
    if all(t.fraction < 1.0 for t in ok if t.n_resources == most):
        return f"{best:.5g} on {most} rows"
    return f"{best:.5g}"


def report_trial(
    name: str, verbose: int, ctx: Any, record: Any, progress: Any = None
) -> None:
    """Advance the bar, or print one line for a finished trial when verbose."""
    if not verbose:
        return
    best = best_so_far(ctx.trials)
    if progress is not None:
        progress.set_postfix(best=best, refresh=False)
        progress.update(1)
        return
    status = "failed" if record.failed else f"score={record.score:.5g}"
    print(
        f"[{name}] trial {len(ctx.trials)}/{ctx.budget} "
        f"iter={record.iter} fraction={record.fraction:.4g} "
        f"n_resources={record.n_resources} {status} best={best} "
        f"elapsed={record.elapsed_time:.1f}s"
    )
