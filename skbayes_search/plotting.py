"""Figures of fitted searches (needs the optional ``plot`` extra: matplotlib).

Every function reads a fitted search's ``cv_results_`` (and, for
:func:`plot_objective`, its search space) and draws on matplotlib axes; none
re-runs a fit.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils.validation import check_is_fitted

from .analysis import pareto_front
from .gp import GPSurrogate
from .space import Categorical, SearchSpace

__all__ = ["plot_convergence", "plot_fractions", "plot_objective", "plot_tradeoff"]


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "skbayes_search.plotting needs matplotlib: "
            "pip install 'skbayes-search[plot]'"
        ) from exc
    return plt


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    return _pyplot().gca()


def _score_key(search: Any, results: dict, metric: str) -> str:
    key = f"mean_test_{metric}"
    if key in results:
        return key
    refit = getattr(search, "refit", None)
    if metric == "score" and isinstance(refit, str) and f"mean_test_{refit}" in results:
        return f"mean_test_{refit}"
    raise KeyError(
        f"{type(search).__name__}.cv_results_ has no {key!r}; pass metric= one "
        "of " + ", ".join(k[10:] for k in results if k.startswith("mean_test_"))
    )


def _full_data_mask(search: Any, results: dict) -> np.ndarray | None:
    """Rows fitted on all training rows, or None when every row was."""
    if "resource_fraction" in results:
        return np.asarray(results["resource_fraction"], dtype=float) >= 1.0
    max_resources = getattr(search, "max_resources_", None)
    if "n_resources" in results and max_resources is not None:
        # scikit-learn's successive halving: the last rung may stop short of
        # max_resources_, and then no row saw all the data.
        return np.asarray(results["n_resources"]) >= max_resources
    return None


def _approximate_times(search: Any, results: dict) -> np.ndarray:
    """Seconds at which each row would have finished, from its fit times.

    scikit-learn's searches record how long each fit and scoring took but not
    when it ended. Their rows are in dispatch order, so the cumulated fit and
    score seconds of all splits, divided by the number of workers, approximate
    the time at which each candidate finished. The approximation ignores
    dispatch overhead and idle workers, so it runs early.
    """
    per_row = np.nan_to_num(
        np.asarray(results["mean_fit_time"], dtype=float)
        + np.asarray(results["mean_score_time"], dtype=float)
    )
    n_splits = getattr(search, "n_splits_", 1)
    workers = max(1, effective_n_jobs(getattr(search, "n_jobs", None)))
    return np.cumsum(per_row * n_splits) / workers


def plot_convergence(
    searches: Any | Sequence[Any],
    *,
    x: str = "time",
    labels: Sequence[str] | None = None,
    metric: str = "score",
    full_data_only: bool = False,
    ax: Any = None,
) -> Any:
    """Best validation score so far, one line per search.

    Parameters
    ----------
    searches : fitted search or list of fitted searches
        Any scikit-learn search: ours, ``GridSearchCV``,
        ``RandomizedSearchCV``, the halving searches, or another
        ``BaseSearchCV``.
    x : {"time", "trial"}, default="time"
        What the horizontal axis counts; one axis never mixes the two.

        - ``"time"``: seconds since ``fit`` started. Our searches record
          when each trial finished (``elapsed_time``). scikit-learn's
          searches do not: for them the time is **approximated** by
          cumulating ``(mean_fit_time + mean_score_time) * n_splits_`` over
          the rows in dispatch order, divided by the search's ``n_jobs``
          (as if every worker was always busy and nothing else took time,
          so it runs early). Their legend entries say "time approximated".
        - ``"trial"``: the row number of ``cv_results_`` (1, 2, ...), for
          every search. A trial of a subset strategy counts as one trial,
          whatever its training fraction.
    labels : list of str, default=None
        Legend entries; the class names by default.
    metric : str, default="score"
        Which ``mean_test_<metric>`` column to follow (with several metrics,
        ``"score"`` falls back to the ``refit`` metric).
    full_data_only : bool, default=False
        Count only trials fitted on all training rows (``resource_fraction
        == 1``; for the halving searches ``n_resources == max_resources_``),
        so subset strategies are not credited with scores measured on small
        subsets. A search without any such trial is drawn on all its trials
        instead, dashed, with "(no full-data trial)" in its legend entry, and
        a warning says so. A search without any finite score is left out
        with a warning.
    ax : matplotlib Axes, default=None
        Where to draw; the current axes by default.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC
    >>> from skbayes_search import BayesSearchCV, Real
    >>> from skbayes_search.plotting import plot_convergence
    >>> X, y = load_iris(return_X_y=True)
    >>> search = BayesSearchCV(SVC(), {"C": Real(0.01, 100, prior="log-uniform")},
    ...                        n_iter=6, cv=3, random_state=0).fit(X, y)
    >>> ax = plot_convergence(search, x="trial")
    >>> ax.get_xlabel()
    'trial'
    """
    if x not in ("time", "trial"):
        raise ValueError(f"x must be 'time' or 'trial', got {x!r}")
    if not isinstance(searches, (list, tuple)):
        searches = [searches]
    if labels is not None and len(labels) != len(searches):
        raise ValueError(
            f"labels has {len(labels)} entries for {len(searches)} searches"
        )
    ax = _axes(ax)
    approximated = False
    for i, search in enumerate(searches):
        check_is_fitted(search, "cv_results_")
        results = search.cv_results_
        label = labels[i] if labels is not None else type(search).__name__
        scores = np.asarray(results[_score_key(search, results, metric)], dtype=float)
        if x == "trial":
            xs = np.arange(1, len(scores) + 1, dtype=float)
        elif "elapsed_time" in results:
            xs = np.asarray(results["elapsed_time"], dtype=float)
        else:
            xs = _approximate_times(search, results)
            label += " (time approximated)"
            approximated = True
        keep = np.isfinite(scores)
        if not keep.any():
            warnings.warn(
                f"{label}: no trial has a finite {metric}; left out of the plot",
                UserWarning,
                stacklevel=2,
            )
            continue
        style = "-"
        full = _full_data_mask(search, results) if full_data_only else None
        if full is not None:
            if (keep & full).any():
                keep &= full
            else:
                warnings.warn(
                    f"{label}: no trial on all training rows; drawn over all its "
                    "trials, dashed",
                    UserWarning,
                    stacklevel=2,
                )
                label += " (no full-data trial)"
                style = "--"
        order = np.argsort(xs[keep], kind="stable")
        t, s = xs[keep][order], np.maximum.accumulate(scores[keep][order])
        ax.step(t, s, style, where="post", marker="o", markersize=3, label=label)
    if x == "trial":
        ax.set_xlabel("trial")
    elif approximated:
        ax.set_xlabel("seconds since fit started (approximated where marked)")
    else:
        ax.set_xlabel("seconds since fit started (wall clock)")
    scope = " (full-data trials)" if full_data_only else ""
    ax.set_ylabel(f"best mean validation {metric} so far{scope}")
    ax.legend(loc="lower right", fontsize="small")
    return ax


def _search_space(search: Any) -> SearchSpace:
    for attr in ("search_spaces", "param_distributions", "param_grid"):
        space = getattr(search, attr, None)
        if space is not None:
            return SearchSpace(space)
    raise TypeError(
        f"{type(search).__name__} has no search_spaces, param_distributions or "
        "param_grid"
    )


def plot_objective(
    search: Any,
    *,
    metric: str = "score",
    fractions: str = "full",
    n_samples: int = 100,
    n_points: int = 30,
    dimensions: Sequence[str] | None = None,
    random_state: Any = 0,
    fig: Any = None,
) -> np.ndarray:
    """Partial dependence of the modelled score on each parameter and pair.

    A Gaussian process (:class:`skbayes_search.gp.GPSurrogate`, MAP
    hyperparameters, Matérn 5/2 over the unit-cube encoding the searches use)
    is fitted afresh on the search's trials: their ``params`` encoded with
    :meth:`SearchSpace.to_unit <skbayes_search.space.SearchSpace.to_unit>`
    against their mean validation scores. The diagonal shows, for each
    parameter, the posterior mean averaged over ``n_samples`` random settings
    of the other parameters (its partial dependence); below the diagonal,
    filled contours show the same for every pair of numeric parameters, with
    the evaluated trials as dots and the best one as a red star (all contours
    share one colour scale and one colour bar). A
    categorical parameter gets one point per category on the diagonal and no
    contour plots.

    The model is the plot's own, refitted from ``cv_results_``: for
    :class:`~skbayes_search.BayesSearchCV` it is close to the search's last
    surrogate (which integrates its hyperparameters out instead), for other
    strategies it shows the score alone, without their cost or trade-off
    models. It is only as good as the trials: far from them, the curves
    return to the mean score.

    Parameters
    ----------
    search : fitted search
        Ours, or a scikit-learn search whose ``param_distributions`` /
        ``param_grid`` our :class:`~skbayes_search.space.SearchSpace` parses.
        Conditional spaces (a list of several dicts) are not supported.
    metric : str, default="score"
        Which ``mean_test_<metric>`` column to model.
    fractions : {"full", "all"}, default="full"
        ``"full"`` models only the trials fitted on all training rows (every
        trial of a search without ``resource_fraction``); ``"all"`` models
        every trial, mixing scores measured on subsets of different sizes.
    n_samples : int, default=100
        Random settings of the other parameters averaged over at each point.
    n_points : int, default=30
        Grid points per numeric parameter (the contours use ``n_points`` by
        ``n_points``).
    dimensions : list of str, default=None
        The parameters to draw, in this order; all by default. The others
        are still averaged over.
    random_state : int, Generator or None, default=0
        Seeds the GP fit and the random settings.
    fig : matplotlib Figure, default=None
        Where to draw; a new figure by default.

    Returns
    -------
    axes : ndarray of matplotlib Axes, shape (n_params, n_params)
        ``axes[i, i]`` holds parameter ``i``'s partial dependence and
        ``axes[i, j]`` (``i > j``) the contour of the pair; the axes above the
        diagonal, and the contours of pairs with a categorical, are hidden.

    Raises
    ------
    ValueError
        If fewer than three trials qualify (see ``fractions``), or the space
        is conditional.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC
    >>> from skbayes_search import BayesSearchCV, Real
    >>> from skbayes_search.plotting import plot_objective
    >>> X, y = load_iris(return_X_y=True)
    >>> search = BayesSearchCV(
    ...     SVC(),
    ...     {"C": Real(1e-2, 1e2, prior="log-uniform"),
    ...      "gamma": Real(1e-3, 1e1, prior="log-uniform")},
    ...     n_iter=8, cv=3, random_state=0,
    ... ).fit(X, y)
    >>> axes = plot_objective(search, n_samples=20, n_points=10)
    >>> axes.shape
    (2, 2)
    """
    if fractions not in ("full", "all"):
        raise ValueError(f"fractions must be 'full' or 'all', got {fractions!r}")
    check_is_fitted(search, "cv_results_")
    results = search.cv_results_
    space = _search_space(search)
    if len(space.subspaces) > 1:
        raise ValueError(
            "plot_objective does not support conditional search spaces (a list "
            "of several dicts)"
        )
    scores = np.asarray(results[_score_key(search, results, metric)], dtype=float)
    keep = np.isfinite(scores)
    if fractions == "full":
        full = _full_data_mask(search, results)
        if full is not None:
            keep &= full
    rows = np.flatnonzero(keep)
    if len(rows) < 3:
        hint = " (fractions='all' models the subset trials too)" * (fractions == "full")
        raise ValueError(
            f"plot_objective needs at least 3 trials with a finite {metric}, "
            f"got {len(rows)}{hint}"
        )
    params = [results["params"][i] for i in rows]
    U = space.to_unit(params)
    y = scores[rows]
    gp = GPSurrogate(hyperparameter_sampling="map", random_state=random_state)
    gp.fit(U, y)
    rng = np.random.default_rng(random_state)
    background = space.sample(n_samples, rng)

    names = [n for n in space.names if _columns_of(space, n).any()]
    if dimensions is not None:
        unknown = [n for n in dimensions if n not in space.names]
        if unknown:
            raise ValueError(
                f"dimensions {unknown!r} are not in the search space {space.names!r}"
            )
        names = [n for n in dimensions if n in names]
    dims = space.subspaces[0]
    default = space.from_unit(space.default_point()[None, :])[0]
    columns = {}  # name -> (column mask, unit codes, values on the axis)
    for name in names:
        dim = dims[name]
        span = _columns_of(space, name)
        if isinstance(dim, Categorical):
            values = list(dim.categories)
            codes = space.to_unit([{**default, name: v} for v in values])
        else:
            U_grid = np.tile(space.default_point(), (n_points, 1))
            U_grid[:, span] = np.linspace(0.0, 1.0, n_points)[:, None]
            decoded = space.from_unit(U_grid)
            values, seen = [], set()
            for p in decoded:  # integers repeat on a fine grid
                if p[name] not in seen:
                    seen.add(p[name])
                    values.append(p[name])
            codes = space.to_unit([{**default, name: v} for v in values])
        columns[name] = (span, list(codes[:, span]), values)

    def partial(assign: list[tuple[slice, np.ndarray]]) -> float:
        Uq = background.copy()
        for span, code in assign:
            Uq[:, span] = code
        return float(gp.predict_mean(Uq).mean())

    plt = _pyplot()
    d = len(names)
    if fig is None:
        fig = plt.figure(figsize=(3.2 * d + 1.0, 2.8 * d + 0.8), layout="constrained")
    axes = np.array(fig.subplots(d, d, squeeze=False))
    best = int(np.argmax(y))
    numeric = [not isinstance(dims[n], Categorical) for n in names]
    log = [getattr(dims[n], "prior", None) == "log-uniform" for n in names]
    for i, name in enumerate(names):
        span, codes, values = columns[name]
        ax = axes[i, i]
        pd = [partial([(span, c)]) for c in codes]
        if numeric[i]:
            ax.plot(values, pd, "-", color="C0")
            ax.axvline(params[best][name], color="r", linestyle="--", linewidth=1)
            if log[i]:
                ax.set_xscale("log")
        else:
            pos = np.arange(len(values))
            ax.plot(pos, pd, "o", color="C0")
            ax.set_xticks(pos, [str(v) for v in values], rotation=30)
            ax.set_xlim(-0.5, len(values) - 0.5)
            ax.axvline(
                values.index(params[best][name]), color="r", linestyle="--", lw=1
            )
        ax.set_xlabel(name)
        ax.set_ylabel(f"partial dependence\n(mean {metric})")
        ax.ticklabel_format(axis="y", useOffset=False)
        for j in range(i + 1, d):
            axes[i, j].set_visible(False)
    surfaces = {}
    for i, name in enumerate(names):
        for j in range(i):
            if not (numeric[i] and numeric[j]):
                axes[i, j].set_visible(False)
                continue
            span_x, codes_x, _ = columns[names[j]]
            span_y, codes_y, _ = columns[name]
            surfaces[i, j] = np.array(
                [
                    [partial([(span_x, cx), (span_y, cy)]) for cx in codes_x]
                    for cy in codes_y
                ]
            )
    if surfaces:
        low = min(Z.min() for Z in surfaces.values())
        high = max(Z.max() for Z in surfaces.values())
        levels = np.linspace(low, high + 1e-12 * max(1.0, abs(high)), 13)
    cs = None
    for (i, j), Z in surfaces.items():
        ax2 = axes[i, j]
        x_name, y_name = names[j], names[i]
        cs = ax2.contourf(
            columns[x_name][2], columns[y_name][2], Z, levels=levels, cmap="viridis"
        )
        ax2.scatter(
            [p[x_name] for p in params],
            [p[y_name] for p in params],
            s=8,
            c="k",
            alpha=0.6,
        )
        ax2.scatter(
            [params[best][x_name]], [params[best][y_name]], s=80, c="r", marker="*"
        )
        if log[j]:
            ax2.set_xscale("log")
        if log[i]:
            ax2.set_yscale("log")
        ax2.set_xlabel(x_name)
        ax2.set_ylabel(y_name)
    if cs is not None:
        fig.colorbar(
            cs,
            ax=[axes[i, j] for i, j in surfaces],
            label=f"modelled mean {metric}",
            shrink=0.8,
        )
    fig.suptitle(
        f"{type(search).__name__}: modelled mean validation {metric}, "
        f"{len(rows)} trials"
    )
    return axes


def _columns_of(space: SearchSpace, name: str) -> np.ndarray:
    """Unit-cube columns that encode parameter ``name`` (a boolean mask).

    A column belongs to ``name`` when moving it from 0 to 1 at the centre of
    the space changes the decoded value of ``name``; a categorical with a
    single category has none.
    """
    dim = space.subspaces[0][name]
    if isinstance(dim, Categorical):
        default = space.from_unit(space.default_point()[None, :])[0]
        codes = space.to_unit([{**default, name: v} for v in dim.categories])
        return codes.std(axis=0) > 0
    centre = space.default_point()
    mask = np.zeros(space.n_dims, dtype=bool)
    for k in range(space.n_dims):
        U = np.tile(centre, (2, 1))
        U[0, k], U[1, k] = 0.0, 1.0
        low, high = space.from_unit(U)
        mask[k] = low[name] != high[name]
    return mask


def plot_fractions(search: Any, *, ax: Any = None) -> Any:
    """Training fraction of each trial against the time it finished.

    Shows how a subset strategy (FABOLAS, multi-stage) spends its budget:
    many cheap small-fraction trials early, few full-data trials late.

    Parameters
    ----------
    search : fitted skbayes_search search
        Must have ``resource_fraction`` and ``elapsed_time`` in ``cv_results_``.
    ax : matplotlib Axes, default=None
        Where to draw.

    Returns
    -------
    ax : matplotlib Axes
    """
    check_is_fitted(search, "cv_results_")
    results = search.cv_results_
    ax = _axes(ax)
    scores = np.asarray(results["mean_test_score"], dtype=float)
    points = ax.scatter(
        results["elapsed_time"],
        results["resource_fraction"],
        c=np.where(np.isfinite(scores), scores, np.nan),
        cmap="viridis",
    )
    ax.set_yscale("log")
    ax.set_xlabel("wall-clock seconds")
    ax.set_ylabel("training fraction")
    ax.figure.colorbar(points, ax=ax, label="mean validation score")
    return ax


def plot_tradeoff(search: Any, *, metric: str = "score", ax: Any = None) -> Any:
    """Validation score against training time of every trial, front highlighted.

    Parameters
    ----------
    search : fitted search
        Any scikit-learn search; the Pareto front (score up, time down) is
        computed from ``cv_results_``.
    metric : str, default="score"
        Which ``mean_test_<metric>`` column to draw.
    ax : matplotlib Axes, default=None
        Where to draw.

    Returns
    -------
    ax : matplotlib Axes
    """
    check_is_fitted(search, "cv_results_")
    results = search.cv_results_
    ax = _axes(ax)
    scores = np.asarray(results[f"mean_test_{metric}"], dtype=float)
    times = np.asarray(results["mean_fit_time"], dtype=float)
    ok = np.isfinite(scores)
    ax.scatter(times[ok], scores[ok], alpha=0.5, label="trials")
    front = pareto_front(scores, times)
    order = front[np.argsort(times[front])]
    ax.plot(times[order], scores[order], "r-o", label="Pareto front")
    ax.set_xscale("log")
    ax.set_xlabel("mean training time per fit (s)")
    ax.set_ylabel(f"mean validation {metric}")
    ax.legend()
    return ax
