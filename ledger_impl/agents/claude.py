"""Claude Code's hook protocol, translated to a durable session's decide/record.

What Claude Code 2.1 sends and expects (observed with the real CLI, see tests/agents/):

- **Bash.** PreToolUse `tool_input.command` is decided. A Reuse is a `deny` whose
  `permissionDecisionReason` is a one-line header and then the stored output verbatim; the
  model receives it as an error `tool_result` reading "PreToolUse:Bash hook error: <reason>".
  A Nudge is `additionalContext`, which Claude adds as a system note after the result.
  PostToolUse's `tool_response.stdout` is already what the model sees (stderr merged in,
  leading blank lines and trailing whitespace stripped), or "(Bash completed with no output)"
  when it is empty; that text is recorded with exit status 0 (a command sent to the
  background has only started, so its result is recorded inexact). A failed command arrives as
  PostToolUseFailure whose `error` is the model's text, "Exit code N" first. An interrupted
  command, or one whose status cannot be read, is recorded inexact (never served again).
- **Read** is decided as the shell read of the same lines (`cat -n FILE`, `sed -n 'A,Bp' FILE`)
  so that a repeated Read can be nudged, but it is never denied: Claude's Edit and Write refuse
  a file that was not Read in the same session, so a denied Read would break the next edit.
  It is decided with `withhold=False` (spec `Request`): where a stored result would serve it,
  the verdict is a Nudge saying the lines are unchanged. Its result (numbered
  lines, long lines cut) is not a shell command's output, so it is recorded inexact.
- **Edit, MultiEdit, Write, NotebookEdit** change files outside any shell. They are decided as
  a write of their `file_path` (`touch -c -- FILE`, a spelling every detector and the classifier
  read as "this file is written"), so the session's detector brackets the edit and the next
  step sees the change; the result is recorded inexact.
- **SessionStart, UserPromptSubmit** return the inform view as `additionalContext`.
- **Reuse by reference** (`--reuse-answer reference`): a Reuse is answered with a short note
  pointing at the earlier result instead of the output, when `ledger_spec.context` allows it:
  the result reached this conversation in full, and nothing since may have removed it. A new
  epoch starts at every SessionStart (its `source` is startup, resume, clear or compact: each
  may change what the model holds), every PreCompact, every UserPromptSubmit (a rewind of the
  conversation fires no hook of its own, and the user's next prompt follows it), and whenever
  the conversation changes (`session_id`, or a subagent's `agent_id`). A result counts as
  delivered in full only if Claude did not move it to a file (`persistedOutputPath`) and it
  fits the smallest inline limit a user setting can choose (`FULL_DELIVERY_MAX_UNITS`). A note
  no shorter than the verbatim answer is not sent: the output is, and counts as delivered.
- Other tools (Grep, Glob, WebFetch, Task, ...) are not Ledger's business: no answer, allow.
"""

from __future__ import annotations

import json
import pathlib
import re
import shlex
from collections.abc import Sequence
from typing import Any

from ..probe import rendering
from .hook_session import (REUSE_ANSWERS, HookSession, Outcome, Verdict, command_named, context_note, js_length, nudge_fields,
                           pre_tool_use_reply, record_outcome, reference_text, reuse_text, stop_fields, verdict_fields)
from .spec import Agent, Hooks, Replies, Reply, SettingsFiles, ToolRoles

NO_OUTPUT = rendering.CLAUDE_NO_OUTPUT
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
ROLES = ToolRoles(shell=("Bash",), file_read=("Read",), file_write=tuple(sorted(EDIT_TOOLS)))
#: The tools whose calls are decided and recorded; install uses it as the hooks' matcher.
TOOLS: tuple[str, ...] = ROLES.governed
#: The events Ledger's hooks are installed for, with their matchers.
EVENTS: dict[str, str | None] = {
    "PreToolUse": "|".join(TOOLS),
    "PostToolUse": "|".join(TOOLS),
    "PostToolUseFailure": "|".join(TOOLS),
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreCompact": None,
}
#: Events after which the model may no longer hold what it was sent (see the module's doc).
NEW_EPOCH_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PreCompact"})
#: The longest text, in UTF-16 code units as Claude Code counts, that counts as delivered in
#: full. Claude keeps a Bash output inline up to `bashOutputMaxChars` (default 30000, clamped
#: to 4000..128000 by Claude Code 2.1.328) and sends the model only a preview of a longer one;
#: a hook cannot read the user's setting, so the bound is below the smallest it allows, with
#: room for the lines Claude adds around an output.
FULL_DELIVERY_MAX_UNITS = 3_500
#: `tool_response` fields Claude sets when the output went to a file instead of the model.
_MOVED_TO_FILE = ("persistedOutputPath", "persistedOutputSize", "rawOutputPath")
_EXIT_CODE = re.compile(r"Exit code (\d+)(?:\n|$)")


