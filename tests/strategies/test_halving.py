"""HalvingBayesSearchCV: ASHA with GP proposals and a hedge against
misleading small subsets."""

import itertools
import math
import pickle
import time
import warnings

import numpy as np
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from skbayes_search import Categorical, HalvingBayesSearchCV, Real
from skbayes_search._rungs import RungLedger, Rungs
from skbayes_search._trial import Trial
from skbayes_search.strategies._halving_lead import LEAD_LENGTH_PRIOR, LeadRung
from tests.helpers import one_parameter_record, search_context

# The checks scikit-learn itself marks as expected failures for its searches.
EXPECTED_FAILED_CHECKS = {
    "check_supervised_y_2d": "DataConversionWarning not caught",
    "check_requires_y_none": "Doesn't fail gracefully",
}


def _check_instances():
    # min_resources=2 gives the checks' small data sets at least three rungs
    # (the plain-BO fallback has its own test below)
    return [
        HalvingBayesSearchCV(
            Pipeline([("scale", StandardScaler()), ("ridge", Ridge())]),
            {"ridge__alpha": Real(0.1, 1.0, prior="log-uniform")},
            n_iter=6,
            n_initial_points=3,
            min_resources=2,
            cv=2,
            error_score="raise",
            random_state=0,
        ),
    ]


@parametrize_with_checks(
    _check_instances(), expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="HalvingBayesSearchCV: ")
        check(estimator)


# ----------------------------------------------------------------------
# a synthetic classifier whose score depends on (a, rows)
# ----------------------------------------------------------------------
N_ROWS = 2000  # two folds of 1000 training rows
MIN_ROWS = 20  # min_resources="auto" for two classes and two folds
RUNG_ROWS = [20, 60, 180, 540, 1000]


class Curves(ClassifierMixin, BaseEstimator):
    """Score rises with the log of the rows; the best ``a`` is 0.8 on at
    least 40 % of the log-row range and, with ``crossing``, 0.2 below it
    (the two lowest rungs: small subsets rank configurations backwards); with
    ``flat``, every configuration scores the same there (a trivial model);
    with ``lucky``, configurations with ``a`` above 0.6 score 0.99 on the
    first rung and every fit on all rows fails; with ``drift``, the best
    ``a`` moves from 0.2 on the first rung to 0.8 on all rows. A fit sleeps
    ``delay`` seconds on all rows and in proportion below, or with
    ``fixed_cost`` the same ``delay`` on any rows."""

    def __init__(
        self,
        a=0.5,
        crossing=False,
        delay=0.0,
        flat=False,
        lucky=False,
        drift=False,
        fixed_cost=False,
    ):
        self.a = a
        self.crossing = crossing
        self.drift = drift
        self.delay = delay
        self.flat = flat
        self.lucky = lucky
        self.fixed_cost = fixed_cost

    def fit(self, X, y):
        self.rows_ = len(X)
        self.classes_ = np.unique(y)
        if self.lucky and self.rows_ >= N_ROWS / 2:
            raise ValueError("no fit on all rows")
        share = 1.0 if self.fixed_cost else self.rows_ / (N_ROWS / 2)
        time.sleep(self.delay * share)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])

    def score(self, X, y):
        s = np.log(self.rows_ / MIN_ROWS) / np.log(N_ROWS / 2 / MIN_ROWS)
        if self.flat and s < 0.4:
            return 0.6
        if self.lucky and s == 0 and self.a > 0.6:
            return 0.99
        best = 0.2 if self.crossing and s < 0.4 else 0.8
        if self.drift:
            best = 0.2 + 0.6 * s
        return 0.7 + 0.1 * s - 0.3 * (self.a - best) ** 2


SPACE = {"a": Real(0.0, 1.0)}


@pytest.fixture(scope="module")
def data():
    X = np.random.default_rng(0).normal(size=(N_ROWS, 2))
    y = np.arange(N_ROWS) % 2
    return X, y


def _search(**kw):
    params = dict(cv=2, random_state=0, asynchronous=False)
    params.update(kw)
    estimator = Curves(
        crossing=params.pop("crossing", False),
        delay=params.pop("delay", 0.0),
        flat=params.pop("flat", False),
        lucky=params.pop("lucky", False),
        drift=params.pop("drift", False),
        fixed_cost=params.pop("fixed_cost", False),
    )
    return HalvingBayesSearchCV(estimator, SPACE, **params)


def _rows(search):
    res = search.cv_results_
    return [
        dict(
            a=p["a"],
            rung=int(r),
            role=str(role),
            iter=int(i),
            score=float(s),
            elapsed=float(e),
        )
        for p, r, role, i, s, e in zip(
            res["params"],
            res["rung"],
            res["role"],
            res["iter"],
            res["mean_test_score"],
            res["elapsed_time"],
        )
    ]


def _base_when_proposed(search, rows, row):
    """The base rung when a trial was proposed."""
    rises = [(-1, 0)] + [
        (next(r["iter"] for r in rows if r["elapsed"] == when), base)
        for when, base in search.base_rung_trajectory_[1:]
    ]
    return max(b for it, b in rises if it < row["iter"])


def _incumbent_when_proposed(search, rows, row):
    """The incumbent's ``a`` when ``row`` was proposed (synchronous batches:
    after every earlier batch had finished), or None before any."""
    seen = [r["elapsed"] for r in rows if r["iter"] < row["iter"]]
    if not seen:
        return None
    then = [p for t, p, _ in search.incumbent_trajectory_ if t <= max(seen)]
    return then[-1]["a"] if then else None


def _assert_asha_rules(search, factor=3):
    """Promotions only from the top 1/factor of what had finished on the rung
    below when they were proposed, or of the incumbent then; no
    configuration twice on one rung."""
    rows = _rows(search)
    pairs = [(r["a"], r["rung"]) for r in rows]
    assert len(set(pairs)) == len(pairs)
    # the trajectory ends with the answer
    assert search.incumbent_trajectory_[-1][1] == search.best_params_
    for row in rows:
        if row["role"] != "promoted":
            continue
        # synchronous batches: a trial's proposal saw every earlier batch
        below = [
            r for r in rows if r["rung"] == row["rung"] - 1 and r["iter"] < row["iter"]
        ]
        ranked = sorted(below, key=lambda r: -r["score"])
        top = [r["a"] for r in ranked[: int(len(ranked) // factor)]]
        top.append(_incumbent_when_proposed(search, rows, row))
        assert row["a"] in top, row


# ----------------------------------------------------------------------
# rungs and ASHA bookkeeping
# ----------------------------------------------------------------------
def test_rungs_are_geometric_and_end_on_all_data():
    assert Rungs.geometric(1000, 20, 3).rows == tuple(RUNG_ROWS)
    # round(log3(110 / 10)) = 2 steps: the top rung is 3.7 times the one below
    assert Rungs.geometric(110, 10, 3).rows == (10, 30, 110)
    assert Rungs.geometric(1000, 1000, 3).rows == (1000,)
    rungs = Rungs.geometric(1000, 20, 3)
    assert [rungs.of(f) for f in rungs.fractions] == list(range(5))


def test_many_fractions_map_to_the_rungs_one_at_a_time_would():
    rungs = Rungs.geometric(5000, 20, 3)
    # the rungs themselves, points between them (some on the geometric
    # midpoint, where rounding decides) and fractions outside the ladder
    mids = np.sqrt(rungs.fractions[1:] * rungs.fractions[:-1])
    rng = np.random.default_rng(0)
    fractions = np.concatenate(
        [rungs.fractions, mids, rng.uniform(1e-4, 1.0, 200), [1e-6, 1.0]]
    )
    expected = [rungs.of(f) for f in fractions]
    assert rungs.of_many(fractions).tolist() == expected
    assert rungs.of_many([]).tolist() == []


def _record(a, rung, score, role, rungs):
    return one_parameter_record(
        a, rungs.rows[rung], rungs.fractions[rung], score, {"role": role}
    )


def test_a_hedge_alone_on_a_rung_is_not_the_incumbent():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = [_record(a, 0, a, "new", rungs) for a in (0.1, 0.2, 0.3)]
    trials += [_record(0.9, 0, 0.1, "probe", rungs)]
    trials += [_record(0.9, 2, 0.05, "hedge", rungs)]
    ledger.absorb(trials)  # the records so far, as ctx.trials holds them
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.3}, 0.3)
    # once a configuration climbs there, the rung's best is the incumbent
    trials += [_record(0.3, 1, 0.2, "promoted", rungs)]
    trials += [_record(0.3, 2, 0.01, "promoted", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.9}, 0.05)


def test_a_configuration_that_drops_higher_up_loses_to_the_rung_below():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = [_record(a, 0, a, "new", rungs) for a in (0.1, 0.2, 0.3, 0.4)]
    trials += [_record(0.4, 1, 0.45, "promoted", rungs)]
    trials += [_record(0.3, 1, 0.5, "promoted", rungs)]
    trials += [_record(0.4, 2, 0.05, "promoted", rungs)]
    ledger.absorb(trials)
    # a = 0.4 scored 0.05 on rung 2; a = 0.3 scored 0.5 on rung 1
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.3}, 0.5)
    assert ledger.params(ledger.final_candidate()) == {"a": 0.3}
    # two rungs below the highest, a better score is not taken
    trials += [_record(0.3, 2, 0.45, "promoted", rungs)]
    trials += [_record(0.3, 3, 0.48, "promoted", rungs)]
    trials += [_record(0.15, 1, 0.9, "new", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.3}, 0.48)


