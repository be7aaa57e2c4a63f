"""JSON in and out: trajectories, proposer answers, controller state, task records.

Every reader is strict: a wrong type or a missing field raises `BadInput` with one line that
says where, so the CLI can print it and exit 2 before anything is written.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any, Mapping

import attrs

from economizer_spec.detectors import Builtin, CommandResult, Detector, Regex, admission_error
from economizer_spec.params import Params
from economizer_spec.skills import Rejection, SkillDefinition, Status, definition_error
from economizer_spec.stream import TaskRecord
from economizer_spec.trajectory import Step, Trajectory


class BadInput(ValueError):
    """Input the controller refuses, with a one-line reason."""


def _require(mapping: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(mapping, Mapping):
        raise BadInput(f"{where}: expected a JSON object")
    if key not in mapping:
        raise BadInput(f"{where}: missing field {key!r}")
    value = mapping[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BadInput(f"{where}: field {key!r} has the wrong type ({type(value).__name__})")
    return value


def trajectory_from_json(row: Any, where: str = "trajectory") -> tuple[str, Trajectory]:
    """(repository, trajectory) from one corpus line (mini-swe-agent JSONL schema)."""
    task_id = _require(row, "instance_id", str, where)
    repository = _require(row, "task_repo", str, where)
    commands = _require(row, "commands", list, where)
    outputs = row.get("outputs") if isinstance(row, Mapping) else None
    codes = _require(row, "returncodes", list, where)
    outputs = [""] * len(commands) if outputs is None else outputs
    if not isinstance(outputs, list) or not (len(commands) == len(outputs) == len(codes)):
        raise BadInput(f"{where} {task_id}: commands, outputs and returncodes differ in length")
    steps = []
    for number, (command, output, code) in enumerate(zip(commands, outputs, codes), 1):
        if not isinstance(command, str) or not isinstance(output, str):
            raise BadInput(f"{where} {task_id}: step {number} command/output is not a string")
        if code is None:
            code = -1  # the harness lost the status (timeout, kill): not a success
        if not isinstance(code, int) or isinstance(code, bool):
            raise BadInput(f"{where} {task_id}: step {number} returncode is not an integer")
        steps.append(Step(command, output, code))
    resolved = _require(row, "resolved", bool, where)
    return repository, Trajectory(task_id, tuple(steps), resolved)


def read_jsonl(text: str, where: str) -> list[tuple[str, Trajectory, float | None]]:
    """All trajectories of a JSONL text (or one JSON object), with each run's reported cost."""
    rows = []
    stripped = text.strip()
    if not stripped:
        raise BadInput(f"{where}: empty input")
    lines = [stripped] if stripped.startswith("{") and "\n{" not in stripped else stripped.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise BadInput(f"{where}:{number}: not JSON ({error.msg})") from None
        repository, trajectory = trajectory_from_json(row, f"{where}:{number}")
        cost = row.get("instance_cost")
        rows.append((repository, trajectory, float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None))
    return rows


# --- detectors and skill definitions ------------------------------------------------------------


def detector_to_json(detector: Detector | None) -> Any:
    if detector is None:
        return None
    if isinstance(detector, Regex):
        return {"regex": detector.pattern, "target": detector.target}
    if isinstance(detector, Builtin):
        return {"builtin": detector.name}
    return {"command": detector.command, "exit_zero": detector.exit_zero, "output": detector.output}


def detector_from_json(value: Any, where: str) -> Detector | None:
    if value is None:
        return None
    if isinstance(value, str):  # the paper's shorthand: a bare string is a regex or a built-in name
        from economizer_spec.trajectory import BUILTINS

        return Builtin(value) if value in BUILTINS else Regex(value)
    if not isinstance(value, Mapping):
        raise BadInput(f"{where}: a detector is a string or an object")
    if "regex" in value:
        target = value.get("target", "all")
        if target not in ("commands", "outputs", "all"):
            raise BadInput(f"{where}: unknown regex target {target!r}")
        if not isinstance(value["regex"], str):
            raise BadInput(f"{where}: regex must be a string")
        return Regex(value["regex"], target)
    if "builtin" in value:
        return Builtin(str(value["builtin"]))
    if "command" in value:
        exit_zero = value.get("exit_zero")
        if exit_zero not in (True, False, None) or not isinstance(value["command"], str):
            raise BadInput(f"{where}: bad command-result detector")
        output = value.get("output")
        if output is not None and not isinstance(output, str):
            raise BadInput(f"{where}: output pattern must be a string")
        return CommandResult(value["command"], exit_zero, output)
    raise BadInput(f"{where}: unknown detector kind {sorted(value)}")


