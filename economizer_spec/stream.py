"""The task stream: S_i = F(S_{i-1}, task_i, trajectory_i, y_i), and what F decides.

Theory of operation
-------------------
One state per repository. For task i (1-based) F does, in order:

  plan    from S_{i-1} alone: the manual (injected skills within the budget) and the tool
          mask (with the tool judge's answer, if a judge is configured and it is not a
          re-audit). Nothing about task i's trajectory is known yet.
  guard   replay the guard over trajectory_i, each decision seeing only the prefix, with the
          budget B from the passed turn counts of tasks 1..i-1.
  learn   every live skill observes trajectory_i; tools update their streaks; if y_i, its
          turn count joins the passed turns; the task joins the proposer's window.
  propose if the proposer is due after task i, it reads the digests of the window (tasks
          i-7..i) and its answer is admitted (skills.admit).
  record  a TaskRecord with the plan, the guard's interventions and every controller call
          the task triggered (tool judge, trace judge, redirect writer, proposer), so their
          cost is charged to task i.

Because F reads only S_{i-1} and task i, no decision for task i depends on a later task, and
the guard never sees past its prefix. Model calls enter as pure functions (`Controllers`);
the no-model defaults live in the implementation package.
"""

from __future__ import annotations

import re
from typing import Callable, Mapping, Sequence

import attrs

from . import guard as guard_rules
from . import skills as skill_rules
from . import tools as tool_rules
from .cost import NO_USAGE, ControllerCall, Usage
from .params import Params
from .skills import Rejection, SkillDefinition, SkillState
from .tools import ToolState
from .trajectory import Step, Trajectory, edited_files, is_test_run, step_signature, BUILTINS

# --- digests (what the proposer sees: no solution text, no outputs beyond error lines) -------

_TEMPLATE_WORDS = 6


def command_template(command: str) -> str:
    """A command's first line, lower-cased, whitespace collapsed, a leading `cd X &&` removed,
    first 6 words kept (the paper's action key, App. B)."""
    line = command.split("\n", 1)[0].strip().lower()
    line = re.sub(r"^cd\s+\S+\s*&&\s*", "", line)
    return " ".join(line.split()[:_TEMPLATE_WORDS])


@attrs.frozen
class Digest:
    index: int
    task_id: str
    passed: bool
    turns: int
    edited_files: tuple[str, ...]
    templates: tuple[str, ...]
    """Distinct command templates, in first-use order."""
    test_invocations: tuple[tuple[str, bool], ...]
    """(template, exit status zero) of each test command, in order."""
    error_signatures: tuple[str, ...]
    flags: tuple[tuple[str, bool], ...]
    """The built-in predicates, by name."""


def make_digest(index: int, trajectory: Trajectory) -> Digest:
    steps = trajectory.steps
    edited = tuple(dict.fromkeys(name.rsplit("/", 1)[-1] for step in steps for name in edited_files(step.command)))
    templates = tuple(dict.fromkeys(command_template(step.command) for step in steps))
    tests = tuple((command_template(step.command), step.returncode == 0) for step in steps if is_test_run(step))
    signatures = tuple(dict.fromkeys(s for s in (step_signature(step) for step in steps) if s))
    flags = tuple((name, predicate(steps)) for name, predicate in sorted(BUILTINS.items()))
    return Digest(index, trajectory.task_id, trajectory.passed, trajectory.turns, edited, templates, tests, signatures, flags)


# --- model calls ---------------------------------------------------------------------------------


@attrs.frozen
class ProposerAnswer:
    skills: tuple[SkillDefinition, ...] = attrs.field(default=(), converter=tuple)
    usage: Usage = NO_USAGE


@attrs.frozen
class ToolJudgeAnswer:
    """load/drop per candidate tool, or `answer=None` if the call failed."""

    answer: Mapping[str, bool] | None
    usage: Usage = NO_USAGE


Proposer = Callable[[str, tuple[str, ...], tuple[Digest, ...]], ProposerAnswer]
"""(repository, existing skill ids, window digests) -> answer."""
ToolJudge = Callable[[str, tuple[str, ...]], ToolJudgeAnswer]
"""(task text, candidate tool names) -> answer."""


@attrs.frozen
class Controllers:
    proposer: Proposer
    trace_judge: guard_rules.TraceJudge
    redirect_writer: guard_rules.RedirectWriter
    tool_judge: ToolJudge | None = None
    """None: no judge is configured, so nothing is masked without unused-history evidence."""


