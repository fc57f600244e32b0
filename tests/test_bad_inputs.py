"""Bad inputs end with a clear error naming the parameter, before any fit.

A matrix over the six searches (and ``TrialStore``): each case asserts the
exception type, that the message names the parameter at fault, and that the
estimator was never fitted (its ``fit`` counts calls in a module-level
counter).
"""

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import KFold

from skbayes_search import (
    BayesSearchCV,
    FabolasSearchCV,
    HalvingBayesSearchCV,
    MultiStageBayesSearchCV,
    TradeoffBayesSearchCV,
    TransferBayesSearchCV,
    TrialStore,
)

FITS = {"n": 0}


class Counting(ClassifierMixin, BaseEstimator):
    """A classifier whose every fit is counted in ``FITS``."""

    def __init__(self, C=1.0, penalty="l2"):
        self.C = C
        self.penalty = penalty

    def fit(self, X, y):
        FITS["n"] += 1
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


rng = np.random.default_rng(0)
X = rng.normal(size=(40, 3))
y = np.arange(40) % 2

CLASSES = {
    "bayes": BayesSearchCV,
    "multistage": MultiStageBayesSearchCV,
    "fabolas": FabolasSearchCV,
    "halving": HalvingBayesSearchCV,
    "tradeoff": TradeoffBayesSearchCV,
    "transfer": TransferBayesSearchCV,
}
SPACE = {"C": stats.loguniform(0.1, 10.0)}

# (case id, constructor overrides, fit arguments or None, exception, fragments
# the message must hold)
COMMON = [
    ("n_iter=0", {"n_iter": 0}, None, ValueError, ["n_iter"]),
    ("n_iter=-3", {"n_iter": -3}, None, ValueError, ["n_iter"]),
    ("n_iter=True", {"n_iter": True}, None, ValueError, ["n_iter", "bool"]),
    ("n_iter=2.5", {"n_iter": 2.5}, None, ValueError, ["n_iter"]),
    ("max_time=0", {"max_time": 0}, None, ValueError, ["max_time"]),
    ("max_time<0", {"max_time": -1.0}, None, ValueError, ["max_time"]),
    ("run_name=''", {"run_name": ""}, None, ValueError, ["run_name"]),
    ("run_name=3", {"run_name": 3}, None, ValueError, ["run_name"]),
    ("scoring", {"scoring": "no_such_metric"}, None, ValueError, ["scoring"]),
    ("error_score", {"error_score": "ignore"}, None, ValueError, ["error_score"]),
    ("cv=[]", {"cv": []}, None, ValueError, ["cv"]),
    ("cv empty split", {"cv": [([], np.arange(5))]}, None, ValueError, ["cv"]),
    ("cv=1", {"cv": 1}, None, ValueError, ["n_splits"]),
    ("store", {"store": 12}, None, ValueError, ["store"]),
    ("store a directory", {"store": "<tmp>"}, None, ValueError, ["directory"]),
    (
        "store in no directory",
        {"store": "<tmp>/no/such/dir/runs.db"},
        None,
        ValueError,
        ["does not exist"],
    ),
    ("unknown name", {"search_spaces": {"gamma": [1]}}, None, ValueError, ["gamma"]),
    (
        "unfrozen distribution",
        {"search_spaces": {"C": stats.uniform}},
        None,
        ValueError,
        ["search_spaces['C']", "loc and scale"],
    ),
    (
        "space not a dict",
        {"search_spaces": "C"},
        None,
        ValueError,
        ["search_spaces"],
    ),
    (
        "empty list of spaces",
        {"search_spaces": []},
        None,
        ValueError,
        ["search_spaces"],
    ),
    (
        "bad bounds",
        {"search_spaces": {"C": (1.0, 0.1)}},
        None,
        ValueError,
        ["search_spaces['C']", "low must be < high"],
    ),
    (
        "X/y length mismatch",
        {},
        (X, y[:-1]),
        ValueError,
        ["inconsistent numbers of samples"],
    ),
]

