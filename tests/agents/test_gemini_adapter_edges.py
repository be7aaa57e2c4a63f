"""Gemini CLI's adapter at its edges: how a call is named without a call id, calls it must leave
alone, which tool call is decided as which command, which shell results split for sure, and
which event records one. Payloads as Gemini CLI 0.61 sends them (`tests/agents/
test_gemini_hook.py`), against a real session without the probe (the outputs are made up)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from adapter_edges import READ, harness_read, subdirectory_with_other_notes
from ledger_impl.agents import gemini
from ledger_impl.session import DurableSession
from test_gemini_hook import COMMON, after, before, run_shell, shell_response

SESSION_PROBE = False


def _served(workspace: pathlib.Path, session: DurableSession, command: str = READ) -> str | None:
    """The reason of a Reuse of `command` now (None: it runs)."""
    reply = gemini.handle(before(workspace, gemini.SHELL, {"command": command}), session) or {}
    return reply["reason"] if reply.get("decision") == "deny" else None


def test_a_call_is_named_alike_before_and_after_whatever_its_input_s_key_order_or_text() -> None:
    first = {**COMMON, "tool_name": gemini.SHELL, "tool_input": {"command": "ls", "is_background": False}}
    reordered = {**first, "tool_input": {"is_background": False, "command": "ls"}}
    assert gemini.call_id(first) == gemini.call_id(reordered)
    assert gemini.call_id({**first, "tool_input": {"command": "ls -a"}}) != gemini.call_id(first)
    # JSON may carry a lone surrogate (`"\ud800"`); the name is still made, not an error.
    assert gemini.call_id({**first, "tool_input": {"command": "echo \ud800"}}).startswith("gemini-")


@pytest.mark.parametrize("change", [{"session_id": ""}, {"session_id": 5}, {"session_id": None}, {"tool_name": None}])
def test_a_call_without_a_session_or_a_tool_name_has_no_name(change: dict[str, Any]) -> None:
    payload = {**COMMON, "tool_name": gemini.SHELL, "tool_input": {"command": "ls"}, **change}
    assert gemini.call_id(payload) is None
    assert gemini.turn_id(payload) is None


@pytest.mark.parametrize("timestamp, expected", [("2026-12-04T19:36:09Z", True), ("", False), (5, False), (None, False)])
def test_a_turn_is_the_call_s_name_at_the_time_gemini_fired_it(timestamp: Any, expected: bool) -> None:
    payload = {**COMMON, "tool_name": gemini.SHELL, "tool_input": {"command": "ls"}, "timestamp": timestamp}
    name = gemini.call_id(payload)
    assert gemini.turn_id(payload) == (f"{name}@{timestamp}" if expected else None)


@pytest.mark.parametrize("change", [
    {"session_id": ""}, {"session_id": 5}, {"tool_name": "google_web_search"}, {"tool_input": "cat notes.txt"},
    {"hook_event_name": "BeforeToolSelection"}, {"hook_event_name": "Notification"},
])
def test_a_call_that_is_not_a_governed_tool_call_is_not_decided(
        workspace: pathlib.Path, session: DurableSession, change: dict[str, Any]) -> None:
    """ledger_impl/agents/gemini.py line 104: no opinion, even for a read that could be served
    now; an event sorting after BeforeTool's name (BeforeToolSelection, Notification) was
    decided as one and answered with a Reuse."""
    harness_read(session, "alpha\nbeta")
    assert gemini.handle({**before(workspace, gemini.SHELL, {"command": READ}), **change}, session) is None
    reason = _served(workspace, session)
    assert reason is not None and "unchanged result of step 1," in reason


@pytest.mark.parametrize("event", ["AfterAgent", "Notification", "SessionEnd"])
def test_only_after_tool_records_a_result(workspace: pathlib.Path, session: DurableSession, event: str) -> None:
    """ledger_impl/agents/gemini.py line 106: an event sorting before AfterTool's name
    (AfterAgent) or after it (Notification) recorded the response it carried for the call,
    which was served to the next identical read."""
    shell = {"command": READ}
    assert gemini.handle(before(workspace, gemini.SHELL, shell), session) is None
    stale = shell_response("not what the file holds")
    gemini.handle({**after(workspace, gemini.SHELL, shell, stale), "hook_event_name": event}, session)
    assert _served(workspace, session) is None


def test_a_read_in_a_subdirectory_is_decided_where_it_ran(workspace: pathlib.Path, session: DurableSession) -> None:
    """ledger_impl/agents/gemini.py line 119: without the payload's cwd, `cat notes.txt` run in
    `sub/` was decided as the root's `notes.txt` and served the root file's text."""
    sub = subdirectory_with_other_notes(workspace)
    harness_read(session, "alpha\nbeta")
    in_sub = {**before(workspace, gemini.SHELL, {"command": READ}), "cwd": str(sub)}
    assert (gemini.handle(in_sub, session) or {}).get("decision") != "deny"
    gemini.handle({**in_sub, "hook_event_name": "AfterTool", "tool_response": shell_response("the other file")}, session)
    assert _served(workspace, session) is not None  # from the root, it is the stored read


def test_a_stored_result_serves_the_same_command_only(workspace: pathlib.Path, session: DurableSession) -> None:
    """Results are stored as Gemini renders them (trimmed): no slice is served from them."""
    run_shell(workspace, session, READ, shell_response("alpha\nbeta"))
    assert _served(workspace, session, "sed -n '1,1p' notes.txt") is None
    assert _served(workspace, session) is not None


@pytest.mark.parametrize("tool, tool_input, command", [
    ("write_file", {"file_path": "w.txt"}, "touch -c -- w.txt"),
    ("replace", {"file_path": "a b"}, "touch -c -- 'a b'"),
    ("read_file", {"file_path": "r.txt"}, "cat -n r.txt"),
    ("read_file", {"file_path": "r.txt", "start_line": 5}, "sed -n '5,$p' r.txt"),
    ("read_file", {"file_path": "r.txt", "end_line": 9}, "sed -n '1,9p' r.txt"),
    ("read_file", {"file_path": "r.txt", "start_line": 1, "end_line": 9}, "sed -n '1,9p' r.txt"),
    ("read_file", {"file_path": "r.txt", "start_line": -3, "end_line": 9}, "sed -n '1,9p' r.txt"),
])
def test_each_file_tool_is_decided_as_the_shell_command_it_stands_for(tool: str, tool_input: dict[str, Any],
                                                                      command: str) -> None:
    assert gemini.command_for(tool, tool_input) == command


def _content_of_length(units: int) -> dict[str, Any]:
    frame = len(shell_response("")["llmContent"]) - len("(empty)")
    return shell_response("a" * (units - frame))


def test_a_result_is_cut_past_40000_characters_not_at_them() -> None:
    shell = {"command": "x"}
    at, past = _content_of_length(40_000), _content_of_length(40_001)
    assert len(at["llmContent"]) == 40_000 and gemini._outcome(gemini.SHELL, shell, at).exact
    assert not gemini._outcome(gemini.SHELL, shell, past).exact


@pytest.mark.parametrize("output, status, shown, exact", [
    ("no such file", 2, "no such file", True),
    ("no such file", 2, "something else", False),  # a status line that may be the output's last line
    ("(empty)", 2, "Command exited with code: 2", True),
    ("(empty)", 2, "Command exited with code: 3", False),
    ("zzz", 2, "Command exited with code: 2", False),
    ("aaa", 2, "Command exited with code: 2", False),
    ("#1 failed", 2, "Command exited with code: 2", False),  # an output sorting before "(empty)"
    ("(empty)", 2, "Command exited with code: 1", False),  # a message sorting before the status's
    ("alpha", 0, "", True),  # no status line: nothing to tell apart
])
def test_a_status_line_is_believed_only_when_the_display_text_confirms_it(
        output: str, status: int, shown: str, exact: bool) -> None:
    """ledger_impl/agents/gemini.py line 151: an `Exit Code: N` line may be the last line of the
    output of a command that exited 0; believed without the display text's confirmation (its
    comparisons made by order), the output was recorded without that line and served with
    status N."""
    response = shell_response(output, status, shown)
    outcome = gemini._outcome(gemini.SHELL, {"command": "x"}, response)
    assert outcome.exact is exact
    # Not believed: the whole text the model read, never served, status unknown (0).
    assert (outcome.output, outcome.exit_code) == ((output, status) if exact else (response["llmContent"], 0))


@pytest.mark.parametrize("response", [
    {**shell_response("alpha"), "error": "spawn failed"},  # an error: not a clean result
    {"llmContent": "<untrusted_context>\nOutput: alpha\nSignal: 9\nProcess Group PGID: 1\n</untrusted_context>",
     "returnDisplay": "alpha"},  # another section
    shell_response("alpha", 2, "not the output"),  # a status the display does not confirm
])
def test_a_result_that_cannot_be_split_is_a_turn_with_its_text_and_status_0(
        workspace: pathlib.Path, response: dict[str, Any]) -> None:
    """The guard reads the output's error lines; the status it gets is 0, as none is known."""
    turn = gemini.shell_turn(after(workspace, gemini.SHELL, {"command": "ls"}, response))
    assert turn == ("ls", response["llmContent"], 0)


