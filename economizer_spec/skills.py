"""Micro-skills: one-line operational facts, proposed from digests, verified by detectors.

Theory of operation (the paper's Table 5 and Appendix F)
---------------------------------------------------------
A skill is *candidate*, *confirmed* or *retired*. After each task i every skill that is not
retired looks at the trajectory:

  exercised     its scope detector matches (the situation it addresses arose);
  contradicted  exercised, and its contradict detector matches. Checked FIRST: a task that
                contradicts is never also a confirmation;
  confirmed     exercised, not contradicted, and its confirm detector matches. (An exercised
                task matching neither is neutral: it counts as exercised only.)
  needed        exercised, and its need detector matches; a skill with no need detector
                counts every exercised task as needed.

                 confirmations >= c                support < 0, or high-stakes
   candidate  --------------------->  confirmed  --------------------------------> retired
                                                  and contradicted on this task      (forever)

  support_i = sum over confirming tasks j of decay^(i - j)  -  lambda * contradictions

Support is checked only for a skill that was already confirmed *before* the task, so a
candidate with negative support stays a candidate (it is never injected); if it is later
confirmed, it retires after the next task unless its support has recovered to >= 0.
Retirement is permanent: a retired skill gathers no evidence, is never injected, and a
proposal re-using its id is rejected.

Injection (decided before task i from S_{i-1} only): a skill is injected iff it is confirmed,
it has been exercised, and needed/exercised >= need_gate. The manual lists injected skills by
need rate, then support, then id, as many as fit in the budget.

Proposals arrive after tasks 4, 9, 14, ... (`proposer_due`). At most `max_proposals` are
considered per call, in order. A new id is admitted as a candidate only if at least
`min_citations` of its cited tasks are in the window AND its confirm detector matches them
(checked here, not trusted); its detectors are then run retroactively over the window, so it
enters with that evidence and is confirmed at once if it already has c confirmations. An
existing id is a *revision*: accepted only if nothing but the contradict detector changed; it
keeps its history. Every rejection carries a reason.
"""

from __future__ import annotations

import enum
import re
from fractions import Fraction
from typing import Iterable

import attrs

from .detectors import Detector, admission_error, matches
from .params import Params
from .trajectory import Step

SKILL_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_INJECTION = 200
"""Characters of one manual line; the paper asks for one declarative sentence."""


class Status(enum.StrEnum):
    """Where a skill is in its life; each value is its member's name in lower case."""

    CANDIDATE = enum.auto()
    CONFIRMED = enum.auto()
    RETIRED = enum.auto()


@attrs.frozen
class SkillDefinition:
    """What a proposer emits (the paper's G.1 schema)."""

    id: str
    claim: str
    injection: str
    scope: Detector
    confirm: Detector
    contradict: Detector | None = None
    need: Detector | None = None
    high_stakes: bool = False
    citations: tuple[str, ...] = attrs.field(default=(), converter=tuple)


@attrs.frozen
class Evidence:
    """What one task said about one skill."""

    task: int
    exercised: bool
    confirmed: bool
    contradicted: bool
    needed: bool


@attrs.frozen
class SkillState:
    definition: SkillDefinition
    status: Status
    evidence: tuple[Evidence, ...]
    proposed_at: int
    verified_citations: tuple[str, ...] = ()
    confirmed_at: int | None = None
    retired_at: int | None = None
    retired_reason: str = ""
    injected_tasks: tuple[int, ...] = ()

    @property
    def id(self) -> str:
        return self.definition.id


@attrs.frozen
class Rejection:
    task: int
    skill_id: str
    reason: str


# --- evidence -------------------------------------------------------------------------------


def evaluate(definition: SkillDefinition, task: int, steps: tuple[Step, ...]) -> Evidence:
    exercised = matches(definition.scope, steps)
    contradicted = exercised and definition.contradict is not None and matches(definition.contradict, steps)
    confirmed = exercised and not contradicted and matches(definition.confirm, steps)
    needed = exercised and (definition.need is None or matches(definition.need, steps))
    return Evidence(task, exercised, confirmed, contradicted, needed)


def confirmations(state: SkillState) -> int:
    return sum(1 for e in state.evidence if e.confirmed)


def contradictions(state: SkillState) -> int:
    return sum(1 for e in state.evidence if e.contradicted)


def support(state: SkillState, now: int, params: Params) -> Fraction:
    """Decayed confirmations minus lambda times contradictions, as of task `now`."""
    decayed = sum((params.decay ** (now - e.task) for e in state.evidence if e.confirmed), Fraction(0))
    return decayed - params.contradiction_weight * contradictions(state)


def need_rate(state: SkillState) -> Fraction | None:
    exercised = sum(1 for e in state.evidence if e.exercised)
    if exercised == 0:
        return None
    return Fraction(sum(1 for e in state.evidence if e.needed), exercised)


def injected(state: SkillState, params: Params) -> bool:
    rate = need_rate(state)
    return state.status is Status.CONFIRMED and rate is not None and rate >= params.need_gate


# --- the lifecycle ----------------------------------------------------------------------------


def observe(state: SkillState, task: int, steps: tuple[Step, ...], params: Params) -> SkillState:
    """The skill after task `task` with trajectory `steps`."""
    if state.status is Status.RETIRED:
        return state
    evidence = evaluate(state.definition, task, steps)
    after = attrs.evolve(state, evidence=state.evidence + (evidence,))
    if state.status is Status.CONFIRMED:
        if state.definition.high_stakes and evidence.contradicted:
            return attrs.evolve(after, status=Status.RETIRED, retired_at=task, retired_reason="high-stakes skill contradicted")
        if support(after, task, params) < 0:
            return attrs.evolve(after, status=Status.RETIRED, retired_at=task, retired_reason="support below 0")
        return after
    if confirmations(after) >= params.confirmations:
        return attrs.evolve(after, status=Status.CONFIRMED, confirmed_at=task)
    return after


