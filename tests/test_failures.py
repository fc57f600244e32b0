"""Failed fits reach the user as scikit-learn's searches report them."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.utils import estimator_checks

from skbayes_search import (
    BayesSearchCV,
    FabolasSearchCV,
    MultiStageBayesSearchCV,
    TradeoffBayesSearchCV,
    TransferBayesSearchCV,
)

# With the default error_score (nan) every fit of these checks fails; the
# search's error must carry the estimator's own message, as GridSearchCV's
# does, so scikit-learn's checks recognise it.
FIT_ERROR_CHECKS = [
    "check_classifiers_one_label",
    "check_estimators_nan_inf",
    "check_dtype_object",
    "check_estimators_empty_data_messages",
    "check_classifiers_regression_target",
]

SPACE = {"C": [0.1, 1.0]}
MAP = dict(hyperparameter_sampling="map")


def default_error_score_search(name, tmp_path):
    """A small search of each strategy with the default error_score."""
    est, common = LogisticRegression(), dict(cv=2, random_state=0)
    if name == "bayes":
        return BayesSearchCV(est, SPACE, n_iter=3, n_initial_points=2, **MAP, **common)
    if name == "multistage":
        return MultiStageBayesSearchCV(
            est,
            SPACE,
            stages=(0.5, 1.0),
            n_iter=(2, 2),
            top_k=1,
            n_initial_points=2,
            **MAP,
            **common,
        )
    if name == "fabolas":
        return FabolasSearchCV(
            est,
            SPACE,
            n_iter=3,
            n_initial_points=2,
            n_representers=5,
            n_hyper_samples=2,
            **common,
        )
    if name == "tradeoff":
        return TradeoffBayesSearchCV(
            est, SPACE, n_iter=3, n_initial_points=2, **MAP, **common
        )
    return TransferBayesSearchCV(
        est, SPACE, store=str(tmp_path / "runs.db"), n_iter=3, **common
    )


@pytest.mark.parametrize("check_name", FIT_ERROR_CHECKS)
@pytest.mark.parametrize(
    "name", ["bayes", "multistage", "fabolas", "tradeoff", "transfer"]
)
def test_fit_errors_reach_the_user(name, check_name, tmp_path):
    if (name, check_name) == ("tradeoff", "check_dtype_object"):
        # GridSearchCV passes this check through its full-data refit, which
        # meets the corrupted row; the trade-off refits on its selected
        # fraction of the rows, which may leave it out
        pytest.xfail("the trade-off refits on a fraction of the rows")
    search = default_error_score_search(name, tmp_path)
    getattr(estimator_checks, check_name)(type(search).__name__, search)


def test_all_failed_error_names_the_cause(tmp_path):
    X = np.random.default_rng(0).normal(size=(30, 2))
    search = default_error_score_search("bayes", tmp_path)
    with pytest.raises(
        ValueError,
        match=r"(?s)All the \d+ trials failed.*fits failed"
        r" with the following error.*class",
    ):
        search.fit(X, np.zeros(30))
