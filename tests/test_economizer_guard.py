"""Failure-loop guard rules, each at its boundary, on the spec and on the implementation."""

from __future__ import annotations

import math
from fractions import Fraction

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from economizer.guard import Guard
from economizer.harness import StopSignal, guard_signal
from economizer_spec import guard as rules
from economizer_spec.guard import Counters, RedirectText, Verdict
from economizer_spec.params import Params
from economizer_spec.trajectory import Step, failure_signature
from ledger_spec.values import Nudge
from ledger_properties.economizer_engines import ENGINES, guard_decisions, strip
from ledger_properties.economizer_strategies import steps as step_strategy
from ledger_properties.economizer_strategies import trajectories

# --- the failure signature --------------------------------------------------------------------

SIGNATURE_EXAMPLES = [
    ("Traceback (most recent call last):\n  File \"/testbed/a.py\", line 3, in f\nValueError: bad value 17", 1, "ValueError: bad value <n>"),
    ("<Foo object at 0x7f3a2c>\nTypeError: cannot add <Foo at 0x7f3a2c>", 1, "TypeError: cannot add <Foo at <addr>>"),
    ("FAILED tests/test_x.py::test_y - AssertionError: 3 != 4", 1, "FAILED <path>::test_y - AssertionError: <n> != <n>"),
    ("collected 3 items\nE       KeyError: 'name'", 1, "E KeyError: 'name'"),
    ("cat: src/missing.py: No such file or directory", 1, "cat: <path>: No such file or directory"),
    ("all good", 0, None),
    ("nothing useful here", 2, "nothing useful here"),
    ("", 137, "<empty>"),
    ("warning only\nSyntaxError: invalid syntax", 0, "SyntaxError: invalid syntax"),
]


@pytest.mark.parametrize("output, code, expected", SIGNATURE_EXAMPLES)
def test_failure_signature_examples(output: str, code: int, expected: str | None) -> None:
    assert failure_signature(output, code) == expected


@settings(max_examples=100, deadline=None)
@given(a=st.integers(0, 10**9), b=st.integers(0, 10**9), x=st.integers(1, 2**48), y=st.integers(1, 2**48),
       p=st.sampled_from(["/a/b.py", "src/x.py", "/usr/lib/python3/z.py"]), q=st.sampled_from(["/c/d.py", "lib/y.py", "e.py"]))
def test_signature_ignores_numbers_addresses_and_paths(a, b, x, y, p, q) -> None:
    def out(n, addr, path):
        return f"Traceback (most recent call last):\nValueError: item {n} of {path} at {hex(addr)} failed"
    assert failure_signature(out(a, x, p), 1) == failure_signature(out(b, y, q), 1)


def test_signature_tells_different_errors_apart() -> None:
    assert failure_signature("ValueError: x", 1) != failure_signature("KeyError: x", 1)


# --- the strict stall rule, each condition at its boundary ---------------------------------------

STALLED = Counters(turns=30, error_outputs=6, repeated_failures=2, edits=(("a.py", 4),))


@pytest.mark.parametrize(
    "counters, stalled",
    [
        (STALLED, True),
        (attrs.evolve(STALLED, edits=(("a.py", 3),)), False),  # 3 edits to one file: no churn
        (attrs.evolve(STALLED, edits=(("a.py", 1), ("b.py", 1), ("c.py", 1))), True),  # 3 files
        (attrs.evolve(STALLED, edits=(("a.py", 3), ("b.py", 3))), False),  # 2 files, 3 edits each
        (attrs.evolve(STALLED, error_outputs=5, repeated_failures=1), False),  # 5 errors
        (attrs.evolve(STALLED, error_outputs=10, repeated_failures=2), True),  # exactly 20%
        (attrs.evolve(STALLED, error_outputs=11, repeated_failures=2), False),  # 18%
    ],
)
def test_strict_stall_rule_boundaries(counters: Counters, stalled: bool) -> None:
    assert rules.strict_stall(counters, Params()) is stalled


@settings(max_examples=60, deadline=None)
@given(trajectory=trajectories(max_steps=40))
def test_incremental_counters_equal_the_spec(trajectory) -> None:
    guard = Guard(Params(), None, lambda d: Verdict(False), lambda d: RedirectText(""))
    for t, step in enumerate(trajectory.steps, 1):
        guard.observe(step)
        expected = rules.counters(trajectory.steps[:t])
        assert guard.counters() == expected
        assert guard._stall() == rules.strict_stall(expected, Params())


