"""GitHub Copilot CLI's hook protocol, translated to a durable session's decide/record.

What Copilot CLI 1.0.102 sends and reads (observed with the real CLI, see
tests/agents/test_copilot_e2e.py):

- **Settings.** Hook files are `.github/hooks/*.json` (the repository's; loaded only once the
  folder is trusted, in prompt mode too) and `$COPILOT_HOME/hooks/*.json` (the user's, default
  `~/.copilot`). Ledger writes a file of its own, `ledger.json`, in the Claude-compatible shape
  Copilot accepts (`{"hooks": {EVENT: [{"hooks": [{"type": "command", "command": C,
  "timeout": S}]}]}}`), so nothing else in either directory is touched.
- **Events.** Ledger registers the PascalCase names (`PreToolUse`, `PostToolUse`, ...), which
  Copilot documents as its VS Code/Claude compatibility mode: the payload then says which event
  it is (`hook_event_name`, `session_id`, `cwd`, `tool_name`, `tool_input`), and the tools carry
  Claude's names: `bash` arrives as "Bash", `view` as "Read", `edit` as "Edit", `create` as
  "Write". The camelCase names (`preToolUse`, ...) send a payload that does not name its event,
  and a PreToolUse `additionalContext` there never reaches the model (checked with the CLI).
- **No call id.** No payload carries the model's tool-call id, so the call id is derived from
  the session, the tool and its input. Two identical calls in flight at once share it: the
  session then treats the first as abandoned and serves nothing meanwhile (`session.decide`).
- **Bash.** PostToolUse's `tool_result.text_result_for_llm` is what the model receives: the
  output with trailing whitespace stripped and one newline kept, then `<shellId: N completed
  with exit code S>`. The text before that trailer is recorded with exit status S; anything
  else (no trailer, an output too large that Copilot saved to a file and previewed, a call in
  `async` mode, a result that is not `success`) is recorded inexact, so it is never served.
- **Replies.** A Reuse is `permissionDecision: "deny"` with the reason; the model receives
  "Denied by preToolUse hook: <reason>" as the call's result, trailing newlines kept. A Nudge is
  PreToolUse `additionalContext`; the model receives it after the result as a user message,
  "Additional context from preToolUse hook:\\n<note>". PostToolUse, SessionStart and
  UserPromptSubmit read a top-level `additionalContext` (not `hookSpecificOutput`): after a
  result it is appended as "Tool "bash" succeeded. Additional guidance from postToolUse
  hooks:\\n<note>". `continue: false` does not end the turn, so "stop" is such a note, and every
  later call of the session is denied with the reason.
- **Read** is decided as the shell read of the same lines (`cat FILE`, `sed -n 'A,Bp' FILE`)
  but never denied (`withhold=False`): where a stored result would serve it, the verdict is a
  Nudge saying the lines are unchanged, and its
  result (a file's text, cut above 20 KB) is recorded inexact. **Edit** and **Write** are
  decided as a write of their `path` (`touch -c -- FILE`), so the detector brackets them.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import shlex
from collections.abc import Sequence
from typing import Any

from ..probe import rendering
from .hook_session import (HookSession, Outcome, Verdict, command_named, nudge_fields, pre_tool_use_reply,
                           record_outcome, reuse_text, verdict_fields)
from .spec import Agent, Hooks, Replies, Reply, SettingsFiles, ToolRoles

ROLES = ToolRoles(shell=("Bash",), file_read=("Read",), file_write=("Edit", "Write"))
TOOLS: tuple[str, ...] = ROLES.governed
#: Copilot matches a hook's `matcher` against the whole tool name (a regular expression).
EVENTS: dict[str, str | None] = {
    "PreToolUse": "|".join(TOOLS),
    "PostToolUse": "|".join(TOOLS),
    "PostToolUseFailure": "|".join(TOOLS),
    "SessionStart": None,
    "UserPromptSubmit": None,
}
#: What Copilot's shell tool appends to a finished command's output.
_TRAILER = re.compile(r"<shellId: [^\n>]+ completed with exit code (\d+)>\Z")
#: How Copilot answers an output too large for the model: saved to a file, a preview shown.
_SAVED_TO_FILE = "Output too large to read at once ("


def handle(payload: dict[str, Any], session: HookSession) -> Reply:
    """Answer one hook call. None means "no opinion" (the tool runs as usual)."""
    event = payload.get("hook_event_name")
    if event in ("SessionStart", "UserPromptSubmit"):
        view = session.view()
        return note_reply(event, view) if view else None
    tool, tool_input = payload.get("tool_name"), payload.get("tool_input")
    if tool not in TOOLS or not isinstance(tool_input, dict):
        return None
    call_id = derived_call_id(payload)
    if event == "PreToolUse":
        return _pre_tool_use(tool, tool_input, call_id, payload.get("cwd"), session)
    if event in ("PostToolUse", "PostToolUseFailure"):
        record_outcome(session, call_id, _finished(tool, tool_input, payload), command_named(command_for, tool, tool_input))
    return None


def derived_call_id(payload: dict[str, Any]) -> str:
    """The call's id, from what its PreToolUse and PostToolUse payloads share."""
    key = json.dumps([payload.get("session_id"), payload.get("tool_name"), payload.get("tool_input")], sort_keys=True)
    return "copilot-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def shell_turn(payload: dict[str, Any]) -> tuple[str, str, int] | None:
    """(command, output the model saw, exit status) of a finished Bash call; None otherwise."""
    tool_input = payload.get("tool_input")
    if payload.get("hook_event_name") != "PostToolUse" or payload.get("tool_name") != "Bash" \
            or not isinstance(tool_input, dict) or not isinstance(tool_input.get("command"), str):
        return None
    outcome = _finished("Bash", tool_input, payload)
    return tool_input["command"], outcome.output, outcome.exit_code


