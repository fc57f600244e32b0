"""How FABOLAS reads its trials and proposes: the two GPs over (configuration,
fraction), the incumbent among trusted configurations, and eq. 7 maximised on
the trusted sizes.

:class:`FabolasModel` is a part of :class:`~skbayes_search.FabolasSearchCV`
(a mixin: it reads the search's settings and fitted state); the design is
explained in ``doc/design/fabolas.rst``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

import numpy as np

from .._trial import SearchContext, Trial
from ..acquisition.entropy import entropy_search_per_cost, representers_by_ei
from ..gp.fabolas_kernels import error_kind, loss_to_scores, scores_to_loss
from ..optimize import propose_batch
from ._fabolas_cost import CostModel, overhead_seconds, row_cost
from ._fabolas_trust import rank_contenders

__all__ = ["FabolasModel"]

# Random points among which the representers are drawn.
_N_POOL = 512
# Candidates screened on few draws; the best _N_REFINE are scored on all.
_N_CANDIDATES, _N_REFINE = 256, 16
# Best configurations whose neighbourhoods seed the representers and search.
_N_SEEDS = 3
# The Monte Carlo acquisition is piecewise constant: polishing is wasted.
_N_POLISH = 0


class FabolasModel:
    """The models, incumbent and eq. 7 proposals of FABOLAS (a mixin)."""

    # -- what the finished trials say -------------------------------------------
    def _sync(self, ctx: SearchContext) -> None:
        """Read the trials finished since the last call: the trusted sizes,
        and an incumbent after each of them."""
        for n in range(self._n_synced + 1, len(ctx.trials) + 1):
            record = ctx.trials[n - 1]
            if self._trust is not None:
                self._trust.absorb(record)
            self._note_incumbent(ctx, n, record.elapsed_time)
        self._n_synced = len(ctx.trials)

    def _supported(self, trials: list) -> np.ndarray:
        if self._trust is None:
            return np.array([not t.failed and np.isfinite(t.score) for t in trials])
        return self._trust.supported(trials)

    def _contenders(self, ctx: SearchContext, n: int | None = None) -> list:
        trials = ctx.trials if n is None else ctx.trials[:n]
        predicted = {i: v for i, v in self._pred_full.items() if i < len(trials)}
        return rank_contenders(trials, self._supported(trials), predicted)

    def _note_incumbent(self, ctx: SearchContext, n: int, elapsed: float) -> int | None:
        ranked = self._contenders(ctx, n)
        if not ranked:
            return None
        row, value = ranked[0]
        self.incumbent_trajectory_.append(
            (elapsed, dict(ctx.trials[row].params), value)
        )
        return row

    def _fit_models(self, ctx: SearchContext) -> np.ndarray:
        """Fit both models; return every finished trial's model input."""
        fractions = np.array([t.n_resources / ctx.n_train for t in ctx.trials])
        Xin = self._axis.with_s(ctx.X(), self._axis.to_s(fractions))
        scores = ctx.scores()
        self._kind = error_kind(scores)
        used = np.ones(len(scores), dtype=bool)
        if self._trust is not None:
            # a failure below the trusted size is the size's, not the
            # configuration's (that is one way the bound rises): its worst-
            # score penalty would steer the model from configurations that
            # are fine on more rows
            trust = self._trust
            below = [trust.level_of(t.n_resources) < trust.bound for t in ctx.trials]
            used = np.isfinite(scores) | ~np.array(below, dtype=bool)
        self._loss_gp.fit(Xin[used], scores_to_loss(scores[used], self._kind))
        if self._fit_cost_gp:
            self._cost_gp.fit(Xin[used], np.log(ctx.costs()[used]))
        return Xin

    def _predict_loss(self, U: np.ndarray) -> np.ndarray:
        """Mean predicted loss at model inputs, averaged over hyperparameter
        samples."""
        return self._loss_gp.predict_mean(U).mean(axis=0)

    def _predict_full_loss(self, X: np.ndarray) -> np.ndarray:
        return self._predict_loss(self._axis.with_s(X, 1.0))

    def _predict_score(self, U: np.ndarray) -> float:
        return float(loss_to_scores(self._predict_loss(U), self._kind)[0])

    def _update_incumbent(self, ctx: SearchContext) -> int:
        """Refresh predictions at s = 1; return the incumbent's trial index."""
        scores = loss_to_scores(self._predict_full_loss(ctx.X()), self._kind)
        self._pred_full.update((i, float(v)) for i, v in enumerate(scores))
        return self._note_incumbent(ctx, len(ctx.trials), ctx.elapsed())

    def _cost_seconds(self, ctx: SearchContext) -> CostModel:
        ok = [t for t in ctx.trials if not t.failed and np.isfinite(t.score)]
        return CostModel(
            self._cost_gp,
            [t.fraction for t in ok],
            ctx.costs(ok),
            ctx.n_splits,
            ctx.n_jobs_effective,
        )

    def _budget(self, ctx: SearchContext, inc: int) -> tuple[Any, float]:
        """The cost model (None when no GP on seconds is fitted), and the
        seconds a proposed trial may take: with ``max_time``, what is left
        after one more proposal and the final full-data evaluations."""
        costs = self._cost_seconds(ctx) if self._fit_cost_gp else None
        if ctx.max_time is None:
            return costs, np.inf
        reserve = self._final_reserve(ctx, costs, inc)
        return costs, ctx.time_left() - ((self._last_overhead or 0.0) + reserve)

    def _spent(self, ctx: SearchContext) -> np.ndarray:
        """Each finished trial's cost in the unit of ``cost_model``."""
        if self.cost_model == "rows":
            fractions = [t.n_resources / ctx.n_train for t in ctx.trials]
            return row_cost(fractions, ctx.n_train, ctx.n_splits)
        return ctx.costs()

    # -- the acquisition -----------------------------------------------------
    def _top(self, X_obs: np.ndarray) -> np.ndarray:
        """Indices of the configurations with the lowest predicted full loss."""
        return np.argsort(self._predict_full_loss(X_obs), kind="stable")[:_N_SEEDS]

    def _representers(self, ctx: SearchContext, inc: int) -> np.ndarray:
        """Points at s = 1 where the full-data minimum plausibly lies."""
        rng, X_obs, n_x = ctx.rng, ctx.X(), self._n_x
        best = X_obs[self._top(X_obs)]
        local = best[:, None, :] + 0.05 * rng.standard_normal((len(best), 32, n_x))
        random = ctx.space.sample(_N_POOL, rng)
        near = ctx.space.snap(np.clip(local.reshape(-1, n_x), 0.0, 1.0))
        pool = np.unique(np.vstack([X_obs[[inc]], random, near, X_obs]), axis=0)
        inc_idx = int(np.argmin(np.abs(pool - X_obs[inc]).max(axis=1)))
        Zin, x_inc = self._axis.with_s(pool, 1.0), self._axis.with_s(X_obs[[inc]], 1.0)
        posts, n = self._loss_gp.posteriors, self.n_representers
        return Zin[representers_by_ei(posts, Zin, x_inc, n, rng, include=[inc_idx])]

    def _overhead(self, started: float) -> float:
        if self.cost_model == "rows":
            return 0.0 if self.overhead == "measured" else float(self.overhead)
        return overhead_seconds(self.overhead, self._last_overhead, started)

    def _log_cost(self, ctx: SearchContext) -> Any:
        if self.cost_model == "measured":
            return self._cost_gp.predict_mean
        n_train, n_splits, axis = ctx.n_train, ctx.n_splits, self._axis
        return lambda U: np.log(row_cost(axis.input_fractions(U), n_train, n_splits))[
            None, :
        ]

    def _acquisition(
        self,
        ctx: SearchContext,
        Z: np.ndarray,
        posteriors: list,
        overhead: float,
        costs: Any,
        max_cost: float = np.inf,
        pmap: Any = map,
    ) -> tuple:
        """Screening and precise eq. 7; candidates whose cautious cost exceeds
        ``max_cost`` seconds get ``-inf``."""

        def cautious_cost(U: np.ndarray) -> np.ndarray:
            return costs.cautious(U, self._axis.input_fractions(U))

        return entropy_search_per_cost(
            posteriors,
            Z,
            self._log_cost(ctx),
            ctx.rng,
            overhead=overhead,
            information=self.information,
            cost=None if costs is None else cautious_cost,
            max_cost=max_cost,
            pmap=pmap,
        )

    def _propose(
        self, ctx: SearchContext, n_slots: int, it: int, started: float
    ) -> list[Trial]:
        """One BO iteration: fit, pick the incumbent, maybe a probe, then
        maximise eq. 7 on the trusted sizes."""
        Xin = self._fit_models(ctx)
        inc = self._update_incumbent(ctx)
        costs, max_cost = self._budget(ctx, inc)
        if max_cost <= 0:
            return []
        trials = []
        probe = self._probe(ctx, it, costs, max_cost)
        if probe is not None:
            trials.append(probe)
        if n_slots <= len(trials):
            return trials
        Z = self._representers(ctx, inc)
        overhead = self._overhead(started)
        X_obs = ctx.X()
        top = self._top(X_obs)
        s_low = self._s_low()
        seeds = [Xin[top]]
        if not self.fallback_:
            # the most promising configurations on the cheapest trusted subset
            seeds.append(self._axis.with_s(X_obs[top], s_low))
        posts = self._loss_gp.posteriors
        n_conditioned = 0
        running = list(ctx.pending) + trials
        pending = None
        if running:
            X_run = ctx.space.to_unit([t.params for t in running])
            s_run = self._axis.to_s(np.array([t.fraction for t in running]))
            pending = self._axis.with_s(X_run, s_run)

        def acquisition_for(P: np.ndarray | None) -> tuple:
            nonlocal posts, n_conditioned
            # pending points: each model sees its own predicted mean there, a
            # fantasy that only shrinks the variance, so a batch spreads out
            for u in [] if P is None else P[n_conditioned:]:
                posts = [p.condition(u[None, :], p.mean(u[None, :])) for p in posts]
            n_conditioned = 0 if P is None else len(P)
            return self._acquisition(ctx, Z, posts, overhead, costs, max_cost, pmap)

        def snap(U: np.ndarray) -> np.ndarray:
            U = self._axis.snap_inputs(U, ctx.space.snap)
            if not self.fallback_:
                U[:, self._n_x] = np.maximum(U[:, self._n_x], s_low)
            return U

        # idle workers' threads, but never more than local cores (dask); while
        # trials run, the workers are busy
        n_threads = min(ctx.n_jobs_effective, len(posts), os.cpu_count() or 1)
        if ctx.pending:
            n_threads = 1
        with ThreadPoolExecutor(n_threads) if n_threads > 1 else nullcontext() as pool:
            pmap = map if pool is None else pool.map
            U, values = propose_batch(
                acquisition_for,
                n_slots - len(trials),
                Xin.shape[1],
                rng=ctx.rng,
                snap=snap,
                seeds=np.vstack(seeds),
                exclude=Xin,
                pending=pending,
                n_candidates=_N_CANDIDATES,
                n_polish=_N_POLISH,
                n_refine=_N_REFINE,
            )
        for u, value in zip(U, values):
            x = u[None, : self._n_x]
            fraction = 1.0 if self.fallback_ else self._axis.fraction_of(u[self._n_x])
            extras = self._extras(
                "proposal",
                predicted_full_score=self._predict_score(self._axis.with_s(x, 1.0)),
                predicted_score=self._predict_score(u[None, :]),
                acquisition_value=float(value),
            )
            params = ctx.space.from_unit(x)[0]
            trials.append(Trial(params, float(fraction), iter=it, extras=extras))
        return trials