# --- the budget B ------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(turns=st.lists(st.integers(1, 200), max_size=40), p=st.integers(1, 100), beta=st.sampled_from([0, Fraction(1, 5), Fraction(1, 2)]))
def test_budget_is_nearest_rank_percentile_with_margin(turns, p, beta) -> None:
    params = Params(budget_percentile=p, beta=beta)
    b = rules.budget(turns, params)
    if len(turns) < params.min_passed_for_budget:
        assert b is None
        return
    ordered = sorted(turns)
    value = ordered[max(1, math.ceil(p * len(ordered) / 100)) - 1]
    assert b == math.ceil(value * (1 + beta))
    assert sum(t <= value for t in turns) * 100 >= p * len(turns)  # at least p% at or below
    assert b <= math.ceil(max(turns) * (1 + beta))  # never more than the maximum's budget


def test_budget_needs_three_passed_runs_and_ignores_one_outlier() -> None:
    assert rules.budget([10, 20], Params()) is None
    assert rules.budget([10, 20, 30], Params()) == 36
    assert rules.budget([20] * 19 + [500], Params()) == 24


# --- judge cadence, forced stop, redirect before stop ----------------------------------------------

LOOP = Step("sed -i 's/a/b/' a.py && pytest", "E   AssertionError: 1 != 2", 1)
"""An edit to the same file and the same failure, every turn: the trigger and the strict stall
rule both hold from turn 6 on (6 errors, 4+ edits to one file, >= 20% repeats)."""


class Judge:
    def __init__(self, stuck: bool, confidence: Fraction = Fraction(1)) -> None:
        self.stuck, self.confidence, self.turns = stuck, confidence, []

    def __call__(self, digest) -> Verdict:
        self.turns.append(digest.counters.turns)
        return Verdict(self.stuck, self.confidence)


def writer(digest) -> RedirectText:
    return RedirectText(f"try something else at {digest.counters.turns}")


@pytest.mark.parametrize("engine", ENGINES)
def test_judge_every_5_turns_growing_by_5_up_to_20(engine: str) -> None:
    judge = Judge(stuck=False)
    guard_decisions(engine, [LOOP] * 120, None, Params(), judge, writer)
    # the trigger opens at turn 3 (3 errors, a repeat); the interval starts at 5 and each
    # productive verdict grows it by 5 before the next consultation: 10, 15, 20, 20, ...
    assert judge.turns == [3, 13, 28, 48, 68, 88, 108]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kappa, budget", [(Fraction(5, 2), 4), (Fraction(2), 7), (Fraction(1), 13)])
def test_forced_redirect_at_kappa_b_then_stop_that_the_judge_cannot_veto(engine: str, kappa: Fraction, budget: int) -> None:
    params = Params(kappa=kappa, redirect_grace=5)
    threshold = max(6, math.ceil(kappa * budget))  # the stall rule needs 6 turns here
    decisions = guard_decisions(engine, [LOOP] * 60, budget, params, Judge(stuck=False), writer)
    acted = [d for d in decisions if d.action != "continue"]
    assert [(d.turn, d.action, d.forced) for d in acted] == [(threshold, "redirect", True), (threshold + 5, "stop", True)]
    one_less = guard_decisions(engine, [LOOP] * (threshold - 1), budget, params, Judge(stuck=False), writer)
    assert all(d.action == "continue" for d in one_less)


@pytest.mark.parametrize("engine", ENGINES)
def test_no_forced_action_without_budget_or_without_stall(engine: str) -> None:
    assert all(d.action == "continue" for d in guard_decisions(engine, [LOOP] * 80, None, Params(), Judge(False), writer))
    calm = Step("pytest", "E   AssertionError: 1 != 2", 1)  # errors, repeats, but no edit churn
    assert all(d.action == "continue" for d in guard_decisions(engine, [calm] * 80, 4, Params(), Judge(False), writer))


@pytest.mark.parametrize("engine", ENGINES)
def test_second_stuck_verdict_ends_the_task(engine: str) -> None:
    decisions = guard_decisions(engine, [LOOP] * 60, None, Params(), Judge(stuck=True), writer)
    acted = [(d.turn, d.action, d.forced) for d in decisions if d.action != "continue"]
    assert acted == [(3, "redirect", False), (8, "stop", False)]
    assert decisions[-1].action == "stop" and len(decisions) == 8


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("confidence, acts", [(Fraction(7, 10), True), (Fraction(69, 100), False)])
def test_stuck_counts_only_at_the_confidence_threshold(engine: str, confidence: Fraction, acts: bool) -> None:
    decisions = guard_decisions(engine, [LOOP] * 10, None, Params(), Judge(True, confidence), writer)
    assert any(d.action == "redirect" for d in decisions) is acts


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None)
@given(trajectory=trajectories(max_steps=60), budget=st.one_of(st.none(), st.integers(1, 30)),
       stuck=st.booleans(), kappa=st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(5, 2)]))
