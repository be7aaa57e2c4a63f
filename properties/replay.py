"""Replaying a stored counterexample, and loading a detector named as MODULE:FACTORY.

`replay(document, detector_factory)` materializes the counterexample's workspace in a fresh
temporary directory, runs its steps through a `Runtime` with the oracle checking each one (see
`properties.oracle`), and says whether the recorded violation happened again. The CLI
(`ledger replay`) and the test suite both use it.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys
from typing import Callable, Mapping

import attrs

DetectorFactory = Callable[[], object]
SCHEMA = "ledger-counterexample/1"
REQUIRED_FIELDS: tuple[str, ...] = ("schema", "id", "property", "detector", "setup", "steps", "violation")


class CounterexampleError(ValueError):
    """A counterexample file that cannot be read or does not follow the schema."""


class DetectorLoadError(ValueError):
    """MODULE:FACTORY that does not give a detector; the message is one line for the user."""


def load_document(path: str | pathlib.Path) -> dict[str, object]:
    """Read and check a counterexample file (schema `ledger-counterexample/1`)."""
    try:
        document = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise CounterexampleError(f"cannot read {path}: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise CounterexampleError(f"{path} is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise CounterexampleError(f"{path}: a counterexample is a JSON object")
    if document.get("schema") != SCHEMA:
        raise CounterexampleError(f"{path}: schema is {document.get('schema')!r}, expected {SCHEMA!r}")
    missing = [name for name in REQUIRED_FIELDS if name not in document]
    if missing:
        raise CounterexampleError(f"{path}: missing field(s) {', '.join(missing)}")
    steps = document["steps"]
    if not isinstance(steps, list) or not all(isinstance(s, dict) and isinstance(s.get("command"), str) for s in steps):
        raise CounterexampleError(f"{path}: steps must be a list of objects with a 'command' string")
    return document


def load_factory(spec: str, search_path: str | pathlib.Path | None = None) -> DetectorFactory:
    """The factory named by MODULE:FACTORY, checked by building one detector from it.

    `search_path` is put first on sys.path (a user's detector usually lives next to their
    project, not in an installed package); the current directory is searched as well.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise DetectorLoadError(f"expected MODULE:FACTORY, got {spec!r}")
    for entry in (str(pathlib.Path.cwd()), str(search_path) if search_path is not None else None):
        if entry is not None and entry not in sys.path:
            sys.path.insert(0, entry)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise DetectorLoadError(f"module {module_name!r} not found ({error.name} is missing)") from None
    except Exception as error:  # noqa: BLE001 - the user's module failed while importing
        raise DetectorLoadError(f"importing {module_name!r} failed: {type(error).__name__}: {error}") from None
    factory = module
    for part in attribute.split("."):
        if not hasattr(factory, part):
            raise DetectorLoadError(f"module {module_name!r} has no attribute {attribute!r}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise DetectorLoadError(f"{spec} is not callable (got {type(factory).__name__})")
    check_detector(make_detector(factory, spec), spec)
    return factory  # type: ignore[return-value]


def make_detector(factory: DetectorFactory, spec: str = "the factory") -> object:
    """Call `factory()`, turning any exception into a one-line DetectorLoadError."""
    try:
        return factory()
    except Exception as error:  # noqa: BLE001 - the user's factory raised
        raise DetectorLoadError(f"{spec}() raised {type(error).__name__}: {error}") from None


def check_detector(detector: object, spec: str = "the factory") -> None:
    """Raise DetectorLoadError unless `detector` has callable `before` and `after`."""
    missing = [name for name in ("before", "after") if not callable(getattr(detector, name, None))]
    if missing:
        raise DetectorLoadError(
            f"{spec}() returned a {type(detector).__name__}, not a detector (no callable {' or '.join(missing)})"
        )


@attrs.frozen
class ReplayResult:
    """The checked steps of a replay and whether the recorded property was violated again."""

    property: str
    records: tuple[object, ...]  # properties.oracle.StepRecord
    violation: object | None  # properties.oracle.Violation of `property`, if it happened

    @property
    def reproduced(self) -> bool:
        return self.violation is not None


def replay(
    document: Mapping[str, object],
    detector_factory: DetectorFactory,
    on_record: Callable[[object], None] | None = None,
    *,
    fingerprint: bool | None = None,
) -> ReplayResult:
    """Run the counterexample's steps in a fresh temporary repository, with every step checked.

    `fingerprint` turns the Runtime's observation fingerprint on or off; by default it is set as
    it was when the counterexample was found (`found_by.fingerprint`; off for files older than
    the fingerprint)."""
    from properties.oracle import fingerprint_line, first_violation, run_checked
    from properties.shell_strategies import WorkspaceSetup

    setup = WorkspaceSetup.from_json(document["setup"])  # type: ignore[arg-type]
    templates = [step["command"] for step in document["steps"]]  # type: ignore[index,union-attr]
    prop = str(document["property"])
    if fingerprint is None:
        found_by = document.get("found_by")
        fingerprint = bool(found_by.get("fingerprint", False)) if isinstance(found_by, Mapping) else False
    with fingerprint_line(fingerprint):
        records = run_checked(setup, templates, make_detector(detector_factory), on_record=on_record)
    return ReplayResult(prop, tuple(records), first_violation(records, prop))
