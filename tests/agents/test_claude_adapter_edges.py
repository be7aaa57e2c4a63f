"""The Claude Code adapter's edges that operator mutation of `ledger_impl/agents/claude.py`
found no test asking: what `shell_turn` reads from each finish event (the failure-loop guard's
input), the command a Read with an out-of-range offset is decided as, the working directory a
Bash call names its target from, which results may be cut into slices, and a verbatim answer
staying verbatim. `docs/mutation/survivors.md` lists the mutants."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from ledger_impl.agents import claude
from claude_code import ClaudeCode, denied_text
from ledger_impl.session import DurableSession


def _finish(event: str, tool: str = "Bash", command: str = "ls", **fields: Any) -> dict[str, Any]:
    return {"session_id": "s", "hook_event_name": event, "tool_name": tool, "tool_input": {"command": command},
            "tool_use_id": "toolu_1", **fields}


@pytest.mark.parametrize(
    ("payload", "turn"),
    [
        (_finish("PostToolUse", tool_response={"stdout": "a\nb", "stderr": "", "interrupted": False}), ("ls", "a\nb", 0)),
        (_finish("PostToolUse", tool_response="not a dict"), ("ls", "", 0)),
        (_finish("PostToolUse", tool_response={"stdout": "partial", "interrupted": True}), ("ls", "partial", 0)),
        (_finish("PostToolUseFailure", error="Exit code 3\nboom"), ("ls", "Exit code 3\nboom", 3)),
        (_finish("PostToolUseFailure", error="Command timed out"), ("ls", "Command timed out", 1)),
        (_finish("PostToolUseFailure", error="Interrupted by user", is_interrupt=True), ("ls", "Interrupted by user", 1)),
        (_finish("PostToolUseFailure", error=None), ("ls", "", 1)),
    ],
    ids=["success", "response-not-a-dict", "interrupted", "exit-code", "no-exit-code", "interrupt", "error-not-text"],
)
def test_a_finished_bash_call_is_one_shell_turn(payload: dict[str, Any], turn: tuple[str, str, int]) -> None:
    """What the model saw and the status it was told, however the call ended: a failure with no
    `Exit code` line is a failure (1), never a success."""
    assert claude.shell_turn(payload) == turn


@pytest.mark.parametrize(
    "payload",
    [
        _finish("PostToolUse", tool="Aardvark", tool_response={"stdout": "x"}),
        _finish("PostToolUse", tool="Zebra", tool_response={"stdout": "x"}),
        _finish("PreToolUse"),
        _finish("PermissionRequest", tool_response={"stdout": "x"}),
        _finish("Stop", error="Exit code 1"),
    ],
    ids=["tool-sorting-before-bash", "tool-sorting-after-bash", "before-the-call", "permission-request", "stop"],
)
def test_only_a_finish_event_of_bash_is_a_shell_turn(payload: dict[str, Any]) -> None:
    assert claude.shell_turn(payload) is None


def test_a_read_with_an_offset_before_the_first_line_starts_at_line_one() -> None:
    assert claude.command_for("Read", {"file_path": "/w/a.py", "offset": -5, "limit": 3}) == "sed -n '1,3p' /w/a.py"


def test_the_user_settings_file_is_in_the_home_directory() -> None:
    assert claude.AGENT.hooks.settings.user() == pathlib.Path.home() / ".claude" / "settings.json"


def test_a_bash_read_names_its_target_from_the_call_s_working_directory(
    workspace: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """`cat x.txt` run in src/ reads src/x.txt; decided as if run at the root, an edit of
    src/x.txt would leave the stored result standing. The probe is off: rerunning the read at
    the root, it would refuse the result on its own.
    Pins `ledger_impl/agents/claude.py` line 173 (a miss: the working directory dropped).
    """
    (workspace / "x.txt").write_text("root\n")
    (workspace / "src" / "x.txt").write_text("one\n")
    with DurableSession.open(workspace, state_dir=tmp_path / "state", probe=False) as session:
        agent = ClaudeCode(workspace, session)
        assert denied_text(agent.bash("cat x.txt", cwd=workspace / "src")) is None
        assert denied_text(agent.bash("cat x.txt", cwd=workspace / "src")) is not None  # served: nothing changed
        (workspace / "src" / "x.txt").write_text("two\n")
        assert denied_text(agent.bash("cat x.txt", cwd=workspace / "src")) is None  # ran again, not served


def test_a_bash_result_is_never_cut_to_answer_another_command(workspace: pathlib.Path, session: DurableSession) -> None:
    """Claude shows a Bash output stripped, so lines cut from it are not another command's bytes.
    Pins `ledger_impl/agents/claude.py` line 173 (a miss: slices of a Bash result served)."""
    agent = ClaudeCode(workspace, session)
    assert denied_text(agent.bash("cat notes.txt")) is None
    assert denied_text(agent.bash("head -n 1 notes.txt")) is None


def test_a_read_may_be_nudged_from_another_command_s_result(workspace: pathlib.Path, session: DurableSession) -> None:
    """A Read is never served, so naming the shell result that holds its lines costs nothing."""
    agent = ClaudeCode(workspace, session)
    assert denied_text(agent.bash("cat src/app.py")) is None
    _, reply = agent.pre("Read", {"file_path": str(workspace / "src" / "app.py"), "offset": 2, "limit": 1})
    assert reply is not None and "Unchanged since step" in reply["hookSpecificOutput"]["additionalContext"]


def test_verbatim_answers_stay_verbatim_however_often_a_result_is_served(
    workspace: pathlib.Path, session: DurableSession
) -> None:
    """Only the reference mode answers with a note pointing at an earlier result."""
    assert session.reuse_answer == "verbatim"
    (workspace / "long.txt").write_text("".join(f"line {n} of a file long enough to be worth a note\n" for n in range(40)))
    agent = ClaudeCode(workspace, session)
    assert denied_text(agent.bash("cat long.txt")) is None
    for _ in range(3):
        reason = denied_text(agent.bash("cat long.txt"))
        assert reason is not None and "line 39 of a file" in reason


@pytest.mark.parametrize(
    ("payload", "owner"),
    [
        ({"session_id": "s"}, "s"),
        ({"session_id": "s", "agent_id": "a"}, "s/a"),
        ({"session_id": "s", "agent_id": ""}, "s"),
        ({"session_id": ""}, None),
        ({"session_id": 7}, None),
        ({}, None),
    ],
    ids=["session", "subagent", "empty-agent", "empty-session", "session-not-text", "none"],
)
def test_the_context_owner_is_the_session_and_its_subagent(payload: dict[str, Any], owner: str | None) -> None:
    assert claude.context_owner(payload) == owner


def test_the_tool_mask_names_the_tools_left_out() -> None:
    assert claude.tool_mask(["WebFetch", "Task"]) == '--disallowedTools "WebFetch,Task"'
    assert claude.tool_mask([]) == ""
