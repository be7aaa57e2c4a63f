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

Codex's PostToolUse for a shell call carries the output as one string and no exit status.
The status is taken from Codex's own session transcript (`transcript_path`): the
`item_completed` event of this call, a finished `CommandExecution` whose
`aggregated_output` equals the hook's output string and whose `exit_code` is an integer. Only
then is the result exact (stored, servable); if the transcript is missing, unreadable, or
disagrees, the result is recorded inexact (the bracket closes, changes are counted, nothing is
served later). A payload that itself carries an integer `exit_code` next to its `output` is
recorded exactly too.

What the model sees on a Reuse: "Command blocked by PreToolUse hook: <reason>. Command:
<command>", where the reason is the header (naming the exit status) and the stored output;
Codex trims the reason's surrounding whitespace, so trailing newlines of the output are lost.
"""

from __future__ import annotations

import json
import os
import pathlib
import shlex
from collections.abc import Sequence
from typing import Any

from .hook_session import (HookSession, Outcome, Verdict, command_named, context_note, nudge_fields, pre_tool_use_reply,
                           record_outcome, reuse_text, stop_fields)
from .spec import Agent, Hooks, Replies, Reply, SettingsFiles, ToolRoles

ROLES = ToolRoles(shell=("Bash", "exec_command", "local_shell", "shell"), patch=("apply_patch",))
SHELL_TOOLS = frozenset(ROLES.shell)
PATCH_TOOLS = frozenset(ROLES.patch)
#: The events Ledger's hooks are installed for; Codex's hooks take no matcher here (all tools).
EVENTS: dict[str, str | None] = {"PreToolUse": None, "PostToolUse": None, "SessionStart": None, "UserPromptSubmit": None}


def handle(payload: dict[str, Any], session: HookSession) -> Reply:
    event = payload.get("hook_event_name")
    if event in ("SessionStart", "UserPromptSubmit"):
        view = session.view()
        return context_note(event, view) if view else None
    tool = payload.get("tool_name")
    call_id = payload.get("tool_use_id")
    if tool not in SHELL_TOOLS | PATCH_TOOLS or not isinstance(call_id, str):
        return None
    if event == "PreToolUse":
        return _pre_tool_use(tool, payload.get("tool_input") or {}, call_id, payload.get("cwd"), session)
    if event == "PostToolUse":
        ran = command_named(command_for, tool, payload.get("tool_input") or {})
        record_outcome(session, call_id, _finished(tool, call_id, payload), ran)
    return None


def shell_turn(payload: dict[str, Any]) -> tuple[str, str, int] | None:
    """(command, output, exit status) of a finished shell call; None for any other call. The
    status is the one recorded for Ledger, or 0 when Codex does not say (the guard still reads
    the output's error lines)."""
    tool, tool_input = payload.get("tool_name"), payload.get("tool_input") or {}
    if payload.get("hook_event_name") != "PostToolUse" or tool not in SHELL_TOOLS or "command" not in tool_input:
        return None
    call_id = payload.get("tool_use_id")
    outcome = _finished(tool, call_id if isinstance(call_id, str) else None, payload)
    return command_for(tool, tool_input), outcome.output, outcome.exit_code


def _finished(tool: str, call_id: str | None, payload: dict[str, Any]) -> Outcome:
    """What a finished call printed, with its exit status from the transcript when the
    response left it out (a shell call whose response is plain text)."""
    outcome = _outcome(tool, payload.get("tool_response"))
    if not outcome.exact and tool in SHELL_TOOLS and isinstance(payload.get("tool_response"), str) and call_id is not None:
        status = exit_status_from_transcript(payload.get("transcript_path"), call_id, outcome.output)
        if status is not None:
            return Outcome(outcome.output, status)
    return outcome


def stop_before_reply(reason: str) -> dict[str, Any]:
    """A tool call after the task was stopped: denied with the reason. Only the deny: Codex
    0.171 fails a PreToolUse hook whose answer carries `continue: false` and then runs the call
    (seen with the real CLI), and it does not end the turn on PostToolUse's `continue: false`
    either, so the closest it has to "stop" is refusing every later call of the session."""
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


def command_for(tool: str, tool_input: dict[str, Any]) -> str:
    if tool in PATCH_TOOLS:
        return "apply_patch"
    command = tool_input["command"]
    return command if isinstance(command, str) else shlex.join(str(part) for part in command)


def _pre_tool_use(tool: str, tool_input: dict[str, Any], call_id: str, cwd: Any, session: HookSession) -> Reply:
    decision = session.decide(command_for(tool, tool_input), call_id=call_id, cwd=cwd if isinstance(cwd, str) else None)
    output: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if decision.verdict == "reuse":
        output.update(reuse_fields(decision))
    elif decision.verdict == "nudge":
        output.update(nudge_fields(decision))
    return pre_tool_use_reply(output, decision)


def reuse_fields(decision: Verdict) -> dict[str, Any]:
    """A deny whose reason is the header (with the exit status, which Codex's result text
    lacks) and the stored output."""
    return {"permissionDecision": "deny", "permissionDecisionReason": reuse_text(decision, with_status=True)}



def _outcome(tool: str, response: Any) -> Outcome:
    if tool in SHELL_TOOLS and isinstance(response, dict):
        output, status = response.get("output"), response.get("exit_code")
        if isinstance(output, str) and isinstance(status, int) and not isinstance(status, bool):
            return Outcome(output, status)
    # Codex does not say whether the command succeeded; 0 is only what the view shows.
    return Outcome(response if isinstance(response, str) else "", 0, exact=False)


#: How much of the transcript's end is searched for the call's completion (its newest events).
TRANSCRIPT_TAIL_BYTES = 4 * 1024 * 1024


def exit_status_from_transcript(path: Any, call_id: str, output: str) -> int | None:
    """The exit status Codex recorded for `call_id`, if its transcript shows that call completed
    with exactly `output`; None when it cannot be shown."""
    if not isinstance(path, str) or not path:
        return None
    try:
        with open(path, "rb") as transcript:
            transcript.seek(0, os.SEEK_END)
            size = transcript.tell()
            transcript.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            tail = transcript.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if call_id.encode() not in line or b"item_completed" not in line:
            continue
        try:
            item = json.loads(line)["payload"]["item"]
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(item, dict) or item.get("id") != call_id or item.get("type") != "CommandExecution":
            continue
        status = item.get("exit_code")
        # Codex marks a command that exited non-zero "failed"; either way it ran to its end.
        if item.get("status") in ("completed", "failed") and item.get("aggregated_output") == output \
                and isinstance(status, int) and not isinstance(status, bool) and status >= 0:
            return status
        return None
    return None


def tool_mask(names: Sequence[str]) -> str:
    """A config.toml fragment: Codex prunes by capability package, each a `[features]` entry
    set to false in the task's configuration file."""
    return "\n".join(["[features]", *(f"{json.dumps(name)} = false" for name in names)]) if names else ""


def _user_settings() -> pathlib.Path:
    return pathlib.Path(os.environ.get("CODEX_HOME") or pathlib.Path.home() / ".codex") / "hooks.json"


AGENT = Agent(
    name="codex",
    tool_mask=tool_mask,
    hooks=Hooks(
        tools=ROLES,
        events=EVENTS,
        settings=SettingsFiles(project=".codex/hooks.json", user=_user_settings, user_shown="$CODEX_HOME/hooks.json"),
        http_events=frozenset(),  # Codex has command hooks only: the thin client carries every event
        project_dir_variable=None,
        timeout_s=None,
        handle=handle,
        shell_turn=shell_turn,
        command_for=command_for,
        replies=Replies(reuse=reuse_fields, nudge=nudge_fields, note=context_note, stop=stop_fields,
                        stop_before=stop_before_reply),
    ),
)
