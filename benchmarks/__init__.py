"""Benchmarks of skbayes_search against the searches users would pick instead.

Not part of the library or of the test suite. The protocol is
``../shared/docs/benchmark.md``; the entry point is ``python -m benchmarks.run``
(``--help`` lists the options, ``--quick`` is the CI smoke run). One-off
studies (surrogate overhead, FABOLAS budget checks, the trade-off and transfer
sweeps) are in :mod:`benchmarks.studies`; ``benchmarks/README.md`` lists them.

Harness modules:

- ``tasks``: datasets, estimators, search spaces and the train/test split.
- ``methods``: the registry of methods (ours and the peers), imported lazily.
- ``calibration``: fit-time model used to size the peers without a time budget.
- ``trace``: the timestamping scorer and the trials it records.
- ``execute``: one (task, method, seed) run, normally in a fresh subprocess.
- ``refit``: offline refit of every incumbent, scored on the test split.
- ``metrics``: pure functions on trajectories (incumbent, time-to-target, ...).
- ``report``: ``trajectories.csv``, ``summary.md`` and convergence plots.
- ``run``: the command line that ties them together.
- ``race``: the large-data race over ``run``'s machinery (``race_targets``: its
  figures and targets; ``race_report``: ``race.md`` and ``race.csv``).
"""

from pathlib import Path

#: Root of the checkout (the working directory of every benchmark command).
REPO_ROOT = Path(__file__).resolve().parents[1]
#: Where results folders go by default; only their summaries are committed.
RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
