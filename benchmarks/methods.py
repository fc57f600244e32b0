"""The methods compared: ours and the peers, registered by name.

Every method is imported lazily, when it is built, so the harness runs while
some of them do not exist yet: :func:`availability` says why a method cannot
run (our class not written yet, a peer's package missing or broken), and the
report lists it as "not available" with that reason.

Budgets. Ours get ``max_time=budget`` and, where ``n_iter`` is one total, an
``n_iter`` so large that the time limit binds (``MultiStageBayesSearchCV``
keeps its per-stage default, which is the method). Optuna gets
``timeout=budget`` and ``n_trials=None``; scikit-optimize its own
``DeadlineStopper(budget)`` callback. Random, grid and halving search have no
time limit: their size comes from :mod:`benchmarks.calibration`.

Every method otherwise keeps its documented defaults (5-fold CV, its default
sampler/acquisition), with the same ``n_jobs``, ``refit=False`` (incumbents are
refit offline, outside the timed part) and ``return_train_score=False``
(train scores are not used and only cost time).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .tasks import Task, space_grid, space_optuna, space_ours, space_scipy, space_skopt

# n_iter for our strategies whose n_iter is one total: large enough that
# max_time, the budget shared with the peers, is what stops them.
_TIME_BOUND_N_ITER = 100_000


@dataclass
class BuildContext:
    """What a method needs to build its search object."""

    task: Task
    budget: float
    seed: int
    n_jobs: int
    #: Settings chosen by calibration (``random_n_iter``, ``grid_points``,
    #: ``halving``), for the peers without a time budget.
    sizing: dict[str, Any] = field(default_factory=dict)
    #: Timestamping scorer for the peers (None for ours).
    scoring: Any = None


@dataclass(frozen=True)
class Method:
    """A registered method.

    Attributes
    ----------
    name : str
        Registry name (``--methods``).
    ours : bool
        A skbayes_search strategy (trajectory from ``cv_results_``) or a peer
        (trajectory from the timestamping scorer).
    description : str
        What runs, for the report.
    modules : tuple of str
        Modules that must import for the method to be available.
    attribute : str or None
        Class that must exist in ``modules[0]``.
    build : callable
        ``build(ctx) -> (search, fit_kwargs, settings)``; ``settings`` is a
        dict of what was chosen, written to the output.
    """

    name: str
    ours: bool
    description: str
    modules: tuple[str, ...]
    attribute: str | None
    build: Callable[[BuildContext], tuple[Any, dict, dict]]
    applies: Callable[[Task], bool] = lambda task: True


def _ours(class_name: str, **kwargs: Any) -> Callable:
    def build(ctx: BuildContext) -> tuple[Any, dict, dict]:
        cls = getattr(importlib.import_module("skbayes_search"), class_name)
        settings = {"max_time": ctx.budget, **kwargs}
        search = cls(
            ctx.task.estimator(),
            space_ours(ctx.task.params),
            n_jobs=ctx.n_jobs,
            refit=False,
            random_state=ctx.seed,
            **settings,
        )
        return search, {}, settings

    return build


def _build_random(ctx: BuildContext) -> tuple[Any, dict, dict]:
    from sklearn.model_selection import RandomizedSearchCV

    n_iter = ctx.sizing["random_n_iter"]
    search = RandomizedSearchCV(
        ctx.task.estimator(),
        space_scipy(ctx.task.params),
        n_iter=n_iter,
        scoring=ctx.scoring,
        n_jobs=ctx.n_jobs,
        refit=False,
        random_state=ctx.seed,
    )
    return search, {}, {"n_iter": n_iter}


def _build_grid(ctx: BuildContext) -> tuple[Any, dict, dict]:
    from sklearn.model_selection import GridSearchCV

    k = ctx.sizing["grid_points"]
    search = GridSearchCV(
        ctx.task.estimator(),
        space_grid(ctx.task.params, k),
        scoring=ctx.scoring,
        n_jobs=ctx.n_jobs,
        refit=False,
    )
    return search, {}, {"points_per_dim": k, "n_points": k ** len(ctx.task.params)}


def _build_halving(ctx: BuildContext) -> tuple[Any, dict, dict]:
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingRandomSearchCV

    chosen = ctx.sizing["halving"]
    search = HalvingRandomSearchCV(
        ctx.task.estimator(),
        space_scipy(ctx.task.params),
        n_candidates=chosen["n_candidates"],
        factor=3,
        resource="n_samples",
        min_resources=chosen["min_resources"],
        scoring=ctx.scoring,
        n_jobs=ctx.n_jobs,
        refit=False,
        return_train_score=False,
        random_state=ctx.seed,
    )
    return search, {}, dict(chosen)


def _build_skopt(ctx: BuildContext) -> tuple[Any, dict, dict]:
    from skopt import BayesSearchCV
    from skopt.callbacks import DeadlineStopper

    search = BayesSearchCV(
        ctx.task.estimator(),
        space_skopt(ctx.task.params),
        n_iter=_TIME_BOUND_N_ITER,
        scoring=ctx.scoring,
        n_jobs=ctx.n_jobs,
        refit=False,
        random_state=ctx.seed,
    )
    # The stopper's clock starts when it is made: build runs just before fit.
    fit_kwargs = {"callback": [DeadlineStopper(ctx.budget)]}
    return search, fit_kwargs, {"DeadlineStopper": ctx.budget, "n_iter": "unbounded"}


def _build_optuna(ctx: BuildContext) -> tuple[Any, dict, dict]:
    import optuna
    from optuna_integration import OptunaSearchCV

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    search = OptunaSearchCV(
        ctx.task.estimator(),
        space_optuna(ctx.task.params),
        n_trials=None,
        timeout=ctx.budget,
        scoring=ctx.scoring,
        n_jobs=ctx.n_jobs,
        refit=False,
        random_state=ctx.seed,
    )
    return search, {}, {"timeout": ctx.budget, "n_trials": None}


def _halving_variant(suffix: str, **options: Any) -> Method:
    """``HalvingBayesSearchCV`` with ``options``, as method
    ``halving-bayes-<suffix>``: measured beside the default (a variant whose
    options have since become the default stays, so that its folders'
    reports rebuild)."""
    shown = ", ".join(f"{k}={v!r}" for k, v in options.items())
    return Method(
        f"halving-bayes-{suffix}",
        True,
        f"skbayes_search.HalvingBayesSearchCV, {shown}",
        ("skbayes_search",),
        "HalvingBayesSearchCV",
        _ours("HalvingBayesSearchCV", n_iter=_TIME_BOUND_N_ITER, **options),
    )


METHODS: dict[str, Method] = {
    m.name: m
    for m in [
        Method(
            "halving-bayes",
            True,
            "skbayes_search.HalvingBayesSearchCV (the recommended default)",
            ("skbayes_search",),
            "HalvingBayesSearchCV",
            _ours("HalvingBayesSearchCV", n_iter=_TIME_BOUND_N_ITER),
        ),
        _halving_variant("hyperband", start_rungs="hyperband"),
        _halving_variant("neighbours", neighbour_fraction=0.5),
        _halving_variant(
            "hyperband-neighbours", start_rungs="hyperband", neighbour_fraction=0.5
        ),
        _halving_variant("lead", lead_share=0.5),
        _halving_variant("nolead", lead_share=0.0),
        _halving_variant("subval", subsample_validation=True),
        _halving_variant("fullval", subsample_validation=False),
        _halving_variant("init30", n_initial_points=30),
        _halving_variant("noscreen", n_screened=0),
        _halving_variant("min1000", min_resources=1000),
        Method(
            "bayes",
            True,
            "skbayes_search.BayesSearchCV (GP-EI-MCMC, full data)",
            ("skbayes_search",),
            "BayesSearchCV",
            _ours("BayesSearchCV", n_iter=_TIME_BOUND_N_ITER),
        ),
        Method(
            "multistage",
            True,
            "skbayes_search.MultiStageBayesSearchCV (default stages)",
            ("skbayes_search",),
            "MultiStageBayesSearchCV",
            _ours("MultiStageBayesSearchCV"),
        ),
        Method(
            "fabolas",
            True,
            "skbayes_search.FabolasSearchCV",
            ("skbayes_search",),
            "FabolasSearchCV",
            _ours("FabolasSearchCV", n_iter=_TIME_BOUND_N_ITER),
        ),
        Method(
            "tradeoff-0",
            True,
            "skbayes_search.TradeoffBayesSearchCV alpha=0",
            ("skbayes_search",),
            "TradeoffBayesSearchCV",
            _ours("TradeoffBayesSearchCV", alpha=0.0, n_iter=_TIME_BOUND_N_ITER),
        ),
        Method(
            "tradeoff-0.1",
            True,
            "skbayes_search.TradeoffBayesSearchCV alpha=0.1",
            ("skbayes_search",),
            "TradeoffBayesSearchCV",
            _ours("TradeoffBayesSearchCV", alpha=0.1, n_iter=_TIME_BOUND_N_ITER),
        ),
        Method(
            "random",
            False,
            "sklearn RandomizedSearchCV (n_iter from calibration)",
            ("sklearn.model_selection",),
            "RandomizedSearchCV",
            _build_random,
        ),
        Method(
            "grid",
            False,
            "sklearn GridSearchCV (log grid, size from calibration)",
            ("sklearn.model_selection",),
            "GridSearchCV",
            _build_grid,
            applies=lambda task: task.spec.grid_natural,
        ),
        Method(
            "halving",
            False,
            "sklearn HalvingRandomSearchCV (factor 3, n_samples)",
            (
                "sklearn.experimental.enable_halving_search_cv",
                "sklearn.model_selection",
            ),
            None,
            _build_halving,
        ),
        Method(
            "skopt",
            False,
            "scikit-optimize BayesSearchCV (GP default, DeadlineStopper)",
            ("skopt", "skopt.callbacks"),
            "BayesSearchCV",
            _build_skopt,
        ),
        Method(
            "optuna",
            False,
            "optuna_integration OptunaSearchCV (TPE default, timeout)",
            ("optuna_integration", "optuna"),
            "OptunaSearchCV",
            _build_optuna,
        ),
    ]
}

OURS = tuple(name for name, m in METHODS.items() if m.ours)
PEERS = tuple(name for name, m in METHODS.items() if not m.ours)
#: The default's variants (``halving-bayes-<suffix>``): the same class with
#: other options, measured beside it before one becomes the default.
VARIANTS = tuple(name for name in METHODS if name.startswith("halving-bayes-"))
#: Every method but the variants: what a user would choose among.
MAIN = tuple(name for name in METHODS if name not in VARIANTS)


def availability(name: str) -> str | None:
    """None when method ``name`` can run here, else the reason it cannot."""
    method = METHODS[name]
    for module in method.modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # a broken install raises more than ImportError
            return f"import {module} failed: {type(exc).__name__}: {exc}"
    if method.attribute is not None:
        module = importlib.import_module(method.modules[0])
        if not hasattr(module, method.attribute):
            mod = method.modules[0]
            return f"{mod} does not export {method.attribute} ({NOT_WRITTEN})"
    return None


#: Part of the reason :func:`availability` gives for a class that does not
#: exist yet (as opposed to one that fails to import).
NOT_WRITTEN = "not written yet"


def resolve_methods(spec: str) -> list[str]:
    """Names from ``--methods``: ``all``, ``main`` (all but the default's
    variants), ``ours``, ``peers`` or a comma list."""
    names: list[str] = []
    for part in spec.split(","):
        part = part.strip()
        if part == "all":
            names += list(METHODS)
        elif part == "main":
            names += list(MAIN)
        elif part == "ours":
            names += list(OURS)
        elif part == "peers":
            names += list(PEERS)
        elif part in METHODS:
            names.append(part)
        elif part:
            raise ValueError(f"Unknown method {part!r}; known: {', '.join(METHODS)}.")
    return list(dict.fromkeys(names))
