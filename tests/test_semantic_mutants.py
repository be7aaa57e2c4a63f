"""The semantic mutant catalog stays true to the code: every patch applies to this tree, names
tests that exist, and the recorded result and its docs table are those of this catalog.

Running the mutants themselves is `python -m ledger_properties.semantic_mutants` (minutes, not part of
the suite); here only what keeps the catalog from going stale is checked, in a second or two.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import attrs
import pytest

from ledger_properties.semantic_mutants import report, runner
from ledger_properties.semantic_mutants.catalog import KINDS, Mutant, applies, load

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = load()
RESULT = ROOT / "benchmarks" / "results" / "semantic-mutants.json"
PAGE = ROOT / "docs" / "mutation" / "semantic.md"


def test_the_catalog_holds_at_least_sixty_well_formed_mutants() -> None:
    assert len(MUTANTS) >= 60
    assert len({mutant.id for mutant in MUTANTS}) == len(MUTANTS)
    patches = sorted(path.name for path in MUTANTS[0].patch.parent.glob("*.patch"))
    assert patches == sorted(mutant.patch.name for mutant in MUTANTS), "a patch without an entry, or the reverse"
    for mutant in MUTANTS:
        assert re.fullmatch(r"\d{3}", mutant.id) and re.fullmatch(r"[a-z0-9-]+", mutant.name), mutant
        assert mutant.kind in KINDS, mutant
        assert mutant.description.strip() and mutant.tests, mutant
        assert mutant.equivalent is None or len(mutant.equivalent) > 40, f"{mutant.id}: argue the equivalence"


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda mutant: f"{mutant.id}-{mutant.name}")
def test_every_patch_is_small_and_still_applies(mutant: Mutant) -> None:
    text = mutant.patch.read_text(encoding="utf-8")
    assert text.count("+++ b/") == 1, "one file per mutant"
    changed = [line for line in text.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert 0 < len(changed) <= 8, "a semantic mutant is a small patch"
    assert applies(mutant, ROOT) is None, applies(mutant, ROOT)


def _defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_named_test_exists() -> None:
    for mutant in MUTANTS:
        for test in mutant.tests:
            file, _, name = test.partition("::")
            assert (ROOT / file).is_file(), f"{mutant.id}: no file {file}"
            if name:
                assert name.split("[")[0] in _defined_tests(ROOT / file), f"{mutant.id}: no test {test}"


def test_the_recorded_result_and_its_docs_table_are_those_of_this_catalog() -> None:
    document = json.loads(RESULT.read_text(encoding="utf-8"))
    assert [entry["id"] for entry in document["mutants"]] == [mutant.id for mutant in MUTANTS], \
        "the catalog changed since the recorded run: run python -m ledger_properties.semantic_mutants"
    assert runner.stale(document, MUTANTS, ROOT) == [], \
        "verdicts recorded for other patches or tests: run python -m ledger_properties.semantic_mutants"
    page = PAGE.read_text(encoding="utf-8")
    assert report.with_table(page, report.table(document, MUTANTS)) == page, \
        "the docs table is stale: run python -m ledger_properties.semantic_mutants --docs"


def test_a_patch_that_no_longer_applies_is_reported_never_skipped(tmp_path: Path) -> None:
    stale = tmp_path / "999-stale.patch"
    stale.write_text("--- a/ledger_impl/fingerprint.py\n+++ b/ledger_impl/fingerprint.py\n@@ -1,1 +1,1 @@\n"
                     "-no such line in the file\n+a replacement\n")
    mutant = attrs.evolve(MUTANTS[0], id="999", name="stale", patch=stale)
    [verdict] = runner.run_mutants([mutant], ROOT, baseline=False)
    assert verdict.verdict == runner.NOT_APPLIED


def test_a_rewritten_patch_or_killing_test_makes_its_recorded_verdict_stale(tmp_path: Path) -> None:
    mutant = MUTANTS[0]
    document = {"mutants": [{"id": mutant.id, **runner.digests([mutant], ROOT)[mutant.id]}]}
    assert runner.stale(document, [mutant], ROOT) == []
    rewritten = tmp_path / mutant.patch.name
    rewritten.write_text(mutant.patch.read_text(encoding="utf-8").replace("\n+", "\n+ ", 1))
    assert runner.stale(document, [attrs.evolve(mutant, patch=rewritten)], ROOT) == \
        [f"{mutant.id}: its patch changed since the recorded run"]
    file, _, name = mutant.tests[0].partition("::")
    tree = tmp_path / "tree"
    (tree / file).parent.mkdir(parents=True)
    source = (ROOT / file).read_text(encoding="utf-8")
    (tree / file).write_text(source.replace(f"def {name}(", f"def {name}(  ", 1))
    assert runner.stale(document, [mutant], tree) == [f"{mutant.id}: its killing tests changed since the recorded run"]
    (tree / file).write_text(source + "\n\ndef test_added_elsewhere_in_the_file() -> None:\n    pass\n")
    assert runner.stale(document, [mutant], tree) == [], "an edit outside the named tests is not a change"
