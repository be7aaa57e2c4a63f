"""The negative Z3 theorems' counterexamples replay on a real filesystem.

Each file in counterexamples/z3-*.json, and each one generated afresh from the current Z3
model, is replayed (`ledger_properties.replay`) through a real `Runtime` in a temporary directory: with
its unsound detector the violation step is a Reuse whose output differs from what the command
prints when run, exactly as recorded; with `default_detector()` nothing stale is returned.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from ledger_properties.counterexample import (
    Counterexample,
    CounterexampleError,
    dump_into,
    from_json,
    from_trace,
    load,
    to_json,
)
from ledger_impl.detectors import default_detector
from ledger_properties.replay import load_factory, replay
from ledger_spec.z3_theorems import THEOREMS

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMITTED = sorted((ROOT / "counterexamples").glob("z3-*.json"))
# Negative theorems with a shell trace to replay (the overlap timeline model and the probe's
# model of a read have none).
NEGATIVE = [theorem for theorem in THEOREMS if theorem.kind == "negative" and theorem.check().trace is not None]


def _fresh(theorem) -> Counterexample:
    result = theorem.check()
    assert result.trace is not None, result.model_text
    return from_trace(result.trace, theorem=theorem.name)


def _cases() -> list:
    committed = [pytest.param(lambda path=path: load(path), id=path.name) for path in COMMITTED]
    generated = [pytest.param(lambda theorem=theorem: _fresh(theorem), id=f"fresh-{theorem.name}") for theorem in NEGATIVE]
    return committed + generated


def test_every_negative_theorem_has_a_committed_counterexample() -> None:
    theorems = {load(path).found_by.get("theorem") for path in COMMITTED}
    assert theorems == {theorem.name for theorem in NEGATIVE}


@pytest.mark.parametrize("make", _cases())
def test_stale_read_reproduces_with_the_unsound_detector(make) -> None:
    counterexample = make()
    result = replay(counterexample, load_factory(counterexample.detector))
    assert result.reproduced, result.mismatch
    record = result.records[counterexample.violation.step]
    assert record.verdict == "reuse" and record.output == counterexample.observed.output != counterexample.expected.output


@pytest.mark.parametrize("make", _cases())
def test_default_detector_does_not_reproduce_it(make) -> None:
    counterexample = make()
    result = replay(counterexample, default_detector, fingerprint=True)  # the default system, as shipped
    assert not result.reproduced and all(record.violation is None for record in result.records)
    assert result.records[counterexample.violation.step].output == counterexample.expected.output


# --- the file format ------------------------------------------------------------------------


def _document() -> dict:
    return to_json(_fresh(NEGATIVE[0]))


def test_dump_and_load_round_trip(tmp_path: pathlib.Path) -> None:
    counterexample = _fresh(NEGATIVE[0])
    path = dump_into(counterexample, tmp_path)
    assert path.name == f"{counterexample.id}.json"
    assert load(path) == counterexample


def test_load_rejects_bare_command_strings() -> None:
    """One form of step: an object. (A second loader once accepted bare strings; the two disagreed.)"""
    document = _document()
    document["steps"] = [step["command"] for step in document["steps"]]
    with pytest.raises(CounterexampleError, match=r"steps\[0\] must be an object"):
        from_json(document)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(schema="ledger-counterexample/0"), "schema must be"),
        (lambda d: d.pop("detector"), "is missing field(s): detector"),
        (lambda d: d.update(detector="not a factory"), "MODULE:FACTORY"),
        (lambda d: d["violation"].update(step=7), "violation.step must index steps"),
        (lambda d: d["violation"]["observed"].update(verdict="maybe"), "verdict must be one of"),
        (lambda d: d["violation"]["expected"].update(exit_code="0"), "exit_code must be an integer"),
        (lambda d: d["violation"]["expected"].pop("exit_code"), "violation.expected is missing exit_code"),
        (lambda d: d["setup"]["files"].update({"../escape.txt": "x"}), "key '../escape.txt' contains '..'"),
        (lambda d: d["setup"]["files"].update({"/etc/passwd": "x"}), "key '/etc/passwd' is absolute"),
        (lambda d: d["setup"]["files"].update({".git/hooks/post-commit": "x"}), "is inside .git/"),
        (lambda d: d["setup"].update(outside={"a/../../b": "x"}), "setup.outside key"),
        (lambda d: d["setup"]["files"].update({"a.txt/b": "x"}), "both a file and the directory"),
        (lambda d: d["setup"]["files"].update({"n.txt": 7}), "must be text, got int"),
        (lambda d: d.update(setup="files"), "setup must be an object"),
        (lambda d: d.update(steps=[]), "steps must not be empty"),
        (lambda d: d.update(steps=[{"verdict": "allow"}]), "steps[0] is missing field(s): command"),
        (lambda d: d.update(steps={"command": "ls"}), "steps must be a list"),
        (lambda d: d.update(date="yesterday"), "date must be YYYY-MM-DD"),
        (lambda d: d.update(explanation="two\nlines"), "explanation must be one line"),
        (lambda d: d.update(property="looks-fine"), "property must be one of"),
        (lambda d: d.update(status="maybe"), "status must be one of"),
        (lambda d: d.update(surprise=1), "unknown field(s): surprise"),
    ],
)
def test_invalid_documents_are_rejected_with_the_field_named(change, message: str, tmp_path: pathlib.Path) -> None:
    document = _document()
    change(document)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(CounterexampleError) as raised:
        load(path)
    assert message in str(raised.value)
    assert str(path) in str(raised.value)


def test_load_rejects_a_file_that_is_not_json(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(CounterexampleError, match="not valid JSON"):
        load(path)
