"""The failure-loop guard: redirect, then stop, an unproductive loop (paper Sec. 3.3, App. F).

Theory of operation
-------------------
The guard sees one task's trajectory as it grows, one step at a time, and only its prefix.
After step t it computes counters over steps 1..t (`counters`), then decides, in this order:

  1. stopped already                       -> Stop (absorbing; the task is over)
  2. a redirect was given < grace turns ago -> Continue (let the redirect take effect)
  3. FORCED: B known, t >= kappa*B (conformal rule: t >= T) and the strict stall rule holds
        no redirect yet                    -> Redirect (forced; the judge is not asked)
        redirected before                  -> Stop (forced; the judge is not asked, so it
                                              cannot veto: this is the non-vetoable stop)
  4. trigger open and the judge is due     -> ask the trace judge
        stuck (confidence >= threshold)    -> Redirect if none yet, else Stop
                                              (a second stuck verdict ends the task; under
                                              the conformal rule only from turn T on)
        productive                         -> interval += step, capped at max
  5. otherwise                             -> Continue

Hence a Stop is always preceded by a Redirect in the same task, a task gets at most one
redirect, and turns are counted across the redirect (the count is t, never reset).

Choices the paper leaves open, with reasons:
* Forced redirect. The paper stops "without a further redirect" at kappa*B, and also says
  the guard redirects before it stops. With the default no-model judge (never "stuck") a run
  would otherwise be stopped with no redirect at all; so when the forced condition first
  holds and there was no redirect yet, the guard redirects, and stops only if the condition
  still holds `redirect_grace` turns later.
* The trigger that opens the judge is looser than the strict stall rule: at least
  `trigger_error_outputs` error outputs and at least one repeated signature.
* B = ceil(p-th percentile (nearest rank) of the passed turn counts * (1 + beta)), defined
  once `min_passed_for_budget` earlier tasks of the repository passed.
* Edits are read from the shell commands (`trajectory.edited_files`); "no state change" is
  the number of turns since the last edit.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Literal, Sequence

import attrs

from . import conformal
from .cost import NO_USAGE, ControllerCall, Usage
from .params import Params
from .trajectory import Step, edited_files, is_failing, is_test_run, step_signature

DIGEST_ACTIONS = 24
"""Actions the judge and redirect writer see (paper App. G.3: the last 24)."""


@attrs.frozen
class Counters:
    turns: int = 0
    repeated_commands: int = 0
    error_outputs: int = 0
    repeated_failures: int = 0
    """Failing outputs whose signature appeared in an earlier failing output of this task."""
    edits: tuple[tuple[str, int], ...] = ()
    """(file, edit count), sorted by file."""
    stagnation: int = 0
    """Turns since the last edit (all turns if there was none)."""
    test_runs: int = 0
    repeated_verification_failures: int = 0
    """Failing test runs whose signature an earlier failing test run of this task had."""

    @property
    def distinct_edited_files(self) -> int:
        return len(self.edits)

    @property
    def max_edits_one_file(self) -> int:
        return max((count for _, count in self.edits), default=0)


def counters(steps: Sequence[Step]) -> Counters:
    """The running counters over a prefix, computed from scratch (the obviously-right way)."""
    commands: list[str] = []
    signatures: list[str] = []
    test_signatures: list[str] = []
    edits: dict[str, int] = {}
    result = dict(turns=0, repeated_commands=0, error_outputs=0, repeated_failures=0, stagnation=0, test_runs=0, repeated_verification_failures=0)
    for step in steps:
        result["turns"] += 1
        if step.command in commands:
            result["repeated_commands"] += 1
        commands.append(step.command)
        files = edited_files(step.command)
        for name in files:
            edits[name] = edits.get(name, 0) + 1
        result["stagnation"] = 0 if files else result["stagnation"] + 1
        if is_test_run(step):
            result["test_runs"] += 1
        if is_failing(step):
            result["error_outputs"] += 1
            signature = step_signature(step) or "<empty>"
            if signature in signatures:
                result["repeated_failures"] += 1
            signatures.append(signature)
            if is_test_run(step):
                if signature in test_signatures:
                    result["repeated_verification_failures"] += 1
                test_signatures.append(signature)
    return Counters(edits=tuple(sorted(edits.items())), **result)


def strict_stall(c: Counters, params: Params) -> bool:
    """Edit churn AND dense errors AND repetition, all at once (paper App. F)."""
    churn = c.max_edits_one_file >= params.stall_edits_one_file or c.distinct_edited_files >= params.stall_distinct_files
    dense = c.error_outputs >= params.stall_error_outputs
    repetition = c.error_outputs > 0 and Fraction(c.repeated_failures, c.error_outputs) >= params.stall_repeat_share
    return churn and dense and repetition


def trigger_open(c: Counters, params: Params) -> bool:
    return c.error_outputs >= params.trigger_error_outputs and c.repeated_failures >= 1


def percentile(values: Sequence[int], p: int) -> int:
    """Nearest-rank percentile: the smallest value with at least p% of values <= it."""
    ordered = sorted(values)
    rank = max(1, math.ceil(Fraction(p, 100) * len(ordered)))
    return ordered[rank - 1]


def budget(passed_turns: Sequence[int], params: Params) -> int | None:
    """B under the kappa rule; under the conformal rule, the stop point T itself."""
    if params.guard_rule == "conformal":
        return conformal.stop_point(passed_turns, params.alpha)
    if len(passed_turns) < params.min_passed_for_budget:
        return None
    return math.ceil(percentile(passed_turns, params.budget_percentile) * (1 + params.beta))


def forced_threshold(b: int | None, params: Params) -> Fraction | None:
    """The turn from which the forced rule may act: kappa * B, or T under the conformal rule."""
    if b is None:
        return None
    return Fraction(b) if params.guard_rule == "conformal" else params.kappa * b


def may_stop(t: int, b: int | None, params: Params) -> bool:
    """Under the conformal rule nothing stops a run before T, not even the judge: that is
    what makes the false-stop bound cover every stop. The kappa rule lets the judge stop."""
    return params.guard_rule != "conformal" or (b is not None and t >= b)


def forced(c: Counters, b: int | None, params: Params) -> bool:
    threshold = forced_threshold(b, params)
    return threshold is not None and c.turns >= threshold and strict_stall(c, params)


# --- model-call interfaces (as pure functions of their input) ------------------------------


@attrs.frozen
class GuardDigest:
    """What the trace judge and the redirect writer read: never file contents or task text."""

    counters: Counters
    budget: int | None
    recent: tuple[str, ...]
    """The last `DIGEST_ACTIONS` actions: each command's first line, cut at 200 chars."""


