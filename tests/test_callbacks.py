"""scikit-learn fit callbacks (``set_callbacks``) reach every fit of a search."""

from collections import Counter

import pytest
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV
from sklearn.tree import DecisionTreeClassifier

from skbayes_search import BayesSearchCV, FabolasSearchCV, Integer
from skbayes_search._callbacks import SUPPORTED

pytestmark = pytest.mark.skipif(
    not SUPPORTED, reason="scikit-learn without fit callbacks"
)

X, y = load_iris(return_X_y=True)


class Recorder:
    """Records the hooks called on the search's own task tree."""

    def __init__(self):
        self.calls = []

    def setup(self, estimator, context):
        self.calls.append(("setup", type(estimator).__name__))

    def teardown(self, estimator, context):
        self.calls.append(("teardown", type(estimator).__name__))

    def on_fit_task_begin(self, estimator, context, **kwargs):
        self.calls.append(("begin", context.task_name))

    def on_fit_task_end(self, estimator, context, **kwargs):
        self.calls.append(("end", context.task_name))


def _tasks(recorder):
    return Counter(recorder.calls)


def test_every_fit_of_the_search_is_a_task():
    rec = Recorder()
    search = BayesSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": Integer(1, 6)},
        n_iter=4,
        n_initial_points=2,
        cv=3,
        n_jobs=1,
        random_state=0,
    ).set_callbacks(rec)
    search.fit(X, y)
    calls = _tasks(rec)
    assert rec.calls[0] == ("setup", "BayesSearchCV")
    assert rec.calls[-1] == ("teardown", "BayesSearchCV")
    assert calls[("begin", "search")] == calls[("end", "search")] == 1
    n_fits = 4 * 3
    assert calls[("begin", "candidate-split-evaluation")] == n_fits
    assert calls[("end", "candidate-split-evaluation")] == n_fits
    assert calls[("begin", "refit-with-best-params")] == 1
    assert calls[("end", "refit-with-best-params")] == 1


def test_same_task_names_as_grid_search():
    ours, theirs = Recorder(), Recorder()
    est = DecisionTreeClassifier(random_state=0)
    BayesSearchCV(
        est, {"max_depth": Integer(1, 3)}, n_iter=3, cv=2, n_jobs=1, random_state=0
    ).set_callbacks(ours).fit(X, y)
    GridSearchCV(est, {"max_depth": [1, 2, 3]}, cv=2, n_jobs=1).set_callbacks(
        theirs
    ).fit(X, y)
    assert set(_tasks(ours)) - {
        ("setup", "BayesSearchCV"),
        ("teardown", "BayesSearchCV"),
    } == set(_tasks(theirs)) - {("setup", "GridSearchCV"), ("teardown", "GridSearchCV")}


def test_subset_strategy_reports_the_final_full_data_fit_too():
    rec = Recorder()
    Xb, yb = X[y < 2], y[y < 2]
    search = FabolasSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": Integer(1, 4)},
        n_iter=3,
        n_initial_points=2,
        min_resources=2,
        n_representers=5,
        n_hyper_samples=2,
        cv=2,
        n_jobs=1,
        refit=False,
        random_state=0,
    ).set_callbacks(rec)
    search.fit(Xb, yb)
    n_fits = len(search.cv_results_["params"]) * 2
    calls = _tasks(rec)
    assert calls[("end", "candidate-split-evaluation")] == n_fits
    assert ("begin", "refit-with-best-params") not in calls


def test_no_callbacks_no_change():
    kw = dict(n_iter=3, cv=2, n_jobs=1, random_state=0)
    est = DecisionTreeClassifier(random_state=0)
    a = BayesSearchCV(est, {"max_depth": Integer(1, 6)}, **kw).fit(X, y)
    b = BayesSearchCV(est, {"max_depth": Integer(1, 6)}, **kw)
    b.set_callbacks(Recorder()).fit(X, y)
    assert a.cv_results_["params"] == b.cv_results_["params"]


def test_callbacks_and_progress_bar_with_parallel_workers():
    kw = dict(n_iter=3, cv=2, random_state=0)
    est = DecisionTreeClassifier(random_state=0)
    serial = BayesSearchCV(est, {"max_depth": Integer(1, 6)}, n_jobs=1, **kw)
    serial.fit(X, y)
    # synchronous: the same trials as the serial search, whatever finishes first
    parallel = BayesSearchCV(
        est,
        {"max_depth": Integer(1, 6)},
        n_jobs=2,
        verbose=1,
        asynchronous=False,
        **kw,
    )
    parallel.set_callbacks(Recorder()).fit(X, y)
    assert parallel.cv_results_["params"] == serial.cv_results_["params"]


class Identity:
    """Records whether every hook received the search itself."""

    def __init__(self):
        self.estimators = []

    def setup(self, estimator, context):
        self.estimators.append(estimator)

    def teardown(self, estimator, context):
        self.estimators.append(estimator)

    def on_fit_task_begin(self, estimator, context, **kwargs):
        self.estimators.append(estimator)

    def on_fit_task_end(self, estimator, context, **kwargs):
        self.estimators.append(estimator)


def test_every_hook_receives_the_search_itself():
    # as with GridSearchCV: the per-fit hooks too, not a clone of the search
    rec = Identity()
    search = BayesSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": Integer(1, 6)},
        n_iter=3,
        cv=2,
        n_jobs=1,
        random_state=0,
    ).set_callbacks(rec)
    search.fit(X, y)
    # setup, teardown, root, search, refit: 2 + 2 * 3; and 3 trials x 2 fits
    assert len(rec.estimators) == 2 + 2 * 3 + 2 * 3 * 2
    assert all(e is search for e in rec.estimators)


def test_a_one_time_generator_cv_works_with_callbacks():
    from sklearn.model_selection import KFold

    search = BayesSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": Integer(1, 6)},
        n_iter=2,
        cv=KFold(3).split(X),
        random_state=0,
    ).set_callbacks(Recorder())
    search.fit(X, y)
    assert search.n_splits_ == 3
