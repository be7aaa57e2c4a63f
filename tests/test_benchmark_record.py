"""A benchmark that records its run writes a series the documentation can draw, with the
machine, load, date and commit filled in (benchmarks/record.py).

Each recording benchmark runs here at a tiny size into a temporary results directory: what it
writes must be the series the documentation's table is drawn from (`benchmarks/results/<id>.json`
now), column for column, so that recording a real run redraws the same table with new figures.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import docs_tables  # noqa: E402
from benchmarks import memory, record  # noqa: E402

WATCHMAN = ("-watchman",) if shutil.which("watchman") else ()
#: Benchmark module -> tiny arguments -> the series it records (an id with no stored file is new).
TINY_RUNS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "ledger_scaling": (["--sizes", "100", "--impl-steps", "20", "--spec-steps", "2"], ("ledger-scaling",)),
    "claude_hook_latency": (["--runs", "1", "--files", "20"], ("claude-hook-latency" + "".join(WATCHMAN),)),
    "hook_latency": (["--runs", "1", "--files", "20"], ("hook-latency-split",)),
    "stat_index": (["--runs", "1", "--files", "20"], ("stat-index-cost",) + (("watchman-vs-stat-index",) if WATCHMAN else ())),
    "detection": (["--runs", "2", "--files", "20"], ("detection", "detection-fingerprint", "detection-inode-watches")),
    "ground_truth_look": (["--runs", "2", "--files", "20", "--rounds", "1"], ("ground-truth-look",)),
    "hunt_throughput": (["--ci-runs", "1", "--thorough-runs", "1", "--workers", "1"], ("hunt-throughput",)),
    "defense_in_depth": (["--scenario", "sed -i, then cat"], ("defense-in-depth",)),
}


def column_shape(series: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """Each column's name with its figures blanked (`process (N files, N runs)`), alignment and format."""
    return [(re.sub(r"\d[\d,]*", "N", column["name"]), column["align"], column.get("format")) for column in series["columns"]]


def assert_provenance(series: dict[str, Any], command: str) -> None:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert series["commit"].removesuffix("-dirty") == head
    assert "load average" in series["load"] and "cores" in series["machine"] and series["date"].endswith("UTC")
    assert series["transcribed"] is False and series["command"] == command and "--record" not in command


@pytest.mark.parametrize("module", sorted(TINY_RUNS))
def test_a_benchmark_records_the_series_its_documentation_table_is_drawn_from(module: str, tmp_path: Path) -> None:
    argv, expected = TINY_RUNS[module]
    benchmark = importlib.import_module(f"benchmarks.{module}")
    assert benchmark.main([*argv, "--record"], results=tmp_path) == 0
    assert sorted(path.stem for path in tmp_path.glob("*.json")) == sorted(expected)
    for series_id in expected:
        series = json.loads((tmp_path / f"{series_id}.json").read_text(encoding="utf-8"))
        assert series["id"] == series_id and docs_tables.is_series(series) and series["rows"]
        assert_provenance(series, record.command_line(f"{module}.py", argv))
        stored = record.RESULTS / f"{series_id}.json"
        if stored.exists():
            assert column_shape(series) == column_shape(json.loads(stored.read_text(encoding="utf-8")))
        table = docs_tables.series_tables({series_id: series})[series_id].splitlines()
        assert len(table) == 2 + len(series["rows"]) + 2  # header, rule, rows, blank, provenance


def test_a_baseline_checkout_is_measured_from_its_own_folder(tmp_path: Path) -> None:
    """The look's child loads the baseline's harness from its `properties/` folder: importing
    `ledger_properties` there would find this checkout's install and time it twice."""
    from benchmarks import ground_truth_look

    baseline = tmp_path / "baseline"
    for package in ("properties", "ledger_impl", "ledger_spec"):
        shutil.copytree(ROOT / package, baseline / package, ignore=shutil.ignore_patterns("__pycache__"))
    found = ground_truth_look.measure_in_child(ROOT / "benchmarks", 1, str(baseline))
    assert Path(str(found["source"])) == baseline / "properties" / "ground_truth.py"
    assert ground_truth_look.main(["--runs", "1", "--files", "10", "--rounds", "1", "--baseline", str(baseline), "--record"],
                                  results=tmp_path) == 0
    rows = json.loads((tmp_path / "ground-truth-look.json").read_text(encoding="utf-8"))["rows"]
    assert [row["checkout"] for row in rows] == ["this", str(baseline)]


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
