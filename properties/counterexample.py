"""Counterexample files (schema "ledger-counterexample/1", see counterexamples/README.md).

A counterexample is a workspace, a list of shell commands, and the step at which govern did
something unsafe, with the detector (`MODULE:FACTORY`) it happened against. `load` validates a
file and says exactly what is wrong with it; `dump` writes one; `from_trace` turns the trace a
Z3 model describes (`ledger_spec.z3_model.AbstractTrace`) into a concrete session that a real
Runtime with the matching unsound detector can replay.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import re
import shlex
from typing import Any, Mapping

import attrs

from ledger_spec.values import Category, Verdict
from ledger_spec.z3_model import AbstractTrace

SCHEMA = "ledger-counterexample/1"

OPTIMISTIC_RULES = "ledger_impl.detectors.unsound:optimistic_rules"
"""The rules detector that reports 'no change' for what it cannot see into (`python3 fix.py`):
it misses a script's writes whether the script runs alone (it says nothing at all) or after an
edit it does understand (it names that edit's file and omits the script's)."""

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DETECTOR = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class CounterexampleError(ValueError):
    """A counterexample file or value that does not follow the schema."""


@attrs.frozen
class CounterexampleStep:
    """One command of the session; `verdict`/`exit_code` are what the finder saw, if recorded."""

    command: str
    verdict: str | None = None
    exit_code: int | None = None


@attrs.frozen
class Outcome:
    output: str
    exit_code: int
    verdict: str | None = None


@attrs.frozen
class Counterexample:
    id: str
    property: str
    explanation: str
    detector: str
    files: Mapping[str, str]
    steps: tuple[CounterexampleStep, ...]
    violation_step: int
    expected: Outcome
    observed: Outcome
    found_by: Mapping[str, Any]
    date: str
    outside: Mapping[str, str] = attrs.field(factory=dict)
    git: bool | None = None

    def __attrs_post_init__(self) -> None:
        _validate(self)

    @property
    def commands(self) -> tuple[str, ...]:
        return tuple(step.command for step in self.steps)


def _fail(where: str, message: str) -> None:
    raise CounterexampleError(f"{where}: {message}")


def _validate(ce: Counterexample) -> None:
    where = f"counterexample {ce.id!r}"
    if not isinstance(ce.id, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", ce.id):
        _fail(where, "id must be a file-name-safe string (letters, digits, '.', '_', '-')")
    for name in ("property", "explanation"):
        value = getattr(ce, name)
        if not isinstance(value, str) or not value.strip():
            _fail(where, f"{name} must be a non-empty string")
    if "\n" in ce.explanation:
        _fail(where, "explanation is one line")
    if not isinstance(ce.detector, str) or not _DETECTOR.match(ce.detector):
        _fail(where, f"detector must look like MODULE:FACTORY, got {ce.detector!r}")
    for label, files in (("setup.files", ce.files), ("setup.outside", ce.outside)):
        if not isinstance(files, Mapping):
            _fail(where, f"{label} must be an object of path -> text")
        for path, text in files.items():
            if not isinstance(path, str) or not path or path.startswith("/") or ".." in path.split("/"):
                _fail(where, f"{label} has a path that is not relative and inside: {path!r}")
            if not isinstance(text, str):
                _fail(where, f"{label}[{path!r}] must be text, got {type(text).__name__}")
    if not ce.steps:
        _fail(where, "steps must not be empty")
    for index, step in enumerate(ce.steps):
        if not isinstance(step.command, str) or not step.command.strip():
            _fail(where, f"steps[{index}] has no command")
    if not isinstance(ce.violation_step, int) or not 0 <= ce.violation_step < len(ce.steps):
        _fail(where, f"violation.step must index steps (0..{len(ce.steps) - 1}), got {ce.violation_step!r}")
    if not isinstance(ce.found_by, Mapping) or not isinstance(ce.found_by.get("tool"), str):
        _fail(where, "found_by must be an object with a 'tool'")
    if not isinstance(ce.date, str) or not _DATE.match(ce.date):
        _fail(where, f"date must be YYYY-MM-DD, got {ce.date!r}")


# --- JSON -----------------------------------------------------------------------------------


def _outcome(data: object, where: str, *, needs_verdict: bool) -> Outcome:
    if not isinstance(data, Mapping):
        raise CounterexampleError(f"{where} must be an object with output and exit_code")
    output, exit_code, verdict = data.get("output"), data.get("exit_code"), data.get("verdict")
    if not isinstance(output, str):
        raise CounterexampleError(f"{where}.output must be a string")
    if not isinstance(exit_code, int) or isinstance(exit_code, bool):
        raise CounterexampleError(f"{where}.exit_code must be an integer")
    if needs_verdict and verdict not in {v.value for v in Verdict}:
        raise CounterexampleError(f"{where}.verdict must be one of allow, reuse, nudge, got {verdict!r}")
    return Outcome(output, exit_code, verdict)


def _step(data: object, index: int) -> CounterexampleStep:
    # A step is a command string, or an object with "command" and what the finder saw.
    if isinstance(data, str):
        return CounterexampleStep(data)
    if isinstance(data, Mapping) and isinstance(data.get("command"), str):
        exit_code = data.get("exit_code")
        return CounterexampleStep(data["command"], data.get("verdict"), exit_code if isinstance(exit_code, int) else None)
    raise CounterexampleError(f"steps[{index}] must be a command string or an object with a 'command'")


def from_json(document: Mapping[str, Any]) -> Counterexample:
    """Validate and convert a parsed counterexample document."""
    if not isinstance(document, Mapping):
        raise CounterexampleError("a counterexample is a JSON object")
    if document.get("schema") != SCHEMA:
        raise CounterexampleError(f"schema must be {SCHEMA!r}, got {document.get('schema')!r}")
    required = ("id", "property", "explanation", "detector", "setup", "steps", "violation", "found_by", "date")
    missing = [name for name in required if name not in document]
    if missing:
        raise CounterexampleError(f"missing field(s): {', '.join(missing)}")
    setup, violation, steps = document["setup"], document["violation"], document["steps"]
    if not isinstance(setup, Mapping) or not isinstance(setup.get("files"), Mapping):
        raise CounterexampleError("setup must be an object with 'files'")
    if not isinstance(steps, list):
        raise CounterexampleError("steps must be a list")
    if not isinstance(violation, Mapping) or not isinstance(violation.get("step"), int):
        raise CounterexampleError("violation must be an object with an integer 'step'")
    return Counterexample(
        id=document["id"],
        property=document["property"],
        explanation=document["explanation"],
        detector=document["detector"],
        files=dict(setup["files"]),
        outside=dict(setup.get("outside", {})),
        git=setup.get("git"),
        steps=tuple(_step(step, index) for index, step in enumerate(steps)),
        violation_step=violation["step"],
        expected=_outcome(violation.get("expected"), "violation.expected", needs_verdict=False),
        observed=_outcome(violation.get("observed"), "violation.observed", needs_verdict=True),
        found_by=dict(document["found_by"]),
        date=document["date"],
    )


def to_json(counterexample: Counterexample) -> dict[str, Any]:
    setup: dict[str, Any] = {"files": dict(counterexample.files)}
    if counterexample.outside:
        setup["outside"] = dict(counterexample.outside)
    if counterexample.git is not None:
        setup["git"] = counterexample.git
    # Steps are written as objects, the form `ledger replay` and the safety hunt read; `load`
    # also accepts bare command strings.
    steps = [{k: v for k, v in attrs.asdict(step).items() if v is not None} for step in counterexample.steps]
    observed = {"output": counterexample.observed.output, "exit_code": counterexample.observed.exit_code,
                "verdict": counterexample.observed.verdict}
    return {
        "schema": SCHEMA,
        "id": counterexample.id,
        "property": counterexample.property,
        "explanation": counterexample.explanation,
        "detector": counterexample.detector,
        "setup": setup,
        "steps": steps,
        "violation": {
            "step": counterexample.violation_step,
            "expected": {"output": counterexample.expected.output, "exit_code": counterexample.expected.exit_code},
            "observed": observed,
        },
        "found_by": dict(counterexample.found_by),
        "date": counterexample.date,
    }


def load(path: str | pathlib.Path) -> Counterexample:
    """Read and validate a counterexample file; errors name the file and the field."""
    path = pathlib.Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CounterexampleError(f"{path}: not valid JSON: {error}") from error
    try:
        return from_json(document)
    except CounterexampleError as error:
        raise CounterexampleError(f"{path}: {error}") from error


def dump(counterexample: Counterexample, path: str | pathlib.Path) -> pathlib.Path:
    """Write `counterexample` to `path` (a directory gets `<id>.json`); return the file."""
    path = pathlib.Path(path)
    if path.is_dir():
        path = path / f"{counterexample.id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(counterexample), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


# --- from a Z3 trace --------------------------------------------------------------------------

EDIT_SUFFIX = " (edited)"
"""What every concrete edit appends to each line: `sed -i 's/$/ (edited)/'` for a change the
detector sees, the same rewrite by a Python script for one it does not."""

_EXPLANATIONS = {
    "omits-changed-key": "an edit chained with a script is reported by its sed part only; the "
    "script's write goes unreported and the next read of that file is served stale",
    "opaque-as-no-change": "a script that rewrites a file is reported as changing nothing, so "
    "the next read of that file is served stale",
}


def _file_name(key: str) -> str:
    return f"{key}.txt"


def _edited(text: str) -> str:
    return text.replace("\n", EDIT_SUFFIX + "\n")


def _script(names: list[str]) -> str:
    return (
        "import pathlib\n"
        f"for name in {names!r}:\n"
        "    path = pathlib.Path(name)\n"
        f"    path.write_text(path.read_text().replace('\\n', {EDIT_SUFFIX + chr(10)!r}))\n"
    )


def from_trace(
    trace: AbstractTrace,
    *,
    theorem: str,
    detector: str = OPTIMISTIC_RULES,
    date: datetime.date | None = None,
) -> Counterexample:
    """A concrete session for a stale-reuse trace found by Z3.

    Keys become `<key>.txt` files holding one line. A read is `cat FILE`. A step that changed
    keys edits the ones its report names with `sed -i` (which the rules detector sees) and the
    ones it omits with `python3 fix.py` (which `optimistic_rules` reports as no change); the
    two run joined by `&&`. A step that changed nothing is `true`.
    """
    contents = {_file_name(key): f"contents of {_file_name(key)}\n" for key in trace.keys}
    files = dict(contents)
    commands: list[str] = []
    outputs: dict[int, str] = {}
    edit_steps = [i for i, step in enumerate(trace.steps) if step.category not in (Category.READ, Category.SEARCH)]
    for index, step in enumerate(trace.steps):
        if step.unknown:
            raise CounterexampleError(f"step {index} of the trace reports unknown scope: nothing is stale after it")
        if step.category in (Category.READ, Category.SEARCH):
            if step.target is None or step.target == "." or step.changed:
                raise CounterexampleError(f"step {index}: only plain file reads that change nothing are concretized")
            name = _file_name(step.target)
            commands.append(f"cat {shlex.quote(name)}")
            outputs[index] = contents[name]
            continue
        seen = [_file_name(key) for key in step.changed if key in step.reported]
        unseen = [_file_name(key) for key in step.changed if key not in step.reported]
        if set(step.reported) - set(step.changed):
            raise CounterexampleError(f"step {index}: the report names keys that did not change")
        parts = [f"sed -i 's/$/{EDIT_SUFFIX}/' " + " ".join(shlex.quote(name) for name in seen)] if seen else []
        if unseen:
            script = "fix.py" if len(edit_steps) == 1 else f"fix_{index}.py"
            files[script] = _script(unseen)
            parts.append(f"python3 {script}")
        commands.append(" && ".join(parts) or "true")
        for name in seen + unseen:
            contents[name] = _edited(contents[name])
    violation = trace.steps[trace.violation_step]
    if violation.verdict is not Verdict.REUSE or violation.reused_step is None or violation.target is None:
        raise CounterexampleError("the trace's violation step is not a Reuse of a file read")
    name = _file_name(violation.target)
    return Counterexample(
        id=f"z3-{theorem}",
        property="reuse-is-fresh",
        explanation=_EXPLANATIONS.get(trace.detector, f"stale reuse with detector model {trace.detector}"),
        detector=detector,
        files=files,
        git=False,
        steps=tuple(CounterexampleStep(command) for command in commands),
        violation_step=trace.violation_step,
        expected=Outcome(contents[name], 0),
        observed=Outcome(outputs[violation.reused_step], 0, Verdict.REUSE.value),
        found_by={"tool": "z3", "theorem": theorem, "command": "ledger prove --write-counterexamples"},
        date=(date or datetime.date.today()).isoformat(),
    )


__all__ = [
    "SCHEMA",
    "Counterexample",
    "CounterexampleError",
    "CounterexampleStep",
    "Outcome",
    "dump",
    "from_json",
    "from_trace",
    "load",
    "to_json",
]
