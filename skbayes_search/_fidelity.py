"""Whether scores on small subsets can be trusted: rank agreement across sizes.

Subset methods assume that a configuration good on a few rows is good on
all of them. Where learning curves cross (an RBF SVC with a large ``C`` is
among the worst on 70 rows and the best on 50,000) that assumption misleads
every method built on it. The one test used throughout the package: take the
configurations evaluated at two subset sizes, and measure how well their
order at the smaller size predicts their order at the larger one (Kendall's
tau-b). A size is *trusted* when every measured agreement at it and above
is at least :data:`AGREEMENT_THRESHOLD`; sizes below the largest untrusted
one are not used to choose configurations.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import kendalltau

__all__ = [
    "AGREEMENT_THRESHOLD",
    "MIN_PAIRS",
    "TIE_SHARE",
    "Agreement",
    "Tie",
    "agreement_between",
    "agreement_by_level",
    "failures_are_the_size",
    "find_tie",
    "level_gains",
    "rank_agreement",
    "size_level",
    "smallest_trusted_level",
]

#: Kendall's tau below which a smaller subset size is taken to mislead. Under
#: no relation, tau has a standard deviation of about 0.3 for 6 pairs, so a
#: real agreement (easy tasks measure 0.6 to 0.9) rarely falls below it while
#: crossing learning curves (negative tau) always do.
AGREEMENT_THRESHOLD = 0.3
#: Fewest configurations evaluated at both sizes before agreement is judged.
MIN_PAIRS = 5
#: Scores within this share of their range below the best tie with it
#: (:func:`find_tie`).
TIE_SHARE = 0.01


@dataclass(frozen=True)
class Agreement:
    """Rank agreement of one subset size with the next larger one evaluated.

    Attributes
    ----------
    level : int
        The smaller size's level (its index in the caller's ascending sizes).
    tau : float
        Kendall's tau-b of the paired scores (NaN when undefined).
    n_pairs : int
        Configurations evaluated at both sizes.
    """

    level: int
    tau: float
    n_pairs: int

    @property
    def judged(self) -> bool:
        """Whether there are enough pairs to judge the agreement."""
        return self.n_pairs >= MIN_PAIRS and not math.isnan(self.tau)

    @property
    def misleads(self) -> bool:
        """Judged, and below :data:`AGREEMENT_THRESHOLD`."""
        return self.judged and self.tau < AGREEMENT_THRESHOLD


def rank_agreement(low: Sequence[float], high: Sequence[float]) -> float:
    """Kendall's tau-b between paired scores at a smaller and a larger size.

    Parameters
    ----------
    low, high : sequence of float
        Scores of the same configurations, in the same order. Pairs with a
        non-finite score are dropped.

    Returns
    -------
    tau : float
        In [-1, 1]; NaN with fewer than 3 finite pairs or when either side
        is constant.

    Examples
    --------
    >>> rank_agreement([0.6, 0.7, 0.8, 0.9], [0.70, 0.75, 0.80, 0.85])
    1.0
    >>> rank_agreement([0.6, 0.7, 0.8, 0.9], [0.85, 0.80, 0.75, 0.70])
    -1.0
    """
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    ok = np.isfinite(low) & np.isfinite(high)
    low, high = low[ok], high[ok]
    if low.size < 3 or np.ptp(low) == 0 or np.ptp(high) == 0:
        return math.nan
    return float(kendalltau(low, high).statistic)


@dataclass(frozen=True)
class Tie:
    """Scores too tied to rank configurations (:func:`find_tie`).

    Attributes
    ----------
    at_best : bool
        Whether the tie is at the best score (else most scores share a
        plateau below it).
    low, high : float
        The lowest and highest score of the tie.
    best : float
        The best score.
    """

    at_best: bool
    low: float
    high: float
    best: float


def find_tie(scores: Sequence[float], keep: float) -> Tie | None:
    """The tie that makes a subset size useless for choosing, if any.

    On very small subsets many settings fit the same trivial model (every
    row predicted as the majority class, say) and score exactly alike. Two
    plateaus make a size useless for choosing: one at the best, where a
    search choosing the best share ``keep`` would choose by arrival order,
    and one below it holding most settings, where the size may tell only
    which settings can fit anything on so few rows (a minimum leaf size
    larger than half the subset, say), which ranks them as more rows would
    not. Judged from :data:`MIN_PAIRS` finite scores on.

    Parameters
    ----------
    scores : sequence of float
        Scores of configurations *not* selected by a smaller size's scores
        (a selected set is tied by construction more often); non-finite
        scores (failed fits) are ignored.
    keep : float
        The share of configurations a search keeps from this size, in (0, 1].

    Returns
    -------
    Tie or None
        A tie at the best when more than ``keep`` of the scores (and more
        than two: two close scores are a coincidence, not a plateau) tie
        with the best, else one below it when more than half
        of them tie with each other: lie within :data:`TIE_SHARE` of the
        scores' range. A plateau of trivial models is rarely exact: a
        setting that gets one more validation row right stands a hair
        above it. None when the scores can rank.

    Examples
    --------
    >>> find_tie([0.658] * 6, keep=1 / 3)
    Tie(at_best=True, low=0.658, high=0.658, best=0.658)
    >>> find_tie([0.7607, 0.7607, 0.7607, 0.7607, 0.79, 0.81], keep=1 / 3)
    Tie(at_best=False, low=0.7607, high=0.7607, best=0.81)
    >>> find_tie([0.658, 0.658, 0.70, 0.61, 0.64, 0.66], keep=1 / 3) is None
    True
    """
    s = np.sort(np.asarray(scores, dtype=float))
    s = s[np.isfinite(s)]
    if s.size < MIN_PAIRS:
        return None
    best = float(s[-1])
    tolerance = max(TIE_SHARE * float(np.ptp(s)), 1e-12)
    first = int(np.searchsorted(s, best - tolerance, side="left"))
    if s.size - first > max(2.0, keep * s.size):
        return Tie(True, float(s[first]), best, best)
    # the most scores within one tolerance of each other
    ends = np.searchsorted(s, s + tolerance, side="right")
    widths = ends - np.arange(s.size)
    start = int(np.argmax(widths))
    if widths[start] <= s.size / 2:
        return None
    return Tie(False, float(s[start]), float(s[ends[start] - 1]), best)


def failures_are_the_size(
    trials: Iterable[tuple[Hashable, int, float]],
    level: int,
    judged: Collection[Hashable] | None = None,
) -> bool:
    """Whether the failures at a subset size are the size's, not the settings'.

    Some fits fail, or score nan, only because a subset is small (a k-NN
    asking for more neighbours than the subset has rows, a rare category the
    subset misses); a search that ranks them last there never tries them on
    more rows. A size's failures are taken to be its own once a
    configuration that failed there has succeeded at a larger size, or once
    :data:`MIN_PAIRS` judged trials there have all failed.

    Parameters
    ----------
    trials : iterable of (key, level, score)
        Finished trials: the configuration, its size's level, its score
        (non-finite for a failure).
    level : int
        The size judged.
    judged : collection of keys, default=None
        The configurations at ``level`` whose all failing counts (for
        example only random ones); None: every trial there.

    Returns
    -------
    bool

    Examples
    --------
    >>> nan = float("nan")
    >>> trials = [("a", 0, 0.8), ("b", 0, nan), ("b", 2, nan)]
    >>> failures_are_the_size(trials, 0)  # b fails on more rows too
    False
    >>> failures_are_the_size(trials + [("c", 0, nan), ("c", 1, 0.7)], 0)
    True
    >>> failures_are_the_size([(k, 0, nan) for k in "vwxyz"], 0)
    True
    """
    trials = list(trials)
    at = [
        score
        for key, k, score in trials
        if k == level and (judged is None or key in judged)
    ]
    if len(at) >= MIN_PAIRS and not any(map(math.isfinite, at)):
        return True
    failed = {
        key for key, k, score in trials if k == level and not math.isfinite(score)
    }
    return any(
        k > level and math.isfinite(score) and key in failed for key, k, score in trials
    )


def agreement_by_level(
    keys: Sequence[Hashable], levels: Sequence[int], scores: Sequence[float]
) -> dict[int, Agreement]:
    """Agreement of each level with the next larger level of the same configurations.

    Parameters
    ----------
    keys : sequence of hashable
        Configuration of each evaluation (equal keys: the same configuration).
    levels : sequence of int
        Subset-size level of each evaluation (larger: more rows).
    scores : sequence of float
        Score of each evaluation (higher is better); non-finite scores
        (failed fits) are ignored. A configuration evaluated twice at one
        level keeps its last score.

    Returns
    -------
    agreements : dict of int to Agreement
        For every level below the largest, pairs each configuration's score
        there with its score at the next larger level it was evaluated at.

    Examples
    --------
    >>> keys = ["a", "b", "c", "d", "e"] * 2
    >>> levels = [0] * 5 + [1] * 5
    >>> scores = [0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.8, 0.7, 0.6, 0.5]
    >>> agreement_by_level(keys, levels, scores)[0].misleads
    True
    """
    by_key: dict[Hashable, dict[int, float]] = defaultdict(dict)
    for key, level, score in zip(keys, levels, scores):
        if np.isfinite(score):
            by_key[key][int(level)] = float(score)
    pairs: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for seen in by_key.values():
        ordered = sorted(seen)
        for lo, hi in itertools.pairwise(ordered):
            pairs[lo].append((seen[lo], seen[hi]))
    out = {}
    for level in sorted(pairs):
        low, high = zip(*pairs[level])
        out[level] = Agreement(level, rank_agreement(low, high), len(low))
    return out


def smallest_trusted_level(agreements: dict[int, Agreement], lowest: int = 0) -> int:
    """The smallest level at and above which no judged agreement misleads.

    Parameters
    ----------
    agreements : dict of int to Agreement
        As returned by :func:`agreement_by_level`.
    lowest : int, default=0
        The smallest level there is.

    Returns
    -------
    level : int
        One above the largest misleading level, else ``lowest``.

    Examples
    --------
    >>> from skbayes_search._fidelity import Agreement
    >>> smallest_trusted_level({0: Agreement(0, -0.4, 8), 1: Agreement(1, 0.7, 6)})
    1
    """
    bad = [level for level, a in agreements.items() if a.misleads]
    return max(lowest, max(bad) + 1) if bad else lowest


def agreement_between(
    keys: Sequence[Hashable],
    levels: Sequence[int],
    scores: Sequence[float],
    low: int,
    high: int,
) -> Agreement:
    """Agreement of two given levels, over the configurations evaluated at both.

    Unlike :func:`agreement_by_level`, which pairs each configuration with
    the next larger level *it* reached, only the two named levels count, so
    every pair spans the same gap and the scores on each side are
    comparable with one another.

    Parameters
    ----------
    keys, levels, scores : sequence
        As in :func:`agreement_by_level`.
    low, high : int
        The smaller and the larger level.

    Returns
    -------
    Agreement
        At level ``low``.

    Examples
    --------
    >>> keys = list("abcdef") * 2 + ["g"]
    >>> levels = [0] * 6 + [2] * 6 + [1]
    >>> scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6] * 2 + [0.9]
    >>> a = agreement_between(keys, levels, scores, 0, 2)
    >>> round(a.tau, 6), a.n_pairs, a.judged
    (1.0, 6, True)
    """
    at: dict[int, dict[Hashable, float]] = {low: {}, high: {}}
    for key, level, score in zip(keys, levels, scores):
        if int(level) in at and np.isfinite(score):
            at[int(level)][key] = float(score)
    both = [key for key in at[low] if key in at[high]]
    tau = rank_agreement([at[low][k] for k in both], [at[high][k] for k in both])
    return Agreement(int(low), tau, len(both))


def level_gains(differences: Sequence[Sequence[float]]) -> np.ndarray:
    """Score gain from each level to the next, to compare scores across levels.

    More rows score higher for the same configuration, so a raw score on a
    larger subset flatters it against one on a smaller subset. The gain of a
    step is the median, over the configurations evaluated on both levels, of
    their score there less their score on the level below, and never below
    0: learning curves rise, so a median fall across a step is the measured
    configurations' own (a boosting run that diverges on more rows), not the
    rows', and crediting it to the step would excuse that very fall when a
    configuration that fell is compared with those on the level below. A
    step nothing has crossed yet takes the gain of the nearest measured step
    below it (learning curves flatten, so this errs towards the smaller
    subset), else of the nearest above, else 0.

    Parameters
    ----------
    differences : sequence of sequence of float
        Per step ``j`` (level ``j`` to ``j + 1``), the finite score
        differences measured across it.

    Returns
    -------
    gains : ndarray of shape (len(differences),)

    Examples
    --------
    >>> level_gains([[0.10, 0.14, 0.20], [], [0.01], []]).tolist()
    [0.14, 0.14, 0.01, 0.01]
    >>> level_gains([[], [0.05]]).tolist()
    [0.05, 0.05]
    >>> level_gains([[0.02], [-0.13]]).tolist()
    [0.02, 0.0]
    """
    gains = np.array(
        [max(float(np.median(d)), 0.0) if len(d) else np.nan for d in differences]
    )
    known = np.flatnonzero(np.isfinite(gains))
    if not known.size:
        return np.zeros(len(gains))
    for j in np.flatnonzero(~np.isfinite(gains)):
        below = known[known < j]
        gains[j] = gains[below[-1] if below.size else known[0]]
    return gains


def size_level(rows: int, min_rows: int, factor: float, n_train: int) -> int:
    """The level of a subset of ``rows`` on the ladder ``min_rows * factor**k``.

    The largest ``k`` whose size is at most ``rows`` (up to rounding); all
    ``n_train`` rows are the top level, ``ceil(log_factor(n_train /
    min_rows))``.

    Examples
    --------
    >>> [size_level(r, 70, 4, 37500) for r in (70, 279, 280, 4480, 30000, 37500)]
    [0, 0, 1, 3, 4, 5]
    """
    log_factor = math.log(float(factor))
    top = max(0, math.ceil(math.log(n_train / min_rows) / log_factor - 1e-9))
    if rows >= n_train:
        return top
    ratio = max(float(rows), float(min_rows)) / float(min_rows)
    level = math.floor(math.log(ratio) / log_factor + 1e-9)
    return int(min(max(level, 0), max(top - 1, 0)))
