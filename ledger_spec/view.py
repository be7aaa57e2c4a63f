"""The inform view: a small, deterministic text of the state, appended to the agent's prompt.

Lines come in priority order (anchor, recent modifications, observations newest first,
repeated commands) and are dropped from the end when the budget runs out, with a count of
what was left out. Equal states render equal text; the text never exceeds the budget.
"""

from __future__ import annotations

from collections import Counter

from . import texts
from .policy import Policy
from .state import State, current, first_invalidation, interventions
from .values import FileTarget, Observation


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
    shown = policy.view_recent_modifications
    return texts.modified_line(newest[:shown], len(newest) - shown, unknown_step)


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
        if current(observation, state):
            status = texts.CURRENT
        else:
            status = texts.stale_reason(observation, first_invalidation(observation, state))
        rendered.append(texts.observation_line(texts.observation_line_prefix(observation), status))
    return rendered


def _repeated_line(state: State) -> str | None:
    counts = Counter(record.command.normalized for record in state.history)
    last = {record.command.normalized: record.step for record in state.history}
    repeated = sorted(
        ((text, n) for text, n in counts.items() if n > 1), key=lambda item: (-item[1], -last[item[0]], item[0])
    )
    if not repeated:
        return None
    return texts.REPEATED_PREFIX + texts.REPEATED_SEPARATOR.join(texts.repeated_part(text, n) for text, n in repeated)


def render(state: State, policy: Policy, task: str = "") -> str:
    """The view of `state`, at most `policy.view_budget` characters.

    post: len(__return__) <= policy.view_budget
    """
    header = texts.view_header(state.step, interventions(state), policy.intervention_cap, task)
    body: list[str] = []
    modified = _modified_line(state, policy)
    if modified:
        body.append(modified)
    observations = _observation_lines(state, policy)
    if observations:
        body.append(texts.OBSERVATIONS_HEADING)
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
        marker = texts.omission_marker(remaining) if remaining else ""
        if len(candidate) + len(marker) <= budget:
            text = candidate
            continue
        omitted = texts.omission_marker(len(body) - index)
        return text + omitted if len(text) + len(omitted) <= budget else text
    return text
