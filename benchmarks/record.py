"""A benchmark's measurement as a series file under `benchmarks/results/`, the data the
documentation's tables are generated from (`scripts/docs_tables.py` says the format).

A benchmark that records its run calls `measured(...)` with its table and `write(...)` with the
result; where and when it ran (cores, load average before and after, date, commit) are filled
in here, so that no figure is ever stored without them.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent


def load_average() -> float:
    """The 1-minute load average now: the figure every series states beside its timings."""
    return os.getloadavg()[0]


def load_text(before: float, after: float) -> str:
    """The `load` every results file states: the 1-minute load average at a run's start and end."""
    return f"1-minute load average {before:.1f} at the start, {after:.1f} at the end"


def _commit() -> str:
    """The checkout's commit, marked `-dirty` when the tree differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown (not a git checkout)"
    return commit + ("-dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def row(columns: Sequence[Mapping[str, str]], *cells: Any) -> dict[str, Any]:
    """One table row: the cells keyed by the columns' names, in order."""
    assert len(cells) == len(columns), "one cell per column"
    return {column["name"]: cell for column, cell in zip(columns, cells)}


def command_line(script: str, argv: Sequence[str] | None) -> str:
    """How the run was started, as its series states it: the benchmark's arguments less `--record`
    (None: this process's own)."""
    given = sys.argv[1:] if argv is None else argv
    return " ".join(["python", f"benchmarks/{script}", *(shlex.quote(arg) for arg in given if arg != "--record")])


def measured(
    series_id: str,
    title: str,
    command: str,
    columns: Sequence[Mapping[str, str]],
    rows: Sequence[Mapping[str, Any]],
    *,
    load_before: float,
    notes: str = "",
) -> dict[str, Any]:
    """The series of a run that just ended, whose load average was `load_before` at its start."""
    names = [column["name"] for column in columns]
    assert all(list(row) == names for row in rows), "each row holds exactly the columns, in order"
    return {
        "id": series_id,
        "title": title,
        "command": command,
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}",
        "load": load_text(load_before, load_average()),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
        "notes": notes,
        "source": f"measured by `{command}`",
        "transcribed": False,
        "columns": [dict(column) for column in columns],
        "rows": [dict(row) for row in rows],
    }


def write(series: Mapping[str, Any], results: Path = RESULTS) -> Path:
    """Store the series as `results/<id>.json`; `python scripts/docs_generate.py` then redraws its tables."""
    path = results / f"{series['id']}.json"
    path.write_text(json.dumps(series, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def keep(
    series_id: str,
    title: str,
    script: str,
    argv: Sequence[str] | None,
    columns: Sequence[Mapping[str, str]],
    rows: Sequence[Mapping[str, Any]],
    *,
    load_before: float,
    notes: str = "",
    results: Path = RESULTS,
) -> Path:
    """What a benchmark's `--record` does: the run's series (`measured`, its command from `argv`)
    written under `results`, and where it went printed."""
    series = measured(series_id, title, command_line(script, argv), columns, rows, load_before=load_before, notes=notes)
    path = write(series, results)
    print(f"recorded {path}")
    return path
