"""Gemini CLI's hook protocol (0.61, `docs/hooks/reference.md` in its npm package), translated
to a durable session.

What Gemini CLI sends and reads (read in the package's bundled docs and source):

- Every hook gets `session_id`, `transcript_path`, `cwd`, `hook_event_name` and `timestamp` on
  stdin; tool events add `tool_name`, `tool_input` and, after the call, `tool_response`
  (`llmContent`, `returnDisplay`, `error`). There is **no call id**: a call is named by a hash of
  the session, the tool and its input (`call_id`), so BeforeTool and AfterTool of one call meet.
  Two identical calls in flight at once share that name; the session then abandons the earlier
  (changes unknown, nothing served) rather than guess which result is which.
- BeforeTool: `{"decision": "deny", "reason": R}` blocks the call; the model receives R as the
  call's error, `{"error": "Tool execution blocked: R"}`. `hookSpecificOutput.additionalContext`
  is **ignored** on BeforeTool (only AfterTool's is read), and `systemMessage` is shown to the
  user, not the model.
- AfterTool: `hookSpecificOutput.additionalContext` is appended to the result the model reads
  as `<hook_context>...</hook_context>`; `continue: false` ends the agent loop. A Nudge is
  delivered there: the session returns the note the call was decided with when it is recorded.
- SessionStart and BeforeAgent (a prompt): `hookSpecificOutput.additionalContext`.
- Settings: `.gemini/settings.json` (project) or `~/.gemini/settings.json` (user), `hooks`
  mapping an event to matcher groups, the same shape as Claude's; tool matchers are regular
  expressions, a timeout is in milliseconds (the default, 60 000, is kept). Only `command`
  hooks exist, so every event runs the thin client or `ledger hook gemini`.
  `GEMINI_PROJECT_DIR` is set for hooks to the project root.

Tools (names from the package): `run_shell_command` (`command`, `is_background`) is decided and
its result stored; `read_file` (`file_path`, `start_line`, `end_line`) is decided as the shell
read of the same lines but never denied (its result is Gemini's rendering, not a shell
command's output, so it is recorded inexact); `write_file` and `replace` are decided as a write
of their `file_path`, so the detector brackets them.

A shell result reaches AfterTool as `<untrusted_context>\\nOutput: TEXT\\n[Exit Code: N\\n]
Process Group PGID: P\\n</untrusted_context>` (the exit code only when non-zero, the PGID new
each run). TEXT and N are recorded exactly only when that split is the only one possible: no
`Error:`, `Signal:` or `Background PIDs:` section, and no line of TEXT that itself starts like a
section, and a result short enough that Gemini does not cut it before the model reads it
(`TRUNCATION_THRESHOLD`, its default; a lower threshold set by the user, or a nearly full
context, can still cut a shorter one, and a Reuse then serves the whole output). Anything else
is recorded inexact.

What the model sees on a Reuse: the call's error, "Tool execution blocked: " and then the
header (naming the exit status, which the output part lacks) and the stored TEXT verbatim. On a
Nudge: the command runs, and the note follows its result (AfterTool's `additionalContext`).
"""

from __future__ import annotations

import hashlib
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
ROLES = ToolRoles(shell=(SHELL,), file_read=(READ,), file_write=("replace", "write_file"))
#: Tool matchers are regular expressions: anchored, so `read_file` does not match `read_file_x`.
TOOL_MATCHER = f"^({'|'.join(ROLES.governed)})$"
EVENTS: dict[str, str | None] = {"BeforeTool": TOOL_MATCHER, "AfterTool": TOOL_MATCHER, "SessionStart": None,
                                 "BeforeAgent": None}
#: Where the model-visible text of a shell result sits between Gemini's untrusted-content marks.
_UNTRUSTED = re.compile(r"\A<untrusted_context>\n(.*)\n</untrusted_context>\Z", re.S)
#: Gemini's shell result sections (its own list, used to split that text).
_SECTION = re.compile(r"^(Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", re.M)
#: The PGID line is required: without it an output ending in such a line would read the same.
#: Gemini cuts a shell result longer than this (its default `truncateToolOutputThreshold`, in
#: UTF-16 units) after AfterTool, before the model reads it: a longer one is not what it saw.
TRUNCATION_THRESHOLD = 40_000
_RESULT = re.compile(r"\AOutput: (?P<output>.*?)(?:\nExit Code: (?P<status>\d+))?\nProcess Group PGID: \d+\Z", re.S)


def call_id(payload: dict[str, Any]) -> str | None:
    """The name of one tool call, equal for its BeforeTool and AfterTool; None without a session."""
    session, tool = payload.get("session_id"), payload.get("tool_name")
    if not isinstance(session, str) or not session or not isinstance(tool, str):
        return None
    named = json.dumps([session, tool, payload.get("tool_input") or {}], sort_keys=True, ensure_ascii=True)
    return "gemini-" + hashlib.sha256(named.encode()).hexdigest()[:32]


def turn_id(payload: dict[str, Any]) -> str | None:
    """A finished call's name for the economizer's turns: `call_id` names a repeated identical
    call the same, so the AfterTool's own `timestamp` (when Gemini fired it) is added."""
    name, fired = call_id(payload), payload.get("timestamp")
    return f"{name}@{fired}" if name is not None and isinstance(fired, str) and fired else None


