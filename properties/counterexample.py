"""Counterexample files: the one model, loader, writer and error (schema in counterexamples/README.md).

A counterexample is a workspace (`Setup`), a list of shell commands (`Step`), and the step at
which Ledger did something unsafe (`Violation`), with the detector (`MODULE:FACTORY`) it
happened against. Everything that reads or writes these files goes through this module: the
hunt's writer (`from_run`), `ledger prove` (`from_trace`), `ledger replay` and the tests
(`load`).

Theory of operation: a file is data from an untrusted source until proved otherwise. `loads`
turns bytes into a `Counterexample` in two passes, each of which can only raise
`CounterexampleError` with a one-line message naming the field: `_parse` checks the JSON shape
(objects, lists, known fields), then the attrs validators of the frozen values check every
field's meaning (keys relative and inside the workspace, steps non-empty, the violation step in
range, outputs text, exit codes integers, ...). Nothing is written and nothing is imported
while loading; `detector` is only a name here.

"Reproduces" is exact: a replay reproduces a counterexample when the same property fails at
the recorded step and `outcomes` of that step equal the recorded `expected` and `observed`
(output, exit code, verdict, and the property's evidence such as the missing keys).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import pathlib
import posixpath
import re
import shlex
from typing import TYPE_CHECKING, Any, Callable, Mapping

import attrs

from ledger_spec.values import Category, Verdict

if TYPE_CHECKING:  # z3 is imported by `ledger prove`, not by every hunt worker (50 ms each)
    from ledger_spec.z3_model import AbstractTrace

from .oracle import PROPERTIES, REUSE_IS_FRESH, StepRecord, Violation as OracleViolation
from .shell_strategies import WorkspaceSetup
from ledger_spec.errors import InvalidInput

SCHEMA = "ledger-counterexample/2"
"""The schema written. Its `violation.step` counts from 1, as every step a user sees does."""

FIRST_STEP: dict[str, int] = {"ledger-counterexample/1": 0, SCHEMA: 1}
"""What each readable schema numbers the first step: files written before /2 count from 0 and
still load, to the same counterexample (docs/reference/step-numbering.md)."""

OPTIMISTIC_RULES = "ledger_impl.detectors.unsound:optimistic_rules"
"""The rules detector that reports 'no change' for what it cannot see into (`python3 fix.py`):
it misses a script's writes whether the script runs alone (it says nothing at all) or after an
edit it does understand (it names that edit's file and omits the script's)."""

STATUSES: tuple[str, ...] = ("open", "fixed")
"""`open`: a fault of Ledger itself that still reproduces against the default detector.
`fixed`: such a fault after its fix, with no detector left that shows it."""

MAX_FILE_BYTES = 16 * 1024 * 1024
"""Larger files are refused before parsing: a counterexample is a few kilobytes."""

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_DETECTOR = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")
_VERDICTS = frozenset(verdict.value for verdict in Verdict)


class CounterexampleError(InvalidInput, ValueError):
    """A counterexample file or value that does not follow the schema; the message is one line."""


# --- validators -------------------------------------------------------------------------------


def _check(condition: bool, field: str, message: str) -> None:
    if not condition:
        raise CounterexampleError(f"{field} {message}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(field: str, *, one_line: bool = False) -> Callable[[object, attrs.Attribute, object], None]:
    def validate(_instance: object, _attribute: attrs.Attribute, value: object) -> None:
        _check(isinstance(value, str) and bool(value.strip()), field, "must be a non-empty string")
        _check(not one_line or "\n" not in str(value), field, "must be one line")

    return validate


def workspace_key_problem(key: object) -> str | None:
    """Why `key` may not name a file of a workspace, or None if it may.

    A key is a relative POSIX path that stays inside the directory it is written under: no
    absolute path, no `..`, `.` or empty component, no NUL, and nothing under `.git/` (a
    planted hook or config would run code when the workspace's repository is made).
    """
    if not isinstance(key, str) or not key:
        return "is not a non-empty string"
    if "\0" in key:
        return "contains a NUL byte"
    if key.startswith("/"):
        return "is absolute"
    parts = key.split("/")
    if ".." in parts:
        return "contains '..'"
    if any(part in ("", ".") for part in parts):
        return "has an empty or '.' component"
    if parts[0] == ".git":
        return "is inside .git/"
    return None


def _files(field: str) -> Callable[[object, attrs.Attribute, object], None]:
    def validate(_instance: object, _attribute: attrs.Attribute, value: object) -> None:
        _check(isinstance(value, Mapping), field, "must be an object of relative path -> text")
        assert isinstance(value, Mapping)
        for key, text in value.items():
            problem = workspace_key_problem(key)
            _check(problem is None, field, f"key {key!r} {problem}")
            _check(isinstance(text, str), f"{field}[{key!r}]", f"must be text, got {type(text).__name__}")
        # A key may not be both a file and the directory of another key.
        for key in value:
            parent = posixpath.dirname(key)
            while parent:
                _check(parent not in value, field, f"has {parent!r} as both a file and the directory of {key!r}")
                parent = posixpath.dirname(parent)

    return validate


_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _variables(field: str) -> Callable[[object, attrs.Attribute, object], None]:
    def validate(_instance: object, _attribute: attrs.Attribute, value: object) -> None:
        _check(isinstance(value, Mapping), field, "must be an object of variable name -> text")
        assert isinstance(value, Mapping)
        for name, text in value.items():
            _check(isinstance(name, str) and bool(_VARIABLE.match(name)), field, f"key {name!r} is not a variable name")
            _check(isinstance(text, str) and "\0" not in text, f"{field}[{name!r}]", "must be text without a NUL byte")

    return validate


def _optional_int(field: str) -> Callable[[object, attrs.Attribute, object], None]:
    def validate(_instance: object, _attribute: attrs.Attribute, value: object) -> None:
        _check(value is None or _is_int(value), field, f"must be an integer, got {value!r}")

    return validate


def _verdict(field: str, *, required: bool) -> Callable[[object, attrs.Attribute, object], None]:
    def validate(_instance: object, _attribute: attrs.Attribute, value: object) -> None:
        allowed = value in _VERDICTS or (value is None and not required)
        _check(allowed, field, f"must be one of {', '.join(sorted(_VERDICTS))}, got {value!r}")

    return validate


def _frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return dict(value) if isinstance(value, Mapping) else value


# --- the model --------------------------------------------------------------------------------


@attrs.frozen
class Setup:
    """The starting workspace: files in the root, files in a directory next to it, git or not,
    and variables the commands run with (a start file, a PATH entry, a time zone, ...)."""

    files: Mapping[str, str] = attrs.field(converter=_frozen_mapping, validator=_files("setup.files"))
    outside: Mapping[str, str] = attrs.field(
        factory=dict, converter=_frozen_mapping, validator=_files("setup.outside")
    )
    git: bool = attrs.field(default=True)
    environment: Mapping[str, str] = attrs.field(
        factory=dict, converter=_frozen_mapping, validator=_variables("setup.environment")
    )

    @git.validator
    def _git(self, _attribute: attrs.Attribute, value: object) -> None:
        _check(isinstance(value, bool), "setup.git", "must be true or false")

    def workspace(self) -> WorkspaceSetup:
        return WorkspaceSetup(dict(self.files), dict(self.outside), self.git, dict(self.environment))

    @classmethod
    def of(cls, workspace: WorkspaceSetup) -> "Setup":
        return cls(dict(workspace.files), dict(workspace.outside), workspace.git, dict(workspace.environment))


@attrs.frozen
class Step:
    """One command of the session, with the verdict and exit code the finder saw (if recorded)."""

    command: str = attrs.field(validator=_text("steps[].command"))
    verdict: str | None = attrs.field(default=None, validator=_verdict("steps[].verdict", required=False))
    exit_code: int | None = attrs.field(default=None, validator=_optional_int("steps[].exit_code"))


@attrs.frozen
class Outcome:
    """What a step printed (stdout and stderr), its exit code, the verdict, and the property's
    evidence (`changed`, `reported`, `missing`, `category`, `state`, ...)."""

    output: str
    exit_code: int
    verdict: str | None = None
    evidence: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)

    def __attrs_post_init__(self) -> None:
        _check(isinstance(self.output, str), "output", "must be a string")
        _check(_is_int(self.exit_code), "exit_code", f"must be an integer, got {self.exit_code!r}")
        _check(self.verdict is None or self.verdict in _VERDICTS, "verdict", f"must be one of {sorted(_VERDICTS)}")
        _check(isinstance(self.evidence, Mapping), "evidence", "must be an object")

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"output": self.output, "exit_code": self.exit_code}
        if self.verdict is not None:
            document["verdict"] = self.verdict
        document.update(self.evidence)
        return document


@attrs.frozen
class Violation:
    """The step at which `property` failed, with what was expected and observed. In the model
    `step` is an index into `steps` (from 0); the file and every text show it counted from 1."""

    step: int = attrs.field(validator=_optional_int("violation.step"))
    expected: Outcome = attrs.field()
    observed: Outcome = attrs.field()
    command: str | None = None  # the violating step's command again, for a reader of the file

    @observed.validator
    def _observed(self, _attribute: attrs.Attribute, value: Outcome) -> None:
        _check(value.verdict is not None, "violation.observed.verdict", "is required")


@attrs.frozen
class Counterexample:
    id: str = attrs.field(validator=_text("id"))
    property: str
    explanation: str = attrs.field(validator=_text("explanation", one_line=True))
    detector: str
    setup: Setup
    steps: tuple[Step, ...] = attrs.field(converter=tuple)
    violation: Violation
    found_by: Mapping[str, Any] = attrs.field(converter=_frozen_mapping)
    date: str
    status: str | None = None

    def __attrs_post_init__(self) -> None:
        _check(bool(_ID.match(self.id)), "id", "must be file-name safe (letters, digits, '.', '_', '-')")
        _check(self.property in PROPERTIES, "property", f"must be one of {', '.join(PROPERTIES)}, got {self.property!r}")
        _check(
            isinstance(self.detector, str) and bool(_DETECTOR.match(self.detector)),
            "detector",
            f"must look like MODULE:FACTORY, got {self.detector!r}",
        )
        _check(bool(self.steps), "steps", "must not be empty")
        _check(
            0 <= self.violation.step < len(self.steps),
            "violation.step",
            f"must index steps (1..{len(self.steps)}), got {self.violation.step + 1}",
        )
        _check(
            isinstance(self.found_by, Mapping) and isinstance(self.found_by.get("tool"), str),
            "found_by",
            "must be an object with a 'tool' string",
        )
        _check(isinstance(self.date, str) and bool(_DATE.match(self.date)), "date", f"must be YYYY-MM-DD, got {self.date!r}")
        _check(self.status is None or self.status in STATUSES, "status", f"must be one of {', '.join(STATUSES)}")

    @property
    def commands(self) -> tuple[str, ...]:
        return tuple(step.command for step in self.steps)

    @property
    def expected(self) -> Outcome:
        return self.violation.expected

    @property
    def observed(self) -> Outcome:
        return self.violation.observed

    def mismatch(self, records: "list[StepRecord] | tuple[StepRecord, ...]") -> str | None:
        """Why a replay's `records` do not reproduce this counterexample exactly, or None if
        they do: the same property fails first at the recorded step, with the recorded outcomes
        (a long listing's file times aside)."""
        found = next((r for r in records if r.violation is not None and r.violation.property == self.property), None)
        if found is None:
            return f"no {self.property} violation in {len(records)} steps"
        assert found.violation is not None
        if found.index != self.violation.step:
            return f"{self.property} failed at step {found.index + 1}, not at the recorded step {self.violation.step + 1}"
        expected, observed = outcomes(found, found.violation)
        for label, recorded, seen in (("expected", self.expected, expected), ("observed", self.observed, observed)):
            if _clock_free(recorded) != _clock_free(seen):
                fields = [f for f in ("output", "exit_code", "verdict", "evidence") if getattr(recorded, f) != getattr(seen, f)]
                return f"{self.property} failed at step {found.index + 1}, but its {label} {'/'.join(fields)} differ from the file"
        return None


# A long listing prints each file's modification time, and a replay makes its files when it
# runs, not when the counterexample was found: such a listing reproduces with every other byte
# the same. (Git's dates are pinned for every run by the oracle's environment.)
_LISTING_TIME = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} +(?:\d{1,2}:\d{2}|\d{4})\b")


def _clock_free(outcome: Outcome) -> Outcome:
    return attrs.evolve(outcome, output=_LISTING_TIME.sub("<time>", outcome.output))


# --- from a run -------------------------------------------------------------------------------


def outcomes(record: StepRecord, violation: OracleViolation) -> tuple[Outcome, Outcome]:
    """(expected, observed) of a violating step: the step's own output and exit code, overridden
    by the property's evidence (for a stale Reuse, `expected` is what running it now printed)."""

    def outcome(evidence: Mapping[str, object], verdict: str | None) -> Outcome:
        extra = {k: v for k, v in evidence.items() if k not in ("output", "exit_code", "verdict")}
        return Outcome(
            str(evidence.get("output", record.output)),
            int(evidence.get("exit_code", record.exit_code)),  # type: ignore[call-overload]
            evidence.get("verdict", verdict),  # type: ignore[arg-type]
            json.loads(json.dumps(extra)),  # lists, not tuples or sets: what a file holds
        )

    return outcome(violation.expected, None), outcome(violation.observed, record.verdict)


def from_run(
    setup: WorkspaceSetup,
    records: "list[StepRecord] | tuple[StepRecord, ...]",
    violation: OracleViolation,
    *,
    detector: str,
    found_by: Mapping[str, Any],
    explanation: str | None = None,
    date: datetime.date | None = None,
) -> Counterexample:
    """The counterexample of a replayed run whose step `violation.step` failed its property.

    The id is `<factory>-<property>-<hash of setup and commands>`, so the same minimized run
    found twice gets the same file name.
    """
    steps = tuple(Step(r.template, r.verdict, r.exit_code) for r in records[: violation.step + 1])
    digest = hashlib.sha256(json.dumps([setup.to_json(), [s.command for s in steps]], sort_keys=True).encode()).hexdigest()[:10]
    short = re.sub(r"[^a-z0-9]+", "-", detector.rsplit(":", 1)[-1].lower()).strip("-") or "detector"
    expected, observed = outcomes(records[violation.step], violation)
    return Counterexample(
        id=f"{short}-{violation.property}-{digest}",
        property=violation.property,
        explanation=" ".join((explanation or violation.message).split()),
        detector=detector,
        setup=Setup.of(setup),
        steps=steps,
        violation=Violation(violation.step, expected, observed, records[violation.step].template),
        found_by=dict(found_by),
        date=(date or datetime.date.today()).isoformat(),
    )


# --- JSON -------------------------------------------------------------------------------------

_TOP = ("schema", "id", "property", "explanation", "detector", "setup", "steps", "violation", "found_by", "date", "status")
_REQUIRED = _TOP[:-1]


def _object(value: object, field: str, known: tuple[str, ...], required: tuple[str, ...] = ()) -> Mapping[str, Any]:
    _check(isinstance(value, dict), field, f"must be an object, got {type(value).__name__}")
    assert isinstance(value, dict)
    unknown = sorted(set(value) - set(known))
    _check(not unknown, field, f"has unknown field(s): {', '.join(map(str, unknown))}")
    missing = [name for name in required if name not in value]
    _check(not missing, field, f"is missing field(s): {', '.join(missing)}")
    return value


def _outcome(value: object, field: str, *, verdict: bool) -> Outcome:
    _check(isinstance(value, dict), field, "must be an object with output and exit_code")
    assert isinstance(value, dict)
    for name in ("output", "exit_code"):
        _check(name in value, field, f"is missing {name}")
    _check(isinstance(value["output"], str), f"{field}.output", "must be a string")
    _check(_is_int(value["exit_code"]), f"{field}.exit_code", "must be an integer")
    if verdict:
        _check(value.get("verdict") in _VERDICTS, f"{field}.verdict", f"must be one of allow, reuse, nudge, got {value.get('verdict')!r}")
    evidence = {k: v for k, v in value.items() if k not in ("output", "exit_code", "verdict")}
    return Outcome(value["output"], value["exit_code"], value.get("verdict"), evidence)


def _step(value: object, index: int) -> Step:
    field = f"steps[{index}]"
    data = _object(value, field, ("command", "verdict", "exit_code"), ("command",))
    _check(isinstance(data["command"], str) and bool(data["command"].strip()), f"{field}.command", "must be a non-empty string")
    _check(data.get("verdict") is None or data.get("verdict") in _VERDICTS, f"{field}.verdict", "must be allow, reuse or nudge")
    _check(data.get("exit_code") is None or _is_int(data.get("exit_code")), f"{field}.exit_code", "must be an integer")
    return Step(data["command"], data.get("verdict"), data.get("exit_code"))


def from_json(document: object) -> Counterexample:
    """Validate and convert a parsed counterexample document."""
    _check(isinstance(document, dict), "the document", f"must be a JSON object, got {type(document).__name__}")
    assert isinstance(document, dict)
    _check(document.get("schema") in FIRST_STEP, "schema", f"must be {SCHEMA!r}, got {document.get('schema')!r}")
    first_step = FIRST_STEP[document["schema"]]
    data = _object(document, "the document", _TOP, _REQUIRED)
    setup = _object(data["setup"], "setup", ("files", "outside", "git", "environment"), ("files",))
    _check(isinstance(data["steps"], list), "steps", f"must be a list, got {type(data['steps']).__name__}")
    violation = _object(data["violation"], "violation", ("step", "command", "expected", "observed"), ("step", "expected", "observed"))
    _check(_is_int(violation["step"]), "violation.step", "must be an integer")
    _check(violation.get("command") is None or isinstance(violation.get("command"), str), "violation.command", "must be a string")
    _check(isinstance(data["found_by"], dict), "found_by", "must be an object")
    for name in ("id", "property", "explanation", "detector", "date"):
        _check(isinstance(data[name], str), name, f"must be a string, got {type(data[name]).__name__}")
    return Counterexample(
        id=data["id"],
        property=data["property"],
        explanation=data["explanation"],
        detector=data["detector"],
        setup=Setup(setup["files"], setup.get("outside", {}), setup.get("git", True), setup.get("environment", {})),
        steps=tuple(_step(step, index) for index, step in enumerate(data["steps"])),
        violation=Violation(
            violation["step"] - first_step,
            _outcome(violation["expected"], "violation.expected", verdict=False),
            _outcome(violation["observed"], "violation.observed", verdict=True),
            violation.get("command"),
        ),
        found_by=data["found_by"],
        date=data["date"],
        status=data.get("status"),
    )


def to_json(counterexample: Counterexample) -> dict[str, Any]:
    ce = counterexample
    setup: dict[str, Any] = {"files": dict(ce.setup.files)}
    if ce.setup.outside:
        setup["outside"] = dict(ce.setup.outside)
    setup["git"] = ce.setup.git
    if ce.setup.environment:
        setup["environment"] = dict(ce.setup.environment)
    violation: dict[str, Any] = {"step": ce.violation.step + FIRST_STEP[SCHEMA]}
    if ce.violation.command is not None:
        violation["command"] = ce.violation.command
    violation.update(expected=ce.expected.to_json(), observed=ce.observed.to_json())
    document: dict[str, Any] = {
        "schema": SCHEMA,
        "id": ce.id,
        "property": ce.property,
        "explanation": ce.explanation,
        "detector": ce.detector,
        "setup": setup,
        "steps": [{k: v for k, v in attrs.asdict(step).items() if v is not None} for step in ce.steps],
        "violation": violation,
        "found_by": dict(ce.found_by),
        "date": ce.date,
    }
    if ce.status is not None:
        document["status"] = ce.status
    return document


def _reject_constant(name: str) -> object:
    raise CounterexampleError(f"{name} is not a JSON number")


def loads(data: bytes) -> Counterexample:
    """Parse and validate the bytes of a counterexample file."""
    if len(data) > MAX_FILE_BYTES:
        raise CounterexampleError(f"larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CounterexampleError(f"not UTF-8 text (byte {error.start})") from None
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise CounterexampleError(f"not valid JSON: {error}") from None
    except RecursionError:
        raise CounterexampleError("not valid JSON: nested too deeply") from None
    try:
        return from_json(document)
    except RecursionError:
        raise CounterexampleError("nested too deeply") from None


def load(path: str | pathlib.Path) -> Counterexample:
    """Read and validate a counterexample file; the error names the file and the field."""
    path = pathlib.Path(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise CounterexampleError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        return loads(data)
    except CounterexampleError as error:
        raise CounterexampleError(f"{path}: {error}") from None


def dump_into(counterexample: Counterexample, directory: str | pathlib.Path) -> pathlib.Path:
    """Write `counterexample` as `<id>.json` in `directory`, created if missing; return the file."""
    return dump(counterexample, pathlib.Path(directory) / f"{counterexample.id}.json")


def dump(counterexample: Counterexample, path: str | pathlib.Path) -> pathlib.Path:
    """Write `counterexample` to the file `path` (its folder created if missing); return it."""
    path = pathlib.Path(path)
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
        property=REUSE_IS_FRESH,
        explanation=_EXPLANATIONS.get(trace.detector, f"stale reuse with detector model {trace.detector}"),
        detector=detector,
        setup=Setup(files, git=False),
        steps=tuple(Step(command) for command in commands),
        violation=Violation(
            trace.violation_step,
            Outcome(contents[name], 0),
            Outcome(outputs[violation.reused_step], 0, Verdict.REUSE.value),
        ),
        found_by={"tool": "z3", "theorem": theorem, "command": "ledger prove --write-counterexamples"},
        date=(date or datetime.date.today()).isoformat(),
    )


__all__ = [
    "MAX_FILE_BYTES",
    "SCHEMA",
    "STATUSES",
    "Counterexample",
    "CounterexampleError",
    "Outcome",
    "Setup",
    "Step",
    "Violation",
    "dump",
    "dump_into",
    "from_json",
    "from_run",
    "from_trace",
    "load",
    "loads",
    "outcomes",
    "to_json",
    "workspace_key_problem",
]
