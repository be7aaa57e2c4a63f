"""Qwen Code's adapter at its edges: calls it must leave alone, which tool call is decided as
which command, the limits past which a shell result may have been cut, and which finish is
recorded. Payloads as Qwen Code 0.24.4 sends them (`tests/agents/test_qwen_hook.py`), against
a real session without the probe (the outputs are made up for the adapter)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from ledger_impl.agents import qwen
from adapter_edges import READ, EmptySession, harness_read, subdirectory_with_other_notes
from ledger_impl.session import DurableSession
from test_qwen_hook import call, run_shell, shell_text

SESSION_PROBE = False


def _served(workspace: pathlib.Path, session: DurableSession, call_id: str, command: str = READ) -> str | None:
    """The reason of a Reuse of `command` now (None: it runs)."""
    reply = qwen.handle(call(workspace, "PreToolUse", call_id, qwen.SHELL, {"command": command}), session) or {}
    output = reply.get("hookSpecificOutput", {})
    return output["permissionDecisionReason"] if output.get("permissionDecision") == "deny" else None




@pytest.mark.parametrize("change", [
    {"tool_use_id": 7}, {"tool_name": "web_fetch"}, {"tool_input": "cat notes.txt"},
    {"hook_event_name": "Stop"}, {"hook_event_name": "SubagentStop"},
])
def test_a_call_that_is_not_a_governed_tool_call_is_not_decided(
        workspace: pathlib.Path, session: DurableSession, change: dict[str, Any]) -> None:
    """ledger_impl/agents/qwen.py line 76: no opinion, even for a read that could be served now;
    an event after PreToolUse's name in sort order (Stop) was decided as one and answered with a
    Reuse. A tool input that is not an object, or a tool Ledger does not govern, is not decided
    either (before, they reached `command_for` and raised)."""
    harness_read(session, "alpha\nbeta")
    assert qwen.handle({**call(workspace, "PreToolUse", "t1", qwen.SHELL, {"command": READ}), **change}, session) is None
    reason = _served(workspace, session, "t2")
    assert reason is not None and "unchanged result of step 1," in reason


@pytest.mark.parametrize("event", ["Stop", "Notification", "SubagentStop"])
def test_only_a_finish_records_a_result(workspace: pathlib.Path, session: DurableSession, event: str) -> None:
    """ledger_impl/agents/qwen.py line 115: an event sorting before PostToolUseFailure's name
    (Notification) or after it (Stop) was read as a failed call's finish; its `error` text was
    recorded for the call and served to the next identical read."""
    tool_input = {"command": READ}
    assert qwen.handle(call(workspace, "PreToolUse", "t1", qwen.SHELL, tool_input), session) is None
    stale = shell_text(READ, "not what the file holds", 1)
    qwen.handle(call(workspace, event, "t1", qwen.SHELL, tool_input, error=stale, is_interrupt=False), session)
    assert qwen.shell_turn(call(workspace, event, "t1", qwen.SHELL, tool_input, error=stale)) is None
    assert _served(workspace, session, "t2") is None


def test_a_read_in_a_subdirectory_is_decided_where_it_ran(workspace: pathlib.Path, session: DurableSession) -> None:
    """ledger_impl/agents/qwen.py line 91: without the payload's cwd, `cat notes.txt` run in
    `sub/` was decided as the root's `notes.txt` and served the root file's text."""
    sub = subdirectory_with_other_notes(workspace)
    harness_read(session, "alpha\nbeta")
    in_sub = {**call(workspace, "PreToolUse", "t1", qwen.SHELL, {"command": READ}), "cwd": str(sub)}
    assert "hookSpecificOutput" not in (qwen.handle(in_sub, session) or {})
    assert _served(workspace, session, "t2") is not None  # from the root, it is the stored read


def test_another_command_s_result_is_never_recorded_as_this_one_s(workspace: pathlib.Path, session: DurableSession) -> None:
    """ledger_impl/agents/qwen.py line 126: the result's command was compared by order, so a
    result naming a command that sorts before the decided one (`cat aaa.txt` for `cat
    notes.txt`) was recorded exactly, and its output served for the decided command."""
    run_shell(workspace, session, "t1", READ, shell_text("cat aaa.txt", "from another file"))
    assert _served(workspace, session, "t2") is None


@pytest.mark.parametrize("tool, tool_input, command", [
    ("edit", {"file_path": "a b"}, "touch -c -- 'a b'"),
    ("notebook_edit", {"notebook_path": "n.ipynb"}, "touch -c -- n.ipynb"),
    ("write_file", {"file_path": "w.txt"}, "touch -c -- w.txt"),
    ("write_file", {"absolute_path": "/abs/w.txt"}, "touch -c -- /abs/w.txt"),
    ("read_file", {"file_path": "r.txt"}, "cat -n r.txt"),
    ("read_file", {"file_path": "r.txt", "limit": 5}, "sed -n '1,5p' r.txt"),
    ("read_file", {"file_path": "r.txt", "offset": 2}, "sed -n '3,$p' r.txt"),
])
def test_each_file_tool_is_decided_as_the_shell_command_it_stands_for(tool: str, tool_input: dict[str, Any],
                                                                      command: str) -> None:
    """ledger_impl/agents/qwen.py line 138: a file tool was told apart from `read_file` by
    order, and `edit` and `notebook_edit` (which sort before it) were decided as reads: the
    detector bracketed no write, and the file they changed could be served as before."""
    assert qwen.command_for(tool, tool_input) == command


def test_an_edit_is_bracketed_as_a_write(workspace: pathlib.Path, session: DurableSession) -> None:
    """ledger_impl/agents/qwen.py line 138: the same, end to end: after an `edit`, the read of
    the file it changed runs again."""
    harness_read(session, "alpha\nbeta")
    edit = {"file_path": "notes.txt", "old_string": "beta", "new_string": "gamma"}
    qwen.handle(call(workspace, "PreToolUse", "e1", "edit", edit), session)
    (workspace / "notes.txt").write_text("alpha\ngamma\n")
    qwen.handle(call(workspace, "PostToolUse", "e1", "edit", edit,
                     tool_response={"llmContent": "Successfully modified file", "returnDisplay": ""}), session)
    assert _served(workspace, session, "t2") is None


def _lines(count: int) -> str:
    return "\n".join(f"line {n}" for n in range(count))


def test_a_result_is_cut_past_1000_lines_or_25000_characters_not_at_them() -> None:
    """Qwen cuts a tool result longer than 25,000 UTF-16 units or 1,000 lines; a result exactly
    at either limit is whole (the six lines around the output are part of the count)."""
    shell = {"command": "x"}
    assert qwen._outcome(qwen.SHELL, shell, shell_text("x", _lines(994))).exact  # 1,000 lines in all
    assert not qwen._outcome(qwen.SHELL, shell, shell_text("x", _lines(995))).exact
    frame = len(shell_text("x", ""))  - len("(empty)")
    assert qwen._outcome(qwen.SHELL, shell, shell_text("x", "a" * (25_000 - frame))).exact
    assert not qwen._outcome(qwen.SHELL, shell, shell_text("x", "a" * (25_001 - frame))).exact


def test_a_result_of_another_tool_is_never_split_as_a_shell_result(workspace: pathlib.Path, session: DurableSession) -> None:
    """Only `run_shell_command` results have the sections; a `read_file` whose input carries a
    `command` and whose text looks like a shell result is recorded as the text it is."""
    read = {"file_path": "notes.txt", "command": "cat -n notes.txt"}
    qwen.handle(call(workspace, "PreToolUse", "r1", qwen.READ, read), session)
    qwen.handle(call(workspace, "PostToolUse", "r1", qwen.READ, read,
                     tool_response={"llmContent": shell_text("cat -n notes.txt", "not the file"), "returnDisplay": ""}), session)
    assert _served(workspace, session, "t2", "cat -n notes.txt") is None


@pytest.mark.parametrize("tool", ["edit", "read_file", "write_file", "notebook_edit"])
def test_only_a_shell_call_is_a_shell_turn(workspace: pathlib.Path, tool: str) -> None:
    tool_input = {"command": READ, "file_path": "notes.txt"}
    finished = call(workspace, "PostToolUse", "t1", tool, tool_input,
                    tool_response={"llmContent": shell_text(READ, "alpha"), "returnDisplay": ""})
    assert qwen.shell_turn(finished) is None


def test_a_finish_that_cannot_be_split_is_a_turn_with_status_0(workspace: pathlib.Path) -> None:
    """The guard reads the output's error lines; the status it gets is 0, as Qwen showed none."""
    cancelled = call(workspace, "PostToolUse", "t1", qwen.SHELL, {"command": READ},
                     tool_response={"llmContent": "Command was cancelled by user before it could complete.", "returnDisplay": ""})
    assert qwen.shell_turn(cancelled) == (READ, "Command was cancelled by user before it could complete.", 0)


