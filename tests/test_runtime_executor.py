"""Runtime.step(command, run=...): the harness executes, the Runtime governs and detects."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_impl import Runtime
from ledger_impl.execution import run_command


def test_the_callable_runs_every_executed_command_and_edits_are_detected(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    ran: list[str] = []

    def run(command: str) -> tuple[str, int]:
        ran.append(command)
        completed = run_command(command, tmp_path, 30, 1 << 20)
        return completed.output, completed.exit_code

    with Runtime(tmp_path) as runtime:
        assert runtime.step("cat a.txt", run=run).verdict == "allow"
        reused = runtime.step("cat a.txt", run=run)
        edit = runtime.step("echo two >> a.txt", run=run)
        after = runtime.step("cat a.txt", run=run)
    assert ran == ["cat a.txt", "echo two >> a.txt", "cat a.txt"]
    assert (reused.verdict, reused.output) == ("reuse", "one\n")
    assert edit.changes.paths == frozenset({"a.txt"})
    assert (after.verdict, after.output) == ("allow", "one\ntwo\n")


def test_an_output_over_the_limit_reaches_the_agent_but_is_never_reused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x" * 100)
    with Runtime(tmp_path, output_limit=10) as runtime:
        first = runtime.step("cat a.txt", run=lambda command: ("x" * 100, 0))
        again = runtime.step("cat a.txt", run=lambda command: ("x" * 100, 0))
    assert first.output == "x" * 100
    assert again.verdict != "reuse"


@pytest.mark.parametrize(
    "result",
    [("out", True), (b"out", 0), ("out", "0"), ("out", 0.0)],
    ids=["bool-exit", "bytes-output", "str-exit", "float-exit"],
)
def test_a_callable_that_returns_anything_but_str_and_int_is_refused(tmp_path: Path, result: tuple[object, object]) -> None:
    # A bool exit code would be read as 0 or 1 and recorded; refuse it rather than guess.
    with Runtime(tmp_path) as runtime:
        with pytest.raises(TypeError, match="run must return"):
            runtime.step("cat a.txt", run=lambda command: result)  # type: ignore[arg-type, return-value]


def test_an_output_exactly_at_the_limit_is_whole(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("abc")
    (tmp_path / "b.txt").write_text("abcd")
    with Runtime(tmp_path, output_limit=3) as runtime:
        assert runtime.step("cat a.txt", run=lambda command: ("abc", 0)).complete
        assert runtime.step("cat a.txt", run=lambda command: ("abc", 0)).verdict == "reuse"
        assert not runtime.step("cat b.txt", run=lambda command: ("abcd", 0)).complete
