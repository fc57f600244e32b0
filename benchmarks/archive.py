"""Pack a race's run records into one compact file, and put them back.

A race takes many sessions of machine time, and a machine may be replaced
between two of them. Raw run records stay out of git (the raw folders
``runs/``, ``refits/``, ``sizing/`` and this archive alike), so the archive is
the file to carry to a new machine; without it the race starts again. It
is what the reports need and ``--resume`` reads, without the per-trial lists:
every budget's ``meta.json``, each run's record less its ``trials``, the
refit caches and the peers' sizings, in one gzipped JSON file beside the
race's ``race.md`` (about 2 KB a run before compression).

Usage (from the repository root)::

    # after a sitting: write FOLDER/records.json.gz from FOLDER's records
    python -m benchmarks.archive save benchmarks/results/<date>-race
    # on a new machine: recreate the records the archive holds and the
    # folder lacks, then resume the race or write its report
    python -m benchmarks.archive restore benchmarks/results/<date>-race

``restore`` never replaces a record that is there; refit caches are merged
(a refit already on disk wins). A restored record has no ``trials``: the
report's per-trial ``trajectories.csv`` lists only runs made on this machine,
while ``race.md`` and ``race.csv`` are complete.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

ARCHIVE = "records.json.gz"
#: Sub-folders of a budget folder whose JSON files the archive keeps.
KEPT = ("runs", "refits", "sizing")


def _budget_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("budget-*") if p.is_dir())


def _archived(path: Path) -> bool:
    return path.suffix == ".json" and not path.name.endswith(".spec.json")


def collect(folder: Path) -> dict[str, Any]:
    """The archive's content: ``{budget folder: {relative path: JSON}}``."""
    out: dict[str, Any] = {}
    for bdir in _budget_dirs(folder):
        files: dict[str, Any] = {}
        meta = bdir / "meta.json"
        if meta.is_file():
            files["meta.json"] = json.loads(meta.read_text())
        for sub in KEPT:
            for path in sorted((bdir / sub).rglob("*.json")):
                if not _archived(path):
                    continue
                data = json.loads(path.read_text())
                if sub == "runs":
                    data.pop("trials", None)
                files[path.relative_to(bdir).as_posix()] = data
        out[bdir.name] = files
    return out


def save(folder: Path) -> Path:
    """Write ``folder/records.json.gz``; returns its path."""
    content = collect(folder)
    path = folder / ARCHIVE
    raw = json.dumps(content, sort_keys=True, separators=(",", ":")).encode()
    # mtime=0: the same records give the same bytes, so git sees no change
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        fh.write(raw)
    return path


def restore(folder: Path) -> list[Path]:
    """Recreate what the archive holds and ``folder`` lacks; the paths written."""
    with gzip.open(folder / ARCHIVE, "rb") as fh:
        content = json.loads(fh.read())
    written = []
    for bname, files in content.items():
        for rel, data in files.items():
            path = folder / bname / rel
            if rel.startswith("refits/") and path.is_file():
                here = json.loads(path.read_text())
                data = {**data, **here}
                if data == here:
                    continue
            elif path.exists():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=1))
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.archive", description=__doc__.split("\n")[0]
    )
    p.add_argument("action", choices=("save", "restore"))
    p.add_argument("folder", help="the race's results folder")
    args = p.parse_args(argv)
    folder = Path(args.folder)
    if args.action == "save":
        print(f"wrote {save(folder)}", flush=True)
    else:
        written = restore(folder)
        print(f"restored {len(written)} files into {folder}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
