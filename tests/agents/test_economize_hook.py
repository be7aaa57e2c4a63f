"""`ledger hook claude|codex|qwen|gemini --economize owner/name`: the failure-loop guard inside the hook.

Real `ledger hook` processes are fed the JSON payloads Claude Code, Codex, Qwen Code and Gemini
CLI send after a shell call. The repository's history is fed first with `ledger economize feed` (8 passed tasks of 2
turns, so B = 3: the forced redirect comes at turn ceil(2.5 * 3) = 8 and, after the 5-turn
grace, the stop at turn 13, as `ledger economize guard` prints for the same loop).
"""

from __future__ import annotations

import concurrent.futures
import json
import pathlib
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

from economizer.hook_guard import observe_turn, turns_path
from economizer_spec.trajectory import Step
from economizer.store import database_path

REPOSITORY = "owner/repo"
PASSING = [("python tests/runtests.py app", "OK", 0), ("ls", "", 0)]
LOOP_COMMAND = "sed -i 's/a/b/' a.py"
LOOP_ERROR = "E   AssertionError: 1"


def feed_history(state: pathlib.Path, tmp_path: pathlib.Path) -> None:
    rows = [{"instance_id": f"owner__repo-{i}", "task_repo": REPOSITORY, "commands": [c for c, _, _ in PASSING],
             "outputs": [o for _, o, _ in PASSING], "returncodes": [r for _, _, r in PASSING], "resolved": True,
             "instance_cost": 0.1} for i in range(1, 9)]
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = subprocess.run([sys.executable, "-m", "ledger_cli.main", "economize", "feed", str(path), "--state-dir", str(state)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


#: One failing edit-and-test call; on a one-line a.py of 40 `a`s each run turns one more into `b`.
E2E_LOOP = "sed -i 's/a/b/' a.py && echo 'E   AssertionError: 1' && false"


def loop_workspace(tmp_path: pathlib.Path, home_name: str) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    """(workspace with a.py, the agent's home, Ledger's state with the repository's history)."""
    workspace, home, state = tmp_path / "ws", tmp_path / home_name, tmp_path / "state"
    for directory in (workspace, home, state):
        directory.mkdir(parents=True)
    (workspace / "a.py").write_text("a" * 40 + "\n")
    feed_history(state, tmp_path)
    return workspace, home, state


def economize_installed_hooks(settings_file: pathlib.Path) -> None:
    """Add `--economize owner/repo` to every hook command `ledger hooks install` wrote."""
    settings = json.loads(settings_file.read_text())
    for groups in settings["hooks"].values():
        for group in groups:
            for entry in group["hooks"]:
                entry["command"] += f" --economize {REPOSITORY}"
    settings_file.write_text(json.dumps(settings))


def hook(agent: str, payload: dict[str, Any], state: pathlib.Path, *extra: str) -> tuple[dict[str, Any] | None, str]:
    done = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hook", agent, "--state-dir", str(state), *extra],
                          input=json.dumps(payload), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    return (json.loads(done.stdout) if done.stdout else None), done.stderr


def claude_turn(root: pathlib.Path, n: int, command: str, output: str, status: int, session: str = "s1") -> dict[str, Any]:
    base = {"session_id": session, "cwd": str(root), "tool_name": "Bash", "tool_use_id": f"toolu_{n:03d}",
            "tool_input": {"command": command, "description": "d"}}
    if status:
        return {**base, "hook_event_name": "PostToolUseFailure", "error": f"Exit code {status}\n{output}", "is_interrupt": False}
    return {**base, "hook_event_name": "PostToolUse",
            "tool_response": {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}}


def codex_turn(root: pathlib.Path, n: int, command: str, output: str, status: int, session: str = "s1") -> dict[str, Any]:
    return {"session_id": session, "cwd": str(root), "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_use_id": f"call_{n:03d}", "turn_id": "t", "tool_input": {"command": command},
            "tool_response": {"output": output, "exit_code": status}}


def qwen_turn(root: pathlib.Path, n: int, command: str, output: str, status: int, session: str = "s1") -> dict[str, Any]:
    base = {"session_id": session, "cwd": str(root), "tool_name": "run_shell_command", "tool_use_id": f"toolu_{n:03d}",
            "tool_input": {"command": command}, "permission_mode": "yolo"}
    text = (f"Command: {command}\nDirectory: (root)\nOutput: {output or '(empty)'}\nError: (none)\nExit Code: {status}\n"
            "Signal: (none)\nProcess Group PGID: (none)")
    if status:
        return {**base, "hook_event_name": "PostToolUseFailure", "error": text, "is_interrupt": False}
    return {**base, "hook_event_name": "PostToolUse", "tool_response": {"llmContent": text, "returnDisplay": output}}


def gemini_turn(root: pathlib.Path, n: int, command: str, output: str, status: int, session: str = "s1") -> dict[str, Any]:
    """An AfterTool: no call id; the `timestamp` tells two identical calls apart."""
    text = f"Output: {output or '(empty)'}\n" + (f"Exit Code: {status}\n" if status else "") + "Process Group PGID: 7"
    return {"session_id": session, "cwd": str(root), "hook_event_name": "AfterTool", "tool_name": "run_shell_command",
            "tool_input": {"command": command}, "timestamp": f"2026-12-04T00:00:{n:02d}.000Z",
            "tool_response": {"llmContent": f"<untrusted_context>\n{text}\n</untrusted_context>", "returnDisplay": output}}


TURNS = {"claude": claude_turn, "codex": codex_turn, "qwen": qwen_turn, "gemini": gemini_turn}


@pytest.fixture
def setup(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    feed_history(state, tmp_path)
    return root, state


def actions(reply: dict[str, Any] | None) -> str:
    if reply is None:
        return "continue"
    if reply.get("continue") is False:
        return "stop"
    return "redirect" if "[ledger economize]" in reply.get("hookSpecificOutput", {}).get("additionalContext", "") else "other"


@pytest.mark.parametrize("agent", ["claude", "codex", "qwen"])
def test_a_failure_loop_is_redirected_then_stopped(agent: str, setup: tuple[pathlib.Path, pathlib.Path]) -> None:
    root, state = setup
    seen = {}
    for n in range(1, 15):
        reply, err = hook(agent, TURNS[agent](root, n, LOOP_COMMAND, LOOP_ERROR, 1), state, "--economize", REPOSITORY)
        assert err == ""
        seen[n] = (actions(reply), reply)
    assert [n for n, (a, _) in seen.items() if a != "continue"] == [8, 13, 14]
    assert seen[8][0] == "redirect" and "a.py 8 times" in seen[8][1]["hookSpecificOutput"]["additionalContext"]
    assert seen[13][0] == "stop" and "turn 13" in seen[13][1]["stopReason"]
    assert seen[14][0] == "stop"  # after a stop every call answers stop
    # and the next call is refused before it runs, before Ledger decides it
    pre = {**TURNS[agent](root, 15, "ls", "", 0), "hook_event_name": "PreToolUse"}
    refused, err = hook(agent, pre, state, "--economize", REPOSITORY)
    assert err == "" and refused is not None and refused.get("continue", False) is False
    assert refused["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "stopped this task at turn 13" in refused["hookSpecificOutput"]["permissionDecisionReason"]
    other = {**pre, "session_id": "another"}
    answer, _ = hook(agent, other, state, "--economize", REPOSITORY)  # another task runs on
    assert "continue" not in (answer or {}) and "hookSpecificOutput" not in (answer or {})


@pytest.mark.parametrize("agent", ["claude", "codex", "qwen"])
def test_a_passing_run_gets_neither(agent: str, setup: tuple[pathlib.Path, pathlib.Path]) -> None:
    root, state = setup
    for n in range(1, 21):
        command, output = PASSING[n % 2][:2]
        reply, err = hook(agent, TURNS[agent](root, n, command, output, 0), state, "--economize", REPOSITORY)
        assert (reply, err) == (None, "")


def test_without_the_option_the_hook_answers_as_before(setup: tuple[pathlib.Path, pathlib.Path]) -> None:
    root, state = setup
    for n in range(1, 15):
        reply, err = hook("claude", claude_turn(root, n, LOOP_COMMAND, LOOP_ERROR, 1), state)
        assert (reply, err) == (None, "")
    assert not turns_path(state).exists()


def test_before_any_history_the_guard_is_silent_and_creates_no_repository_state(tmp_path: pathlib.Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    for n in range(1, 15):
        reply, err = hook("claude", claude_turn(root, n, LOOP_COMMAND, LOOP_ERROR, 1), state, "--economize", REPOSITORY)
        assert (reply, err) == (None, "")
    assert not database_path(REPOSITORY, state).exists()


def test_a_guard_failure_allows_the_call_with_a_note(setup: tuple[pathlib.Path, pathlib.Path]) -> None:
    root, state = setup
    reply, err = hook("claude", claude_turn(root, 1, LOOP_COMMAND, LOOP_ERROR, 1), state, "--economize", "not a repository!")
    assert reply is not None and "guard skipped this call" in reply["systemMessage"] and "continue" not in reply
    assert "internal error" in err


def test_concurrent_hook_processes_of_one_session_lose_no_turn(setup: tuple[pathlib.Path, pathlib.Path]) -> None:
    root, state = setup
    payloads = [claude_turn(root, n, f"echo {n}", str(n), 0) for n in range(1, 13)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        replies = list(pool.map(lambda p: hook("claude", p, state, "--economize", REPOSITORY), payloads))
    assert all(r == (None, "") for r in replies)
    assert hook("claude", payloads[0], state, "--economize", REPOSITORY) == (None, "")  # a retry keeps its turn
    connection = sqlite3.connect(turns_path(state))
    rows = connection.execute("SELECT seq, call_id FROM turns WHERE session='s1' ORDER BY seq").fetchall()
    connection.close()
    assert [seq for seq, _ in rows] == list(range(1, 13))
    assert sorted(call for _, call in rows) == sorted(p["tool_use_id"] for p in payloads)


def test_many_concurrent_writers_of_one_session_get_distinct_consecutive_turns(setup: tuple[pathlib.Path, pathlib.Path]) -> None:
    """The same store under more contention than process start-up allows: 8 threads, 25 turns each."""
    _, state = setup

    def writer(w: int) -> list[int]:
        return [observe_turn(REPOSITORY, "s2", f"call-{w}-{i}", Step(f"echo {w} {i}", "ok"), state).turn for i in range(25)]

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        turns = [t for chunk in pool.map(writer, range(8)) for t in chunk]
    assert sorted(turns) == list(range(1, 201))


def test_the_guard_s_note_joins_a_nudge_note_already_in_the_after_call_reply() -> None:
    """Gemini CLI and Qwen Code get a Nudge's note in the after-call answer; a redirect there
    must not replace it."""
    from ledger_cli.commands.hook import _noted
    from ledger_impl.agents import HOOKED

    note = HOOKED["qwen"].replies.note
    joined = _noted(note("PostToolUse", "nudge"), note("PostToolUse", "[ledger economize] redirect"))
    assert joined["hookSpecificOutput"]["additionalContext"] == "nudge\n\n[ledger economize] redirect"
    assert _noted({"systemMessage": "m"}, note("PostToolUse", "r")) == {"systemMessage": "m", **note("PostToolUse", "r")}


def test_gemini_s_failure_loop_is_redirected_stopped_and_its_next_call_refused(
        setup: tuple[pathlib.Path, pathlib.Path]) -> None:
    """Gemini sends no call id: each AfterTool's turn is named by the call and its timestamp,
    so the repeated identical call counts every time; the refusal is Gemini's BeforeTool deny."""
    root, state = setup
    seen = [actions(hook("gemini", gemini_turn(root, n, LOOP_COMMAND, LOOP_ERROR, 1), state, "--economize",
                         REPOSITORY)[0]) for n in range(1, 15)]
    assert [n for n, action in enumerate(seen, 1) if action != "continue"] == [8, 13, 14]
    assert seen[7] == "redirect" and seen[12] == "stop"
    before = {**gemini_turn(root, 15, "ls", "", 0), "hook_event_name": "BeforeTool"}
    del before["tool_response"]
    refused, err = hook("gemini", before, state, "--economize", REPOSITORY)
    assert err == "" and refused is not None and refused["continue"] is False and refused["decision"] == "deny"
    assert "stopped this task at turn 13" in refused["reason"]
