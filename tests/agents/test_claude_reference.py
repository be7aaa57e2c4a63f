"""`--reuse-answer reference` in Claude Code's hooks: a Reuse is answered with a note pointing
at the earlier result only while the model provably still holds it in full, and verbatim after
a compaction, a clear, a resume, a new prompt, another session or subagent, or a cut delivery.
Payloads shaped as Claude Code 2.1.328 sends them, against a real DurableSession, with the
commands run for real in a temporary workspace."""

from __future__ import annotations

import json
import pathlib
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

from ledger_impl.agents import claude
from ledger_impl.session import DurableSession
from ledger_impl.store import database_path
from ledger_spec.context import Delivery

READ = "cat -n src/app.py"
# Long enough that a reference is shorter than the verbatim answer.
LINES = ["x = 1", "y = 2", *(f"z{n} = x + y + {n}" for n in range(8))]
SHOWN = "\n".join(f"{n:6}\t{line}" for n, line in enumerate(LINES, 1))  # what Claude shows the model for READ


@pytest.fixture(autouse=True)
def reference_mode(workspace: pathlib.Path, session: DurableSession) -> None:
    """The shared session (tests/agents/conftest.py), answering by reference, on a longer file."""
    (workspace / "src" / "app.py").write_text("".join(f"{line}\n" for line in LINES))
    session.reuse_answer = "reference"


