"""Search spaces: dimensions, parsing and the unit-cube encoding.

Every strategy works on points of the unit cube ``[0, 1]^D``; this module maps
between those points and the parameter dictionaries handed to
``estimator.set_params``.

Encoding, column by column:

- :class:`Real`: linear in the value (``prior="uniform"``) or in its logarithm
  (``prior="log-uniform"``).
- :class:`Integer`: like :class:`Real` on the widened box
  ``[low - 0.5, high + 0.5]`` (in log space for the log prior), rounded on
  decoding, so every integer owns a cell of the same width (of the same
  log-width for the log prior). Encoding puts an integer at its cell's centre.
- :class:`Categorical`: one column per category, decoded by ``argmax`` and
  encoded exactly one-hot. A categorical with one category is a fixed
  parameter and takes no column.
- Any other ``scipy.stats`` frozen distribution: one column holding the
  cumulative probability, decoded through ``ppf`` with the coordinate clipped
  to ``[1e-6, 1 - 1e-6]`` (so infinite supports stay finite). Discrete
  distributions are encoded at the centre of their value's probability step.
- Conditional spaces (a list of dicts): a one-hot selector block with one
  column per sub-space, then one block per sub-space holding that sub-space's
  own columns (names repeated across sub-spaces get separate columns). Blocks
  of inactive sub-spaces hold the constant 0.5, so two points of the same
  sub-space differ only on that sub-space's coordinates.
"""

from .dimensions import Categorical, Dimension, Integer, Real
from .search_space import SearchSpace

__all__ = ["Categorical", "Dimension", "Integer", "Real", "SearchSpace"]