def handle(payload: dict[str, Any], session: HookSession) -> Reply:
    """Answer one hook call. None means "no opinion" (the tool runs as usual)."""
    event = payload.get("hook_event_name")
    owner = context_owner(payload)
    if event in NEW_EPOCH_EVENTS:
        session.context.begin_epoch(owner)
    if event in ("SessionStart", "UserPromptSubmit"):
        return _context(event, session.view())
    tool = payload.get("tool_name")
    call_id = payload.get("tool_use_id")
    if tool not in TOOLS or not isinstance(call_id, str):
        return None
    tool_input = payload.get("tool_input") or {}
    if event == "PreToolUse":
        return _pre_tool_use(tool, tool_input, call_id, payload.get("cwd"), owner, session)
    outcome = _finished(tool, tool_input, payload)
    if outcome is not None:
        step = record_outcome(session, call_id, outcome, command_named(command_for, tool, tool_input)).step
        if step is not None and tool == "Bash" and outcome.exact and session.reuse_answer == "reference":
            full = fits_inline(outcome.output) and not _moved_to_file(payload.get("tool_response"))
            session.context.deliver(owner, step, full=full)
    return None


def context_owner(payload: dict[str, Any]) -> str | None:
    """The conversation a payload comes from: the session, and the subagent if one made the call
    (a subagent has a context of its own). None: the payload does not say."""
    session_id, agent_id = payload.get("session_id"), payload.get("agent_id")
    if not isinstance(session_id, str) or not session_id:
        return None
    return f"{session_id}/{agent_id}" if isinstance(agent_id, str) and agent_id else session_id


def fits_inline(text: str) -> bool:
    """`text` reaches the model whole whatever the user's inline limit (`FULL_DELIVERY_MAX_UNITS`)."""
    return js_length(text) <= FULL_DELIVERY_MAX_UNITS


def _moved_to_file(response: Any) -> bool:
    return isinstance(response, dict) and any(response.get(field) is not None for field in _MOVED_TO_FILE)


def shell_turn(payload: dict[str, Any]) -> tuple[str, str, int] | None:
    """(command, output the model saw, exit status) of a finished Bash call; None for any other
    call. The failure-loop guard reads a task's shell turns from here."""
    tool_input = payload.get("tool_input") or {}
    if payload.get("tool_name") != "Bash" or not isinstance(tool_input.get("command"), str):
        return None
    outcome = _finished("Bash", tool_input, payload)
    return None if outcome is None else (tool_input["command"], outcome.output, outcome.exit_code)


def _finished(tool: str, tool_input: dict[str, Any], payload: dict[str, Any]) -> Outcome | None:
    """What a finished call printed and its status; None unless the event reports a finish."""
    event = payload.get("hook_event_name")
    if event == "PostToolUse":
        return _success(tool, tool_input, payload.get("tool_response"))
    if event == "PostToolUseFailure":
        return _failure(tool, payload.get("error"), payload.get("is_interrupt"))
    return None


def stop_before_reply(reason: str) -> dict[str, Any]:
    """A tool call after the task was stopped: refused with the reason, and "stop" again."""
    return {**stop_fields(reason), "hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": reason}}


def command_for(tool: str, tool_input: dict[str, Any]) -> str:
    """The shell command a tool call is decided as."""
    if tool == "Bash":
        return str(tool_input["command"])
    # NotebookEdit names its file `notebook_path`; every other file tool, `file_path`.
    path = shlex.quote(str(tool_input["notebook_path" if tool == "NotebookEdit" else "file_path"]))
    if tool == "Read":
        offset, limit = tool_input.get("offset"), tool_input.get("limit")
        if offset is None and limit is None:
            return f"cat -n {path}"
        start = max(int(offset or 1), 1)
        end = f"{start + int(limit) - 1}" if limit is not None else "$"
        return f"sed -n '{start},{end}p' {path}"
    return f"touch -c -- {path}"


