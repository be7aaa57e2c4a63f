"""`ledger hook qwen`: payloads in Qwen Code 0.24.4's hook format (as its real CLI sent them, see
test_qwen_code_e2e.py), and which shell results are recorded exactly enough to be served again."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from ledger_impl.agents import qwen
from ledger_impl.agents.hook_session import Outcome
from ledger_impl.session import DurableSession


#: Outputs made up for the adapter's translation: no probe (see conftest's `session`).
SESSION_PROBE = False


COMMON = {"session_id": "d63acf5b", "transcript_path": "/nowhere/chat.jsonl", "permission_mode": "yolo"}


def shell_text(command: str, output: str, status: int = 0) -> str:
    """A `run_shell_command` result as Qwen Code 0.24.4 writes it for the model."""
    return (f"Command: {command}\nDirectory: (root)\nOutput: {output or '(empty)'}\nError: (none)\n"
            f"Exit Code: {status}\nSignal: (none)\nProcess Group PGID: (none)")


def call(root: pathlib.Path, event: str, call_id: str, tool: str, tool_input: dict[str, Any],
         **fields: Any) -> dict[str, Any]:
    return {**COMMON, "cwd": str(root), "hook_event_name": event, "tool_name": tool, "tool_input": tool_input,
            "tool_use_id": call_id, "tool_call_id": f"model-{call_id}", **fields}


def run_shell(root: pathlib.Path, session: DurableSession, call_id: str, command: str, text: str,
              status: int = 0) -> Any:
    """One shell call through its hooks, finished as Qwen reports it; the PreToolUse reply."""
    tool_input = {"command": command}
    reply = qwen.handle(call(root, "PreToolUse", call_id, qwen.SHELL, tool_input), session)
    if reply is None or "hookSpecificOutput" not in reply:
        finished = (call(root, "PostToolUse", call_id, qwen.SHELL, tool_input,
                         tool_response={"llmContent": text, "returnDisplay": ""}) if status == 0 else
                    call(root, "PostToolUseFailure", call_id, qwen.SHELL, tool_input, error=text, is_interrupt=False))
        qwen.handle(finished, session)
    return reply


def test_a_repeated_read_is_denied_with_its_output_and_status_and_runs_again_after_a_change(
        workspace: pathlib.Path, session: DurableSession) -> None:
    assert run_shell(workspace, session, "t1", "cat notes.txt", shell_text("cat notes.txt", "alpha\nbeta", 3), 3) is None
    reply = run_shell(workspace, session, "t2", "cat notes.txt", "unused")
    output = reply["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    header, served = output["permissionDecisionReason"].split("\n", 1)
    assert "exit status 3" in header and served == "alpha\nbeta"
    (workspace / "notes.txt").write_text("gamma\n")
    assert run_shell(workspace, session, "t3", "cat notes.txt", shell_text("cat notes.txt", "gamma")) is None


@pytest.mark.parametrize("text", [
    shell_text("cat other.txt", "alpha"),                                   # not the decided command
    shell_text("cat notes.txt", "alpha\nExit Code: 3"),                     # an output line like a section
    shell_text("cat notes.txt", "alpha").replace("Error: (none)", "Error: spawn failed"),
    shell_text("cat notes.txt", "alpha").replace("Signal: (none)", "Signal: 9"),
    shell_text("cat notes.txt", "alpha") + "\nBackground PIDs: 7",
    "Command was cancelled by user before it could complete.",
    # Past either of Qwen's cuts: characters (UTF-16 units) or lines.
    shell_text("cat notes.txt", "\U0001F600" * 12_500),
    shell_text("cat notes.txt", "\n".join(["a"] * 1_000)),
])
def test_a_result_that_cannot_be_split_for_sure_is_recorded_inexact(text: str) -> None:
    assert qwen._outcome(qwen.SHELL, {"command": "cat notes.txt"}, text).exact is False


def test_a_plain_finish_is_recorded_as_the_model_saw_it() -> None:
    within = "\n".join(["a"] * (qwen.TRUNCATION_LINES - 7))  # the other six lines are Qwen's sections
    assert qwen._outcome(qwen.SHELL, {"command": "x"}, shell_text("x", within)) == Outcome(within, 0, rendering="trimmed")
    assert qwen._outcome(qwen.SHELL, {"command": "ls x"}, shell_text("ls x", "no such file", 2)) == Outcome(
        "no such file", 2, rendering="trimmed")
    assert qwen._outcome(qwen.SHELL, {"command": "true"}, shell_text("true", "")) == Outcome("(empty)", 0, rendering="trimmed")


def test_an_interrupted_call_and_an_inexact_result_are_never_served(
        workspace: pathlib.Path, session: DurableSession) -> None:
    tool_input = {"command": "cat notes.txt"}
    qwen.handle(call(workspace, "PreToolUse", "t1", qwen.SHELL, tool_input), session)
    qwen.handle(call(workspace, "PostToolUseFailure", "t1", qwen.SHELL, tool_input,
                     error=shell_text("cat notes.txt", "alpha", 130), is_interrupt=True), session)
    reply = run_shell(workspace, session, "t2", "cat notes.txt", shell_text("cat notes.txt", "alpha\nExit Code: 1"))
    assert reply is None or "hookSpecificOutput" not in reply
    reply = run_shell(workspace, session, "t3", "cat notes.txt", shell_text("cat notes.txt", "alpha"))
    assert reply is None or "hookSpecificOutput" not in reply


def test_a_read_file_is_never_denied_and_its_unchanged_note_follows_the_result(
        workspace: pathlib.Path, session: DurableSession) -> None:
    """A stored result that would serve a read_file makes it a Nudge (spec `Request.withhold`):
    the read runs, and the note naming the step comes back with its result."""
    assert qwen.command_for(qwen.READ, {"file_path": "a b", "offset": 2, "limit": 3}) == "sed -n '3,5p' 'a b'"
    run_shell(workspace, session, "t1", "cat -n notes.txt", shell_text("cat -n notes.txt", "1\talpha\n     2\tbeta"))
    read = {"file_path": "notes.txt"}
    assert qwen.handle(call(workspace, "PreToolUse", "t2", qwen.READ, read), session) is None
    reply = qwen.handle(call(workspace, "PostToolUse", "t2", qwen.READ, read,
                             tool_response={"llmContent": "alpha\nbeta", "returnDisplay": ""}), session)
    assert reply is not None
    assert reply["hookSpecificOutput"]["additionalContext"] == "[ledger] Unchanged since step 1: you already saw this result then."


def test_stop_replies_and_shell_turns_are_qwen_s(workspace: pathlib.Path) -> None:
    assert qwen.stop_before_reply("enough")["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert qwen.AGENT.hooks.replies.stop("enough") == {"continue": False, "stopReason": "enough"}
    failed = call(workspace, "PostToolUseFailure", "t1", qwen.SHELL, {"command": "ls x"},
                  error=shell_text("ls x", "no", 2), is_interrupt=False)
    assert qwen.shell_turn(failed) == ("ls x", "no", 2)


def test_a_nudge_reaches_the_model_with_the_call_s_result(workspace: pathlib.Path, session: DurableSession) -> None:
    """Qwen drops PreToolUse's context; the note comes back from the record and is the
    after-call answer's `additionalContext` (PostToolUseFailure's too), appended to the result."""
    replies = []
    for number, status in ((1, 0), (2, 1)):
        tool_input = {"command": "pytest -q"}
        assert qwen.handle(call(workspace, "PreToolUse", f"t{number}", qwen.SHELL, tool_input), session) is None
        text = shell_text("pytest -q", "1 passed", status)
        finished = (call(workspace, "PostToolUse", f"t{number}", qwen.SHELL, tool_input,
                         tool_response={"llmContent": text, "returnDisplay": ""}) if status == 0 else
                    call(workspace, "PostToolUseFailure", f"t{number}", qwen.SHELL, tool_input, error=text,
                         is_interrupt=False))
        replies.append(qwen.handle(finished, session))
    assert replies[0] is None
    output = replies[1]["hookSpecificOutput"]
    assert output["hookEventName"] == "PostToolUseFailure" and "already ran at step 1" in output["additionalContext"]
