"""The transfer stream keeps one --out to one set of the options that decide
its records (no fits)."""

import argparse
import json

import pytest

from benchmarks.studies._transfer_options import add_arguments, check_options


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
