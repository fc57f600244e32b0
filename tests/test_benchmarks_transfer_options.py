"""The transfer stream keeps one --out to one set of the options that decide
its records, and its one-against-the-rest data sets (no fits)."""

import argparse
import json

import numpy as np
import pytest

from benchmarks.studies._transfer_options import add_arguments, check_options
from benchmarks.studies.transfer_stream import one_vs_rest


def _args(out, *extra):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--out", str(out), *extra])


def test_a_new_out_records_the_options_and_accepts_them_again(tmp_path):
    args = _args(tmp_path, "--mkl-weights", "0.5", "0.5", "--n-rows", "600")
    check_options(args)
    recorded = json.loads((tmp_path / "stream.json").read_text())
    assert recorded["mkl_weights"] == [0.5, 0.5]
    assert recorded["n_rows"] == 600
    # the same options again, with other orders and methods: accepted
    again = _args(
        tmp_path,
        "--mkl-weights",
        "0.5",
        "0.5",
        "--n-rows",
        "600",
        "--first-order",
        "3",
        "--methods",
        "mkl",
    )
    check_options(again)


def test_other_options_on_a_recorded_out_are_refused_by_name(tmp_path):
    check_options(_args(tmp_path, "--mkl-weights", "0.5", "0.5"))
    with pytest.raises(SystemExit) as info:
        check_options(_args(tmp_path, "--mkl-weights", "0.7", "0.3", "--cv", "5"))
    message = str(info.value)
    assert "--mkl-weights: [0.5, 0.5] recorded, [0.7, 0.3] given" in message
    assert "--cv: 3 recorded, 5 given" in message
    # the record of the options is left as it was
    recorded = json.loads((tmp_path / "stream.json").read_text())
    assert recorded["mkl_weights"] == [0.5, 0.5] and recorded["cv"] == 3


def test_records_without_recorded_options_are_refused(tmp_path):
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "mkl-o000-p000.json").write_text("{}")
    with pytest.raises(SystemExit, match="cannot be checked"):
        check_options(_args(tmp_path))
    assert not (tmp_path / "stream.json").exists()


def test_the_model_is_recorded_and_another_one_refused(tmp_path):
    check_options(_args(tmp_path))
    assert json.loads((tmp_path / "stream.json").read_text())["model"] == "logreg"
    with pytest.raises(SystemExit, match="--model: 'logreg' recorded, 'ensemble'"):
        check_options(_args(tmp_path, "--model", "ensemble"))


def test_a_stream_recorded_before_binary_existed_continues_only_without_it(tmp_path):
    check_options(_args(tmp_path))
    path = tmp_path / "stream.json"
    recorded = json.loads(path.read_text())
    del recorded["binary"]
    path.write_text(json.dumps(recorded))
    # it ran with none: accepted without --binary, refused with it
    check_options(_args(tmp_path))
    with pytest.raises(SystemExit, match="--binary: 0 recorded, 4 given"):
        check_options(_args(tmp_path, "--binary", "4"))


def test_one_vs_rest_takes_the_most_frequent_classes_that_can_be_stratified():
    X = np.arange(40.0).reshape(-1, 1)
    # class 2: 20 rows, 0 and 5: 8 each, 9: 4 (too few once 30 % is held out)
    y = np.repeat([2, 0, 5, 9], [20, 8, 8, 4])
    sets = one_vs_rest("src", X, y, n_binary=3)
    assert [name for name, _, _ in sets] == ["src=2", "src=0", "src=5"]
    for (_, X_b, y_b), label in zip(sets, (2, 0, 5)):
        assert X_b is X
        np.testing.assert_array_equal(y_b, (y == label).astype(int))
    assert [name for name, _, _ in one_vs_rest("src", X, y, n_binary=9)] == [
        "src=2",
        "src=0",
        "src=5",
    ]
    # a binary sample gives none: it is its own one-vs-rest data set
    assert one_vs_rest("src", X, (y == 2).astype(int), n_binary=3) == []
