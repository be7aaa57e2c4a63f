"""The survivors that a new test killed name tests that exist.

`scripts/mutation_survivors.json` says, for every survivor of the mutation runs whose verdict is
`killed`, which test was added to kill it (the tables of `docs/mutation/survivors.md` and the
root `mutation-survivors.md` are generated from it). A renamed or deleted test would leave the
record pointing at nothing, and the survivor unguarded without anyone noticing. Names are as the
notes write them: whole (`test_x`, `tests/f.py::test_x[case]`), or shortened to a prefix
(`test_render_spells...`), a suffix (`...not_test_suites_are_runs`) or a middle
(`...optimistic_mode...`); a test file named by its module (`test_event_detector`) counts too.
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


def defined_tests(root: Path = ROOT / "tests") -> set[str]:
    """Every test function and every test module name under `root`."""
    names = {path.stem for path in root.rglob("test_*.py")}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                names.add(node.name)
    return names


def named_tests(verdict: str) -> list[str]:
    """The test names a verdict quotes, as written (`...` marks a shortened end)."""
    found = []
    for quoted in re.findall(r"`([^`]+)`", verdict):
        name = quoted.split("::")[-1].split("[")[0].strip()
        if re.fullmatch(r"(\.\.\.)?\w+(\.\.\.)?", name) and ("test_" in name or name.startswith("...")) and name.strip("."):
            found.append(name)
    return found


def resolves(name: str, tests: set[str]) -> bool:
    core = name.strip(".")
    if name.startswith("...") and name.endswith("..."):
        return any(core in test for test in tests)
    if name.startswith("..."):
        return any(test.endswith(core) for test in tests)
    if name.endswith("..."):
        return any(test.startswith(core) for test in tests)
    return name in tests


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
