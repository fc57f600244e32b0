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


def report_trial(
    name: str, verbose: int, ctx: Any, record: Any, progress: Any = None
) -> None:
    """Advance the bar, or print one line for a finished trial when verbose."""
    if not verbose:
        return
    scores = ctx.scores()
    best = np.nanmax(scores) if np.isfinite(scores).any() else np.nan
    if progress is not None:
        progress.set_postfix(best=f"{best:.5g}", refresh=False)
        progress.update(1)
        return
    status = "failed" if record.failed else f"score={record.score:.5g}"
    print(
        f"[{name}] trial {len(ctx.trials)}/{ctx.budget} "
        f"iter={record.iter} fraction={record.fraction:.4g} "
        f"n_resources={record.n_resources} {status} best={best:.5g} "
        f"elapsed={record.elapsed_time:.1f}s"
    )