@attrs.frozen
class Verdict:
    stuck: bool
    confidence: Fraction = attrs.field(default=Fraction(1), converter=Fraction)
    reason: str = ""
    usage: Usage = NO_USAGE


@attrs.frozen
class RedirectText:
    text: str
    usage: Usage = NO_USAGE


TraceJudge = Callable[[GuardDigest], Verdict]
RedirectWriter = Callable[[GuardDigest], RedirectText]


def digest(steps: Sequence[Step], c: Counters, b: int | None) -> GuardDigest:
    recent = tuple(step.command.split("\n", 1)[0][:200] for step in steps[-DIGEST_ACTIONS:])
    return GuardDigest(c, b, recent)


# --- decisions ---------------------------------------------------------------------------------

Action = Literal["continue", "redirect", "stop"]


@attrs.frozen
class Decision:
    turn: int
    action: Action
    forced: bool = False
    text: str = ""
    reason: str = ""


@attrs.frozen
class GuardState:
    interval: int
    redirect_turn: int | None = None
    last_judged: int | None = None
    stopped: bool = False
    judged_turns: tuple[int, ...] = ()
    calls: tuple[ControllerCall, ...] = ()


def initial_guard(params: Params) -> GuardState:
    return GuardState(interval=params.judge_interval)


def guard_step(
    state: GuardState,
    prefix: Sequence[Step],
    b: int | None,
    params: Params,
    judge: TraceJudge,
    writer: RedirectWriter,
) -> tuple[GuardState, Decision]:
    """The guard's decision after the last step of `prefix` (which it may not look past)."""
    t = len(prefix)
    if state.stopped:
        return state, Decision(t, "stop", reason="already stopped")
    if state.redirect_turn is not None and t - state.redirect_turn < params.redirect_grace:
        return state, Decision(t, "continue", reason="redirect grace")
    c = counters(prefix)

    def redirect(state: GuardState, forced_: bool, reason: str) -> tuple[GuardState, Decision]:
        written = writer(digest(prefix, c, b))
        calls = state.calls + (ControllerCall("redirect_writer", written.usage),)
        return attrs.evolve(state, redirect_turn=t, calls=calls), Decision(t, "redirect", forced_, written.text, reason)

    if forced(c, b, params):
        if state.redirect_turn is None:
            return redirect(state, True, "turns >= kappa*B under the strict stall rule")
        return attrs.evolve(state, stopped=True), Decision(t, "stop", True, reason="turns >= kappa*B under the strict stall rule after a redirect")
    due = state.last_judged is None or t - state.last_judged >= state.interval
    if trigger_open(c, params) and due:
        verdict = judge(digest(prefix, c, b))
        state = attrs.evolve(
            state,
            last_judged=t,
            judged_turns=state.judged_turns + (t,),
            calls=state.calls + (ControllerCall("trace_judge", verdict.usage),),
        )
        if verdict.stuck and verdict.confidence >= params.judge_confidence:
            if state.redirect_turn is None:
                return redirect(state, False, f"judge: stuck ({verdict.reason})")
            if not may_stop(t, b, params):
                return state, Decision(t, "continue", reason="second stuck verdict before the conformal stop point")
            return attrs.evolve(state, stopped=True), Decision(t, "stop", False, reason="second stuck verdict")
        state = attrs.evolve(state, interval=min(state.interval + params.judge_interval_step, params.judge_interval_max))
        return state, Decision(t, "continue", reason="judge: productive")
    return state, Decision(t, "continue")


@attrs.frozen
class GuardRun:
    """The guard replayed over a whole trajectory: its interventions and calls."""

    decisions: tuple[Decision, ...]
    calls: tuple[ControllerCall, ...]

    @property
    def first_redirect(self) -> int | None:
        return next((d.turn for d in self.decisions if d.action == "redirect"), None)

    @property
    def stop(self) -> int | None:
        return next((d.turn for d in self.decisions if d.action == "stop"), None)

    @property
    def first_intervention(self) -> int | None:
        return next((d.turn for d in self.decisions if d.action != "continue"), None)


def run_guard(steps: Sequence[Step], b: int | None, params: Params, judge: TraceJudge, writer: RedirectWriter) -> GuardRun:
    """Replay the guard over a recorded trajectory, step by step, up to its stop."""
    state = initial_guard(params)
    decisions = []
    for t in range(1, len(steps) + 1):
        state, decision = guard_step(state, steps[:t], b, params, judge, writer)
        decisions.append(decision)
        if decision.action == "stop":
            break
    return GuardRun(tuple(decisions), state.calls)