def test_a_rival_scoring_lower_two_rungs_up_does_not_displace_the_incumbent():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    # constant models tie at 0.76 on rung 0 (a majority class of 76 %); the
    # incumbent a = 0.5 scores 0.776 on rung 1
    trials = [_record(a, 0, 0.76, "new", rungs) for a in (0.1, 0.2, 0.3)]
    trials += [_record(0.5, 0, 0.762, "new", rungs)]
    trials += [_record(0.5, 1, 0.776, "promoted", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.5}, 0.776)
    # a tied constant model climbs to rung 3 and scores as before: measured
    # on more rows, lower, it says nothing against the incumbent
    trials += [_record(0.1, 1, 0.76, "promoted", rungs)]
    trials += [_record(0.1, 2, 0.76, "promoted", rungs)]
    trials += [_record(0.1, 3, 0.76, "promoted", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.5}, 0.776)
    assert ledger.params(ledger.final_candidate()) == {"a": 0.5}
    # a rival there that beats it on both scales takes its place
    trials += [_record(0.7, 3, 0.83, "promoted", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.7}, 0.83)
    # nor is it held once a trial of it failed higher up
    ledger = RungLedger(rungs, factor=3)
    failed = _record(0.5, 2, math.nan, "promoted", rungs)
    ledger.absorb([*trials[:5], failed, *trials[5:8]])
    assert ledger.incumbent_trajectory[-1][1] == {"a": 0.1}


def test_an_incumbent_that_falls_one_rung_up_gives_way_to_the_rung_below():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    # as a boosting run with almost no regularisation on shuttle: the
    # incumbent a = 0.5 scores 0.9963 on rung 1 and 0.8639 one rung up,
    # where a = 0.3 scored 0.9946 on rung 1
    trials = [_record(a, 0, s, "new", rungs) for a, s in ((0.5, 0.99), (0.3, 0.98))]
    trials += [_record(0.1, 0, 0.7, "new", rungs)]
    trials += [_record(0.5, 1, 0.9963, "promoted", rungs)]
    trials += [_record(0.3, 1, 0.9946, "promoted", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.5}, 0.9963)
    trials += [_record(0.5, 2, 0.8639, "promoted", rungs)]
    ledger.absorb(trials)
    # its own fall is the only step measured: counted as a gain of the
    # rows, it would put a = 0.5 back at 0.9963, above every rival
    assert ledger.rung_offsets()[2] == ledger.rung_offsets()[1]
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.3}, 0.9946)
    assert ledger.params(ledger.final_candidate()) == {"a": 0.3}


def test_an_incumbent_below_the_highest_rung_climbed_climbs_first():
    # as SVC on covertype at 60 s: the incumbent stood alone but for one
    # other setting on its rung (two trials: none in the top third), while
    # settings the lead rung found climbed two rungs higher; it would have
    # been the answer on its few rows. It climbs first, and without a
    # higher rung climbed, only the top third does
    rungs = Rungs.geometric(1000, 20, 3)
    trials = [_record(a, 0, a, "new", rungs) for a in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)]
    trials += [_record(0.6, 1, 0.9, "promoted", rungs)]
    trials += [_record(0.5, 1, 0.8, "promoted", rungs)]
    ledger = RungLedger(rungs, factor=3)
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.6}, 0.9)
    assert ledger.promotion({}) is None
    trials += [_record(0.5, 2, 0.6, "promoted", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.6}, 0.9)
    key, k = ledger.promotion({})
    assert (ledger.params(key), k) == ({"a": 0.6}, 2)
    # not while it runs there, nor where it may not start
    assert ledger.promotion({key: {2}}) is None
    assert ledger.promotion({}, lambda key, k: k != 2) is None


def test_once_a_trial_on_all_data_succeeds_the_incumbent_is_the_best_there():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = [_record(a, 0, a, "new", rungs) for a in (0.1, 0.2, 0.3)]
    trials += [_record(0.3, 2, 0.9, "promoted", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.3}, 0.9)
    trials += [_record(0.2, 4, 0.6, "promoted", rungs)]
    ledger.absorb(trials)
    # the search returns the best on all data: so is the incumbent, though
    # a better score stands two rungs below
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.2}, 0.6)
    assert ledger.incumbent_row() == 4
    assert ledger.answer_measured()


def test_a_better_score_on_the_rung_below_all_data_is_the_answer_and_climbs():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = [_record(a, 3, a, "promoted", rungs) for a in (0.5, 0.8)]
    trials += [_record(0.8, 4, 0.6, "final", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.8}, 0.6)
    # a = 0.2 scores 0.7 on a third of the rows, above the 0.6 that a = 0.8
    # scored on all of them: learning curves rise, so it is the answer
    trials += [_record(0.2, 3, 0.7, "promoted", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.2}, 0.7)
    assert ledger.incumbent_row() == 3
    assert not ledger.answer_measured()
    # it is measured on all data next, though three trials share its rung
    # (only the top third of a rung climbs), and time is kept for it
    key, k = ledger.promotion({})
    assert (ledger.params(key), k) == ({"a": 0.2}, 4)
    assert ledger.params(ledger.final_candidate()) == {"a": 0.2}
    # once measured there, all data decides
    for score, answer in ((0.65, ({"a": 0.2}, 0.65)), (0.55, ({"a": 0.8}, 0.6))):
        ledger = RungLedger(rungs, factor=3)
        ledger.absorb([*trials, _record(0.2, 4, score, "promoted", rungs)])
        assert ledger.incumbent_trajectory[-1][1:] == answer
        assert ledger.answer_measured()
    # a score below the best on all data does not answer, nor one whose
    # trial on all data failed
    failed = _record(0.2, 4, math.nan, "promoted", rungs)
    for score, more in ((0.59, []), (0.7, [failed])):
        ledger = RungLedger(rungs, factor=3)
        ledger.absorb([*trials[:3], _record(0.2, 3, score, "promoted", rungs), *more])
        assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.8}, 0.6)
        assert ledger.answer_measured()
    # but a trial on all data stopped by the search's deadline measured
    # nothing and says nothing against it: it is still the answer, on its
    # subset, and the next to measure on all data
    stopped = _record(0.2, 4, math.nan, "final", rungs)
    stopped.failed = stopped.stopped = True
    ledger = RungLedger(rungs, factor=3)
    ledger.absorb([*trials, stopped])
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.2}, 0.7)
    assert ledger.incumbent_row() == 3
    assert ledger.stopped == {np.array([0.2]).tobytes()}
    assert ledger.params(ledger.final_candidate()) == {"a": 0.2}
    # the answer's warning says why it rests on a subset
    search = _search()
    search._ledger, search._rungs = ledger, rungs
    results = {
        "resource_fraction": [t.fraction for t in [*trials, stopped]],
        "n_resources": [t.n_resources for t in [*trials, stopped]],
    }
    with pytest.warns(UserWarning, match="grace period and was stopped"):
        assert search._select_best(results, "score") == 3


def test_the_first_configuration_to_climb_to_all_data_is_the_incumbent():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    # rung 3 (below all data): six configurations, the top third a=0.6
    # (the incumbent) and a=0.5
    configs = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
    trials = [_record(a, 3, a, "promoted", rungs) for a in configs]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.6}, 0.6)
    incumbent = np.array([0.6]).tobytes()

    def cheaper_only(key, k):  # the incumbent does not fit in the time left
        return key != incumbent

    # the rival does not climb in its place, while time is kept for the
    # incumbent's own evaluation on all data
    assert ledger.promotion({}, cheaper_only) is None
    key, k = ledger.promotion({})
    assert (ledger.params(key), k) == ({"a": 0.6}, 4)
    # once a trial on all data has finished, promotions are ASHA's again,
    # also when it failed (the incumbent cannot be measured there)
    for score in (0.7, np.nan):
        ledger = RungLedger(rungs, factor=3)
        ledger.absorb([*trials, _record(0.6, 4, score, "promoted", rungs)])
        key, k = ledger.promotion({}, cheaper_only)
        assert (ledger.params(key), k) == ({"a": 0.5}, 4)


