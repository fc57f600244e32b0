"""The lead rung of HalvingBayesSearchCV: a share of the fit time for plain
Bayesian optimisation on one large subset, with a GP of that subset's trials
alone.

Where learning curves cross, the settings best on all rows rank low on the
small rungs, and neither promotions nor a model fitted on those rungs ever
carries them up. A GP fitted only on the trials of one large rung is not
misled by the small ones; the lead rung is the largest below all data on
which enough such trials fit in the time. Users' page:
``doc/strategies/halving.rst``.
"""

from __future__ import annotations

import math

from .._loop import final_deadline
from .._rungs import RungLedger, Rungs
from .._trial import SearchContext, Trial
from ..gp import Matern52
from .bayes import BayesProposer

# Trials of the lead rung that must fit in its share of max_time; a larger
# rung with fewer is random search on a handful of settings.
LEAD_MIN_TRIALS = 8
# Random configurations on the lead rung before its GP proposes (the
# configurations promoted there count towards them).
_N_INITIAL = 3
# Trials on the lead rung up to which the lead GP samples its
# hyperparameters (beyond, a MAP estimate): where lead trials are cheap they
# number in the hundreds, and a sampled GP's proposal (0.14 s at 180 trials)
# cost more than the trial and left the workers waiting for it.
_MCMC_UNTIL = 40
# Lead trials the GPs are fitted on, at most (the best half and a spread of
# the rest): a MAP proposal's cost grows with them, from 11 ms at 40 to 100
# trials to 43 ms past 500 (magic, 540-row rung), a third of such a trial, and
# the search's process then takes a share of the two cores the workers need.
_MAX_OBSERVATIONS = 100
# The lead stays on its rung until the rung's predicted cost is this many
# times what LEAD_MIN_TRIALS allow: early predictions, extrapolated from the
# smallest rungs, move it up and down, and each rung it visits starts its GP
# afresh.
_STAY = 2.0
# Prior of the lead GP's log length scales (unit cube): normal, median 1,
# sd 1, inside the kernel's [0.01, 10]. With the paper's flat prior the GP
# of a few trials read SVC's score as almost flat along gamma and sent trials
# to the corners; replayed on SVC's measured score surfaces (covertype, magic,
# letter, connect_4 subsets, 30 seeds), this prior left a mean regret of
# 1.3 pp after 12 trials against 3.4 pp (doc/strategies/halving.rst).
LEAD_LENGTH_PRIOR = (0.0, 1.0)
# Rungs above the highest with a success that the lead may be put on: the
# cost of fits on more rows is extrapolated, and SVC's grows faster on more
# rows (on covertype, 17,010-row trials were predicted at 17 s from trials on
# 70 and 210 rows, and cost 43 to 60 s).
_REACH = 2
# The lead's share of the fit time where the user leaves it to the search.
AUTO_SHARE = 0.5


def lead_acquisition(timed: bool) -> str:
    """The lead GP's acquisition: EI per second under ``max_time`` (Snoek et
    al. 2012, section 3.2), else EI.

    On one rung a trial's cost depends on the setting alone, and it spreads
    widely: an RBF SVC's lead trials with ``C`` or ``gamma`` on a bound of
    the box cost 2 to 2.7 times those inside it on four of six tasks
    (doc/strategies/halving.rst, "The lead rung's acquisition"). Without
    ``max_time`` the seed must fix the trials, so measured seconds may not
    choose them.
    """
    return "ei_per_second" if timed else "ei"


def auto_share(n_dims: int) -> float:
    """The lead's share for ``lead_share="auto"``: ``AUTO_SHARE`` where its
    ``LEAD_MIN_TRIALS`` trials give its GP at least 4 per input dimension,
    else 0.

    With five parameters (HistGradientBoosting, 60 s) its 5 to 20 trials
    (3 of them random) were too few for its GP, and the search without them
    answered better on three of four tasks (doc/strategies/halving.rst,
    ``lead_share`` under "Parameters that matter").
    """
    return AUTO_SHARE if 4 * n_dims <= LEAD_MIN_TRIALS else 0.0