class Claude:
    """Plays Claude Code's side of the hooks for one conversation (`session_id`, `agent_id`)."""

    def __init__(self, root: pathlib.Path, session: DurableSession, session_id: str = "s1") -> None:
        self.root, self.session, self.session_id, self.calls = root, session, session_id, 0
        self.agent_id: str | None = None

    def _payload(self, event: str, **fields: Any) -> dict[str, Any]:
        payload = {"session_id": self.session_id, "cwd": str(self.root), "hook_event_name": event, **fields}
        return payload if self.agent_id is None else {**payload, "agent_id": self.agent_id, "agent_type": "general"}

    def event(self, event: str, **fields: Any) -> dict[str, Any] | None:
        return claude.handle(self._payload(event, **fields), self.session)

    def bash(self, command: str, *, shown: str | None = None, **response: Any) -> str | None:
        """One Bash call: the deny reason when Ledger answered it, else None (run for real; the
        model is shown `shown` if given, else what the command printed)."""
        self.calls += 1
        call_id = f"toolu_{self.calls:02d}"
        tool_input = {"command": command, "description": "d"}
        reply = self.event("PreToolUse", tool_name="Bash", tool_input=tool_input, tool_use_id=call_id)
        output = (reply or {}).get("hookSpecificOutput", {})
        if output.get("permissionDecision") == "deny":
            return str(output["permissionDecisionReason"])
        done = subprocess.run(["bash", "-c", command], cwd=self.root, capture_output=True, text=True, check=True)
        stdout = shown if shown is not None else (done.stdout + done.stderr).rstrip()
        self.event("PostToolUse", tool_name="Bash", tool_input=tool_input, tool_use_id=call_id,
                   tool_response={"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False, **response})
        self.session.run_queued_probes()  # what the detached probe process does after the answer
        return None


def is_reference(reason: str | None) -> bool:
    return reason is not None and "the result you received for step" in reason and SHOWN not in reason


def is_verbatim(reason: str | None) -> bool:
    return reason is not None and reason.endswith("\n" + SHOWN)


def test_a_repeated_read_is_answered_by_reference(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = Claude(workspace, session)
    assert agent.bash(READ) is None
    reason = agent.bash(READ)
    assert is_reference(reason), reason
    assert "unchanged since step 1" in reason  # type: ignore[operator]
    assert is_reference(agent.bash(READ)), "a reference delivers nothing, but step 1 is still held"


def test_an_output_shorter_than_the_note_is_answered_verbatim_and_delivered(
    workspace: pathlib.Path, session: DurableSession
) -> None:
    (workspace / "short.txt").write_text("ok\n")
    agent = Claude(workspace, session)
    agent.bash("cat short.txt")  # step 0
    assert (agent.bash("cat short.txt") or "").endswith("\nok"), "held in full, but the note would be longer"
    agent.event("PreCompact", trigger="auto")
    reason = agent.bash("cat short.txt")
    assert reason is not None and reason.endswith("\nok") and "the result you received" not in reason
    context = session.context.current()
    assert context.delivered(0) == Delivery(0, context.epoch, True), "the verbatim answer delivered step 0 again"


def test_verbatim_is_the_default(workspace: pathlib.Path, session: DurableSession) -> None:
    session.reuse_answer = "verbatim"
    agent = Claude(workspace, session)
    agent.bash(READ)
    assert is_verbatim(agent.bash(READ))


@pytest.mark.parametrize("event, fields", [
    ("PreCompact", {"trigger": "auto", "custom_instructions": None}),
    ("PreCompact", {"trigger": "manual", "custom_instructions": ""}),
    ("SessionStart", {"source": "compact"}),
    ("SessionStart", {"source": "clear"}),
    ("SessionStart", {"source": "resume"}),
    ("UserPromptSubmit", {"prompt": "go on"}),
])
def test_after_anything_that_may_empty_the_context_the_answer_is_verbatim(
    workspace: pathlib.Path, session: DurableSession, event: str, fields: dict[str, Any]
) -> None:
    agent = Claude(workspace, session)
    agent.bash(READ)
    agent.event(event, **fields)
    assert is_verbatim(agent.bash(READ))
    assert is_reference(agent.bash(READ)), "the verbatim answer delivered the result again, in full"


def test_a_reference_answer_does_not_count_as_a_delivery(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = Claude(workspace, session)
    agent.bash(READ)
    assert is_reference(agent.bash(READ))
    agent.event("PreCompact", trigger="auto")
    assert is_verbatim(agent.bash(READ))


def test_another_session_or_a_subagent_gets_the_output_verbatim(workspace: pathlib.Path, session: DurableSession) -> None:
    first = Claude(workspace, session, "s1")
    first.bash(READ)
    assert is_verbatim(Claude(workspace, session, "s2").bash(READ))
    first.bash("true")
    first.agent_id = "agent-7"  # a subagent of s1 has a context of its own
    assert is_verbatim(first.bash(READ))
    first.agent_id = None
    assert is_verbatim(first.bash(READ)), "back in the main conversation: a new epoch, the subagent's delivery is not its"


def test_a_result_claude_cut_is_never_referenced(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = Claude(workspace, session)
    agent.bash(READ, persistedOutputPath="/tmp/tool-results/x.txt", persistedOutputSize=40000)
    assert is_verbatim(agent.bash(READ))


def test_a_result_longer_than_the_smallest_inline_limit_is_never_referenced(workspace: pathlib.Path, session: DurableSession) -> None:
    (workspace / "big.txt").write_text("é" * (claude.FULL_DELIVERY_MAX_UNITS + 1))
    agent = Claude(workspace, session)
    agent.bash("cat big.txt")
    reason = agent.bash("cat big.txt")
    assert reason is not None and reason.endswith("é" * (claude.FULL_DELIVERY_MAX_UNITS + 1)), "verbatim"
    assert "the result you received" not in (agent.bash("cat big.txt") or ""), "the verbatim answer is too long too"
    (workspace / "fits.txt").write_text("é" * claude.FULL_DELIVERY_MAX_UNITS)
    agent.bash("cat fits.txt")
    assert "the result you received for step" in (agent.bash("cat fits.txt") or "")


def test_astral_characters_count_twice_as_claude_counts_them(workspace: pathlib.Path, session: DurableSession) -> None:
    # 1,751 emoji are 3,502 UTF-16 code units: past the bound though only 1,751 code points.
    (workspace / "emoji.txt").write_text("\U0001F600" * (claude.FULL_DELIVERY_MAX_UNITS // 2 + 1))
    agent = Claude(workspace, session)
    agent.bash("cat emoji.txt")
    assert "the result you received" not in (agent.bash("cat emoji.txt") or "the result you received")


def test_an_edit_makes_the_next_read_run_whatever_was_delivered(workspace: pathlib.Path, session: DurableSession) -> None:
    agent = Claude(workspace, session)
    agent.bash(READ)
    agent.bash("sed -i 's/x = 1/x = 5/' src/app.py")
    assert agent.bash(READ) is None, "a fresh run, neither a reference nor a stored output"


def test_verbatim_mode_keeps_no_delivery_that_a_later_reference_mode_could_trust(
    workspace: pathlib.Path, session: DurableSession
) -> None:
    session.reuse_answer = "verbatim"
    agent = Claude(workspace, session)
    agent.bash(READ)
    session.reuse_answer = "reference"
    assert is_verbatim(agent.bash(READ)), "step 1's delivery was never recorded"


def test_a_damaged_context_record_costs_references_only(
    workspace: pathlib.Path, session: DurableSession, tmp_path: pathlib.Path
) -> None:
    agent = Claude(workspace, session)
    agent.bash(READ)
    with sqlite3.connect(database_path(workspace, tmp_path / "state")) as db:
        db.execute("UPDATE context SET value = replace(value, 'true', 'false')")
    assert is_verbatim(agent.bash(READ))
    assert any("context record was damaged" in text for _, text in session._store.notes())


def test_the_hook_process_honours_reuse_answer(workspace: pathlib.Path, tmp_path: pathlib.Path) -> None:
    state = tmp_path / "cli-state"

    def hook(payload: dict[str, Any], *options: str) -> dict[str, Any] | None:
        done = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hook", "claude", "--state-dir", str(state),
                               *options], input=json.dumps(payload), capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout else None

    base = {"session_id": "s1", "cwd": str(workspace), "tool_name": "Bash", "tool_input": {"command": READ}}
    hook({**base, "hook_event_name": "PreToolUse", "tool_use_id": "t1"}, "--reuse-answer", "reference")
    hook({**base, "hook_event_name": "PostToolUse", "tool_use_id": "t1",
          "tool_response": {"stdout": SHOWN, "stderr": "", "interrupted": False}}, "--reuse-answer", "reference")
    with DurableSession.open(workspace, state_dir=state) as session:
        assert session.wait_for_probes(60), "the detached probe never stored a verdict"
    verbatim = hook({**base, "hook_event_name": "PreToolUse", "tool_use_id": "t2"})
    reference = hook({**base, "hook_event_name": "PreToolUse", "tool_use_id": "t3"}, "--reuse-answer", "reference")
    assert is_verbatim(verbatim["hookSpecificOutput"]["permissionDecisionReason"])  # type: ignore[index]
    assert is_reference(reference["hookSpecificOutput"]["permissionDecisionReason"])  # type: ignore[index]
