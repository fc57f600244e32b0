"""FabolasSearchCV: Bayesian optimisation with the training-set size as an input.

FABOLAS (Klein, Falkner, Bartels, Hennig, Hutter; AISTATS 2017, paper 001);
the design and its departures from the paper: ``doc/design/fabolas.rst``.
"""

from __future__ import annotations

import numbers
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import BaseBayesSearchCV, shared_params
from .._cost_model import CostModel, overhead_seconds
from .._numerics import single_blas_thread
from .._trial import SearchContext, Trial
from .._validation import check_fractions
from ..acquisition.entropy import (
    INFORMATION,
    entropy_search_per_cost,
    representers_by_ei,
)
from ..gp import GPSurrogate
from ..gp.fabolas_kernels import (
    FractionAxis,
    error_kind,
    fabolas_kernels,
    loss_to_scores,
    scores_to_loss,
)
from ..optimize import propose_batch

__all__ = ["FabolasSearchCV"]

#: ``min_resources="auto"`` for regressors (and unsupervised estimators).
MIN_RESOURCES_REGRESSION = 100
#: Below this ratio of training rows to ``min_resources``: plain BO.
MIN_RANGE_RATIO = 16
# Random points among which the representers are drawn.
_N_POOL = 512
# Candidates screened on few draws; the best _N_REFINE are scored on all.
_N_CANDIDATES, _N_REFINE = 256, 16
# Best configurations whose neighbourhoods seed the representers and search.
_N_SEEDS = 3
# The Monte Carlo acquisition is piecewise constant: polishing is wasted.
_N_POLISH = 0


