"""`scripts/mutation.py record` and the pieces a mutation record is made of.

A fabricated cosmic-ray session (the tables and columns the script reads) and a verdicts file
stand in for a run, so the rows, the score and the files written are checked without one; the
diffs are in cosmic-ray's form (a unified diff of one line, context around it)."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


mutation = _load("mutation")
mutation_record = mutation.mutation_record  # the one `record` uses, so its errors are the same class


def _diff(line: int, before: str, after: str, context: tuple[str, str] = ("a = 1", "b = 2")) -> str:
    return (f"--- mutation diff ---\n+++ mutation diff +++\n@@ -{line - 1},3 +{line - 1},3 @@\n"
            f" {context[0]}\n-{before}\n+{after}\n {context[1]}\n")


def test_a_mutant_is_described_by_the_tokens_it_replaced_and_its_original_line() -> None:
    assert mutation_record.describe(_diff(5, "    if len(header) < 52:", "    if len(header) >= 52:")) == (
        "`<` -> `>=` in `if len(header) < 52:`")
    assert mutation_record.describe(_diff(9, "    except OSError:", "    except CosmicRayTestingException:")) == (
        "`OSError` -> `CosmicRayTestingException` in `except OSError:`")
    # A token added is shown with the one it went with; a `|` is escaped for the table's cell.
    assert mutation_record.describe(_diff(7, "    return a if b else c", "    return a if not b else c")) == (
        "`b` -> `not b` in `return a if b else c`")
    assert mutation_record.describe(_diff(2, "flags = A | B", "flags = A & B")) == r"`\|` -> `&` in `flags = A \| B`"
    # The same token twice on a line: the one replaced, not the first equal one.
    assert mutation_record.describe(_diff(3, "x = a or b or c", "x = a or b and c")) == "`or` -> `and` in `x = a or b or c`"


def _survivors() -> list[tuple[str, int, str]]:
    return [
        ("j3", 40, _diff(40, "    return n + 1", "    return n - 1")),
        ("j1", 12, _diff(12, "LIMIT = 64", "LIMIT = 65")),
        ("j2", 12, _diff(12, "LIMIT = 64", "LIMIT = 63")),
        ("j4", 50, _diff(50, "    if a and b:", "    if a or b:")),
    ]


VERDICTS = {
    "j1": {"kind": "equivalent", "verdict": "equivalent: only 58 bytes are read"},
    "j2": {"kind": "equivalent", "verdict": "equivalent: only 58 bytes are read"},
    "j3": {"kind": "killed", "verdict": "killed by `test_the_count_is_exact`", "miss": True},
    "j4": {"kind": "alive", "verdict": "alive, judged harmless: both are always true together"},
}


def test_survivors_with_one_verdict_are_one_row_in_line_order() -> None:
    table = mutation_record.rows(_survivors(), VERDICTS)
    assert [(row["line"], row["kind"]) for row in table] == [("12", "equivalent"), ("40", "killed"), ("50", "alive")]
    assert table[0]["mutant"] == "`64` -> `65` in `LIMIT = 64`; `64` -> `63` in `LIMIT = 64`"
    assert table[1]["miss"] is True and "miss" not in table[0]


def test_a_row_names_four_mutants_and_counts_the_rest() -> None:
    survivors = [(f"j{n}", n, _diff(n, f"x = {n}", f"x = {n + 1}")) for n in range(2, 8)]
    table = mutation_record.rows(survivors, {job: VERDICTS["j1"] for job, _, _ in survivors})
    assert len(table) == 1 and table[0]["line"] == "2, 3, 4, 5, 6, 7"
    assert table[0]["mutant"].count(" -> ") == 4 and table[0]["mutant"].endswith(" (and 2 more)")


@pytest.mark.parametrize("verdicts, complaint", [
    ({job: VERDICTS[job] for job in ("j1", "j2", "j3")}, "without a verdict: ['j4']"),
    (VERDICTS | {"j9": VERDICTS["j1"]}, "verdicts of no survivor: ['j9']"),
    (VERDICTS | {"j4": {"kind": "dead", "verdict": "x"}}, "needs a kind"),
    (VERDICTS | {"j4": {"kind": "alive", "verdict": "  "}}, "needs a kind"),
    (VERDICTS | {"j1": VERDICTS["j1"] | {"miss": True}}, "only a killed mutant"),
])
def test_a_record_that_does_not_account_for_every_survivor_is_refused(verdicts, complaint: str) -> None:
    with pytest.raises(mutation_record.RecordError, match=complaint.replace("[", r"\[").replace("]", r"\]")):
        mutation_record.rows(_survivors(), verdicts)


def test_the_score_counts_new_kills_and_leaves_equivalents_and_incompetents_out() -> None:
    counts = {"mutants": 21, "killed": 14, "timeout": 1, "survived": 4, "incompetent": 2, "pending": 0}
    row = mutation_record.score_row("ledger_impl/x.py", counts, VERDICTS)
    # 19 mutants; 15 killed by its tests, 1 by a new one; 2 equivalent: 16 of 17, 1 alive.
    assert row == {
        "module": "`ledger_impl/x.py` (measured)", "mutants": 19, "killed by the module's tests": 15,
        "survivors killed by a new test": 1, "equivalent": 2, "not run yet": 0,
        "score (non-equivalent)": "94.1%: 16 of 17, 1 alive (raw 78.9%)",
    }
    everything = VERDICTS | {"j4": {"kind": "killed", "verdict": "killed by `test_y`"}}
    assert mutation_record.score_row("m.py", counts, everything)["score (non-equivalent)"] == "100% (raw 78.9%)"


def _session(path: Path, survivors: list[tuple[str, int, str]], killed: int) -> None:
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE work_items (job_id TEXT)")
        db.execute("CREATE TABLE work_results (job_id TEXT, worker_outcome TEXT, test_outcome TEXT, output TEXT, diff TEXT)")
        db.execute("CREATE TABLE mutation_specs (job_id TEXT, operator_name TEXT, start_pos_row INTEGER)")
        results = [(job, "SURVIVED", line, diff) for job, line, diff in survivors]
        results += [(f"k{n}", "KILLED", 1, "") for n in range(killed)]
        for job, outcome, line, diff in results:
            db.execute("INSERT INTO work_items VALUES (?)", (job,))
            db.execute("INSERT INTO work_results VALUES (?, 'NORMAL', ?, '', ?)", (job, outcome, diff))
            db.execute("INSERT INTO mutation_specs VALUES (?, 'core/Op', ?)", (job, line))


def _published(root: Path) -> tuple[Path, Path]:
    (root / "scripts").mkdir(parents=True)
    (root / "benchmarks" / "results").mkdir(parents=True)
    survivors = root / "scripts" / "mutation_survivors.json"
    score = root / "benchmarks" / "results" / "mutation-score.json"
    survivors.write_text(json.dumps({"about": "a", "tables": [{"module": "other.py", "table": 1, "rows": []}]}, indent=1) + "\n")
    score.write_text(json.dumps({"id": "mutation-score", "rows": [
        {"module": "`other.py`", "mutants": 1},
        {"module": "`ledger_impl/probe/rendering.py` (measured, on an older file)", "mutants": 2},
    ]}, indent=2) + "\n")
    return survivors, score


def test_record_writes_the_table_and_the_row_and_a_second_record_replaces_them(tmp_path: Path) -> None:
    module = "ledger_impl/probe/rendering.py"
    _session(tmp_path / "work" / mutation._slug(module) / "session.sqlite", _survivors(), killed=10)
    survivors_file, score_file = _published(tmp_path / "root")
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text(json.dumps(VERDICTS))
    for source in ("first run", "second run"):
        mutation.record(module, verdicts, source, work=tmp_path / "work", root=tmp_path / "root")
    tables = json.loads(survivors_file.read_text())["tables"]
    assert [table["module"] for table in tables] == ["other.py", module]
    assert tables[1]["source"] == "second run" and len(tables[1]["rows"]) == 3
    rows = json.loads(score_file.read_text())["rows"]
    assert [row["module"] for row in rows] == ["`other.py`", f"`{module}` (measured)"]
    assert rows[1]["score (non-equivalent)"] == "91.7%: 11 of 12, 1 alive (raw 71.4%)"
    assert score_file.read_text().startswith('{\n  "id"') and survivors_file.read_text().startswith('{\n "about"')


def test_record_writes_nothing_while_a_survivor_is_unsettled(tmp_path: Path) -> None:
    module = "ledger_impl/probe/rendering.py"
    _session(tmp_path / "work" / mutation._slug(module) / "session.sqlite", _survivors(), killed=1)
    survivors_file, score_file = _published(tmp_path / "root")
    before = survivors_file.read_text(), score_file.read_text()
    verdicts = tmp_path / "verdicts.json"
    verdicts.write_text(json.dumps({job: VERDICTS[job] for job in ("j1", "j2")}))
    with pytest.raises(SystemExit, match="nothing recorded"):
        mutation.record(module, verdicts, "run", work=tmp_path / "work", root=tmp_path / "root")
    assert (survivors_file.read_text(), score_file.read_text()) == before


def test_a_failed_line_names_the_test_that_killed_the_mutant() -> None:
    assert mutation.killed_by("FAILED tests/test_x.py::test_reads_it[case-1] - AssertionError") == "killed by `test_reads_it`"
    assert mutation.killed_by("FAILED tests/test_x.py::Machine::test_runs") == "killed by `test_runs`"


def test_a_mutant_s_diff_is_applied_where_its_header_says(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text("a = 1\nLIMIT = 64\nb = 2\nLIMIT = 64\n")
    mutation._apply(_diff(4, "LIMIT = 64", "LIMIT = 65", context=("b = 2", "")), target)
    assert target.read_text() == "a = 1\nLIMIT = 64\nb = 2\nLIMIT = 65\n"
    # The diff of a file's last line carries a context line past its end (why not `patch`).
    target.write_text("a = 1\nx = 0")
    mutation._apply("@@ -1,3 +1,3 @@\n a = 1\n-x = 0\n+x = 1\n \n", target)
    assert target.read_text() == "a = 1\nx = 1"


def test_a_diff_whose_lines_are_not_where_it_says_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text("a = 1\nLIMIT = 64\nb = 2\n")
    with pytest.raises(SystemExit, match="not at line 3"):
        mutation._apply(_diff(3, "LIMIT = 64", "LIMIT = 65"), target)
    assert target.read_text() == "a = 1\nLIMIT = 64\nb = 2\n"


def test_the_totals_sum_the_rows_and_name_the_listed_modules_not_run() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import docs_mutation

    def row(module: str, mutants: int, killed: int, new: int, equivalent: int, score: str) -> dict[str, object]:
        return {"module": f"`{module}` (measured)", "mutants": mutants, "killed by the module's tests": killed,
                "survivors killed by a new test": new, "equivalent": equivalent, "not run yet": 0, "score (non-equivalent)": score}

    score = {"rows": [row("a.py", 100, 80, 10, 5, "94.7%: 90 of 95, 5 alive (raw 80%)"),
                      row("b.py", 20, 19, 0, 1, "100% (raw 95%)")]}
    sums = docs_mutation.totals(score, ["a.py", "b.py", "c.py"])
    assert (sums["modules"], sums["mutants"], sums["equivalent"], sums["killed"], sums["non_equivalent"]) == (2, 120, 6, 109, 114)
    assert (sums["not_killed"], sums["not_run"], sums["percent"]) == (5, ["c.py"], "95.61%")
    sentence = docs_mutation.render_totals(sums)
    assert "109 of the 114 non-equivalent mutants killed (95.61%); the 5 not killed are alive" in sentence
    assert sentence.endswith("not run yet: `c.py`.")


def test_the_figure_s_scope_names_what_it_leaves_out() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import docs_mutation

    sums = {"modules": 3, "not_run": ["c.py"], "pending": 0}
    assert docs_mutation.scope(sums) == "3 modules (1 listed module not yet run)"
    assert docs_mutation.scope(sums | {"not_run": ["c.py", "d.py"], "pending": 12}) == (
        "3 modules (2 listed modules not yet run, 12 mutants not run yet)")
    assert docs_mutation.scope(sums | {"not_run": []}) == "3 modules (every listed module)"