def test_without_all_data_the_answer_is_the_incumbent_not_the_luckiest_small_trial(
    data,
):
    X, y = data
    # every fit on all rows fails, and a few configurations score
    # 0.99 on 20 rows: the best there is luck, not the answer
    search = _search(
        n_iter=12, n_initial_points=1000, hedge_fraction=0.0, lucky=True, refit=False
    )
    with pytest.warns(UserWarning, match="no trial on all data succeeded"):
        search.fit(X, y)
    rows = _rows(search)
    assert not any(r["rung"] == 4 and np.isfinite(r["score"]) for r in rows)
    best = rows[search.best_index_]
    highest = max(r["rung"] for r in rows if np.isfinite(r["score"]))
    assert best["rung"] >= highest - 1
    assert max(rows, key=lambda r: r["score"])["rung"] == 0
    assert search.incumbent_trajectory_[-1][1] == search.best_params_


def _ledger_with_a_final_of_100_s():
    """An incumbent whose fit on 54 % of the rows, scaled to all rows along a
    line of slope 1, costs 100 s on one split and one worker (the cheapest
    fit is the fixed part)."""
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = []
    for a, k, score, cost in [(0.1, 0, 0.5, 0.01), (0.3, 3, 0.9, 54.01)]:
        record = _record(a, k, score, "new", rungs)
        record.cost = cost
        trials.append(record)
    ledger.absorb(trials)
    return ledger


@pytest.mark.parametrize(
    ("max_time", "kept"),
    [
        # the evaluation is predicted at 100 s, 150 s with the margin: half
        # of max_time plus the grace is 144 s, enough only without the
        # margin, so nothing is kept and the search uses all its time
        (240.0, 0.0),
        # half of 320 s plus the grace is 192 s: the 150 s are kept
        (320.0, 150.0),
        (400.0, 150.0),
    ],
)
def test_time_is_kept_for_the_final_evaluation_only_if_it_fits_with_its_margin(
    max_time, kept
):
    ledger = _ledger_with_a_final_of_100_s()
    grace = 0.1 * max_time
    left = ledger.seconds_allowed(200.0, max_time, grace, n_splits=1, n_jobs=1)
    assert left == pytest.approx(200.0 - kept, abs=0.1)


def test_no_time_is_kept_for_a_final_evaluation_out_of_reach():
    ledger = _ledger_with_a_final_of_100_s()
    key = ledger.incumbent[0]
    predicted = ledger.predicted_cost(key, ledger.rungs.top)
    assert predicted == pytest.approx(100.0, abs=0.1)
    # one split on one worker: started with at least half its predicted
    # time left, it may still finish
    assert ledger.final_in_reach(key, predicted / 2, n_splits=1, n_jobs=1)
    assert not ledger.final_in_reach(key, predicted / 2 - 0.1, 1, 1)
    # two splits on two workers: the same wall time
    assert ledger.final_in_reach(key, predicted / 2, n_splits=2, n_jobs=2)
    # 400 s of max_time keep 150 s while the evaluation can start in time;
    # with 9 s and the 40 s grace left it cannot, and nothing is kept
    assert ledger.seconds_allowed(60.0, 400.0, 40.0, 1, 1) == pytest.approx(
        -90.0, abs=0.1
    )
    assert ledger.seconds_allowed(9.0, 400.0, 40.0, 1, 1) == 9.0


def test_an_all_data_trial_out_of_reach_is_not_started(data):
    X, y = data
    # 3 s per split on all rows against 2 s of max_time and 1 s of grace:
    # the incumbent's all-data trial could only be stopped at the deadline
    # and recorded as failed, so it is not started
    search = _search(n_iter=10_000, max_time=2.0, n_initial_points=1000, delay=3.0)
    with parallel_backend("threading", n_jobs=1):
        with pytest.warns(UserWarning, match="predicted not to finish") as record:
            search.fit(X, y)
    # the warning points at the caller's line, not into the library
    subset = [w for w in record if "not on all data" in str(w.message)]
    assert subset and all(w.filename == __file__ for w in subset)
    rows = _rows(search)
    assert rows and not any(r["role"] == "final" for r in rows)
    assert all(np.isfinite(r["score"]) for r in rows)
    assert max(r["rung"] for r in rows) < 4
    assert rows[search.best_index_]["rung"] < 4


def test_a_hedge_that_scores_better_higher_up_is_the_incumbent():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = [_record(a, 0, a, "new", rungs) for a in (0.1, 0.2, 0.3)]
    trials += [_record(0.3, 1, 0.3, "promoted", rungs)]
    trials += [_record(0.9, 0, 0.1, "probe", rungs)]
    trials += [_record(0.9, 2, 0.35, "hedge", rungs)]
    ledger.absorb(trials)
    # measured on more rows and better than rung 1's best
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.9}, 0.35)
    assert ledger.params(ledger.final_candidate()) == {"a": 0.9}
    # its all-data trial failed: the next rival is evaluated instead
    trials += [_record(0.9, 4, np.nan, "final", rungs)]
    ledger.absorb(trials)
    assert ledger.params(ledger.final_candidate()) == {"a": 0.3}


def test_a_lead_trial_is_compared_after_the_gain_its_extra_rows_give():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = [_record(a, 0, a, "new", rungs) for a in (0.1, 0.2, 0.3, 0.4, 0.5)]
    # two promotions measure the gain of the step from rung 0 to rung 1
    trials += [_record(0.5, 1, 0.6, "promoted", rungs)]
    trials += [_record(0.4, 1, 0.52, "promoted", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.5}, 0.6)
    # a lead trial on rung 2 scores higher than 0.6 as it is, but by less
    # than the median gain of a step (0.11; the step from rung 1, never
    # measured, takes it too), which its extra rows alone explain
    trials += [_record(0.05, 2, 0.68, "lead", rungs)]
    # nor does a lead trial two rungs above the highest climbed, scoring
    # like a constant model, set aside the rungs where the incumbent stands
    trials += [_record(0.01, 3, 0.3, "lead", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.5}, 0.6)
    assert ledger.params(ledger.final_candidate()) == {"a": 0.5}
    # one that beats it by more than the gain is the incumbent
    trials += [_record(0.06, 2, 0.75, "lead", rungs)]
    ledger.absorb(trials)
    assert ledger.incumbent_trajectory[-1][1:] == ({"a": 0.06}, 0.75)


def test_asha_bookkeeping(data):
    X, y = data
    search = _search(n_iter=40, n_initial_points=1000, hedge_fraction=0.0).fit(X, y)
    res = search.cv_results_
    assert len(res["params"]) == 40  # n_iter respected, the final included
    assert search.n_resources_ == RUNG_ROWS
    assert search.min_resources_ == MIN_ROWS and search.max_resources_ == 1000
    fractions = np.asarray(res["resource_fraction"], float)
    np.testing.assert_allclose(fractions, np.asarray(RUNG_ROWS)[res["rung"]] / 1000)
    np.testing.assert_array_equal(
        res["n_resources"], np.asarray(RUNG_ROWS)[res["rung"]]
    )
    _assert_asha_rules(search)
    roles = set(res["role"])
    assert roles <= {"new", "promoted", "final"}
    # new configurations start on the base rung; promotions climb one rung
    assert all(r == 0 for r, role in zip(res["rung"], res["role"]) if role == "new")
    assert {"new", "promoted"} <= roles
    # the answer is measured on all data
    assert res["resource_fraction"][search.best_index_] == 1.0
    full = np.flatnonzero(fractions == 1.0)
    assert search.best_index_ == full[np.argmax(res["mean_test_score"][full])]
    assert search.best_estimator_.rows_ == N_ROWS


@pytest.mark.parametrize("hyperband", [False, True])
def test_the_first_configurations_are_screened_before_any_climbs(data, hyperband):
    # as scikit-learn's halving screens its first rung: the first to climb
    # are the best of n_screened, not of the first three to finish
    X, y = data
    kw = dict(n_iter=40, n_initial_points=1000, hedge_fraction=0.5)
    if hyperband:
        kw["start_rungs"] = "hyperband"
    rows = _rows(_search(n_screened=9, **kw).fit(X, y))
    first = min(r["iter"] for r in rows if r["role"] != "new" or r["rung"] > 0)
    screened = [r for r in rows if r["iter"] < first]
    assert len(screened) >= 9
    assert all(r["role"] == "new" and r["rung"] == 0 for r in screened)
    # the first promotion is the best configuration screened
    promoted = next(r for r in rows if r["role"] == "promoted")
    assert promoted["a"] == max(screened, key=lambda r: r["score"])["a"]
    # without the screen, something climbs or starts higher among the first 9
    rows = _rows(_search(n_screened=0, **kw).fit(X, y))
    assert any(r["role"] != "new" or r["rung"] > 0 for r in rows[:9])