def _plain(value: object, *names: str) -> dict[str, Any]:
    """The attributes `names` of `value`, stored as they are and in that order."""
    return {name: getattr(value, name) for name in names}


def definition_to_json(definition: SkillDefinition) -> dict[str, Any]:
    return {
        **_plain(definition, "id", "claim", "injection", "high_stakes"),
        "detector": {role: detector_to_json(getattr(definition, role)) for role in ("scope", "confirm", "contradict", "need")},
        "cite": list(definition.citations),
    }


def definition_from_json(value: Any, where: str = "skill", strict: bool = True) -> SkillDefinition:
    """A skill definition in the paper's G.1 schema (`fired` is accepted for `need`).

    strict: also refuse an inadmissible definition (a regex that does not compile or may
    backtrack catastrophically), as the CLI does for a proposer answer given as a file.
    """
    skill_id = _require(value, "id", str, where)
    where = f"{where} {skill_id}"
    detectors = _require(value, "detector", Mapping, where)
    scope = detector_from_json(detectors.get("scope"), f"{where}: scope")
    confirm = detector_from_json(detectors.get("confirm"), f"{where}: confirm")
    if scope is None or confirm is None:
        raise BadInput(f"{where}: scope and confirm detectors are required")
    citations = value.get("cite", [])
    if not isinstance(citations, list) or not all(isinstance(c, str) for c in citations):
        raise BadInput(f"{where}: cite must be a list of task ids")
    definition = SkillDefinition(
        id=skill_id,
        claim=str(value.get("claim", "")),
        injection=_require(value, "injection", str, where),
        scope=scope,
        confirm=confirm,
        contradict=detector_from_json(detectors.get("contradict"), f"{where}: contradict"),
        need=detector_from_json(detectors.get("need", detectors.get("fired")), f"{where}: need"),
        high_stakes=bool(value.get("high_stakes", False)),
        citations=tuple(citations),
    )
    if strict:
        error = definition_error(definition)
        if error:
            raise BadInput(f"{where}: {error}")
    return definition


def proposals_from_json(text: str, where: str) -> tuple[SkillDefinition, ...]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadInput(f"{where}: not JSON ({error.msg})") from None
    skills = _require(data, "skills", list, where)
    return tuple(definition_from_json(item, f"{where}: skill {number}") for number, item in enumerate(skills, 1))


# --- records ------------------------------------------------------------------------------------


def record_to_json(record: TaskRecord) -> dict[str, Any]:
    return {
        **_plain(record, "index", "task_id", "passed", "turns", "manual"),
        "injected": list(record.injected),
        "mask": sorted(record.mask),
        "budget": record.budget,
        "decisions": [attrs.asdict(d) for d in record.decisions],
        "calls": [{"kind": c.kind, **attrs.asdict(c.usage)} for c in record.calls],
        "rejections": [attrs.asdict(r) for r in record.rejections],
    }


def params_to_json(params: Params) -> dict[str, Any]:
    return {f.name: str(getattr(params, f.name)) if isinstance(getattr(params, f.name), Fraction) else getattr(params, f.name) for f in attrs.fields(Params)}


def params_from_json(value: Mapping[str, Any]) -> Params:
    fields = {f.name: f for f in attrs.fields(Params)}
    defaults = Params()
    return Params(**{
        k: (Fraction(v) if isinstance(getattr(defaults, k), Fraction) else v) for k, v in value.items() if k in fields
    })
