"""Fixtures shared by several test modules."""

import sqlite3

import pytest


@pytest.fixture
def killed_copy():
    """Copy a trial store keeping only some trials: the store of a run killed
    before the others finished (a batch finishes in any order)."""

    def copy(src, dst, finished):
        source, target = sqlite3.connect(src), sqlite3.connect(dst)
        source.backup(target)
        kept = ", ".join(str(int(i)) for i in finished)
        with target:
            target.execute(f"DELETE FROM trials WHERE trial_index NOT IN ({kept})")
        source.close()
        target.close()

    return copy
