"""Benchmark tasks: dataset, estimator, search space and the train/test split.

A task is named ``<estimator>-<dataset>``, e.g. ``svc-covertype_75k`` or
``hgb-adult``. The dataset part is the stem of a gzipped TSV in the data
directory (label column ``target``); a unique prefix is accepted
(``covertype`` -> ``covertype_75k``). Estimators and spaces follow the table
of ``shared/docs/benchmark.md``.

The search space is written once, library-neutrally (:class:`Param`), and
converted for each library so that every method searches the same box.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.ensemble import (
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

#: Default split seed: the split is the same for every method and seed.
SPLIT_SEED = 0
TEST_SIZE = 0.25

# Where the library ships one small dataset (used when the shared folder is
# missing, e.g. for the quick smoke run on a bare checkout).
_PACKAGED_DATA = Path(__file__).resolve().parents[1] / "skbayes_search" / "datasets"
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@dataclass(frozen=True)
class Param:
    """One searched hyperparameter, written once for every library.

    Parameters
    ----------
    name : str
        Estimator parameter name (``step__param`` inside pipelines).
    low, high : float
        Inclusive bounds.
    log : bool
        Log-uniform instead of uniform.
    integer : bool
        Integer-valued (uniform only: scipy.stats has no log-uniform integer,
        and the random-search peers need one).
    """

    name: str
    low: float
    high: float
    log: bool = False
    integer: bool = False

    def __post_init__(self) -> None:
        if not self.low < self.high:
            raise ValueError(f"Param {self.name!r}: low must be < high.")
        if self.log and self.low <= 0:
            raise ValueError(f"Param {self.name!r}: log bounds must be positive.")
        if self.log and self.integer:
            raise ValueError(
                f"Param {self.name!r}: log-uniform integers are not supported."
            )


@dataclass(frozen=True)
class EstimatorSpec:
    """An estimator family of the protocol and its search space."""

    name: str
    classifier: Any
    regressor: Any
    params: tuple[Param, ...]
    #: A grid search is natural only in few dimensions.
    grid_natural: bool = False


def _svc() -> BaseEstimator:
    return make_pipeline(StandardScaler(), SVC())


def _hgb_classifier() -> BaseEstimator:
    return HistGradientBoostingClassifier(early_stopping=False, random_state=0)


def _hgb_regressor() -> BaseEstimator:
    return HistGradientBoostingRegressor(early_stopping=False, random_state=0)


def _logreg() -> BaseEstimator:
    # l1_ratio is searched, which makes the penalty elastic-net (scikit-learn
    # 1.8 deprecated penalty="elasticnet" in favour of l1_ratio alone). saga
    # needs standardised features to converge in a sane number of epochs.
    return make_pipeline(
        StandardScaler(), LogisticRegression(solver="saga", random_state=0)
    )


_HGB_PARAMS = (
    Param("learning_rate", 1e-3, 1.0, log=True),
    Param("max_leaf_nodes", 4, 128, integer=True),
    Param("min_samples_leaf", 2, 200, integer=True),
    Param("l2_regularization", 1e-6, 10.0, log=True),
    Param("max_iter", 20, 300, integer=True),
)

ESTIMATORS: dict[str, EstimatorSpec] = {
    "svc": EstimatorSpec(
        "svc",
        _svc,
        None,
        (
            Param("svc__C", 1e-3, 1e3, log=True),
            Param("svc__gamma", 1e-4, 1e1, log=True),
        ),
        grid_natural=True,
    ),
    "hgb": EstimatorSpec("hgb", _hgb_classifier, _hgb_regressor, _HGB_PARAMS),
    "logreg": EstimatorSpec(
        "logreg",
        _logreg,
        None,
        (
            Param("logisticregression__C", 1e-4, 1e2, log=True),
            Param("logisticregression__l1_ratio", 0.0, 1.0),
            Param("logisticregression__tol", 1e-5, 1e-2, log=True),
            Param("logisticregression__max_iter", 50, 500, integer=True),
        ),
    ),
}


@dataclass
class Task:
    """A loaded task: search data, test data, estimator and space."""

    name: str
    dataset: str
    classification: bool
    spec: EstimatorSpec
    X_search: np.ndarray
    y_search: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    notes: list[str] = field(default_factory=list)

    @property
    def params(self) -> tuple[Param, ...]:
        return self.spec.params

    @property
    def n_classes(self) -> int | None:
        return int(np.unique(self.y_search).size) if self.classification else None

    def estimator(self) -> BaseEstimator:
        """A fresh unfitted estimator."""
        factory = self.spec.classifier if self.classification else self.spec.regressor
        return factory()


def resolve_dataset(name: str, data_dir: str | Path | None) -> Path:
    """Path of dataset ``name`` (exact stem or unique prefix).

    Looks in ``data_dir`` (default: ``shared/datasets`` beside the
    repository), then in the datasets the package ships.
    """
    dirs = [Path(data_dir) if data_dir is not None else DEFAULT_DATA_DIR]
    dirs.append(_PACKAGED_DATA)
    for d in dirs:
        exact = d / f"{name}.tsv.gz"
        if exact.is_file():
            return exact
        matches = sorted(d.glob(f"{name}*.tsv.gz"))
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            stems = [m.name.removesuffix(".tsv.gz") for m in matches]
            raise ValueError(f"Dataset {name!r} is ambiguous in {d}: {stems}.")
    raise FileNotFoundError(
        f"No dataset {name!r}.tsv.gz in {', '.join(str(d) for d in dirs)}."
    )


def _is_classification(path: Path, y: pd.Series) -> bool:
    manifest = path.parent / "MANIFEST.tsv"
    if manifest.is_file():
        table = pd.read_csv(manifest, sep="\t")
        row = table[table["file"] == path.name]
        if len(row) == 1:
            return str(row["task"].iloc[0]) == "classification"
    # Without a manifest: integer-valued labels with few values are classes.
    values = y.to_numpy()
    return bool(np.all(np.mod(values, 1) == 0) and np.unique(values).size <= 100)


def _stratify(y: np.ndarray, classification: bool) -> np.ndarray | None:
    if not classification:
        return None
    _, counts = np.unique(y, return_counts=True)
    # train_test_split cannot stratify a class with a single member.
    return y if counts.min() >= 2 else None


def _split_name(name: str) -> tuple[str, str]:
    est_name, sep, ds_name = name.partition("-")
    if not sep or est_name not in ESTIMATORS:
        raise ValueError(
            f"Task {name!r} must be '<estimator>-<dataset>' with estimator in "
            f"{sorted(ESTIMATORS)}."
        )
    return est_name, ds_name


def canonical_name(name: str, data_dir: str | Path | None = None) -> str:
    """Task name with the dataset's full stem (``svc-covertype`` ->
    ``svc-covertype_75k``), as :attr:`Task.name` has it, without loading."""
    est_name, ds_name = _split_name(name)
    stem = resolve_dataset(ds_name, data_dir).name.removesuffix(".tsv.gz")
    return f"{est_name}-{stem}"


def load_task(
    name: str,
    data_dir: str | Path | None = None,
    *,
    max_rows: int | None = None,
    split_seed: int = SPLIT_SEED,
) -> Task:
    """Load task ``name`` (``<estimator>-<dataset>``) and split it 75/25.

    Parameters
    ----------
    name : str
        Task name, e.g. ``"svc-adult"``.
    data_dir : str or Path, optional
        Folder of ``<dataset>.tsv.gz`` files.
    max_rows : int, optional
        Subsample the dataset to this many rows (stratified, seeded) before
        splitting.
    split_seed : int
        Seed of the subsample and of the split.

    Returns
    -------
    task : Task
    """
    est_name, ds_name = _split_name(name)
    spec = ESTIMATORS[est_name]
    path = resolve_dataset(ds_name, data_dir)
    frame = pd.read_csv(path, sep="\t")
    if "target" not in frame.columns:
        raise ValueError(f"{path} has no 'target' column.")
    classification = _is_classification(path, frame["target"])
    if (spec.classifier if classification else spec.regressor) is None:
        kind = "classification" if classification else "regression"
        raise ValueError(f"Estimator {est_name!r} has no {kind} variant.")
    y = frame.pop("target").to_numpy()
    if classification:
        y = y.astype(np.int64)
    X = frame.to_numpy(dtype=np.float64)
    notes = []
    if max_rows is not None and max_rows < len(y):
        X, _, y, _ = train_test_split(
            X,
            y,
            train_size=max_rows,
            stratify=_stratify(y, classification),
            random_state=split_seed,
        )
        notes.append(f"subsampled to {max_rows} rows")
    strat = _stratify(y, classification)
    if classification and strat is None:
        notes.append("split not stratified (a class has a single member)")
    X_search, X_test, y_search, y_test = train_test_split(
        X, y, test_size=TEST_SIZE, stratify=strat, random_state=split_seed
    )
    dataset = path.name.removesuffix(".tsv.gz")
    return Task(
        name=f"{est_name}-{dataset}",
        dataset=dataset,
        classification=classification,
        spec=spec,
        X_search=X_search,
        y_search=y_search,
        X_test=X_test,
        y_test=y_test,
        notes=notes,
    )


# ----------------------------------------------------------------------
# The space in each library's vocabulary
# ----------------------------------------------------------------------
def space_ours(params: tuple[Param, ...]) -> dict:
    """Search space for skbayes_search."""
    from skbayes_search.space import Integer, Real

    return {
        p.name: (
            Integer(int(p.low), int(p.high))
            if p.integer
            else Real(p.low, p.high, prior="log-uniform" if p.log else "uniform")
        )
        for p in params
    }


def space_scipy(params: tuple[Param, ...]) -> dict:
    """``param_distributions`` for scikit-learn's random and halving searches."""
    from scipy.stats import loguniform, randint, uniform

    out = {}
    for p in params:
        if p.integer:
            out[p.name] = randint(int(p.low), int(p.high) + 1)
        elif p.log:
            out[p.name] = loguniform(p.low, p.high)
        else:
            out[p.name] = uniform(p.low, p.high - p.low)
    return out


def space_skopt(params: tuple[Param, ...]) -> dict:
    """Search space for scikit-optimize."""
    from skopt.space import Integer, Real

    return {
        p.name: (
            Integer(int(p.low), int(p.high))
            if p.integer
            else Real(p.low, p.high, prior="log-uniform" if p.log else "uniform")
        )
        for p in params
    }


def space_optuna(params: tuple[Param, ...]) -> dict:
    """``param_distributions`` for Optuna's OptunaSearchCV."""
    from optuna.distributions import FloatDistribution, IntDistribution

    return {
        p.name: (
            IntDistribution(int(p.low), int(p.high))
            if p.integer
            else FloatDistribution(p.low, p.high, log=p.log)
        )
        for p in params
    }


def space_grid(params: tuple[Param, ...], points_per_dim: int) -> dict:
    """A ``param_grid`` with ``points_per_dim`` values per parameter
    (geometric for log parameters)."""
    out = {}
    for p in params:
        spacing = np.geomspace if p.log else np.linspace
        values = spacing(p.low, p.high, points_per_dim)
        if p.integer:
            out[p.name] = sorted({round(v) for v in values})
        else:
            out[p.name] = [float(v) for v in values]
    return out
