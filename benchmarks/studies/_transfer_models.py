"""The models the transfer stream tunes: the paper's two experiments
(Yogatama & Mann 2014, §4), as scikit-learn estimators and search spaces.

``logreg``
    The elastic-net logistic regression of its Tables 2 and 3 (left): four
    hyperparameters.
``ensemble``
    Its "ensemble of classifiers" (Table 3, right): linear and kernel online
    learners and naive Bayes, combined by weighted majority vote, with every
    member's hyperparameters and the vote weights searched at once. The paper's
    seven members have 23 hyperparameters plus 7 weights. Winnow and IKPamir
    have no scikit-learn counterpart; k-nearest neighbours stands in for them,
    so the six members here have 14 hyperparameters plus 6 weights (20).

Every member is seeded, so a configuration's score is the same for every
method and every rerun.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import loguniform, randint, uniform
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import VotingClassifier
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted


@dataclass(frozen=True)
class StreamModel:
    """An estimator factory and its search space, the prefix the records strip
    from the parameter names, and a description for the report.

    The space is written as scikit-learn's ``param_distributions`` (frozen
    scipy distributions and lists), which ``RandomizedSearchCV`` samples and
    the library's searches read as the equivalent ``Real``, ``Integer`` and
    ``Categorical`` dimensions: one space for every method.
    """

    make: Callable[[], BaseEstimator]
    space: dict[str, Any]
    prefix: str
    description: str

    def short(self, name: str) -> str:
        """``name`` without the pipeline prefix, as records and tables show it."""
        return name[len(self.prefix) :]


def _elastic_net() -> LogisticRegression:
    # saga visits the rows in a random order: seeded
    return LogisticRegression(solver="saga", random_state=0)


# The elastic net's four hyperparameters, alone and as a member of the vote.
_ELASTIC_NET_SPACE = {
    "C": loguniform(1e-3, 1e2),
    "l1_ratio": uniform(0.0, 1.0),
    "tol": loguniform(1e-5, 1e-1),
    "max_iter": randint(2, 201),
}


def _logreg() -> BaseEstimator:
    return make_pipeline(StandardScaler(), _elastic_net())


_LR = "logisticregression__"
LOGREG = StreamModel(
    make=_logreg,
    space={_LR + k: v for k, v in _ELASTIC_NET_SPACE.items()},
    prefix=_LR,
    description="elastic-net logistic regression (C, l1_ratio, tol, max_iter)",
)

MEMBERS = ("perceptron", "logreg", "nb", "svm", "pa", "knn")


class WeightedVote(ClassifierMixin, BaseEstimator):
    """Weighted majority vote of six classifiers, each weight a parameter of
    its own (``VotingClassifier`` takes the weights as one list, which a search
    space cannot address one by one).

    Parameters
    ----------
    perceptron, logreg, nb, svm, pa, knn : estimator
        The members, fitted on clones.
    w_perceptron, w_logreg, w_nb, w_svm, w_pa, w_knn : float
        Their vote weights; only their ratios matter.
    """

    def __init__(
        self,
        perceptron=None,
        logreg=None,
        nb=None,
        svm=None,
        pa=None,
        knn=None,
        w_perceptron=1.0,
        w_logreg=1.0,
        w_nb=1.0,
        w_svm=1.0,
        w_pa=1.0,
        w_knn=1.0,
    ):
        self.perceptron = perceptron
        self.logreg = logreg
        self.nb = nb
        self.svm = svm
        self.pa = pa
        self.knn = knn
        self.w_perceptron = w_perceptron
        self.w_logreg = w_logreg
        self.w_nb = w_nb
        self.w_svm = w_svm
        self.w_pa = w_pa
        self.w_knn = w_knn

    def fit(self, X, y):
        members = [(m, getattr(self, m)) for m in MEMBERS]
        missing = [m for m, est in members if est is None]
        if missing:
            raise ValueError(f"WeightedVote needs every member; {missing} are None")
        weights = np.array([getattr(self, "w_" + m) for m in MEMBERS], float)
        if not (np.all(weights >= 0) and weights.sum() > 0):
            raise ValueError(
                f"the vote weights must be >= 0 and not all 0; got {weights}"
            )
        self.vote_ = VotingClassifier(
            [(m, clone(est)) for m, est in members], voting="hard", weights=weights
        ).fit(X, y)
        self.classes_ = self.vote_.classes_
        return self

    def predict(self, X):
        check_is_fitted(self)
        return self.vote_.predict(X)


def _ensemble() -> BaseEstimator:
    return make_pipeline(
        StandardScaler(),
        WeightedVote(
            # the paper's perceptron with averaging and a number of epochs
            perceptron=SGDClassifier(
                loss="perceptron",
                penalty=None,
                learning_rate="constant",
                eta0=1.0,
                tol=None,
                random_state=0,
            ),
            logreg=_elastic_net(),
            # the paper's "minimum probability" smooths naive Bayes' estimates
            nb=GaussianNB(),
            # an online hinge-loss SVM on a polynomial kernel's features
            svm=make_pipeline(
                Nystroem(kernel="poly", n_components=50, random_state=0),
                StandardScaler(),
                SGDClassifier(loss="hinge", tol=None, random_state=0),
            ),
            pa=SGDClassifier(
                loss="hinge",
                penalty=None,
                learning_rate="pa1",
                tol=None,
                random_state=0,
            ),
            knn=KNeighborsClassifier(),
        ),
    )


_V = "weightedvote__"
_SVM = _V + "svm__"
_ENSEMBLE_SPACE = {
    _V + "perceptron__average": [False, True],
    _V + "perceptron__max_iter": randint(1, 16),
    **{_V + "logreg__" + k: v for k, v in _ELASTIC_NET_SPACE.items()},
    _V + "nb__var_smoothing": loguniform(1e-12, 1.0),
    _SVM + "nystroem__degree": randint(1, 5),
    _SVM + "nystroem__coef0": loguniform(1e-2, 10.0),
    _SVM + "sgdclassifier__alpha": loguniform(1e-6, 1e-1),
    _SVM + "sgdclassifier__max_iter": randint(1, 51),
    _V + "pa__eta0": loguniform(1e-3, 1.5),
    _V + "pa__max_iter": randint(1, 21),
    _V + "knn__n_neighbors": randint(1, 51),
    **{_V + "w_" + m: uniform(0.0, 1.0) for m in MEMBERS},
}


ENSEMBLE = StreamModel(
    make=_ensemble,
    space=_ENSEMBLE_SPACE,
    prefix=_V,
    description=(
        "weighted majority vote of six classifiers (perceptron, logistic "
        "regression, naive Bayes, polynomial-kernel SVM, passive-aggressive, "
        "k-NN): 14 hyperparameters and 6 weights"
    ),
)

MODELS = {"logreg": LOGREG, "ensemble": ENSEMBLE}