class LeadRung:
    """Which rung leads, when a lead trial is due, and what it evaluates.

    Parameters
    ----------
    share : float
        Share of the search's fit time (summed over splits, running trials
        at their predicted cost) that lead trials may take; without
        ``max_time``, share of its training rows.
    rungs : Rungs
        The rung ladder.
    seed : int
        Seeds the lead GPs and their random starts (one per rung).
    """

    def __init__(self, share: float, rungs: Rungs, seed: int) -> None:
        self.share = float(share)
        self.rungs = rungs
        self.seed = seed
        # one proposer per rung the lead has been on: its own random start
        # (one shared design would run the same configurations again on each
        # rung the lead moves to) and its own MCMC chain
        self._proposers: dict[int, BayesProposer] = {}
        # the rung the lead is on (None before its first proposal)
        self._current: int | None = None
        # Kept from the finished trials read so far by _read (they are only
        # ever appended, and due() asks at every free slot; rebuilt at each
        # proposal instead, with lead trials in the hundreds, the lookups
        # cost half as much as the lead GP's own fit): the (lead, all) cost,
        # the trials by rung in finishing order, and the rung of the latest
        # lead trial (a resumed search's lead rung).
        self._n_read = 0
        self._spent = [0.0, 0.0]
        self._by_rung: dict[int, list[Trial]] = {}
        self._latest: int | None = None

    def _read(self, ctx: SearchContext) -> None:
        new = ctx.trials[self._n_read :]
        self._n_read = len(ctx.trials)
        timed = ctx.max_time is not None
        for t, j in zip(new, self.rungs.of_many([t.fraction for t in new])):
            lead = t.extras.get("role") == "lead"
            cost = t.cost if timed else t.fraction
            self._spent[1] += cost
            self._spent[0] += cost if lead else 0.0
            self._by_rung.setdefault(int(j), []).append(t)
            if lead:
                self._latest = int(j)

    def rung(self, ctx: SearchContext, ledger: RungLedger) -> int | None:
        """The highest rung above the base and below all data, at most
        ``_REACH`` rungs above the highest with a success, on which
        ``LEAD_MIN_TRIALS`` new configurations are predicted to fit in the
        lead's share of ``max_time`` less the time kept for the final
        all-data evaluation, on the search's workers (without ``max_time``,
        the rung below all data); None when there is none or nothing to
        predict its cost from. A lead already on a rung above the base stays
        there while that rung is predicted to cost at most ``_STAY`` times
        as much."""
        top, base = self.rungs.top, ledger.base
        if self.share <= 0 or base + 1 >= top:
            return None
        if ctx.max_time is None:
            return top - 1
        searched = ledger.seconds_allowed(
            ctx.max_time,
            ctx.max_time,
            final_deadline(ctx.max_time) - ctx.max_time,
            ctx.n_splits,
            ctx.n_jobs_effective,
        )
        budget = self.share * searched * ctx.n_jobs_effective / LEAD_MIN_TRIALS
        current = self._current_rung(ctx)
        measured = ledger.highest_success()
        highest = top - 1 if measured is None else min(top - 1, measured + _REACH)
        for k in range(highest, base, -1):
            cost = ledger.predicted_cost(None, k)
            if cost is None:
                continue
            if cost <= budget or (k == current and cost <= _STAY * budget):
                return k
        return None

    def _current_rung(self, ctx: SearchContext) -> int | None:
        if self._current is None:
            # a resumed search: the rung of its latest lead trial
            self._read(ctx)
            for t in reversed(ctx.pending):
                if t.extras.get("role") == "lead":
                    self._current = self.rungs.of(t.fraction)
                    break
            else:
                self._current = self._latest
        return self._current

    def due(self, ctx: SearchContext, ledger: RungLedger, chosen: list[Trial]) -> bool:
        """Whether the next trial should be a lead trial (the search's
        trials are read in order, as :class:`RungLedger` reads them): the lead trials,
        finished and running (and ``chosen`` in this proposal), have taken
        at most ``share`` of all fit time so far, or without ``max_time`` of
        all training rows (a count that does not depend on the clock, so
        that a seed fixes the sequence of trials)."""
        timed = ctx.max_time is not None
        self._read(ctx)
        lead, total = self._spent
        for t in [*ctx.pending, *chosen]:
            cost = t.fraction
            if timed:
                j = self.rungs.of(t.fraction)
                cost = ledger.predicted_cost(None, j) or 0.0
            total += cost
            lead += cost if t.extras.get("role") == "lead" else 0.0
        return math.isfinite(total) and lead <= self.share * total

    def propose(
        self, ctx: SearchContext, k: int, n: int, it: int, running: list[Trial]
    ) -> list[Trial]:
        """``n`` new configurations for rung ``k``: random at first (a start
        of the rung's own, so that a lead moving between rungs does not run
        the same configurations on each), then, unless most of the rung's
        trials tie at the best score (random again), maximisers of EI of a
        GP on the rung's trials (whatever brought them there), conditioned on the
        trials running there (``running``: the pending ones and those chosen
        in this proposal)."""
        self._current = k
        fraction = float(self.rungs.fractions[k])
        self._read(ctx)
        on_k = list(self._by_rung.get(k, ()))
        here = [t for t in running if self.rungs.of(t.fraction) == k]
        proposer = self._proposers.get(k)
        if proposer is None:
            proposer = self._proposers[k] = BayesProposer(
                acquisition=lead_acquisition(ctx.max_time is not None),
                hyperparameter_sampling="mcmc",
                n_initial_points=_N_INITIAL,
                seed=self.seed + 1 + k,
                mcmc_until=_MCMC_UNTIL,
                max_observations=_MAX_OBSERVATIONS,
                kernel=Matern52(log_length_prior=LEAD_LENGTH_PRIOR),
            )
        trials = proposer.ask(
            ctx, on_k, n, fraction=fraction, iteration=it, pending=here
        )
        for t in trials:
            t.extras.setdefault("acquisition_value", math.nan)
            t.extras["role"] = "lead"
        return trials
