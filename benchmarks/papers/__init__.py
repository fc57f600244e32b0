"""Each strategy's paper, its own comparison reproduced at a scale this machine affords.

One module per paper; ``python -m benchmarks.papers.<name> --help`` for each.
The docs page "Reproducing the papers" shows their tables beside the papers'.
"""
