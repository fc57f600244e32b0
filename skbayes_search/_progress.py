"""Progress reporting of a search: a tqdm bar or one printed line per trial."""

from __future__ import annotations

from typing import Any


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