def test_the_tool_mask_denies_each_tool_and_is_empty_for_none() -> None:
    assert qwen.tool_mask([]) == ""
    assert json.loads(qwen.tool_mask(["web_fetch", "todo_write"])) == {"permissions": {"deny": ["web_fetch", "todo_write"]}}


def test_the_user_s_settings_are_under_the_home_directory(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert qwen.AGENT.hooks.settings.user() == tmp_path / ".qwen" / "settings.json"


def test_a_stored_result_serves_the_same_command_only(workspace: pathlib.Path, session: DurableSession) -> None:
    """Results are stored as Qwen renders them (trimmed), so lines cut from one are not what
    another command over the same lines would show: no slice is served from them."""
    run_shell(workspace, session, "t1", READ, shell_text(READ, "alpha\nbeta"))
    assert _served(workspace, session, "t2", "sed -n '1,1p' notes.txt") is None
    assert _served(workspace, session, "t3") is not None  # the same command is


def test_the_session_s_view_is_given_at_its_start_and_nothing_when_it_is_empty(
        workspace: pathlib.Path, session: DurableSession) -> None:
    start = {"session_id": "d63acf5b", "cwd": str(workspace), "hook_event_name": "SessionStart", "source": "startup"}
    harness_read(session, "alpha\nbeta")
    reply = qwen.handle(start, session)
    assert reply == {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": session.view()}}

    assert qwen.handle(start, EmptySession()) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("tool_input", [{"command": ["cat", "notes.txt"]}, "cat notes.txt", {}])
def test_a_shell_call_without_a_command_string_is_no_shell_turn(workspace: pathlib.Path, tool_input: Any) -> None:
    finished = call(workspace, "PostToolUse", "t1", qwen.SHELL, {},
                    tool_response={"llmContent": shell_text(READ, "alpha"), "returnDisplay": ""})
    assert qwen.shell_turn({**finished, "tool_input": tool_input}) is None

