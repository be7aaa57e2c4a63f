"""Codex CLI's hook protocol (codex-rs/hooks schema), translated to a durable session.

Codex sends Claude-shaped JSON on stdin (`hook_event_name`, `tool_name`, `tool_input.command`,
`tool_use_id`, `cwd`, plus `turn_id` and `model`) and reads:
- PreToolUse: nothing for "no opinion" (Codex refuses `permissionDecision: "allow"` without
  `updatedInput`); `permissionDecision: "deny"` with a non-empty `permissionDecisionReason`
  blocks the call and shows the reason to the model (Codex trims surrounding whitespace);
  `additionalContext` is added for the model.
- PostToolUse: `additionalContext`.
- SessionStart, UserPromptSubmit: `additionalContext`.

Shell calls arrive as tool "Bash"; `apply_patch` edits arrive under that name with the patch
as input: they are decided as an unknown write (`apply_patch` is not a read the classifier
knows), so the detector brackets them.

Codex's PostToolUse for a shell call carries the output as one string and no exit status, so
the result cannot be stored as a reusable observation: it is recorded inexact (the bracket
closes, changes are counted, nothing is served later). Codex gets Nudges from its own history,
and Reuse only where an exact observation exists; a payload that does carry an integer
`exit_code` next to its `output` is recorded exactly.
"""

from __future__ import annotations

from typing import Any

from .hook_session import HookSession, Outcome, nudge_text, record_outcome, reuse_text

Reply = dict[str, Any] | None
SHELL_TOOLS = frozenset({"Bash", "shell", "local_shell", "exec_command"})
PATCH_TOOLS = frozenset({"apply_patch"})


def handle(payload: dict[str, Any], session: HookSession) -> Reply:
    event = payload.get("hook_event_name")
    if event in ("SessionStart", "UserPromptSubmit"):
        view = session.view()
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": view}} if view else None
    tool = payload.get("tool_name")
    call_id = payload.get("tool_use_id")
    if tool not in SHELL_TOOLS | PATCH_TOOLS or not isinstance(call_id, str):
        return None
    if event == "PreToolUse":
        return _pre_tool_use(tool, payload.get("tool_input") or {}, call_id, payload.get("cwd"), session)
    if event == "PostToolUse":
        record_outcome(session, call_id, _outcome(tool, payload.get("tool_response")))
    return None


def command_for(tool: str, tool_input: dict[str, Any]) -> str:
    if tool in PATCH_TOOLS:
        return "apply_patch"
    command = tool_input["command"]
    return command if isinstance(command, str) else " ".join(str(part) for part in command)


def _pre_tool_use(tool: str, tool_input: dict[str, Any], call_id: str, cwd: Any, session: HookSession) -> Reply:
    decision = session.decide(command_for(tool, tool_input), call_id=call_id, cwd=cwd if isinstance(cwd, str) else None)
    output: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if decision.verdict == "reuse":
        output["permissionDecision"] = "deny"
        output["permissionDecisionReason"] = reuse_text(decision, with_status=True)
    elif decision.verdict == "nudge":
        output["additionalContext"] = nudge_text(decision)
    reply: dict[str, Any] = {}
    if len(output) > 1:
        reply["hookSpecificOutput"] = output
    if decision.degraded:
        reply["systemMessage"] = f"ledger: {decision.degraded}"
    return reply or None


def _outcome(tool: str, response: Any) -> Outcome:
    if tool in SHELL_TOOLS and isinstance(response, dict):
        output, status = response.get("output"), response.get("exit_code")
        if isinstance(output, str) and isinstance(status, int) and not isinstance(status, bool):
            return Outcome(output, status)
    # Codex does not say whether the command succeeded; 0 is only what the view shows.
    return Outcome(response if isinstance(response, str) else "", 0, exact=False)
