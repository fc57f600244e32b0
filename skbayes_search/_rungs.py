"""Rung bookkeeping of asynchronous successive halving with a trusted base rung.

A *rung* is a training-subset size; a configuration climbs the rungs one at a
time, promoted when it ranks in the top ``1 / factor`` of the finished trials
of its rung (ASHA, Li et al. 2020). :class:`Rungs` (from :mod:`._ladder`)
holds the sizes; :class:`RungLedger` reads the finished trials and answers
what the halving search needs: the next promotion, the incumbent, and the
*base rung*, the smallest rung whose ranking is trusted. The base rises when
the paired scores of probe and hedge trials (the same configuration run on
the base rung and on a larger one, never selected by its base-rung score)
disagree in rank (:mod:`skbayes_search._fidelity`), and when the base rung's
scores tie too often to choose what climbs (tiny subsets on which most
settings fit the same trivial model). Everything is derived from the trial
records (fraction, score, the ``role`` extra), so a search resumed from a
store rebuilds the same state.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._fidelity import (
    Agreement,
    Tie,
    agreement_by_level,
    failures_are_the_size,
    find_tie,
    level_gains,
    smallest_trusted_level,
)
from ._ladder import Rungs
from ._rung_costs import RungCosts

__all__ = ["ROLES", "RungLedger", "Rungs"]

#: What a trial of the halving search is for (``cv_results_["role"]``).
ROLES = ("new", "promoted", "neighbour", "hedge", "probe", "lead", "final")


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


class RungLedger(RungCosts):
    """What the finished trials say, rung by rung.

    The questions about trial costs and the time budget are
    :class:`~skbayes_search._rung_costs.RungCosts`'.

    Parameters
    ----------
    rungs : Rungs
        The ladder.
    factor : float
        Promotion rate: the top ``floor(n / factor)`` of a rung's ``n``
        successful trials may climb.
    timed : bool, default=False
        Whether trial costs are measured seconds that may steer the search
        (under ``max_time``): then the base rung also rises above a rung
        whose step up costs little more (:meth:`cheap_step`).

    Attributes
    ----------
    base : int
        The trusted base rung: new configurations start there and no
        configuration is promoted from below it.
    base_trajectory : list of (float, int)
        ``(elapsed seconds, base)``, from ``(0.0, 0)`` and at every rise.
    agreements : dict of int to Agreement
        Rank agreement of each probed rung with its hedge rung.
    incumbent_trajectory : list of (float, dict, float)
        ``(elapsed seconds, params, score)`` whenever the incumbent changes.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._rungs import RungLedger, Rungs
    >>> from skbayes_search._trial import TrialRecord
    >>> rungs = Rungs.geometric(n_train=900, min_rows=100, factor=3)
    >>> def record(c, rung, score, role="new"):
    ...     return TrialRecord(
    ...         params={"C": c}, x=np.array([c]), fraction=rungs.fractions[rung],
    ...         n_resources=rungs.rows[rung], score=score, cost=1.0, fit_time=1.0,
    ...         failed=False, iter=0, elapsed_time=1.0, extras={"role": role},
    ...     )
    >>> ledger = RungLedger(rungs, factor=3)
    >>> ledger.absorb([record(c, 0, c) for c in (0.1, 0.2, 0.3)])
    >>> key, rung = ledger.promotion({})
    >>> ledger.params(key), rung  # the best third of rung 0 climbs to rung 1
    ({'C': 0.3}, 1)
    """

    #: Roles of trials started above the rungs climbed so far.
    started_high: tuple[str, ...] = ("hedge", "lead")

    def __init__(self, rungs: Rungs, factor: float, timed: bool = False) -> None:
        self.rungs = rungs
        self.factor = float(factor)
        self.timed = bool(timed)
        n = len(rungs.rows)
        # per rung, configuration key -> score (nan: failed) and cost, in
        # finishing order
        self._scores: list[dict[bytes, float]] = [{} for _ in range(n)]
        self._costs: list[dict[bytes, float]] = [{} for _ in range(n)]
        self._roles: list[dict[bytes, str]] = [{} for _ in range(n)]
        # per rung, configuration key -> index of its trial in the order read
        self._rows: list[dict[bytes, int]] = [{} for _ in range(n)]
        # per rung, the configurations that started there at random
        self._random: list[set[bytes]] = [set() for _ in range(n)]
        self._params: dict[bytes, dict] = {}
        self._done: dict[bytes, set[int]] = defaultdict(set)
        self._pairs: list[tuple[bytes, int, float]] = []
        # per step j, key -> its score on rung j + 1 less that on rung j
        self._steps: list[dict[bytes, float]] = [{} for _ in range(n - 1)]
        # per step j, key -> log of its cost on rung j + 1 over that on rung j
        self._cost_steps: list[dict[bytes, float]] = [{} for _ in range(n - 1)]
        self._offsets: np.ndarray | None = None
        self._n_seen = 0
        # (fractions, costs, keys) of the successful trials, rebuilt only
        # after new trials: it is read at every proposal
        self._table: tuple[list[float], list[float], list[bytes]] | None = None
        self._curve: tuple[float, np.ndarray] | None = None
        self._medians: list[float | None] | None = None
        self.base = 0
        self.base_trajectory: list[tuple[float, int]] = [(0.0, 0)]
        self.agreements: dict[int, Agreement] = {}
        self.incumbent: tuple[bytes, int, float] | None = None
        self.incumbent_trajectory: list[tuple[float, dict, float]] = []
        # configurations with a trial stopped by the search's deadline
        self.stopped: set[bytes] = set()

    # -- reading the trials --------------------------------------------------
    def absorb(self, trials: Sequence[Any]) -> None:
        """Read the trials finished since the last call (records in order)."""
        for row, t in enumerate(trials[self._n_seen :], start=self._n_seen):
            key = t.x.tobytes()
            if t.stopped:
                # stopped by the search's deadline: no measurement, and no
                # failure of the configuration's either (had it not been
                # started, the rule of the rung below would answer it)
                self.stopped.add(key)
                continue
            k = self.rungs.of(t.fraction)
            self._rows[k][key] = row
            self._table = self._curve = self._medians = None
            score = math.nan if t.failed else float(t.score)
            score = score if math.isfinite(score) else math.nan
            self._scores[k][key] = score
            self._measure_steps(key, k)
            self._costs[k][key] = float(t.cost)
            self._measure_cost_steps(key, k)
            self._roles[k][key] = str(t.extras.get("role", "new"))
            value = t.extras.get("acquisition_value", math.nan)
            if self._roles[k][key] in ("new", "probe") and not _finite(value):
                self._random[k].add(key)
            self._params.setdefault(key, dict(t.params))
            self._done[key].add(k)
            if self._roles[k][key] in ("probe", "hedge"):
                self._pairs.append((key, k, score))
                self._judge(t.elapsed_time)
            if k == self.base:
                self._skip_tied_rungs(t.elapsed_time)
            if k >= self.base:
                self._skip_failing_rungs(t.elapsed_time)
            if self.timed and k in (self.base, self.base + 1):
                self._skip_cheap_rungs(t.elapsed_time)
            self._track_incumbent(t.elapsed_time)
        self._n_seen = len(trials)

    def _measure_steps(self, key: bytes, k: int) -> None:
        # the offsets are recomputed only when a step's differences change:
        # most trials have no score on a neighbouring rung
        for j in (k - 1, k):
            if 0 <= j < len(self._steps):
                low = self._scores[j].get(key, math.nan)
                high = self._scores[j + 1].get(key, math.nan)
                if math.isfinite(low) and math.isfinite(high):
                    self._steps[j][key] = high - low
                elif self._steps[j].pop(key, None) is None:
                    continue
                self._offsets = None

    def _judge(self, elapsed: float) -> None:
        # only probe/hedge pairs: their configurations were not chosen by
        # their base-rung score, whose truncation would bias tau downwards
        keys, levels, scores = zip(*self._pairs)
        self.agreements = agreement_by_level(keys, levels, scores)
        trusted = min(smallest_trusted_level(self.agreements), self.rungs.top)
        if trusted > self.base:
            self.base = trusted
            self.base_trajectory.append((float(elapsed), trusted))

    def _skip_tied_rungs(self, elapsed: float) -> None:
        # when too many of the base rung's random configurations tie at the
        # best, the rung cannot choose what climbs, and when most tie below
        # it, it may rank only what can fit on so few rows: new
        # configurations start above it; only random ones count, since
        # promoted configurations and the model's proposals cluster near the
        # incumbent and tie with it for being nearly the same setting
        while self.base < self.rungs.top:
            random = self._random[self.base]
            tie = find_tie(
                [self._scores[self.base][key] for key in random], 1.0 / self.factor
            )
            if tie is None or (not tie.at_best and not self._tie_lifted(tie)):
                break
            self.base += 1
            self.base_trajectory.append((float(elapsed), self.base))

    def _tie_lifted(self, tie: Tie) -> bool:
        """Whether a configuration of the base rung's plateau below its best
        scored at least that best on a higher rung: more rows lift the
        plateau, so the rung ranks what can fit on so few rows. Until one
        is measured higher the plateau may be the settings' own (an SVC with
        a tiny ``C`` scores chance on any number of rows), and the rung
        ranks those above it well enough."""
        k = self.base
        for key, score in self._scores[k].items():
            if not tie.low <= score <= tie.high:
                continue
            for j in self._done[key]:
                higher = self._scores[j].get(key, math.nan)
                if j > k and math.isfinite(higher) and higher >= tie.best:
                    return True
        return False

    def _skip_failing_rungs(self, elapsed: float) -> None:
        # a base rung on which a setting fails (or scores nan) that succeeds
        # on more rows judges the rung's size, not the setting (a k-NN asking
        # for more neighbours than the rung has rows, a rare category absent
        # from the rung's rows), and one on which every random setting failed
        # ranks nothing: the worst score the surrogate sees for them would
        # keep them from ever climbing, so new configurations start above it
        while self.base < self.rungs.top and self._fails_for_size(self.base):
            self.base += 1
            self.base_trajectory.append((float(elapsed), self.base))

    def _fails_for_size(self, k: int) -> bool:
        """Whether rung ``k``'s failures are its size's, not the settings'
        (only its random configurations' all failing counts)."""
        trials = (
            (key, j, score)
            for j in range(k, len(self._scores))
            for key, score in self._scores[j].items()
        )
        return failures_are_the_size(trials, k, judged=self._random[k])

    def _skip_cheap_rungs(self, elapsed: float) -> None:
        # a base rung whose step up costs little more screens fewer
        # configurations, on fewer rows, than starting them one rung up
        while self.base < self.rungs.top and self.cheap_step(self.base):
            self.base += 1
            self.base_trajectory.append((float(elapsed), self.base))

    def _incumbent_rungs(self) -> list[int]:
        """Rungs from the highest down that a configuration climbed to or
        started on as a new one (a hedge or lead trial, started high, is no
        evidence that the rung's best deserves trust, nor is its rung a
        reason to set aside the rungs below)."""
        return [
            k
            for k in range(self.rungs.top, -1, -1)
            if any(
                math.isfinite(s) and self._roles[k][key] not in self.started_high
                for key, s in self._scores[k].items()
            )
        ]

    def _ranked_incumbents(self) -> list[tuple[bytes, int, float]]:
        """``(key, rung, score)`` of the candidates for incumbent, best first.

        Every configuration at its highest successful rung, when that is at
        least the rung below the highest one climbed (and not below the base
        rung unless nothing is above it), ranked by score; further down, the
        best of many configurations on few rows is mostly luck. Ties go to
        the higher rung, then to the first finished, but for the incumbent:
        it keeps its place unless a rival beats it on two scales (a tie
        beats it on neither), also once others have climbed two rungs above
        it: the scores as measured, and the scores less
        the gains of the steps up to their rungs (:meth:`rung_offsets`).
        Validation rows are the same on every rung
        and learning curves rise, so a raw score from more rows flatters a
        configuration (a mediocre lead trial would displace a better
        incumbent from the rung below), while the median gain undersells the
        configurations whose curves rise most (those that win on all data
        where curves cross).

        Once a trial on all data has succeeded, those count, and beside them
        only configurations on the rung below all data whose score there
        beats every score on all data (learning curves rise, so such a
        setting most likely wins on all data too), all by score as
        measured: the incumbent is what the search would return.
        """
        ranked = self._candidates()
        if not ranked or self.successes(self.rungs.top):
            # by score as measured: a rival's own gain to all data is not
            # known, and the step's measured gain may be the incumbent's own
            # fall there
            return ranked
        held = self.incumbent and next(
            (r for r in ranked if r[0] == self.incumbent[0]), None
        )
        if not held:
            # configurations climbed two rungs above the incumbent: a rival
            # scoring lower on more rows is no evidence against it
            held = self._held_below()
            if not held:
                return ranked
            ranked = [*ranked, held]
        offsets = self.rung_offsets()
        _, k0, s0 = held
        for rival in ranked:
            _, k, score = rival
            if score > s0 and score - offsets[k] > s0 - offsets[k0]:
                held = rival
                break
        return [held, *(r for r in ranked if r is not held)]

    def _held_below(self) -> tuple[bytes, int, float] | None:
        """The incumbent at its highest successful rung, unless a trial of
        it failed higher up or that rung is below the base rung (None before
        any incumbent)."""
        if self.incumbent is None:
            return None
        key = self.incumbent[0]
        # a configuration climbs only from a success: its highest trial is
        # its highest success unless that trial failed
        k = max(self._done[key])
        score = self._scores[k][key]
        if not math.isfinite(score) or k < self.base:
            return None
        return key, k, score

    def _candidates(self) -> list[tuple[bytes, int, float]]:
        """The candidates for incumbent (see :meth:`_ranked_incumbents`) by
        score as measured; ties keep the higher rung, then the first
        finished."""
        top = self.rungs.top
        measured = self.successes(top)
        if measured:
            ranked = [(key, top, score) for key, score in measured]
            if top > 0:
                # not measured on all data, or failed there: only a success
                # on all data would answer for a configuration tried there
                ranked += [
                    (key, top - 1, score)
                    for key, score in self.successes(top - 1)
                    if score > measured[0][1] and top not in self._done[key]
                ]
            ranked.sort(key=lambda r: -r[2])  # stable: ties keep all data
            return ranked
        rungs = self._incumbent_rungs()
        if not rungs:
            return []
        lowest = max(rungs[0] - 1, min(self.base, rungs[0]))
        ranked, seen = [], set()
        for k in range(self.rungs.top, lowest - 1, -1):
            for key, score in self.successes(k):
                if key not in seen:
                    seen.add(key)
                    ranked.append((key, k, score))
        ranked.sort(key=lambda r: -r[2])  # stable: ties keep the higher rung
        return ranked

    def rung_offsets(self) -> np.ndarray:
        """Per rung, the summed gains (:func:`level_gains`) of the steps up
        to it: what a score there is reduced by to compare it with others."""
        if self._offsets is None:
            gains = level_gains([list(d.values()) for d in self._steps])
            self._offsets = np.concatenate([[0.0], np.cumsum(gains)])
        return self._offsets

    def answer_measured(self) -> bool:
        """Whether the incumbent, the search's answer, is measured on all
        data."""
        return self.incumbent is not None and self.incumbent[1] == self.rungs.top

    def _track_incumbent(self, elapsed: float) -> None:
        ranked = self._ranked_incumbents()
        if not ranked:
            return
        key, k, score = ranked[0]
        previous = self.incumbent
        self.incumbent = (key, k, score)
        # the same configuration and score one rung up is no news
        if previous is None or (previous[0], previous[2]) != (key, score):
            self.incumbent_trajectory.append(
                (float(elapsed), dict(self._params[key]), score)
            )

    # -- questions -------------------------------------------------------------
    def params(self, key: bytes) -> dict:
        """Parameters of a configuration."""
        return dict(self._params[key])

    def incumbent_row(self) -> int | None:
        """Index of the incumbent's trial in the order the trials were read
        (None before any trial succeeded)."""
        if self.incumbent is None:
            return None
        key, k, _ = self.incumbent
        return self._rows[k][key]

    def highest_success(self) -> int | None:
        """The highest rung with a successful trial (None before any)."""
        fractions, _, _ = self._cost_table()
        return self.rungs.of(max(fractions)) if fractions else None

    def successes(self, k: int) -> list[tuple[bytes, float]]:
        """``(key, score)`` of rung ``k``'s successful trials, best first."""
        ok = [(key, s) for key, s in self._scores[k].items() if math.isfinite(s)]
        return sorted(ok, key=lambda v: -v[1])

    def n_probes(self, k: int) -> int:
        """Probe trials finished on rung ``k`` (each with its hedge)."""
        return sum(role == "probe" for role in self._roles[k].values())

    def evaluated(self, key: bytes) -> set[int]:
        """Rungs where a configuration has finished (successfully or not)."""
        return set(self._done.get(key, ()))

    def promotion(
        self,
        busy: dict[bytes, set[int]],
        allowed: Callable[[bytes, int], bool] | None = None,
        every: bool = False,
    ) -> tuple[bytes, int] | None:
        """The next promotion: ``(key, rung to run it on)``, or None.

        From the highest rung down to the base, the best configuration in
        the top ``floor(n / factor)`` of a rung's successful trials (with
        ``every``, among all of them) that has neither finished nor is
        running (``busy``: key -> rungs) on any higher rung, and that
        ``allowed(key, rung)`` accepts.

        Until a trial on all data has finished, the only configuration that
        climbs to all data is the incumbent. The time kept for its all-data
        evaluation is what lets a cheaper rival fit first, and a rival
        measured there first would become the answer (a score on all data
        outranks every score below it but a higher one on the rung just
        below) and end the keeping before the incumbent is measured. After
        that, an incumbent on the rung below all data climbs first, however
        few trials share its rung; so does an incumbent below the highest
        rung another configuration climbed to: a rung of fewer than
        ``factor`` trials promotes none, and an incumbent left there would
        be the answer on its few rows while others are measured on many
        more.
        """
        top = self.rungs.top
        first = not self._scores[top]
        held, held_rung = self.incumbent[:2] if self.incumbent else (None, None)
        # read only where it can matter: the scan visits every trial
        outclimbed = held_rung is not None and held_rung + 1 < top
        if outclimbed:
            climbed = self._incumbent_rungs()
            outclimbed = bool(climbed) and held_rung < climbed[0]
        for k in range(top - 1, self.base - 1, -1):
            ranked = self.successes(k)
            eligible = ranked if every else ranked[: int(len(ranked) // self.factor)]
            if k + 1 == top and first:
                eligible = [(key, s) for key, s in eligible if key == held]
            elif (k + 1 == top and not self.answer_measured()) or (
                outclimbed and k == held_rung
            ):
                mine = [(key, s) for key, s in ranked if key == held]
                eligible = mine + [e for e in eligible if e[0] != held]
            for key, _ in eligible:
                higher = self._done.get(key, set()) | busy.get(key, set())
                if max(higher) > k:
                    continue
                if allowed is None or allowed(key, k + 1):
                    return key, k + 1
        return None

    def final_candidate(self) -> bytes | None:
        """The configuration to evaluate on all data when none succeeded
        there: the incumbent, or if its all-data trial failed the next of
        its rivals, then the best on the rungs below."""
        top = self.rungs.top
        rivals = [key for key, _, _ in self._ranked_incumbents()]
        for k in self._incumbent_rungs():
            rivals += [key for key, _ in self.successes(k)]
        for key in rivals:
            if top not in self._done.get(key, ()):
                return key
        return None
