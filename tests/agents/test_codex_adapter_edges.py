"""Codex's adapter at its edges: calls it must leave alone, where a call's exit status may come
from, how the transcript is searched, and the settings it writes.

Codex's PostToolUse carries a shell call's output as text and no exit status; the adapter takes
the status from Codex's own transcript, and only an exact (output, status) is ever served. Each
test below feeds payloads and transcripts as Codex 0.171 writes them (see
`tests/agents/test_codex_hook.py`) to a real session on a workspace, without the probe (the
outputs are made up for the adapter)."""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import pytest

from ledger_impl.agents import codex
from adapter_edges import READ, harness_read, subdirectory_with_other_notes
from ledger_impl.session import DurableSession
from test_codex_hook import COMMON, completed, post_payload, pre_payload

SESSION_PROBE = False
STORED = "alpha\nbeta\n"


def _reply(payload: dict[str, Any], session: DurableSession) -> dict[str, Any]:
    return (codex.handle(payload, session) or {}).get("hookSpecificOutput", {})


def _served(workspace: pathlib.Path, session: DurableSession, call_id: str = "call_9") -> str | None:
    """The reason of a Reuse of READ now (None: it runs)."""
    output = _reply(pre_payload(workspace, call_id, READ), session)
    return output["permissionDecisionReason"] if output.get("permissionDecision") == "deny" else None




@pytest.mark.parametrize("change", [
    {"tool_use_id": 7}, {"tool_use_id": None}, {"tool_name": "web_search"},
    {"hook_event_name": "Stop"}, {"hook_event_name": "Notification"}, {"hook_event_name": "SubagentStop"},
])
def test_a_call_that_is_not_a_governed_tool_call_is_not_decided(
        workspace: pathlib.Path, session: DurableSession, change: dict[str, Any]) -> None:
    """ledger_impl/agents/codex.py line 59: no opinion, even for a read that could be served
    now; decided as a PreToolUse (any event after its name in sort order, Stop or SubagentStop),
    it was answered with a Reuse that Codex never asked for, and left a call open."""
    harness_read(session, STORED)
    assert codex.handle({**pre_payload(workspace, "call_1", READ), **change}, session) is None
    reason = _served(workspace, session)
    assert reason is not None and "unchanged result of step 1," in reason


@pytest.mark.parametrize("event", ["Stop", "Notification", "SubagentStop"])
def test_an_event_that_is_not_post_tool_use_records_no_result(
        workspace: pathlib.Path, session: DurableSession, event: str) -> None:
    """ledger_impl/agents/codex.py line 61: a result recorded from any event after PostToolUse's
    name in sort order (Stop, SubagentStop), or before it (Notification), would be served to
    the next identical read although the call it belongs to never finished."""
    assert codex.handle(pre_payload(workspace, "call_1", READ), session) is None
    stale = {"output": "not what the file holds\n", "exit_code": 0}
    codex.handle({**post_payload(workspace, "call_1", READ, stale), "hook_event_name": event}, session)
    assert _served(workspace, session, "call_2") is None


def test_a_read_in_a_subdirectory_is_decided_where_it_ran(workspace: pathlib.Path, session: DurableSession) -> None:
    """ledger_impl/agents/codex.py line 107: without the payload's cwd, `cat notes.txt` run in
    `sub/` was decided as the root's `notes.txt` and served the root file's text."""
    sub = subdirectory_with_other_notes(workspace)
    harness_read(session, STORED)
    output = _reply({**pre_payload(workspace, "call_1", READ), "cwd": str(sub)}, session)
    assert output.get("permissionDecision") != "deny"
    assert _served(workspace, session, "call_2") is not None  # from the root, it is the stored read


def _transcript(tmp_path: pathlib.Path, *lines: str) -> str:
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def _event(item: Any, kind: str = "item_completed") -> str:
    return json.dumps({"timestamp": "t", "type": "event_msg", "payload": {"type": kind, "item": item}})


def _shell_post(workspace: pathlib.Path, transcript: Any, response: Any = "out\n", call_id: str = "call_1") -> dict[str, Any]:
    return {**post_payload(workspace, call_id, "make test", response), "transcript_path": transcript}


def test_a_finished_shell_turn_is_its_command_output_and_the_transcript_s_status(
        workspace: pathlib.Path, tmp_path: pathlib.Path) -> None:
    transcript = _transcript(tmp_path, completed("call_1", "make test", "out\n", 2))
    assert codex.shell_turn(_shell_post(workspace, transcript)) == ("make test", "out\n", 2)
    as_list = {**_shell_post(workspace, transcript), "tool_input": {"command": ["bash", "-lc", "make test"]}}
    assert codex.shell_turn(as_list) == ("bash -lc 'make test'", "out\n", 2)  # an argv input is joined


@pytest.mark.parametrize("change", [
    {"hook_event_name": "PreToolUse"}, {"hook_event_name": "Notification"}, {"hook_event_name": "Stop"},
    {"tool_name": "apply_patch"}, {"tool_input": {"patch": "x"}}, {"tool_input": None},
])
def test_anything_but_a_finished_shell_call_is_no_shell_turn(workspace: pathlib.Path, change: dict[str, Any]) -> None:
    assert codex.shell_turn({**_shell_post(workspace, None), **change}) is None


def test_a_status_the_payload_carries_is_kept_whatever_the_transcript_says(
        workspace: pathlib.Path, tmp_path: pathlib.Path) -> None:
    transcript = _transcript(tmp_path, completed("call_1", "make test", "out\n", 3))
    turn = codex.shell_turn(_shell_post(workspace, transcript, {"output": "out\n", "exit_code": 0}))
    assert turn == ("make test", "out\n", 0)


