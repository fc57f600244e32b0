"""FabolasSearchCV: Bayesian optimisation with the training-set size as an input.

FABOLAS (Klein, Falkner, Bartels, Hennig, Hutter; AISTATS 2017, paper 001);
the design and its departures from the paper: ``doc/design/fabolas.rst``.
The class is in three parts: this module (parameters, the ask/tell hooks,
the answer), ``_fabolas_model.py`` (models, incumbent, eq. 7 proposals) and
``_fabolas_plan.py`` (design, probes, final evaluations); the subset sizes
the search trusts are kept in ``_fabolas_trust.py``.
"""

from __future__ import annotations

import numbers
import time
import warnings
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import BaseBayesSearchCV, shared_params
from .._failures import FINAL_NOT_STARTED, NO_FULL_SUCCESS, warn_answer_on_subset
from .._numerics import single_blas_thread
from .._trial import SearchContext, Trial
from .._validation import check_fractions, check_stored_rows, min_resources_rows
from ..acquisition.entropy import INFORMATION
from ..gp import GPSurrogate
from ..gp.fabolas_kernels import FractionAxis, fabolas_kernels
from ._fabolas_model import FabolasModel
from ._fabolas_plan import FabolasPlan
from ._fabolas_trust import SubsetTrust

__all__ = ["FabolasSearchCV"]

#: Below this ratio of training rows to ``min_resources``: plain BO.
MIN_RANGE_RATIO = 16