def test_finalize_evaluates_the_incumbent_on_all_data(data):
    X, y = data
    # four trials: no configuration climbs to the top rung by promotion
    search = _search(n_iter=5, n_initial_points=1000, hedge_fraction=0.0).fit(X, y)
    rows = _rows(search)
    assert len(rows) == 5
    assert [r["role"] for r in rows[:-1]].count("final") == 0
    assert rows[-1]["role"] == "final" and rows[-1]["rung"] == 4
    # the final configuration was the incumbent: the best on the highest rung
    highest = max(r["rung"] for r in rows[:-1])
    best = max((r for r in rows[:-1] if r["rung"] == highest), key=lambda r: r["score"])
    assert rows[-1]["a"] == best["a"]
    assert search.best_index_ == 4
    assert search.incumbent_trajectory_[-1][1] == {"a": best["a"]}
    assert search.incumbent_trajectory_[-1][2] == rows[-1]["score"]


def _n_validation_rows(estimator, X, y):
    return float(len(X))


@pytest.mark.parametrize("subsample", [True, False])
def test_trials_on_subsets_are_scored_on_at_most_twice_their_rows(subsample):
    # cv=3 on 3,000 rows: 2,000 training and 1,000 validation rows per split
    X, y = make_classification(n_samples=3000, random_state=0)
    search = HalvingBayesSearchCV(
        LogisticRegression(),
        {"C": Real(1e-2, 1e2, prior="log-uniform")},
        n_iter=12,
        n_initial_points=4,
        min_resources=20,
        cv=3,
        scoring=_n_validation_rows,
        random_state=0,
        subsample_validation=subsample,
    ).fit(X, y)
    res = search.cv_results_
    assert set(res["n_resources"]) > {20, 2000}
    seen = set()
    for n_train, n_rows in zip(res["n_resources"], res["split0_test_score"]):
        expected = min(1000, max(500, 2 * n_train)) if subsample else 1000
        assert n_rows == expected
        seen.add(n_rows)
    if subsample:
        assert 500 in seen and 1000 in seen
    assert res["split0_test_score"][search.best_index_] == 1000


def test_max_time_ends_with_a_measurement_on_all_data(data):
    X, y = data
    # 0.1 s per split on all data: the budget covers few full-data trials
    # (threads: no worker processes to start)
    search = _search(n_iter=10_000, max_time=1.0, n_initial_points=1000, delay=0.1)
    with parallel_backend("threading", n_jobs=1):
        search.fit(X, y)
    res = search.cv_results_
    assert len(res["params"]) < 10_000
    assert res["resource_fraction"][search.best_index_] == 1.0
    assert np.isfinite(res["mean_test_score"][search.best_index_])
    assert search.incumbent_trajectory_[-1][1] == search.best_params_


def test_the_time_kept_for_the_final_evaluation_is_not_left_idle(data):
    X, y = data
    # 1 s per split on all data: about 3 s are kept for the final evaluation
    # (before any promotion gets there); it takes about 2 s, and the search
    # goes on after it
    search = _search(n_iter=10_000, max_time=6.0, n_initial_points=1000, delay=1.0)
    with parallel_backend("threading", n_jobs=1):
        search.fit(X, y)
    rows = _rows(search)
    finals = [i for i, r in enumerate(rows) if r["role"] == "final"]
    assert len(finals) == 1
    final = rows[finals[0]]
    assert final["rung"] == 4 and np.isfinite(final["score"])
    after = rows[finals[0] + 1 :]
    assert after and all(r["iter"] > final["iter"] for r in after)
    assert search.best_index_ == finals[0] or rows[search.best_index_]["rung"] == 4


@pytest.mark.parametrize("space", [{}, {"a": [0.2, 0.5, 0.8]}])
def test_small_finite_spaces_end_early_with_an_all_data_answer(data, space):
    X, y = data
    search = HalvingBayesSearchCV(
        Curves(), space, n_iter=30, cv=2, random_state=0, asynchronous=False
    ).fit(X, y)
    res = search.cv_results_
    assert len(res["params"]) < 30
    pairs = [(tuple(p.items()), r) for p, r in zip(res["params"], res["rung"])]
    assert len(set(pairs)) == len(pairs)
    assert res["resource_fraction"][search.best_index_] == 1.0


def test_a_finite_space_spends_its_budget_climbing_to_the_grid_answer():
    # twelve settings, each tried once on the base rung: the best third
    # alone climbing would stop with trials left and one setting measured on
    # all rows; given the trials, every one climbs there, and the answer is
    # GridSearchCV's
    X, y = make_classification(600, 8, random_state=0)
    grid = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.001, 0.01, 0.1]}
    space = {name: Categorical(values) for name, values in grid.items()}
    search = HalvingBayesSearchCV(
        SVC(), space, n_iter=80, min_resources=30, random_state=0
    ).fit(X, y)
    res = search.cv_results_
    on_all = [
        tuple(p.values())
        for p, f in zip(res["params"], res["resource_fraction"])
        if f == 1.0
    ]
    assert sorted(on_all) == sorted(itertools.product(*grid.values()))
    assert len(res["params"]) < 80
    reference = GridSearchCV(SVC(), grid).fit(X, y)
    assert search.best_params_ == reference.best_params_
    assert search.best_score_ == pytest.approx(reference.best_score_)


def test_single_trial_budget_runs_one_configuration_on_all_data(data):
    X, y = data
    search = _search(n_iter=1).fit(X, y)
    assert list(search.cv_results_["role"]) == ["final"]
    assert search.cv_results_["resource_fraction"][0] == 1.0


def test_parallel_workers_are_kept_busy(data):
    X, y = data
    asks = []
    search = _search(n_iter=30, n_initial_points=1000, n_jobs=2, asynchronous=True)
    ask = search._ask

    def spy(ctx, n_slots):
        trials = ask(ctx, n_slots)
        asks.append((n_slots, ctx.n_remaining(), len(trials)))
        return trials

    search._ask = spy
    with parallel_backend("threading", n_jobs=2):
        search.fit(X, y)
    assert len(search.cv_results_["params"]) == 30
    _assert_asha_rules_async(search)
    # every ask with budget to spare (one trial is kept for the final
    # evaluation until a configuration reaches all data) gets a trial
    assert all(n >= 1 for slots, left, n in asks if left > 1)


def _assert_asha_rules_async(search):
    rows = _rows(search)
    pairs = [(r["a"], r["rung"]) for r in rows]
    assert len(set(pairs)) == len(pairs)


# ----------------------------------------------------------------------
# the hedge: crossing and parallel learning curves
# ----------------------------------------------------------------------
def test_crossing_curves_raise_the_base_rung(data):
    X, y = data
    search = _search(
        crossing=True,
        n_iter=90,
        n_initial_points=1000,
        n_screened=0,
        hedge_fraction=0.5,
    ).fit(X, y)
    # rungs 0 and 1 rank backwards, rungs 2-4 agree
    assert search.base_rung_ == 2
    assert [b for _, b in search.base_rung_trajectory_] == [0, 1, 2]
    assert search.rung_agreement_[0].misleads
    assert search.rung_agreement_[1].misleads
    rows = _rows(search)
    top = len(RUNG_ROWS) - 1
    capped = 0
    for r in rows:
        base = _base_when_proposed(search, rows, r)
        # nothing starts below the base, nothing is promoted from below it
        if r["role"] in ("new", "probe"):
            assert r["rung"] == base, r
        if r["role"] == "promoted":
            assert r["rung"] > base, r
        if r["role"] == "hedge":
            # two rungs up, but never on all rows
            assert r["rung"] == min(base + 2, top - 1), r
            capped += base + 2 == top
    # some were proposed where two rungs up is all data
    assert capped > 0
    # the configuration returned is good on all data, not on 20 rows
    assert abs(search.best_params_["a"] - 0.8) < 0.15
    assert search.cv_results_["resource_fraction"][search.best_index_] == 1.0


@pytest.mark.parametrize("seed", [0, 1])
def test_hyperband_starts_measure_what_small_subsets_rank_low(data, seed):
    # without hedges nothing doubts the two lowest rungs, which rank the
    # configurations backwards: starting on the base rung only, the answer
    # is their best (a = 0.2); starting some configurations higher, as
    # Hyperband's brackets do, finds the best on all data (a = 0.8)
    X, y = data
    kw = dict(crossing=True, n_iter=60, n_initial_points=5, hedge_fraction=0.0)
    base = _search(**kw, lead_share=0.0, random_state=seed).fit(X, y)
    assert all(r["rung"] == 0 for r in _rows(base) if r["role"] == "new")
    assert abs(base.best_params_["a"] - 0.2) < 0.1

    search = _search(
        **kw, start_rungs="hyperband", lead_share=0.0, random_state=seed
    ).fit(X, y)
    rows = _rows(search)
    started = [i for i, r in enumerate(rows) if r["role"] == "new"]
    above_base = {
        i
        for i in started
        if rows[i]["rung"] > _base_when_proposed(search, rows, rows[i])
    }
    # Hyperband's shares for the 4 rungs below all data: 55 % on the
    # lowest, 45 % above it; none starts on all data
    assert 0.15 * len(started) <= len(above_base) <= 0.75 * len(started)
    assert all(rows[i]["rung"] < 4 for i in started)
    # starts above the base rung are random, as in Hyperband's brackets: a
    # model fitted on the rungs below would rank the crossing settings low
    # there too; the model proposes on the base rung
    proposed = search.cv_results_["acquisition_value"]
    assert not any(np.isfinite(proposed[i]) for i in above_base)
    assert any(np.isfinite(proposed[i]) for i in set(started) - above_base)
    assert abs(search.best_params_["a"] - 0.8) < 0.15
    assert search.cv_results_["resource_fraction"][search.best_index_] == 1.0
    _assert_asha_rules(search)


