"""One-off studies: each answers one question, outside the benchmark harness.

Each is run as ``python -m benchmarks.studies.<name>`` from the repository
root (``--help`` lists its options) and reuses the harness's tasks where it
needs them (:mod:`benchmarks.tasks`):

- ``overhead``: seconds per proposal of our GP against scikit-optimize and
  Optuna, as observations accumulate;
- ``proposal_time``: our GP's refit and acquisition seconds per proposal;
- ``fabolas_overhead``: FabolasSearchCV's own seconds per iteration;
- ``fabolas_budget``: whether FabolasSearchCV keeps to ``max_time`` on a task;
- ``fabolas_extrapolation``: how well FABOLAS's loss model extrapolates to all
  data, read from a finished ``benchmarks.run`` folder;
- ``tradeoff_sweep``: TradeoffBayesSearchCV's ``alpha`` sweep against
  BayesSearchCV;
- ``tradeoff_proposal``: TradeoffBayesSearchCV's seconds per proposal, with
  and without its acquisition's upper bound;
- ``transfer_stream``: TransferBayesSearchCV on a stream of data sets.
"""