def _finished(tool: str, tool_input: dict[str, Any], payload: dict[str, Any]) -> Outcome:
    """What a finished call showed the model; exact only for a Bash call run to its end."""
    result = payload.get("tool_result")
    text = result.get("text_result_for_llm") if isinstance(result, dict) else None
    if not isinstance(text, str):
        error = payload.get("error")
        return Outcome(error if isinstance(error, str) else "", 1, exact=False)
    trailer = _TRAILER.search(text)
    if tool != "Bash" or trailer is None:
        return Outcome(text, 0, exact=False)
    exact = (payload.get("hook_event_name") == "PostToolUse" and result.get("result_type") == "success"
             and tool_input.get("mode", "sync") == "sync" and not text.startswith(_SAVED_TO_FILE))
    return Outcome(text[:trailer.start()], int(trailer.group(1)), exact=exact, rendering=rendering.COPILOT_BASH)


def note_reply(event: str, text: str) -> dict[str, Any]:
    """A note the model reads after this event: a top-level `additionalContext` (Copilot drops
    it from `hookSpecificOutput` for every event but PreToolUse)."""
    return {"additionalContext": text}


def stop_reply(reason: str) -> dict[str, Any]:
    """Copilot ignores `continue: false`; the closest to "stop" is telling the model why,
    while every later call is refused (`stop_before_reply`)."""
    return note_reply("PostToolUse", reason)


def stop_before_reply(reason: str) -> dict[str, Any]:
    """A tool call after the task was stopped: denied with the reason."""
    return {"permissionDecision": "deny", "permissionDecisionReason": reason}


def command_for(tool: str, tool_input: dict[str, Any]) -> str:
    """The shell command a tool call is decided as."""
    if tool == "Bash":
        return str(tool_input["command"])
    path = shlex.quote(str(tool_input["path"]))
    if tool != "Read":
        return f"touch -c -- {path}"
    lines = tool_input.get("view_range")
    if not isinstance(lines, list) or len(lines) != 2:
        return f"cat {path}"
    start, end = max(int(lines[0]), 1), int(lines[1])
    return f"sed -n '{start},{end if end >= start else '$'}p' {path}"


def _pre_tool_use(tool: str, tool_input: dict[str, Any], call_id: str, cwd: Any, session: HookSession) -> Reply:
    # A Bash result is recorded as Copilot renders it (trailing whitespace stripped), so no
    # other command's lines may be cut from it.
    # A Read is never denied (Copilot's edit tools expect the file read in the session), nor an
    # asynchronous command.
    servable = tool == "Bash" and tool_input.get("mode", "sync") == "sync"
    decision = session.decide(command_for(tool, tool_input), call_id=call_id,
                              cwd=cwd if isinstance(cwd, str) else None, serve_slices=False, withhold=servable)
    output = {"hookEventName": "PreToolUse", **verdict_fields(decision, reuse_fields)}
    return pre_tool_use_reply(output, decision)


def reuse_fields(decision: Verdict) -> dict[str, Any]:
    """A deny whose reason is the header (with the exit status, which the trailer Copilot adds
    to a fresh result carried) and the stored output."""
    return {"permissionDecision": "deny", "permissionDecisionReason": reuse_text(decision, with_status=True)}


def tool_mask(names: Sequence[str]) -> str:
    """`--excluded-tools A,B`: its deny option would still bill every tool's schema."""
    return f"--excluded-tools {','.join(names)}" if names else ""


def _user_settings() -> pathlib.Path:
    return pathlib.Path(os.environ.get("COPILOT_HOME") or pathlib.Path.home() / ".copilot") / "hooks" / "ledger.json"


AGENT = Agent(
    name="copilot",
    tool_mask=tool_mask,
    hooks=Hooks(
        tools=ROLES,
        events=EVENTS,
        settings=SettingsFiles(project=".github/hooks/ledger.json", user=_user_settings,
                               user_shown="$COPILOT_HOME/hooks/ledger.json"),
        http_events=frozenset(),  # its HTTP hooks are not wired to the service: the thin client carries every event
        project_dir_variable="COPILOT_PROJECT_DIR",
        timeout_s=60,
        handle=handle,
        shell_turn=shell_turn,
        command_for=command_for,
        replies=Replies(reuse=reuse_fields, nudge=nudge_fields, note=note_reply, stop=stop_reply,
                        stop_before=stop_before_reply),
    ),
)
