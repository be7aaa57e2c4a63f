"""The inform view: a small, deterministic text of the state, appended to the agent's prompt.

Lines come in priority order (anchor, recent modifications, observations newest first,
repeated commands) and are dropped from the end when the budget runs out, with a count of
what was left out. Equal states render equal text; the text never exceeds the budget.
"""

from __future__ import annotations

from collections import Counter

from .policy import Policy
from .state import State, current, first_invalidation, interventions
from .values import FileTarget, Observation


def _one_line(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _stale_reason(observation: Observation, state: State) -> str:
    modification = first_invalidation(observation, state)
    if modification is None:  # pragma: no cover - current() and first_invalidation agree
        return "stale"
    if modification.changes.unknown:
        return f"stale: unknown-scope change at step {modification.step}"
    if isinstance(observation.command.target, FileTarget):
        return f"stale: {observation.command.target.key} changed at step {modification.step}"
    return f"stale: tree changed at step {modification.step}"


def _modified_line(state: State, policy: Policy) -> str | None:
    latest: dict[str, int] = {}
    unknown_step: int | None = None
    for modification in state.modifications:
        for key in modification.changes.paths:
            if not policy.is_transient(key):
                latest[key] = modification.step
        if modification.changes.unknown:
            unknown_step = modification.step
    if not latest and unknown_step is None:
        return None
    newest = sorted(latest.items(), key=lambda item: (-item[1], item[0]))
    parts = [f"{key}@{step}" for key, step in newest[: policy.view_recent_modifications]]
    if len(newest) > policy.view_recent_modifications:
        parts.append(f"+{len(newest) - policy.view_recent_modifications} more")
    if unknown_step is not None:
        parts.append(f"unknown-scope change@{unknown_step}")
    return "modified: " + ", ".join(parts)


def _observation_lines(state: State, policy: Policy) -> list[str]:
    newest: dict[str, Observation] = {}
    for observation in state.observations:
        target = observation.command.target
        if isinstance(target, FileTarget) and policy.is_transient(target.key):
            continue
        newest[observation.command.normalized] = observation
    ordered = sorted(newest.values(), key=lambda o: -o.step)
    rendered = []
    for observation in ordered:
        status = "current" if current(observation, state) else _stale_reason(observation, state)
        rendered.append(f"  @{observation.step} {_one_line(observation.command.normalized)} [{status}]")
    return rendered


def _repeated_line(state: State) -> str | None:
    counts = Counter(record.command.normalized for record in state.history)
    last = {record.command.normalized: record.step for record in state.history}
    repeated = sorted(
        ((text, n) for text, n in counts.items() if n > 1), key=lambda item: (-item[1], -last[item[0]], item[0])
    )
    if not repeated:
        return None
    return "repeated: " + "; ".join(f"{_one_line(text, 60)} x{n}" for text, n in repeated)


def render(state: State, policy: Policy, task: str = "") -> str:
    """The view of `state`, at most `policy.view_budget` characters.

    post: len(__return__) <= policy.view_budget
    """
    header = f"[ledger] step {state.step}; interventions {interventions(state)}/{policy.intervention_cap}"
    if task:
        header += f"\ntask: {_one_line(task)}"
    body: list[str] = []
    modified = _modified_line(state, policy)
    if modified:
        body.append(modified)
    observations = _observation_lines(state, policy)
    if observations:
        body.append("observations (newest first):")
        body.extend(observations)
    repeated = _repeated_line(state)
    if repeated:
        body.append(repeated)
    return _fit(header, body, policy.view_budget)


def _fit(header: str, body: list[str], budget: int) -> str:
    text = header[:budget]
    for index, line in enumerate(body):
        candidate = text + "\n" + line
        remaining = len(body) - index - 1
        # Keep room for the omission marker unless this is the last line.
        marker = f"\n... {remaining} more lines" if remaining else ""
        if len(candidate) + len(marker) <= budget:
            text = candidate
            continue
        omitted = f"\n... {len(body) - index} more lines"
        return text + omitted if len(text) + len(omitted) <= budget else text
    return text
