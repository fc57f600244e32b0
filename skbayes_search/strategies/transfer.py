"""TransferBayesSearchCV: warm-started BO from earlier datasets (Yogatama & Mann 2014).

The algorithm as implemented, and where and why it departs from the paper,
are described in ``doc/design/transfer.rst``.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import BaseBayesSearchCV, shared_params
from .._meta_features import (
    check_meta_features,
    current_meta_features,
    gp_features,
    meta_distances,
    nearest,
    same_scoring_runs,
)
from .._numerics import single_blas_thread
from .._response_surface import (
    ResponseSurface,
    contains,
    prior_datasets,
    replace_coordinates,
)
from .._trial import SearchContext, Trial
from .._validation import COUNT, warn_if_space_small
from ..acquisition import make_acquisition
from ..gp import GPSurrogate
from ..gp.transfer_kernels import check_kernel_weights, mkl_kernel, sqe_kernel
from ..optimize import propose_batch
from ..storage import TrialStore

__all__ = ["TransferBayesSearchCV"]

# Best points, of the current dataset and of the prior ones, around which the
# acquisition optimiser searches besides its Sobol candidates.
_N_SEEDS = 5
# Acquisition candidates; a small finite space needs far fewer, since they
# all snap onto its few points.
_N_CANDIDATES = 2048


class TransferBayesSearchCV(BaseBayesSearchCV):
    """Bayesian optimisation warm-started from earlier datasets.

    For tuning the same estimator on dataset after dataset (Yogatama and
    Mann 2014). Every search given a ``store`` leaves its run there; this one
    reads all *finished* runs of the same estimator class over the same search
    space (any strategy, any dataset) and fits one GP on the ``n_neighbors``
    prior datasets nearest in meta-feature space (log n_samples,
    log n_features, n_classes) together with the current dataset:

    - each dataset's losses become deviations from that dataset's mean
      divided by its standard deviation (the current dataset's mean and std
      are re-estimated at every iteration), so datasets with different score
      levels and spreads share one response surface;
    - ``kernel="sqe"`` models that surface with one squared-exponential ARD
      kernel over the hyperparameters and the datasets' meta-features
      (standardised across the datasets in the store), so the GP learns how
      far a dataset's surface carries to the current one; ``kernel="mkl"``
      combines an SE kernel within each dataset with a nearest-neighbour
      kernel shared by the current dataset and the neighbours;
    - the first trial is the configuration tried on the neighbours that the
      prior data predict best for this one; without prior runs it is the
      centre of the space (:meth:`SearchSpace.default_point`);
    - later trials maximise expected improvement over the current dataset's
      best response, after which each parameter is replaced, with probability
      ``random_replacement``, by a uniform draw over its range.

    The run is written to ``store`` trial by trial (a killed search resumes
    with the same ``run_name``) and marked finished at the end, ready for the
    next dataset. Transfer assumes comparable metrics across runs:
    standardisation absorbs location and scale, not the direction.

    Parameters
    ----------
    estimator : estimator object
        Object implementing ``fit``; cloned for every fit.
    search_spaces : dict or list of dict
        As in :class:`~skbayes_search.BayesSearchCV`. Only runs over an equal
        space (same :meth:`SearchSpace.signature`) are transferred.
    store : TrialStore, str or path-like
        Required. The :class:`~skbayes_search.TrialStore` (or its path; the
        directory must exist) to read earlier runs from and write this run to.
    run_name : str, default=None
        Name of this run in ``store``; an existing run of that name is resumed.
        ``None`` creates a fresh run with a generated name (``run_name_``).
    dataset_name : str, default=None
        A label for the dataset, recorded with every trial of the run (the
        ``dataset_name`` column of ``cv_results_`` and the trials' extras in
        the store) and shown for transferred runs in ``transfer_runs_``.
    kernel : {"mkl", "sqe"}, default="mkl"
        Response-surface kernel (see above and
        :mod:`skbayes_search.gp.transfer_kernels`).
    n_neighbors : int, default=20
        Prior datasets, nearest in meta-feature space, whose trials the GP
        holds (both kernels; 20 as in the paper). With ``max_trials_per_dataset``
        it bounds the cost of a proposal, however many runs the store holds.
    max_trials_per_dataset : int or None, default=20
        At most this many trials of each neighbour enter the GP: the best half
        and, of the others, those spread farthest over the space (its
        responses are standardised with all of them). ``None`` keeps all.
    kernel_weights : tuple of two floats, default=(0.3, 0.7)
        Weights of the same-dataset SE kernel and of the nearest-neighbour
        kernel (``"mkl"``); non-negative, summing to 1.
    random_replacement : float in [0, 1], default=0.25
        Probability with which each parameter of a proposal is replaced by a
        uniform draw (in a conditional space the choice of sub-space counts as
        one more parameter).
    meta_features : "auto", dict or array-like of shape (3,), default="auto"
        How the current dataset is placed among the prior ones. ``"auto"``:
        ``(log n_samples, log n_features, n_classes)`` of the data given to
        ``fit`` (``n_classes`` 0 for regression), as stored for every run. A
        dict with some of the keys ``n_samples``, ``n_features``,
        ``n_classes`` overrides those counts (e.g. the size of the full
        dataset when fitting on a sample); an array gives the three features
        directly. Prior datasets always use their stored counts, and the store
        keeps this run's actual counts.
    n_iter : int, default=10
        Number of trials.
    max_time : float, default=None
        Wall-clock budget in seconds for the whole search, surrogate overhead
        included, and a promise: at ``max_time`` the running trials are
        stopped (and not recorded) and the search ends; ``None`` means no
        time limit. The final refit is not included.
    trial_timeout : float, default=None
        Seconds one trial may run; a trial past it is stopped and recorded as
        failed with the reason (user guide, "Budgets").
    asynchronous : bool, default=True
        Propose whenever a worker would idle, conditioned on the running
        trials; ``False``: synchronous batches, whose trials do not depend on
        which fit finishes first (user guide, "How a search runs").
    scoring : str, callable, list, tuple or dict, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    n_jobs : int, default=None
        Number of jobs running folds in parallel.
    refit : bool, str or callable, default=True
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    cv : int, cross-validation generator or iterable, default=None
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    verbose : int, default=0
        ``1`` shows a progress bar when tqdm is installed (the ``progress``
        extra) and prints one line per trial otherwise; ``> 1`` prints one
        line per trial and scikit-learn's line per fit.
    pre_dispatch : int or str, default="2*n_jobs"
        As in :class:`~sklearn.model_selection.GridSearchCV`.
    random_state : int, RandomState instance or None, default=None
        Seeds the acquisition search, the random replacements and the GP
        restarts. Given the same store content, results do not depend on
        ``n_jobs``.
    error_score : "raise" or float, default=np.nan
        Score recorded for a failed fit; the GP sees the dataset's worst
        observed loss there.
    return_train_score : bool, default=False
        Whether ``cv_results_`` includes training scores.

    Attributes
    ----------
    cv_results_ : dict of numpy (masked) ndarrays
        scikit-learn's keys plus ``n_resources``, ``resource_fraction``,
        ``iter``, ``elapsed_time``, ``fit_failed``, ``acquisition_value`` (log EI at the
        acquisition optimum, before random replacement; nan for the first
        trial), ``dataset_score_mean`` and ``dataset_score_std`` (the
        current dataset's running estimates the proposal was made with; nan
        for the first trial), ``n_replaced`` (parameters replaced by uniform
        draws) and ``dataset_name`` when given.
    best_estimator_, best_score_, best_params_, best_index_, scorer_, \
