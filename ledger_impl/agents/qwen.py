"""Qwen Code's hook protocol (0.24, a Gemini CLI fork with Claude-shaped hooks), translated to a
durable session.

What Qwen Code 0.24.4 sends and reads (read in its npm bundle, and seen with the real CLI, see
tests/agents/test_qwen_code_e2e.py):

- PreToolUse, PostToolUse, PostToolUseFailure with `session_id`, `cwd`, `tool_name`,
  `tool_input`, `tool_use_id` (Qwen's own id; `tool_call_id` is the model's), and after the call
  `tool_response` (`llmContent`, `returnDisplay`) or, for a failed call, `error` (the same text
  the model reads) and `is_interrupt`.
- PreToolUse: `permissionDecision: "deny"` with `permissionDecisionReason` R blocks the call;
  the model receives R as the call's error. PreToolUse's `additionalContext` is parsed but
  not added to the result by the 0.24.4 scheduler.
- PostToolUse and PostToolUseFailure: `additionalContext` is appended to the result, so a
  Nudge is delivered there (the session returns the note the call was decided with when it is
  recorded); `continue: false` stops.
- Settings: `.qwen/settings.json` or `~/.qwen/settings.json`, the Claude shape; a matcher is a
  `|` list of names or a regular expression; a timeout is in seconds (default 60).
  `QWEN_PROJECT_DIR` is set for hooks to the project root.

A shell result reads `Command: C\\nDirectory: D\\nOutput: TEXT\\nError: (none)\\nExit Code: N\\n
Signal: (none)\\nProcess Group PGID: P`, after PostToolUse for status 0 and as
PostToolUseFailure's `error` otherwise. TEXT and N are recorded exactly only when C is the
decided command and that split is the only one possible: no error, signal or background
section, no line of TEXT that starts like a section, and a result within Qwen's default
truncation limits (a lower limit set by the user can still cut a shorter one, and a Reuse then
serves the whole output). Anything else is recorded inexact.

Tools: `run_shell_command` is decided and stored; `read_file` is decided as the shell read of
the same file and never denied (its result is Qwen's rendering); `edit`, `write_file` and
`notebook_edit` are decided as writes of their file, so the detector brackets them.

What the model sees on a Reuse: the call's error, Ledger's header (naming the exit status) and
the stored TEXT verbatim. On a Nudge: the command runs, and the note follows its result.
"""

from __future__ import annotations

import json
import pathlib
import re
import shlex
from collections.abc import Sequence
from typing import Any

from ..probe import rendering
from .hook_session import (HookSession, Outcome, Verdict, after_call_nudge, command_named, context_note, js_length,
                           record_outcome, reuse_text, stop_fields, with_degraded)
from .spec import Agent, Hooks, Replies, Reply, SettingsFiles, ToolRoles

SHELL = "run_shell_command"
READ = "read_file"
ROLES = ToolRoles(shell=(SHELL,), file_read=(READ,), file_write=("edit", "notebook_edit", "write_file"))
#: A `|` list of the governed tools, Qwen's own matcher form.
TOOLS = "|".join(ROLES.governed)
EVENTS: dict[str, str | None] = {"PreToolUse": TOOLS, "PostToolUse": TOOLS, "PostToolUseFailure": TOOLS,
                                 "SessionStart": None, "UserPromptSubmit": None}
#: Qwen's shell result sections, used to refuse an output that could be split another way.
_SECTION = re.compile(r"^(Command|Directory|Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", re.M)
#: Qwen cuts a result past either default (`truncateToolOutputThreshold` in UTF-16 units,
#: `truncateToolOutputLines`) after the post-call hooks, before the model reads it.
TRUNCATION_THRESHOLD, TRUNCATION_LINES = 25_000, 1_000
_RESULT = re.compile(r"\ACommand: (?P<command>.*)\nDirectory: [^\n]*\nOutput: (?P<output>.*)\nError: \(none\)"
                     r"\nExit Code: (?P<status>\d+)\nSignal: \(none\)\nProcess Group PGID: (?:\(none\)|\d+)\Z", re.S)


def handle(payload: dict[str, Any], session: HookSession) -> Reply:
    event = payload.get("hook_event_name")
    if event in ("SessionStart", "UserPromptSubmit"):
        view = session.view()
        return context_note(event, view) if view else None
    tool, call_id = payload.get("tool_name"), payload.get("tool_use_id")
    tool_input = payload.get("tool_input") or {}
    if tool not in ROLES.governed or not isinstance(call_id, str) or not isinstance(tool_input, dict):
        return None
    if event == "PreToolUse":
        return _pre_tool_use(tool, tool_input, call_id, payload.get("cwd"), session)
    outcome = _finished(tool, tool_input, payload)
    if outcome is None:
        return None
    note = record_outcome(session, call_id, outcome, command_named(command_for, tool, tool_input)).nudge_note
    # The Nudge decided before the call: Qwen adds only the after-call hooks' context to the result.
    return context_note(payload["hook_event_name"], note) if note else None


