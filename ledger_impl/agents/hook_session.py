"""What agent hooks share: the session they talk to, and how a tool's result is recorded.

Theory of operation. An agent that runs its own tools (Claude Code, Codex) calls a hook process
before each tool call (PreToolUse) and after it (PostToolUse, or PostToolUseFailure). Each call
is a new process, so the state lives in a durable session (`ledger_impl.session`): PreToolUse
asks it to `decide` the call, which also opens the detector's bracket around the execution;
the matching post hook `record`s the result, which closes it. The protocol modules
(`claude.py`, `codex.py`, see `spec.py`) only translate payloads to these two calls and verdicts back to the
agent's JSON; they never judge freshness themselves.

A result is stored as the agent saw it (after the agent's own formatting), so that a Reuse is
byte-identical to what the agent would see on a fresh run. When the hook cannot know that text
exactly (no exit status in the payload, an interrupted command, a tool whose answer is not a
shell command's output), the result is recorded as *inexact*: the bracket still closes and
changes are still counted, but nothing is stored that a later Reuse could serve.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import attrs

from ledger_spec.degraded import Degraded
from ledger_spec.texts import shown_step

from ..session import Recorded


class Verdict(Protocol):
    """The fields of `ledger_impl.session.Decision` that hooks read."""

    verdict: str
    output: str | None
    exit_code: int | None
    note: str | None
    served_step: int | None
    degraded: Degraded | None


#: How a Reuse may be answered (`--reuse-answer`): the stored output, or a note pointing at the
#: earlier result when the model provably still holds it (`ledger_spec.context`).
REUSE_ANSWERS: tuple[str, ...] = ("verbatim", "reference")


class ContextLog(Protocol):
    """The part of `ledger_impl.context_journal.ContextJournal` that hooks use."""

    def begin_epoch(self, owner: str | None) -> None: ...

    def deliver(self, owner: str | None, step: int, *, full: bool) -> None: ...

    def answer(self, owner: str | None, step: int, *, verbatim_full: bool) -> str: ...


class HookSession(Protocol):
    """The part of `ledger_impl.session.DurableSession` that hooks use."""

    #: "verbatim" or "reference": how a Reuse is answered (`--reuse-answer`).
    reuse_answer: str
    context: ContextLog

    def decide(
        self, command: str, *, call_id: str, cwd: str | None = None, serve_slices: bool = True, withhold: bool = True
    ) -> Verdict: ...

    def record(
        self, call_id: str, output: str, exit_code: int, *, exact: bool = True, ran: str | None = None,
        rendering: str = "exact",
    ) -> Recorded: ...

    def view(self) -> str: ...


@attrs.frozen
class Outcome:
    """A finished tool call as the agent saw it. Inexact: not a shell command's exact output
    and status, so never to be served again."""

    output: str
    exit_code: int
    exact: bool = True
    rendering: str = "exact"  # how the agent showed the output (ledger_impl.probe.rendering)


def js_length(text: str) -> int:
    """`text.length` in JavaScript (UTF-16 code units), how Node-based agents measure a result
    against their truncation thresholds."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def record_outcome(session: HookSession, call_id: str, outcome: Outcome, ran: str) -> Recorded:
    """Close the call's bracket; its result is stored for reuse only when exact, and only if
    `ran`, the command the finished call's payload names, is the one decided (a hook that runs
    after Ledger's may rewrite the command: `updatedInput`). "" for a payload that names none.
    Returns the result's ledger step and the call's Nudge note (`DurableSession.record`)."""
    return session.record(call_id, outcome.output, outcome.exit_code, exact=outcome.exact, ran=ran,
                          rendering=outcome.rendering)


def command_named(command_for: Callable[[str, dict[str, Any]], str], tool: str, tool_input: Any) -> str:
    """The command a finished call's payload names, as `command_for` spells it for the decision;
    "" when the payload names none (it then matches no decided command)."""
    try:
        return command_for(tool, tool_input)
    except (KeyError, TypeError, ValueError):
        return ""


