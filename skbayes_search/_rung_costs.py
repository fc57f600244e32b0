"""What the halving search's finished trials say about trial costs.

:class:`RungCosts` is the cost side of
:class:`~skbayes_search._rungs.RungLedger`: a trial's predicted cost on any
rung, whether it fits in the time a search has, and the time kept for the
incumbent's all-data evaluation. It reads the ledger's per-rung tables
(``_scores``, ``_costs``, ``_done``) and shares ``_cost_model.py``'s rules
with FABOLAS.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._cost_model import (
    RESERVE_MAX_SHARE,
    cost_curve,
    in_reach,
    own_scaled_cost,
    reserve_seconds,
    scaled_cost,
    wall_seconds,
)
from ._fidelity import MIN_PAIRS

__all__ = ["RungCosts"]


class RungCosts:
    """Cost questions of a :class:`~skbayes_search._rungs.RungLedger`.

    A mixin: the ledger holds, per rung, the scores (``_scores``: key ->
    score, nan for a failure) and costs (``_costs``) of its trials, the rungs
    each configuration finished on (``_done``), the ladder (``rungs``), the
    incumbent and ``answer_measured()``, and the caches ``_table``,
    ``_curve`` and ``_medians`` that it clears whenever it reads a trial.
    """

    rungs: Any
    incumbent: tuple[bytes, int, float] | None
    base: int
    factor: float
    _scores: list[dict[bytes, float]]
    _costs: list[dict[bytes, float]]
    _cost_steps: list[dict[bytes, float]]
    _done: dict[bytes, set[int]]
    _table: tuple[list[float], list[float], list[bytes]] | None
    _curve: tuple[float, np.ndarray] | None
    _medians: list[float | None] | None

    def _measure_cost_steps(self, key: bytes, k: int) -> None:
        for j in (k - 1, k):
            if 0 <= j < len(self._cost_steps):
                low, high = self._success_cost(key, j), self._success_cost(key, j + 1)
                if low is not None and high is not None and low > 0 and high > 0:
                    self._cost_steps[j][key] = math.log(high / low)
                else:
                    self._cost_steps[j].pop(key, None)

    def _success_cost(self, key: bytes, k: int) -> float | None:
        score = self._scores[k].get(key, math.nan)
        return self._costs[k][key] if math.isfinite(score) else None

    def step_cost_ratio(self, k: int) -> float | None:
        """Median over configurations of their cost on rung ``k + 1`` over
        their cost on rung ``k`` (None before ``MIN_PAIRS`` of them)."""
        if not 0 <= k < len(self._cost_steps):
            return None
        logs = list(self._cost_steps[k].values())
        return math.exp(float(np.median(logs))) if len(logs) >= MIN_PAIRS else None

    def cheap_step(self, k: int) -> bool:
        """Whether starting new configurations on rung ``k + 1`` instead of
        rung ``k`` screens at least as many for the same fit time.

        Screening ``n`` on rung ``k`` and promoting the top ``1 / factor``
        costs ``n * c_k + n / factor * c_{k+1}``; the same time screens
        ``n * (c_k / c_{k+1} + 1 / factor)`` on rung ``k + 1``, at least
        ``n`` when the step's cost ratio (:meth:`step_cost_ratio`) is at
        most ``factor / (factor - 1)``, and each of them on more rows. Where
        a fit's cost barely grows with its rows (the trees of a boosted
        model, a fixed scoring cost on the full validation rows), the lower
        rung buys nothing.
        """
        ratio = self.step_cost_ratio(k)
        return ratio is not None and ratio <= self.factor / (self.factor - 1.0)

    def cost(self, key: bytes) -> tuple[int, float] | None:
        """A configuration's highest successful rung and its cost there."""
        for k in sorted(self._done.get(key, ()), reverse=True):
            if math.isfinite(self._scores[k][key]):
                return k, self._costs[k][key]
        return None

    def rung_costs(self, k: int) -> list[float]:
        """Costs of rung ``k``'s successful trials."""
        return [
            self._costs[k][key]
            for key, s in self._scores[k].items()
            if math.isfinite(s)
        ]

    def _cost_table(self) -> tuple[list[float], list[float], list[bytes]]:
        """Fraction, cost and key of every successful trial (not to be
        modified: the lists are kept until the next trial is read)."""
        if self._table is not None:
            return self._table
        fractions, costs, keys = [], [], []
        ladder = self.rungs.fractions.tolist()
        for k, scores in enumerate(self._scores):
            for key, s in scores.items():
                if math.isfinite(s):
                    fractions.append(ladder[k])
                    costs.append(self._costs[k][key])
                    keys.append(key)
        self._table = fractions, costs, keys
        return self._table

    def seconds_allowed(
        self,
        time_left: float,
        max_time: float,
        grace: float,
        n_splits: int,
        n_jobs: int,
    ) -> float:
        """Wall seconds a trial started now may take.

        While no configuration has been measured on all data: the time left
        less the incumbent's all-data evaluation (at most half of
        ``max_time``). When that evaluation is predicted, with its safety
        margin, to outlast what the search could ever keep for it (half of
        ``max_time`` plus the ``grace`` the final trial gets past it),
        keeping time would most likely only shorten the search: nothing is
        kept. The margin counts here too: SVC fits on tens of thousands of
        rows grow faster than the curve fitted on the smaller subsets says.
        Nor is anything kept once the evaluation is out of reach of the time
        left and the ``grace`` (:meth:`final_in_reach`): it will not start.
        """
        if self.incumbent is None or self.answer_measured():
            return time_left
        inc = self.incumbent[0]
        if not self.final_in_reach(inc, time_left + grace, n_splits, n_jobs):
            return time_left
        fractions, costs, keys = self._cost_table()
        own = [key == inc for key in keys]
        reserve = reserve_seconds(fractions, costs, own, n_splits, n_jobs)
        most = RESERVE_MAX_SHARE * max_time
        if reserve > most + grace:
            return time_left
        return time_left - min(reserve, most)

    def final_in_reach(
        self, key: bytes, seconds: float, n_splits: int, n_jobs: int
    ) -> bool:
        """Whether an all-data trial of ``key``, started now on ``n_jobs``
        workers of their own, may finish within ``seconds``: :func:`in_reach`
        of its :meth:`predicted_cost`."""
        summed = self.predicted_cost(key, self.rungs.top)
        return in_reach(summed, seconds, n_splits, n_jobs)

    def predicted_cost(self, key: bytes | None, k: int) -> float | None:
        """Predicted cost (summed over splits) of a configuration's trial on
        rung ``k`` (None: a new configuration): its own costs scaled up
        (:func:`own_scaled_cost`), or for a new one the median cost of the
        highest rung at or below ``k`` with a success, scaled along the
        fitted cost curve; None before any success at or below ``k``."""
        fractions, costs, _ = self._cost_table()
        if not costs:
            return None
        if self._curve is None:
            self._curve = cost_curve(fractions, costs)
        c0, curve = self._curve
        ladder = self.rungs.fractions
        own = None if key is None else self.cost(key)
        if own is not None and k > own[0]:
            mine = [
                j
                for j in sorted(self._done.get(key, ()))
                if math.isfinite(self._scores[j][key])
            ]
            return own_scaled_cost(
                c0,
                curve,
                [ladder[j] for j in mine],
                [self._costs[j][key] for j in mine],
                ladder[k],
            )
        if own is None:
            if self._medians is None:
                self._medians = [
                    float(np.median(c)) if (c := self.rung_costs(j)) else None
                    for j in range(len(self._scores))
                ]
            done = [j for j in range(k, -1, -1) if self._medians[j] is not None]
            if not done:
                return None
            own = done[0], self._medians[done[0]]
        j, cost = own
        return float(scaled_cost(c0, curve, ladder[j], cost, ladder[k]))

    def fits_in(
        self,
        seconds: float,
        n_splits: int,
        n_jobs: int,
        elapsed: float = math.inf,
    ) -> Callable[[bytes | None, int], bool]:
        """``fits(key, rung)``: whether a trial of a configuration (None: a
        new one) on that rung is predicted (:meth:`predicted_cost`) to take
        at most ``seconds`` and, above the base rung, at most ``elapsed``
        (the seconds the search has run); always, before there is anything
        to predict from.

        The second limit keeps a young search anytime: a trial that would
        hold the workers for longer than the search has run waits until
        the search has run as long, and the workers meanwhile take the small
        rungs that improve a poor incumbent within seconds (a doubling
        rule: no trial costs more than all before it).
        """
        limit = min(seconds, elapsed)
        if not math.isfinite(limit):
            return lambda key, k: True

        def fits(key: bytes | None, k: int) -> bool:
            summed = self.predicted_cost(key, k)
            if summed is None:
                return True
            wall = wall_seconds(summed, n_splits, n_jobs)
            return wall <= seconds and (k <= self.base or wall <= elapsed)

        return fits
