"""What FABOLAS runs besides its eq. 7 proposals: the initial design, the
probes that check its subsets, and the final full-data evaluations.

:class:`FabolasPlan` is a part of :class:`~skbayes_search.FabolasSearchCV`
(a mixin: it reads the search's settings and fitted state); the design and
the constants are explained in ``doc/design/fabolas.rst``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._cost_model import RESERVE_MAX_SHARE, together_seconds
from .._loop import final_deadline
from .._numerics import single_blas_thread
from .._trial import SearchContext, Trial
from .._validation import check_fractions
from ._fabolas_trust import (
    FINAL_LOW_TRUST,
    PROBE_SHARE,
    PROBE_SPREAD,
    rank_contenders,
)

__all__ = ["FabolasPlan"]


class FabolasPlan:
    """The design, probes and final evaluations of FABOLAS (a mixin)."""

    # -- the initial design ----------------------------------------------------
    def _design_plan(
        self, ctx: SearchContext, params_list: list[dict]
    ) -> list[tuple[dict, float]]:
        """``(params, fraction)`` of every design trial, in dispatch order."""
        if self.fallback_:
            return [(p, 1.0) for p in params_list]
        if self._ladder():
            low, high = self._trust.fraction(0), self._trust.fraction(1)
            return [(p, f) for p in params_list for f in (low, high)]
        fractions = check_fractions(self.initial_fractions, "initial_fractions")
        s_min = self.min_resources_ / ctx.n_train
        return [
            (p, float(min(1.0, max(fractions[i % fractions.size], s_min))))
            for i, p in enumerate(params_list)
        ]

    def _pending_design(self, ctx: SearchContext) -> list[int]:
        """Design trials neither finished nor running (matched by
        configuration and rows, not counted: they finish in any order and a
        resumed search runs the rest)."""
        n = ctx.n_train
        # compared by unit-cube encoding: parameter dicts may hold values
        # (arrays) whose == is not a truth value
        seen = {(t.x.tobytes(), t.n_resources) for t in ctx.trials}
        seen |= {
            (x.tobytes(), round(t.fraction * n))
            for x, t in zip(ctx.X_pending(), ctx.pending)
        }
        design = ctx.space.to_unit([p for p, _ in self._design])
        # a size left for its failures is left by the design too
        low = 0 if self._trust is None else self._trust.rows(self._trust.bound)
        return [
            i
            for i, (u, (_, f)) in enumerate(zip(design, self._design))
            if (u.tobytes(), round(f * n)) not in seen and round(f * n) >= low
        ]

    def _exhausted(self, ctx: SearchContext) -> bool:
        """In the fallback (every trial on all data), whether every
        configuration of a finite space has been evaluated or is running."""
        if not self.fallback_ or not np.isfinite(ctx.space.cardinality):
            return False
        seen = np.vstack([ctx.X(), ctx.X_pending()])
        return len({x.tobytes() for x in seen}) >= ctx.space.cardinality

    def _design_trials(
        self, ctx: SearchContext, n_slots: int, it: int, pending: list[int]
    ) -> list[Trial]:
        if not ctx.space.n_dims or self._exhausted(ctx):
            # one configuration (a space of fixed values, or {}): nothing to
            # model or design, _finalize evaluates it on all data; or, in the
            # fallback, every configuration already is
            return []
        if pending:
            chosen = [self._design[i] for i in pending[:n_slots]]
            role = "design"
        else:
            # too few successes for a model: keep exploring at random, among
            # configurations neither evaluated nor running, on the smallest
            # size not left for its failures
            seen = np.vstack([ctx.X(), ctx.X_pending()])
            U = ctx.space.sample_unseen(n_slots, ctx.rng, seen)
            trust = self._trust
            fraction = 1.0 if self.fallback_ else trust.fraction(trust.bound)
            chosen = [(p, fraction) for p in ctx.space.from_unit(U)]
            role = "random"
        return [
            Trial(params, float(f), iter=it, extras=self._extras(role))
            for params, f in chosen
        ]

    def _extras(self, role: str, **values: float) -> dict[str, Any]:
        """A trial's extra ``cv_results_`` columns."""
        trust = self._trust
        extras = {
            "role": role,
            "min_fraction": 1.0 if trust is None else trust.fraction(trust.bound),
            "predicted_score": math.nan,
            "predicted_full_score": math.nan,
            "acquisition_value": math.nan,
        }
        extras.update(values)
        return extras

    def _s_low(self) -> float:
        """The model input ``s~`` of the smallest trusted size."""
        if self._trust is None:
            return 0.0
        return float(self._axis.to_s(self._trust.fraction(self._trust.bound)))

    # -- probes ----------------------------------------------------------------
    def _probe(
        self, ctx: SearchContext, it: int, costs: Any, max_cost: float
    ) -> Trial | None:
        """A probe, when none runs and it fits in the time left: the
        configuration the model rates best among those evaluated at the
        bound, if it was never probed; else, while the bound has too few
        probes to be judged or probes have taken at most ``PROBE_SHARE`` of
        the cost so far, the best one not probed yet."""
        trust = self._trust
        level = None if trust is None else trust.probe_level()
        if level is None or any(t.extras.get("role") == "probe" for t in ctx.pending):
            return None
        rows, fraction = trust.rows(level), trust.fraction(level)
        # configurations on the probes' size or above, finished or running
        high = [t.x for t in ctx.trials if t.n_resources >= rows]
        high += [
            x
            for x, t in zip(ctx.X_pending(), ctx.pending)
            if round(t.fraction * ctx.n_train) >= rows
        ]
        high = np.array(high).reshape(-1, ctx.space.n_dims)

        def probed(x: np.ndarray) -> bool:
            # near-copies of a probed configuration tie in score, and ties
            # ranked apart by the model's noise would read as disagreement
            return bool(len(high)) and np.abs(high - x).max(axis=1).min() < PROBE_SPREAD

        at_bound = trust.evaluated_at(ctx.trials, trust.bound)
        predicted = {i: v for i, v in self._pred_full.items() if i < len(ctx.trials)}
        ranked = rank_contenders(ctx.trials, at_bound, predicted)
        fresh = [r for r, _ in ranked if not probed(ctx.trials[r].x)]
        if not fresh:
            return None
        if ranked[0][0] != fresh[0]:
            # the favourite is measured on the probes' size already
            spent = self._spent(ctx)
            on_probes = sum(
                c for c, t in zip(spent, ctx.trials) if t.extras.get("role") == "probe"
            )
            if trust.probes_judged() and on_probes > PROBE_SHARE * float(spent.sum()):
                return None
        row = fresh[0]
        u = self._axis.with_s(ctx.trials[row].x[None, :], self._axis.to_s(fraction))
        if costs is not None and costs.cautious(u, [fraction])[0] > max_cost:
            return None
        extras = self._extras(
            "probe",
            predicted_score=self._predict_score(u),
            predicted_full_score=self._pred_full.get(row, math.nan),
        )
        return Trial(dict(ctx.trials[row].params), fraction, iter=it, extras=extras)

    # -- the final evaluations ---------------------------------------------------
    def _n_final(self) -> int:
        """Full-data evaluations kept for the end: more once a size misled."""
        trust = self._trust
        return FINAL_LOW_TRUST if trust is not None and trust.low_trust else 1

    def _n_keep(self, ctx: SearchContext) -> int:
        """Trials of the count budget kept for the final evaluations: one,
        or as many as contenders still unmeasured on all data."""
        ranked = self._contenders(ctx)
        if not ranked:
            return self._n_final()
        return max(1, len(self._final_candidates(ctx, ranked[0][0])))

    def _full_data_row(self, ctx: SearchContext, inc: int) -> int | None:
        """The latest successful all-data trial of a row's configuration."""
        x = ctx.trials[inc].x
        rows = [
            i
            for i, t in enumerate(ctx.trials)
            if t.fraction >= 1.0 and not t.failed and np.isfinite(t.score)
        ]
        return next((i for i in rows[::-1] if np.array_equal(ctx.trials[i].x, x)), None)

    def _final_candidates(self, ctx: SearchContext, inc: int) -> list[int]:
        """Rows of the incumbent and, once a size misled, the next
        contenders, whose configurations were never tried on all data."""
        key = ctx.trials[inc].x.tobytes()
        others = [
            r for r, _ in self._contenders(ctx) if ctx.trials[r].x.tobytes() != key
        ]
        tried = {t.x.tobytes() for t in ctx.trials if t.fraction >= 1.0}
        rows = [inc, *others][: self._n_final()]
        return [r for r in rows if ctx.trials[r].x.tobytes() not in tried]

    def _own(self, ctx: SearchContext, row: int) -> list[bool]:
        """Which successful trials (the cost model's) are of ``row``'s
        configuration."""
        x = ctx.trials[row].x
        ok = [t for t in ctx.trials if not t.failed and np.isfinite(t.score)]
        return [np.array_equal(t.x, x) for t in ok]

    def _x_full(self, ctx: SearchContext, row: int) -> np.ndarray:
        """The model input of ``row``'s configuration on all data."""
        return self._axis.with_s(ctx.trials[row].x[None, :], 1.0)

    def _full_seconds(self, ctx: SearchContext, costs: Any, rows: list[int]) -> list:
        """Cautious wall seconds of each row's configuration on all data."""
        return [
            costs.full_data_seconds(self._x_full(ctx, r), self._own(ctx, r))
            for r in rows
        ]

    def _final_in_reach(
        self, ctx: SearchContext, costs: Any, row: int, seconds: float
    ) -> bool:
        """Whether ``row``'s configuration, evaluated on all data from now,
        may finish within ``seconds`` (``CostModel.final_in_reach``)."""
        return costs.final_in_reach(
            self._x_full(ctx, row), self._own(ctx, row), seconds
        )

    def _final_room(self, ctx: SearchContext) -> float:
        """Seconds a final evaluation started at ``max_time`` at the latest
        would have: the time left, and the grace period after it."""
        return max(ctx.time_left(), 0.0) + final_deadline(ctx.max_time) - ctx.max_time

    def _final_reserve(self, ctx: SearchContext, costs: Any, inc: int) -> float:
        """Wall seconds kept for the first final evaluation, at most
        ``RESERVE_MAX_SHARE`` of ``max_time``; more evaluations run at the
        end only if the time left then covers them (``_affordable``). Nothing
        once that evaluation is out of reach of the time left and the grace
        period: the search then spends it all on subsets."""
        rows = [] if self.fallback_ else self._final_candidates(ctx, inc)[:1]
        if not rows:
            return 0.0
        room = self._final_room(ctx)
        if not self._final_in_reach(ctx, costs, rows[0], room):
            return 0.0
        seconds = self._full_seconds(ctx, costs, rows)[0]
        return min(seconds, RESERVE_MAX_SHARE * ctx.max_time)

    def _in_reach(self, ctx: SearchContext, rows: list[int]) -> list[int]:
        """The final rows, or none when the first one's evaluation is
        predicted not to finish by the final trials' deadline (the answer
        then rests on a subset, and ``_select_best`` warns)."""
        self._final_out_of_reach = False
        if not rows or ctx.max_time is None:
            return rows
        room = final_deadline(ctx.max_time) - ctx.elapsed()
        if self._final_in_reach(ctx, self._cost_seconds(ctx), rows[0], room):
            return rows
        self._final_out_of_reach = True
        return []

    def _affordable(self, ctx: SearchContext, rows: list[int]) -> list[int]:
        """The final rows the count budget and the time left allow; the
        incumbent's evaluation always runs once in reach (``_in_reach``)."""
        rows = rows[: ctx.n_remaining()]
        if ctx.max_time is None or len(rows) <= 1:
            return rows
        seconds = self._full_seconds(ctx, self._cost_seconds(ctx), rows)
        room = self._final_room(ctx)
        keep = 1
        for j in range(2, len(rows) + 1):
            need = together_seconds(
                max(seconds[:j]), j, ctx.n_splits, ctx.n_jobs_effective
            )
            if need > room:
                break
            keep = j
        return rows[:keep]

    def _finalize(self, ctx: SearchContext) -> list[Trial]:
        self._sync(ctx)
        self._best_row = None
        ok = np.isfinite(ctx.scores())
        if not ok.any():
            if any(t.fraction >= 1.0 for t in ctx.trials):
                return []  # every trial failed, on all rows too; the base reports it
            # no trial at all (n_iter=1), or every one failed on subsets only,
            # where the failures may be the subsets': the first design point
            # on all rows tells
            self._best_row = None if ctx.trials else 0
            params = self._design[0][0]
            return [Trial(params, 1.0, iter=self._n_asks, extras=self._extras("final"))]
        if ok.sum() >= 2:
            with single_blas_thread():
                self._fit_models(ctx)
                inc = self._update_incumbent(ctx)
        else:
            # a single success: nothing to model, it is the incumbent
            inc = int(np.flatnonzero(ok)[0])
        # the answer if no full-data trial succeeds: the incumbent on its
        # largest trusted fraction
        x = ctx.trials[inc].x
        own = [i for i in np.flatnonzero(ok) if np.array_equal(ctx.trials[i].x, x)]
        self._best_row = int(max(own, key=lambda i: (ctx.trials[i].fraction, i)))
        trials = []
        rows = self._in_reach(ctx, self._final_candidates(ctx, inc))
        for r in self._affordable(ctx, rows):
            predicted = self._pred_full.get(r, math.nan)
            self._pred_full[len(ctx.trials) + len(trials)] = predicted
            extras = self._extras("final", predicted_full_score=predicted)
            trials.append(
                Trial(dict(ctx.trials[r].params), 1.0, iter=self._n_asks, extras=extras)
            )
        return trials
