"""How the Claude Code and Codex adapters read each hook field, one payload at a time.

A result recorded exact is served again byte for byte, so every field that says "this is not
the whole, final output" (interrupted, sent to the background, no trustworthy exit status)
must make it inexact, and the text stored must be the text the agent showed. The session here
is a recorder of the `HookSession` protocol the adapters talk to: what they decide and record
is exactly what a durable session would be asked. A Read is checked by running the command it
is decided as, with bash, on a real file.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest

from ledger_impl.agents import claude, codex
from ledger_impl.session import Recorded
from ledger_spec.degraded import Degraded


@attrs.frozen
class _Allowed:
    verdict: str = "allow"
    output: str | None = None
    exit_code: int | None = None
    note: str | None = None
    served_step: int | None = None
    degraded: Degraded | None = None


class Recorder:
    """A `HookSession` that allows everything and keeps what it was asked."""

    reuse_answer = "verbatim"

    def __init__(self) -> None:
        self.decided: list[str] = []
        self.recorded: list[tuple[str, str, int, bool]] = []
        self.ran: list[str | None] = []  # the command each finished payload named

    def decide(
        self, command: str, *, call_id: str, cwd: str | None = None, serve_slices: bool = True, withhold: bool = True
    ) -> _Allowed:
        self.decided.append(command)
        return _Allowed()

    def record(
        self, call_id: str, output: str, exit_code: int, *, exact: bool = True, ran: str | None = None,
        rendering: str = "exact",
    ) -> Recorded:
        self.recorded.append((call_id, output, exit_code, exact))
        self.ran.append(ran)
        return Recorded(len(self.recorded))

    def view(self) -> str:
        return ""


def _claude_post(session: Recorder, event: str, tool_input: dict[str, Any], **fields: Any) -> tuple[str, int, bool]:
    payload = {"hook_event_name": event, "tool_name": "Bash", "tool_use_id": "t1", "tool_input": tool_input, **fields}
    assert claude.handle(payload, session) is None
    [(_, output, status, exact)] = session.recorded
    return output, status, exact


# -- Claude: PostToolUse --------------------------------------------------------------------


def test_a_plain_bash_result_is_recorded_exact_as_shown() -> None:
    assert _claude_post(Recorder(), "PostToolUse", {"command": "cat a"}, tool_response={"stdout": "x"}) == ("x", 0, True)


def test_an_empty_bash_result_is_recorded_as_the_placeholder_claude_shows() -> None:
    # What the model reads for a command that printed nothing (observed with the real CLI).
    output, _, exact = _claude_post(Recorder(), "PostToolUse", {"command": "true"}, tool_response={"stdout": ""})
    assert (output, exact) == ("(Bash completed with no output)", True)


@pytest.mark.parametrize(
    "tool_input,response",
    [
        ({"command": "sleep 9", "run_in_background": True}, {"stdout": "started"}),
        ({"command": "sleep 9"}, {"stdout": "started", "backgroundTaskId": "b1"}),
        ({"command": "sleep 9"}, {"stdout": "partial", "interrupted": True}),
        ({"command": "cat img"}, {"stdout": "x", "isImage": True}),
    ],
    ids=["run_in_background", "backgroundTaskId", "interrupted", "isImage"],
)
def test_a_result_that_is_not_the_whole_output_is_recorded_inexact(tool_input: dict[str, Any], response: dict[str, Any]) -> None:
    assert _claude_post(Recorder(), "PostToolUse", tool_input, tool_response=response)[2] is False


# -- Claude: PostToolUseFailure -------------------------------------------------------------


def test_a_failure_with_its_exit_code_first_is_recorded_exact() -> None:
    assert _claude_post(Recorder(), "PostToolUseFailure", {"command": "false"}, error="Exit code 3\nboom") == (
        "Exit code 3\nboom", 3, True)


def test_an_interrupted_failure_is_recorded_inexact() -> None:
    recorded = _claude_post(Recorder(), "PostToolUseFailure", {"command": "sleep 9"}, error="Exit code 130\n",
                            is_interrupt=True)
    assert recorded[2] is False


def test_a_failure_whose_first_line_is_not_its_exit_code_is_recorded_inexact() -> None:
    # "Exit code N" further down is the command's own output, not Claude's status line.
    recorded = _claude_post(Recorder(), "PostToolUseFailure", {"command": "x"},
                            error="Command timed out after 2m\nExit code 0")
    assert recorded[2] is False


# -- Claude: what a call is decided as ------------------------------------------------------


@pytest.mark.parametrize("offset,limit", [(5, 3), (1, 1), (None, 4), (18, 10)])
def test_a_read_is_decided_as_the_shell_read_of_the_same_lines(tmp_path: Path, offset: int | None, limit: int) -> None:
    source = tmp_path / "f.txt"
    lines = [f"line {n}\n" for n in range(1, 21)]
    source.write_text("".join(lines))
    tool_input: dict[str, Any] = {"file_path": str(source), "limit": limit}
    if offset is not None:
        tool_input["offset"] = offset
    command = claude.command_for("Read", tool_input)
    printed = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout
    first = (offset or 1) - 1
    assert printed == "".join(lines[first : first + limit])


def test_a_notebook_edit_is_decided_as_a_write_of_its_notebook(tmp_path: Path) -> None:
    session = Recorder()
    notebook = tmp_path / "n.ipynb"
    payload = {"hook_event_name": "PreToolUse", "tool_name": "NotebookEdit", "tool_use_id": "t1",
               "tool_input": {"notebook_path": str(notebook), "new_source": "x"}}
    claude.handle(payload, session)
    assert session.decided == [f"touch -c -- {notebook}"]


# -- Codex ----------------------------------------------------------------------------------


def _codex_post(session: Recorder, response: Any, transcript: Path | None = None) -> tuple[str, int, bool]:
    payload = {"hook_event_name": "PostToolUse", "tool_name": "shell", "tool_use_id": "c1",
               "tool_input": {"command": ["cat", "a"]}, "tool_response": response}
    if transcript is not None:
        payload["transcript_path"] = str(transcript)
    codex.handle(payload, session)
    [(_, output, status, exact)] = session.recorded
    return output, status, exact


@pytest.mark.parametrize("status,exact", [(2, True), (True, False), (False, False), ("0", False)])
def test_a_codex_response_is_exact_only_with_an_integer_exit_code(status: object, exact: bool) -> None:
    assert _codex_post(Recorder(), {"output": "x", "exit_code": status})[2] is exact


def _transcript(tmp_path: Path, **item: Any) -> Path:
    path = tmp_path / "rollout.jsonl"
    event = {"type": "item_completed", "payload": {"item": {"id": "c1", "type": "CommandExecution", **item}}}
    path.write_text(json.dumps({"type": "other"}) + "\n" + json.dumps(event) + "\n")
    return path


@pytest.mark.parametrize(
    "item,expected",
    [
        ({"status": "completed", "aggregated_output": "x", "exit_code": 0}, ("x", 0, True)),
        ({"status": "failed", "aggregated_output": "x", "exit_code": 4}, ("x", 4, True)),
        ({"status": "completed", "aggregated_output": "x\nmore", "exit_code": 0}, ("x", 0, False)),
        ({"status": "in_progress", "aggregated_output": "x", "exit_code": 0}, ("x", 0, False)),
        ({"status": "declined", "aggregated_output": "x", "exit_code": 0}, ("x", 0, False)),
        ({"status": "completed", "aggregated_output": "x", "exit_code": -1}, ("x", 0, False)),
    ],
    ids=["completed", "failed", "other-output", "in-progress", "declined", "negative-status"],
)
def test_a_codex_exit_status_is_taken_from_the_transcript_only_when_it_matches(
    tmp_path: Path, item: dict[str, Any], expected: tuple[str, int, bool]
) -> None:
    assert _codex_post(Recorder(), "x", _transcript(tmp_path, **item)) == expected
