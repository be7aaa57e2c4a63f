"""Spec versus implementation on the same stream: the same records, skills, tools and budget.

`compare(stream, params, controllers)` feeds both and returns the first difference as a
readable string (None if they agree at every task). The implementation is also persisted
and reloaded from JSON between tasks when `reload=True`, so the comparison covers the
SQLite round trip's codec too.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from economizer.controller import Controller, from_json, to_json
from economizer_spec import skills as spec_skills
from economizer_spec import stream as spec_stream
from economizer_spec.params import Params
from economizer_spec.stream import Controllers
from economizer_spec.trajectory import Trajectory

CATALOG = ("bash", "read", "edit", "web_search", "notebook", "todo")
CORE = ("bash", "read", "edit")


def spec_view(state: spec_stream.State) -> dict[str, Any]:
    return {
        "skills": {
            s.id: (
                s.status.value,
                spec_skills.confirmations(s),
                spec_skills.contradictions(s),
                sum(e.exercised for e in s.evidence),
                sum(e.needed for e in s.evidence),
                spec_skills.support(s, state.index, state.params),
                s.confirmed_at,
                s.retired_at,
                s.retired_reason,
                tuple(s.injected_tasks),
                s.definition,
            )
            for s in state.skills
        },
        "tools": {t.name: (t.ever_called, t.streak) for t in state.tools},
        "passed": sorted(state.passed_turns),
    }


def impl_view(controller: Controller) -> dict[str, Any]:
    return {
        "skills": {
            name: (
                s.status.value,
                s.confirmations,
                s.contradictions,
                s.exercised,
                s.needed,
                s.support(controller.index, controller.params),
                s.confirmed_at,
                s.retired_at,
                s.retired_reason,
                tuple(s.injected_tasks),
                s.definition,
            )
            for name, s in controller.skills.items()
        },
        "tools": {name: tuple(entry) for name, entry in controller.tools.items()},
        "passed": controller.passed_turns_sorted(),
    }


def compare(stream: Sequence[Trajectory], params: Params, controllers: Controllers, reload: bool = False) -> str | None:
    spec = spec_stream.initial("owner/repo", CATALOG, CORE, params)
    impl = Controller("owner/repo", CATALOG, CORE, params)
    for trajectory in stream:
        spec = spec_stream.feed(spec, trajectory, controllers)
        record = impl.feed(trajectory, controllers)
        if reload:
            impl = from_json(json.loads(json.dumps(to_json(impl))))
        if spec.records[-1] != record:
            return f"task {spec.index}: records differ\n spec {spec.records[-1]}\n impl {record}"
        a, b = spec_view(spec), impl_view(impl)
        if a != b:
            keys = [k for k in a if a[k] != b[k]]
            return f"task {spec.index}: {keys} differ\n spec {[a[k] for k in keys]}\n impl {[b[k] for k in keys]}"
        if spec_stream.plan(spec, "", controllers) != impl.plan("", controllers):
            return f"plans for task {spec.index + 1} differ"
    return None