def handle(payload: dict[str, Any], session: HookSession) -> Reply:
    event = payload.get("hook_event_name")
    if event in ("SessionStart", "BeforeAgent"):
        view = session.view()
        return context_note(event, view) if view else None
    tool, name = payload.get("tool_name"), call_id(payload)
    tool_input = payload.get("tool_input") or {}
    if tool not in ROLES.governed or name is None or not isinstance(tool_input, dict):
        return None
    if event == "BeforeTool":
        return _before_tool(tool, tool_input, name, payload.get("cwd"), session)
    if event == "AfterTool":
        outcome = _outcome(tool, tool_input, payload.get("tool_response"))
        note = record_outcome(session, name, outcome, command_named(command_for, tool, tool_input)).nudge_note
        # The Nudge decided before the call: BeforeTool cannot hand it to the model, AfterTool can.
        return context_note(event, note) if note else None
    return None


def _before_tool(tool: str, tool_input: dict[str, Any], name: str, cwd: Any, session: HookSession) -> Reply:
    # Results are recorded as Gemini renders them, so only the same command can serve another.
    # A background command expects its PID back, and a read_file its own rendering: never
    # withheld; a stored result that serves one arrives as a Nudge, handed over after the call.
    servable = tool == SHELL and not tool_input.get("is_background")
    decision = session.decide(command_for(tool, tool_input), call_id=name, cwd=cwd if isinstance(cwd, str) else None,
                              serve_slices=False, withhold=servable)
    reply: dict[str, Any] = {}
    if decision.verdict == "reuse":
        reply.update(reuse_fields(decision))
    return with_degraded(reply, decision)


def shell_turn(payload: dict[str, Any]) -> tuple[str, str, int] | None:
    """(command, output the model saw, exit status) of a finished shell call; None otherwise."""
    tool_input = payload.get("tool_input") or {}
    if payload.get("hook_event_name") != "AfterTool" or payload.get("tool_name") != SHELL \
            or not isinstance(tool_input, dict) or not isinstance(tool_input.get("command"), str):
        return None
    outcome = _outcome(SHELL, tool_input, payload.get("tool_response"))
    return tool_input["command"], outcome.output, outcome.exit_code


def _outcome(tool: str, tool_input: dict[str, Any], response: Any) -> Outcome:
    content = response.get("llmContent") if isinstance(response, dict) else None
    text = content if isinstance(content, str) else ""
    if tool != SHELL or tool_input.get("is_background") or not isinstance(content, str) or response.get("error") \
            or js_length(content) > TRUNCATION_THRESHOLD:
        return Outcome(text, 0, exact=False)
    inner = _UNTRUSTED.match(content)
    result = _RESULT.match(inner.group(1)) if inner is not None else None
    if inner is None or result is None or "untrusted_context" in inner.group(1) or _SECTION.search(result["output"]):
        # Another section (error, signal, background PIDs), or an output with a line that
        # starts like a section: the text cannot be split into output and status for sure.
        return Outcome(text, 0, exact=False)
    output, status = result["output"], int(result["status"] or 0)
    shown = response.get("returnDisplay")
    if status != 0 and shown != output and not (output == "(empty)" and shown == f"Command exited with code: {status}"):
        # An exit status line could also be the last line of the output of a command that
        # exited 0; the display text (the output alone, or this message when it is empty) tells.
        return Outcome(text, 0, exact=False)
    return Outcome(output, status, rendering=rendering.TRIMMED)


def command_for(tool: str, tool_input: dict[str, Any]) -> str:
    """The shell command a tool call is decided as."""
    if tool == SHELL:
        return str(tool_input["command"])
    path = shlex.quote(str(tool_input["file_path"]))
    if tool != READ:
        return f"touch -c -- {path}"
    start, end = tool_input.get("start_line"), tool_input.get("end_line")
    if start is None and end is None:
        return f"cat -n {path}"
    return f"sed -n '{max(int(start or 1), 1)},{'$' if end is None else int(end)}p' {path}"


def reuse_fields(decision: Verdict) -> dict[str, Any]:
    """A deny whose reason is the header (with the exit status) and the stored output."""
    return {"decision": "deny", "reason": reuse_text(decision, with_status=True)}


def stop_before_reply(reason: str) -> dict[str, Any]:
    """A tool call after the task was stopped: denied with the reason, and "stop" again."""
    return {**stop_fields(reason), "decision": "deny", "reason": reason}


def tool_mask(names: Sequence[str]) -> str:
    """A settings.json fragment: `tools.exclude` keeps the tools out of the model's requests."""
    return json.dumps({"tools": {"exclude": list(names)}}) if names else ""


def _user_settings() -> pathlib.Path:
    return pathlib.Path.home() / ".gemini" / "settings.json"


AGENT = Agent(
    name="gemini",
    tool_mask=tool_mask,
    hooks=Hooks(
        tools=ROLES,
        events=EVENTS,
        settings=SettingsFiles(project=".gemini/settings.json", user=_user_settings, user_shown="~/.gemini/settings.json"),
        http_events=frozenset(),  # Gemini CLI runs command hooks only
        project_dir_variable="GEMINI_PROJECT_DIR",
        timeout_s=None,  # Gemini's `timeout` is in milliseconds; its 60 s default is kept
        handle=handle,
        shell_turn=shell_turn,
        command_for=command_for,
        replies=Replies(reuse=reuse_fields, nudge=after_call_nudge, note=context_note, stop=stop_fields,
                        stop_before=stop_before_reply),
        turn_id=turn_id,
    ),
)
