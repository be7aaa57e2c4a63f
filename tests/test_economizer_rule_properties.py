"""Hypothesis properties for the economizer rules an audit found tested by examples only,
each on the spec and on the implementation:

* the strict stall rule at its boundaries (4 edits to one file / 3 files; 6 errors; 20%);
* a stuck verdict at confidence >= 0.7 redirects, and the second one ends the task;
* a failed tool-judge call keeps every tool loaded that the evidence alone would keep;
* every inadmissible regex shape a proposer can send is refused with its reason.

The oracles below spell the paper's constants out (4, 3, 6, 1/5, 0.7) rather than read them
from `Params`, so a changed default is caught too.
"""

from __future__ import annotations

import re
from fractions import Fraction

import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from economizer.guard import Guard
from economizer_spec import guard as rules
from economizer_spec.detectors import Regex, regex_error
from economizer_spec.guard import Counters, RedirectText, Verdict
from economizer_spec.params import Params
from economizer_spec.stream import Controllers, ProposerAnswer, ToolJudgeAnswer
from economizer_spec.trajectory import Step, Trajectory
from ledger_properties.economizer_engines import ENGINES, Stream, guard_decisions
from ledger_properties.economizer_strategies import steps as step_strategy

RELAXED = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- the strict stall rule ---------------------------------------------------------------------

def paper_stall(edits: dict[str, int], errors: int, repeated: int) -> bool:
    churn = max(edits.values(), default=0) >= 4 or len(edits) >= 3
    return churn and errors >= 6 and 5 * repeated >= errors


def engine_stall(engine: str, edits: dict[str, int], errors: int, repeated: int) -> bool:
    if engine == "spec":
        counters = Counters(turns=errors, error_outputs=errors, repeated_failures=repeated, edits=tuple(sorted(edits.items())))
        return rules.strict_stall(counters, Params())
    guard = Guard(Params(), None, lambda d: Verdict(False), lambda d: RedirectText(""))
    guard.edits, guard.max_edits = dict(edits), max(edits.values(), default=0)
    guard.error_outputs, guard.repeated_failures = errors, repeated
    return guard._stall()


@pytest.mark.parametrize("engine", ENGINES)
@RELAXED
@given(edits=st.dictionaries(st.sampled_from(["a.py", "b.py", "c.py", "d.py"]), st.integers(1, 6), max_size=4),
       errors=st.integers(0, 15), offset=st.sampled_from([-1, 0, 1]))
