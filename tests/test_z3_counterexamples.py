"""The negative Z3 theorems' counterexamples replay on a real filesystem.

Each file in counterexamples/z3-*.json, and each one generated afresh from the current Z3
model, is run step by step through a real `Runtime` in a temporary directory: with its unsound
detector the violation step is a Reuse whose output differs from what the command prints when
run (the stale read reproduces); with `default_detector()` nothing stale is returned.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import subprocess

import pytest

from properties.counterexample import (
    Counterexample,
    CounterexampleError,
    dump,
    from_json,
    from_trace,
    load,
    to_json,
)
from ledger_impl.detectors import default_detector
from ledger_impl.runtime import Runtime
from ledger_spec.z3_theorems import THEOREMS

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMITTED = sorted((ROOT / "counterexamples").glob("z3-*.json"))
NEGATIVE = [theorem for theorem in THEOREMS if theorem.kind == "negative"]


def _factory(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _materialize(counterexample: Counterexample, root: pathlib.Path) -> None:
    for relative, text in counterexample.files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _run_for_real(command: str, root: pathlib.Path) -> tuple[str, int]:
    done = subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr, done.returncode


def replay(
    counterexample: Counterexample, detector: object, root: pathlib.Path, *, fingerprint: bool = True
) -> tuple[str, str, str]:
    """Run the steps up to the violation through a Runtime; return (verdict, output the agent
    got, output running the command at that point really prints). The theorems are about the
    counters, so the unsound detector's replay runs without the fingerprint, which would
    otherwise catch the edit the detector missed."""
    _materialize(counterexample, root)
    runtime = Runtime(root, detector=detector, fingerprint=fingerprint)
    for command in counterexample.commands[: counterexample.violation_step]:
        runtime.step(command)
    command = counterexample.commands[counterexample.violation_step]
    step = runtime.step(command)
    real_output, _ = _run_for_real(command, root)  # reads change nothing, so running it again is safe
    return step.verdict, step.output, real_output


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
def test_stale_read_reproduces_with_the_unsound_detector(make, tmp_path: pathlib.Path) -> None:
    counterexample = make()
    verdict, served, real = replay(counterexample, _factory(counterexample.detector)(), tmp_path, fingerprint=False)
    print(f"{counterexample.id}: verdict={verdict} served={served!r} real={real!r}")
    assert verdict == "reuse"
    assert served == counterexample.observed.output
    assert real == counterexample.expected.output
    assert served != real


@pytest.mark.parametrize("make", _cases())
def test_default_detector_does_not_reproduce_it(make, tmp_path: pathlib.Path) -> None:
    counterexample = make()
    verdict, served, real = replay(counterexample, default_detector(), tmp_path)
    print(f"{counterexample.id}: verdict={verdict} served={served!r} real={real!r}")
    assert served == real == counterexample.expected.output


# --- the file format ------------------------------------------------------------------------


def _document() -> dict:
    return to_json(_fresh(NEGATIVE[0]))


def test_dump_and_load_round_trip(tmp_path: pathlib.Path) -> None:
    counterexample = _fresh(NEGATIVE[0])
    path = dump(counterexample, tmp_path)
    assert path.name == f"{counterexample.id}.json"
    assert load(path) == counterexample


def test_load_accepts_bare_command_strings() -> None:
    document = _document()
    document["steps"] = [step["command"] for step in document["steps"]]
    assert from_json(document).commands == tuple(document["steps"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(schema="ledger-counterexample/0"), "schema must be"),
        (lambda d: d.pop("detector"), "missing field(s): detector"),
        (lambda d: d.update(detector="not a factory"), "MODULE:FACTORY"),
        (lambda d: d["violation"].update(step=7), "violation.step must index steps"),
        (lambda d: d["violation"]["observed"].update(verdict="maybe"), "verdict must be one of"),
        (lambda d: d["violation"]["expected"].pop("exit_code"), "exit_code must be an integer"),
        (lambda d: d["setup"]["files"].update({"../escape.txt": "x"}), "not relative and inside"),
        (lambda d: d.update(steps=[]), "steps must not be empty"),
        (lambda d: d.update(steps=[{"verdict": "allow"}]), "steps[0] must be a command string"),
        (lambda d: d.update(date="yesterday"), "date must be YYYY-MM-DD"),
        (lambda d: d.update(explanation="two\nlines"), "explanation is one line"),
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
