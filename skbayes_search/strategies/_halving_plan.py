"""What HalvingBayesSearchCV evaluates at each free slot: a lead trial, a
promotion (with perhaps a neighbour), or a new configuration (with perhaps
a hedge above the base rung), within the time left and the trials left.

The strategy class holds the settings and the state across proposals; this
module decides one proposal from them. Users' page:
``doc/strategies/halving.rst``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from .._fidelity import MIN_PAIRS
from .._rungs import RungLedger, Rungs
from .._trial import SearchContext, Trial
from ..space._unseen import drop_seen
from ._halving_lead import LeadRung
from ._halving_model import RungModel, new_configurations
from ._halving_starts import neighbour, start_rung


def rung_trial(
    rungs: Rungs, params: dict, k: int, it: int, role: str, value: float = np.nan
) -> Trial:
    """A trial of ``params`` on rung ``k``, its role and acquisition value
    recorded with it."""
    fraction = float(rungs.fractions[k])
    extras = {"role": role, "acquisition_value": float(value)}
    return Trial(dict(params), fraction, iter=it, extras=extras)


def finite_space_started(ctx: SearchContext, running: list) -> bool:
    """Whether the space is finite and every configuration in it has
    finished or is running."""
    n_points = ctx.space.cardinality
    # fewer trials than points cannot have started them all
    if not math.isfinite(n_points) or len(ctx.trials) + len(running) < n_points:
        return False
    seen = np.vstack([ctx.X(), np.reshape(running, (len(running), ctx.space.n_dims))])
    return len(drop_seen(seen)) >= n_points


@dataclass
class RungPlan:
    """The settings and shared state one proposal is decided from.

    ``ledger``, ``model`` and ``lead`` are the search's rung bookkeeping
    (with its ladder, ``ledger.rungs``), rung GP and lead rung; the other
    fields mirror :class:`HalvingBayesSearchCV`'s parameters of the same
    names, ``hyperband`` standing for ``start_rungs="hyperband"``.
    """

    ledger: RungLedger
    model: RungModel
    lead: LeadRung
    factor: float
    n_screened: int
    n_initial_points: int
    random_fraction: float
    hedge_fraction: float
    neighbour_fraction: float
    hyperband: bool

    def trials(
        self, ctx: SearchContext, n_slots: int, it: int, room: int, seconds: float
    ) -> list[Trial]:
        """Promotions and new configurations for up to ``n_slots`` free
        slots that fit in ``seconds`` and in ``room`` trials."""
        ledger = self.ledger
        rungs = ledger.rungs
        if seconds <= 0:
            return []
        # under max_time, nothing above the base rung outlasts the search so
        # far (without it, the clock must not choose the trials)
        elapsed = math.inf if ctx.max_time is None else ctx.elapsed()
        fits = ledger.fits_in(seconds, ctx.n_splits, ctx.n_jobs_effective, elapsed)
        busy: dict[bytes, set[int]] = defaultdict(set)
        running = list(ctx.X_pending())
        for t, x in zip(ctx.pending, running):
            busy[x.tobytes()].add(rungs.of(t.fraction))
        trials: list[Trial] = []
        # per new configuration: the rung it starts on, and whether it is a
        # hedge (then with a probe on the base rung: two trials)
        starts: list[tuple[int, bool]] = []
        base = ledger.base
        # never on all rows: a random setting's fit costs most there (for an
        # SVC, most for the worst settings), and promotions measure the
        # answer there; the measurement is on the benchmarks page
        hedge_rung = min(base + 2, rungs.top - 1)
        lead = None
        # probes started on the base rung, each with its hedge: the first
        # MIN_PAIRS new configurations there are all hedged, so that the
        # rung's agreement is judged within a few trials of the screen (at
        # hedge_fraction alone it takes some 25 new configurations on one
        # base rung, more than a one-minute search of a boosted model starts
        # there)
        probes = ledger.n_probes(base) + sum(
            t.extras.get("role") == "probe" and rungs.of(t.fraction) == base
            for t in ctx.pending
        )
        # until the screen is done, nothing climbs and nothing starts above
        # the base rung
        n_succeeded = ctx.n_succeeded()
        # a finite space whose every configuration has started cannot add
        # new ones: its screen is what it holds, and the trials left go to
        # climbing, so that none ends tied below the answer unmeasured
        exhausted = finite_space_started(ctx, running)
        # failed trials count once one has succeeded: where most settings
        # fail on the base rung for its size alone (a PCA asking for more
        # components than the rung has rows), a screen of successes would
        # take the whole budget, and only the hedges it holds back can show
        # that more rows succeed
        n_finished = sum(not t.stopped for t in ctx.trials)
        screened = (
            exhausted
            or n_succeeded >= self.n_screened
            or (n_succeeded > 0 and n_finished >= self.n_screened)
        )
        if screened and n_succeeded >= self.n_initial_points:
            lead = self.lead.rung(ctx, ledger)
        # placeholders of the lead trials: proposed together at the end
        leads: list[Trial] = []
        for _ in range(n_slots):
            n_used = len(trials) + len(leads) + sum(2 if h else 1 for _, h in starts)
            if n_used >= room:
                break
            if (
                lead is not None
                and fits(None, lead)
                and self.lead.due(ctx, ledger, [*trials, *leads])
            ):
                leads.append(rung_trial(rungs, {}, lead, it, "lead"))
                continue
            promotion = (
                ledger.promotion(busy, fits, every=exhausted) if screened else None
            )
            if promotion is not None:
                key, k = promotion
                busy[key].add(k)
                x = np.frombuffer(key)
                running.append(x)
                trials.append(rung_trial(rungs, ledger.params(key), k, it, "promoted"))
                point = None
                if n_used + 1 < room:
                    point = neighbour(
                        ctx,
                        x,
                        k,
                        base=base,
                        top=rungs.top,
                        probability=self.neighbour_fraction,
                        running=running,
                        fits=fits,
                    )
                if point is not None:
                    params = ctx.space.from_unit(point[None, :])[0]
                    trials.append(rung_trial(rungs, params, k, it, "neighbour"))
                continue
            k = start_rung(
                ctx,
                base,
                rungs.top,
                fits,
                hyperband=screened and self.hyperband,
                factor=self.factor,
            )
            if k is None:
                break
            short = self.hedge_fraction > 0 and (
                probes + sum(h for _, h in starts) < MIN_PAIRS
            )
            starts.append(
                (
                    k,
                    k == base
                    and screened
                    and hedge_rung > base
                    and n_used + 2 <= room
                    and fits(None, hedge_rung)
                    and (short or bool(ctx.rng.random() < self.hedge_fraction)),
                )
            )
        for x, value, (k, hedge) in new_configurations(
            ctx,
            self.model,
            ledger,
            running,
            starts,
            n_initial_points=self.n_initial_points,
            random_fraction=self.random_fraction,
        ):
            params = ctx.space.from_unit(x[None, :])[0]
            role = "probe" if hedge else "new"
            trials.append(rung_trial(rungs, params, k, it, role, value))
            if hedge:
                trials.append(rung_trial(rungs, params, hedge_rung, it, "hedge", value))
        if leads:
            running_trials = [*ctx.pending, *trials]
            trials += self.lead.propose(ctx, lead, len(leads), it, running_trials)
        return trials
