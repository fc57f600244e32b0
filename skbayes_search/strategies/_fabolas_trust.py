"""Which training-subset sizes FABOLAS may trust, read off its finished trials.

FABOLAS learns the full-data loss from fits on small subsets. Where learning
curves cross (an RBF SVC with a large ``C`` ranks among the worst on a few
hundred rows and among the best on all of them) the small subsets mislead the
model, and so the search. :class:`SubsetTrust` keeps a ladder of subset
sizes, ``min_rows * 4**k`` up to all rows, and the *bound*: the smallest
level whose evidence the search uses. Two tests raise it, both through
:mod:`skbayes_search._fidelity` (Kendall's tau of paired scores):

- the *ladder*: the initial design evaluates each of its configurations on
  the two smallest sizes; when their ranks there disagree, the smallest
  size misleads;
- *probes*: a probe evaluates a configuration well above the bound (at
  least two levels, and halfway to all rows on a log scale),
  with the model's prediction for that very trial recorded when it was
  proposed; when the model's predictions and the measured scores of the
  probes rank the configurations differently, what the model extrapolates
  from the bound's subsets is not to be trusted.

A size on which configurations fail that succeed on more rows, or on which
every trial failed, raises the bound too: its failures are the size's.

Everything is derived from the trial records (fraction, score and the
``role``, ``predicted_score`` and ``min_fraction`` extras), in order, so a
search resumed from a store rebuilds the same state. The design, its
constants and its measurements: ``doc/design/fabolas.rst``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._fidelity import (
    MIN_PAIRS,
    Agreement,
    agreement_between,
    failures_are_the_size,
    rank_agreement,
    size_level,
)

__all__ = [
    "FINAL_LOW_TRUST",
    "LADDER_FACTOR",
    "PROBE_GAP",
    "PROBE_SHARE",
    "PROBE_SPREAD",
    "ROLES",
    "SubsetTrust",
    "rank_contenders",
]

#: Ratio between consecutive sizes of the ladder.
LADDER_FACTOR = 4
#: Fewest levels between the bound and the size the probes run on (16 times
#: the rows); more when all rows are further away: the probes run halfway, on
#: a log scale, from the bound to all rows.
PROBE_GAP = 2
#: Largest share of the cost spent so far that probes may have taken, once
#: the bound's first probes (enough to judge it) have run.
PROBE_SHARE = 0.25
#: Smallest distance (largest unit-cube coordinate difference) between the
#: configurations probed on one size.
PROBE_SPREAD = 0.1
#: Full-data evaluations at the end once some subset size has misled.
FINAL_LOW_TRUST = 2
#: What a trial of FABOLAS is for (``cv_results_["role"]``): the initial
#: design, a random configuration while too few trials succeeded for a model,
#: an eq. 7 proposal, a probe of a larger size, a final full-data evaluation.
ROLES = ("design", "random", "proposal", "probe", "final")


class SubsetTrust:
    """The ladder of subset sizes and the smallest one the search trusts.

    Parameters
    ----------
    n_train : int
        Training rows of the smallest split.
    min_rows : int
        Rows of the smallest size (``min_resources_``).
    n_design : int or None
        Trials of the ladder design (each design configuration on levels 0
        and 1); ``None`` when the design does not run the ladder.

    Attributes
    ----------
    top : int
        The level of all rows.
    bound : int
        The smallest trusted level: proposals use at least its rows and the
        incumbent is chosen among configurations evaluated there or above.
    bound_trajectory : list of (float, float)
        ``(elapsed seconds, training fraction of the bound)``, from the
        start and at every rise.
    judgements : list of dict
        Every agreement measured: ``elapsed``, ``test`` (``"ladder"`` or
        ``"probes"``), ``low_rows``, ``high_rows``, ``tau``, ``n_pairs`` and
        ``misleads``.

    Examples
    --------
    >>> from skbayes_search.strategies._fabolas_trust import SubsetTrust
    >>> trust = SubsetTrust(n_train=37_500, min_rows=70, n_design=None)
    >>> trust.top, [trust.rows(k) for k in range(trust.top + 1)]
    (5, [70, 280, 1120, 4480, 17920, 37500])
    >>> trust.level_of(1120), trust.probe_level()  # halfway to all rows
    (2, 3)
    """

    def __init__(self, n_train: int, min_rows: int, n_design: int | None) -> None:
        self.n_train = int(n_train)
        self.min_rows = int(min_rows)
        self.n_design = n_design
        self.top = size_level(self.n_train, self.min_rows, LADDER_FACTOR, self.n_train)
        self.bound = 0
        self.bound_trajectory: list[tuple[float, float]] = [(0.0, self.fraction(0))]
        self.judgements: list[dict[str, Any]] = []
        # (configuration, level, score) of every trial, of the design's
        self._seen: list[tuple[bytes, int, float]] = []
        self._design: list[tuple[bytes, int, float]] = []
        self._probes: list[tuple[int, float, float]] = []  # (bound, predicted, score)
        self._n_judged: dict[tuple[str, int], int] = {}

    # -- the ladder ------------------------------------------------------------
    def rows(self, level: int) -> int:
        """Training rows of a level (all rows at the top)."""
        if level >= self.top:
            return self.n_train
        return round(self.min_rows * LADDER_FACTOR ** int(level))

    def fraction(self, level: int) -> float:
        """Training fraction of a level."""
        return self.rows(level) / self.n_train

    def level_of(self, n_resources: int) -> int:
        """The level of a trial on ``n_resources`` rows."""
        return size_level(n_resources, self.min_rows, LADDER_FACTOR, self.n_train)

    def probe_level(self, bound: int | None = None) -> int | None:
        """The level the probes of a bound (the current one by default) run
        on; None at the top."""
        bound = self.bound if bound is None else bound
        if bound >= self.top:
            return None
        gap = max(PROBE_GAP, math.ceil((self.top - bound) / 2))
        return min(self.top, bound + gap)

    def probes_judged(self) -> bool:
        """Whether the bound's probes are enough to judge it."""
        n = sum(
            1
            for b, p, s in self._probes
            if b == self.bound and math.isfinite(p) and math.isfinite(s)
        )
        return n >= MIN_PAIRS

    @property
    def low_trust(self) -> bool:
        """Whether some subset size has misled the search."""
        return any(j["misleads"] for j in self.judgements)

    # -- reading the trials ----------------------------------------------------
    def absorb(self, record: Any) -> None:
        """Read one finished trial (records in finishing order)."""
        role = record.extras.get("role")
        score = math.nan if record.failed else float(record.score)
        level = self.level_of(record.n_resources)
        key = record.x.tobytes()
        self._seen.append((key, level, score))
        self._skip_failing_levels(record.elapsed_time)
        if role == "design" and self.n_design is not None:
            self._design.append((key, level, score))
            if len(self._design) == self.n_design:
                keys, levels, scores = zip(*self._design)
                agreement = agreement_between(keys, levels, scores, 0, 1)
                self._judge("ladder", agreement, None, 1, record.elapsed_time)
        elif role == "probe":
            bound = self.level_of(round(record.extras["min_fraction"] * self.n_train))
            predicted = float(record.extras.get("predicted_score", math.nan))
            self._probes.append((bound, predicted, score))
            if bound == self.bound:
                # failed probes and missing predictions are no pairs
                mine = [
                    (p, s)
                    for b, p, s in self._probes
                    if b == bound and math.isfinite(p) and math.isfinite(s)
                ]
                pred, meas = zip(*mine) if mine else ((), ())
                model = Agreement(bound, rank_agreement(pred, meas), len(mine))
                high = self.probe_level(bound)
                keys, levels, scores = zip(*self._seen)
                subsets = agreement_between(keys, levels, scores, bound, high)
                self._judge("probes", model, subsets, high, record.elapsed_time)

    def _judge(
        self,
        test: str,
        agreement: Agreement,
        subsets: Agreement | None,
        high: int,
        elapsed: float,
    ) -> None:
        """Record a judged agreement and raise the bound if it misleads.

        For probes, ``agreement`` is the model's predictions against the
        measured scores and ``subsets`` the measured scores on the bound
        against those on the probes' size: a model that ranks badly while
        the bound's own scores rank well has too little data, not misleading
        data, so the bound rises only when both mislead (or the second has
        too few pairs to be judged).
        """
        if not agreement.judged:
            return
        seen = self._n_judged.get((test, agreement.level))
        if seen == agreement.n_pairs:
            return
        self._n_judged[(test, agreement.level)] = agreement.n_pairs
        misleads = agreement.misleads
        if subsets is not None and subsets.judged and not subsets.misleads:
            misleads = False
        self.judgements.append(
            {
                "elapsed": float(elapsed),
                "test": test,
                "low_rows": self.rows(agreement.level),
                "high_rows": self.rows(high),
                "tau": float(agreement.tau),
                "n_pairs": int(agreement.n_pairs),
                "tau_subsets": math.nan if subsets is None else float(subsets.tau),
                "n_pairs_subsets": 0 if subsets is None else int(subsets.n_pairs),
                "misleads": bool(misleads),
            }
        )
        if misleads and agreement.level >= self.bound:
            self.bound = min(agreement.level + 1, self.top)
            self.bound_trajectory.append((float(elapsed), self.fraction(self.bound)))

    def _skip_failing_levels(self, elapsed: float) -> None:
        # a size on which a configuration fails (or scores nan) that succeeds
        # on more rows judges the size, not the configuration (a k-NN asking
        # for more neighbours than the subset has rows, a rare category
        # absent from the subset), and one on which every trial failed tells
        # the model nothing: the penalty it sees there would steer it away
        # from configurations that are fine on all rows
        while self.bound < self.top and failures_are_the_size(self._seen, self.bound):
            self.bound += 1
            self.bound_trajectory.append((float(elapsed), self.fraction(self.bound)))

    # -- questions -------------------------------------------------------------
    def evaluated_at(self, trials: Sequence[Any], level: int) -> np.ndarray:
        """Successful trials whose configuration succeeded at ``level`` or
        above (while none has, at the highest level with a success)."""
        ok = np.array(
            [not t.failed and np.isfinite(t.score) for t in trials], dtype=bool
        )
        if not ok.any():
            return ok
        levels = np.array([self.level_of(t.n_resources) for t in trials], dtype=int)
        floor = min(int(level), int(levels[ok].max()))
        keys = {
            t.x.tobytes() for t, keep in zip(trials, ok & (levels >= floor)) if keep
        }
        return ok & np.array([t.x.tobytes() in keys for t in trials], dtype=bool)

    def supported(self, trials: Sequence[Any]) -> np.ndarray:
        """Which successful trials' configurations may be the incumbent.

        Those measured on the probes' size or above: a configuration seen
        only on the smallest trusted sizes is a candidate for a probe, not
        yet an answer. While none has been, those at the highest level with a
        success.
        """
        level = self.probe_level()
        return self.evaluated_at(trials, self.top if level is None else level)


