"""Acquisition functions: every one reads a surrogate's posterior interface.

- :mod:`~skbayes_search.acquisition.analytic`: log EI, log PI and LCB, their
  integration over hyperparameter samples, EI per second and Monte Carlo
  fantasies over pending points (Snoek et al. 2012);
- :mod:`~skbayes_search.acquisition.entropy`: entropy search on representer
  points, ``p_min``, information gain and its per-cost form (FABOLAS).
"""

from .analytic import (
    ACQUISITIONS,
    lcb,
    log_ei,
    log_h,
    log_inverse_cost,
    log_pi,
    make_acquisition,
)
from .tradeoff import make_tradeoff_acquisition

__all__ = [
    "ACQUISITIONS",
    "lcb",
    "log_ei",
    "log_h",
    "log_inverse_cost",
    "log_pi",
    "make_acquisition",
    "make_tradeoff_acquisition",
]