@example(edits={"a.py": 4}, errors=6, offset=0)  # stalled: 4 edits, 6 errors, 2/6 repeat
@example(edits={"a.py": 3}, errors=6, offset=0)  # 3 edits to one file: no churn
@example(edits={"a.py": 3, "b.py": 3}, errors=6, offset=0)  # 2 files: no churn
@example(edits={"a.py": 1, "b.py": 1, "c.py": 1}, errors=6, offset=0)  # 3 files: churn
@example(edits={"a.py": 4}, errors=5, offset=0)  # 5 errors: not dense
@example(edits={"a.py": 4}, errors=10, offset=0)  # exactly 20% repeat
@example(edits={"a.py": 4}, errors=11, offset=-1)  # 2/11 < 20%
def test_strict_stall_rule_at_every_boundary(engine: str, edits: dict[str, int], errors: int, offset: int) -> None:
    # the repeat count sits at the 20% line, ceil(errors/5), or one either side of it
    repeated = min(errors, max(0, -(-errors // 5) + offset))
    assert engine_stall(engine, edits, errors, repeated) is paper_stall(edits, errors, repeated)


# --- the trace judge: 0.7 confidence, and the second stuck verdict ends the task ---------------

CONFIDENCES = [Fraction(1, 2), Fraction(69, 100), Fraction(7, 10), Fraction(71, 100), Fraction(1)]


class ScriptJudge:
    """Answers from a script (cycled) and remembers at which turn it said what."""

    def __init__(self, script: list[tuple[bool, Fraction]]) -> None:
        self.script, self.asked = script, []

    def __call__(self, digest) -> Verdict:
        stuck, confidence = self.script[len(self.asked) % len(self.script)]
        self.asked.append((digest.counters.turns, stuck, confidence))
        return Verdict(stuck, confidence)


def writer(digest) -> RedirectText:
    return RedirectText("try another way")


LOOP = Step("sed -i 's/a/b/' a.py && pytest", "E   AssertionError: 1 != 2", 1)


@pytest.mark.parametrize("engine", ENGINES)
@RELAXED
@given(steps=st.lists(step_strategy, min_size=1, max_size=60),
       script=st.lists(st.tuples(st.booleans(), st.sampled_from(CONFIDENCES)), min_size=1, max_size=6))
@example(steps=[LOOP] * 30, script=[(True, Fraction(7, 10))])
@example(steps=[LOOP] * 30, script=[(True, Fraction(69, 100))])
@example(steps=[LOOP] * 30, script=[(False, Fraction(1)), (True, Fraction(1))])
def test_a_confident_stuck_verdict_redirects_and_the_second_ends_the_task(engine, steps, script) -> None:
    """No budget, so only the judge acts. At each turn the judge was asked: a stuck verdict
    with confidence >= 0.7 redirects the first time and stops the task the second time; any
    other verdict continues. Nothing else ever redirects or stops, and nothing follows a stop."""
    judge = ScriptJudge(script)
    decisions = guard_decisions(engine, steps, None, Params(), judge, writer)
    by_turn = {d.turn: d for d in decisions}
    confident = 0
    for turn, stuck, confidence in judge.asked:
        counts = stuck and confidence >= Fraction(7, 10)
        confident += counts
        expected = "continue" if not counts else ("redirect" if confident == 1 else "stop")
        assert (by_turn[turn].action, by_turn[turn].forced) == (expected, False)
    asked_turns = {turn for turn, _, _ in judge.asked}
    assert all(d.action == "continue" for d in decisions if d.turn not in asked_turns)
    stops = [d.turn for d in decisions if d.action == "stop"]
    assert stops in ([], [decisions[-1].turn])


# --- the tool judge: a failure keeps the tools loaded ------------------------------------------

CATALOG = ("bash", "read", "web", "notebook", "search")
CORE = ("bash", "read")


def quiet(tool_judge) -> Controllers:
    return Controllers(lambda r, i, d: ProposerAnswer(()), lambda d: Verdict(False), lambda d: RedirectText(""), tool_judge)


def failing(text, candidates) -> ToolJudgeAnswer:
    return ToolJudgeAnswer(None)


@pytest.mark.parametrize("engine", ENGINES)
@RELAXED
@given(tasks=st.lists(st.lists(st.sampled_from(CATALOG), min_size=1, max_size=3), min_size=1, max_size=10),
       streak=st.integers(1, 4), period=st.integers(2, 12), fails=st.lists(st.booleans(), min_size=10, max_size=10))
def test_a_failed_tool_judge_masks_no_more_than_the_evidence(engine, tasks, streak, period, fails) -> None:
    """With a judge that drops every candidate when it answers and fails when `fails` says so:
    on a task where it failed, the mask is exactly what the evidence alone masks (never called,
    not core, unused for `streak` tasks, not a re-audit), so every tool the judge was asked
    about stays loaded."""
    s = Stream(engine, Params(unused_streak=streak, reaudit_period=period), CATALOG, CORE)
    called: set[str] = set()
    unused = {name: 0 for name in CATALOG}
    for i, tools in enumerate(tasks, start=1):
        def judge(text, candidates, fail=fails[i - 1]):
            return ToolJudgeAnswer(None) if fail else ToolJudgeAnswer({c: False for c in candidates})
        record = s.feed(Trajectory(f"task-{i}", tuple(Step("ls", "", 0, t) for t in tools), True), quiet(judge))
        if fails[i - 1]:
            evidence = set() if i % period == 0 else {
                n for n in CATALOG if n not in CORE and n not in called and unused[n] >= streak}
            assert record.mask == evidence
        for name in CATALOG:
            unused[name] = 0 if name in tools else unused[name] + 1
        called |= set(tools)


# --- static regex admission --------------------------------------------------------------------

VARYING = st.sampled_from(["a+", "\\w*", "[ab]{1,}", "\\d+", ".+", "(?:ab)*", "\\s*x+"])
UNBOUNDED = st.sampled_from(["+", "*", "{2,}", "+?", "*?"])
LITERAL = st.text(alphabet="abcxyz:_ -", max_size=8).map(re.escape)


@st.composite
def inadmissible(draw) -> tuple[str, str]:
    """(pattern, the reason it must be refused for), the shape wrapped in random literals."""
    shape = draw(st.sampled_from(["nested", "ambiguous", "backreference", "too many", "too long", "broken"]))
    prefix, suffix = draw(LITERAL), draw(LITERAL)
    if shape == "nested":
        core, reason = f"(?:{draw(VARYING)}{draw(LITERAL)}){draw(UNBOUNDED)}", "backtrack catastrophically"
    elif shape == "ambiguous":
        word = draw(st.text(alphabet="abc", min_size=1, max_size=3))
        core, reason = f"(?:{word}|{word}{draw(st.text(alphabet='abc', max_size=2))}){draw(UNBOUNDED)}", "backtrack catastrophically"
    elif shape == "backreference":
        core, reason = f"(x{draw(LITERAL)})" + draw(st.sampled_from(["\\1", "(?P=n)"])), "back-references are not allowed"
        core = core.replace("(x", "(?P<n>x", 1) if core.endswith("(?P=n)") else core
    elif shape == "too many":
        core, reason = "".join(f"a{draw(st.sampled_from(['+', '*']))}b" for _ in range(5)), "unbounded repeats"
    elif shape == "too long":
        core, reason = "a" * 301, "longer than"
    else:
        core, reason = draw(st.sampled_from(["[ab", "(ab", "a{2,1}", "a)b", "x**"])), "does not compile"
    return prefix + core + suffix, reason


def proposer_controllers(pattern: str) -> Controllers:
    from economizer_spec.skills import SkillDefinition

    skill = SkillDefinition(id="probe", claim="c", injection="i", scope=Regex("RUN", "commands"),
                            confirm=Regex("GOOD", "outputs"), need=Regex(pattern), citations=("task-1", "task-2"))
    calls = {"n": 0}

    def proposer(repository, ids, digests):
        calls["n"] += 1
        return ProposerAnswer((skill,) if calls["n"] == 1 else ())

    return Controllers(proposer, lambda d: Verdict(False), lambda d: RedirectText(""), None)


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=60, deadline=None)
@given(case=inadmissible())
@example(case=("(a+)+$", "backtrack catastrophically"))
@example(case=("(x)\\1", "back-references are not allowed"))
def test_every_inadmissible_regex_shape_is_refused_with_its_reason(engine: str, case: tuple[str, str]) -> None:
    pattern, reason = case
    error = regex_error(pattern)
    assert error is not None and reason in error
    stream = Stream(engine, Params(proposer_first=2, proposer_period=10**6, proposer_window=2))
    for i in (1, 2):
        stream.feed(Trajectory(f"task-{i}", (Step("RUN", "GOOD"),), True), proposer_controllers(pattern))
    assert stream.skills() == {}
    (rejection,) = stream.rejections()
    assert rejection.reason == f"need detector rejected: {error}"
