"""`ledger hook copilot`: payloads in the shape Copilot CLI 1.0.102 sends for PascalCase hook
events (observed with the real CLI; tests/agents/test_copilot_e2e.py drives it), one per field
the module reads, including the results it must never store for a Reuse."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from ledger_impl.agents import copilot
from ledger_impl.session import DurableSession

SESSION = "9941ccc6-4fc1-4a02-8c70-861b3ac1b204"


def call(root: pathlib.Path, event: str, tool: str, tool_input: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"hook_event_name": event, "session_id": SESSION, "timestamp": "2026-12-04T19:34:44.537Z",
            "cwd": str(root), "tool_name": tool, "tool_input": tool_input, **extra}


def shell_result(text: str, result_type: str = "success") -> dict[str, Any]:
    return {"tool_result": {"result_type": result_type, "text_result_for_llm": text}}



#: Outputs made up for the adapter's translation: no probe (see conftest's `session`).
SESSION_PROBE = False


def denied(reply: dict[str, Any] | None) -> bool:
    return (reply or {}).get("hookSpecificOutput", {}).get("permissionDecision") == "deny"


def run_twice(workspace: pathlib.Path, session: DurableSession, tool_input: dict[str, Any],
              result: dict[str, Any]) -> dict[str, Any] | None:
    """A call that runs and finishes with `result`, then the same call again: Ledger's answer."""
    assert copilot.handle(call(workspace, "PreToolUse", "Bash", tool_input), session) is None
    assert copilot.handle(call(workspace, "PostToolUse", "Bash", tool_input, **result), session) is None
    return copilot.handle(call(workspace, "PreToolUse", "Bash", tool_input), session)


