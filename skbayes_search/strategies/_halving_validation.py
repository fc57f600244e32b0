"""Which validation rows HalvingBayesSearchCV scores a trial on a subset with:
all of each split's, or the same share as its training rows
(``subsample_validation``).

A share of the validation rows makes a small trial cheaper by what its
scoring costs, and its score noisier. It pays where scoring costs more than
fitting: a kernel SVC fitted on a few hundred rows predicts thousands of
validation rows through every support vector. Where fitting costs more (a
boosted ensemble grows all its trees even on a few hundred rows), it saves
little time and the noise decided what climbed. ``"auto"`` decides from the
first trials' own fit and score times. Users' page:
``doc/strategies/halving.rst``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._trial import TrialRecord

#: Finished trials below all data (scored on every validation row) that
#: ``"auto"`` reads before it decides; until then, trials are scored on all
#: validation rows.
AUTO_TRIALS = 4
#: Median ratio of score to fit time, over those trials, from which ``"auto"``
#: scores later trials on a share of the validation rows. Measured on the
#: race's tasks (one split, 8 random settings per rung, smallest three rungs):
#: a kernel SVC's ratio was 2.4 to 19 on the smallest rung of all eight
#: tasks, HistGradientBoosting's 0.24 to 0.86 on all four; 1.5 lies between
#: them with room on both sides.
AUTO_RATIO = 1.5


def scoring_dominates(trials: Sequence[TrialRecord]) -> bool:
    """Whether the first ``AUTO_TRIALS`` successful, not stopped trials below
    all data spent at least ``AUTO_RATIO`` times as long scoring as fitting
    (median over them); False while fewer have finished.

    A function of the finished trials in the order they were recorded, so a
    resumed search decides as the search it resumes did.

    Examples
    --------
    >>> import numpy as np
    >>> from skbayes_search._trial import TrialRecord
    >>> from skbayes_search.strategies._halving_validation import scoring_dominates
    >>> def trial(fit_time, cost):
    ...     return TrialRecord(
    ...         params={}, x=np.zeros(1), fraction=0.1, n_resources=10, score=0.9,
    ...         cost=cost, fit_time=fit_time, failed=False, iter=0, elapsed_time=0.0,
    ...     )
    >>> scoring_dominates([trial(0.01, 0.05)] * 3)  # too few to decide
    False
    >>> scoring_dominates([trial(0.01, 0.05)] * 4)  # scoring 4x the fit
    True
    >>> scoring_dominates([trial(0.2, 0.3)] * 4)  # scoring half the fit
    False
    """
    ratios = []
    for t in trials:
        if t.failed or t.stopped or t.fraction >= 1.0 or not t.fit_time > 0:
            continue
        ratios.append((t.cost - t.fit_time) / t.fit_time)
        if len(ratios) == AUTO_TRIALS:
            return bool(np.median(ratios) >= AUTO_RATIO)
    return False