def test_a_response_of_unknown_shape_is_never_served_whatever_the_transcript_says(
        workspace: pathlib.Path, session: DurableSession, tmp_path: pathlib.Path) -> None:
    """ledger_impl/agents/codex.py line 83: a response that is neither text nor an (output,
    exit_code) object is recorded as the empty output, inexact; asked of the transcript like a
    text response, its empty output matched a call that printed nothing there, and `cat
    notes.txt` was then served as empty."""
    transcript = _transcript(tmp_path, completed("call_1", READ, "", 0))
    codex.handle({**pre_payload(workspace, "call_1", READ), "transcript_path": transcript}, session)
    codex.handle({**post_payload(workspace, "call_1", READ, {"output": STORED}), "transcript_path": transcript}, session)
    assert _served(workspace, session, "call_2") is None


def test_a_patch_s_result_is_not_completed_from_the_transcript(
        workspace: pathlib.Path, session: DurableSession, tmp_path: pathlib.Path) -> None:
    """Only shell calls have a CommandExecution in the transcript; a patch whose id and text
    happen to match one keeps its inexact status 0, and no failure is shown for it."""
    transcript = _transcript(tmp_path, completed("call_p", "apply_patch", "Success. Updated: notes.txt", 1))
    patch = {**pre_payload(workspace, "call_p", ""), "tool_name": "apply_patch", "transcript_path": transcript,
             "tool_input": {"command": "*** Begin Patch\n*** End Patch\n"}}
    codex.handle(patch, session)
    codex.handle({**patch, "hook_event_name": "PostToolUse", "tool_response": "Success. Updated: notes.txt"}, session)
    assert "exit 1" not in session.view() and "failed" not in session.view().lower()


def _status(tmp_path: pathlib.Path, *lines: str, output: str = "out\n") -> int | None:
    return codex.exit_status_from_transcript(_transcript(tmp_path, *lines), "call_1", output)


def test_the_completion_is_found_past_newer_events_and_lines_that_are_not_it(tmp_path: pathlib.Path) -> None:
    """Newer lines that mention the call but are not its CommandExecution's completion are
    passed over: another event kind, other items naming the call in their text, broken lines."""
    command = {"type": "CommandExecution", "command": ["bash", "-lc", "echo call_1"], "status": "completed",
               "aggregated_output": "other\n", "exit_code": 9}
    newer = [
        _event({**command, "id": "call_1", "status": "in_progress"}, kind="item_updated"),
        _event({**command, "id": "call_0"}), _event({**command, "id": "call_2"}),
        _event({"type": "AgentMessage", "id": "call_1", "text": "done"}),
        _event({"type": "Reasoning", "id": "call_1", "text": "done"}),
        _event("call_1"),
        json.dumps({"note": "item_completed call_1"}),
        json.dumps({"payload": ["item_completed", "call_1"]}),
        '{"payload": {"item_completed": "call_1"',
        json.dumps({"type": "token_count"}),
    ]
    assert _status(tmp_path, completed("call_1", "make test", "out\n", 2), *newer) == 2


def test_the_newest_completion_of_the_call_decides(tmp_path: pathlib.Path) -> None:
    assert _status(tmp_path, completed("call_1", "make test", "out\n", 2), completed("call_1", "make test", "other\n", 0)) is None


def test_a_completion_on_the_transcript_s_first_line_is_read_whole(tmp_path: pathlib.Path) -> None:
    assert _status(tmp_path, completed("call_1", "make test", "out\n", 4)) == 4


@pytest.mark.parametrize("filler_bytes", [64 * 1024, 3 * 1024 * 1024 + 512 * 1024])
def test_a_completion_followed_by_megabytes_of_events_is_found(tmp_path: pathlib.Path, filler_bytes: int) -> None:
    """The tail searched is the transcript's last 4 MiB: a long turn's later events (streamed
    output, token counts) do not push its completion out of reach."""
    filler = json.dumps({"type": "event_msg", "payload": {"type": "agent_message_delta", "delta": "x" * 1000}})
    count = filler_bytes // (len(filler) + 1)
    assert _status(tmp_path, completed("call_1", "make test", "out\n", 5), *([filler] * count)) == 5


def test_a_transcript_that_is_not_a_readable_path_gives_no_status(tmp_path: pathlib.Path) -> None:
    """A descriptor number is not a path: `open(5)` would read (and close) whatever the process
    has open there."""
    assert codex.exit_status_from_transcript(str(tmp_path / "absent.jsonl"), "call_1", "out\n") is None
    assert codex.exit_status_from_transcript(str(tmp_path), "call_1", "out\n") is None  # a directory
    assert codex.exit_status_from_transcript("", "call_1", "out\n") is None
    path = _transcript(tmp_path, completed("call_1", "make test", "out\n", 0))
    descriptor = os.open(path, os.O_RDONLY)
    try:
        assert codex.exit_status_from_transcript(descriptor, "call_1", "out\n") is None
        os.fstat(descriptor)  # still open: nothing took it over
    finally:
        os.close(descriptor)


def test_the_tool_mask_turns_each_feature_off_and_is_empty_for_none() -> None:
    assert codex.tool_mask([]) == ""
    assert codex.tool_mask(["web_search", "view_image"]) == '[features]\n"web_search" = false\n"view_image" = false'


def test_the_user_s_hooks_file_is_under_codex_home_or_the_home_directory(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = codex.AGENT.hooks.settings.user
    assert callable(user)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    assert user() == tmp_path / "codex-home" / "hooks.json"
    monkeypatch.delenv("CODEX_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user() == tmp_path / "home" / ".codex" / "hooks.json"
