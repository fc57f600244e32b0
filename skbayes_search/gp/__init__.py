"""Gaussian-process core: kernels, exact GP, hyperparameter inference, surrogate."""

from .basis_kernel import BasisKernel
from .inference import (
    LogPosterior,
    fit_map,
    hyper_bounds,
    initial_hyper,
    log_hyperprior,
    sample_hyperprior,
    slice_sample,
)
from .kernels import Kernel, ProductKernel, SumKernel
from .model import GaussianProcess
from .posterior import Posterior, PosteriorStack
from .stationary import Matern52
from .surrogate import GPSurrogate, as_generator

__all__ = [
    "BasisKernel",
    "GPSurrogate",
    "GaussianProcess",
    "Kernel",
    "LogPosterior",
    "Matern52",
    "Posterior",
    "PosteriorStack",
    "ProductKernel",
    "SumKernel",
    "as_generator",
    "fit_map",
    "hyper_bounds",
    "initial_hyper",
    "log_hyperprior",
    "sample_hyperprior",
    "slice_sample",
]
