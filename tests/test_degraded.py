"""The typed degraded reason: one rendering, every cause with its details, as the detector shows it."""

from __future__ import annotations

import pytest

from ledger_spec.degraded import Cause, Degraded, Effect


def test_the_text_names_the_cause_its_details_and_the_effect() -> None:
    assert Degraded(Cause.DIRECTORY_UNWATCHABLE, ("sub", "No space left on device")).text() == (
        "cannot watch sub (No space left on device; fs.inotify.max_user_watches?): every command runs a full snapshot diff")
    assert Degraded(Cause.QUEUE_OVERFLOW, effect=Effect.ONE_FULL_DIFF).text() == "the inotify queue overflowed: full snapshot diff"
    assert Degraded(Cause.ROOT_REPLACED, effect=Effect.UNKNOWN_SCOPE).text().endswith(": watches rebuilt, scope unknown")


@pytest.mark.parametrize("cause", list(Cause), ids=[c.name for c in Cause])
def test_a_cause_without_the_details_it_names_is_refused_when_made(cause: Cause) -> None:
    needed = cause.value.count("{")
    assert "{" not in Degraded(cause, ("x",) * needed).text()
    if needed:
        with pytest.raises(IndexError):
            Degraded(cause, ("x",) * (needed - 1))


def test_the_events_detector_reports_its_degraded_mode_in_that_wording(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ledger_impl.detectors import events

    monkeypatch.setattr(events, "INotify", None)
    detector = events.EventDetector()
    detector.before(tmp_path, "true")
    assert detector.degraded == Degraded(Cause.NO_INOTIFY)
    assert detector.degraded.text() == "inotify is not available: every command runs a full snapshot diff"
    detector.close()


# ---------------------------------------------------------------------------------------------
# One rendering: no degraded reason is assembled as text outside ledger_spec/degraded.py.

import ast  # noqa: E402
import pathlib  # noqa: E402

import package_layout  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
CODE = ("ledger_spec", "ledger_impl", "ledger_properties", "ledger_cli", "economizer")
HOME = REPO / "ledger_spec" / "degraded.py"


def _builds_text(node: ast.AST | None) -> bool:
    """An expression that makes a string: a literal, an f-string, a concatenation or join of one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(node.value)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _builds_text(node.left) or _builds_text(node.right)
    if isinstance(node, ast.IfExp):
        return _builds_text(node.body) or _builds_text(node.orelse)
    if isinstance(node, ast.BoolOp):
        return any(_builds_text(value) for value in node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("join", "format") and (isinstance(node.func.value, ast.Constant) or node.func.attr == "join")
    return False


def _named_degraded(target: ast.AST) -> bool:
    name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
    return "degraded" in name.lower()


def _typed_as_text(annotation: ast.AST | None) -> bool:
    """`str`, `str | None` or `Optional[str]` (not a `str` inside another type, `dict[str, Any]`)."""
    if isinstance(annotation, ast.Name):
        return annotation.id == "str"
    if isinstance(annotation, ast.BinOp):
        return _typed_as_text(annotation.left) or _typed_as_text(annotation.right)
    if isinstance(annotation, ast.Subscript) and getattr(annotation.value, "id", None) == "Optional":
        return _typed_as_text(annotation.slice)
    return False


def assembled_degraded_text(path: pathlib.Path, root: pathlib.Path = REPO) -> list[str]:
    """Where a module makes a degraded reason as text, or types one as `str`: assigned to, passed
    as or returned by something named `degraded`, or the reason of a degraded ProbeResult."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for function in [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        if "degraded" in function.name.lower():
            if _typed_as_text(function.returns):
                found.append((function.lineno, f"{function.name}() returns str"))
            found.extend((node.lineno, f"{function.name}() returns text") for node in ast.walk(function)
                         if isinstance(node, ast.Return) and _builds_text(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and _named_degraded(node.target) and _typed_as_text(node.annotation):
            found.append((node.lineno, "a degraded field typed as str"))
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(_named_degraded(target) for target in targets) and _builds_text(node.value):  # type: ignore[attr-defined]
            found.append((node.lineno, "text assigned to a degraded field"))
        if isinstance(node, ast.keyword) and node.arg and "degraded" in node.arg.lower() and _builds_text(node.value):
            found.append((node.value.lineno, f"text passed as {node.arg}="))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ProbeResult" and len(node.args) >= 2:
            if any(k.arg == "degraded" for k in node.keywords):
                found.append((node.lineno, "a ProbeResult marked degraded beside a text reason"))
    return [f"{path.relative_to(root)}:{line} {what}" for line, what in sorted(set(found))]


def test_no_degraded_reason_is_assembled_outside_its_module() -> None:
    found = [hit for package in CODE for path in sorted((REPO / package_layout.folder(package)).rglob("*.py"))
             if path != HOME for hit in assembled_degraded_text(path)]
    assert found == [], (
        "a degraded reason is text made outside ledger_spec/degraded.py: add a Cause (and an Effect) there "
        "and carry the Degraded value; render it (.text()) only where a user reads it")


def test_assembled_degraded_text_is_found(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        "class Step:\n    degraded: str | None = None\n"
        "def degraded(self) -> str | None:\n    return f'{self.missing}: reads are not reused'\n"
        "def run(probed, step):\n"
        "    step.degraded = f'probe: {probed.reason}'\n"
        "    Decision('allow', degraded='; '.join(notes))\n"
        "    ProbeResult(False, 'the probe failed', degraded=True)\n"
        "    text = f'detector degraded: {step.degraded.text()}'\n"
        "    Decision('allow', degraded=from_notes(notes))\n")
    assert assembled_degraded_text(module, tmp_path) == [
        "probe.py:2 a degraded field typed as str", "probe.py:3 degraded() returns str", "probe.py:4 degraded() returns text",
        "probe.py:6 text assigned to a degraded field", "probe.py:7 text passed as degraded=",
        "probe.py:8 a ProbeResult marked degraded beside a text reason"]
