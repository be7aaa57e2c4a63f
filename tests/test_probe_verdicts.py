"""The probe's verdicts when its run goes wrong (`ledger_impl.probe.probe`).

`tests/test_probe.py` probes real reads. These make one part fail at a time (the tools, the
trace directory, the trace file, its size, its parse) and check that each failure is a refusal
that says why, and that an exit status differing either way refuses the read. Written for the
survivors of the module's operator mutation (docs/mutation/survivors.md).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import attrs
import pytest
from probe_workspace import root  # noqa: F401 (fixture)

from ledger_impl import probe as probes
from ledger_impl.execution import Completed
from ledger_impl.probe import sandbox, trace
from ledger_spec.degraded import Cause, Degraded, Effect

MISSING = probes.unavailable()
needs_the_probe = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} (.ci/run installs them)")


def _probe(root: Path, command: str, output: str, exit_code: int, **options: object) -> probes.ProbeResult:
    return probes.probe(root, command, dict(os.environ), output, exit_code, **options)  # type: ignore[arg-type]


def test_without_its_tools_the_probe_refuses_and_says_what_is_missing(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "missing_tools", lambda: "strace")
    missing = Degraded(Cause.PROBE_UNAVAILABLE, ("strace",), Effect.NUDGE_ONLY)
    assert probes.unavailable() == missing
    assert _probe(root, "cat a.txt", "alpha\n", 0) == probes.ProbeResult(False, missing)


def test_the_trace_directory_is_never_the_workspace_or_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    temporary = Path(os.path.realpath(tempfile.gettempdir()))
    for workspace in (temporary, Path("/aaa-workspace"), Path("/zzz-workspace")):  # sorting before and after it
        made = probes._trace_directory(workspace)
        try:
            assert made.parent != workspace and not os.fspath(made).startswith(os.fspath(workspace) + "/")
            if workspace != temporary:
                assert made.parent == temporary
        finally:
            made.rmdir()


@needs_the_probe
def test_no_trace_directory_is_a_refusal_that_says_why(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def nowhere(workspace: Path) -> Path:
        raise OSError("no temporary directory outside the workspace")

    monkeypatch.setattr(probes, "_trace_directory", nowhere)
    result = _probe(root, "cat a.txt", "alpha\n", 0)
    assert not result.servable
    assert result.degraded == Degraded(Cause.PROBE_NO_TRACE_DIRECTORY, ("no temporary directory outside the workspace",), Effect.NOT_SERVED)


@needs_the_probe
def test_a_run_that_left_no_trace_and_removed_its_directory_failed_to_start(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said = "x" * 300

    def vanished(root: Path, command: str, directory: Path, *args: object) -> Completed:
        shutil.rmtree(directory)
        return Completed(f"  {said}  ", 1, False, False, None, True)

    monkeypatch.setattr(sandbox, "run", vanished)
    result = _probe(root, "cat a.txt", "alpha\n", 0)
    assert not result.servable
    assert result.degraded == Degraded(Cause.PROBE_FAILED_TO_START, (said[:200],), Effect.NOT_SERVED)


@needs_the_probe
@pytest.mark.parametrize(("command", "told"), [("cat a.txt", 1), ("cat missing.txt", 0)], ids=["ran-0-told-1", "ran-1-told-0"])
def test_an_exit_status_other_than_the_agent_s_either_way_refuses(root: Path, command: str, told: int) -> None:
    """A real miss of the operator mutation (ledger_impl/probe/__init__.py line 118, `!=` -> `<`
    or `>`): a probe whose exit status differed one way from what the agent saw confirmed the
    read, whose output then served with a status a run now would not give."""
    output = probes.probe(root, command, dict(os.environ), "", 0).output or ""
    result = _probe(root, command, output, told)
    assert not result.servable and result.reason == "the probe printed something else (time-dependent or not deterministic)"


@needs_the_probe
def test_a_truncated_probe_output_is_a_refusal(root: Path) -> None:
    result = _probe(root, "cat a.txt", "alpha\n", 0, output_limit=3)
    assert (result.servable, result.reason) == (False, "the probe's output was truncated")


@needs_the_probe
def test_a_trace_larger_than_the_limit_is_never_read_in_part(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real misses of the operator mutation (ledger_impl/probe/__init__.py line 99, one byte
    fewer read; line 110, `>` -> `==`): a trace longer than the limit was cut at it and parsed
    as if whole, and the accesses after the cut were never dependencies."""
    monkeypatch.setattr(probes, "TRACE_LIMIT", 200)  # every real trace is longer
    result = _probe(root, "cat a.txt", "alpha\n", 0)
    assert (result.servable, result.reason) == (False, "the trace is too large to read whole")


@needs_the_probe
def test_an_incomplete_trace_is_a_refusal_that_says_why(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parse = trace.parse
    monkeypatch.setattr(trace, "parse", lambda text, at: attrs.evolve(parse(text, at), incomplete="a hole"))
    result = _probe(root, "cat a.txt", "alpha\n", 0)
    assert (result.servable, result.reason) == (False, "the trace is incomplete: a hole")
