"""The main job: tune an RBF SVM on bundled real data (MAGIC telescope, 19k rows)
with BayesSearchCV, HalvingBayesSearchCV and FabolasSearchCV, and with
RandomizedSearchCV and HalvingRandomSearchCV sized to the same wall-clock
budget; print a live progress display, the result table and what it means, and
save a figure.

Run with ``python -m skbayes_search`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

#: Rows of the bundled MAGIC data.
N_MAGIC = 19_020
MIN_ROWS = 500


def _number(
    kind: type, check: Callable[[float], bool], need: str
) -> Callable[[str], float]:
    """An argparse type: parse ``kind`` and check it, else a clear message."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if kind is int else 'a number'}"
            ) from None
        if not check(value):
            raise argparse.ArgumentTypeError(f"{text} is out of range: {need}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m skbayes_search",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--budget",
        type=_number(float, lambda v: 0 < v < float("inf"), "must be > 0 seconds"),
        default=30.0,
        help="wall-clock seconds of search per method (the refit of the best "
        "model comes on top)",
    )
    parser.add_argument(
        "--n-rows",
        type=_number(
            int,
            lambda v: MIN_ROWS <= v <= N_MAGIC,
            f"must be between {MIN_ROWS} and {N_MAGIC} (the data's size)",
        ),
        default=N_MAGIC,
        help="rows of MAGIC used (a stratified sample); a quarter is held out "
        "for the test score",
    )
    parser.add_argument(
        "--n-iter",
        type=_number(int, lambda v: v >= 1, "must be at least 1"),
        default=None,
        help="at most this many trials per method; None: the budget decides",
    )
    parser.add_argument(
        "--n-jobs",
        type=_number(int, lambda v: v != 0, "must not be 0 (-1 means all cores)"),
        default=-1,
        help="parallel fits (-1: all cores)",
    )
    parser.add_argument(
        "--seed",
        type=_number(int, lambda v: 0 <= v < 2**32, "must be in [0, 2**32)"),
        default=0,
        help="random seed (data split, calibration and every search)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress display, only the results"
    )
    parser.add_argument(
        "--out",
        default="skbayes_search_demo",
        help="directory for the table (results.md, results.csv) and the figure",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    from ._demo import run  # after parsing: --help and errors stay instant

    run(
        budget=args.budget,
        n_rows=args.n_rows,
        n_iter=args.n_iter,
        n_jobs=args.n_jobs,
        seed=args.seed,
        quiet=args.quiet,
        out=args.out,
    )


if __name__ == "__main__":
    main()
