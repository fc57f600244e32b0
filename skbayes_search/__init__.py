"""Bayesian hyperparameter search meta-estimators for scikit-learn."""

__version__ = "0.1.0"
