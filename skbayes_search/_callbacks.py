"""scikit-learn's fit callbacks (``set_callbacks``, scikit-learn >= 1.9).

A search is one root task with up to two subtasks, as in scikit-learn's own
searches: ``"search"``, whose subtasks are the fits of every (trial, split)
pair, and ``"refit-with-best-params"``. The number of fits is not known in
advance (time budgets, strategies that add trials), so the search task
declares no maximum. With an older scikit-learn, or without callbacks, every
method here does nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sklearn.model_selection._validation import _fit_and_score

#: Whether this scikit-learn passes callback contexts through ``_fit_and_score``.
SUPPORTED = "callback_ctx" in inspect.signature(_fit_and_score).parameters


class SearchCallbacks:
    """Callback task tree of one ``fit`` of a search.

    Parameters
    ----------
    search : estimator
        The search being fitted.
    X, y : array-like
        Data passed to the callbacks' hooks.
    metadata : dict or None
        Training metadata for the hooks (``sample_weight``).
    """

    def __init__(self, search: Any, X: Any, y: Any, metadata: dict | None) -> None:
        self.search = search
        self.X, self.y, self.metadata = X, y, metadata
        self.root = None
        self.search_ctx = None
        self._n_fits = 0
        self._listened = False
        if SUPPORTED and hasattr(search, "_init_callback_context"):
            self.root = search._init_callback_context(
                max_subtasks=1 + (search.refit is not False)
            ).call_on_fit_task_begin(estimator=search, X=X, y=y, metadata=metadata)
            self._listened = bool(getattr(self.root, "_callbacks", True)) or (
                _estimator_has_callbacks(search.estimator)
            )

    def begin_search(self) -> None:
        """Open the ``"search"`` task."""
        if self.root is not None:
            self.search_ctx = self.root.subcontext(
                task_name="search", max_subtasks=None, sequential_subtasks=False
            ).call_on_fit_task_begin(estimator=self.search)

    def fit_kwargs(self, n_fits: int) -> list[dict]:
        """Extra ``_fit_and_score`` arguments of the next ``n_fits`` fits.

        Every fit's hooks receive the search itself as ``estimator``, as with
        scikit-learn's own searches (a worker process receives a copy of it,
        as with ``GridSearchCV``). Without any callback the fits get no
        callback arguments at all, so the search is never sent to workers.
        The contexts are created here, in the main process, because creating
        them inside workers would mutate the tree while it is pickled.
        """
        if self.search_ctx is None or not self._listened:
            return [{} for _ in range(n_fits)]
        out = []
        for _ in range(n_fits):
            sub = self.search_ctx.subcontext(
                task_name="candidate-split-evaluation", task_id=self._n_fits
            )
            self._n_fits += 1
            out.append({"caller": self.search, "callback_ctx": sub})
        return out

    def end_search(self) -> None:
        """Close the ``"search"`` task."""
        if self.search_ctx is not None:
            self.search_ctx.call_on_fit_task_end(estimator=self.search)

    @contextmanager
    def refit(self, estimator: Any) -> Iterator[None]:
        """Run the refit of ``estimator`` as the ``"refit-with-best-params"`` task."""
        if self.root is None:
            yield
            return
        sub = self.root.subcontext(task_name="refit-with-best-params")
        with sub.propagate_callback_context(estimator):
            sub.call_on_fit_task_begin(
                estimator=self.search, X=self.X, y=self.y, metadata=self.metadata
            )
            yield
        sub.call_on_fit_task_end(
            estimator=self.search, X=self.X, y=self.y, metadata=self.metadata
        )

    def end(self) -> None:
        """Close the root task."""
        if self.root is not None:
            self.root.call_on_fit_task_end(
                estimator=self.search, X=self.X, y=self.y, metadata=self.metadata
            )


def _estimator_has_callbacks(estimator: Any) -> bool:
    """Whether the estimator searched (or one of its steps) has callbacks of
    its own, which then need the search's task tree to attach to."""
    if getattr(estimator, "_skl_callbacks", None):
        return True
    try:
        values = estimator.get_params(deep=True).values()
    except Exception:  # not an estimator's get_params: nothing to find
        return False
    return any(getattr(v, "_skl_callbacks", None) for v in values)