def test_neighbours_follow_an_optimum_that_moves_with_the_rows(data):
    # the best a drifts from 0.2 on 20 rows to 0.8 on all of them: what
    # climbs is what the lower rungs favoured, unless promotions bring
    # neighbours that are measured where they climb to
    X, y = data
    kw = dict(drift=True, n_iter=60, n_initial_points=1000, hedge_fraction=0.0)
    off, on = [], []
    for seed in range(6):
        off.append(_search(**kw, random_state=seed).fit(X, y))
        on.append(_search(**kw, neighbour_fraction=1.0, random_state=seed).fit(X, y))
    assert all("neighbour" not in s.cv_results_["role"] for s in off)
    n_with = 0
    for search in on:
        rows = _rows(search)
        neighbours = [r for r in rows if r["role"] == "neighbour"]
        n_with += bool(neighbours)
        for r in neighbours:
            # proposed with a promotion to its rung, close to it, two or more
            # rungs above the base rung, below all data
            twins = [
                p
                for p in rows
                if p["role"] == "promoted"
                and (p["iter"], p["rung"]) == (r["iter"], r["rung"])
            ]
            base = _base_when_proposed(search, rows, r)
            assert twins and base + 2 <= r["rung"] < 4
            assert min(abs(p["a"] - r["a"]) for p in twins) < 0.5
        _assert_asha_rules(search)
        assert search.cv_results_["resource_fraction"][search.best_index_] == 1.0
    # in the others the base rung rose to rung 2 (tied scores): no rung is
    # two above it below all data
    assert n_with >= 3

    def miss(searches):
        return np.median([abs(s.best_params_["a"] - 0.8) for s in searches])

    # measured: 0.32 without, 0.19 with
    assert miss(on) < miss(off) - 0.05


@pytest.mark.parametrize("seed", [0, 1])
def test_lead_rung_bo_finds_what_small_subsets_rank_low(data, seed):
    # the two lowest rungs rank backwards and nothing doubts them (no
    # hedges): started on the base rung only, the answer is their best
    # (a = 0.2); with a share of the time for BO on the rung below all data,
    # a GP of that rung's trials alone finds the best on all data (a = 0.8)
    X, y = data
    kw = dict(crossing=True, n_iter=60, n_initial_points=5, hedge_fraction=0.0)
    base = _search(**kw, lead_share=0.0, random_state=seed).fit(X, y)
    assert "lead" not in base.cv_results_["role"]
    assert abs(base.best_params_["a"] - 0.2) < 0.1

    search = _search(**kw, lead_share=0.5, random_state=seed).fit(X, y)
    rows = _rows(search)
    lead = [i for i, r in enumerate(rows) if r["role"] == "lead"]
    # without max_time the lead rung is the one below all data; lead trials
    # start only once n_initial_points trials have succeeded
    assert len(lead) >= 5
    assert all(rows[i]["rung"] == 3 for i in lead)
    assert min(rows[i]["iter"] for i in lead) >= 5
    # random on the rung at first (promoted configurations count towards
    # the three), then the rung's own GP
    proposed = search.cv_results_["acquisition_value"]
    assert sum(np.isfinite(proposed[i]) for i in lead) >= len(lead) - 3
    assert len({rows[i]["a"] for i in lead}) == len(lead)
    assert abs(search.best_params_["a"] - 0.8) < 0.15
    assert search.cv_results_["resource_fraction"][search.best_index_] == 1.0
    _assert_asha_rules(search)


def test_auto_lead_share_leads_only_in_low_dimensional_spaces(data):
    # "auto": the lead's 8 trials must give its GP 4 per dimension of the
    # encoded space; a boolean choice beside "a" makes 3 (one-hot)
    X, y = data
    kw = dict(n_iter=40, n_initial_points=5, hedge_fraction=0.0)
    one = _search(**kw).fit(X, y)
    assert one.lead_share_ == 0.5
    assert "lead" in one.cv_results_["role"]

    space = {"a": Real(0.0, 1.0), "crossing": [False, True]}
    wide = HalvingBayesSearchCV(Curves(), space, cv=2, random_state=0, **kw)
    wide.fit(X, y)
    assert wide.lead_share_ == 0.0
    assert "lead" not in wide.cv_results_["role"]

    # an explicit share is used whatever the width
    wide.set_params(lead_share=0.5).fit(X, y)
    assert wide.lead_share_ == 0.5
    assert "lead" in wide.cv_results_["role"]


def _lead_context(rungs, max_time, trials=(), pending=()):
    ctx = search_context(
        SPACE, n_train=rungs.n_train, max_time=max_time, n_jobs_effective=2
    )
    ctx.trials += list(trials)
    ctx.pending += list(pending)
    return ctx


def _costed(a, rung, role, cost, rungs):
    record = _record(a, rung, 0.5 + a / 10, role, rungs)
    record.cost = cost
    return record


def _linear_costs(rungs, configs):
    """Trials of ``configs`` on rungs 0 to 2, at 0.02 s per row (summed over
    splits)."""
    return [
        _costed(a, k, "new", 0.02 * rungs.rows[k], rungs)
        for k in range(3)
        for a in configs
    ]


def test_the_lead_rung_is_the_largest_where_enough_trials_fit():
    rungs = Rungs.geometric(n_train=1000, min_rows=20, factor=3)
    ledger = RungLedger(rungs, factor=3)
    ledger.absorb(_linear_costs(rungs, (0.1, 0.2, 0.3)))
    lead = LeadRung(0.5, rungs, seed=0)
    predicted = [ledger.predicted_cost(None, k) for k in range(5)]
    assert predicted[2] == pytest.approx(3.6)
    # the line fitted to the variable part (cost less the cheapest, 0.4 s)
    # of rungs 1 and 2 has slope log(3.2 / 0.8) / log(3)
    assert predicted[3] == pytest.approx(0.4 + 3.2 * 4.0)
    # 8 trials in half of max_time less the 21.2 s kept for the incumbent's
    # all-data evaluation, on 2 workers: 13.2 s fits in 130 s, not in 120 s
    # (without the time kept, 110 s would do); never the all-data rung, never
    # at or below the base rung
    ctx = _lead_context(rungs, 130.0)
    kept = 130.0 - ledger.seconds_allowed(130.0, 130.0, 13.0, ctx.n_splits, 2)
    assert kept == pytest.approx(21.2, abs=0.05)
    assert lead.rung(ctx, ledger) == 3
    assert lead.rung(_lead_context(rungs, 120.0), ledger) == 2
    assert lead.rung(_lead_context(rungs, 1e6), ledger) == 3
    assert lead.rung(_lead_context(rungs, None), ledger) == 3
    assert lead.rung(_lead_context(rungs, 1.2 * 8 - 0.1), ledger) is None
    ledger.base = 2
    assert lead.rung(_lead_context(rungs, 100.0), ledger) is None
    assert LeadRung(0.0, rungs, seed=0).rung(_lead_context(rungs, None), ledger) is None
    # a lead on rung 3 stays there while 8 trials are predicted to take at
    # most twice its share (13.2 s against 12.5 s and 25 s), not beyond;
    # a resumed search finds its rung among its trials
    ledger.base = 0
    on_3 = Trial({"a": 0.9}, rungs.fractions[3], extras={"role": "lead"})
    resumed = LeadRung(0.5, rungs, seed=0)
    assert resumed.rung(_lead_context(rungs, 100.0, pending=[on_3]), ledger) == 3
    assert resumed.rung(_lead_context(rungs, 55.0, pending=[on_3]), ledger) == 2


def test_the_lead_rung_is_at_most_two_rungs_above_a_measured_one():
    # costs on rungs far above the measured ones are extrapolated (and SVC's
    # grow faster than the curve there): with successes on rung 0 only, the
    # lead goes no higher than rung 2 however long the search
    rungs = Rungs.geometric(n_train=10_000, min_rows=20, factor=3)
    ledger = RungLedger(rungs, factor=3)
    ledger.absorb([_costed(a, 0, "new", 0.4, rungs) for a in (0.1, 0.2, 0.3)])
    assert rungs.top == 6
    assert LeadRung(0.5, rungs, seed=0).rung(_lead_context(rungs, 1e6), ledger) == 2
    ledger.absorb(
        [
            *[_costed(a, 0, "new", 0.4, rungs) for a in (0.1, 0.2, 0.3)],
            _costed(0.3, 1, "promoted", 1.2, rungs),
        ]
    )
    assert LeadRung(0.5, rungs, seed=0).rung(_lead_context(rungs, 1e6), ledger) == 3


