"""Bayesian hyperparameter search meta-estimators for scikit-learn.

Drop-in replacements for :class:`~sklearn.model_selection.GridSearchCV` and
:class:`~sklearn.model_selection.RandomizedSearchCV` that find better
hyperparameters in fewer fits.
"""

from .space import Categorical, Integer, Real
from .storage import TrialStore
from .strategies.bayes import BayesSearchCV
from .strategies.fabolas import FabolasSearchCV
from .strategies.halving import HalvingBayesSearchCV
from .strategies.multistage import MultiStageBayesSearchCV
from .strategies.tradeoff import TradeoffBayesSearchCV
from .strategies.transfer import TransferBayesSearchCV

__version__ = "0.1.0"

__all__ = [
    "BayesSearchCV",
    "Categorical",
    "FabolasSearchCV",
    "HalvingBayesSearchCV",
    "Integer",
    "MultiStageBayesSearchCV",
    "Real",
    "TradeoffBayesSearchCV",
    "TransferBayesSearchCV",
    "TrialStore",
]
