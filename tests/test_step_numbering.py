"""One step numbering, from 1, everywhere a user sees a step (docs/reference/step-numbering.md).

The counterexample files say `ledger-counterexample/2` and number `violation.step` from 1; files
written before (`/1`, numbered from 0) still load, to the same counterexample. The Reuse note,
the nudge, the stale reasons and the view number the first command 1.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from ledger_spec.policy import Policy
from ledger_spec.values import Allow, Changes
from ledger_impl.classifier import classify
from ledger_impl.ledger import Ledger
from ledger_properties import counterexample as cx
from ledger_properties.findings import stale_read

REPO = pathlib.Path(__file__).resolve().parent.parent
FILES = sorted((REPO / "counterexamples").glob("*.json"))


def test_written_files_number_the_violation_from_1() -> None:
    document = json.loads(FILES[0].read_text())
    loaded = cx.loads(FILES[0].read_bytes())
    written = cx.to_json(loaded)
    assert written["schema"] == "ledger-counterexample/2"
    assert written["violation"]["step"] == loaded.violation.step + 1
    assert written["steps"][written["violation"]["step"] - 1]["command"] == written["violation"].get("command", written["steps"][-1]["command"])
    assert cx.from_json(written) == loaded
    assert document["schema"] == "ledger-counterexample/2"  # the shipped files are migrated


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_a_file_of_the_old_schema_loads_to_the_same_counterexample(path: pathlib.Path) -> None:
    current = json.loads(path.read_text())
    old = {**current, "schema": "ledger-counterexample/1", "violation": {**current["violation"], "step": current["violation"]["step"] - 1}}
    assert cx.from_json(old) == cx.from_json(current)


def test_step_0_is_refused_in_the_new_schema_and_the_message_counts_from_1() -> None:
    document = json.loads(FILES[0].read_text())
    steps = len(document["steps"])
    for bad in (0, steps + 1):
        with pytest.raises(cx.CounterexampleError, match=rf"violation.step must index steps \(1\.\.{steps}\), got {bad}"):
            cx.from_json({**document, "violation": {**document["violation"], "step": bad}})


def test_a_dump_into_a_missing_directory_creates_it(tmp_path: pathlib.Path) -> None:
    loaded = cx.load(FILES[0])
    written = cx.dump_into(loaded, tmp_path / "new" / "dir")
    assert written == tmp_path / "new" / "dir" / f"{loaded.id}.json" and cx.load(written) == loaded


def test_the_reuse_note_the_nudge_and_the_view_number_the_first_command_1() -> None:
    ledger = Ledger(Policy(nudge_cooldown=0))
    read, test = classify("cat a.txt"), classify("pytest -q")
    for command, output in ((read, "a\n"), (test, "1 passed\n")):  # steps 1 and 2
        ledger.advance(command, ledger.govern(command), output, 0, Changes())
    decision = ledger.govern(read)  # step 3 is served step 1's output
    assert "reused from step 1:" in decision.note, decision.note
    nudge = ledger.govern(test)
    assert "already ran at step 2" in nudge.note, nudge.note
    ledger.advance(classify("sed -i s/a/b/ a.txt"), Allow(), "", 0, Changes(frozenset({"a.txt"})))  # step 3
    view = ledger.render()
    assert view.startswith("[ledger] step 4;") and "a.txt@3" in view and "@1 cat a.txt [stale: a.txt changed at step 3]" in view, view


def test_a_finding_names_the_read_that_would_go_stale() -> None:
    blind = cx.load(REPO / "counterexamples" / "stat-only-reuse-is-fresh-170810dc2d.json")
    read = stale_read(blind)
    assert read is not None and (read.file, read.step, read.served, read.after_step) == ("b.txt", 3, True, 2)
    assert read.command == "cat -n b.txt" and "step 3 `cat -n b.txt` was served a stale read of b.txt" in read.sentence()
    # A miss with an earlier read of the missed file: that read is the one that goes stale.
    missed = cx.load(REPO / "counterexamples" / "watchman-by-name-detector-covers-changes-d4b01bc6ba.json")
    with_read = cx.Counterexample(**{**{f.name: getattr(missed, f.name) for f in cx.attrs.fields(cx.Counterexample)},
                                     "steps": (cx.Step("cat tests/fixture.txt"), *missed.steps),
                                     "violation": cx.attrs.evolve(missed.violation, step=missed.violation.step + 1)})
    read = stale_read(with_read)
    assert read is not None and (read.file, read.step, read.command, read.served, read.after_step) == (
        "tests/fixture.txt", 1, "cat tests/fixture.txt", False, 2)
    # Without one, the finding still names the file and the step after which a read is stale.
    read = stale_read(missed)
    assert read is not None and (read.file, read.step, read.after_step) == ("tests/fixture.txt", None, 1)
    assert read.sentence().startswith("a read of tests/fixture.txt before step 1 (`ln -f tests/fixture.txt b.txt`) (e.g. `cat tests/fixture.txt`)")