def test_the_lead_gp_has_the_lead_length_scale_prior():
    # the lead's GP (not BayesSearchCV's) puts a normal prior on its log
    # length scales: with the paper's flat one it proposed SVC's corners
    rungs = Rungs.geometric(n_train=1000, min_rows=20, factor=3)
    on_3 = [_record(a, 3, 0.5 + a / 4, "lead", rungs) for a in (0.1, 0.4, 0.7, 0.9)]
    lead = LeadRung(0.5, rungs, seed=0)
    (trial,) = lead.propose(_lead_context(rungs, None, trials=on_3), 3, 1, 5, [])
    assert np.isfinite(trial.extras["acquisition_value"])
    kernel = lead._proposers[3].surrogate.kernel_
    assert kernel.log_length_prior == LEAD_LENGTH_PRIOR == (0.0, 1.0)


def test_under_max_time_the_lead_gp_weighs_what_its_trials_cost():
    # one rung, where cost depends on the setting alone: under max_time the
    # lead maximises EI per second, with a GP of its trials' log fit times,
    # and moves its proposals towards the cheap side of two equal peaks;
    # without max_time, EI (the seed alone fixes the trials)
    rungs = Rungs.geometric(n_train=1000, min_rows=20, factor=3)
    on_3 = []
    for a, score in ((0.1, 0.5), (0.35, 0.6), (0.65, 0.6), (0.9, 0.5)):
        on_3.append(_costed(a, 3, "lead", float(np.exp(10 * a)), rungs))
        on_3[-1].score = score
    proposed = {}
    for max_time in (None, 100.0):
        proposed[max_time] = []
        for seed in range(4):
            lead = LeadRung(0.5, rungs, seed=seed)
            ctx = _lead_context(rungs, max_time, trials=on_3)
            (trial,) = lead.propose(ctx, 3, 1, 5, [])
            proposed[max_time].append(trial.params["a"])
            proposer = lead._proposers[3]
            assert proposer.acquisition == (
                "ei" if max_time is None else "ei_per_second"
            )
        if max_time is not None:
            np.testing.assert_allclose(
                np.sort(proposer.cost_surrogate.y_),
                10 * np.array([0.1, 0.35, 0.65, 0.9]),
            )
    # between the two peaks, EI alone has no side
    np.testing.assert_allclose(proposed[None], 0.5, atol=0.01)
    assert np.mean(proposed[100.0]) < np.mean(proposed[None]) - 0.05


def test_a_promotion_is_predicted_to_cost_at_least_its_own_growth():
    rungs = Rungs.geometric(n_train=1000, min_rows=20, factor=3)
    ledger = RungLedger(rungs, factor=3)
    # every configuration's cost grows with the rows, except a=0.9's, whose
    # variable part (beyond the cheapest trial's 0.4 s) grows with their
    # square from rung 1 to rung 2
    linear = _linear_costs(rungs, np.linspace(0.1, 0.8, 8))
    steep = [
        _costed(0.9, 1, "new", 0.4 + 1.0, rungs),
        _costed(0.9, 2, "promoted", 0.4 + 9.0, rungs),
    ]
    ledger.absorb(linear + steep)
    key = np.array([0.9]).tobytes()
    assert ledger.predicted_cost(key, 3) == pytest.approx(0.4 + 9.0 * 3**2)
    # a configuration that grew as the curve did is predicted like a new one
    plain = np.array([0.2]).tobytes()
    assert ledger.predicted_cost(plain, 3) == pytest.approx(
        ledger.predicted_cost(None, 3)
    )
    assert ledger.predicted_cost(plain, 3) < 0.4 + 3.2 * 3**2


def test_a_young_search_starts_nothing_above_the_base_that_outlasts_it():
    rungs = Rungs.geometric(n_train=1000, min_rows=20, factor=3)
    ledger = RungLedger(rungs, factor=3)
    ledger.absorb(_linear_costs(rungs, (0.1, 0.2, 0.3)))
    # 5 splits in three rounds on 2 workers: rung 1 (1.2 s summed) takes
    # 0.72 s, rung 2 (3.6 s summed) 2.16 s
    young = ledger.fits_in(math.inf, 5, 2, elapsed=2.0)
    assert young(None, 1)
    assert not young(None, 2)
    assert ledger.fits_in(math.inf, 5, 2, elapsed=2.2)(None, 2)
    # the time left still limits whatever the search has run
    assert not ledger.fits_in(2.0, 5, 2, elapsed=100.0)(None, 2)
    # without the clock (no max_time), anything fits
    assert ledger.fits_in(math.inf, 5, 2)(None, 4)
    # the base rung is exempt, so a young search always has a trial to start
    ledger.base = 2
    assert young(None, 2)
    assert not young(None, 3)


def test_under_max_time_a_promotion_waits_until_the_search_has_run_as_long():
    rungs = Rungs.geometric(n_train=1000, min_rows=20, factor=3)
    search = HalvingBayesSearchCV(
        Curves(),
        SPACE,
        lead_share=0.0,
        hedge_fraction=0.0,
        n_screened=0,
        random_state=0,
    )

    def proposed(max_time, elapsed):
        ctx = search_context(SPACE, n_train=1000, max_time=max_time, n_jobs_effective=2)
        # the search's clock, stopped: the test does not depend on how fast
        # the machine runs it
        ctx.elapsed = lambda: elapsed
        search._init_search(ctx)
        # a=0.3 leads rung 2 (3 of 3 there) and is due to climb to rung 3,
        # predicted at 13.2 s summed (as in the test of the lead rung), 6.6 s
        # on two splits and two workers
        ctx.trials += _linear_costs(rungs, (0.1, 0.2, 0.3))
        trials = search._ask(ctx, 3)
        return [(rungs.of(t.fraction), t.extras["role"]) for t in trials]

    assert {k for k, _ in proposed(1e4, elapsed=1.0)} == {0}
    assert (3, "promoted") not in proposed(1e4, elapsed=6.0)
    assert (3, "promoted") in proposed(1e4, elapsed=7.0)
    # without max_time the clock does not choose the trials
    assert (3, "promoted") in proposed(None, elapsed=1.0)


def test_a_lead_trial_is_due_while_lead_trials_have_less_than_their_share():
    rungs = Rungs.geometric(n_train=1000, min_rows=20, factor=3)
    ledger = RungLedger(rungs, factor=3)
    base = [_costed(a, 0, "new", 1.0, rungs) for a in (0.1, 0.2, 0.3, 0.4)]
    ledger.absorb(base)

    class Fresh:
        # a LeadRung reads one search's trials as they are appended; each
        # context here is a different search
        def due(self, ctx, ledger, chosen):
            return LeadRung(0.25, rungs, seed=0).due(ctx, ledger, chosen)

    lead = Fresh()
    timed = 1e6
    assert lead.due(_lead_context(rungs, timed, base), ledger, [])
    # 1 s of 5 s is lead: 20 %, due; 2 s of 6 s: no longer
    one = [_costed(0.5, 3, "lead", 1.0, rungs)]
    assert lead.due(_lead_context(rungs, timed, base + one), ledger, [])
    two = [*one, _costed(0.6, 3, "lead", 1.0, rungs)]
    assert not lead.due(_lead_context(rungs, timed, base + two), ledger, [])
    # running lead trials count at their predicted cost (the median on
    # the rung: 1 s), and so do those chosen in the same proposal
    running = Trial({"a": 0.7}, rungs.fractions[3], extras={"role": "lead"})
    ctx = _lead_context(rungs, timed, base + one, [running])
    assert not lead.due(ctx, ledger, [])
    ctx = _lead_context(rungs, timed, base + one)
    assert not lead.due(ctx, ledger, [running])
    # without max_time the shares are of training rows, not of seconds: one
    # trial on 540 rows outweighs four on 20
    assert not lead.due(_lead_context(rungs, None, base + one), ledger, [])
    many = base * 30  # 2,400 rows
    assert lead.due(_lead_context(rungs, None, many + one), ledger, [])
    assert not lead.due(_lead_context(rungs, None, many + two), ledger, [])


def test_a_lead_moving_to_another_rung_does_not_run_its_start_again():
    # cost predictions move the lead between rungs; each rung has a random
    # start of its own, or the lead would run the same configurations on
    # every rung it moves to
    rungs = Rungs.geometric(n_train=1000, min_rows=20, factor=3)
    lead = LeadRung(0.5, rungs, seed=0)
    ctx = _lead_context(rungs, None)
    proposed = []
    for k in (2, 3, 2, 3):
        for t in lead.propose(ctx, k, 1, it=0, running=[]):
            assert t.extras["role"] == "lead"
            assert rungs.of(t.fraction) == k
            ctx.trials.append(_record(t.params["a"], k, 0.5, "lead", rungs))
            proposed.append(t.params["a"])
    assert len(set(proposed)) == 4
    # the same seed gives the same lead trials (a resumed search goes on)
    again = LeadRung(0.5, rungs, seed=0)
    assert again.propose(_lead_context(rungs, None), 3, 1, 0, [])[0].params == {
        "a": proposed[1]
    }


