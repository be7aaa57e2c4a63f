"""Hand-written sequences of Claude Code hook payloads, each sent to a real `ledger hook claude`
process (own HOME, state directory outside the temporary workspace), looking for a stale Reuse
or a lost update. Each test is a counterexample that once failed, or a guard shown to fail
under a deliberate mutation."""

from __future__ import annotations

import json
import os
import pathlib
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

from ledger_impl.agents import claude as claude_adapter
from ledger_impl.store import database_path


class Claude:
    """Claude Code's side of the protocol: one hook process per call, tools run for real."""

    def __init__(self, root: pathlib.Path, home: pathlib.Path) -> None:
        self.root, self.state = root, home / "state"
        self.env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / "xdg"),
                    "CLAUDE_PROJECT_DIR": str(root)}
        self.flags: tuple[str, ...] = ()  # extra options of every hook process

    def hook(self, event: str, tool: str, call_id: str, tool_input: dict[str, Any], **extra: Any) -> dict[str, Any]:
        payload = {"session_id": "s", "cwd": str(self.root), "hook_event_name": event, "tool_name": tool,
                   "tool_input": tool_input, "tool_use_id": call_id, **extra}
        done = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hook", "claude", "--state-dir", str(self.state),
                               *self.flags],
                              input=json.dumps(payload), capture_output=True, text=True, env=self.env, timeout=120)
        assert done.returncode == 0
        assert "internal error" not in done.stderr, done.stderr
        return json.loads(done.stdout) if done.stdout else {}

    def pre_bash(self, call_id: str, command: str) -> dict[str, Any]:
        return self.hook("PreToolUse", "Bash", call_id, {"command": command})

    def post_bash(self, call_id: str, command: str, stdout: str) -> None:
        response = {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}
        assert self.hook("PostToolUse", "Bash", call_id, {"command": command}, tool_response=response) == {}

    def bash(self, call_id: str, command: str) -> dict[str, Any]:
        reply = self.pre_bash(call_id, command)
        if served(reply) is None:
            self.post_bash(call_id, command, self.run(command))
        return reply

    def run(self, command: str) -> str:
        """The command's output as Claude Code shows it: leading blank lines and trailing
        whitespace stripped, a placeholder when nothing is left."""
        done = subprocess.run(["bash", "-c", command], cwd=self.root, capture_output=True, text=True)
        return (done.stdout + done.stderr).rstrip().lstrip("\n") or claude_adapter.NO_OUTPUT


def served(reply: dict[str, Any]) -> str | None:
    """The output a denied call served, without its header line; None if not denied."""
    output = reply.get("hookSpecificOutput", {})
    if output.get("permissionDecision") != "deny":
        return None
    return output["permissionDecisionReason"].partition("\n")[2]


@pytest.fixture
def claude(tmp_path: pathlib.Path) -> Claude:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("bravo\n")
    (root / "nb.ipynb").write_text('{"cells": []}\n')
    return Claude(root, tmp_path / "home")


def test_notebook_edit_is_bracketed_like_the_other_edit_tools(claude: Claude) -> None:
    # Counterexample: NotebookEdit names its file `notebook_path`, not `file_path`; the hook
    # failed with an internal error, so the edit was never bracketed and a read of the notebook
    # was served while the edit was still in flight.
    claude.bash("1", "cat nb.ipynb")
    claude.hook("PreToolUse", "NotebookEdit", "2",
                {"notebook_path": str(claude.root / "nb.ipynb"), "new_source": "x", "cell_type": "code"})
    assert served(claude.pre_bash("3", "cat nb.ipynb")) is None


def test_a_lone_surrogate_in_the_output_is_recorded_and_served_verbatim(claude: Claude) -> None:
    # Counterexample: "\ud800" in PostToolUse's stdout made the record raise; the result was lost.
    # Probe off: the output is made up (cat prints no surrogate), which a probe rightly refuses.
    claude.flags = ("--no-probe",)
    claude.pre_bash("1", "cat a.txt")
    claude.post_bash("1", "cat a.txt", "alpha\ud800")
    assert served(claude.pre_bash("2", "cat a.txt")) == "alpha\ud800"


def test_a_tool_use_id_sent_twice_never_serves_one_call_for_the_other(claude: Claude) -> None:
    # Counterexample: the second PreToolUse replaced the first's pending row, and the first
    # call's output was then served for the second command.
    claude.pre_bash("dup", "cat a.txt")
    claude.pre_bash("dup", "cat b.txt")
    claude.post_bash("dup", "cat a.txt", claude.run("cat a.txt"))
    assert served(claude.pre_bash("later", "cat b.txt")) in (None, claude.run("cat b.txt"))


def test_a_database_of_a_newer_schema_is_set_aside_visibly(claude: Claude) -> None:
    claude.bash("1", "cat a.txt")
    with sqlite3.connect(database_path(claude.root, claude.state)) as connection:
        connection.execute("PRAGMA user_version = 99")
    reply = claude.pre_bash("2", "cat a.txt")
    assert served(reply) is None
    assert "schema version 99" in reply.get("systemMessage", "")
    assert not any(path.suffix in (".sqlite", ".db") for path in claude.root.rglob("*"))


@pytest.mark.parametrize("command", ["sed -n '1,2p' a.txt", "head -1 a.txt", "sed -n '3,4p' a.txt", "head -3 a.txt"])
def test_a_line_range_is_never_cut_from_claudes_rendering_of_a_whole_file(claude: Claude, command: str) -> None:
    # Counterexample: `cat a.txt` is recorded as Claude shows it, with leading blank lines and
    # trailing whitespace stripped; a later `sed -n '1,2p' a.txt` was served lines cut from that
    # rendering ("X\nY") where a fresh run shows "(Bash completed with no output)".
    (claude.root / "a.txt").write_text("\n\nX\nY\n")
    claude.bash("1", "cat a.txt")
    assert served(claude.pre_bash("2", command)) in (None, claude.run(command))


@pytest.mark.parametrize("rewritten", ["cat b.txt", ""], ids=["another-command", "no-command"])
def test_a_command_rewritten_by_another_hook_never_has_its_output_served(claude: Claude, rewritten: str) -> None:
    # Another PreToolUse hook answered `updatedInput`: Claude ran `cat b.txt` where Ledger decided
    # `cat a.txt`. Stored under the decided command, b's output would later be served for a.txt.
    (claude.root / "a.txt").write_text("alpha\n")
    (claude.root / "b.txt").write_text("beta\n")
    claude.pre_bash("1", "cat a.txt")
    tool_input = {"command": rewritten} if rewritten else {}
    response = {"stdout": "beta", "stderr": "", "interrupted": False, "isImage": False}
    claude.hook("PostToolUse", "Bash", "1", tool_input, tool_response=response)
    reply = claude.pre_bash("2", "cat a.txt")
    assert served(reply) is None, "the rewritten command's output was stored under the decided one"
    assert "other than the one decided" in reply.get("systemMessage", "")
