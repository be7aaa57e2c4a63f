"""The controller, incremental: the state update F of `economizer_spec.stream`, kept as
running aggregates instead of logs, with bounded detector execution and JSON persistence.

Differences from the spec, all internal:
* a skill keeps counts and one running decayed sum (`decayed` as of task `decayed_at`,
  multiplied by decay^gap on the next confirmation) instead of its evidence log; support is
  an exact Fraction either way, so both reach the same retirement decisions;
* passed turn counts are kept sorted (insertion by bisection) for the percentile;
* the guard counts incrementally (economizer.guard);
* detectors run in a `BoundedMatcher` when one is given. A detector that times out rejects
  a proposal at admission, or retires a live skill ("detector timed out"): a skill whose
  test cannot be run in bounded time cannot be trusted. The spec has no clock, so this path
  is the one place the two may differ, and the differential test never generates it.
"""

from __future__ import annotations

import bisect
import collections
import math
from fractions import Fraction
from typing import Any, Mapping, Sequence

import attrs

from economizer_spec import skills as spec_skills
from economizer_spec.conformal import conformal_rank
from economizer_spec.cost import ControllerCall
from economizer_spec.detectors import Detector, matches
from economizer_spec.params import Params
from economizer_spec.skills import Rejection, SkillDefinition, Status
from economizer_spec.stream import Controllers, Digest, Plan, TaskRecord, make_digest
from economizer_spec.trajectory import Step, Trajectory

from .bounded import BoundedMatcher, TimedOut
from .guard import Guard


@attrs.define
class LiveSkill:
    definition: SkillDefinition
    status: Status = Status.CANDIDATE
    confirmations: int = 0
    contradictions: int = 0
    exercised: int = 0
    needed: int = 0
    decayed: Fraction = Fraction(0)
    decayed_at: int = 0
    proposed_at: int = 0
    verified_citations: tuple[str, ...] = ()
    confirmed_at: int | None = None
    retired_at: int | None = None
    retired_reason: str = ""
    injected_tasks: list[int] = attrs.field(factory=list)

    def support(self, now: int, params: Params) -> Fraction:
        return self.decayed * params.decay ** (now - self.decayed_at) - params.contradiction_weight * self.contradictions

    def need_rate(self) -> Fraction | None:
        return Fraction(self.needed, self.exercised) if self.exercised else None

    def injectable(self, params: Params) -> bool:
        rate = self.need_rate()
        return self.status is Status.CONFIRMED and rate is not None and rate >= params.need_gate

    def add(self, task: int, exercised: bool, confirmed: bool, contradicted: bool, needed: bool, params: Params) -> None:
        self.exercised += exercised
        self.needed += needed
        self.contradictions += contradicted
        if confirmed:
            self.confirmations += 1
            self.decayed = self.decayed * params.decay ** (task - self.decayed_at) + 1
            self.decayed_at = task


