"""Copilot CLI's adapter at its edges: how a call is named without a call id, which tool call is
decided as which command, which finished call is a shell turn and with what status, and which
calls may be served. Payloads as Copilot CLI 1.0.102 sends them (`tests/agents/
test_copilot_hook.py`), against a real session without the probe (the outputs are made up)."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from adapter_edges import READ, EmptySession, harness_read, subdirectory_with_other_notes
from ledger_impl.agents import copilot
from ledger_impl.session import DurableSession
from test_copilot_hook import call, denied, shell_result

SESSION_PROBE = False
TRAILER = "\n<shellId: 3 completed with exit code {status}>"


def _served(workspace: pathlib.Path, session: DurableSession, tool_input: dict[str, Any] | None = None) -> bool:
    return denied(copilot.handle(call(workspace, "PreToolUse", "Bash", tool_input or {"command": READ}), session))


def test_a_call_is_named_alike_before_and_after_whatever_its_input_s_key_order() -> None:
    first = {"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "ls", "description": "list"}}
    reordered = {**first, "tool_input": {"description": "list", "command": "ls"}}
    assert copilot.derived_call_id(first) == copilot.derived_call_id(reordered)
    assert copilot.derived_call_id({**first, "tool_input": {"command": "ls -a"}}) != copilot.derived_call_id(first)


def test_a_finished_shell_call_is_a_turn_with_its_output_and_status(workspace: pathlib.Path) -> None:
    finished = call(workspace, "PostToolUse", "Bash", {"command": "ls x"}, **shell_result("no x" + TRAILER.format(status=2)))
    assert copilot.shell_turn(finished) == ("ls x", "no x\n", 2)  # the output up to the trailer


@pytest.mark.parametrize("event, tool, tool_input", [
    ("PreToolUse", "Bash", {"command": "ls x"}),
    ("PostToolUseFailure", "Bash", {"command": "ls x"}),
    ("Notification", "Bash", {"command": "ls x"}),
    ("PostToolUse", "Read", {"command": "ls x", "path": "x"}),
    ("PostToolUse", "Bash", {"command": ["ls", "x"]}),
    ("PostToolUse", "Bash", "ls x"),
])
def test_anything_but_a_finished_shell_call_is_no_shell_turn(workspace: pathlib.Path, event: str, tool: str,
                                                             tool_input: Any) -> None:
    finished = call(workspace, event, tool, {}, **shell_result("no x" + TRAILER.format(status=2)))
    assert copilot.shell_turn({**finished, "tool_input": tool_input}) is None


@pytest.mark.parametrize("extra, shown", [
    ({"error": "spawn failed"}, ("spawn failed", 1)),  # no result: the error, and a failure
    ({}, ("", 1)),
    (shell_result("alpha\n"), ("alpha\n", 0)),  # no trailer: the text as shown, status unknown (0)
])
def test_a_finish_without_a_trailer_is_a_turn_with_what_the_model_saw(
        workspace: pathlib.Path, extra: dict[str, Any], shown: tuple[str, int]) -> None:
    assert copilot.shell_turn(call(workspace, "PostToolUse", "Bash", {"command": "make"}, **extra)) == ("make", *shown)


def test_a_failure_event_is_never_recorded_exactly(workspace: pathlib.Path, session: DurableSession) -> None:
    """Only PostToolUse of a sync call that succeeded is exact; a PostToolUseFailure (which sorts
    after it) carrying a trailer is not, whatever its result says."""
    shell = {"command": READ}
    assert copilot.handle(call(workspace, "PreToolUse", "Bash", shell), session) is None
    failed = call(workspace, "PostToolUseFailure", "Bash", shell, **shell_result("alpha\n" + TRAILER.format(status=0)))
    copilot.handle(failed, session)
    assert not _served(workspace, session)


@pytest.mark.parametrize("mode", ["async", "tty"])
def test_a_command_not_run_in_sync_mode_is_never_served(workspace: pathlib.Path, session: DurableSession, mode: str) -> None:
    """An async call expects a shell id to poll, not an output: a stored result of the same
    command (sync) makes it a Nudge, never a deny (whether the mode sorts before "sync" or
    after it)."""
    harness_read(session, "alpha\nbeta\n")
    assert not _served(workspace, session, {"command": READ, "mode": mode})
    assert _served(workspace, session)


def test_a_read_in_a_subdirectory_is_decided_where_it_ran(workspace: pathlib.Path, session: DurableSession) -> None:
    """ledger_impl/agents/copilot.py line 158: without the payload's cwd, `cat notes.txt` run in
    `sub/` was decided as the root's `notes.txt` and served the root file's text."""
    sub = subdirectory_with_other_notes(workspace)
    harness_read(session, "alpha\nbeta\n")
    in_sub = {**call(workspace, "PreToolUse", "Bash", {"command": READ}), "cwd": str(sub)}
    assert not denied(copilot.handle(in_sub, session))
    copilot.handle({**in_sub, "hook_event_name": "PostToolUse",
                    **shell_result("the other file\n" + TRAILER.format(status=0))}, session)
    assert _served(workspace, session)  # from the root, it is the stored read


@pytest.mark.parametrize("tool_input, command", [
    ({"path": "f"}, "cat f"),
    ({"path": "f", "view_range": [2, 5]}, "sed -n '2,5p' f"),
    ({"path": "f", "view_range": [0, 5]}, "sed -n '1,5p' f"),
    ({"path": "f", "view_range": [3, -1]}, "sed -n '3,$p' f"),
    ({"path": "f", "view_range": [1, 2, 3]}, "cat f"),
    ({"path": "f", "view_range": "1,5"}, "cat f"),
])
def test_a_read_is_decided_as_the_lines_it_shows(tool_input: dict[str, Any], command: str) -> None:
    assert copilot.command_for("Read", tool_input) == command


@pytest.mark.parametrize("tool", ["Edit", "Write"])
def test_a_file_write_is_decided_as_a_touch_of_its_path(tool: str) -> None:
    assert copilot.command_for(tool, {"path": "a b"}) == "touch -c -- 'a b'"


def test_the_session_s_view_is_given_at_its_start_and_nothing_when_it_is_empty(
        workspace: pathlib.Path, session: DurableSession) -> None:
    start = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(workspace), "source": "new"}
    harness_read(session, "alpha\nbeta\n")
    assert copilot.handle(start, session) == {"additionalContext": session.view()}

    assert copilot.handle(start, EmptySession()) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("change", [
    {"tool_name": "WebFetch", "tool_input": {"url": "http://x"}}, {"tool_input": "cat notes.txt"},
    {"hook_event_name": "Stop"}, {"hook_event_name": "SubagentStop"},
])
def test_a_call_that_is_not_a_governed_tool_call_is_not_decided(
        workspace: pathlib.Path, session: DurableSession, change: dict[str, Any]) -> None:
    """ledger_impl/agents/copilot.py line 82: no opinion, even for a read that could be served
    now; an event sorting after PreToolUse's name (Stop) was decided as one and answered with a
    Reuse."""
    harness_read(session, "alpha\nbeta\n")
    assert copilot.handle({**call(workspace, "PreToolUse", "Bash", {"command": READ}), **change}, session) is None
    assert _served(workspace, session)


def test_a_call_that_failed_without_a_result_is_never_served(workspace: pathlib.Path, session: DurableSession) -> None:
    """ledger_impl/agents/copilot.py line 111: a call that finished with an error and no result
    (killed, refused) shows the model the error; recorded exactly, that error was served as the
    command's output to the next identical call."""
    shell = {"command": READ}
    assert copilot.handle(call(workspace, "PreToolUse", "Bash", shell), session) is None
    copilot.handle(call(workspace, "PostToolUseFailure", "Bash", shell, error="the command was interrupted"), session)
    assert not _served(workspace, session)


