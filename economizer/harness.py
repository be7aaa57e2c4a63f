"""What the controller hands a harness: the manual, the tool mask, and the guard's signals.

* manual: prepended to the task prompt (`prompt_with_manual`).
* tool mask, in each harness's own option format: the `tool_mask` of its agent plugin
  (`ledger_impl.agents`), for instance
    Claude Code  `--disallowedTools "A,B"` (removes the schemas from every request)
    Codex        a config.toml fragment: the pruning unit is a capability package, written as
                 `[features]` entries set to false in the task's configuration file
    Copilot CLI  `--excluded-tools A,B` (its deny option would still bill every schema)
* guard: a redirect becomes a Ledger `Nudge` whose note is the redirect text (the harness
  shows it to the agent like any Ledger note, or restarts with it in the prompt); a stop is
  a `StopSignal`, which a hook turns into its "block and end" answer, and `guard_signal`
  returns None for "continue".
"""

from __future__ import annotations

import json
from typing import Iterable

import attrs

from economizer_spec.guard import Decision
from ledger_impl.agents import AGENTS
from ledger_spec.values import Nudge

HARNESSES: tuple[str, ...] = tuple(AGENTS)


def prompt_with_manual(manual: str, prompt: str) -> str:
    return f"{manual}\n\n{prompt}" if manual else prompt


def mask_option(mask: Iterable[str], harness: str) -> str:
    agent = AGENTS.get(harness)
    if agent is None:
        raise ValueError(f"unknown harness {harness!r}; expected one of {', '.join(HARNESSES)}")
    return agent.tool_mask(sorted(mask))


@attrs.frozen
class StopSignal:
    """End the task now. `reason` says which rule fired; `forced` if the judge was not asked."""

    reason: str
    turn: int
    forced: bool
    action: str = "stop"

    def as_json(self) -> str:
        return json.dumps(attrs.asdict(self))


def guard_signal(decision: Decision) -> Nudge | StopSignal | None:
    if decision.action == "redirect":
        return Nudge(decision.text)
    if decision.action == "stop":
        return StopSignal(decision.reason, decision.turn, decision.forced)
    return None
