"""`scripts/mutation.py report --record`: the mutation run's counts written as a series.

The sessions are cosmic-ray's SQLite files; this test writes one with the tables and columns
the report reads, so the counting and the series it records are checked without a run."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _mutation_script():
    spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "scripts" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutation_script"] = module
    spec.loader.exec_module(module)
    return module


def _session(path: Path, results: list[tuple[str, str, str]], pending: int) -> None:
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE work_items (job_id TEXT)")
        db.execute("CREATE TABLE work_results (job_id TEXT, worker_outcome TEXT, test_outcome TEXT, output TEXT)")
        for number, (worker, outcome, output) in enumerate(results):
            db.execute("INSERT INTO work_items VALUES (?)", (f"job{number}",))
            db.execute("INSERT INTO work_results VALUES (?, ?, ?, ?)", (f"job{number}", worker, outcome, output))
        for number in range(pending):
            db.execute("INSERT INTO work_items VALUES (?)", (f"pending{number}",))


def test_report_records_each_run_module_with_its_counts(tmp_path: Path) -> None:
    mutation = _mutation_script()
    module = "ledger_spec/lines.py"
    _session(tmp_path / "work" / mutation._slug(module) / "session.sqlite", [
        ("NORMAL", "KILLED", ""), ("NORMAL", "KILLED", ""), ("NORMAL", "KILLED", "timeout"),
        ("NORMAL", "SURVIVED", ""), ("SKIPPED", "", ""), ("NORMAL", "INCOMPETENT", ""),
    ], pending=2)
    results = tmp_path / "results"
    results.mkdir()
    mutation.report([module, "ledger_spec/state.py"], results, work=tmp_path / "work")
    series = json.loads((results / "mutation-run.json").read_text())
    assert [row["module"] for row in series["rows"]] == [f"`{module}`"]  # a module never run is no row
    row = series["rows"][0]
    # 8 items, 1 skipped: 7 mutants; 2 killed, 1 timed out, 1 survived, 1 incompetent, 2 pending.
    assert (row["mutants"], row["killed"], row["timeout"], row["survived"], row["pending"]) == (7, 2, 1, 1, 2)
    assert row["score (raw)"] == "75.0%"
    assert series["transcribed"] is False and series["commit"] and series["machine"]
    assert [column["name"] for column in series["columns"]] == list(row)


def test_a_mutated_except_clause_stops_catching_instead_of_raising_name_error(tmp_path: Path) -> None:
    """cosmic-ray's exception operator leaves `CosmicRayTestingException` for the test run to
    define. Left undefined, the clause raised NameError when an exception reached it: a test
    expecting the original exception to escape then failed, and the mutant counted as killed
    for a reason the mutation does not stand for."""
    (tmp_path / "mutated.py").write_text(
        "def parse(text):\n"
        "    try:\n"
        "        return int(text)\n"
        "    except CosmicRayTestingException:  # was: except ValueError\n"
        "        return None\n"
    )
    (tmp_path / "test_mutated.py").write_text(
        "import pytest\n"
        "from mutated import parse\n\n"
        "def test_the_value_error_escapes_the_mutated_clause():\n"
        "    with pytest.raises(ValueError):\n"
        "        parse('x')\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "scripts.mutation_hypothesis",
         str(tmp_path / "test_mutated.py")],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])},
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
