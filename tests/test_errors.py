"""One root for Ledger's errors, a small typed hierarchy, exit codes mapped in one place
(docs/reference/errors.md)."""

from __future__ import annotations

import ast
import importlib
import pathlib
import sys
from collections.abc import Iterator

import package_layout
import pytest

from ledger_cli import errors as cli_errors
from ledger_cli.main import main
from ledger_spec import errors

REPO = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("ledger_spec", "ledger_impl", "ledger_properties", "ledger_cli", "economizer_spec", "economizer")

#: Every exception class of the project: its family, and the builtin base callers catch it by.
CLASSES: dict[str, tuple[type[errors.LedgerError], type[BaseException] | None]] = {
    "economizer.codec:BadInput": (errors.InvalidInput, ValueError),
    "economizer.controller:DetectorTimeout": (errors.DetectorFailure, None),
    "economizer.model_client:ModelSetupError": (errors.UsageError, ValueError),
    "economizer.model_client:Truncated": (errors.DetectorFailure, None),
    "economizer.model_client:MalformedAnswer": (errors.DetectorFailure, None),
    "economizer.model_recording:ReplayDiverged": (errors.InvalidInput, ValueError),
    "economizer.store:StoreBusy": (errors.UnreadableState, RuntimeError),
    "economizer.store:AlreadyFed": (errors.UsageError, ValueError),
    "economizer.store:StateUnreadable": (errors.UnreadableState, RuntimeError),
    "ledger_cli.commands.hooks:SettingsError": (errors.UnreadableState, None),
    "ledger_impl.detectors.channel:ListingError": (errors.DetectorFailure, ValueError),
    "ledger_impl.detectors.events:_Fallback": (errors.DetectorFailure, None),
    "ledger_impl.detectors.protocol:ReportFailed": (errors.DetectorFailure, None),
    "ledger_impl.detectors.rules:_Unknown": (errors.DetectorFailure, None),
    "ledger_impl.detectors.stat_index:IndexDamaged": (errors.UnreadableState, ValueError),
    "ledger_impl.detectors.watchman:WatchmanError": (errors.DetectorFailure, RuntimeError),
    "ledger_impl.detectors.watchman:_Unreachable": (errors.DetectorFailure, None),
    "ledger_impl.shell:ShellSyntaxError": (errors.InvalidInput, ValueError),
    "ledger_impl.state_codec:CodecError": (errors.UnreadableState, ValueError),
    "ledger_impl.service.server:AlreadyRunning": (errors.Unavailable, None),
    "ledger_impl.service.frame:FrameError": (errors.InvalidInput, ValueError),
    "ledger_properties.audit.filter:OutsideWrite": (errors.InvalidInput, ValueError),
    "ledger_properties.audit.formats:InputError": (errors.InvalidInput, ValueError),
    "ledger_properties.counterexample:CounterexampleError": (errors.InvalidInput, ValueError),
    "ledger_properties.differential:Divergence": (errors.PropertyViolation, AssertionError),
    "ledger_properties.hunt:DetectorFailed": (errors.DetectorFailure, None),
    "ledger_properties.hunt:HuntViolation": (errors.PropertyViolation, AssertionError),
    "ledger_properties.hook_hunt:HookReuseIsStale": (errors.PropertyViolation, AssertionError),
    "ledger_properties.hook_hunt:HookFailed": (errors.HarnessFailure, AssertionError),
    "ledger_properties.dask_hunt:SchedulerUnavailable": (errors.Unavailable, RuntimeError),
    "ledger_properties.parallel:WorkerDied": (errors.HarnessFailure, RuntimeError),
    "ledger_properties.replay:DetectorLoadError": (errors.DetectorFailure, ValueError),
    "ledger_properties.replay:ReplayWorkerError": (errors.HarnessFailure, RuntimeError),
    "ledger_properties.sandbox:SandboxUnavailable": (errors.Unavailable, RuntimeError),
}


# What a new exception class would subclass directly: a builtin, the root or a family. (The
# kinds of HuntViolation subclass it, and so inherit its place.)
ROOTS = {"BaseException", "Exception", "ValueError", "RuntimeError", "AssertionError", "OSError", "LookupError",
         "KeyError", "TypeError", "LedgerError", *(family.__name__ for family in errors.FAMILIES)}