def test_a_read_whose_text_ends_like_a_shell_trailer_is_not_a_shell_result(
        workspace: pathlib.Path, session: DurableSession) -> None:
    """ledger_impl/agents/copilot.py line 113: only Bash results carry the trailer; a file whose
    last line looks like one, read with Read, was split as a shell result (the tool compared by
    order), recorded exactly as `cat notes.txt`, and served to that shell command."""
    read = {"path": "notes.txt"}
    copilot.handle(call(workspace, "PreToolUse", "Read", read), session)
    copilot.handle(call(workspace, "PostToolUse", "Read", read, **shell_result("not the file" + TRAILER.format(status=0))),
                   session)
    assert not _served(workspace, session)


@pytest.mark.parametrize("tool_input, result_type", [
    ({"command": READ}, "timeout"),  # any result type but "success" (this one sorts after it)
    ({"command": READ, "mode": "tty"}, "success"),  # any mode but "sync" (this one sorts after it)
])
def test_only_a_sync_call_that_succeeded_is_recorded_exactly_and_served(
        workspace: pathlib.Path, session: DurableSession, tool_input: dict[str, Any], result_type: str) -> None:
    """ledger_impl/agents/copilot.py lines 115 and 116: a result type or a mode compared by
    order let a result type sorting after "success" (a timeout's partial output) or a mode
    sorting after "sync" be recorded exactly, and served to the next sync call."""
    assert copilot.handle(call(workspace, "PreToolUse", "Bash", tool_input), session) is None
    finished = shell_result("alpha\nbeta\n" + TRAILER.format(status=0), result_type=result_type)
    copilot.handle(call(workspace, "PostToolUse", "Bash", tool_input, **finished), session)
    assert not _served(workspace, session)  # the same command, run sync


def test_a_stored_result_serves_the_same_command_only(workspace: pathlib.Path, session: DurableSession) -> None:
    """Results are stored as Copilot renders them (trailing whitespace cut): no slice is served."""
    harness_read(session, "alpha\nbeta\n")
    assert not _served(workspace, session, {"command": "sed -n '1,1p' notes.txt"})
    assert _served(workspace, session)


@pytest.mark.parametrize("tool_input, command", [
    ({"path": "f", "view_range": [5]}, "cat f"),
    ({"path": "f", "view_range": [3, 3]}, "sed -n '3,3p' f"),
])
def test_a_read_of_one_line_or_an_incomplete_range(tool_input: dict[str, Any], command: str) -> None:
    assert copilot.command_for("Read", tool_input) == command


def test_a_tool_that_is_not_bash_is_no_shell_turn(workspace: pathlib.Path) -> None:
    finished = call(workspace, "PostToolUse", "Agent", {"command": "ls x"}, **shell_result("x" + TRAILER.format(status=0)))
    assert copilot.shell_turn(finished) is None


def test_the_tool_mask_excludes_each_tool_and_is_empty_for_none() -> None:
    assert copilot.tool_mask([]) == ""
    assert copilot.tool_mask(["web_fetch", "task"]) == "--excluded-tools web_fetch,task"