# --- state ----------------------------------------------------------------------------------------


@attrs.frozen
class TaskRecord:
    index: int
    task_id: str
    passed: bool
    turns: int
    manual: str
    injected: tuple[str, ...]
    mask: frozenset[str]
    budget: int | None
    decisions: tuple[guard_rules.Decision, ...]
    """The guard's non-continue decisions (redirects and the stop)."""
    calls: tuple[ControllerCall, ...]
    rejections: tuple[Rejection, ...] = ()


@attrs.frozen
class State:
    repository: str
    params: Params
    core_tools: frozenset[str]
    tools: tuple[ToolState, ...]
    index: int = 0
    skills: tuple[SkillState, ...] = ()
    passed_turns: tuple[int, ...] = ()
    window: tuple[tuple[int, Trajectory], ...] = ()
    records: tuple[TaskRecord, ...] = ()
    rejections: tuple[Rejection, ...] = ()


def initial(repository: str, catalog: Sequence[str], core: Sequence[str], params: Params = Params()) -> State:
    names = tuple(dict.fromkeys([*catalog, *core]))
    return State(repository, params, frozenset(core), tuple(ToolState(name) for name in names))


@attrs.frozen
class Plan:
    task: int
    manual: str
    injected: tuple[str, ...]
    mask: frozenset[str]
    calls: tuple[ControllerCall, ...]


def plan(state: State, task_text: str, controllers: Controllers) -> Plan:
    """What task `state.index + 1` gets, from the state before it (fixed for the whole task)."""
    task = state.index + 1
    manual, injected = skill_rules.render_manual(state.repository, state.skills, state.index, state.params)
    calls: list[ControllerCall] = []
    answer = None
    candidates = tool_rules.judge_candidates(state.tools, state.core_tools, task, state.params)
    if controllers.tool_judge is not None and candidates:
        reply = controllers.tool_judge(task_text, candidates)
        calls.append(ControllerCall("tool_judge", reply.usage))
        answer = reply.answer
    mask = tool_rules.mask(state.tools, state.core_tools, task, state.params, answer)
    return Plan(task, manual, injected, mask, tuple(calls))


def feed(state: State, trajectory: Trajectory, controllers: Controllers, task_text: str = "") -> State:
    """F: the state after one more finished task of the stream."""
    params = state.params
    planned = plan(state, task_text, controllers)
    task = planned.task
    b = guard_rules.budget(state.passed_turns, params)
    run = guard_rules.run_guard(trajectory.steps, b, params, controllers.trace_judge, controllers.redirect_writer)
    skills = tuple(skill_rules.observe(s, task, trajectory.steps, params) for s in state.skills)
    skills = tuple(
        attrs.evolve(s, injected_tasks=s.injected_tasks + (task,)) if s.id in planned.injected else s for s in skills
    )
    tools = tool_rules.update(state.tools, trajectory.steps)
    passed_turns = state.passed_turns + ((trajectory.turns,) if trajectory.passed else ())
    window = (state.window + ((task, trajectory),))[-params.proposer_window :]
    calls = list(planned.calls) + list(run.calls)
    rejections: tuple[Rejection, ...] = ()
    if skill_rules.proposer_due(task, params):
        digests = tuple(make_digest(index, t) for index, t in window)
        answer = controllers.proposer(state.repository, tuple(s.id for s in skills), digests)
        calls.append(ControllerCall("proposer", answer.usage))
        window_tasks = tuple((index, t.task_id, t.steps) for index, t in window)
        skills, rejections = skill_rules.admit(skills, answer.skills, window_tasks, task, params)
    record = TaskRecord(
        task,
        trajectory.task_id,
        trajectory.passed,
        trajectory.turns,
        planned.manual,
        planned.injected,
        planned.mask,
        b,
        tuple(d for d in run.decisions if d.action != "continue"),
        tuple(calls),
        rejections,
    )
    return attrs.evolve(
        state,
        index=task,
        skills=skills,
        tools=tools,
        passed_turns=passed_turns,
        window=window,
        records=state.records + (record,),
        rejections=state.rejections + rejections,
    )


def feed_all(state: State, trajectories: Sequence[Trajectory], controllers: Controllers) -> State:
    for trajectory in trajectories:
        state = feed(state, trajectory, controllers)
    return state
