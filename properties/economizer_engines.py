"""One interface over the spec and the implementation, so every rule property runs on both."""

from __future__ import annotations

from typing import Any, Sequence

import attrs

from economizer.controller import Controller
from economizer.guard import Guard
from economizer_spec import guard as spec_guard
from economizer_spec import stream as spec_stream
from economizer_spec.guard import Decision, RedirectWriter, TraceJudge
from economizer_spec.params import Params
from economizer_spec.stream import Controllers, Plan, TaskRecord
from economizer_spec.trajectory import Step, Trajectory

from .economizer_differential import impl_view, spec_view

ENGINES = ("spec", "impl")

FIELDS = ("status", "confirmations", "contradictions", "exercised", "needed", "support", "confirmed_at", "retired_at", "retired_reason", "injected_tasks", "definition")


class Stream:
    """A repository's controller, spec or implementation, fed task by task."""

    def __init__(self, engine: str, params: Params, catalog: Sequence[str] = ("bash",), core: Sequence[str] = ("bash",)) -> None:
        self.engine = engine
        if engine == "spec":
            self.state = spec_stream.initial("owner/repo", catalog, core, params)
        else:
            self.controller = Controller("owner/repo", catalog, core, params)

    def feed(self, trajectory: Trajectory, controllers: Controllers) -> TaskRecord:
        if self.engine == "spec":
            self.state = spec_stream.feed(self.state, trajectory, controllers)
            return self.state.records[-1]
        return self.controller.feed(trajectory, controllers)

    def plan(self, controllers: Controllers) -> Plan:
        if self.engine == "spec":
            return spec_stream.plan(self.state, "", controllers)
        return self.controller.plan("", controllers)

    def skills(self) -> dict[str, dict[str, Any]]:
        view = spec_view(self.state) if self.engine == "spec" else impl_view(self.controller)
        return {name: dict(zip(FIELDS, values)) for name, values in view["skills"].items()}

    def tools(self) -> dict[str, tuple[bool, int]]:
        view = spec_view(self.state) if self.engine == "spec" else impl_view(self.controller)
        return {name: tuple(v) for name, v in view["tools"].items()}

    def budget(self) -> int | None:
        if self.engine == "spec":
            return spec_guard.budget(self.state.passed_turns, self.state.params)
        return self.controller.budget()

    def rejections(self) -> list[Any]:
        return list(self.state.rejections) if self.engine == "spec" else list(self.controller.rejections)


def guard_decisions(
    engine: str, steps: Sequence[Step], budget: int | None, params: Params, judge: TraceJudge, writer: RedirectWriter
) -> list[Decision]:
    """Every decision the guard makes over a trajectory, up to and including a stop."""
    decisions: list[Decision] = []
    if engine == "spec":
        state = spec_guard.initial_guard(params)
        for t in range(1, len(steps) + 1):
            state, decision = spec_guard.guard_step(state, steps[:t], budget, params, judge, writer)
            decisions.append(decision)
            if decision.action == "stop":
                break
        return decisions
    guard = Guard(params, budget, judge, writer)
    for step in steps:
        decision = guard.observe(step)
        decisions.append(decision)
        if decision.action == "stop":
            break
    return decisions


def strip(decision: Decision) -> Decision:
    return attrs.evolve(decision, text="")
