"""A benchmark that records its run writes a series the documentation can draw, with the
machine, load, date and commit filled in (benchmarks/record.py, used by benchmarks/memory.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import docs_tables  # noqa: E402
from benchmarks import memory  # noqa: E402


def test_a_recorded_memory_run_is_a_series_with_its_provenance(tmp_path: Path) -> None:
    assert memory.main(["--rounds", "2", "--record"], results=tmp_path) == 0
    series = json.loads((tmp_path / "memory.json").read_text(encoding="utf-8"))
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert series["commit"].removesuffix("-dirty") == head
    assert "load average" in series["load"] and "cores" in series["machine"] and series["date"].endswith("UTC")
    assert series["transcribed"] is False and series["command"].startswith("python benchmarks/memory.py --rounds 2")
    table = docs_tables.render_table(series).splitlines()
    assert table[0] == "| configuration | most stored MB | RSS growth MB |"
    assert [line.split(" | ")[0] for line in table[2:]] == ["| capped at 8 MB", "| uncapped (limit 2**62)"]
    # the stored output of a 2 MB read is counted: the ledger held at least one of them
    assert all(row["most stored MB"] >= 1.9 for row in series["rows"])
