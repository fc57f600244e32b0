"""Figures of fitted searches (needs the optional ``plot`` extra: matplotlib).

Every function reads a fitted search's ``cv_results_`` (and, for
:func:`plot_objective`, its search space) and draws on matplotlib axes; none
re-runs a fit.
"""

from ._objective import plot_objective
from ._trajectories import plot_convergence, plot_fractions, plot_tradeoff

__all__ = ["plot_convergence", "plot_fractions", "plot_objective", "plot_tradeoff"]