def _pre_tool_use(
    tool: str, tool_input: dict[str, Any], call_id: str, cwd: Any, owner: str | None, session: HookSession
) -> Reply:
    # A Bash result is recorded as Claude renders it (stripped), so no other command's lines can
    # be cut from it; a Read is never served, so its nudge may still come from any of them. A
    # Read is never withheld (Edit and Write refuse a file not Read in the session), nor is a
    # command sent to the background (it expects a task handle back, not a result).
    servable = tool == "Bash" and not tool_input.get("run_in_background")
    decision = session.decide(command_for(tool, tool_input), call_id=call_id,
                              cwd=cwd if isinstance(cwd, str) else None, serve_slices=tool != "Bash",
                              withhold=servable)
    output = {"hookEventName": "PreToolUse",
              **verdict_fields(decision, lambda served: _reuse_answer(served, owner, session))}
    return pre_tool_use_reply(output, decision)


def reuse_fields(decision: Verdict) -> dict[str, Any]:
    """A deny whose reason is the header and the stored output: the model reads it as the
    call's (error) result."""
    return {"permissionDecision": "deny", "permissionDecisionReason": reuse_text(decision)}


def _reuse_answer(decision: Verdict, owner: str | None, session: HookSession) -> dict[str, Any]:
    """The verbatim answer, or in reference mode the note pointing at the result the model
    holds, when the context rule allows it and the note is the shorter (a verbatim answer is
    then recorded as delivered)."""
    verbatim = reuse_fields(decision)
    step = decision.served_step
    if session.reuse_answer != "reference" or step is None:
        return verbatim
    reason, reference = verbatim["permissionDecisionReason"], reference_text(step)
    full = fits_inline(reason)
    if len(reference) >= len(reason):
        session.context.deliver(owner, step, full=full)  # a note would cost more than the output
        return verbatim
    if session.context.answer(owner, step, verbatim_full=full) == "verbatim":
        return verbatim
    return {"permissionDecision": "deny", "permissionDecisionReason": reference}


def _success(tool: str, tool_input: dict[str, Any], response: Any) -> Outcome:
    if tool != "Bash" or not isinstance(response, dict):
        return Outcome("", 0, exact=False)
    stdout = response.get("stdout")
    # A background command has only started: its output so far is not its output.
    partial = tool_input.get("run_in_background") or response.get("backgroundTaskId")
    if not isinstance(stdout, str) or partial or response.get("interrupted") or response.get("isImage"):
        return Outcome(stdout if isinstance(stdout, str) else "", 0, exact=False)
    return Outcome(stdout or NO_OUTPUT, 0, rendering=rendering.CLAUDE_BASH)


def _failure(tool: str, error: Any, interrupted: Any) -> Outcome:
    if tool != "Bash" or not isinstance(error, str) or interrupted:
        return Outcome(error if isinstance(error, str) else "", 1, exact=False)
    status = _EXIT_CODE.match(error)
    if status is None:
        return Outcome(error, 1, exact=False)
    return Outcome(error, int(status.group(1)), rendering=rendering.CLAUDE_BASH_FAILURE)


def _context(event: str, text: str) -> Reply:
    return context_note(event, text) if text else None


def tool_mask(names: Sequence[str]) -> str:
    """`--disallowedTools "A,B"`: Claude Code then leaves the tools' schemas out of every request."""
    return f"--disallowedTools {json.dumps(','.join(names))}" if names else ""


def _user_settings() -> pathlib.Path:
    return pathlib.Path.home() / ".claude" / "settings.json"


AGENT = Agent(
    name="claude",
    tool_mask=tool_mask,
    hooks=Hooks(
        tools=ROLES,
        events=EVENTS,
        settings=SettingsFiles(
            project=".claude/settings.json",
            user=_user_settings,
            user_shown="~/.claude/settings.json",
            local=".claude/settings.local.json",  # Claude Code keeps it out of git: it may hold the secret
        ),
        http_events=frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"}),
        project_dir_variable="CLAUDE_PROJECT_DIR",
        timeout_s=60,
        handle=handle,
        shell_turn=shell_turn,
        command_for=command_for,
        replies=Replies(reuse=reuse_fields, nudge=nudge_fields, note=context_note, stop=stop_fields,
                        stop_before=stop_before_reply),
        reuse_answers=REUSE_ANSWERS,  # the epochs and deliveries above: references are provable
    ),
)