def test_tied_rungs_are_skipped(data):
    # on the two lowest rungs every configuration scores alike: nothing to
    # choose from there, so new configurations start on the third
    X, y = data
    search = _search(flat=True, n_iter=60, n_initial_points=1000).fit(X, y)
    assert search.base_rung_ == 2
    assert [b for _, b in search.base_rung_trajectory_] == [0, 1, 2]
    rows = _rows(search)
    assert sum(r["rung"] == 0 for r in rows) <= 6
    assert sum(r["rung"] == 1 for r in rows if r["role"] != "promoted") <= 6
    assert abs(search.best_params_["a"] - 0.8) < 0.15
    assert search.cv_results_["resource_fraction"][search.best_index_] == 1.0


def test_a_rung_where_most_settings_tie_below_the_best_is_skipped():
    # most random settings fit the same trivial model on rung 0 and a few
    # rise above it: the rung ranks what can fit on so few rows, so new
    # configurations start on rung 1
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = [_record(a, 0, 0.76, "new", rungs) for a in (0.1, 0.2)]
    trials += [_record(a, 0, 0.70 + a / 10, "new", rungs) for a in (0.8, 0.9, 1.0)]
    ledger.absorb(trials)
    assert ledger.base == 0  # two of five on the plateau: a ranking
    # the model's proposals near the incumbent do not count as random
    near = _record(0.3, 0, 0.76, "new", rungs)
    near.extras["acquisition_value"] = 0.1
    trials.append(near)
    ledger.absorb(trials)
    assert ledger.base == 0
    trials.append(_record(0.4, 0, 0.76, "new", rungs))
    ledger.absorb(trials)
    assert ledger.base == 0  # three of six: half, not most
    trials.append(_record(0.5, 0, 0.7601, "new", rungs))
    ledger.absorb(trials)
    assert ledger.base == 0  # most on the plateau, but none measured higher
    # a plateau setting scores the best on more rows: the rung misranks it
    trials.append(_record(0.1, 1, 0.83, "promoted", rungs))
    trials.append(_record(0.6, 0, 0.76, "new", rungs))  # judged at the next
    ledger.absorb(trials)
    assert ledger.base == 1
    assert [b for _, b in ledger.base_trajectory] == [0, 1]


@pytest.mark.parametrize(
    ("higher", "base"),
    [
        ([], 0),  # nothing measured higher: no evidence the rung misranks
        ([0.09], 0),  # the plateau holds on more rows: the settings' own
        ([0.09, 0.40], 0),  # more rows lift it, but not to the best
        ([0.09, 0.66], 1),  # a plateau setting scores the best: it was hidden
    ],
)
def test_a_plateau_that_more_rows_do_not_lift_keeps_the_base_rung(higher, base):
    # an SVC with a tiny C scores chance on any number of rows: most random
    # settings tie there, the few above rank well, and starting new ones a
    # rung up would only cost three times as much
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    plateau = (0.10, 0.101, 0.1005, 0.1002)
    trials = [_record(0.1 * (i + 1), 0, s, "new", rungs) for i, s in enumerate(plateau)]
    for i, score in enumerate(higher):
        trials.append(_record(0.1 * (i + 1), 1 + i, score, "promoted", rungs))
    trials.append(_record(0.9, 0, 0.66, "new", rungs))
    ledger.absorb(trials)
    assert ledger.base == base


@pytest.mark.parametrize(
    ("timed", "ratio", "n_pairs", "base"),
    [
        (True, 1.2, 5, 1),  # a third more rows for a fifth more: skip rung 0
        (True, 1.45, 5, 1),  # below factor / (factor - 1) = 1.5
        (True, 1.6, 5, 0),  # screening on rung 1 would screen fewer
        (True, 3.0, 5, 0),  # cost grows with the rows
        (True, 1.2, 4, 0),  # too few configurations measured on both
        (False, 1.2, 5, 0),  # without max_time seconds do not steer
    ],
)
def test_the_base_rung_rises_above_a_step_that_costs_little_more(
    timed, ratio, n_pairs, base
):
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3, timed=timed)
    configs = np.linspace(0.1, 0.9, 3 * n_pairs)
    trials = [_costed(a, 0, "new", 1.0 + a, rungs) for a in configs]
    climbed = configs[-n_pairs:]
    trials += [_costed(a, 1, "promoted", ratio * (1.0 + a), rungs) for a in climbed]
    ledger.absorb(trials)
    assert ledger.base == base
    assert [b for _, b in ledger.base_trajectory] == list(range(base + 1))
    expected = ratio if n_pairs >= 5 else None
    assert ledger.step_cost_ratio(0) == pytest.approx(expected)
    # nothing is measured on both rungs 1 and 2: the base stops at rung 1
    assert ledger.step_cost_ratio(1) is None