SPECIFIC = {
    "bayes": [
        ("acquisition", {"acquisition": "ucb"}, None, ValueError, ["acquisition"]),
        ("n_initial_points", {"n_initial_points": 0}, None, ValueError, ["n_ini"]),
        ("kappa<0", {"acquisition": "lcb", "kappa": -1.0}, None, ValueError, ["kappa"]),
        ("kappa str", {"kappa": "2"}, None, ValueError, ["kappa"]),
    ],
    "multistage": [
        ("acquisition", {"acquisition": "ucb"}, None, ValueError, ["acquisition"]),
        ("kappa<0", {"acquisition": "lcb", "kappa": -1.0}, None, ValueError, ["kappa"]),
        ("stages=0", {"stages": (0.0, 1.0)}, None, ValueError, ["stages"]),
        ("stages>1", {"stages": (0.5, 1.5)}, None, ValueError, ["stages"]),
        ("stages unsorted", {"stages": (0.6, 0.3, 1.0)}, None, ValueError, ["stages"]),
        ("stages last", {"stages": (0.3, 0.6)}, None, ValueError, ["stages"]),
        ("n_iter per stage", {"n_iter": (3, 0)}, None, ValueError, ["n_iter"]),
        ("n_iter bools", {"n_iter": (True, 3)}, None, ValueError, ["n_iter"]),
        ("top_k", {"top_k": 9, "n_iter": (3, 3)}, None, ValueError, ["top_k"]),
    ],
    "fabolas": [
        (
            "initial_fractions=0",
            {"initial_fractions": (0.0, 0.5)},
            None,
            ValueError,
            ["initial_fractions"],
        ),
        (
            "initial_fractions>1",
            {"initial_fractions": (1.5,)},
            None,
            ValueError,
            ["initial_fractions"],
        ),
        ("min_resources", {"min_resources": 10_000}, None, ValueError, ["min_res"]),
        ("overhead", {"overhead": -1.0}, None, ValueError, ["overhead"]),
        ("n_representers", {"n_representers": 1}, None, ValueError, ["n_repr"]),
    ],
    "halving": [
        ("min_resources", {"min_resources": 10_000}, None, ValueError, ["min_res"]),
        ("factor=1", {"factor": 1}, None, ValueError, ["factor"]),
        ("n_initial_points", {"n_initial_points": 0}, None, ValueError, ["n_ini"]),
        ("random_fraction", {"random_fraction": 2.0}, None, ValueError, ["random_f"]),
        ("hedge_fraction", {"hedge_fraction": -0.5}, None, ValueError, ["hedge_f"]),
        (
            "start_rungs",
            {"start_rungs": "top"},
            None,
            ValueError,
            ["start_rungs", "base", "hyperband"],
        ),
    ],
    "tradeoff": [
        ("fractions=0", {"fractions": (0.0, 1.0)}, None, ValueError, ["fractions"]),
        ("fractions>1", {"fractions": (0.5, 2.0)}, None, ValueError, ["fractions"]),
        ("alpha<0", {"alpha": -1.0}, None, ValueError, ["alpha"]),
        ("time_normalization", {"time_normalization": 0}, None, ValueError, ["time"]),
    ],
    "transfer": [
        ("store=None", {"store": None}, None, ValueError, ["store"]),
        (
            "kernel_weights",
            {"kernel_weights": (0.5, 0.7)},
            None,
            ValueError,
            ["kernel_weights"],
        ),
        ("kernel", {"kernel": "rbf"}, None, ValueError, ["kernel"]),
        ("meta_features", {"meta_features": [1.0]}, None, ValueError, ["meta_feat"]),
    ],
}

CASES = [
    pytest.param(name, case, id=f"{name}-{case[0]}")
    for name in CLASSES
    for case in COMMON + SPECIFIC[name]
]


def _search(name, overrides, tmp_path):
    kwargs = dict(n_iter=3, cv=2, random_state=0)
    if name == "transfer":
        kwargs["store"] = str(tmp_path / "runs.db")
    if name == "multistage":
        kwargs.update(n_iter=(3, 3), top_k=1)
    kwargs.update(overrides)
    if isinstance(kwargs.get("store"), str):
        kwargs["store"] = kwargs["store"].replace("<tmp>", str(tmp_path))
    space = kwargs.pop("search_spaces", SPACE)
    return CLASSES[name](Counting(), space, **kwargs)


@pytest.mark.parametrize("name, case", CASES)
def test_bad_input_fails_before_any_fit(name, case, tmp_path):
    _, overrides, fit_args, error, fragments = case
    search = _search(name, overrides, tmp_path)
    FITS["n"] = 0
    with pytest.raises(error) as info:
        search.fit(*(fit_args or (X, y)))
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    assert FITS["n"] == 0


@pytest.mark.parametrize("name", CLASSES)
def test_generator_cv_is_accepted(name, tmp_path):
    # scikit-learn's searches take a one-time iterable of splits
    search = _search(name, {"cv": KFold(2).split(X), "n_iter": 2}, tmp_path)
    if name == "multistage":
        search.set_params(n_iter=(2, 2))
    search.fit(X, y)
    assert search.n_splits_ == 2


@pytest.mark.parametrize(
    "path, error, fragment",
    [
        (12, TypeError, "path must be a str"),
        ("", ValueError, "path"),
        (".", ValueError, "is a directory"),
        ("no/such/dir/runs.db", ValueError, "does not exist"),
    ],
)
def test_trial_store_bad_paths(path, error, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error) as info:
        TrialStore(path).runs()
    assert fragment in str(info.value)
