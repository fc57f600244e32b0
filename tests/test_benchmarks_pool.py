"""Pooling a race row's runs from several folders applies the race's rules to
each method's own seeds."""

import json

import pytest

from benchmarks.archive import save
from benchmarks.pool import load_pool, markdown, parse_source, pooled_figures, unscored
from benchmarks.refit import incumbent_key


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _run(folder, method, seed, incumbents):
    rec = {"task": "svc-t", "method": method, "seed": seed, "status": "ok"}
    rec.update(wall=61.0, n_trials=5, load_before=1.0, load_after=2.0)
    rec["incumbents"] = [
        {"elapsed": t, "params": {"x": x}, "refit_fraction": 1.0, "cv_score": 0.0}
        for t, x in incumbents
    ]
    _write(folder / "budget-60" / "runs" / "svc-t" / f"{method}-seed{seed}.json", rec)


def _refits(folder, pairs):
    cache = {
        incumbent_key({"x": x}, 1.0): {"test_score": s, "fit_seconds": 1.0}
        for x, s in pairs
    }
    _write(folder / "budget-60" / "refits" / "svc-t.json", cache)


def _race(tmp_path):
    info = {"classification": True, "task": "svc-t"}
    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        _write(folder / "budget-60" / "runs" / "svc-t" / "task.json", info)
    # the old race: three seeds of each; halving reaches 0.90 at 3 s
    for s in range(3):
        _run(old, "halving", s, [(3.0, 2)])
        _run(old, "bayes", s, [(40.0, 3)])
        _run(old, "halving-bayes", s, [(9.0, 4)])
    # the new folder: the default's own seeds 0-4, two modes (1 s or 8 s)
    for s, t in enumerate([1.0, 8.0, 1.0, 8.0, 1.0]):
        _run(new, "halving-bayes", s, [(t / 2, 9), (t, 1)])
    _refits(old, [(2, 0.90), (3, 0.90), (4, 0.95)])
    _refits(new, [(9, 0.50), (1, 0.90)])
    return old, new


def test_pool_takes_each_method_from_its_source_and_medians_its_own_seeds(tmp_path):
    old, new = _race(tmp_path)
    # the old folder only archived: its records are read from records.json.gz
    save(old)
    for p in sorted((old / "budget-60").rglob("*.json"), reverse=True):
        p.unlink()
    sources = [
        parse_source(f"{old}:halving,bayes"),
        parse_source(f"{new}:halving-bayes"),
    ]
    records, refits, info, origin = load_pool(sources, "svc-t", 60.0)
    assert origin[("halving-bayes", 4)] == new and origin[("halving", 0)] == old
    assert unscored(records, refits) == []
    fig = pooled_figures(records, refits, info, 60.0, 2)
    # the old default's 0.95 is not in the pool: the best is 0.90
    assert fig["best"] == pytest.approx(0.90)
    assert fig["cells"]["halving-bayes"]["ttt"] == [1.0, 8.0, 1.0, 8.0, 1.0]
    assert fig["cells"]["halving"]["expected"] == 3
    md = markdown(fig, "halving-bayes")
    assert "| halving-bayes | 0-4 (5) |" in md
    # median 1 s of five against halving's 3 s; bayes 40 s is 40x
    assert "(b) against halving: met 1 s vs halving 3 s" in md
    assert "(c) 10x sooner than bayes: met 1 s vs bayes 40 s (40.00x)" in md

    # a refit made here since the archive adds to the archive's cache
    _write(old / "budget-60" / "refits" / "svc-t.json", {"k": {"test_score": 0.5}})
    merged = load_pool(sources, "svc-t", 60.0)[1]
    assert "k" in merged and incumbent_key({"x": 2}, 1.0) in merged

    # a best reached outside the pool raises the target past every run
    higher = pooled_figures(records, refits, info, 60.0, 2, best_at_least=0.97)
    assert higher["threshold"] == pytest.approx(0.965)
    assert "(b) against halving: missed never vs halving never" in markdown(
        higher, "halving-bayes"
    )


def test_pool_refuses_a_seed_from_two_sources_and_counts_unrefit_as_pending(tmp_path):
    old, new = _race(tmp_path)
    both = [parse_source(f"{old}:halving-bayes"), parse_source(f"{new}:halving-bayes")]
    with pytest.raises(ValueError, match=r"halving-bayes seed 0 is in .*old and in"):
        load_pool(both, "svc-t", 60.0)
    with pytest.raises(ValueError, match="no random runs"):
        load_pool([parse_source(f"{old}:random")], "svc-t", 60.0)
    with pytest.raises(ValueError, match="FOLDER:METHOD"):
        parse_source(str(old))

    _refits(new, [(1, 0.90)])  # the first incumbents (x=9) not refit
    sources = [
        parse_source(f"{old}:halving,bayes"),
        parse_source(f"{new}:halving-bayes"),
    ]
    records, refits, info, _ = load_pool(sources, "svc-t", 60.0)
    assert unscored(records, refits) == [({"x": 9}, 1.0)]
    md = markdown(pooled_figures(records, refits, info, 60.0, 2), "halving-bayes")
    assert "5 refits pending" in md and "(b) against halving: incomplete" in md
