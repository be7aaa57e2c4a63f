"""The survivors that a new test killed name tests that exist, and the real misses are told
where a reader of the tests finds them.

`scripts/mutation_survivors.json` says, for every survivor of the mutation runs whose verdict is
`killed`, which test was added to kill it (the tables of `docs/mutation/survivors.md` and the
root `mutation-survivors.md` are generated from it). A renamed or deleted test would leave the
record pointing at nothing, and the survivor unguarded without anyone noticing. Names are as the
notes write them: whole (`test_x`, `tests/f.py::test_x[case]`), or shortened to a prefix
(`test_render_spells...`), a suffix (`...not_test_suites_are_runs`) or a middle
(`...optimistic_mode...`); a test file named by its module (`test_event_detector`) counts too.

A row marked `miss` records a mutant that let a change go unreported, took a writer for a read or
made a stale Reuse possible: one of the tests that kill it says so in its docstring, naming the
module and the line.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SURVIVORS = ROOT / "scripts" / "mutation_survivors.json"


def docstrings_of_tests(root: Path = ROOT / "tests") -> dict[str, str]:
    """Every test function under `root`, and every test module, with its docstring ('' for none)."""
    found = {path.stem: "" for path in root.rglob("test_*.py")}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                found[node.name] = found.get(node.name, "") + (ast.get_docstring(node) or "")
    return found


def defined_tests(root: Path = ROOT / "tests") -> set[str]:
    return set(docstrings_of_tests(root))


def named_tests(verdict: str) -> list[str]:
    """The test names a verdict quotes, as written (`...` marks a shortened end)."""
    found = []
    for quoted in re.findall(r"`([^`]+)`", verdict):
        name = quoted.split("::")[-1].split("[")[0].strip()
        if re.fullmatch(r"(\.\.\.)?\w+(\.\.\.)?", name) and ("test_" in name or name.startswith("...")) and name.strip("."):
            found.append(name)
    return found


def candidates(name: str, tests: Iterable[str]) -> list[str]:
    """The tests a name as the notes write it may stand for."""
    core = name.strip(".")
    if name.startswith("...") and name.endswith("..."):
        return [test for test in tests if core in test]
    if name.startswith("..."):
        return [test for test in tests if test.endswith(core)]
    if name.endswith("..."):
        return [test for test in tests if test.startswith(core)]
    return [name] if name in tests else []


def resolves(name: str, tests: set[str]) -> bool:
    return bool(candidates(name, tests))


def undocumented_misses(tables: Iterable[Mapping[str, Any]], docstrings: Mapping[str, str]) -> list[str]:
    """`module line` for every miss that no test killing it describes (module path and line in its docstring)."""
    missing = []
    for table in tables:
        for row in table["rows"]:
            if not row.get("miss"):
                continue
            line = re.match(r"\d+", row["line"]).group()  # type: ignore[union-attr]
            killers = [test for name in named_tests(row["verdict"]) for test in candidates(name, docstrings)]
            if not any(table["module"] in docstrings[test] and re.search(rf"\b{line}\b", docstrings[test])
                       for test in killers):
                missing.append(f"{table['module']} {row['line']}")
    return missing


def unresolved(tables: Iterable[Mapping[str, Any]], tests: set[str]) -> list[str]:
    """`module line: name` for every name a killed survivor's verdict gives that no test has."""
    return [f"{table['module']} {row['line']}: {name}"
            for table in tables for row in table["rows"] if row["kind"] == "killed"
            for name in named_tests(row["verdict"]) if not resolves(name, tests)]


def test_every_test_a_killed_survivor_names_exists() -> None:
    data = json.loads(SURVIVORS.read_text(encoding="utf-8"))
    killed = [row for table in data["tables"] for row in table["rows"] if row["kind"] == "killed"]
    assert sum(bool(named_tests(row["verdict"])) for row in killed) > 300  # the names are read at all
    assert unresolved(data["tables"], defined_tests()) == []


def test_each_miss_is_described_by_a_test_that_kills_it() -> None:
    data = json.loads(SURVIVORS.read_text(encoding="utf-8"))
    assert sum(bool(row.get("miss")) for table in data["tables"] for row in table["rows"]) >= 30
    assert undocumented_misses(data["tables"], docstrings_of_tests()) == []


def test_an_undescribed_miss_is_reported(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(
        'def test_told():\n    """Pins `ledger_impl/x.py` line 12: a miss."""\n\n\ndef test_silent():\n    pass\n', encoding="utf-8")
    tables = [{"module": "ledger_impl/x.py", "rows": [
        {"line": "12, 13", "kind": "killed", "miss": True, "verdict": "killed by `test_told`"},
        {"line": "14", "kind": "killed", "miss": True, "verdict": "killed by `test_silent` and `test_told`"},
        {"line": "15", "kind": "killed", "verdict": "killed by `test_silent`"},
    ]}]
    assert undocumented_misses(tables, docstrings_of_tests(tmp_path)) == ["ledger_impl/x.py 14"]


def test_a_renamed_test_is_reported(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text("def test_reads_a_range():\n    pass\n", encoding="utf-8")
    tables = [{"module": "ledger_spec/lines.py", "rows": [
        {"line": "1", "kind": "killed", "verdict": "killed by `test_reads_a_range` and `test_reads_a_range_twice`"},
        {"line": "2", "kind": "killed", "verdict": "killed by `...a_range` and `test_reads...` and `...reads_a...`"},
        {"line": "3", "kind": "killed", "verdict": "killed by `tests/test_sample.py::test_gone[case]` and `test_sample`"},
        {"line": "4", "kind": "equivalent", "verdict": "equivalent: `test_nowhere` is prose here"},
    ]}]
    assert unresolved(tables, defined_tests(tmp_path)) == [
        "ledger_spec/lines.py 1: test_reads_a_range_twice", "ledger_spec/lines.py 3: test_gone"]