class FabolasSearchCV(BaseBayesSearchCV):
    """FABOLAS: fast Bayesian optimisation of hyperparameters on large data sets.

    A trial fits on a fraction ``s`` of each split's training rows and is
    scored on the split's full validation rows. Two Gaussian processes model
    the log validation error and the log cost over the configuration and
    ``s``; each next ``(x, s)`` maximises the information gained about the
    location of the minimum of the loss *on all data* per second of predicted
    cost plus the optimiser's own overhead (Klein et al. 2017, eq. 7): small
    subsets while they inform about the full-data optimum, larger ones when
    needed. The incumbent (lowest predicted loss on all data) is evaluated on
    all data once at the end unless it already was, so ``best_score_`` is a
    measured full-data score. Design and departures from the paper:
    ``doc/design/fabolas.rst``.

    Parameters
    ----------
    estimator : estimator object
        Object implementing ``fit``; cloned for every fit.
    search_spaces : dict or list of dict
        Parameter names mapped to dimensions, as in
        :class:`~skbayes_search.BayesSearchCV`.
    n_iter : int, default=50
        Number of trials, the final full-data evaluation included.
    max_time : float, default=None
        Wall-clock budget in seconds, overhead included. Only trials whose
        cautious cost fits in the time left are proposed, after setting aside
        one more proposal and the incumbent's final full-data evaluation (at
        most half of ``max_time``); when none fits the search ends. The
        final evaluation may run 10 % of ``max_time`` (at least 1 s) past it;
        stopped there, it is recorded as failed.
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
        trial runs on all data (plain entropy-search BO). Raise it when tiny
        subsets rank configurations differently from all data.
    initial_fractions : sequence of float, default=(1/64, 1/32, 1/16, 1/8)
        Training fractions of the initial design, used in turn; each in
        (0, 1] and raised to at least ``min_resources`` rows.
    n_initial_points : int, default=10
        Configurations of the initial design (scrambled Sobol points),
        dispatched as one batch.
    n_representers : int, default=50
        Points at ``s = 1`` representing the distribution of the minimiser.
    n_hyper_samples : int, default=10
        GP hyperparameter samples kept per iteration, for each model.
    overhead : "measured" or float, default="measured"
        Seconds added to every candidate's predicted cost: the previous
        proposal's duration, or a fixed number (0 disables it).
    information : {"relative_entropy", "entropy_reduction"}, \
            default="relative_entropy"
        What eq. 7 divides by the cost: the expected relative entropy of the
        updated ``p_min`` to the uniform measure on the representers, as the
        paper writes it, or the expected entropy reduction of ``p_min``
        (the form its footnote 3 sets aside). The first favours cheap
        subsets more (measurements: ``doc/design/fabolas.rst``).
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
        ``iter``, ``elapsed_time``, ``predicted_full_score`` (by the last
        model) and ``acquisition_value`` (information gain per second).
    best_index_, best_score_, best_params_ : int, float, dict
        Row, measured score and parameters of the incumbent's full-data
        evaluation (with a callable ``refit``, whatever it selects).
    best_estimator_ : estimator
        Refitted on all data with ``best_params_`` (when ``refit``).
    incumbent_trajectory_ : list of (float, dict, float)
        After every model fit: seconds since ``fit`` started, incumbent
        parameters, predicted full-data score.
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
    ...     n_iter=8, n_initial_points=4, n_representers=10, n_hyper_samples=2,
    ...     cv=3, random_state=0,
    ... ).fit(X, y)
    >>> search.cv_results_["resource_fraction"][search.best_index_]
    np.float64(1.0)
    """

    _parameter_constraints: dict = {
        **BaseBayesSearchCV._parameter_constraints,
        "min_resources": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
        ],
        "initial_fractions": ["array-like"],
        "n_initial_points": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_representers": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_hyper_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "overhead": [
            StrOptions({"measured"}),
            Interval(numbers.Real, 0, None, closed="left"),
        ],
        "information": [StrOptions(set(INFORMATION))],
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
        initial_fractions: Any = (1 / 64, 1 / 32, 1 / 16, 1 / 8),
        n_initial_points: int = 10,
        n_representers: int = 50,
        n_hyper_samples: int = 10,
        overhead: str | float = "measured",
        information: str = "relative_entropy",
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

    def _resolve_min_resources(self, ctx: SearchContext) -> int:
        if self.min_resources != "auto":
            return int(self.min_resources)
        if ctx.n_classes is None:
            return MIN_RESOURCES_REGRESSION
        return max(10 * ctx.n_classes, 2 * ctx.n_splits * ctx.n_classes)

    def _check_strategy_params(self, ctx: SearchContext) -> None:
        check_fractions(self.initial_fractions, "initial_fractions")
        if self.min_resources != "auto" and int(self.min_resources) > ctx.n_train:
            raise ValueError(
                f"min_resources={self.min_resources} is larger than the "
                f"{ctx.n_train} training rows of the smallest CV split."
            )

    def _init_search(self, ctx: SearchContext) -> None:
        self.min_resources_ = min(self._resolve_min_resources(ctx), ctx.n_train)
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
        self._n_x = ctx.space.n_dims
        # a resumed search (trials read back from a store) keeps counting
        self._n_asks = max((t.iter for t in ctx.trials), default=-1) + 1
        # latest predicted full-data score per cv_results_ row
        self._pred_full: dict[int, float] = {}
        self._last_overhead: float | None = None
        self._best_row: int | None = None
        self._kind = "neg"
        seed = ctx.seed
        loss_kernel, cost_kernel = fabolas_kernels(self._n_x, not self.fallback_)
        mcmc = {"hyperparameter_sampling": "mcmc", "n_samples": self.n_hyper_samples}
        self._loss_gp = GPSurrogate(loss_kernel, random_state=seed, **mcmc)
        self._cost_gp = GPSurrogate(cost_kernel, random_state=seed + 1, **mcmc)
        design_rng = np.random.default_rng([seed, 4])
        self._design_params = ctx.space.from_unit(
            ctx.space.sample(self.n_initial_points, design_rng)
        )

    def _fit_models(self, ctx: SearchContext) -> np.ndarray:
        """Fit both models on every finished trial; return their inputs."""
        fractions = np.array([t.n_resources / ctx.n_train for t in ctx.trials])
        Xin = self._axis.with_s(ctx.X(), self._axis.to_s(fractions))
        scores = ctx.scores()
        self._kind = error_kind(scores)
        self._loss_gp.fit(Xin, scores_to_loss(scores, self._kind))
        self._cost_gp.fit(Xin, np.log(ctx.costs()))
        return Xin

    def _predict_full_loss(self, X: np.ndarray) -> np.ndarray:
        """Mean predicted loss at s = 1, averaged over hyperparameter samples."""
        return self._loss_gp.predict_mean(self._axis.with_s(X, 1.0)).mean(axis=0)

    def _update_incumbent(self, ctx: SearchContext) -> int:
        """Refresh predictions at s = 1; return the incumbent's trial index."""
        pred = self._predict_full_loss(ctx.X())
        scores = loss_to_scores(pred, self._kind)
        self._pred_full.update((i, float(v)) for i, v in enumerate(scores))
        ok = np.isfinite(ctx.scores())  # a failed trial is never the incumbent
        inc = int(np.flatnonzero(ok)[np.argmin(pred[ok])])
        self.incumbent_trajectory_.append(
            (ctx.elapsed(), dict(ctx.trials[inc].params), float(scores[inc]))
        )
        return inc

    def _full_data_row(self, ctx: SearchContext, inc: int) -> int | None:
        """A successful all-data trial of the incumbent's configuration."""
        x, ok = ctx.trials[inc].x, np.isfinite(ctx.scores())
        rows = [
            i
            for i, t in enumerate(ctx.trials)
            if ok[i] and not t.failed and t.n_resources >= ctx.n_train
        ]
        return next((i for i in rows[::-1] if np.array_equal(ctx.trials[i].x, x)), None)

    def _budget(self, ctx: SearchContext, inc: int) -> tuple[CostModel, float]:
        """The cost model, and the seconds a proposed trial may take: with
        ``max_time``, what is left after one more proposal and the
        incumbent's final full-data evaluation."""
        ok = [t for t in ctx.trials if not t.failed and np.isfinite(t.score)]
        fractions, n_splits = [t.fraction for t in ok], ctx.n_splits
        costs = CostModel(
            self._cost_gp, fractions, ctx.costs(ok), n_splits, ctx.n_jobs_effective
        )
        if ctx.max_time is None:
            return costs, np.inf
        reserve, x = 0.0, ctx.trials[inc].x
        if not self.fallback_ and self._full_data_row(ctx, inc) is None:
            own = [np.array_equal(t.x, x) for t in ok]
            x_full = self._axis.with_s(x[None, :], 1.0)
            reserve = costs.final_reserve(x_full, own, ctx.max_time)
        return costs, ctx.time_left() - ((self._last_overhead or 0.0) + reserve)

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

    def _acquisition(
        self,
        ctx: SearchContext,
        Z: np.ndarray,
        posteriors: list,
        overhead: float,
        costs: CostModel,
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
            self._cost_gp.predict_mean,
            ctx.rng,
            overhead=overhead,
            information=self.information,
            cost=cautious_cost,
            max_cost=max_cost,
            pmap=pmap,
        )

    def _pending_design(self, ctx: SearchContext) -> list[int]:
        """Design points neither evaluated nor running (matched, not counted:
        they finish in any order and a resumed search runs the rest)."""
        # compared by unit-cube encoding: parameter dicts may hold values
        # (arrays) whose == is not a truth value
        done = {x.tobytes() for x in np.vstack([ctx.X(), ctx.X_pending()])}
        design = ctx.space.to_unit(self._design_params)
        return [i for i, x in enumerate(design) if x.tobytes() not in done]

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
            # each design point keeps its place in the cycle of fractions
            positions = pending[:n_slots]
            params_list = [self._design_params[i] for i in positions]
        else:
            # too few successes for a model: keep exploring at random, among
            # configurations neither evaluated nor running
            seen = {x.tobytes() for x in np.vstack([ctx.X(), ctx.X_pending()])}
            more = ctx.space.sample(16 * n_slots, ctx.rng, method="random")
            fresh = {x.tobytes(): x for x in more if x.tobytes() not in seen}
            U = np.array(list(fresh.values())[:n_slots]).reshape(-1, ctx.space.n_dims)
            params_list = ctx.space.from_unit(U)
            positions = range(len(ctx.trials), len(ctx.trials) + n_slots)
        fractions = check_fractions(self.initial_fractions, "initial_fractions")
        s_min = self.min_resources_ / ctx.n_train
        trials = []
        for params, pos in zip(params_list, positions):
            f = 1.0 if self.fallback_ else fractions[pos % fractions.size]
            extras = {"predicted_full_score": np.nan, "acquisition_value": np.nan}
            fraction = float(min(1.0, max(f, s_min)))
            trials.append(Trial(params, fraction, iter=it, extras=extras))
        return trials

    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        started = time.perf_counter()
        it = self._n_asks
        self._n_asks += 1
        # the last trial of the budget is kept for the final evaluation
        if not self.fallback_ and ctx.trials and ctx.n_remaining() <= 1:
            return []
        if not self.fallback_:
            n_slots = min(n_slots, ctx.n_remaining() - 1)
        pending = self._pending_design(ctx)
        if pending or ctx.n_succeeded() < 2:
            if not self.fallback_:
                # one batch keeps every worker busy; in the fallback each design
                # point is a full-data fit and max_time must stop between them
                n_slots = max(n_slots, min(len(pending), ctx.n_remaining() - 1))
            return self._design_trials(ctx, n_slots, it, pending)
        with single_blas_thread():
            trials = self._propose(ctx, n_slots, it, started)
        self._last_overhead = time.perf_counter() - started
        return trials

    def _propose(
        self, ctx: SearchContext, n_slots: int, it: int, started: float
    ) -> list[Trial]:
        """One BO iteration: fit, pick the incumbent, maximise eq. 7."""
        Xin = self._fit_models(ctx)
        inc = self._update_incumbent(ctx)
        costs, max_cost = self._budget(ctx, inc)
        if max_cost <= 0:
            return []
        Z = self._representers(ctx, inc)
        overhead = overhead_seconds(self.overhead, self._last_overhead, started)
        X_obs = ctx.X()
        top = self._top(X_obs)
        seeds = [Xin[top]]
        if not self.fallback_:
            # the most promising configurations on the cheapest subset too
            seeds.append(self._axis.with_s(X_obs[top], 0.0))
        posts = self._loss_gp.posteriors
        n_conditioned = 0
        pending = None
        if ctx.pending:
            running = np.array([t.fraction for t in ctx.pending])
            pending = self._axis.with_s(ctx.X_pending(), self._axis.to_s(running))

        def acquisition_for(P: np.ndarray | None) -> tuple:
            nonlocal posts, n_conditioned
            # pending points: each model sees its own predicted mean there, a
            # fantasy that only shrinks the variance, so a batch spreads out
            for u in [] if P is None else P[n_conditioned:]:
                posts = [p.condition(u[None, :], p.mean(u[None, :])) for p in posts]
            n_conditioned = 0 if P is None else len(P)
            return self._acquisition(ctx, Z, posts, overhead, costs, max_cost, pmap)

        # idle workers' threads, but never more than local cores (dask); while
        # trials run, the workers are busy
        n_threads = min(ctx.n_jobs_effective, len(posts), os.cpu_count() or 1)
        if ctx.pending:
            n_threads = 1
        with ThreadPoolExecutor(n_threads) if n_threads > 1 else nullcontext() as pool:
            pmap = map if pool is None else pool.map
            U, values = propose_batch(
                acquisition_for,
                n_slots,
                Xin.shape[1],
                rng=ctx.rng,
                snap=lambda U: self._axis.snap_inputs(U, ctx.space.snap),
                seeds=np.vstack(seeds),
                exclude=Xin,
                pending=pending,
                n_candidates=_N_CANDIDATES,
                n_polish=_N_POLISH,
                n_refine=_N_REFINE,
            )
        trials = []
        for u, value in zip(U, values):
            x = u[None, : self._n_x]
            score = float(loss_to_scores(self._predict_full_loss(x), self._kind)[0])
            extras = {"predicted_full_score": score, "acquisition_value": float(value)}
            fraction = 1.0 if self.fallback_ else self._axis.fraction_of(u[self._n_x])
            params = ctx.space.from_unit(x)[0]
            trials.append(Trial(params, float(fraction), iter=it, extras=extras))
        return trials

    def _finalize(self, ctx: SearchContext) -> list[Trial]:
        self._best_row = None
        ok = np.isfinite(ctx.scores())
        extras = {"predicted_full_score": np.nan, "acquisition_value": np.nan}
        if not ok.any():
            if ctx.trials:
                return []  # every trial failed; the base reports it
            # no trial at all (n_iter=1): evaluate the first design point
            self._best_row, params = 0, self._design_params[0]
            return [Trial(params, 1.0, iter=self._n_asks, extras=extras)]
        if ok.sum() >= 2:
            with single_blas_thread():
                self._fit_models(ctx)
                inc = self._update_incumbent(ctx)
            predicted = self._pred_full[inc]
        else:
            # a single success: nothing to model, it is the incumbent
            inc = int(np.flatnonzero(ok)[0])
            predicted = np.nan
        row = self._full_data_row(ctx, inc)
        self._best_row = len(ctx.trials) if row is None else row
        if row is not None:
            return []
        self._pred_full[self._best_row] = extras["predicted_full_score"] = predicted
        params = dict(ctx.trials[inc].params)
        return [Trial(params, 1.0, iter=self._n_asks, extras=extras)]

    def _more_results(self, ctx: SearchContext) -> dict[str, list]:
        more = super()._more_results(ctx)
        n = len(ctx.trials)
        # every row gets the last model's prediction, so the incumbent is the
        # row with the best predicted_full_score among successful trials
        more["predicted_full_score"] = [
            self._pred_full.get(i, np.nan) for i in range(n)
        ]
        more.setdefault("acquisition_value", [np.nan] * n)
        return more

    def _select_best(self, results: dict, refit_metric: str) -> int:
        row = self._best_row
        if (
            callable(self.refit)
            or row is None
            or row >= len(results["params"])
            or not np.isfinite(results[f"mean_test_{refit_metric}"][row])
        ):
            return super()._select_best(results, refit_metric)
        return int(row)
