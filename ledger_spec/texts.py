"""Every text the ledger shows an agent: reuse notes, nudges, stale reasons and view lines.

The spec (`state`, `view`) and the optimized ledger (`ledger_impl.ledger`) must produce the
same bytes, so the wording lives here once and both call it; neither side spells a message
itself. The functions take the facts a text states (steps, keys, counts) rather than whole
states, so the ledger can call them with what its indexes already hold.

Steps are indexes from 0 in every state; a text shows them counted from 1 (`shown_step`), as
the agent and the user count commands: the first command is step 1
(docs/reference/step-numbering.md).
"""

from __future__ import annotations

from typing import Iterable

from .values import CommandRecord, FileTarget, Modification, Observation


def shown_step(step: int) -> int:
    """The number a text gives the step of index `step`: the first command is step 1."""
    return step + 1


def one_line(text: str, limit: int = 120) -> str:
    """`text` with every run of whitespace made one space, cut to `limit` characters with
    an ellipsis: a view line never breaks and never grows with the command."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# --- govern -------------------------------------------------------------------------------


def reuse_answer(observation_step: int, stored_output: str, reuse_mode: str) -> tuple[str, str]:
    """(output, note) of a Reuse served from the observation of `observation_step`. In
    "reference" mode the output only points back at that step, which the agent already saw."""
    step = shown_step(observation_step)
    if reuse_mode == "reference":
        return (
            f"[ledger] output unchanged since step {step}; see it there.\n",
            f"reference to step {step}",
        )
    return stored_output, f"reused from step {step}: nothing it reads has changed since"


def nudge_note(previous: CommandRecord, *, any_time: bool) -> str:
    """Why a repeat of `previous` (the last execution of the same command) is nudged;
    `any_time` for the categories nudged whatever the gap (tests), else a short loop."""
    what = "this test" if any_time else "this command"
    return (
        f"{what} already ran at step {shown_step(previous.step)} (exit {previous.exit_status}) "
        "and nothing but transient files changed since"
    )



def unchanged_note(observation_step: int) -> str:
    """The Nudge of a call that a Reuse from the observation of `observation_step` would have
    answered, had the agent accepted a stored result for it (`Request.withhold` off): it runs,
    and the model learns that it already saw this result."""
    return f"[ledger] Unchanged since step {shown_step(observation_step)}: you already saw this result then."

# --- the view -----------------------------------------------------------------------------


def view_header(step: int, interventions: int, intervention_cap: int, task: str) -> str:
    """The view's first line; `step` is how many steps ran, so it names the coming one."""
    header = f"[ledger] step {shown_step(step)}; interventions {interventions}/{intervention_cap}"
    return header + f"\ntask: {one_line(task)}" if task else header


def modified_line(shown: Iterable[tuple[str, int]], more: int, unknown_step: int | None) -> str:
    """The recent-modifications line: `shown` (key, step) pairs in order, how many other keys
    were left out, and the step of the last change of unknown scope, if any."""
    parts = [f"{key}@{shown_step(step)}" for key, step in shown]
    if more > 0:
        parts.append(f"+{more} more")
    if unknown_step is not None:
        parts.append(f"unknown-scope change@{shown_step(unknown_step)}")
    return "modified: " + ", ".join(parts)


OBSERVATIONS_HEADING = "observations (newest first):"


def observation_line_prefix(observation: Observation) -> str:
    """An observation's view line up to its status; `observation_line` closes it."""
    return f"  @{shown_step(observation.step)} {one_line(observation.command.normalized)} ["


def observation_line(prefix: str, status: str) -> str:
    return prefix + status + "]"


CURRENT = "current"


def stale_reason(observation: Observation, first_invalidation: Modification | None) -> str:
    """The status of a stale observation: the first change that reached it."""
    if first_invalidation is None:  # pragma: no cover - currentness and the log agree
        return "stale"
    if first_invalidation.changes.unknown:
        return f"stale: unknown-scope change at step {shown_step(first_invalidation.step)}"
    target = observation.command.target
    if isinstance(target, FileTarget):
        return f"stale: {target.key} changed at step {shown_step(first_invalidation.step)}"
    return f"stale: tree changed at step {shown_step(first_invalidation.step)}"


REPEATED_PREFIX = "repeated: "
REPEATED_SEPARATOR = "; "


def repeated_part(normalized: str, count: int) -> str:
    """One command of the repeated-commands line."""
    return f"{one_line(normalized, 60)} x{count}"


def omission_marker(count: int) -> str:
    """What the view appends when the budget leaves `count` body lines out."""
    return f"\n... {count} more lines"