n_splits_, refit_time_, multimetric_, classes_, n_features_in_, \
feature_names_in_
        As in :class:`~skbayes_search.BayesSearchCV`.
    run_name_ : str
        Name of this run in ``store``.
    meta_features_ : ndarray of shape (3,)
        The current dataset's meta-features.
    transfer_runs_ : list of dict
        The prior runs read, oldest first: ``name``, ``dataset_name``,
        ``meta_features``, ``distance`` (to this dataset), ``neighbor``
        (one of the ``n_neighbors`` nearest, whose trials the GP holds),
        ``n_trials`` and ``n_used`` (trials in the GP).

    See Also
    --------
    BayesSearchCV : GP-EI-MCMC on one dataset.

    References
    ----------
    D. Yogatama, G. Mann. Efficient Transfer Learning Method for Automatic
    Hyperparameter Tuning. AISTATS 2014.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn.datasets import load_breast_cancer, load_wine
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skbayes_search import Real, TrialStore
    >>> from skbayes_search.strategies.transfer import TransferBayesSearchCV
    >>> store = TrialStore(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
    >>> model = make_pipeline(StandardScaler(), LogisticRegression())
    >>> space = {"logisticregression__C": Real(1e-3, 1e2, prior="log-uniform")}
    >>> for name, load in [("wine", load_wine), ("cancer", load_breast_cancer)]:
    ...     X, y = load(return_X_y=True)
    ...     search = TransferBayesSearchCV(
    ...         model, space, store=store, dataset_name=name, n_iter=4, cv=3,
    ...         random_state=0,
    ...     ).fit(X, y)
    >>> [run["dataset_name"] for run in search.transfer_runs_]
    ['wine']
    >>> len(store.runs(finished=True))
    2
    """

    _parameter_constraints: dict = {
        **BaseBayesSearchCV._parameter_constraints,
        "dataset_name": [str, None],
        "kernel": [StrOptions({"mkl", "sqe"})],
        "n_neighbors": [COUNT],
        "max_trials_per_dataset": [COUNT, None],
        "kernel_weights": [tuple, list, np.ndarray],
        "random_replacement": [Interval(numbers.Real, 0, 1, closed="both")],
        "meta_features": [StrOptions({"auto"}), dict, "array-like"],
    }

    def __init__(
        self,
        estimator: Any,
        search_spaces: dict | list,
        *,
        store: TrialStore | str | os.PathLike,
        run_name: str | None = None,
        dataset_name: str | None = None,
        kernel: str = "mkl",
        n_neighbors: int = 20,
        max_trials_per_dataset: int | None = 20,
        kernel_weights: tuple[float, float] = (0.3, 0.7),
        random_replacement: float = 0.25,
        meta_features: Any = "auto",
        n_iter: int = 10,
        max_time: float | None = None,
        trial_timeout: float | None = None,
        asynchronous: bool = True,
        scoring: Any = None,
        n_jobs: int | None = None,
        refit: bool | str | Any = True,
        cv: Any = None,
        verbose: int = 0,
        pre_dispatch: int | str = "2*n_jobs",
        random_state: Any = None,
        error_score: str | float = np.nan,
        return_train_score: bool = False,
    ) -> None:
        super().__init__(**shared_params(locals()))
        self.dataset_name = dataset_name
        self.kernel = kernel
        self.n_neighbors = n_neighbors
        self.max_trials_per_dataset = max_trials_per_dataset
        self.kernel_weights = kernel_weights
        self.random_replacement = random_replacement
        self.meta_features = meta_features

    # -- validation -----------------------------------------------------------
    def _check_strategy_params(self, ctx: SearchContext) -> None:
        if self.store is None:
            raise ValueError(
                "TransferBayesSearchCV needs a store (a TrialStore or the path of "
                "one): earlier runs are read from it and this run is added to it. "
                "Got store=None."
            )
        check_kernel_weights(self.kernel_weights)
        check_meta_features(self.meta_features)
        warn_if_space_small(
            ctx.space.cardinality,
            self.n_iter,
            "the search stops once every one has been evaluated.",
        )

    # -- search ---------------------------------------------------------------
    def _init_search(self, ctx: SearchContext) -> None:
        # the store the base journals this run to: one connection
        store = ctx.journal.store
        current = store.run(ctx.journal.run_id)
        runs = store.finished_runs(
            estimator_class=current["estimator_class"],
            space_signature=current["space_signature"],
            exclude=current["id"],
        )
        prior = prior_datasets(
            same_scoring_runs(runs, current.get("fingerprint")), ctx.space.n_dims
        )
        self.meta_features_ = current_meta_features(self.meta_features, current["meta"])
        features = np.array([d.features for d in prior]).reshape(len(prior), 3)
        distances = meta_distances(self.meta_features_, features)
        # the GP holds the nearest datasets only: its cost is bounded by
        # n_neighbors * max_trials_per_dataset, whatever the store holds
        used = nearest(distances, self.n_neighbors)
        self._surface = ResponseSurface(
            [prior[i] for i in used],
            range(len(used)),
            ctx.space.n_dims,
            # the paper's SQE input: (x, the dataset's meta-features)
            features=gp_features(self.meta_features_, features, used)
            if self.kernel == "sqe"
            else None,
            max_per_dataset=self.max_trials_per_dataset,
        )
        n_used = dict(zip(used.tolist(), self._surface.n_used))
        self.transfer_runs_ = [
            {
                "name": d.name,
                "dataset_name": d.dataset_name,
                "meta_features": d.features,
                "distance": float(distances[i]),
                "neighbor": i in n_used,
                "n_trials": len(d.losses),
                "n_used": n_used.get(i, 0),
            }
            for i, d in enumerate(prior)
        ]
        self._prior_gp_fitted = False
        if not ctx.space.n_dims:
            # one configuration (a space of fixed values, or {}): nothing to
            # model, _ask evaluates it once
            self._surrogate = self._prior_gp = None
            self._predicted, self._predicted_var = [], []
            return
        if self.kernel == "mkl":
            kernel = mkl_kernel(ctx.space.n_dims, tuple(self.kernel_weights))
        else:
            kernel = sqe_kernel(ctx.space.n_dims, self._surface.features.shape[1])
        # MAP hyperparameters: the paper maximises the likelihood
        self._surrogate = GPSurrogate(
            kernel, hyperparameter_sampling="map", random_state=ctx.seed
        )
        # the prior datasets alone, fitted once on first use: the first trial
        # and the current dataset's mean and std estimates
        self._prior_gp = GPSurrogate(
            kernel, hyperparameter_sampling="map", random_state=ctx.seed
        )
        self._predicted: list[float] = []
        self._predicted_var: list[float] = []

    def _extras(self, **values: float) -> dict:
        extras = {
            "acquisition_value": math.nan,
            "dataset_score_mean": math.nan,
            "dataset_score_std": math.nan,
            "n_replaced": 0,
            **values,
        }
        if self.dataset_name is not None:
            extras["dataset_name"] = self.dataset_name
        return extras

    def _ask(self, ctx: SearchContext, n_slots: int) -> list[Trial]:
        space = ctx.space
        seen = np.vstack([ctx.X(), ctx.X_pending()])
        n_left = space.cardinality - len(np.unique(seen, axis=0))
        if n_left <= 0:
            return []
        n_slots = int(min(n_slots, n_left))
        iteration = ctx.trials[-1].iter + 1 if ctx.trials else 0
        with single_blas_thread():
            if not ctx.trials:
                U, extras = self._first_points(ctx, n_slots)
            else:
                U, extras = self._propose(ctx, n_slots)
        return [
            Trial(params, 1.0, iter=iteration, extras=e)
            for params, e in zip(space.from_unit(U), extras)
        ]

    def _prior_model(self) -> GPSurrogate | None:
        """The GP fitted on the prior datasets only (None without any)."""
        surface = self._surface
        if self._prior_gp is None or not len(surface.y_prior):
            return None
        if not self._prior_gp_fitted:
            self._prior_gp.fit(surface.X_prior, surface.y_prior)
            self._prior_gp_fitted = True
        return self._prior_gp

    def _transfer_predictions(self, X_cur: np.ndarray) -> tuple[Any, float]:
        """Prior-only predicted responses at the current trials, and ``r``.

        Each trial is predicted once (the prior GP does not change during
        the search), so rebuilding the response surface stays O(T).
        """
        model = self._prior_model()
        if model is None or not np.isfinite(self._surface.prior_std):
            return None, 1.0
        done = len(self._predicted)
        if done < len(X_cur):
            mean, std = model.predict(self._surface.augment(X_cur[done:]))
            noise = np.mean([post.noise_var for post in model.posteriors])
            self._predicted.extend(mean.mean(axis=0).tolist())
            self._predicted_var.extend(((std**2).mean(axis=0) + noise).tolist())
        # the prior responses have unit variance: keep the spread sane
        residual = float(np.clip(np.mean(self._predicted_var), 0.05, 1.0))
        return np.asarray(self._predicted[: len(X_cur)]), residual

    def _first_points(
        self, ctx: SearchContext, n_slots: int
    ) -> tuple[np.ndarray, list[dict]]:
        space, surface = ctx.space, self._surface
        model = self._prior_model()
        if model is not None:
            # among configurations tried before: the mean's minimum over the
            # whole cube extrapolates into untried corners
            candidates = surface.tried_configurations(self.kernel == "mkl")
            mean, _ = model.predict(surface.augment(candidates))
            x = candidates[int(np.argmin(mean.mean(axis=0)))]
        else:
            x = space.default_point()
        running = ctx.X_pending()
        taken = np.empty((0, space.n_dims))
        if not contains(running, x):
            taken = x[None, :]
        if len(taken) < n_slots:
            # several workers and nothing observed yet: spread the rest
            for u in space.sample(16 * n_slots, ctx.rng, "random"):
                if len(taken) == n_slots:
                    break
                if not contains(taken, u) and not contains(running, u):
                    taken = np.vstack([taken, u])
        return taken, [self._extras() for _ in taken]

    def _propose(
        self, ctx: SearchContext, n_slots: int
    ) -> tuple[np.ndarray, list[dict]]:
        space, surface = ctx.space, self._surface
        X_cur = ctx.X()
        predicted, residual = self._transfer_predictions(X_cur)
        X, y, mean, std = surface.training_set(X_cur, ctx.losses(), predicted, residual)
        self._surrogate.fit(X, y)
        y_cur = y[len(surface.y_prior) :]
        y_best = float(y_cur.min())
        seeds = np.vstack(
            [
                X_cur[np.argsort(y_cur, kind="stable")[:_N_SEEDS]],
                surface.best_prior_points(_N_SEEDS, self.kernel == "mkl"),
            ]
        )

        def acquisition_for(pending: np.ndarray | None) -> Any:
            acquisition = make_acquisition(
                self._surrogate,
                "ei",
                y_best=y_best,
                X_pending=None if pending is None else surface.augment(pending),
                rng=ctx.rng,
            )
            return lambda U: acquisition(surface.augment(U))

        n_replaced: list[int] = []
        n_candidates = _N_CANDIDATES
        if space.cardinality <= _N_CANDIDATES // 4:
            n_candidates = int(max(64, 4 * space.cardinality))

        def accept(x: np.ndarray, value: float, excluded: np.ndarray) -> np.ndarray:
            x_new, n = replace_coordinates(
                space, x, ctx.rng, float(self.random_replacement)
            )
            if contains(excluded, x_new):
                # the draw landed on a trial already made or pending
                x_new, n = x, 0
            n_replaced.append(n)
            return x_new

        U, values = propose_batch(
            acquisition_for,
            n_slots,
            space.n_dims,
            rng=ctx.rng,
            snap=space.snap,
            seeds=seeds,
            exclude=X_cur,
            pending=ctx.X_pending() if ctx.pending else None,
            accept=accept,
            n_candidates=n_candidates,
        )
        stats = {"dataset_score_mean": -mean, "dataset_score_std": std}
        extras = [
            self._extras(acquisition_value=float(v), n_replaced=n, **stats)
            for v, n in zip(values, n_replaced)
        ]
        return U, extras
