"""`ledger hook claude`'s protocol translation, driven with payloads shaped as the real Claude
Code 2.1.328 sends them (captured from the CLI), against a real DurableSession."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from claude_code import DENY, ClaudeCode, denied_text
from ledger_impl.agents import claude
from ledger_impl.session import DurableSession


def body(reason: str) -> str:
    header, _, rest = reason.partition("\n")
    assert header.startswith("[ledger] Not run again: this is the unchanged result of step ")
    return rest


def test_a_repeated_read_is_denied_with_the_stored_output_verbatim(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = ClaudeCode(workspace, session)
    assert agent.bash("cat -n src/app.py") is None
    reason = denied_text(agent.bash("cat -n src/app.py"))
    assert reason is not None
    assert body(reason) == "     1\tx = 1\n     2\ty = 2"  # as Claude showed it: trailing newline stripped
    assert "step 1" in reason.partition("\n")[0]  # the first command is step 1


def test_a_failed_read_is_served_with_its_exit_code_line(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = ClaudeCode(workspace, session)
    agent.bash("ls nothere")
    reason = denied_text(agent.bash("ls nothere"))
    assert reason is not None and body(reason).startswith("Exit code 2\nls: cannot access 'nothere'")


def test_an_edit_through_bash_makes_the_next_read_run(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = ClaudeCode(workspace, session)
    agent.bash("cat -n src/app.py")
    agent.bash("sed -i 's/x = 1/x = 5/' src/app.py")
    assert denied_text(agent.bash("cat -n src/app.py")) is None


def test_claudes_own_edit_tool_is_bracketed(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = ClaudeCode(workspace, session)
    agent.bash("cat -n src/app.py")
    path = str(workspace / "src" / "app.py")
    edit = {"file_path": path, "old_string": "y = 2", "new_string": "y = 3", "replace_all": False}
    call_id, reply = agent.pre("Edit", edit)
    assert denied_text(reply) is None
    (workspace / "src" / "app.py").write_text("x = 1\ny = 3\n")  # what the Edit tool does, same size
    agent.post(call_id, "Edit", edit, {"filePath": path, "oldString": "y = 2", "newString": "y = 3"})
    assert denied_text(agent.bash("cat -n src/app.py")) is None


@pytest.mark.parametrize("extra, response", [
    ({}, {"interrupted": True}),
    ({"run_in_background": True}, {"backgroundTaskId": "b1"}),
])
def test_an_interrupted_or_background_result_is_never_served(
    workspace: pathlib.Path, session: DurableSession, extra: dict[str, Any], response: dict[str, Any]
) -> None:
    agent = ClaudeCode(workspace, session)
    tool_input = {"command": "cat -n src/app.py", "description": "d", **extra}
    call_id, _ = agent.pre("Bash", tool_input)
    agent.post(call_id, "Bash", tool_input, {"stdout": "     1\tx = 1", "stderr": "", "interrupted": False,
                                             "isImage": False, **response})
    assert denied_text(agent.bash("cat -n src/app.py")) is None


def test_a_background_command_is_never_denied(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = ClaudeCode(workspace, session)
    agent.bash("cat -n src/app.py")
    _, reply = agent.pre("Bash", {"command": "cat -n src/app.py", "description": "d", "run_in_background": True})
    assert denied_text(reply) is None
    assert "Unchanged since step 1" in reply["hookSpecificOutput"]["additionalContext"]  # type: ignore[index]


def test_a_failure_without_an_exit_code_is_never_served(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = ClaudeCode(workspace, session)
    tool_input = {"command": "cat -n src/app.py", "description": "d"}
    call_id, _ = agent.pre("Bash", tool_input)
    agent.fail(call_id, tool_input, "Command timed out after 2m")
    assert denied_text(agent.bash("cat -n src/app.py")) is None


def test_read_is_nudged_never_denied_and_never_serves_bash(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = ClaudeCode(workspace, session)
    path = str(workspace / "src" / "app.py")
    agent.bash("cat -n src/app.py")
    call_id, reply = agent.pre("Read", {"file_path": path})
    assert denied_text(reply) is None
    assert "Unchanged since step 1" in reply["hookSpecificOutput"]["additionalContext"]  # type: ignore[index]
    agent.post(call_id, "Read", {"file_path": path},
               {"type": "text", "file": {"filePath": path, "content": "x = 1\ny = 2\n", "numLines": 3,
                                         "startLine": 1, "totalLines": 3}})
    # A Read's result (numbered by Claude, not by cat) is never served as a shell command's output.
    ranged = {"file_path": path, "offset": 2, "limit": 1}
    call_id, reply = agent.pre("Read", ranged)
    assert reply is None or "systemMessage" not in reply  # the nudged Read's record was no anomaly
    agent.post(call_id, "Read", ranged, {"type": "text", "file": {"filePath": path, "content": "y = 2",
                                                                  "numLines": 1, "startLine": 2, "totalLines": 3}})
    assert denied_text(agent.bash("sed -n '2,2p' src/app.py")) is None


def test_read_commands_cover_offset_and_limit() -> None:
    assert claude.command_for("Read", {"file_path": "/w/a b.py"}) == "cat -n '/w/a b.py'"
    assert claude.command_for("Read", {"file_path": "/w/a.py", "offset": 10, "limit": 5}) == "sed -n '10,14p' /w/a.py"
    assert claude.command_for("Read", {"file_path": "/w/a.py", "offset": 10}) == "sed -n '10,$p' /w/a.py"
    assert claude.command_for("Write", {"file_path": "/w/a.py", "content": ""}) == "touch -c -- /w/a.py"


def test_session_start_and_prompt_submit_carry_the_view(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = ClaudeCode(workspace, session)
    agent.bash("cat -n src/app.py")
    for event in ("SessionStart", "UserPromptSubmit"):
        reply = claude.handle({"hook_event_name": event, "cwd": str(workspace), "session_id": "s"}, session)
        assert reply is not None and reply["hookSpecificOutput"]["hookEventName"] == event
        assert reply["hookSpecificOutput"]["additionalContext"] == session.view()
        assert "cat -n src/app.py" in reply["hookSpecificOutput"]["additionalContext"]


def test_other_tools_get_no_answer(workspace: pathlib.Path, session: DurableSession) -> None:
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Grep", "tool_input": {"pattern": "x"},
               "tool_use_id": "toolu_1", "cwd": str(workspace)}
    assert claude.handle(payload, session) is None


def _hook(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ledger_cli.main", "hook", "claude", *args],
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_the_hook_process_round_trip(workspace: pathlib.Path, tmp_path: pathlib.Path) -> None:
    state = str(tmp_path / "hook-state")
    tool_input = {"command": "cat src/app.py", "description": "d"}
    pre = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": tool_input, "cwd": str(workspace)}
    post = {**pre, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "x = 1\ny = 2", "stderr": "",
                                                                      "interrupted": False, "isImage": False}}
    first = _hook(json.dumps({**pre, "tool_use_id": "a"}), "--root", str(workspace), "--state-dir", state)
    assert (first.returncode, first.stdout, first.stderr) == (0, "", "")
    assert _hook(json.dumps({**post, "tool_use_id": "a"}), "--root", str(workspace), "--state-dir", state).returncode == 0
    with DurableSession.open(workspace, state_dir=state) as session:
        assert session.wait_for_probes(60), "the detached probe never stored a verdict"
    second = _hook(json.dumps({**pre, "tool_use_id": "b"}), "--root", str(workspace), "--state-dir", state)
    reply = json.loads(second.stdout)["hookSpecificOutput"]
    assert reply["permissionDecision"] == DENY and body(reply["permissionDecisionReason"]) == "x = 1\ny = 2"
    assert not list(workspace.rglob("*.db*")), "Ledger wrote into the workspace"


@pytest.mark.parametrize("stdin, args", [("{not json", ()), ("[1]", ()), (
    json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"},
                "tool_use_id": "a"}), ("--root", "/nonexistent/ledger-root"))])
def test_an_internal_error_allows_the_call_with_a_visible_note(stdin: str, args: tuple[str, ...]) -> None:
    done = _hook(stdin, *args)
    assert done.returncode == 0
    assert "internal error, the tool call goes ahead unchanged" in done.stderr
    reply = json.loads(done.stdout)
    assert set(reply) == {"systemMessage"}  # no permissionDecision: the tool call goes ahead