class FabolasSearchCV(FabolasModel, FabolasPlan, BaseBayesSearchCV):
    """FABOLAS: fast Bayesian optimisation of hyperparameters on large data sets.

    A trial fits on a fraction ``s`` of each split's training rows and is
    scored on the split's full validation rows. Two Gaussian processes model
    the log validation error and the log cost over the configuration and
    ``s``; each next ``(x, s)`` maximises the information about the location
    of the minimum of the loss *on all data* per unit of predicted cost plus
    the optimiser's own overhead (Klein et al. 2017, eq. 7). Small subsets
    can mislead where learning curves cross, so the search checks them: the
    initial design runs each configuration on the two smallest subset sizes
    and compares their ranks, *probes* evaluate configurations on larger
    subsets and compare the model's predictions for them with what was
    measured, and while a size misleads, or configurations fail on it that
    succeed on more rows, the smallest size the search uses
    (``min_fraction_trajectory_``) moves up. The incumbent is chosen among
    configurations evaluated at a trusted size; at the end it is evaluated
    on all data (with one more contender once a size has misled), and the
    answer is the best *measured* full-data trial. Design and departures
    from the paper: ``doc/design/fabolas.rst``.

    Parameters
    ----------
    estimator : estimator object
        Object implementing ``fit``; cloned for every fit.
    search_spaces : dict or list of dict
        Parameter names mapped to dimensions, as in
        :class:`~skbayes_search.BayesSearchCV`.
    n_iter : int, default=50
        Number of trials, the final full-data evaluations included.
    max_time : float, default=None
        Wall-clock budget in seconds, overhead included. Only trials whose
        cautious cost fits in the time left are proposed, after setting aside
        one more proposal and the final full-data evaluations (at most half
        of ``max_time``); when none fits the search ends. The final
        evaluations may run 10 % of ``max_time`` (at least 1 s) past it;
        stopped there, they are recorded as failed. One predicted to take
        more than twice the time left to that point is not started (nor is
        time kept for it), and the answer rests on a subset, with a warning.
        Where a search stops depends on the clock.
    trial_timeout : float, default=None
        Seconds one trial may run; a trial past it is stopped and recorded as
        failed with the reason (user guide, "Budgets").
    asynchronous : bool, default=True
        Propose whenever a worker would idle, conditioned on the running
        trials; ``False``: synchronous batches, whose trials do not depend on
        which fit finishes first (user guide, "How a search runs").
    min_resources : "auto" or int, default="auto"
        Fewest training rows per fit; ``"auto"``: ``max(10 * n_classes,
        2 * n_splits * n_classes)`` for classifiers, otherwise 100. With fewer
        than 16 times as many training rows a warning is raised and every
        trial runs on all data (plain entropy-search BO). The search raises
        its own smallest size above it while subsets that small mislead.
    initial_fractions : "ladder" or sequence of float, default="ladder"
        The initial design's training fractions. ``"ladder"``: every design
        configuration on ``min_resources`` rows and on four times as many,
        whose agreement in rank decides whether the smallest size is
        trusted. A sequence: the fractions used in turn, one trial per
        configuration, each in (0, 1] and raised to at least
        ``min_resources`` rows (the paper's design: ``(1/64, 1/32, 1/16,
        1/8)``).
    n_initial_points : int, default=10
        Configurations of the initial design (scrambled Sobol points),
        dispatched as one batch.
    n_representers : int, default=50
        Points at ``s = 1`` representing the distribution of the minimiser.
    n_hyper_samples : int, default=10
        GP hyperparameter samples kept per iteration, for each model.
    overhead : "measured" or float, default="measured"
        Added to every candidate's predicted cost: the previous proposal's
        duration in seconds, or a fixed number (0 disables it). With
        ``cost_model="rows"`` the overhead is counted in the same unit as the
        cost and ``"measured"`` adds none.
    information : {"relative_entropy", "entropy_reduction"}, \
            default="relative_entropy"
        What eq. 7 divides by the cost: the expected relative entropy of the
        updated ``p_min`` to the uniform measure on the representers, as the
        paper writes it, or the expected entropy reduction of ``p_min``
        (the form its footnote 3 sets aside). The first favours cheap
        subsets more (measurements: ``doc/design/fabolas.rst``).
    cost_model : {"measured", "rows"}, default="measured"
        The cost eq. 7 divides by: a GP on the measured seconds of the
        trials, or the work a trial does, training rows times folds. With
        ``"rows"``, ``asynchronous=False`` and no ``max_time``, a fixed
        ``random_state`` gives the same trials on any machine; with
        ``"measured"`` (and any ``max_time``) the trials depend on the
        clock.
    scoring, refit, cv, verbose, pre_dispatch, return_train_score : optional
        As in :class:`~skbayes_search.BayesSearchCV`; ``best_estimator_`` is
        refitted on all data.
    n_jobs : int, default=None
        Jobs running folds in parallel; the proposal also uses up to
        ``n_jobs`` threads (same result as with one).
    random_state : int, RandomState instance or None, default=None
        Seeds the subsets, the design, the MCMC chains, the representers, the
        Monte Carlo draws and the acquisition search.
    error_score : "raise" or float, default=np.nan
        Score of a failed fit; the loss model sees the worst observed loss.
    store, run_name : optional
        Commit trials as they finish, and resume a run, as in
        :class:`~skbayes_search.BayesSearchCV`.

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        scikit-learn's keys plus ``n_resources``, ``resource_fraction``,
        ``iter``, ``elapsed_time``, ``fit_failed``, ``role`` (``"design"``,
        ``"proposal"``, ``"probe"`` or ``"final"``), ``min_fraction`` (the
        smallest trusted fraction when the trial was proposed),
        ``predicted_score`` (the model's prediction, at proposal, of the
        trial's own score), ``predicted_full_score`` (the last model's
        prediction on all data) and ``acquisition_value`` (information per
        unit of cost).
    best_index_, best_score_, best_params_ : int, float, dict
        The best measured full-data trial (with a callable ``refit``,
        whatever it selects). If no full-data trial succeeded (a final
        evaluation stopped at ``max_time``, or not started because it was
        predicted not to finish), the incumbent's trial on its largest
        trusted fraction, whose score is then a subset score; a warning
        says so.
    best_estimator_ : estimator
        Refitted on all data with ``best_params_`` (when ``refit``).
    incumbent_trajectory_ : list of (float, dict, float)
        After every finished trial and every model fit: seconds since
        ``fit`` started, the incumbent's parameters and its full-data score,
        measured if it was evaluated on all data, else predicted; before the
        first model, the best trial on the largest fraction evaluated and
        its measured score. The last entry is the answer.
    min_fraction_trajectory_ : list of (float, float)
        Seconds since ``fit`` started and the smallest trusted training
        fraction, from the start and at every rise.
    min_fraction_ : float
        The smallest trusted training fraction at the end.
    subset_agreements_ : list of dict
        Every rank agreement measured: ``elapsed``, ``test`` (``"ladder"``:
        the design's two sizes; ``"probes"``: predicted against measured
        scores of the probes), ``low_rows``, ``high_rows``, ``tau``
        (Kendall's), ``n_pairs`` and ``misleads``.
    min_resources_ : int
        Resolved ``min_resources``.
    fallback_ : bool
        Whether the search ran plain BO on all data (too small a data set).

    See Also
    --------
    BayesSearchCV : GP-EI-MCMC on all data.
    MultiStageBayesSearchCV : BO on growing subsets of the training data.

    References
    ----------
    A. Klein, S. Falkner, S. Bartels, P. Hennig, F. Hutter. Fast Bayesian
    Optimization of Machine Learning Hyperparameters on Large Datasets.
    AISTATS 2017.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skbayes_search import FabolasSearchCV, Real
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> search = FabolasSearchCV(
    ...     LogisticRegression(),
    ...     {"C": Real(1e-3, 1e2, prior="log-uniform")},
    ...     n_iter=10, n_initial_points=3, n_representers=10, n_hyper_samples=2,
    ...     cv=3, random_state=0,
    ... ).fit(X, y)
    >>> search.cv_results_["resource_fraction"][search.best_index_]
    np.float64(1.0)
    >>> search.cv_results_["role"][:2].tolist()
    ['design', 'design']
    """

    _parameter_constraints: dict = {
        **BaseBayesSearchCV._parameter_constraints,
        "min_resources": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "initial_fractions": [StrOptions({"ladder"}), "array-like"],
        "n_initial_points": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_representers": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_hyper_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "overhead": [
            StrOptions({"measured"}),
            Interval(numbers.Real, 0, None, closed="left"),
        ],
        "information": [StrOptions(set(INFORMATION))],
        "cost_model": [StrOptions({"measured", "rows"})],
    }

    def __init__(
        self,
        estimator: Any,
        search_spaces: dict | list,
        *,
        n_iter: int = 50,
        max_time: float | None = None,
        trial_timeout: float | None = None,
        asynchronous: bool = True,
        min_resources: str | int = "auto",
        initial_fractions: Any = "ladder",
        n_initial_points: int = 10,
        n_representers: int = 50,
        n_hyper_samples: int = 10,
        overhead: str | float = "measured",
        information: str = "relative_entropy",
        cost_model: str = "measured",
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
        self.initial_fractions = initial_fractions
        self.n_initial_points = n_initial_points
        self.n_representers = n_representers
        self.n_hyper_samples = n_hyper_samples
        self.overhead = overhead
        self.information = information
        self.cost_model = cost_model

    def _ladder(self) -> bool:
        return isinstance(self.initial_fractions, str)

    def _check_strategy_params(self, ctx: SearchContext) -> None:
        if not self._ladder():
            check_fractions(self.initial_fractions, "initial_fractions")
        min_resources_rows(self.min_resources, ctx)

    def _init_search(self, ctx: SearchContext) -> None:
        self.min_resources_ = min_resources_rows(self.min_resources, ctx)
        self.fallback_ = ctx.n_train / self.min_resources_ < MIN_RANGE_RATIO
        if self.fallback_:
            msg = (
                f"FabolasSearchCV: {ctx.n_train} training rows per split are "
                f"fewer than {MIN_RANGE_RATIO} x min_resources="
                f"{self.min_resources_}, too narrow a range of subset sizes; "
                "running plain Bayesian optimisation (entropy search) on all "
                "data instead."
            )
            warnings.warn(msg, UserWarning, stacklevel=4)
        self.incumbent_trajectory_ = []
        self._axis = FractionAxis(ctx.n_train, self.min_resources_, not self.fallback_)
        # the model's subset axis starts at min_resources rows: a stored
        # trial on fewer would be read as if on that many
        fewest = ctx.n_train if self.fallback_ else self.min_resources_
        check_stored_rows(
            ctx.trials,
            lambda t: round(t.fraction * ctx.n_train) >= fewest,
            ctx.n_train,
            search=(
                "plain Bayesian optimisation on all rows"
                if self.fallback_
                else f"min_resources={self.min_resources!r}: at least "
                f"{self.min_resources_} rows"
            ),
            made_with="min_resources",
        )
        self._n_x = ctx.space.n_dims
        # a resumed search (trials read back from a store) keeps counting
        self._n_asks = max((t.iter for t in ctx.trials), default=-1) + 1
        # latest predicted full-data score per cv_results_ row
        self._pred_full: dict[int, float] = {}
        self._last_overhead: float | None = None
        self._best_row: int | None = None
        self._n_synced = 0
        self._kind = "neg"
        seed = ctx.seed
        loss_kernel, cost_kernel = fabolas_kernels(self._n_x, not self.fallback_)
        mcmc = {"hyperparameter_sampling": "mcmc", "n_samples": self.n_hyper_samples}
        self._loss_gp = GPSurrogate(loss_kernel, random_state=seed, **mcmc)
        self._cost_gp = GPSurrogate(cost_kernel, random_state=seed + 1, **mcmc)
        # the seconds' GP feeds eq. 7 (measured costs) or the time budget
        self._fit_cost_gp = self.cost_model == "measured" or ctx.max_time is not None
        self._trust = None
        self._final_out_of_reach = False
        if not self.fallback_:
            n_design = 2 * self.n_initial_points if self._ladder() else None
            self._trust = SubsetTrust(ctx.n_train, self.min_resources_, n_design)
        design_rng = np.random.default_rng([seed, 4])
        self._design = self._design_plan(
            ctx,
            ctx.space.from_unit(ctx.space.sample(self.n_initial_points, design_rng)),
        )

    # -- the ask/tell hooks ----------------------------------------------------
    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        started = time.perf_counter()
        it = self._n_asks
        self._n_asks += 1
        self._sync(ctx)
        # the last trials of the budget are kept for the final evaluations
        keep = 0 if self.fallback_ else self._n_keep(ctx)
        if not self.fallback_ and ctx.trials and ctx.n_remaining() <= keep:
            return []
        if not self.fallback_:
            n_slots = min(n_slots, max(1, ctx.n_remaining() - keep))
        pending = self._pending_design(ctx)
        if pending or ctx.n_succeeded() < 2:
            if not self.fallback_:
                # one batch keeps every worker busy; in the fallback each design
                # point is a full-data fit and max_time must stop between them
                n_slots = max(n_slots, min(len(pending), ctx.n_remaining() - keep))
            return self._design_trials(ctx, n_slots, it, pending)
        with single_blas_thread():
            trials = self._propose(ctx, n_slots, it, started)
        self._last_overhead = time.perf_counter() - started
        return trials

    def _more_results(self, ctx: SearchContext) -> dict[str, list]:
        more = super()._more_results(ctx)
        n = len(ctx.trials)
        # every row gets the last model's prediction of its configuration
        more["predicted_full_score"] = [
            self._pred_full.get(i, np.nan) for i in range(n)
        ]
        more.setdefault("acquisition_value", [np.nan] * n)
        return more

    def _select_best(self, results: dict, refit_metric: str) -> int:
        if callable(self.refit):
            return super()._select_best(results, refit_metric)
        scores = np.asarray(results[f"mean_test_{refit_metric}"], dtype=float)
        full = np.asarray(results["resource_fraction"], dtype=float) >= 1.0
        ok = full & np.isfinite(scores)
        if ok.any():
            rows = np.flatnonzero(ok)
            return int(rows[np.argmax(scores[rows])])
        row = self._best_row
        if row is not None and row < len(scores) and np.isfinite(scores[row]):
            why = FINAL_NOT_STARTED if self._final_out_of_reach else NO_FULL_SUCCESS
            n_rows = results["n_resources"][row]
            warn_answer_on_subset("FabolasSearchCV", n_rows, why)
            return int(row)
        return super()._select_best(results, refit_metric)

    def _end_search(self, ctx: SearchContext, results: dict) -> None:
        self._sync(ctx)
        chosen = not callable(self.refit) and (self.refit or not self.multimetric_)
        if chosen and ctx.trials:
            # the answer closes the trajectory: measured on all data, or the
            # incumbent's prediction when no full-data trial succeeded
            record = ctx.trials[self.best_index_]
            value = record.score
            if record.fraction < 1.0:
                value = self._pred_full.get(self.best_index_, record.score)
            self.incumbent_trajectory_.append(
                (ctx.trials[-1].elapsed_time, dict(record.params), float(value))
            )
        trust = self._trust
        self.min_fraction_trajectory_ = (
            [(0.0, 1.0)] if trust is None else list(trust.bound_trajectory)
        )
        self.min_fraction_ = self.min_fraction_trajectory_[-1][1]
        self.subset_agreements_ = [] if trust is None else list(trust.judgements)
