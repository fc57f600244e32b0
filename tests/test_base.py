"""The shared base: CV splits, failures and their scores, for every strategy."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.exceptions import FitFailedWarning

from skbayes_search import BayesSearchCV


def test_boolean_mask_splits_score_like_grid_search():
    # Masks read as indices would put rows 0 and 1 in every fold.
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.svm import SVC

    X, y = make_classification(n_samples=90, random_state=0)
    masks = []
    for train, _ in KFold(3, shuffle=True, random_state=0).split(X):
        m_train = np.zeros(len(X), dtype=bool)
        m_train[train] = True
        masks.append((m_train, ~m_train))
    space = {"C": [0.1, 1.0, 10.0]}
    ours = BayesSearchCV(SVC(), space, n_iter=3, cv=masks, random_state=0).fit(X, y)
    grid = GridSearchCV(SVC(), space, cv=masks).fit(X, y)
    by_c = dict(
        zip(
            [p["C"] for p in grid.cv_results_["params"]],
            grid.cv_results_["mean_test_score"],
        )
    )
    for params, score in zip(
        ours.cv_results_["params"], ours.cv_results_["mean_test_score"]
    ):
        assert score == pytest.approx(by_c[params["C"]])
    assert ours.best_score_ == pytest.approx(grid.best_score_)


def test_boolean_mask_of_the_wrong_length_is_refused():
    from sklearn.svm import SVC

    X, y = make_classification(n_samples=40, random_state=0)
    bad = [(np.ones(30, dtype=bool), np.ones(30, dtype=bool))]
    with pytest.raises(ValueError, match="cv: a boolean mask"):
        BayesSearchCV(SVC(), {"C": [1.0, 2.0]}, n_iter=2, cv=bad).fit(X, y)


class _FailsForLargeC(ClassifierMixin, BaseEstimator):
    """Fails to fit when C > 1; otherwise predicts the majority class."""

    def __init__(self, C=1.0):
        self.C = C

    def fit(self, X, y):
        if self.C > 1:
            raise ValueError("C too large")
        self.classes_, counts = np.unique(y, return_counts=True)
        self.majority_ = self.classes_[np.argmax(counts)]
        return self

    def predict(self, X):
        return np.full(len(X), self.majority_)


def test_numeric_error_score_never_reaches_the_surrogate():
    from skbayes_search._trial import TrialRecord
    from tests.helpers import search_context

    def record(score, failed):
        return TrialRecord({}, np.zeros(1), 1.0, 10, score, 1.0, 1.0, failed, 0, 0.0)

    ctx = search_context({"C": [1.0]}, budget=3)
    ctx.trials = [record(0.8, False), record(-1e6, True), record(0.6, False)]
    assert np.isnan(ctx.scores()[1])
    # the failed trial gets the worst observed loss, not 1e6
    np.testing.assert_allclose(ctx.losses(), [-0.8, -0.6, -0.6])
    assert ctx.n_succeeded() == 2


def test_numeric_error_score_search_warns_and_keeps_the_value_in_results():
    X, y = make_classification(n_samples=60, random_state=0)
    search = BayesSearchCV(
        _FailsForLargeC(),
        {"C": [0.5, 1.0, 2.0, 4.0]},
        n_iter=4,
        cv=2,
        error_score=-1e6,
        random_state=0,
    )
    with pytest.warns(FitFailedWarning, match="2 of 4 trials failed"):
        search.fit(X, y)
    scores = dict(
        zip(
            [p["C"] for p in search.cv_results_["params"]],
            search.cv_results_["mean_test_score"],
        )
    )
    assert scores[2.0] == scores[4.0] == -1e6
    assert search.best_params_["C"] <= 1.0


def test_nan_scores_of_successful_fits_are_counted():
    def nan_scorer(estimator, X, y):
        return np.nan if estimator.C < 1 else 0.5

    X, y = make_classification(n_samples=60, random_state=0)
    search = BayesSearchCV(
        _FailsForLargeC(),
        {"C": [0.5, 0.7, 1.0]},
        n_iter=3,
        cv=2,
        scoring=nan_scorer,
        random_state=0,
    )
    with pytest.warns(UserWarning, match="2 of 3 trials fitted but scored NaN"):
        search.fit(X, y)


class _FailsOnRow0(ClassifierMixin, BaseEstimator):
    """Fails to fit whenever training row 0 (marked by X[0, 0] = 999) is in."""

    def __init__(self, c=1.0):
        self.c = c

    def fit(self, X, y):
        if np.any(np.asarray(X)[:, 0] == 999):
            raise ValueError("row 0 is poisoned")
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def test_all_failed_error_lists_the_fit_errors_with_counts():
    X, y = make_classification(40, 4, random_state=0)
    X[:, 0] = 999  # every fit fails
    search = BayesSearchCV(_FailsOnRow0(), {"c": [1.0, 2.0, 3.0]}, n_iter=3, cv=2)
    with pytest.raises(ValueError) as info:
        search.fit(X, y)
    message = str(info.value)
    assert "All the 3 trials failed (6 fits)" in message
    assert "6 fits failed with the following error" in message
    assert "row 0 is poisoned" in message


def test_a_search_whose_every_trial_has_one_failed_fold_goes_on():
    # as in scikit-learn: some fits succeeded, so the estimator can work; the
    # search runs its budget and warns instead of stopping
    X, y = make_classification(40, 4, random_state=0)
    X[0, 0] = 999
    search = BayesSearchCV(
        _FailsOnRow0(), {"c": [1.0, 2.0, 3.0]}, n_iter=3, cv=2, refit=False
    )
    with pytest.warns(FitFailedWarning, match="row 0 is poisoned"):
        search.fit(X, y)
    assert len(search.cv_results_["params"]) == 3
