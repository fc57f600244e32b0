"""Gaussian-process core: kernels, exact GP, hyperparameter inference, surrogate."""

from .inference import (
    LogPosterior,
    fit_map,
    hyper_bounds,
    initial_hyper,
    log_hyperprior,
    sample_hyperprior,
    slice_sample,
)
from .kernels import BasisKernel, Kernel, Matern52, ProductKernel, SumKernel
from .model import GaussianProcess, cholesky_jitter, single_blas_thread
from .surrogate import GPSurrogate, as_generator

__all__ = [
    "BasisKernel",
    "GPSurrogate",
    "GaussianProcess",
    "Kernel",
    "LogPosterior",
    "Matern52",
    "ProductKernel",
    "SumKernel",
    "as_generator",
    "cholesky_jitter",
    "fit_map",
    "hyper_bounds",
    "initial_hyper",
    "log_hyperprior",
    "sample_hyperprior",
    "single_blas_thread",
    "slice_sample",
]