class DetectorTimeout(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Controller:
    """One repository's controller. `plan()` before a task, `feed()` after it."""

    def __init__(
        self,
        repository: str,
        catalog: Sequence[str] = ("bash",),
        core: Sequence[str] = ("bash",),
        params: Params = Params(),
        matcher: BoundedMatcher | None = None,
    ) -> None:
        self.repository = repository
        self.params = params
        self.matcher = matcher
        self.core = frozenset(core)
        self.tools: dict[str, list] = {name: [False, 0] for name in dict.fromkeys([*catalog, *core])}
        self.index = 0
        self.skills: dict[str, LiveSkill] = {}
        self.sorted_passed: list[int] = []
        self.window: collections.deque[tuple[int, Trajectory]] = collections.deque(maxlen=params.proposer_window)
        self.digests: collections.deque[Digest] = collections.deque(maxlen=params.proposer_window)
        self.rejections: list[Rejection] = []
        self.records: list[TaskRecord] = []

    # --- detectors ----------------------------------------------------------------------

    def _evaluate(self, detectors: Sequence[Detector | None], steps: tuple[Step, ...]) -> list[bool]:
        real = [d for d in detectors if d is not None]
        if self.matcher is None:
            outcomes: list[bool | TimedOut] = [matches(d, steps) for d in real]
        else:
            outcomes = self.matcher.evaluate(real, steps)
        for outcome in outcomes:
            if isinstance(outcome, TimedOut):
                raise DetectorTimeout(outcome.reason)
        answers = iter(outcomes)
        return [bool(next(answers)) if d is not None else False for d in detectors]

    def _evidence(self, definition: SkillDefinition, steps: tuple[Step, ...]) -> tuple[bool, bool, bool, bool]:
        scope, confirm, contradict, need = self._evaluate(
            [definition.scope, definition.confirm, definition.contradict, definition.need], steps
        )
        exercised = scope
        contradicted = exercised and definition.contradict is not None and contradict
        confirmed = exercised and not contradicted and confirm
        needed = exercised and (definition.need is None or need)
        return exercised, confirmed, contradicted, needed

    # --- the plan -------------------------------------------------------------------------

    def budget(self) -> int | None:
        """B (kappa rule) or the conformal stop point T, from the sorted passed counts."""
        p = self.params
        n = len(self.sorted_passed)
        if p.guard_rule == "conformal":
            k = conformal_rank(n, p.alpha)
            return None if k is None else self.sorted_passed[k - 1] + 1
        if n < p.min_passed_for_budget:
            return None
        rank = max(1, math.ceil(Fraction(p.budget_percentile, 100) * n))
        return math.ceil(self.sorted_passed[rank - 1] * (1 + p.beta))

    def manual(self, budget: int | None = None) -> tuple[str, tuple[str, ...]]:
        p = self.params
        limit = p.manual_budget if budget is None else budget
        live = [s for s in self.skills.values() if s.injectable(p)]
        live.sort(key=lambda s: (-(s.need_rate() or 0), -s.support(self.index, p), s.definition.id))
        header = f"# repository manual ({self.repository}), learned from prior tasks in this repository"
        lines, ids, length = [], [], len(header)
        for skill in live:
            line = f"- {skill.definition.injection}"
            if length + 1 + len(line) <= limit:
                lines.append(line)
                ids.append(skill.definition.id)
                length += 1 + len(line)
        return ("\n".join([header, *lines]), tuple(ids)) if lines else ("", ())

    def _reaudit(self, task: int) -> bool:
        return task % self.params.reaudit_period == 0

    def _never_called_unprotected(self) -> list[str]:
        return [name for name, (called, _) in self.tools.items() if name not in self.core and not called]

    def judge_candidates(self) -> tuple[str, ...]:
        task = self.index + 1
        if self._reaudit(task):
            return ()
        return tuple(n for n in self._never_called_unprotected() if self.tools[n][1] < self.params.unused_streak)

    def plan(self, task_text: str, controllers: Controllers) -> Plan:
        task = self.index + 1
        manual, injected = self.manual()
        calls: list[ControllerCall] = []
        if self._reaudit(task):
            return Plan(task, manual, injected, frozenset(), ())
        masked = {n for n in self._never_called_unprotected() if self.tools[n][1] >= self.params.unused_streak}
        candidates = self.judge_candidates()
        if controllers.tool_judge is not None and candidates:
            reply = controllers.tool_judge(task_text, candidates)
            calls.append(ControllerCall("tool_judge", reply.usage))
            if reply.answer is not None:
                masked |= {name for name in candidates if reply.answer.get(name) is False}
        return Plan(task, manual, injected, frozenset(masked), tuple(calls))

    # --- the update -------------------------------------------------------------------------

    def _observe(self, skill: LiveSkill, task: int, steps: tuple[Step, ...]) -> None:
        if skill.status is Status.RETIRED:
            return
        try:
            exercised, confirmed, contradicted, needed = self._evidence(skill.definition, steps)
        except DetectorTimeout as timeout:
            skill.status, skill.retired_at, skill.retired_reason = Status.RETIRED, task, timeout.reason
            return
        was_confirmed = skill.status is Status.CONFIRMED
        skill.add(task, exercised, confirmed, contradicted, needed, self.params)
        if was_confirmed:
            if skill.definition.high_stakes and contradicted:
                skill.status, skill.retired_at, skill.retired_reason = Status.RETIRED, task, "high-stakes skill contradicted"
            elif skill.support(task, self.params) < 0:
                skill.status, skill.retired_at, skill.retired_reason = Status.RETIRED, task, "support below 0"
        elif skill.confirmations >= self.params.confirmations:
            skill.status, skill.confirmed_at = Status.CONFIRMED, task

    def _admit(self, proposals: Sequence[SkillDefinition], task: int) -> list[Rejection]:
        # The incremental twin of `economizer_spec.skills.admit`, kept apart on purpose: the
        # spec recomputes evidence over its logs, this keeps running aggregates and bounds
        # detector time; the differential holds the two together. The screening rules keep
        # no state, so both call the spec's `screening_error`.
        p = self.params
        rejected: list[Rejection] = []
        seen: set[str] = set()
        for position, definition in enumerate(proposals):
            name = spec_skills.proposal_name(definition)
            error = spec_skills.screening_error(position, definition, seen, p)
            if error:
                rejected.append(Rejection(task, name, error))
                continue
            seen.add(name)
            existing = self.skills.get(name)
            if existing is not None:
                if existing.status is Status.RETIRED:
                    rejected.append(Rejection(task, name, "retired skills are permanent"))
                elif attrs.evolve(existing.definition, contradict=None, citations=()) != attrs.evolve(
                    definition, contradict=None, citations=()
                ):
                    rejected.append(Rejection(task, name, "a revision may change only the contradict detector"))
                else:
                    existing.definition = attrs.evolve(existing.definition, contradict=definition.contradict)
                continue
            try:
                by_id = {t.task_id: t.steps for _, t in self.window}
                verified = tuple(
                    c for c in dict.fromkeys(definition.citations) if c in by_id and self._evaluate([definition.confirm], by_id[c])[0]
                )
                if len(verified) < p.min_citations:
                    rejected.append(Rejection(task, name, f"{len(verified)} verified citations, {p.min_citations} required"))
                    continue
                skill = LiveSkill(definition, proposed_at=task, verified_citations=verified)
                for index, trajectory in self.window:
                    skill.add(index, *self._evidence(definition, trajectory.steps), self.params)
            except DetectorTimeout as timeout:
                rejected.append(Rejection(task, name, timeout.reason))
                continue
            if skill.confirmations >= p.confirmations:
                skill.status, skill.confirmed_at = Status.CONFIRMED, task
            self.skills[name] = skill
        return rejected

    def feed(self, trajectory: Trajectory, controllers: Controllers, task_text: str = "") -> TaskRecord:
        planned = self.plan(task_text, controllers)
        task = planned.task
        budget = self.budget()
        guard = Guard(self.params, budget, controllers.trace_judge, controllers.redirect_writer)
        decisions = []
        for step in trajectory.steps:
            decision = guard.observe(step)
            if decision.action != "continue":
                decisions.append(decision)
            if decision.action == "stop":
                break
        for skill in self.skills.values():
            self._observe(skill, task, trajectory.steps)
            if skill.definition.id in planned.injected:
                skill.injected_tasks.append(task)
        called = {step.tool for step in trajectory.steps}
        for name, entry in self.tools.items():
            entry[:] = [True, 0] if name in called else [entry[0], entry[1] + 1]
        for name in sorted(called - self.tools.keys()):
            self.tools[name] = [True, 0]
        if trajectory.passed:
            bisect.insort(self.sorted_passed, trajectory.turns)
        self.window.append((task, trajectory))
        self.digests.append(make_digest(task, trajectory))
        calls = list(planned.calls) + guard.calls
        rejections: list[Rejection] = []
        if spec_skills.proposer_due(task, self.params):
            digests = tuple(self.digests)
            answer = controllers.proposer(self.repository, tuple(self.skills), digests)
            calls.append(ControllerCall("proposer", answer.usage))
            rejections = self._admit(answer.skills, task)
        self.index = task
        record = TaskRecord(
            task, trajectory.task_id, trajectory.passed, trajectory.turns, planned.manual, planned.injected,
            planned.mask, budget, tuple(decisions), tuple(calls), tuple(rejections),
        )
        self.rejections.extend(rejections)
        self.records.append(record)
        return record

    def passed_turns_sorted(self) -> list[int]:
        return list(self.sorted_passed)

    def skill_summary(self) -> dict[str, Any]:
        return {
            name: {
                "status": s.status.value,
                "confirmations": s.confirmations,
                "contradictions": s.contradictions,
                "exercised": s.exercised,
                "needed": s.needed,
                "support": s.support(self.index, self.params),
                "proposed_at": s.proposed_at,
                "confirmed_at": s.confirmed_at,
                "retired_at": s.retired_at,
                "retired_reason": s.retired_reason,
                "citations": s.verified_citations,
                "injected_tasks": tuple(s.injected_tasks),
            }
            for name, s in self.skills.items()
        }


# --- persistence ------------------------------------------------------------------------------

STATE_VERSION = 1


def to_json(controller: Controller) -> dict[str, Any]:
    from .codec import definition_to_json, params_to_json

    return {
        "version": STATE_VERSION,
        "repository": controller.repository,
        "params": params_to_json(controller.params),
        "core": sorted(controller.core),
        "tools": {name: list(entry) for name, entry in controller.tools.items()},
        "index": controller.index,
        "skills": [
            {
                "definition": definition_to_json(s.definition),
                "status": s.status.value,
                "counts": [s.confirmations, s.contradictions, s.exercised, s.needed],
                "decayed": str(s.decayed),
                "decayed_at": s.decayed_at,
                "proposed_at": s.proposed_at,
                "verified_citations": list(s.verified_citations),
                "confirmed_at": s.confirmed_at,
                "retired_at": s.retired_at,
                "retired_reason": s.retired_reason,
                "injected_tasks": list(s.injected_tasks),
            }
            for s in controller.skills.values()
        ],
        "passed": list(controller.sorted_passed),
        "window": [
            [index, t.task_id, t.passed, [[s.command, s.output, s.returncode, s.tool] for s in t.steps]]
            for index, t in controller.window
        ],
        "rejections": [[r.task, r.skill_id, r.reason] for r in controller.rejections],
    }


def from_json(data: Mapping[str, Any], matcher: BoundedMatcher | None = None) -> Controller:
    from .codec import BadInput, definition_from_json, params_from_json

    if data.get("version") != STATE_VERSION:
        raise BadInput(f"state version {data.get('version')!r} is not {STATE_VERSION}")
    controller = Controller(data["repository"], (), data["core"], params_from_json(data["params"]), matcher)
    controller.tools = {name: list(entry) for name, entry in data["tools"].items()}
    controller.index = data["index"]
    for item in data["skills"]:
        definition = definition_from_json(item["definition"], strict=False)
        confirmations, contradictions, exercised, needed = item["counts"]
        controller.skills[definition.id] = LiveSkill(
            definition, Status(item["status"]), confirmations, contradictions, exercised, needed,
            Fraction(item["decayed"]), item["decayed_at"], item["proposed_at"], tuple(item["verified_citations"]),
            item["confirmed_at"], item["retired_at"], item["retired_reason"], list(item["injected_tasks"]),
        )
    controller.sorted_passed = list(data["passed"])
    for index, task_id, passed, steps in data["window"]:
        trajectory = Trajectory(task_id, tuple(Step(c, o, r, t) for c, o, r, t in steps), passed)
        controller.window.append((index, trajectory))
        controller.digests.append(make_digest(index, trajectory))
    controller.rejections = [Rejection(task, skill_id, reason) for task, skill_id, reason in data["rejections"]]
    return controller
