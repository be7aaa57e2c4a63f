"""The Z3 theorems hold, each broken rule refutes its theorem, and the encoding is the spec's."""

from __future__ import annotations

from fractions import Fraction

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from economizer_spec import guard as spec_guard
from economizer_spec import tools as spec_tools
from economizer_spec.guard import Counters, GuardState, RedirectText, Verdict
from economizer_spec.params import Params
from economizer_spec.tools import ToolState
from economizer_spec.trajectory import Step
from economizer_spec.z3_model import ACTION_NAME, BROKEN, GuardInputs, ToolInputs, guard_action, masked
from economizer_spec.z3_theorems import THEOREMS, run_all


def test_every_theorem_is_proved() -> None:
    results = run_all()
    assert [r.name for r in results if r.status != "proved"] == []
    assert len(results) == len(THEOREMS) >= 9


EXPECTED_FAILURES = {
    "judge-before-forced": {"guard-forced-stop", "guard-judge-cannot-veto"},
    "stop-without-redirect": {"guard-redirect-before-stop"},
    "redirect-twice": {"guard-one-redirect"},
    "mask-core": {"prune-core-never-masked"},
    "judge-masks-called": {"prune-called-never-masked"},
    "forget-called": {"prune-called-never-masked"},
    "reaudit-keeps-mask": {"prune-reaudit-loads-all"},
    "streak-off-by-one": {"prune-streak-masks"},
}


@pytest.mark.parametrize("variant", BROKEN, ids=lambda v: v.name)
def test_each_broken_rule_refutes_its_theorem(variant) -> None:
    failed = {r.name for r in run_all(variant) if r.status == "counterexample"}
    assert failed == EXPECTED_FAILURES[variant.name]


# --- conformance: the encoding decides what the spec decides ------------------------------------

STALL_STEP = Step("sed -i 's/a/b/' a.py", "E   AssertionError: 1", 1)
CALM_STEP = Step("ls", "", 0)


def _value(term) -> object:
    return z3.simplify(term)


@settings(max_examples=150, deadline=None)
@given(
    t=st.integers(1, 40), budget=st.one_of(st.none(), st.integers(0, 20)), kappa=st.sampled_from([Fraction(1, 2), Fraction(1), Fraction(5, 2)]),
    stalled=st.booleans(), stuck=st.booleans(), confident=st.booleans(), redirected_at=st.one_of(st.none(), st.integers(1, 39)),
    last_judged=st.one_of(st.none(), st.integers(1, 39)), interval=st.sampled_from([5, 10, 20]), stopped=st.booleans(),
)
def test_guard_encoding_matches_guard_step(t, budget, kappa, stalled, stuck, confident, redirected_at, last_judged, interval, stopped) -> None:
    if redirected_at is not None and redirected_at >= t or last_judged is not None and last_judged >= t:
        return
    params = Params(kappa=kappa)
    prefix = [STALL_STEP if stalled else CALM_STEP] * t
    state = GuardState(interval=interval, redirect_turn=redirected_at, last_judged=last_judged, stopped=stopped)
    verdict = Verdict(stuck, Fraction(1) if confident else Fraction(0))
    _, decision = spec_guard.guard_step(state, prefix, budget, params, lambda d: verdict, lambda d: RedirectText(""))
    counters = spec_guard.counters(prefix)
    g = GuardInputs(
        z3.IntVal(t), z3.IntVal(budget or 0), z3.BoolVal(budget is not None), z3.RealVal(str(kappa)),
        z3.BoolVal(spec_guard.strict_stall(counters, params)), z3.BoolVal(spec_guard.trigger_open(counters, params)),
        z3.BoolVal(last_judged is None or t - last_judged >= interval), z3.BoolVal(stuck), z3.BoolVal(confident),
        z3.BoolVal(stopped), z3.BoolVal(redirected_at is not None), z3.IntVal(redirected_at or 0), z3.IntVal(params.redirect_grace),
    )
    assert z3.simplify(guard_action(g) == ACTION_NAME[decision.action]) == z3.BoolVal(True)


@settings(max_examples=150, deadline=None)
@given(core=st.booleans(), called=st.booleans(), streak=st.integers(0, 6), unused=st.integers(1, 4), task=st.integers(1, 12),
       judge=st.one_of(st.none(), st.booleans()))
def test_pruning_encoding_matches_mask(core, called, streak, unused, task, judge) -> None:
    params = Params(unused_streak=unused, reaudit_period=4)
    tool = ToolState("t", called, streak)
    answer = None if judge is None else {"t": not judge}
    spec = "t" in spec_tools.mask([tool], frozenset({"t"} if core else ()), task, params, answer)
    x = ToolInputs(z3.BoolVal(core), z3.BoolVal(called), z3.IntVal(streak), z3.IntVal(unused), z3.BoolVal(task % 4 == 0),
                   z3.BoolVal(judge is not None), z3.BoolVal(bool(judge)), z3.BoolVal(False))
    assert z3.is_true(z3.simplify(masked(x))) is spec