def rank_contenders(
    trials: Sequence[Any], supported: np.ndarray, predicted: dict[int, float]
) -> list[tuple[int, float]]:
    """The supported configurations, best first, each as ``(row, value)``.

    A configuration's value is its best measured full-data score if it has
    one (that row), else the model's ``predicted`` full-data score (its
    latest predicted row; rows without a prediction do not compete). Before
    any prediction, the successful trials on the largest fraction evaluated,
    by their measured score. Equal values keep the order the rows came in.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace as T
    >>> trials = [T(x=np.array([0.1]), fraction=0.1, score=0.9, failed=False),
    ...           T(x=np.array([0.2]), fraction=0.4, score=0.7, failed=False)]
    >>> ok = np.array([True, True])
    >>> rank_contenders(trials, ok, {})  # no model yet: the largest fraction
    [(1, 0.7)]
    >>> rank_contenders(trials, ok, {0: 0.95, 1: 0.9})
    [(0, 0.95), (1, 0.9)]
    """
    rows = [int(i) for i in np.flatnonzero(supported)]
    if not rows:
        return []
    full: dict[bytes, int] = {}
    for i in rows:
        key = trials[i].x.tobytes()
        if trials[i].fraction >= 1.0 and (
            key not in full or trials[i].score > trials[full[key]].score
        ):
            full[key] = i
    best: dict[bytes, tuple[int, float]] = {}
    for i in rows:
        key = trials[i].x.tobytes()
        if key in full:
            best[key] = (full[key], float(trials[full[key]].score))
        elif i in predicted and np.isfinite(predicted[i]):
            best[key] = (i, float(predicted[i]))
    if not predicted or not best:
        largest = max(trials[i].fraction for i in rows)
        best = {
            trials[i].x.tobytes(): (i, float(trials[i].score))
            for i in rows
            if trials[i].fraction == largest
        }
    ranked = sorted(best.values(), key=lambda rv: rv[0])
    return sorted(ranked, key=lambda rv: -rv[1])
