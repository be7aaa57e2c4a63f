"""Tool pruning: which loaded tool schemas to leave out of a task (paper Sec. 3.2, App. F).

Theory of operation
-------------------
Per tool the state keeps `ever_called` and `streak`, the number of consecutive completed tasks
that left it uncalled. After each task: a tool the trajectory called gets ever_called = True
and streak = 0; every other tool's streak grows by one. A tool the agent called that was not
in the catalog joins it as called (the harness evidently offered it).

Before task i (1-based) the mask is fixed for the whole task:
  * re-audit task (i a multiple of R): nothing is masked and the judge is not called;
  * otherwise a tool is masked iff it is not core, was never called, and either its streak
    has reached `unused_streak` or the tool judge (asked about the other never-called,
    non-core tools) answered "drop" for it. A failed judge call (None) masks nothing more.

Invariants (proved in z3_theorems, tested in properties): a core tool is never masked; a
tool that was ever called is never masked again; re-audits mask nothing; a call resets the
streak.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import attrs

from .params import Params
from .trajectory import Step


@attrs.frozen
class ToolState:
    name: str
    ever_called: bool = False
    streak: int = 0


def is_reaudit(task: int, params: Params) -> bool:
    return task % params.reaudit_period == 0


def evidence_masked(tool: ToolState, core: frozenset[str], params: Params) -> bool:
    return tool.name not in core and not tool.ever_called and tool.streak >= params.unused_streak


def judge_candidates(tools: Iterable[ToolState], core: frozenset[str], task: int, params: Params) -> tuple[str, ...]:
    """The tools the judge is asked about before `task` (none on a re-audit)."""
    if is_reaudit(task, params):
        return ()
    return tuple(
        t.name for t in tools if t.name not in core and not t.ever_called and not evidence_masked(t, core, params)
    )


def mask(
    tools: Iterable[ToolState],
    core: frozenset[str],
    task: int,
    params: Params,
    judge_answer: Mapping[str, bool] | None = None,
) -> frozenset[str]:
    """Tools left out of `task`. `judge_answer` maps a candidate to load (True) / drop (False)."""
    tools = tuple(tools)
    if is_reaudit(task, params):
        return frozenset()
    masked = {t.name for t in tools if evidence_masked(t, core, params)}
    if judge_answer is not None:
        candidates = set(judge_candidates(tools, core, task, params))
        masked |= {name for name, load in judge_answer.items() if name in candidates and load is False}
    return frozenset(masked)


def update(tools: Iterable[ToolState], steps: tuple[Step, ...]) -> tuple[ToolState, ...]:
    called = {step.tool for step in steps}
    known = []
    for tool in tools:
        if tool.name in called:
            known.append(ToolState(tool.name, True, 0))
        else:
            known.append(ToolState(tool.name, tool.ever_called, tool.streak + 1))
    names = {t.name for t in known}
    known.extend(ToolState(name, True, 0) for name in sorted(called - names))
    return tuple(known)
