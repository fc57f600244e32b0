"""Benchmarks of skbayes_search against the searches users would pick instead.

Not part of the library or of the test suite. The protocol is
``../shared/docs/benchmark.md``; the entry point is ``python -m benchmarks.run``
(``--help`` lists the options, ``--quick`` is the CI smoke run) and the
surrogate micro-benchmark is ``python -m benchmarks.overhead``.

Modules:

- ``tasks``: datasets, estimators, search spaces and the train/test split.
- ``methods``: the registry of methods (ours and the peers), imported lazily.
- ``calibration``: fit-time model used to size the peers without a time budget.
- ``trace``: the timestamping scorer and the trials it records.
- ``execute``: one (task, method, seed) run, normally in a fresh subprocess.
- ``metrics``: pure functions on trajectories (incumbent, time-to-target, ...).
- ``report``: ``trajectories.csv``, ``summary.md`` and convergence plots.
- ``run``: the command line that ties them together.
"""
