"""The transfer stream's options: its command-line arguments, and the record
of them in ``OUT/stream.json`` that keeps one ``--out`` to one set of them
(``benchmarks.studies.transfer_stream``, ``benchmarks.papers.transfer``)."""

from __future__ import annotations

import argparse
import json
import os

METHODS = ("random", "bayes", "indep", "sqe", "mkl")
SOURCES = (
    "adult",
    "letter",
    "magic",
    "shuttle",
    "pendigits",
    "credit_default",
    "connect_4",
    "covertype_75k",
)


def add_arguments(parser, **defaults):
    """The stream's options (shared with ``benchmarks.papers.transfer``)."""
    d = {"orders": 3, "n_rows": 800, "copies": 2, "sources": list(SOURCES), **defaults}
    parser.add_argument("--data-dir", default="../shared/datasets")
    parser.add_argument("--orders", type=int, default=d["orders"])
    parser.add_argument(
        "--first-order",
        type=int,
        default=0,
        help="run orders FIRST_ORDER .. ORDERS - 1 only (orders are independent: "
        "two processes may share one --out with disjoint ranges)",
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--sources", nargs="+", default=d["sources"])
    parser.add_argument("--n-rows", type=int, default=d["n_rows"])
    parser.add_argument("--copies", type=int, default=d["copies"])
    parser.add_argument(
        "--binary",
        type=int,
        default=0,
        metavar="N",
        help="also one data set per class for up to N of each multiclass "
        "source's most frequent classes: that class against the rest of its "
        "sample (default 0: none)",
    )
    parser.add_argument(
        "--model",
        choices=("logreg", "ensemble"),
        default="logreg",
        help="the paper's elastic-net logistic regression (Tables 2, 3 left) or "
        "its ensemble of classifiers (Table 3 right); see _transfer_models.py",
    )
    parser.add_argument("--n-iter", type=int, default=10)
    parser.add_argument("--cv", type=int, default=3)
    parser.add_argument(
        "--test-size",
        type=float,
        default=0.3,
        help="held-out share of every data set (0: no test score)",
    )
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument(
        "--resume",
        action="store_true",
        help="skip the searches with a record in OUT/records, continue the stores",
    )
    parser.add_argument(
        "--same-seed",
        action="store_true",
        help="random_state=order on every data set (one seed for the stream)",
    )
    parser.add_argument(
        "--mkl-weights",
        nargs=2,
        type=float,
        default=None,
        metavar=("W0", "W1"),
        help="kernel_weights of the mkl searches (default: the library's, the "
        "paper's 0.3 and 0.7); recorded in OUT/stream.json with the other "
        "options that decide a record, and a stream continues only with them",
    )
    parser.add_argument(
        "--random-replacement",
        type=float,
        default=None,
        help="random_replacement of the transfer searches (indep, sqe, mkl; "
        "default: the library's, the paper's 0.25); recorded like --mkl-weights",
    )


# The options that decide what a record holds: every search of one --out must
# share them, so that the ranks compare like with like (the orders, methods and
# --first-order may differ between the runs that fill one --out).
RECORDED_OPTIONS = (
    "model",
    "sources",
    "n_rows",
    "copies",
    "binary",
    "n_iter",
    "cv",
    "test_size",
    "same_seed",
    "mkl_weights",
    "random_replacement",
)


# Options added after streams were recorded without them: those streams ran
# with these values.
ADDED_LATER = {"binary": 0}


def holds_records(records_dir: str) -> bool:
    """Whether ``records_dir`` exists and holds a search's record."""
    return os.path.isdir(records_dir) and any(
        f.endswith(".json") for f in os.listdir(records_dir)
    )


def check_options(args: argparse.Namespace) -> None:
    """Record the stream's options in ``args.out/stream.json``, or check them
    against the ones recorded there.

    Raises ``SystemExit`` naming every option that differs from the recorded
    value, and when ``args.out/records`` holds records but no options were
    recorded (their options cannot be checked).
    """
    out = args.out
    given = {name: getattr(args, name) for name in RECORDED_OPTIONS}
    path = os.path.join(out, "stream.json")
    if not os.path.exists(path):
        records_dir = os.path.join(out, "records")
        if holds_records(records_dir):
            raise SystemExit(
                f"{records_dir} holds records but {path} does not say which "
                "options made them, so they cannot be checked against these: "
                "choose another --out (or write that file with the options "
                f"{', '.join(RECORDED_OPTIONS)} they were made with)."
            )
        os.makedirs(out, exist_ok=True)
        with open(path + ".tmp", "w") as fh:
            json.dump(given, fh, indent=1)
        os.replace(path + ".tmp", path)
        return
    with open(path) as fh:
        recorded = json.load(fh)
    differ = [
        f"--{name.replace('_', '-')}: "
        f"{recorded.get(name, ADDED_LATER.get(name))!r} recorded, "
        f"{given[name]!r} given"
        for name in RECORDED_OPTIONS
        if recorded.get(name, ADDED_LATER.get(name)) != given[name]
    ]
    if differ:
        raise SystemExit(
            f"{out} holds a stream made with other options ({'; '.join(differ)}): "
            "give the recorded ones to continue it, or choose another --out."
        )
