"""`ledger hook gemini`: payloads in Gemini CLI 0.61's hook format (its bundled
docs/hooks/reference.md, and the payloads its real CLI sent, see test_gemini_cli_e2e.py), and
which shell results are recorded exactly enough to be served again."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from ledger_impl.agents import gemini
from ledger_impl.agents.hook_session import Outcome
from ledger_impl.session import DurableSession


#: Outputs made up for the adapter's translation: no probe (see conftest's `session`).
SESSION_PROBE = False


COMMON = {"session_id": "7f3c4462", "transcript_path": "/nowhere/session.jsonl", "timestamp": "2026-12-04T19:36:09Z"}


def before(root: pathlib.Path, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {**COMMON, "cwd": str(root), "hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": tool_input}


def after(root: pathlib.Path, tool: str, tool_input: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    return {**before(root, tool, tool_input), "hook_event_name": "AfterTool", "tool_response": response}


def shell_response(output: str, status: int = 0, shown: str | None = None) -> dict[str, Any]:
    """`tool_response` of a finished `run_shell_command`, as Gemini CLI 0.61 builds it."""
    parts = [f"Output: {output or '(empty)'}", *([f"Exit Code: {status}"] if status else []), "Process Group PGID: 4242"]
    if shown is None:
        shown = output if output.strip() else f"Command exited with code: {status}" if status else ""
    return {"llmContent": "<untrusted_context>\n" + "\n".join(parts) + "\n</untrusted_context>", "returnDisplay": shown}


def run_shell(root: pathlib.Path, session: DurableSession, command: str, response: dict[str, Any]) -> Any:
    """One shell call through both hooks; the BeforeTool reply."""
    reply = gemini.handle(before(root, "run_shell_command", {"command": command}), session)
    if reply is None or reply.get("decision") != "deny":
        gemini.handle(after(root, "run_shell_command", {"command": command}, response), session)
    return reply


def test_a_repeated_shell_read_is_denied_with_the_stored_output_and_its_status(
        workspace: pathlib.Path, session: DurableSession) -> None:
    assert run_shell(workspace, session, "cat notes.txt", shell_response("alpha\nbeta", 3)) is None
    reply = run_shell(workspace, session, "cat notes.txt", shell_response("unused"))
    assert reply is not None and reply["decision"] == "deny"
    header, output = reply["reason"].split("\n", 1)
    assert "exit status 3" in header and output == "alpha\nbeta"
    (workspace / "notes.txt").write_text("gamma\n")
    assert run_shell(workspace, session, "cat notes.txt", shell_response("gamma")) is None  # changed: runs


@pytest.mark.parametrize("response", [
    # An output line that starts like a section: the split is not the only one.
    shell_response("alpha\nExit Code: 3"),
    # An exit status line the display text does not confirm (the output's own last line?).
    shell_response("alpha", 3, shown="alpha\nExit Code: 3"),
    # Sections that say the run was not a plain finish.
    {"llmContent": "<untrusted_context>\nOutput: alpha\nSignal: 9\nProcess Group PGID: 1\n</untrusted_context>",
     "returnDisplay": "alpha"},
    {"llmContent": "<untrusted_context>\nOutput: alpha\nBackground PIDs: 7\nProcess Group PGID: 1\n</untrusted_context>",
     "returnDisplay": "alpha"},
    # No PGID line, the untrusted-content marks missing, an error, a cancelled command.
    {"llmContent": "<untrusted_context>\nOutput: alpha\n</untrusted_context>", "returnDisplay": "alpha"},
    {"llmContent": "Output: alpha\nProcess Group PGID: 1", "returnDisplay": "alpha"},
    {**shell_response("alpha"), "error": {"message": "spawn failed", "type": "shell_execute_error"}},
    {"llmContent": "Command was cancelled by user before it could complete.", "returnDisplay": "cancelled"},
    # Longer than Gemini's cut (in UTF-16 units: each of these characters is two).
    shell_response("\U0001F600" * 20_000),
])
def test_a_result_that_cannot_be_split_for_sure_is_recorded_inexact(response: dict[str, Any]) -> None:
    assert gemini._outcome("run_shell_command", {"command": "cat notes.txt"}, response).exact is False


def test_a_result_just_within_gemini_s_cut_is_exact() -> None:
    response = shell_response("x" * (gemini.TRUNCATION_THRESHOLD - 100))
    assert len(response["llmContent"]) <= gemini.TRUNCATION_THRESHOLD
    assert gemini._outcome("run_shell_command", {"command": "x"}, response).exact


@pytest.mark.parametrize(("response", "expected"), [
    (shell_response("alpha\nbeta"), Outcome("alpha\nbeta", 0, rendering="trimmed")),
    (shell_response("ls: cannot access 'x'", 2), Outcome("ls: cannot access 'x'", 2, rendering="trimmed")),
    (shell_response("", 1), Outcome("(empty)", 1, rendering="trimmed")),
    (shell_response(""), Outcome("(empty)", 0, rendering="trimmed")),
])
def test_a_plain_finish_is_recorded_as_the_model_saw_it(response: dict[str, Any], expected: Outcome) -> None:
    assert gemini._outcome("run_shell_command", {"command": "x"}, response) == expected


def test_an_inexact_result_is_never_served(workspace: pathlib.Path, session: DurableSession) -> None:
    assert run_shell(workspace, session, "cat notes.txt", shell_response("alpha\nExit Code: 3")) is None
    reply = run_shell(workspace, session, "cat notes.txt", shell_response("alpha"))
    assert reply is None or reply.get("decision") != "deny"


def test_a_read_file_is_decided_but_never_denied_and_its_unchanged_note_follows_the_result(
        workspace: pathlib.Path, session: DurableSession) -> None:
    """A stored result that would serve a read_file makes it a Nudge (spec `Request.withhold`):
    the read runs, and the note naming the step comes back with its result."""
    read = {"file_path": "notes.txt"}
    assert gemini.command_for("read_file", read) == "cat -n notes.txt"
    assert gemini.command_for("read_file", {"file_path": "a b", "start_line": 2, "end_line": 5}) == "sed -n '2,5p' 'a b'"
    assert run_shell(workspace, session, "cat -n notes.txt", shell_response("1\talpha\n2\tbeta")) is None
    assert gemini.handle(before(workspace, "read_file", read), session) is None
    reply = gemini.handle(after(workspace, "read_file", read, {"llmContent": "alpha\nbeta", "returnDisplay": ""}), session)
    assert reply is not None
    assert reply["hookSpecificOutput"]["additionalContext"] == "[ledger] Unchanged since step 1: you already saw this result then."


def test_a_background_command_is_not_served(workspace: pathlib.Path, session: DurableSession) -> None:
    command = {"command": "cat notes.txt", "is_background": True}
    assert run_shell(workspace, session, "cat notes.txt", shell_response("alpha\nbeta")) is None
    reply = gemini.handle(before(workspace, "run_shell_command", command), session)
    assert reply is None or reply.get("decision") != "deny"


def test_a_background_command_s_result_never_serves_it_run_in_the_foreground(
        workspace: pathlib.Path, session: DurableSession) -> None:
    # A background command's result is what it printed before Gemini moved on: never the output.
    command = {"command": "cat notes.txt", "is_background": True}
    assert gemini.handle(before(workspace, "run_shell_command", command), session) is None
    gemini.handle(after(workspace, "run_shell_command", command, shell_response("alpha")), session)
    reply = gemini.handle(before(workspace, "run_shell_command", {"command": "cat notes.txt"}), session)
    assert reply is None or reply.get("decision") != "deny"


def test_before_and_after_of_one_call_share_its_name_and_other_calls_do_not(workspace: pathlib.Path) -> None:
    call = before(workspace, "run_shell_command", {"command": "cat notes.txt"})
    assert gemini.call_id(call) == gemini.call_id({**call, "hook_event_name": "AfterTool", "tool_response": {}})
    assert gemini.call_id(call) != gemini.call_id({**call, "tool_input": {"command": "cat  notes.txt"}})
    assert gemini.call_id(call) != gemini.call_id({**call, "session_id": "another"})
    assert gemini.call_id({**call, "session_id": None}) is None


def test_an_edit_is_bracketed_as_a_write_of_its_file(workspace: pathlib.Path, session: DurableSession) -> None:
    assert run_shell(workspace, session, "cat notes.txt", shell_response("alpha\nbeta")) is None
    edit = {"file_path": str(workspace / "notes.txt"), "old_string": "alpha", "new_string": "omega"}
    assert gemini.command_for("replace", edit) == f"touch -c -- {workspace / 'notes.txt'}"
    gemini.handle(before(workspace, "replace", edit), session)
    (workspace / "notes.txt").write_text("omega\nbeta\n")
    gemini.handle(after(workspace, "replace", edit, {"llmContent": "Successfully modified file", "returnDisplay": ""}),
                  session)
    assert run_shell(workspace, session, "cat notes.txt", shell_response("omega\nbeta")) is None


def test_session_and_prompt_events_carry_the_view_and_the_stop_replies_are_gemini_s(
        workspace: pathlib.Path, session: DurableSession) -> None:
    run_shell(workspace, session, "cat notes.txt", shell_response("alpha\nbeta"))
    for event in ("SessionStart", "BeforeAgent"):
        reply = gemini.handle({**COMMON, "cwd": str(workspace), "hook_event_name": event}, session)
        assert reply is not None and reply["hookSpecificOutput"]["additionalContext"]
    assert gemini.AGENT.hooks.replies.stop("enough") == {"continue": False, "stopReason": "enough"}
    assert gemini.stop_before_reply("enough")["decision"] == "deny"
    assert gemini.shell_turn(after(workspace, "run_shell_command", {"command": "ls x"}, shell_response("no", 2))) == (
        "ls x", "no", 2)


def test_a_nudge_reaches_the_model_with_the_call_s_result(workspace: pathlib.Path, session: DurableSession) -> None:
    """BeforeTool cannot add context for the model; the note comes back from the record and is
    AfterTool's `additionalContext`, which Gemini appends to the result."""
    tests = {"command": "pytest -q"}
    for turn in (1, 2):
        assert gemini.handle(before(workspace, "run_shell_command", tests), session) is None
        reply = gemini.handle(after(workspace, "run_shell_command", tests, shell_response("1 passed")), session)
        if turn == 1:
            assert reply is None
    assert reply is not None and reply["hookSpecificOutput"]["hookEventName"] == "AfterTool"
    assert "already ran at step 1" in reply["hookSpecificOutput"]["additionalContext"]


def test_a_reuse_asked_by_reference_of_a_plugin_without_context_tracking_is_verbatim(tmp_path: pathlib.Path) -> None:
    """`ledger hook gemini --reuse-answer reference` (settings written by hand: install refuses
    it): the repeated read is answered with the stored output, as without the option, and the
    user is told that references are not available."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")

    def hook(payload: dict[str, Any]) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hook", "gemini", "--no-probe", "--state-dir",
                               str(tmp_path / "state"), "--reuse-answer", "reference"], input=json.dumps(payload),
                              capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(tmp_path)})
        assert done.returncode == 0 and "internal error" not in done.stderr, done.stderr
        return json.loads(done.stdout or "{}")

    call = ("run_shell_command", {"command": "cat notes.txt"})
    assert "decision" not in hook(before(root, *call))
    hook(after(root, *call, shell_response("alpha\nbeta")))
    reply = hook(before(root, *call))
    assert reply["decision"] == "deny" and reply["reason"].endswith("Output, verbatim:\nalpha\nbeta"), reply
    assert "--reuse-answer reference" in reply["systemMessage"], reply
