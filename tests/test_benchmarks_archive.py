"""The race archive keeps what the report and ``--resume`` read, and gives it back."""

import json

from benchmarks.archive import ARCHIVE, restore, save
from benchmarks.run import has_record


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_archive_round_trip_keeps_records_without_trials(tmp_path):
    race = tmp_path / "race"
    bdir = race / "budget-60"
    record = {
        "status": "ok",
        "wall": 61.0,
        "n_trials": 2,
        "incumbents": [{"elapsed": 1.0, "params": {"C": 1.0}, "cv_score": 0.7}],
        "trials": [{"elapsed": 1.0, "score": 0.7}, {"elapsed": 2.0, "score": 0.6}],
    }
    _write(bdir / "meta.json", {"methods": ["m"]})
    _write(bdir / "runs" / "t" / "m-seed0.json", record)
    _write(bdir / "runs" / "t" / "m-seed0.spec.json", {"work_dir": "/tmp/x"})
    _write(bdir / "refits" / "t.json", {"a": {"test_score": 0.8}})
    _write(bdir / "sizing" / "t.json", {"halving": 9})
    save(race)
    assert (race / ARCHIVE).is_file()

    # a new machine: only the committed files are there
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / ARCHIVE).write_bytes((race / ARCHIVE).read_bytes())
    # a refit made here already, and one the archive has too
    _write(fresh / "budget-60" / "refits" / "t.json", {"b": {"test_score": 0.5}})
    written = restore(fresh)
    got = json.loads((fresh / "budget-60" / "runs" / "t" / "m-seed0.json").read_text())
    assert got == {k: v for k, v in record.items() if k != "trials"}
    assert has_record(fresh / "budget-60" / "runs" / "t" / "m-seed0.json")
    assert not (fresh / "budget-60" / "runs" / "t" / "m-seed0.spec.json").exists()
    refits = json.loads((fresh / "budget-60" / "refits" / "t.json").read_text())
    assert refits == {"a": {"test_score": 0.8}, "b": {"test_score": 0.5}}
    assert json.loads((fresh / "budget-60" / "sizing" / "t.json").read_text()) == {
        "halving": 9
    }
    assert len(written) == 4

    # a record made on this machine is never replaced; a second restore
    # writes nothing
    _write(fresh / "budget-60" / "runs" / "t" / "m-seed0.json", {"status": "failed"})
    assert restore(fresh) == []
    assert json.loads(
        (fresh / "budget-60" / "runs" / "t" / "m-seed0.json").read_text()
    ) == {"status": "failed"}


def test_saving_the_same_records_twice_gives_the_same_bytes(tmp_path):
    _write(tmp_path / "budget-60" / "runs" / "t" / "m-seed0.json", {"status": "ok"})
    first = save(tmp_path).read_bytes()
    assert save(tmp_path).read_bytes() == first
