"""Small real data sets shipped with the package (no download at run time)."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd


def load_magic(*, as_frame: bool = False) -> tuple:
    """Load the MAGIC Gamma Telescope data (19,020 rows, 10 features, 2 classes).

    Source: the PMLB collection (``datasets/magic``), originally from the UCI
    Machine Learning Repository. Shipped inside the package, gzipped TSV.

    Parameters
    ----------
    as_frame : bool, default=False
        Return ``X`` as a :class:`pandas.DataFrame` and ``y`` as a
        :class:`pandas.Series` instead of numpy arrays.

    Returns
    -------
    X : ndarray of shape (19020, 10) or DataFrame
        Features.
    y : ndarray of shape (19020,) or Series
        Binary labels (0 = gamma signal, 1 = hadron background).

    Examples
    --------
    >>> from skbayes_search.datasets import load_magic
    >>> X, y = load_magic()
    >>> X.shape
    (19020, 10)
    """
    with resources.as_file(
        resources.files(__package__).joinpath("magic.tsv.gz")
    ) as path:
        frame = pd.read_csv(path, sep="\t")
    y = frame.pop("target")
    if as_frame:
        return frame, y
    return frame.to_numpy(dtype=np.float64), y.to_numpy()