def test_a_stop_always_follows_a_redirect_and_there_is_one_redirect(engine, trajectory, budget, stuck, kappa) -> None:
    decisions = guard_decisions(engine, trajectory.steps, budget, Params(kappa=kappa), Judge(stuck), writer)
    actions = [d.action for d in decisions]
    assert actions.count("redirect") <= 1 and actions.count("stop") <= 1
    if "stop" in actions:
        assert "redirect" in actions and actions.index("redirect") < actions.index("stop")
        assert actions[-1] == "stop"


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=30, deadline=None)
@given(prefix=st.lists(step_strategy, min_size=1, max_size=30), a=st.lists(step_strategy, max_size=20),
       b=st.lists(step_strategy, max_size=20), budget=st.one_of(st.none(), st.integers(1, 10)))
def test_the_guard_sees_only_the_prefix(engine, prefix, a, b, budget) -> None:
    params = Params(kappa=1)
    left = guard_decisions(engine, prefix + a, budget, params, Judge(False), writer)
    right = guard_decisions(engine, prefix + b, budget, params, Judge(False), writer)
    n = min(len(prefix), len(left), len(right))
    assert [strip(d) for d in left[:n]] == [strip(d) for d in right[:n]]


def test_harness_signals() -> None:
    decisions = guard_decisions("impl", [LOOP] * 60, None, Params(), Judge(stuck=True), writer)
    signals = [guard_signal(d) for d in decisions]
    assert isinstance(signals[2], Nudge) and "try something else" in signals[2].note
    assert isinstance(signals[-1], StopSignal) and signals[-1].reason == "second stuck verdict"
    assert signals[0] is None


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=20, deadline=None)
@given(start=st.integers(1, 8), step=st.integers(1, 8), extra=st.integers(0, 20))
def test_judge_interval_grows_by_its_step_up_to_its_cap(engine: str, start: int, step: int, extra: int) -> None:
    """With a judge that always answers "productive", the k-th gap between consultations is
    min(start + k * step, cap) for k = 1, 2, ...: never shorter than `start` (the judge is
    asked at most every `start` turns), growing by `step` after each verdict, capped."""
    cap = start + extra
    turns = 80  # the spec recounts every prefix: quadratic in the turns
    params = Params(judge_interval=start, judge_interval_step=step, judge_interval_max=cap)
    judge = Judge(stuck=False)
    guard_decisions(engine, [LOOP] * turns, None, params, judge, writer)
    gaps = [b - a for a, b in zip(judge.turns, judge.turns[1:])]
    assert judge.turns[0] == 3  # the trigger opens at the third repeated error
    assert gaps == [min(start + k * step, cap) for k in range(1, len(gaps) + 1)]
    assert judge.turns[-1] + min(start + (len(gaps) + 1) * step, cap) > turns  # none was skipped at the end


class ScriptedJudge:
    """Answers from a drawn script of (stuck, confidence), cycled; records the turns asked."""

    def __init__(self, script: list[tuple[bool, Fraction]]) -> None:
        self.script, self.turns = script, []

    def __call__(self, digest) -> Verdict:
        stuck, confidence = self.script[len(self.turns) % len(self.script)]
        self.turns.append(digest.counters.turns)
        return Verdict(stuck, confidence)


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(step_strategy, min_size=1, max_size=60),
    budget=st.integers(1, 12),
    kappa=st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(2), Fraction(5, 2)]),
    script=st.lists(st.tuples(st.booleans(), st.sampled_from([Fraction(1, 2), Fraction(7, 10), Fraction(1)])), min_size=1, max_size=6),
)
@example(steps=[LOOP] * 40, budget=4, kappa=Fraction(5, 2), script=[(False, Fraction(1))])  # forced at 10, stop at 15
@example(steps=[LOOP] * 40, budget=2, kappa=Fraction(1), script=[(True, Fraction(1))])  # the judge redirects first
def test_the_forced_rule_decides_whatever_the_judge_says(engine, steps, budget, kappa, script) -> None:
    """On concrete trajectories, at every turn where turns >= kappa*B under the strict stall
    rule (counted from scratch here) and no redirect grace runs: the judge is not asked, and
    the guard redirects (forced) if it has not yet, else stops (forced). Whatever the script
    of verdicts, so no verdict can veto the stop."""
    params = Params(kappa=kappa)
    judge = ScriptedJudge(script)
    decisions = guard_decisions(engine, steps, budget, params, judge, writer)
    redirected_at = None
    for decision in decisions:
        t = decision.turn
        in_grace = redirected_at is not None and t - redirected_at < params.redirect_grace
        if rules.forced(rules.counters(steps[:t]), budget, params) and not in_grace:
            assert t not in judge.turns
            expected = "redirect" if redirected_at is None else "stop"
            assert (decision.action, decision.forced) == (expected, True)
        if decision.action == "redirect":
            redirected_at = t