@pytest.mark.parametrize(
    ("fixed_cost", "delay", "max_time", "lowest"),
    [(True, 0.02, 4.0, 2), (False, 0.1, 4.0, 0), (True, 0.02, None, 0)],
)
def test_under_max_time_rungs_that_cost_as_much_as_the_next_are_left(
    data, fixed_cost, delay, max_time, lowest
):
    # every fit sleeps 0.02 s whatever its rows: rungs of 20 and 60 rows
    # cost as much as one of 180 and rank on less; with the sleep in
    # proportion to the rows they are cheap (0.1 s on all of them, so that
    # the sleep outweighs a fit's fixed overhead on 20 rows: the step from 20
    # to 60 rows then costs about 2.5 times, against 1.8 at 0.02 s, near the
    # 1.5 that moves the base); without max_time the seconds must not steer
    # the search
    X, y = data
    search = _search(
        n_iter=10_000 if max_time else 120,
        max_time=max_time,
        n_initial_points=1000,
        delay=delay,
        fixed_cost=fixed_cost,
        hedge_fraction=0.0,
        lead_share=0.0,
    )
    with parallel_backend("threading", n_jobs=1):
        search.fit(X, y)
    if lowest:
        assert search.base_rung_ >= lowest
        rows = _rows(search)
        late = [r for r in rows[len(rows) // 2 :] if r["role"] == "new"]
        assert late and all(r["rung"] >= lowest for r in late)
    else:
        assert search.base_rung_ == lowest


def test_model_proposals_near_the_incumbent_are_no_tie(data):
    # the GP's proposals cluster where the best is and score alike there;
    # that is no sign that the rung cannot rank random settings
    X, y = data
    search = _search(n_iter=60, n_initial_points=5, lead_share=0.0).fit(X, y)
    rows = _rows(search)
    assert sum(r["role"] == "new" and r["rung"] == 0 for r in rows) >= 10
    assert search.base_rung_ == 0


def test_parallel_curves_keep_the_base_rung(data):
    X, y = data
    search = _search(n_iter=60, n_initial_points=1000, hedge_fraction=0.5).fit(X, y)
    assert search.base_rung_ == 0
    assert search.base_rung_trajectory_ == [(0.0, 0)]
    agreement = search.rung_agreement_[0]
    assert agreement.judged and not agreement.misleads
    roles = list(search.cv_results_["role"])
    assert roles.count("hedge") >= 5
    # each hedge has its probe, on the base rung, proposed together
    rows = _rows(search)
    for r in rows:
        if r["role"] == "hedge":
            probe = [q for q in rows if q["a"] == r["a"] and q["role"] == "probe"]
            assert len(probe) == 1 and probe[0]["rung"] == 0
            assert probe[0]["iter"] == r["iter"] and r["rung"] == 2
    assert abs(search.best_params_["a"] - 0.8) < 0.15


@pytest.mark.parametrize("hedge_fraction", [0.0, 0.2])
def test_the_first_configurations_after_the_screen_are_hedged(data, hedge_fraction):
    # the base rung's agreement is judged from five probe/hedge pairs: they
    # are the first new configurations after the screen, then a share
    # hedge_fraction of them; no hedge at all when the share is 0
    X, y = data
    search = _search(
        n_iter=60, n_initial_points=1000, n_screened=6, hedge_fraction=hedge_fraction
    ).fit(X, y)
    rows = _rows(search)
    assert search.base_rung_ == 0
    first = min(r["iter"] for r in rows if r["role"] != "new" or r["rung"] > 0)
    later = [
        r["role"]
        for r in rows
        if r["iter"] >= first and r["rung"] == 0 and r["role"] in ("new", "probe")
    ]
    assert len(later) > 10
    if hedge_fraction == 0:
        assert "probe" not in later and "hedge" not in search.cv_results_["role"]
    else:
        assert later[:5] == ["probe"] * 5
        # then a share: most later new configurations have no hedge
        assert later[5:].count("new") > later[5:].count("probe")
        assert search.rung_agreement_[0].judged


def test_each_new_base_rung_hedges_its_first_configurations(data):
    # rungs 0 and 1 rank backwards: the first five pairs on each judge it
    # and the base rises twice, each time hedging five new configurations
    X, y = data
    search = _search(crossing=True, n_iter=90, n_initial_points=1000, n_screened=0).fit(
        X, y
    )
    assert [b for _, b in search.base_rung_trajectory_] == [0, 1, 2]
    rows = _rows(search)
    for base in (0, 1, 2):
        roles = [
            r["role"]
            for r in rows
            if r["rung"] == base
            and r["role"] in ("new", "probe")
            and _base_when_proposed(search, rows, r) == base
        ]
        assert roles[:5] == ["probe"] * 5, (base, roles)
    assert search.rung_agreement_[0].misleads and search.rung_agreement_[1].misleads


def test_gp_proposes_after_the_initial_points(data):
    X, y = data
    search = _search(
        n_iter=30, n_initial_points=6, random_fraction=0.0, hedge_fraction=0.0
    ).fit(X, y)
    res = search.cv_results_
    value = np.asarray(res["acquisition_value"], float)
    new = np.asarray(res["role"]) == "new"
    proposed = new & np.isfinite(value)
    assert np.all(np.isnan(value[:6]))
    assert proposed.sum() >= 3
    a = np.array([p["a"] for p in res["params"]])
    # EI on the highest well-observed rung looks near the optimum, a = 0.8
    assert np.median(np.abs(a[proposed] - 0.8)) < 0.25


# ----------------------------------------------------------------------
# small data, resume, estimator API
# ----------------------------------------------------------------------
def test_small_data_warns_and_runs_plain_bo_on_all_data(data):
    X, y = data
    X, y = X[:160], y[:160]  # 80 training rows: 20 -> 60 -> 80, two rungs
    search = _search(n_iter=5, n_initial_points=3)
    with pytest.warns(UserWarning, match="plain Bayesian optimisation"):
        search.fit(X, y)
    assert search.fallback_
    np.testing.assert_array_equal(search.cv_results_["resource_fraction"], 1.0)
    assert len(search.cv_results_["params"]) == 5
    assert search.best_index_ == int(np.argmax(search.cv_results_["mean_test_score"]))


def test_resuming_on_other_rungs_is_refused(data, tmp_path):
    # trials on 20 rows read onto a ladder starting at 50 would be ranked
    # beside trials on 50
    X, y = data
    kw = dict(n_initial_points=1000, store=tmp_path / "s.db", run_name="r")
    _search(n_iter=6, **kw).fit(X, y)
    with pytest.raises(ValueError, match=r"\[20\] .*min_resources=50"):
        _search(n_iter=8, min_resources=50, **kw).fit(X, y)
    assert len(_search(n_iter=8, **kw).fit(X, y).cv_results_["params"]) == 8


def test_resume_continues_the_base_rung_and_the_rungs(data, tmp_path, killed_copy):
    X, y = data
    kw = dict(
        crossing=True,
        n_iter=60,
        n_initial_points=1000,
        hedge_fraction=0.5,
        run_name="r",
    )
    first = _search(store=tmp_path / "a.db", **kw).fit(X, y)
    rows = _rows(first)
    when = first.base_rung_trajectory_[1][0]
    cut = max(i for i, r in enumerate(rows) if r["elapsed"] == when) + 1
    killed_copy(tmp_path / "a.db", tmp_path / "b.db", finished=range(cut))

    resumed = _search(store=tmp_path / "b.db", **kw).fit(X, y)
    again = _rows(resumed)
    assert len(again) == 60
    assert [(r["a"], r["rung"]) for r in again[:cut]] == [
        (r["a"], r["rung"]) for r in rows[:cut]
    ]
    # the rise is read back from the store, and new work starts above it
    assert resumed.base_rung_trajectory_[1] == first.base_rung_trajectory_[1]
    # so is the incumbent, whose changes depend on the order trials finished
    n = sum(e <= when for e, _, _ in first.incumbent_trajectory_)
    assert n >= 2
    assert resumed.incumbent_trajectory_[:n] == first.incumbent_trajectory_[:n]
    starts = [r["rung"] for r in again[cut:] if r["role"] in ("new", "probe")]
    assert starts and min(starts) >= 1
    pairs = [(r["a"], r["rung"]) for r in again]
    assert len(set(pairs)) == len(pairs)


def test_same_seed_same_sequence(data):
    X, y = data
    kw = dict(n_iter=20, n_initial_points=5, hedge_fraction=0.3)
    one = _search(**kw).fit(X, y)
    two = _search(**kw).fit(X, y)
    key = lambda s: [(r["a"], r["rung"], r["role"]) for r in _rows(s)]  # noqa: E731
    assert key(one) == key(two)


def test_clone_and_pickle(data):
    X, y = data
    search = _search(n_iter=8, n_initial_points=3)
    twin = clone(search)
    assert twin.get_params()["hedge_fraction"] == 0.2
    assert twin.get_params()["factor"] == 3
    search.fit(X, y)
    restored = pickle.loads(pickle.dumps(search))
    assert restored.best_params_ == search.best_params_
    assert restored.n_resources_ == RUNG_ROWS


@pytest.mark.parametrize(
    "params, fragment",
    [
        ({"factor": 1}, "factor"),
        ({"factor": "3"}, "factor"),
        ({"random_fraction": 1.5}, "random_fraction"),
        ({"hedge_fraction": -0.1}, "hedge_fraction"),
        ({"lead_share": 1.0}, "lead_share"),
        ({"lead_share": "half"}, "lead_share"),
        ({"n_initial_points": 0}, "n_initial_points"),
        ({"min_resources": "smallest"}, "min_resources"),
        ({"min_resources": 5000}, "min_resources=5000 is larger"),
        ({"subsample_validation": "yes"}, "subsample_validation"),
    ],
)
def test_bad_parameters_are_named(data, params, fragment):
    X, y = data
    with pytest.raises(ValueError, match=fragment):
        _search(n_iter=3, **params).fit(X, y)


def test_a_rung_whose_failures_are_its_size_is_left():
    # a setting that fails on a rung's rows but not on more (a k-NN asking
    # for more neighbours than the rung has rows) would otherwise rank last
    # there and never climb: new configurations start above the rung
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = [_record(a, 0, a, "new", rungs) for a in (0.1, 0.2, 0.3, 0.4)]
    trials += [_record(0.9, 0, math.nan, "probe", rungs)]
    trials[-1].failed = True
    ledger.absorb(trials)
    assert ledger.base == 0  # a failure alone may be the setting's own
    trials += [_record(0.8, 0, math.nan, "probe", rungs)]  # scoring failed
    trials += [_record(0.8, 2, math.nan, "hedge", rungs)]
    ledger.absorb(trials)
    assert ledger.base == 0  # it fails on more rows too: the setting's
    trials += [_record(0.9, 2, 0.5, "hedge", rungs)]
    ledger.absorb(trials)
    assert ledger.base == 1
    assert [b for _, b in ledger.base_trajectory] == [0, 1]


def test_a_rung_on_which_every_random_setting_failed_is_left():
    rungs = Rungs.geometric(1000, 20, 3)
    ledger = RungLedger(rungs, factor=3)
    trials = [_record(a, 0, math.nan, "new", rungs) for a in (0.1, 0.2, 0.3, 0.4)]
    ledger.absorb(trials)
    assert ledger.base == 0  # four are too few to tell
    trials += [_record(0.5, 0, math.nan, "new", rungs)]
    ledger.absorb(trials)
    assert ledger.base == 1
    # on rung 1 one of five scores: the rung ranks, and the base stays
    trials += [_record(a, 1, math.nan, "new", rungs) for a in (0.6, 0.7, 0.8, 0.9)]
    trials += [_record(0.95, 1, 0.4, "new", rungs)]
    ledger.absorb(trials)
    assert ledger.base == 1


@pytest.mark.parametrize("seed", [1, 3])
def test_settings_failing_on_the_base_rungs_rows_still_climb(seed):
    # PCA cannot keep more components than a subset has rows: on 20 rows two
    # thirds of the settings fail, so a screen waiting for ten successes
    # took the budget and the answer kept fewer components than the rung's
    # rows, the best of what fits there; failures count towards the screen
    # and hedges show that more rows succeed
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline

    from skbayes_search import Integer

    X, y = make_classification(
        1500, 60, n_informative=40, n_redundant=0, random_state=0
    )
    search = HalvingBayesSearchCV(
        make_pipeline(PCA(), LogisticRegression()),
        {"pca__n_components": Integer(2, 60)},
        n_iter=30,
        cv=3,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    assert search.base_rung_ >= 1
    assert search.best_params_["pca__n_components"] > search.n_resources_[0]
