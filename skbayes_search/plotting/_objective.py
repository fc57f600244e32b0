"""The partial dependence of a GP refitted on a search's trials."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..analysis import _trial_scores
from ..gp import GPSurrogate
from ..space import Categorical, SearchSpace
from ._common import _full_data_mask, _pyplot, _score_key


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
    scores = _trial_scores(results, _score_key(search, results, metric))
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