def _pre_tool_use(tool: str, tool_input: dict[str, Any], call_id: str, cwd: Any, session: HookSession) -> Reply:
    # Results are recorded as Qwen renders them, so only the same command can serve another.
    # A background command expects its PID back, and a file read its own rendering: never
    # withheld; a stored result that serves one arrives as a Nudge, handed over after the call.
    servable = tool == SHELL and not tool_input.get("is_background")
    decision = session.decide(command_for(tool, tool_input), call_id=call_id, cwd=cwd if isinstance(cwd, str) else None,
                              serve_slices=False, withhold=servable)
    reply: dict[str, Any] = {}
    if decision.verdict == "reuse":
        reply["hookSpecificOutput"] = {"hookEventName": "PreToolUse", **reuse_fields(decision)}
    return with_degraded(reply, decision)


def shell_turn(payload: dict[str, Any]) -> tuple[str, str, int] | None:
    """(command, output the model saw, exit status) of a finished shell call; None otherwise."""
    tool_input = payload.get("tool_input") or {}
    if payload.get("tool_name") != SHELL or not isinstance(tool_input, dict) \
            or not isinstance(tool_input.get("command"), str):
        return None
    outcome = _finished(SHELL, tool_input, payload)
    return None if outcome is None else (tool_input["command"], outcome.output, outcome.exit_code)


def _finished(tool: str, tool_input: dict[str, Any], payload: dict[str, Any]) -> Outcome | None:
    """What a finished call showed the model and its status; None unless the event is a finish."""
    event = payload.get("hook_event_name")
    if event == "PostToolUse":
        response = payload.get("tool_response")
        text = response.get("llmContent") if isinstance(response, dict) else None
    elif event == "PostToolUseFailure":
        text = None if payload.get("is_interrupt") else payload.get("error")
    else:
        return None
    return _outcome(tool, tool_input, text)


def _outcome(tool: str, tool_input: dict[str, Any], text: Any) -> Outcome:
    shown = text if isinstance(text, str) else ""
    cut = js_length(shown) > TRUNCATION_THRESHOLD or shown.count("\n") + 1 > TRUNCATION_LINES
    result = _RESULT.match(shown) if tool == SHELL and not tool_input.get("is_background") and not cut else None
    if result is None or result["command"] != tool_input.get("command") or _SECTION.search(result["output"]):
        # Another command, an error, signal or background section, or an output with a line
        # that starts like a section: not known as one command's output and status.
        return Outcome(shown, 0, exact=False)
    return Outcome(result["output"], int(result["status"]), rendering=rendering.TRIMMED)


def command_for(tool: str, tool_input: dict[str, Any]) -> str:
    """The shell command a tool call is decided as."""
    if tool == SHELL:
        return str(tool_input["command"])
    path = shlex.quote(str(tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input["absolute_path"]))
    if tool != READ:
        return f"touch -c -- {path}"
    offset, limit = tool_input.get("offset"), tool_input.get("limit")
    if offset is None and limit is None:
        return f"cat -n {path}"
    start = int(offset or 0) + 1  # Qwen's offset counts lines skipped
    return f"sed -n '{start},{'$' if limit is None else start + int(limit) - 1}p' {path}"


def reuse_fields(decision: Verdict) -> dict[str, Any]:
    """A deny whose reason is the header (with the exit status) and the stored output."""
    return {"permissionDecision": "deny", "permissionDecisionReason": reuse_text(decision, with_status=True)}


def stop_before_reply(reason: str) -> dict[str, Any]:
    """A tool call after the task was stopped: denied with the reason (Qwen reads the deny
    first), and "stop" again."""
    return {**stop_fields(reason), "hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}


def tool_mask(names: Sequence[str]) -> str:
    """A settings.json fragment: Qwen leaves the tools of `permissions.deny` out of the model's
    requests (its `excludeTools`)."""
    return json.dumps({"permissions": {"deny": list(names)}}) if names else ""


def _user_settings() -> pathlib.Path:
    return pathlib.Path.home() / ".qwen" / "settings.json"


AGENT = Agent(
    name="qwen",
    tool_mask=tool_mask,
    hooks=Hooks(
        tools=ROLES,
        events=EVENTS,
        settings=SettingsFiles(project=".qwen/settings.json", user=_user_settings, user_shown="~/.qwen/settings.json"),
        http_events=frozenset(),  # Qwen's http hooks are left for later: the thin client carries every event
        project_dir_variable="QWEN_PROJECT_DIR",
        timeout_s=60,
        handle=handle,
        shell_turn=shell_turn,
        command_for=command_for,
        replies=Replies(reuse=reuse_fields, nudge=after_call_nudge, note=context_note, stop=stop_fields,
                        stop_before=stop_before_reply),
    ),
)