def reuse_header(step: int | None, exit_code: int | None = None) -> str:
    """The one line above a reused output; the output follows it verbatim on the next line."""
    where = f"step {shown_step(step)}" if step is not None else "an earlier step"
    status = f", exit status {exit_code}" if exit_code is not None else ""
    return (f"[ledger] Not run again: this is the unchanged result of {where}{status} "
            f"(nothing it depends on has changed since). Output, verbatim:")


def reuse_text(decision: Verdict, *, with_status: bool = False) -> str:
    """Header and stored output. `with_status` for agents whose own result text does not
    already carry the exit status (Claude's failure text starts with "Exit code N")."""
    header = reuse_header(decision.served_step, decision.exit_code if with_status else None)
    return f"{header}\n{decision.output or ''}"



def reference_text(step: int) -> str:
    """A Reuse answered by reference: the model already holds the result of `step` in full, in
    this conversation, with nothing since that could have removed it (`ledger_spec.context`)."""
    return (f"[ledger] Not run again: unchanged since step {shown_step(step)} (nothing it depends on has "
            f"changed since). Its output is the result you received for step {shown_step(step)}, "
            "in full, earlier in this conversation.")


def nudge_text(decision: Verdict) -> str:
    return decision.note or "[ledger] This command looks redundant: it was run recently and nothing has changed since."


def nudge_fields(decision: Verdict) -> dict[str, Any]:
    """A Nudge as PreToolUse `additionalContext`, which Claude Code adds as a system note after
    the result and Codex as a developer message."""
    return {"additionalContext": nudge_text(decision)}


def verdict_fields(decision: Verdict, reuse_fields: Callable[[Verdict], dict[str, Any]]) -> dict[str, Any]:
    """The PreToolUse fields for a verdict: a Reuse as the agent's `reuse_fields`, a Nudge as
    its note. A call the agent must run anyway was decided with `withhold=False`, so a stored
    result that serves it arrives as a Nudge naming it (spec `Request.withhold`)."""
    if decision.verdict == "reuse":
        return reuse_fields(decision)
    return nudge_fields(decision) if decision.verdict == "nudge" else {}


def after_call_nudge(decision: Verdict) -> dict[str, Any]:
    """A Nudge for an agent that reads no model context from its before-tool answer (Gemini
    CLI, Qwen Code): nothing before the call; `record` returns the note, and the after-call
    answer hands it to the model."""
    return {}


def context_note(event: str, text: str) -> dict[str, Any]:
    """`text` as `additionalContext` of `event`'s answer, the field every hook agent so far reads."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def stop_fields(reason: str) -> dict[str, Any]:
    """`continue: false` with `stopReason`: "end the agent loop", shown to the user."""
    return {"continue": False, "stopReason": reason}


def with_system_message(reply: dict[str, Any] | None, note: str) -> dict[str, Any]:
    """`reply` with `note` added to its `systemMessage` (the user sees it), after any earlier one."""
    earlier = (reply or {}).get("systemMessage")
    return {**(reply or {}), "systemMessage": f"{earlier}\n{note}" if earlier else note}


def with_degraded(reply: dict[str, Any], decision: Verdict) -> dict[str, Any] | None:
    """`reply` with the decision's degraded state added to its `systemMessage` (the user sees
    it); None for an empty reply ("no opinion")."""
    if decision.degraded:
        reply = with_system_message(reply, f"ledger: {decision.degraded.text()}")
    return reply or None


def pre_tool_use_reply(output: dict[str, Any], decision: Verdict) -> dict[str, Any] | None:
    """The PreToolUse reply both agents read: `hookSpecificOutput` when a verdict added anything
    to `output` (which holds the event name), and the degraded state as a visible message."""
    return with_degraded({"hookSpecificOutput": output} if len(output) > 1 else {}, decision)