def test_a_result_of_another_tool_is_never_split_as_a_shell_result(workspace: pathlib.Path, session: DurableSession) -> None:
    """ledger_impl/agents/gemini.py line 140: only `run_shell_command` results have the
    sections; a `read_file` (which sorts before it) whose text looked like a shell result was
    split as one and recorded exactly for `cat -n`, whose later shell run it then served."""
    read = {"file_path": "notes.txt"}
    gemini.handle(before(workspace, gemini.READ, read), session)
    gemini.handle(after(workspace, gemini.READ, read, shell_response("not the file")), session)
    assert _served(workspace, session, "cat -n notes.txt") is None


@pytest.mark.parametrize("change", [
    {"hook_event_name": "BeforeTool"}, {"hook_event_name": "AfterAgent"}, {"hook_event_name": "Notification"},
    {"tool_name": "read_file"}, {"tool_name": "write_file"},
    {"tool_input": {"file_path": "x"}}, {"tool_input": "ls"}, {"tool_input": {"command": ["ls"]}},
])
def test_anything_but_a_finished_shell_call_is_no_shell_turn(workspace: pathlib.Path, change: dict[str, Any]) -> None:
    finished = after(workspace, gemini.SHELL, {"command": "ls", "file_path": "x"}, shell_response("alpha"))
    assert gemini.shell_turn({**finished, **change}) is None


def test_the_tool_mask_excludes_each_tool_and_is_empty_for_none() -> None:
    assert gemini.tool_mask([]) == ""
    assert json.loads(gemini.tool_mask(["google_web_search"])) == {"tools": {"exclude": ["google_web_search"]}}
