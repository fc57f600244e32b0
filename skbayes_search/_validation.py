"""Checks several strategies share: parameter constraints, subset fractions and
small spaces."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, Options

__all__ = [
    "COUNT",
    "MIN_RESOURCES_REGRESSION",
    "NON_EMPTY_STR",
    "check_fractions",
    "check_stored_rows",
    "min_resources_rows",
    "on_fractions",
    "warn_if_space_small",
]

#: ``min_resources="auto"`` for regressors (and unsupervised estimators).
MIN_RESOURCES_REGRESSION = 100


def check_fractions(
    value: Any, name: str, *, increasing: bool = False, last_is_one: bool = False
) -> np.ndarray:
    """Validate a non-empty 1-d sequence of subset fractions in (0, 1].

    Parameters
    ----------
    value : sequence of float
        What the user passed.
    name : str
        The parameter's name, for the error message.
    increasing : bool, default=False
        Require strictly increasing values.
    last_is_one : bool, default=False
        Require the last value to be 1.0 (all training rows).

    Returns
    -------
    ndarray of shape (n,)
        The fractions as floats, in the order given.

    Raises
    ------
    ValueError
        Naming ``name`` and the allowed values.

    Examples
    --------
    >>> from skbayes_search._validation import check_fractions
    >>> check_fractions((0.25, 1), "stages", increasing=True, last_is_one=True)
    array([0.25, 1.  ])
    >>> check_fractions([0.0, 1.0], "fractions")
    Traceback (most recent call last):
    ...
    ValueError: fractions must hold numbers in (0, 1], got [0.0, 1.0].
    """
    allowed = f"{name} must hold numbers in (0, 1], got {value!r}."
    items = np.asarray(value, dtype=object)
    if items.ndim != 1 or items.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-d sequence of numbers in (0, 1], "
            f"got {value!r}."
        )
    if any(isinstance(v, bool | np.bool_) for v in items):
        raise ValueError(allowed)
    try:
        fractions = items.astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(allowed) from exc
    if not np.all(np.isfinite(fractions)) or np.any((fractions <= 0) | (fractions > 1)):
        raise ValueError(allowed)
    if increasing and np.any(np.diff(fractions) <= 0):
        raise ValueError(f"{name} must be strictly increasing, got {value!r}.")
    if last_is_one and fractions[-1] != 1.0:
        raise ValueError(
            f"The last of {name} must be 1.0 (all training rows), got {value!r}."
        )
    return fractions


def on_fractions(fraction: float, fractions: Any) -> bool:
    """Whether a trial's ``fraction`` is one of ``fractions``: trials are
    made on exactly a strategy's fractions, so only float rounding may
    separate them.

    >>> from skbayes_search._validation import on_fractions
    >>> on_fractions(0.3, [0.1, 0.3, 1.0]), on_fractions(0.25, [0.1, 0.3, 1.0])
    (True, False)
    """
    return bool(np.isclose(fraction, np.atleast_1d(fractions), rtol=1e-9).any())


def check_stored_rows(
    trials: Sequence[Any],
    allowed: Callable[[Any], bool],
    n_train: int,
    *,
    search: str,
    made_with: str,
) -> None:
    """Refuse a resumed run holding trials this search would not make.

    A stored trial on training rows the search's settings do not give would
    be ranked and modelled beside trials it was not measured like (read onto
    the nearest rung, stage or fraction, or clipped to the smallest), so the
    search would answer from mixed measurements without a word.

    Parameters
    ----------
    trials : sequence of TrialRecord
        The trials read back from the store.
    allowed : callable
        ``allowed(trial)``: whether this search makes a trial on its
        fraction (and, where that matters, in its stage).
    n_train : int
        Training rows of the smallest split, to name the rows in the message.
    search : str
        The search and the settings that fix its fractions, as the message
        gives them (``"stages=(0.3, 1.0)"``, with the fractions they give).
    made_with : str
        The parameters to resume with, as the message names them.

    Raises
    ------
    ValueError
        Naming the stored trials' rows, ``search`` and ``made_with``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from skbayes_search._validation import check_stored_rows
    >>> stored = [SimpleNamespace(fraction=0.1), SimpleNamespace(fraction=1.0)]
    >>> check_stored_rows(stored, lambda t: t.fraction in (0.2, 1.0), 1000,
    ...     search="fractions=(0.2, 1.0)", made_with="fractions")
    Traceback (most recent call last):
    ...
    ValueError: The stored run holds trials on [100] training rows that this ...
    """
    off = sorted({round(t.fraction * n_train) for t in trials if not allowed(t)})
    if off:
        raise ValueError(
            f"The stored run holds trials on {off} training rows that this "
            f"search would not have made ({search}). It was made with other "
            f"{made_with}; resume it with the {made_with} it was made with, or "
            "use another run_name to start a new run."
        )


def min_resources_rows(value: Any, ctx: Any) -> int:
    """Fewest training rows per fit of a subset strategy (``min_resources``).

    ``"auto"``: ``max(10 * n_classes, 2 * n_splits * n_classes)`` for
    classifiers (at least a few rows of every class in every fold), otherwise
    :data:`MIN_RESOURCES_REGRESSION`; never more than the training rows of
    the smallest split.

    Parameters
    ----------
    value : "auto" or int
        What the user passed (its type is checked by the constraints).
    ctx : SearchContext
        Gives ``n_train``, ``n_classes`` and ``n_splits``.

    Raises
    ------
    ValueError
        When an int ``value`` exceeds the smallest split's training rows.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from skbayes_search._validation import min_resources_rows
    >>> ctx = SimpleNamespace(n_train=1000, n_classes=7, n_splits=3)
    >>> min_resources_rows("auto", ctx)
    70
    >>> min_resources_rows(5000, ctx)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: min_resources=5000 is larger than the 1000 training rows of ...
    """
    if value != "auto":
        if int(value) > ctx.n_train:
            raise ValueError(
                f"min_resources={value} is larger than the {ctx.n_train} training "
                "rows of the smallest CV split."
            )
        return int(value)
    if ctx.n_classes is None:
        rows = MIN_RESOURCES_REGRESSION
    else:
        rows = max(10 * ctx.n_classes, 2 * ctx.n_splits * ctx.n_classes)
    return min(rows, ctx.n_train)


def warn_if_space_small(
    cardinality: float, n_iter: Any, what_then: str, stacklevel: int = 6
) -> None:
    """Warn that a finite space holds fewer configurations than ``n_iter``.

    ``what_then`` says what the strategy does once every configuration has
    been evaluated. The default ``stacklevel`` points at the user's ``fit``
    call from a strategy's ``_check_strategy_params`` (user code -> fit ->
    the base's fit wrapper -> base fit -> the check -> here).
    """
    n_max = max(np.atleast_1d(n_iter))
    if cardinality < n_max:
        warnings.warn(
            f"The search space has only {cardinality} distinct configurations, "
            f"fewer than n_iter={n_iter!r}; {what_then}",
            UserWarning,
            stacklevel=stacklevel,
        )


class _Count(Interval):
    """An int in an interval, and not a bool (``Interval(numbers.Integral)``
    takes ``True`` for 1, which as ``n_iter`` is always a mistake)."""

    def is_satisfied_by(self, val: Any) -> bool:
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)

    def __str__(self) -> str:
        return f"{super().__str__()} (not a bool)"


class _NonEmptyStr(Options):
    """A non-empty str: ``run_name=""`` would name no run (a new random name
    each time, never resumable). (An ``Options`` subclass: scikit-learn
    accepts only its own constraint classes.)"""

    def __init__(self) -> None:
        super().__init__(str, set())

    def is_satisfied_by(self, val: Any) -> bool:
        return isinstance(val, str) and val != ""

    def __str__(self) -> str:
        return "a non-empty str"


#: A count of trials, iterations or points: an int >= 1, not a bool.
COUNT = _Count(numbers.Integral, 1, None, closed="left")
NON_EMPTY_STR = _NonEmptyStr()