def _exception_classes() -> set[str]:
    """Every class defined in the packages that subclasses a builtin exception, the root or a family."""
    found = set()
    for package in PACKAGES:
        for path in (REPO / package_layout.folder(package)).rglob("*.py"):
            module = package_layout.module_name(path, REPO)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id in ROOTS for b in node.bases):
                    found.add(f"{module}:{node.name}")
    return found


def _load(name: str) -> type[BaseException]:
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


def test_every_exception_class_is_in_the_table() -> None:
    hierarchy = {f"ledger_spec.errors:{cls.__name__}" for cls in errors.FAMILIES} | {"ledger_spec.errors:LedgerError"}
    assert _exception_classes() - hierarchy == set(CLASSES)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_each_class_has_its_family_and_keeps_its_builtin_base(name: str) -> None:
    family, builtin = CLASSES[name]
    cls = _load(name)
    assert issubclass(cls, family) and issubclass(cls, errors.LedgerError)
    if builtin is not None:
        assert issubclass(cls, builtin)  # callers that catch ValueError, RuntimeError, ... still do


def test_exit_codes_are_mapped_in_one_table() -> None:
    assert {family: cli_errors.exit_code(family("x")) for family in errors.FAMILIES} == {
        errors.UsageError: 2, errors.InvalidInput: 2, errors.UnreadableState: 2, errors.DetectorFailure: 2,
        errors.Unavailable: 2, errors.HarnessFailure: 3, errors.PropertyViolation: 1,
    }
    assert cli_errors.exit_code(_load("ledger_properties.parallel:WorkerDied")("x")) == 3
    assert cli_errors.exit_code(_load("ledger_properties.hunt:HuntViolation")("x")) == 1


def test_a_ledger_error_escaping_a_command_is_one_line_and_its_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ledger_cli.commands import prove

    def broken(_args: object) -> int:
        raise _load("ledger_properties.parallel:WorkerDied")("worker 3 died\nwith a second line")

    monkeypatch.setattr(prove, "run", broken)
    assert main(["prove"]) == 3
    err = capsys.readouterr().err
    assert err == "ledger prove: worker 3 died\n", err


def _returned(value: ast.expr) -> Iterator[ast.expr]:
    """The expressions a return statement may hand back (both arms of `a if c else b`)."""
    if isinstance(value, ast.IfExp):
        yield from _returned(value.body)
        yield from _returned(value.orelse)
    else:
        yield value


def literal_exit_codes(path: pathlib.Path) -> list[str]:
    """Where a function returning an `int` in a CLI module returns a literal (0 aside): an exit
    code not named in `ledger_cli.errors`, the one place they are mapped."""
    found = []
    for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(function, ast.FunctionDef) and isinstance(function.returns, ast.Name)
                and function.returns.id == "int"):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and node.value is not None:
                found.extend((node.lineno, value.value) for value in _returned(node.value)
                             if isinstance(value, ast.Constant) and type(value.value) is int and value.value != 0)
    return [f"{path.name}:{line} returns {value}" for line, value in sorted(found)]


def test_commands_return_named_exit_codes() -> None:
    found = [hit for path in sorted((REPO / "ledger_cli").rglob("*.py")) if path.name != "errors.py"
             for hit in literal_exit_codes(path)]
    assert found == [], "return an exit code constant from ledger_cli/errors.py (EXIT_USAGE, ...) or raise UsageError"


def test_a_literal_exit_code_is_found(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "command.py"
    module.write_text("def run(args) -> int:\n    if args.bad:\n        return 2\n    return 1 if args.found else 0\n"
                      "def ok(args) -> int:\n    return EXIT_OK\ndef pick(items) -> int:\n    return items[1] if len(items) > 1 else 0\n")
    assert literal_exit_codes(module) == ["command.py:3 returns 2", "command.py:4 returns 1"]


def test_the_errors_page_lists_every_class_under_its_family() -> None:
    """docs/reference/errors.md's table is generated (scripts/docs_errors.py) by finding the
    classes in the code; it finds exactly the ones this file names, each in its family."""
    sys.path.insert(0, str(REPO / "scripts"))
    import docs_errors

    listed = {f"{cls.__module__}:{cls.__name__}": family
              for family, classes in docs_errors.hierarchy().items() for cls in classes}
    assert listed == {name: family for name, (family, _builtin) in CLASSES.items()}