def proposer_due(task: int, params: Params) -> bool:
    """Whether the proposer is called after (1-based) task `task`: 4, 9, 14, ..."""
    return task >= params.proposer_first and (task - params.proposer_first) % params.proposer_period == 0


def definition_error(definition: object) -> str | None:
    if not isinstance(definition, SkillDefinition):
        return f"not a skill definition: {definition!r}"
    if not isinstance(definition.id, str) or not SKILL_ID.match(definition.id):
        return f"skill id {definition.id!r} is not a kebab-case slug"
    if not isinstance(definition.injection, str) or not definition.injection.strip():
        return "empty injection"
    if not definition.injection.isprintable() or len(definition.injection) > MAX_INJECTION:
        # isprintable rules out every line break Python knows (\n, \r, \x1e, \u2028, ...),
        # so one skill is always exactly one manual line.
        return f"injection must be one printable line of at most {MAX_INJECTION} characters"
    for role in ("scope", "confirm", "contradict", "need"):
        detector = getattr(definition, role)
        if detector is None and role in ("contradict", "need"):
            continue
        error = admission_error(detector)
        if error:
            return f"{role} detector rejected: {error}"
    return None


WindowTask = tuple[int, str, tuple[Step, ...]]
"""(stream index, task id, steps) of one task in the proposer's window."""


def proposal_name(definition: object) -> str:
    """The id a proposal is known by in its rejection ('?' when it has no string id)."""
    name = getattr(definition, "id", "?")
    return name if isinstance(name, str) else "?"


def screening_error(position: int, definition: object, seen: set[str], params: Params) -> str | None:
    """Why the proposal at `position` of one call is rejected before any skill is looked up:
    past the per-call limit, malformed, or an id already `seen` in the call (None: it is not).

    The incremental controller screens with this same function: these rules keep no state
    worth optimizing, so the spec's wording and order are used, not copied."""
    if position >= params.max_proposals:
        return f"over the limit of {params.max_proposals} proposals per call"
    error = definition_error(definition)
    if error:
        return error
    if proposal_name(definition) in seen:
        return "proposed twice in one call"
    return None


def admit(
    skills: tuple[SkillState, ...],
    proposals: Iterable[SkillDefinition],
    window: tuple[WindowTask, ...],
    task: int,
    params: Params,
) -> tuple[tuple[SkillState, ...], tuple[Rejection, ...]]:
    """Apply one proposer answer after task `task`; returns the skills and the rejections."""
    by_id = {state.id: state for state in skills}
    order = [state.id for state in skills]
    rejections: list[Rejection] = []
    seen: set[str] = set()
    for position, definition in enumerate(proposals):
        name = proposal_name(definition)
        error = screening_error(position, definition, seen, params)
        if error:
            rejections.append(Rejection(task, name, error))
            continue
        seen.add(name)
        existing = by_id.get(name)
        if existing is not None:
            if existing.status is Status.RETIRED:
                rejections.append(Rejection(task, name, "retired skills are permanent"))
                continue
            old = attrs.evolve(existing.definition, contradict=None, citations=())
            new = attrs.evolve(definition, contradict=None, citations=())
            if old != new:
                rejections.append(Rejection(task, name, "a revision may change only the contradict detector"))
                continue
            by_id[name] = attrs.evolve(existing, definition=attrs.evolve(existing.definition, contradict=definition.contradict))
            continue
        window_ids = {task_id: steps for _, task_id, steps in window}
        verified = tuple(dict.fromkeys(c for c in definition.citations if c in window_ids and matches(definition.confirm, window_ids[c])))
        if len(verified) < params.min_citations:
            rejections.append(
                Rejection(task, name, f"{len(verified)} verified citations, {params.min_citations} required")
            )
            continue
        evidence = tuple(evaluate(definition, index, steps) for index, _, steps in window)
        state = SkillState(definition, Status.CANDIDATE, evidence, proposed_at=task, verified_citations=verified)
        if confirmations(state) >= params.confirmations:
            state = attrs.evolve(state, status=Status.CONFIRMED, confirmed_at=task)
        by_id[name] = state
        order.append(name)
    return tuple(by_id[name] for name in order), tuple(rejections)


# --- the manual -------------------------------------------------------------------------------


def manual_order(skills: Iterable[SkillState], now: int, params: Params) -> list[SkillState]:
    chosen = [state for state in skills if injected(state, params)]
    return sorted(chosen, key=lambda s: (-(need_rate(s) or 0), -support(s, now, params), s.id))


def render_manual(repository: str, skills: Iterable[SkillState], now: int, params: Params, budget: int | None = None) -> tuple[str, tuple[str, ...]]:
    """The manual placed ahead of the task prompt, and the ids it holds, within `budget` chars.

    Skills that do not fit are left out whole (a cut sentence could state a wrong fact); a
    later, shorter skill may still fit. No injected skill, or none that fits: empty manual.
    """
    limit = params.manual_budget if budget is None else budget
    header = f"# repository manual ({repository}), learned from prior tasks in this repository"
    lines: list[str] = []
    ids: list[str] = []
    length = len(header)
    for state in manual_order(skills, now, params):
        line = f"- {state.definition.injection}"
        if length + 1 + len(line) <= limit:
            lines.append(line)
            ids.append(state.id)
            length += 1 + len(line)
    if not lines:
        return "", ()
    return "\n".join([header, *lines]), tuple(ids)
