"""How HalvingBayesSearchCV ends: the incumbent's all-data evaluation, the
answer it returns, and the attributes it leaves.

A mixin of :class:`~skbayes_search.HalvingBayesSearchCV`, which sets up the
rungs (``_rungs``), their ledger (``_ledger``) and the proposal counter
(``_n_asks``) that these methods use. Users' page:
``doc/strategies/halving.rst``, "The answer is measured on all data".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._failures import (
    FINAL_NOT_STARTED,
    FINAL_STOPPED,
    NO_FULL_SUCCESS,
    warn_answer_on_subset,
)
from .._loop import final_deadline
from .._trial import SearchContext, Trial
from ._halving_model import random_points
from ._halving_plan import rung_trial

if TYPE_CHECKING:
    from .._rungs import RungLedger, Rungs


class HalvingAnswer:
    """The end of a halving search: what is measured on all data, and what
    is returned."""

    _ledger: RungLedger
    _rungs: Rungs
    _n_asks: int
    _final_out_of_reach: bool

    def _finalize(self, ctx: SearchContext) -> list[Trial]:
        ledger = self._ledger
        ledger.absorb(ctx.trials)
        if ledger.answer_measured() or self._top_running(ctx):
            return []
        return self._final_trials(ctx, self._n_asks, last=True)

    def _top_running(self, ctx: SearchContext) -> bool:
        top = self._rungs.top
        return any(self._rungs.of(t.fraction) == top for t in ctx.pending)

    def _final_trials(
        self, ctx: SearchContext, it: int, last: bool = False
    ) -> list[Trial]:
        """The incumbent's all-data evaluation, by ``_ask`` or (``last``)
        when the search ends; none when it is predicted not to finish by
        the final trials' deadline (the answer then rests on a subset, and
        ``_select_best`` warns)."""
        ledger, rungs = self._ledger, self._rungs
        key = ledger.final_candidate() if ctx.trials else None
        tried_on_all = any(rungs.of(t.fraction) == rungs.top for t in ctx.trials)
        if ctx.trials and (key is not None or tried_on_all):
            if key is None:
                return []  # every trial failed, on all rows too; the base reports it
            if ctx.max_time is not None and not ledger.final_in_reach(
                key,
                final_deadline(ctx.max_time) - ctx.elapsed(),
                ctx.n_splits,
                ctx.n_jobs_effective,
            ):
                self._final_out_of_reach = True
                return []
            params = ledger.params(key)
        elif not last:
            return []
        elif ctx.trials:
            # every trial failed, on subsets only, where the failures may be
            # the subsets' (a class too rare for an inner cross-validation):
            # the first configuration on all rows tells
            params = dict(ctx.trials[0].params)
        else:
            # no trial at all (n_iter=1): one random configuration
            x = random_points(ctx, ctx.X(), 1)
            params = ctx.space.from_unit(x)[0]
        self._final_out_of_reach = False
        trial = rung_trial(rungs, params, rungs.top, it, "final")
        trial.final = True
        return [trial]

    def _more_results(self, ctx: SearchContext) -> dict[str, list]:
        # the answer is chosen next, from the ledger's incumbent: it must
        # have read the trials that finished after the last proposal
        self._ledger.absorb(ctx.trials)
        more = super()._more_results(ctx)
        more["rung"] = self._rungs.of_many([t.fraction for t in ctx.trials]).tolist()
        return more

    def _select_best(self, results: dict, refit_metric: str) -> int:
        # the incumbent: the best on all data (or on the rung below, when it
        # beats every score there), or with no success there the best over
        # the two highest rungs climbed, never the luckiest of many
        # configurations on a few rows
        row = None if callable(self.refit) else self._ledger.incumbent_row()
        if row is None:
            return super()._select_best(results, refit_metric)
        if results["resource_fraction"][row] < 1.0:
            n_rows = results["n_resources"][row]
            if self._ledger.incumbent[0] in self._ledger.stopped:
                why = FINAL_STOPPED
            elif self._ledger.successes(self._rungs.top):
                why = (
                    "its score there beats every score on all data, and it "
                    "was not measured on all data in time"
                )
            elif self._final_out_of_reach:
                why = FINAL_NOT_STARTED
            else:
                why = NO_FULL_SUCCESS
            warn_answer_on_subset("HalvingBayesSearchCV", n_rows, why)
        return int(row)

    def _end_search(self, ctx: SearchContext, results: dict) -> None:
        ledger = self._ledger
        ledger.absorb(ctx.trials)
        self.incumbent_trajectory_ = list(ledger.incumbent_trajectory)
        self.base_rung_trajectory_ = list(ledger.base_trajectory)
        self.base_rung_ = ledger.base
        self.rung_agreement_ = dict(ledger.agreements)
        self.n_resources_ = list(self._rungs.rows)
        self.max_resources_ = self._rungs.rows[-1]