def test_a_finished_shell_call_is_served_with_its_exit_status_and_without_the_trailer(
        workspace: pathlib.Path, session: DurableSession) -> None:
    command = {"command": "ls nothere", "description": "x"}
    reply = run_twice(workspace, session, command,
                      shell_result("ls: cannot access 'nothere'\n<shellId: 3 completed with exit code 2>"))
    assert reply is not None
    output = reply["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny"
    header, served = output["permissionDecisionReason"].split("\n", 1)
    assert "exit status 2" in header and served == "ls: cannot access 'nothere'\n"


@pytest.mark.parametrize(("tool_input", "result"), [
    # Copilot saved a large output to a file and showed a preview: not the output.
    ({"command": "cat notes.txt", "description": "x"},
     shell_result("Output too large to read at once (164.9 KB). Saved to: /tmp/x.txt\n\nPreview (first 500 chars):\n"
                  "alpha\n\n<shellId: 3 completed with exit code 0>")),
    # Started in the background: what it printed so far.
    ({"command": "cat notes.txt", "description": "x", "mode": "async"},
     shell_result("alpha\n<shellId: 1 completed with exit code 0>")),
    # Still running after its `initial_wait` (Copilot 1.0.102's words): what it printed so far.
    ({"command": "echo early; sleep 40; echo late", "description": "x", "initial_wait": 30},
     shell_result("early\n<command with shellId: 0 is still running after 30 seconds. The command is still running. "
                  "You will be automatically notified when it completes.>")),
    # No trailer: not a shell result Copilot finished.
    ({"command": "cat notes.txt", "description": "x"}, shell_result("alpha\nbeta\n")),
    ({"command": "cat notes.txt", "description": "x"},
     shell_result("alpha\nbeta\n<shellId: 0 completed with exit code 0>", result_type="failure")),
])
def test_a_result_that_is_not_the_whole_output_is_never_served(
        workspace: pathlib.Path, session: DurableSession, tool_input: dict[str, Any], result: dict[str, Any]) -> None:
    assert not denied(run_twice(workspace, session, tool_input, result))


def test_an_async_call_s_result_never_serves_the_same_command_run_in_sync_mode(
        workspace: pathlib.Path, session: DurableSession) -> None:
    # An async call's result is what it printed so far, even under a "completed" trailer: the
    # async call itself is never denied, so only a later sync call of the same command shows
    # whether that partial text was kept.
    background = {"command": "cat notes.txt", "description": "x", "mode": "async"}
    assert copilot.handle(call(workspace, "PreToolUse", "Bash", background), session) is None
    copilot.handle(call(workspace, "PostToolUse", "Bash", background,
                        **shell_result("alpha\n<shellId: 1 completed with exit code 0>")), session)
    again = copilot.handle(call(workspace, "PreToolUse", "Bash", {"command": "cat notes.txt", "description": "x"}), session)
    assert not denied(again)


def test_a_repeated_view_is_noted_as_unchanged_never_denied(workspace: pathlib.Path, session: DurableSession) -> None:
    shell = {"command": f"cat {workspace / 'notes.txt'}", "description": "x"}
    run_twice(workspace, session, shell, shell_result("alpha\nbeta\n<shellId: 0 completed with exit code 0>"))
    view = {"path": str(workspace / "notes.txt")}
    reply = copilot.handle(call(workspace, "PreToolUse", "Read", view), session)
    assert reply is not None and "permissionDecision" not in reply["hookSpecificOutput"]
    assert reply["hookSpecificOutput"]["additionalContext"].startswith("[ledger] Unchanged since step")


def test_an_edit_is_decided_as_a_write_so_the_next_read_runs(workspace: pathlib.Path, session: DurableSession) -> None:
    read = {"command": "cat notes.txt", "description": "x"}
    run_twice(workspace, session, read, shell_result("alpha\nbeta\n<shellId: 0 completed with exit code 0>"))
    edit = {"path": str(workspace / "notes.txt"), "old_str": "alpha", "new_str": "gamma"}
    assert copilot.handle(call(workspace, "PreToolUse", "Edit", edit), session) is None
    (workspace / "notes.txt").write_text("gamma\nbeta\n")
    copilot.handle(call(workspace, "PostToolUse", "Edit", edit,
                        **shell_result(f"File {workspace / 'notes.txt'} updated with changes.")), session)
    assert copilot.handle(call(workspace, "PreToolUse", "Bash", read), session) is None


def test_two_identical_calls_in_flight_share_an_id_and_neither_result_is_served(
        workspace: pathlib.Path, session: DurableSession) -> None:
    # No payload names the model's call: both calls get one id, so which result belongs to
    # which start is unknowable, and nothing either printed may answer a later call.
    read = {"command": "cat notes.txt", "description": "x"}
    first = copilot.handle(call(workspace, "PreToolUse", "Bash", read), session)
    second = copilot.handle(call(workspace, "PreToolUse", "Bash", read), session)
    assert first is None and "decided again while in flight" in (second or {}).get("systemMessage", "")
    (workspace / "notes.txt").write_text("changed while both ran\n")
    for text in ("alpha\nbeta\n", "changed while both ran\n"):
        copilot.handle(call(workspace, "PostToolUse", "Bash", read,
                            **shell_result(f"{text}<shellId: 0 completed with exit code 0>")), session)
    assert not denied(copilot.handle(call(workspace, "PreToolUse", "Bash", read), session))


@pytest.mark.parametrize(("tool", "tool_input", "command"), [
    ("Read", {"path": "/w/a b.txt"}, "cat '/w/a b.txt'"),
    ("Read", {"path": "/w/a.txt", "view_range": [3, 9]}, "sed -n '3,9p' /w/a.txt"),
    ("Read", {"path": "/w/a.txt", "view_range": [3, -1]}, "sed -n '3,$p' /w/a.txt"),
    ("Write", {"path": "/w/new.txt", "file_text": "x"}, "touch -c -- /w/new.txt"),
    ("Edit", {"path": "/w/a.txt", "old_str": "a", "new_str": "b"}, "touch -c -- /w/a.txt"),
])
def test_file_tools_are_decided_as_the_shell_command_they_amount_to(tool: str, tool_input: dict[str, Any],
                                                                   command: str) -> None:
    assert copilot.command_for(tool, tool_input) == command


def test_the_call_id_pairs_a_calls_pre_and_post_payloads_and_separates_other_calls(workspace: pathlib.Path) -> None:
    read = call(workspace, "PreToolUse", "Bash", {"command": "cat notes.txt", "description": "x"})
    finished = call(workspace, "PostToolUse", "Bash", read["tool_input"], **shell_result("x"))
    assert copilot.derived_call_id(read) == copilot.derived_call_id(finished)
    other = {**read, "tool_input": {"command": "cat notes.txt", "description": "y"}}
    assert copilot.derived_call_id(other) != copilot.derived_call_id(read)
    assert copilot.derived_call_id({**read, "session_id": "another"}) != copilot.derived_call_id(read)


def test_notes_and_stops_are_top_level_additional_context() -> None:
    # Copilot drops `hookSpecificOutput.additionalContext` for every event but PreToolUse.
    assert copilot.note_reply("UserPromptSubmit", "view") == {"additionalContext": "view"}
    assert copilot.stop_reply("stop now") == {"additionalContext": "stop now"}
    assert copilot.stop_before_reply("stop now") == {"permissionDecision": "deny", "permissionDecisionReason": "stop now"}


def test_install_writes_its_own_file_in_copilots_hook_folder_and_leaves_the_others(tmp_path: pathlib.Path) -> None:
    copilot_home = tmp_path / "copilot-home"
    (copilot_home / "hooks").mkdir(parents=True)
    theirs = copilot_home / "hooks" / "format.json"
    theirs.write_text('{"version": 1, "hooks": {"postToolUse": [{"type": "command", "bash": "fmt"}]}}\n')
    env = {"HOME": str(tmp_path), "COPILOT_HOME": str(copilot_home), "PATH": "/usr/bin:/bin"}

    def hooks(action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ledger_cli.main", "hooks", action, "copilot", "--user",
                               *(["--transport", "command"] if action == "install" else [])],
                              capture_output=True, text=True, timeout=60, env=env)

    assert hooks("install").returncode == 0
    ours = json.loads((copilot_home / "hooks" / "ledger.json").read_text())["hooks"]
    # PascalCase names: Copilot then sends payloads that name their event and Claude's tool names.
    assert ours["PreToolUse"] == [{"matcher": "Bash|Read|Edit|Write", "hooks": [
        {"type": "command", "command": f"{sys.executable} -m ledger_cli.main hook copilot", "timeout": 60}]}]
    assert set(ours) == {"PreToolUse", "PostToolUse", "PostToolUseFailure", "SessionStart", "UserPromptSubmit"}
    assert hooks("uninstall").returncode == 0
    assert sorted(path.name for path in (copilot_home / "hooks").iterdir()) == ["format.json"]
    assert theirs.read_text() == '{"version": 1, "hooks": {"postToolUse": [{"type": "command", "bash": "fmt"}]}}\n'
