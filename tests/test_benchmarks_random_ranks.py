"""The random-settings ranking study: agreement of subset sizes with all rows."""

from __future__ import annotations

import json

import pytest

from benchmarks.studies.random_ranks import main, report, subset_sizes


def test_subset_sizes_are_a_halving_ladder() -> None:
    assert subset_sizes(1000, 20, 3) == [20, 60, 180, 540, 1000]
    assert subset_sizes(45000, 70, 3)[-2:] == [17010, 45000]


def _result() -> dict:
    # 12 settings: 100 rows ranks them backwards, 300 rows as all rows do
    scores = [[0.9 - i / 100, 0.5 + i / 100, 0.6 + i / 100] for i in range(12)]
    return {
        "task": "t",
        "sizes": [100, 300, 900],
        "settings": [{"a": i} for i in range(12)],
        "scores": scores,
        "seconds": [[0.1, 0.2, 0.4]] * 12,
    }


def test_report_names_the_backwards_size() -> None:
    text = report(_result())
    lines = text[text.index("tau(all rows)") :].splitlines()
    first = next(line for line in lines if line.startswith("   100  "))
    tau_all, tau_top, rank = first.split()[1:4]
    assert float(tau_all) == pytest.approx(-1.0)
    assert float(tau_top) == pytest.approx(-1.0)
    # its best setting is the worst of twelve on all rows
    assert rank == "12,"
    second = next(line for line in lines if line.startswith("   300  "))
    assert float(second.split()[1]) == pytest.approx(1.0)


def test_a_stored_study_of_other_settings_is_refused(tmp_path, capsys) -> None:
    out = tmp_path / "study.json"
    asked = {"task": "t", "n_settings": 12, "min_rows": 100, "factor": 3.0, "seed": 0}
    out.write_text(json.dumps({**_result(), "asked": asked}))
    main(["--task", "t", "--n-settings", "12", "--min-rows", "100", "--out", str(out)])
    assert "12 random settings" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="min_rows"):
        main(
            ["--task", "t", "--n-settings", "12", "--min-rows", "70", "--out", str(out)]
        )
