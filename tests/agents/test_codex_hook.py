"""`ledger hook codex`: payloads in Codex's documented hook format (codex-rs/hooks/schema), and
answers that Codex's output parser accepts (checked by the rules it applies)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from ledger_impl.agents import codex
from ledger_impl.session import DurableSession

COMMON = {"session_id": "0199a-thread", "turn_id": "turn-1", "transcript_path": None, "model": "gpt-5-codex",
          "permission_mode": "default"}


def pre_payload(root: pathlib.Path, call_id: str, command: str) -> dict[str, Any]:
    return {**COMMON, "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": call_id}


def post_payload(root: pathlib.Path, call_id: str, command: str, response: Any) -> dict[str, Any]:
    return {**COMMON, "cwd": str(root), "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_response": response, "tool_use_id": call_id}


def accepted_by_codex(reply: dict[str, Any] | None) -> dict[str, Any]:
    """Codex's PreToolUse rules: no output is "no opinion"; `allow` needs `updatedInput`; `ask`
    is unsupported; `deny` needs a non-empty reason; a reason needs a decision; `continue:false`,
    `stopReason` and `suppressOutput` are unsupported; only known fields."""
    if reply is None:
        return {}
    assert set(reply) <= {"hookSpecificOutput", "systemMessage", "continue", "stopReason", "suppressOutput"}
    assert reply.get("continue", True) and "stopReason" not in reply and not reply.get("suppressOutput")
    output = reply.get("hookSpecificOutput", {})
    assert set(output) <= {"hookEventName", "permissionDecision", "permissionDecisionReason", "additionalContext",
                           "updatedInput"}
    decision = output.get("permissionDecision")
    assert decision in (None, "deny")
    if decision == "deny":
        assert output["permissionDecisionReason"].strip()
    else:
        assert "permissionDecisionReason" not in output
    return output



#: Outputs made up for the adapter's translation: no probe (see conftest's `session`).
SESSION_PROBE = False


def test_a_first_call_gets_no_opinion(workspace: pathlib.Path, session: DurableSession) -> None:
    assert codex.handle(pre_payload(workspace, "call_1", "cat notes.txt"), session) is None


def test_a_result_whose_status_cannot_be_shown_is_never_served(workspace: pathlib.Path, session: DurableSession) -> None:
    assert codex.handle(pre_payload(workspace, "call_1", "cat notes.txt"), session) is None
    assert codex.handle(post_payload(workspace, "call_1", "cat notes.txt", "alpha\nbeta\n"), session) is None
    output = accepted_by_codex(codex.handle(pre_payload(workspace, "call_2", "cat notes.txt"), session))
    assert output.get("permissionDecision") != "deny"


def completed(call_id: str, command: str, output: str, exit_code: int) -> str:
    """One `item_completed` line of a Codex session transcript, as Codex 0.171 writes it."""
    item = {"type": "CommandExecution", "id": call_id, "process_id": "123", "command": ["/bin/bash", "-lc", command],
            "source": "unified_exec_startup", "status": "failed" if exit_code else "completed",
            "aggregated_output": output,
            "exit_code": exit_code, "duration": {"secs": 0, "nanos": 1}}
    return json.dumps({"timestamp": "t", "type": "event_msg", "payload": {"type": "item_completed", "item": item}})


@pytest.mark.parametrize("transcript_output, status, served", [
    ("alpha\nbeta\n", 0, True), ("alpha\nbeta\n", 1, True), ("alpha\n[truncated]", 0, False)])
def test_the_exit_status_comes_from_codexs_transcript(
    workspace: pathlib.Path, session: DurableSession, tmp_path: pathlib.Path, transcript_output: str, status: int,
    served: bool,
) -> None:
    transcript = tmp_path / "rollout.jsonl"
    transcript.write_text("\n".join([json.dumps({"type": "session_meta"}),
                                     completed("call_1", "cat notes.txt", transcript_output, status)]) + "\n")
    codex.handle({**pre_payload(workspace, "call_1", "cat notes.txt"), "transcript_path": str(transcript)}, session)
    codex.handle({**post_payload(workspace, "call_1", "cat notes.txt", "alpha\nbeta\n"),
                  "transcript_path": str(transcript)}, session)
    output = accepted_by_codex(codex.handle(pre_payload(workspace, "call_2", "cat notes.txt"), session))
    assert (output.get("permissionDecision") == "deny") is served
    if served:
        assert output["permissionDecisionReason"].endswith("Output, verbatim:\nalpha\nbeta\n")
        assert f"exit status {status} " in output["permissionDecisionReason"]


def test_a_repeat_is_nudged_through_additional_context(workspace: pathlib.Path, session: DurableSession) -> None:
    for number in (1, 2):
        reply = codex.handle(pre_payload(workspace, f"call_{number}", "python3 -c 'print(1)'"), session)
        codex.handle(post_payload(workspace, f"call_{number}", "python3 -c 'print(1)'", "1\n"), session)
    output = accepted_by_codex(reply)
    assert output == {"hookEventName": "PreToolUse", "additionalContext": output["additionalContext"]}
    assert output["additionalContext"]


def test_a_reuse_is_a_deny_with_the_stored_output_and_its_status(workspace: pathlib.Path, session: DurableSession) -> None:
    # An exact observation, as a harness that knows the exit status records it.
    session.decide("cat notes.txt", call_id="harness-1")
    session.record("harness-1", "alpha\nbeta\n", 0)
    output = accepted_by_codex(codex.handle(pre_payload(workspace, "call_9", "cat notes.txt"), session))
    assert output["permissionDecision"] == "deny"
    header, _, stored = output["permissionDecisionReason"].partition("\n")
    assert "unchanged result of step 1, exit status 0" in header
    assert stored == "alpha\nbeta\n"
    # A payload that does carry the status is recorded exactly, and served later.
    codex.handle(pre_payload(workspace, "call_10", "cat -n notes.txt"), session)
    codex.handle(post_payload(workspace, "call_10", "cat -n notes.txt",
                              {"output": "     1\talpha\n     2\tbeta\n", "exit_code": 0}), session)
    again = accepted_by_codex(codex.handle(pre_payload(workspace, "call_11", "cat -n notes.txt"), session))
    assert again["permissionDecisionReason"].partition("\n")[2] == "     1\talpha\n     2\tbeta\n"


def test_apply_patch_is_bracketed_as_a_write(workspace: pathlib.Path, session: DurableSession) -> None:
    session.decide("cat notes.txt", call_id="harness-1")
    session.record("harness-1", "alpha\nbeta\n", 0)
    patch = {**pre_payload(workspace, "call_p", ""), "tool_name": "apply_patch",
             "tool_input": {"command": "*** Begin Patch\n*** Update File: notes.txt\n@@\n-beta\n+gamma\n*** End Patch\n"}}
    assert accepted_by_codex(codex.handle(patch, session)).get("permissionDecision") is None
    (workspace / "notes.txt").write_text("alpha\ngamma\n")
    codex.handle({**patch, "hook_event_name": "PostToolUse", "tool_response": "Success. Updated: notes.txt"}, session)
    output = accepted_by_codex(codex.handle(pre_payload(workspace, "call_r", "cat notes.txt"), session))
    assert output.get("permissionDecision") is None


def test_session_start_carries_the_view(workspace: pathlib.Path, session: DurableSession) -> None:
    session.decide("cat notes.txt", call_id="harness-1")
    session.record("harness-1", "alpha\nbeta\n", 0)
    reply = codex.handle({**COMMON, "cwd": str(workspace), "hook_event_name": "SessionStart", "source": "startup"},
                         session)
    assert reply == {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": session.view()}}
