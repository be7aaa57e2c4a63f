"""The failure-loop guard, incremental: O(1) work per turn (the spec recomputes the prefix).

Feed it one step at a time with `observe`; it returns the same `Decision` that
`economizer_spec.guard.guard_step` returns for the same prefix (checked by the differential
property). A harness acts on a decision through `economizer.harness.guard_signal`.
"""

from __future__ import annotations

import functools
from fractions import Fraction

from economizer_spec.cost import ControllerCall
from economizer_spec.guard import DIGEST_ACTIONS, Counters, Decision, GuardDigest, RedirectWriter, TraceJudge, forced_threshold
from economizer_spec.params import Params
from economizer_spec.trajectory import Step, edited_files, is_test_run, step_signature


@functools.lru_cache(maxsize=65536)
def step_facts(step: Step) -> tuple[tuple[str, ...], bool, str | None, str]:
    """(edited files, is a test run, failure signature or None, first line of the command).

    Cached: the evaluation replays the same steps under many parameter settings. A step
    fails exactly when it has a signature (`failure_signature` is None only for a zero exit
    with no error line), so one regex pass per output serves both questions."""
    return edited_files(step.command), is_test_run(step), step_signature(step), step.command.split("\n", 1)[0][:200]


class Guard:
    def __init__(self, params: Params, budget: int | None, judge: TraceJudge, writer: RedirectWriter) -> None:
        self.params = params
        self.budget = budget
        self.judge = judge
        self.writer = writer
        self.turns = 0
        self.repeated_commands = 0
        self.error_outputs = 0
        self.repeated_failures = 0
        self.stagnation = 0
        self.test_runs = 0
        self.repeated_verification_failures = 0
        self.edits: dict[str, int] = {}
        self.max_edits = 0
        self._commands: set[str] = set()
        self._signatures: set[str] = set()
        self._test_signatures: set[str] = set()
        self._recent: list[str] = []
        self.interval = params.judge_interval
        self.redirect_turn: int | None = None
        self.last_judged: int | None = None
        self.stopped = False
        self.calls: list[ControllerCall] = []
        self.forced_threshold = forced_threshold(budget, params)

    def _count(self, step: Step) -> None:
        files, test, signature, first_line = step_facts(step)
        self.turns += 1
        if step.command in self._commands:
            self.repeated_commands += 1
        self._commands.add(step.command)
        for name in files:
            count = self.edits.get(name, 0) + 1
            self.edits[name] = count
            self.max_edits = max(self.max_edits, count)
        self.stagnation = 0 if files else self.stagnation + 1
        if test:
            self.test_runs += 1
        if signature is not None:
            self.error_outputs += 1
            if signature in self._signatures:
                self.repeated_failures += 1
            self._signatures.add(signature)
            if test:
                if signature in self._test_signatures:
                    self.repeated_verification_failures += 1
                self._test_signatures.add(signature)
        self._recent.append(first_line)
        del self._recent[:-DIGEST_ACTIONS]

    def counters(self) -> Counters:
        return Counters(
            self.turns,
            self.repeated_commands,
            self.error_outputs,
            self.repeated_failures,
            tuple(sorted(self.edits.items())),
            self.stagnation,
            self.test_runs,
            self.repeated_verification_failures,
        )

    def _digest(self) -> GuardDigest:
        return GuardDigest(self.counters(), self.budget, tuple(self._recent))

    def _stall(self) -> bool:
        p = self.params
        churn = self.max_edits >= p.stall_edits_one_file or len(self.edits) >= p.stall_distinct_files
        return (
            churn
            and self.error_outputs >= p.stall_error_outputs
            and Fraction(self.repeated_failures, self.error_outputs) >= p.stall_repeat_share
        )

    def _redirect(self, forced: bool, reason: str) -> Decision:
        written = self.writer(self._digest())
        self.calls.append(ControllerCall("redirect_writer", written.usage))
        self.redirect_turn = self.turns
        return Decision(self.turns, "redirect", forced, written.text, reason)

    def observe(self, step: Step) -> Decision:
        """Count one more step and decide. After a stop every call answers stop."""
        if self.stopped:
            self.turns += 1
            return Decision(self.turns, "stop", reason="already stopped")
        self._count(step)
        t = self.turns
        p = self.params
        if self.redirect_turn is not None and t - self.redirect_turn < p.redirect_grace:
            return Decision(t, "continue", reason="redirect grace")
        if self.forced_threshold is not None and t >= self.forced_threshold and self._stall():
            reason = "turns >= kappa*B under the strict stall rule"
            if self.redirect_turn is None:
                return self._redirect(True, reason)
            self.stopped = True
            return Decision(t, "stop", True, reason=reason + " after a redirect")
        due = self.last_judged is None or t - self.last_judged >= self.interval
        if due and self.error_outputs >= p.trigger_error_outputs and self.repeated_failures >= 1:
            verdict = self.judge(self._digest())
            self.last_judged = t
            self.calls.append(ControllerCall("trace_judge", verdict.usage))
            if verdict.stuck and verdict.confidence >= p.judge_confidence:
                if self.redirect_turn is None:
                    return self._redirect(False, f"judge: stuck ({verdict.reason})")
                if p.guard_rule == "conformal" and (self.budget is None or t < self.budget):
                    return Decision(t, "continue", reason="second stuck verdict before the conformal stop point")
                self.stopped = True
                return Decision(t, "stop", False, reason="second stuck verdict")
            self.interval = min(self.interval + p.judge_interval_step, p.judge_interval_max)
            return Decision(t, "continue", reason="judge: productive")
        return Decision(t, "continue")
