"""HalvingBayesSearchCV: asynchronous successive halving whose new
configurations a GP over (configuration, subset size) proposes, with a hedge
against misleading small subsets.

Users' page: ``doc/strategies/halving.rst``; the rung bookkeeping lives in
``skbayes_search/_rungs.py``, what each proposal evaluates in
``_halving_plan.py``, the end of the search (the all-data evaluation and
the answer) in ``_halving_answer.py``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import BaseBayesSearchCV, shared_params
from .._loop import final_deadline
from .._rungs import RungLedger, Rungs
from .._trial import SearchContext, Trial
from .._validation import check_stored_rows, min_resources_rows, on_fractions
from ._halving_answer import HalvingAnswer
from ._halving_lead import LeadRung, auto_share
from ._halving_model import RungModel
from ._halving_plan import RungPlan
from .bayes import BayesProposer

__all__ = ["HalvingBayesSearchCV"]

#: Fewest rungs (the all-data rung included) for halving; fewer: plain BO.
MIN_RUNGS = 3


class HalvingBayesSearchCV(HalvingAnswer, BaseBayesSearchCV):
    """Asynchronous successive halving with GP proposals and a subset-size hedge.

    Training-set sizes form rungs ``min_resources * factor**k``, the top
    rung all rows. New configurations start on the smallest trusted rung,
    the *base*; whenever a worker would idle, a configuration in the top
    ``1 / factor`` of a rung's finished trials climbs to the next rung
    (ASHA, Li et al. 2020), and so does the incumbent from below a rung
    others climbed to; the first to climb to all data is the incumbent.
    Nothing climbs before ``n_screened`` trials have finished (and one
    succeeded) on the base rung, as scikit-learn's halving screens its first
    rung.
    After ``n_initial_points`` random
    configurations, new ones maximise the expected improvement on the base
    rung of one GP over (configuration, subset size) fitted on every trusted
    rung, except a share drawn at random (as BOHB does with a density
    model). A share ``hedge_fraction`` of the new configurations starts two
    rungs higher (below all data), with a *probe* on the base rung: when the
    probes' ranking disagrees with the higher rung's, small subsets mislead
    (learning curves cross) and the base rung moves up, as it does under
    ``max_time`` above a rung whose trials cost nearly as much. A share
    ``lead_share`` of the fit time goes to plain BO on the *lead rung*, the
    largest subset below all data where several trials fit, with a GP of
    that rung's trials alone: where the best settings on all data rank low
    on small subsets, it finds them there (by default in spaces of at most
    two dimensions). Once every configuration of a finite space has
    started, the trials left climb the best of each rung whatever its rank,
    so a grid ends measured on all data as far as the budget allows. The
    answer is measured on all data whenever the time allows.
    Users' guide: ``doc/strategies/halving.rst``.

    Parameters
    ----------
    estimator : estimator object
        Object implementing ``fit``; cloned for every fit.
    search_spaces : dict or list of dict
        Parameter names mapped to dimensions, as in
        :class:`~skbayes_search.BayesSearchCV`.
    n_iter : int, default=200
        Number of trials (one configuration on one rung, all CV splits), the
        final all-data evaluation included.
    max_time : float, default=None
        Wall-clock budget in seconds, overhead included. While no
        configuration has been measured on all data, time is kept for the
        incumbent's all-data evaluation (at most half of ``max_time``; none
        when it is predicted not to fit even so) and trials predicted not to
        fit in the rest are not started; when only the kept time is left,
        that evaluation starts, and the search goes on with whatever time
        it leaves. That evaluation may run 10 % of ``max_time`` (at least
        1 s) past it, and if it is stopped there the answer is the best
        trial on a subset, with a warning. It does not start when it is
        predicted to take more than twice the time left to that deadline
        (nor is time kept for it then). A trial above the base rung
        waits until the search has run as long as it is predicted to take.
    trial_timeout : float, default=None
        Seconds one trial may run; a trial past it is stopped and recorded as
        failed with the reason (user guide, "Budgets").
    asynchronous : bool, default=True
        Propose whenever a worker would idle, conditioned on the running
        trials; ``False``: synchronous batches, whose trials do not depend on
        which fit finishes first (user guide, "How a search runs").
    min_resources : "auto" or int, default="auto"
        Training rows on the first rung; ``"auto"``: ``max(10 * n_classes,
        2 * n_splits * n_classes)`` for classifiers, otherwise 100. With
        fewer than three rungs a warning is raised and every trial runs on
        all data (plain BO).
    factor : float, default=3
        Rows grow by this factor from rung to rung, and the top
        ``1 / factor`` of a rung climbs.
    n_initial_points : int, default=10
        Successful trials before the GP proposes new configurations.
    n_screened : int, default=10
        Successful trials (or finished ones, once one has succeeded) before
        any configuration climbs or a hedge or lead trial starts: the first
        configurations are screened on the base rung alone, as scikit-learn's
        halving screens its first rung, so that the first to climb are the
        top ``1 / factor`` of at least this many, not of the first few to
        finish. 0: none (as in ASHA, a configuration
        climbs as soon as its rung has ``factor`` successes).
    random_fraction : float, default=0.2
        Share of the other new configurations drawn at random once the GP
        proposes (with the hedges, about a third of all are random).
    hedge_fraction : float, default=0.2
        Share of new configurations that are drawn at random and start two
        rungs above the base rung (at most on the rung below all data), each
        with a probe on the base rung; the first five on each base rung
        after the screen are all hedged, so that the rung's agreement with
        larger subsets is judged early. 0 never doubts the base rung.
    neighbour_fraction : float, default=0.0
        Share of promotions to a rung two or more above the base rung (below
        all data) that bring a *neighbour*: the promoted configuration with
        every unit-cube coordinate moved by a normal draw of standard
        deviation 0.1, started on the rung it climbs to (the explore step of
        population-based training). The best settings move as rows grow (an
        RBF SVC's best ``gamma`` rises with the data), and promotions alone
        only ever carry upwards what smaller rungs favoured; neighbours
        follow the optimum. 0: none.
    start_rungs : {"base", "hyperband"}, default="base"
        Where new configurations start. ``"base"``: all on the base rung.
        ``"hyperband"``: on the base rung or above it (below all data),
        drawn with the shares Hyperband gives its brackets (about the same
        budget for each start; with 6 such rungs, 59 % start on the base rung
        and 1.5 % on the one below all data). Those above the base rung are
        drawn at random, as in Hyperband's brackets, so a configuration that
        small subsets (and a model fitted on them) rank low can still be
        measured on many rows, at the price of fewer configurations tried.
    lead_share : float or "auto", default="auto"
        Share of the fit time (summed over splits) given to plain Bayesian
        optimisation on the *lead rung*: the largest rung above the base and
        below all data, at most two rungs above the highest with a success,
        on which, under ``max_time``, 8 trials fit in that share of
        ``max_time`` less the time kept for the final all-data evaluation
        (without ``max_time``, the rung below all data); once there, the
        lead stays while they are predicted to take at most twice the share.
        Its configurations are proposed by the EI of a GP fitted on that
        rung's trials alone (past 100, on the best half and a spread of the
        rest; under ``max_time`` EI per second, with a second GP of their
        measured fit times), after 3 random ones (configurations
        promoted there count), so rankings on smaller subsets cannot mislead
        it; they compete with the promoted ones for the all-data evaluation.
        A lead trial starts whenever lead trials, running ones at their
        predicted cost, have taken less than this share, once
        ``n_initial_points`` trials have succeeded; without ``max_time`` the
        shares are of training rows, not seconds, so that the seed fixes the
        trials. 0: none, plain ASHA with the hedge. ``"auto"``: 0.5 for a
        space of at most 2 dimensions (two numeric parameters; a categorical
        one counts one per choice), where its 8 trials give its GP 4 per
        dimension, else 0 (with more parameters its trials are too few for
        its GP; see the users' guide). The share used is ``lead_share_``.
    subsample_validation : bool, default=True
        Score a trial on part of the training rows on at most twice as many
        of each split's validation rows, and at least 500 (a nested,
        stratified subset; all of them where a split has fewer); trials on
        half the validation rows' count or more, and on all data, are
        scored on every validation row. It makes the smallest
        rungs cheaper where scoring costs more than fitting there (kernel
        machines on many validation rows), at the price of noisier scores
        there; ``False`` scores every trial on every validation row (the
        users' guide gives the measurements). A stored run resumes only
        with the setting it was made with.
    scoring, refit, cv, verbose, pre_dispatch, return_train_score : optional
        As in :class:`~skbayes_search.BayesSearchCV`; ``best_estimator_`` is
        refitted on all data.
    n_jobs : int, default=None
        Jobs running folds in parallel.
    random_state : int, RandomState instance or None, default=None
        Seeds the subsets, the random configurations, the hedges and the
        GP; with ``asynchronous=False`` and no ``max_time`` it fixes the
        sequence of trials (under ``max_time``, which trials fit in the time
        left, which rungs cost nearly as much as the next, and the lead's
        proposals are judged from measured fit times, so from the clock).
    error_score : "raise" or float, default=np.nan
        Score of a failed fit; a failed trial is never promoted and the GP
        sees the worst observed loss there.
    store, run_name : optional
        Commit trials as they finish, and resume a run, as in
        :class:`~skbayes_search.BayesSearchCV`.

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        scikit-learn's keys plus ``n_resources``, ``resource_fraction``,
        ``iter``, ``elapsed_time``, ``fit_failed``, ``rung`` and ``role``
        (``"new"``, ``"promoted"``, ``"neighbour"``, ``"hedge"``,
        ``"probe"``, ``"lead"`` or ``"final"``).
    best_index_, best_score_, best_params_ : int, float, dict
        The incumbent (below): the best successful trial on all data, or,
        with a warning saying why, a trial on a subset. That is a trial on
        the rung below all data whose score beats every score on all data
        when it was not measured there in time, or the best on the
        highest rungs when nothing succeeded on all data. With a callable
        ``refit``, whatever it selects.
    best_estimator_ : estimator
        Refitted on all data with ``best_params_`` (when ``refit``).
    incumbent_trajectory_ : list of (float, dict, float)
        Whenever the incumbent changes: seconds since ``fit`` started, its
        parameters and its measured score. The incumbent is the best
        configuration measured on all data, unless a configuration on the
        rung below scores higher there than any on all data (learning
        curves rise, so it most likely wins on all data too; it is
        measured there next); until one is measured on all data, the best
        over the highest rung climbed (not counting hedge and lead trials)
        and the rung below it, with hedge and lead trials above. It changes
        only for a rival better both as measured and after the median gain
        of the rows its rung has more. It ends with ``best_params_``.
    base_rung_trajectory_ : list of (float, int)
        Seconds since ``fit`` started and the base rung, from ``(0.0, 0)``
        and at every rise.
    base_rung_ : int
        The base rung at the end: it rises above rungs whose probes and
        hedges disagree in rank, above rungs whose scores tie too often
        to choose what climbs, above rungs on which settings fail that
        succeed on more rows (or every random one failed), and (under
        ``max_time``) above rungs whose trials cost nearly as much as the
        next rung's.
    rung_agreement_ : dict of int to Agreement
        Per probed rung: Kendall's ``tau`` between probe and hedge scores,
        ``n_pairs`` and whether it ``misleads``.
    n_resources_ : list of int
        Training rows of each rung.
    min_resources_, max_resources_ : int
        Rows of the first and of the top rung.
    fallback_ : bool
        Whether the search ran plain BO on all data (too small a data set).
    lead_share_ : float
        The share of the fit time the lead rung had (``lead_share``
        resolved; 0 in the fallback).

    See Also
    --------
    FabolasSearchCV : the subset size as an input of an entropy-search model.
    sklearn.model_selection.HalvingRandomSearchCV : synchronous halving of
        random candidates.

    References
    ----------
    L. Li, K. Jamieson, A. Rostamizadeh, E. Gonina, J. Ben-tzur, M. Hardt,
    B. Recht, A. Talwalkar. A System for Massively Parallel Hyperparameter
    Tuning. MLSys 2020.

    S. Falkner, A. Klein, F. Hutter. BOHB: Robust and Efficient
    Hyperparameter Optimization at Scale. ICML 2018.

    M. Jaderberg, V. Dalibard, S. Osindero, W. M. Czarnecki, J. Donahue,
    A. Razavi, O. Vinyals, T. Green, I. Dunning, K. Simonyan, C. Fernando,
    K. Kavukcuoglu. Population Based Training of Neural Networks. 2017.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skbayes_search import HalvingBayesSearchCV, Real
    >>> X, y = make_classification(n_samples=1500, random_state=0)
    >>> search = HalvingBayesSearchCV(
    ...     LogisticRegression(), {"C": Real(1e-3, 1e2, prior="log-uniform")},
    ...     n_iter=30, n_initial_points=5, cv=3, random_state=0,
    ... ).fit(X, y)
    >>> search.n_resources_
    [20, 60, 180, 540, 1000]
    >>> search.cv_results_["resource_fraction"][search.best_index_]
    np.float64(1.0)
    """

    _parameter_constraints: dict = {
        **BaseBayesSearchCV._parameter_constraints,
        "min_resources": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "factor": [Interval(numbers.Real, 1, None, closed="neither")],
        "n_initial_points": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_screened": [Interval(numbers.Integral, 0, None, closed="left")],
        "random_fraction": [Interval(numbers.Real, 0, 1, closed="both")],
        "hedge_fraction": [Interval(numbers.Real, 0, 1, closed="both")],
        "neighbour_fraction": [Interval(numbers.Real, 0, 1, closed="both")],
        "start_rungs": [StrOptions({"base", "hyperband"})],
        "lead_share": [
            Interval(numbers.Real, 0, 1, closed="left"),
            StrOptions({"auto"}),
        ],
        "subsample_validation": ["boolean"],
    }

    def __init__(
        self,
        estimator: Any,
        search_spaces: dict | list,
        *,
        n_iter: int = 200,
        max_time: float | None = None,
        trial_timeout: float | None = None,
        asynchronous: bool = True,
        min_resources: str | int = "auto",
        factor: float = 3,
        n_initial_points: int = 10,
        n_screened: int = 10,
        random_fraction: float = 0.2,
        hedge_fraction: float = 0.2,
        neighbour_fraction: float = 0.0,
        start_rungs: str = "base",
        lead_share: float | str = "auto",
        subsample_validation: bool = True,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: bool | str | Any = True,
        cv: Any = None,
        verbose: int = 0,
        pre_dispatch: int | str = "2*n_jobs",
        random_state: Any = None,
        error_score: str | float = np.nan,
        return_train_score: bool = False,
        store: Any = None,
        run_name: str | None = None,
    ) -> None:
        super().__init__(**shared_params(locals()))
        self.min_resources = min_resources
        self.factor = factor
        self.n_initial_points = n_initial_points
        self.n_screened = n_screened
        self.random_fraction = random_fraction
        self.hedge_fraction = hedge_fraction
        self.neighbour_fraction = neighbour_fraction
        self.start_rungs = start_rungs
        self.lead_share = lead_share
        self.subsample_validation = subsample_validation

    # -- setup -------------------------------------------------------------------
    def _check_strategy_params(self, ctx: SearchContext) -> None:
        min_resources_rows(self.min_resources, ctx)

    def _subsample_validation(self) -> bool:
        return bool(self.subsample_validation)

    def _check_stored_rungs(self, ctx: SearchContext, rungs: Rungs) -> None:
        auto = " (the rows 'auto' gives differ between versions)"
        check_stored_rows(
            ctx.trials,
            lambda t: on_fractions(t.fraction, rungs.fractions),
            ctx.n_train,
            search=(
                f"min_resources={self.min_resources!r}, factor={self.factor}: "
                f"rungs of {list(rungs.rows)} rows"
                + (auto if self.min_resources == "auto" else "")
            ),
            made_with="min_resources and factor",
        )

    def _init_search(self, ctx: SearchContext) -> None:
        self.min_resources_ = min_resources_rows(self.min_resources, ctx)
        self._final_out_of_reach = False
        rungs = Rungs.geometric(ctx.n_train, self.min_resources_, self.factor)
        self.fallback_ = len(rungs.rows) < MIN_RUNGS
        self.lead_share_ = 0.0
        if self.fallback_:
            warnings.warn(
                f"HalvingBayesSearchCV: {ctx.n_train} training rows per split "
                f"give {len(rungs.rows)} rung(s) of min_resources="
                f"{self.min_resources_} rows times factor={self.factor}, fewer "
                f"than {MIN_RUNGS}; running plain Bayesian optimisation on all "
                "data instead.",
                UserWarning,
                # user code -> fit's context -> fit -> _fit -> _search -> here
                stacklevel=6,
            )
            rungs = Rungs((ctx.n_train,), ctx.n_train)
            self._proposer = BayesProposer(
                acquisition="ei",
                hyperparameter_sampling="mcmc",
                n_initial_points=self.n_initial_points,
                seed=ctx.seed,
            )
        self._check_stored_rungs(ctx, rungs)
        self._rungs = rungs
        # measured seconds may move the base rung only under max_time:
        # without it, the seed alone fixes the trials
        self._ledger = RungLedger(rungs, self.factor, timed=ctx.max_time is not None)
        # a resumed search keeps counting
        self._n_asks = max((t.iter for t in ctx.trials), default=-1) + 1
        if self.fallback_:
            return
        self.lead_share_ = (
            auto_share(ctx.space.n_dims)
            if self.lead_share == "auto"
            else float(self.lead_share)
        )
        self._plan = RungPlan(
            self._ledger,
            RungModel(ctx.n_train, rungs, ctx.space.n_dims, ctx.seed),
            LeadRung(self.lead_share_, rungs, ctx.seed),
            factor=self.factor,
            n_screened=self.n_screened,
            n_initial_points=self.n_initial_points,
            random_fraction=self.random_fraction,
            hedge_fraction=self.hedge_fraction,
            neighbour_fraction=self.neighbour_fraction,
            hyperband=self.start_rungs == "hyperband",
        )

    # -- proposing -----------------------------------------------------------------
    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        it = self._n_asks
        self._n_asks += 1
        if self.fallback_:
            trials = self._proposer.ask(
                ctx,
                ctx.trials,
                n_slots,
                fraction=1.0,
                iteration=it,
                pending=ctx.pending,
            )
            for t in trials:
                t.extras.setdefault("acquisition_value", np.nan)
                t.extras["role"] = "new"
            return trials
        ledger = self._ledger
        ledger.absorb(ctx.trials)
        measured = ledger.answer_measured()
        # until the answer is measured on all data, the last trial of the
        # budget is kept for its evaluation there
        room = ctx.n_remaining() - (0 if measured else 1)
        seconds = math.inf
        if ctx.max_time is not None:
            seconds = ledger.seconds_allowed(
                ctx.time_left(),
                ctx.max_time,
                final_deadline(ctx.max_time) - ctx.max_time,
                ctx.n_splits,
                ctx.n_jobs_effective,
            )
        if room <= 0:
            return []
        trials = self._plan.trials(ctx, n_slots, it, room, seconds)
        if trials or measured:
            return trials
        # nothing else fits in the time left but the incumbent's all-data
        # evaluation: it starts now, and whatever time it leaves goes on
        # searching
        return [] if self._top_running(ctx) else self._final_trials(ctx, it)
