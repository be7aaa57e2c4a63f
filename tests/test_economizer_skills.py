"""Micro-skill rules, each at its boundary, on the spec and on the implementation."""

from __future__ import annotations

from fractions import Fraction

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from economizer.bounded import BoundedMatcher
from economizer.controller import Controller
from economizer_spec import skills as rules
from economizer_spec.detectors import Regex, regex_error
from economizer_spec.guard import RedirectText, Verdict
from economizer_spec.params import Params
from economizer_spec.skills import Evidence, SkillDefinition, SkillState, Status
from economizer_spec.stream import Controllers, ProposerAnswer
from economizer_spec.trajectory import Step, Trajectory
from ledger_properties.economizer_engines import ENGINES, Stream

SKILL = SkillDefinition(
    id="run-tool",
    claim="RUN works",
    injection="Run things with RUN.",
    scope=Regex("RUN", "commands"),
    confirm=Regex("GOOD", "outputs"),
    contradict=Regex("BAD", "outputs"),
    need=Regex("WASTE", "commands"),
)
KINDS = {
    "confirm": (Step("RUN", "GOOD"),),
    "contradict": (Step("RUN", "BAD"),),
    "both": (Step("RUN", "GOOD and BAD"),),
    "neutral": (Step("RUN", "meh"),),
    "idle": (Step("ls", ""),),
    "confirm+waste": (Step("RUN", "GOOD"), Step("WASTE", "")),
}


def controllers(*answers: tuple[SkillDefinition, ...]) -> Controllers:
    """A proposer that returns `answers[k]` at its k-th call (then nothing)."""
    calls = {"n": 0}

    def proposer(repository, ids, digests):
        k = calls["n"]
        calls["n"] += 1
        return ProposerAnswer(answers[k] if k < len(answers) else ())

    return Controllers(proposer, lambda d: Verdict(False), lambda d: RedirectText(""), None)


def cite(definition: SkillDefinition, count: int) -> SkillDefinition:
    return attrs.evolve(definition, citations=tuple(f"task-{i}" for i in range(1, count + 1)))


def run(engine: str, params: Params, kinds: list[str], definition: SkillDefinition = SKILL) -> tuple[Stream, list]:
    """Tasks 1-2 confirm (so two citations verify), the proposer runs once after task 2,
    then `kinds` follow. Returns the stream and the skill's view after each later task."""
    params = attrs.evolve(params, proposer_first=2, proposer_period=10**6, proposer_window=2)
    stream = Stream(engine, params)
    ctl = controllers((cite(definition, 2),))
    views = []
    for i, kind in enumerate(["confirm", "confirm", *kinds], 1):
        stream.feed(Trajectory(f"task-{i}", KINDS[kind], True), ctl)
        if i >= 2:
            views.append(stream.skills().get(definition.id))
    return stream, views


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=25, deadline=None)
@given(c=st.integers(1, 6), extra=st.integers(0, 5))
def test_confirmed_exactly_at_c_confirmations(engine: str, c: int, extra: int) -> None:
    _, views = run(engine, Params(confirmations=c), ["confirm"] * extra)
    for confirmations, view in enumerate(views, 2):
        assert view["confirmations"] == confirmations
        assert (view["status"] == "confirmed") == (confirmations >= c)


@pytest.mark.parametrize("engine", ENGINES)
def test_contradiction_is_checked_before_confirmation(engine: str) -> None:
    _, views = run(engine, Params(confirmations=5), ["both"])
    assert (views[-1]["confirmations"], views[-1]["contradictions"]) == (2, 1)


@pytest.mark.parametrize("engine", ENGINES)
def test_retired_when_support_drops_below_zero_not_at_zero(engine: str) -> None:
    params = Params(confirmations=2, decay=1, contradiction_weight=1)
    _, views = run(engine, params, ["contradict", "contradict", "contradict"])
    assert [v["support"] for v in views] == [2, 1, 0, -1]
    assert [v["status"] for v in views] == ["confirmed", "confirmed", "confirmed", "retired"]
    assert views[-1]["retired_reason"] == "support below 0"


@pytest.mark.parametrize("engine", ENGINES)
def test_support_is_decayed_confirmations_minus_lambda_contradictions(engine: str) -> None:
    params = Params(confirmations=9, decay=Fraction(1, 2), contradiction_weight=3)
    _, views = run(engine, params, ["idle", "contradict", "idle"])
    # confirmations at tasks 1 and 2; now = 5: 1/16 + 1/8 - 3
    assert views[-1]["support"] == Fraction(1, 16) + Fraction(1, 8) - 3


@pytest.mark.parametrize("engine", ENGINES)
def test_high_stakes_retires_at_first_contradiction_once_confirmed_only(engine: str) -> None:
    risky = attrs.evolve(SKILL, high_stakes=True)
    _, views = run(engine, Params(confirmations=2, contradiction_weight=0), ["contradict"], risky)
    assert views[-1]["status"] == "retired" and views[-1]["retired_reason"] == "high-stakes skill contradicted"
    _, views = run(engine, Params(confirmations=4, contradiction_weight=0), ["contradict", "confirm"], risky)
    assert [v["status"] for v in views] == ["candidate", "candidate", "candidate"]


@pytest.mark.parametrize("engine", ENGINES)
def test_candidate_with_negative_support_stays_candidate_then_retires_after_next_task(engine: str) -> None:
    params = Params(confirmations=3, contradiction_weight=5)
    _, views = run(engine, params, ["contradict", "confirm", "neutral"])
    assert [v["status"] for v in views] == ["candidate", "candidate", "confirmed", "retired"]


@pytest.mark.parametrize("engine", ENGINES)
def test_retirement_is_permanent(engine: str) -> None:
    params = Params(confirmations=2, decay=1, contradiction_weight=5, proposer_first=2, proposer_period=1, proposer_window=2)
    stream = Stream(engine, params)
    ctl = controllers(*[(cite(SKILL, 2),)] * 20)
    kinds = ["confirm", "confirm", "contradict"] + ["confirm"] * 8
    for i, kind in enumerate(kinds, 1):
        record = stream.feed(Trajectory(f"task-{i}", KINDS[kind], True), ctl)
        if i > 3:
            assert record.injected == ()
    view = stream.skills()["run-tool"]
    assert view["status"] == "retired" and view["retired_at"] == 3 and view["confirmations"] == 2
    assert any(r.reason == "retired skills are permanent" for r in stream.rejections())


@pytest.mark.parametrize("engine", ENGINES)
def test_without_need_detector_every_exercised_task_is_needed(engine: str) -> None:
    _, views = run(engine, Params(), ["neutral", "idle", "contradict"], attrs.evolve(SKILL, need=None))
    assert views[-1]["needed"] == views[-1]["exercised"] == 4


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("wasteful, injected", [(1, True), (0, False)])
def test_need_gate_boundary(engine: str, wasteful: int, injected: bool) -> None:
    # 2 retro confirmations without waste, then 2 confirmations, `wasteful` of them with waste:
    # need rate 1/4 at the gate of 1/4 -> injected; 0/4 -> not.
    stream, _ = run(engine, Params(confirmations=2, need_gate=Fraction(1, 4)), ["confirm+waste"] * wasteful + ["confirm"] * (2 - wasteful))
    assert bool(stream.plan(controllers()).injected) is injected


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=10, deadline=None)
@given(first=st.integers(1, 6), period=st.integers(1, 6), window=st.integers(1, 9))
def test_proposer_schedule_and_window(engine: str, first: int, period: int, window: int) -> None:
    seen: list[tuple[str, ...]] = []

    def proposer(repository, ids, digests):
        seen.append(tuple(d.task_id for d in digests))
        return ProposerAnswer(())

    stream = Stream(engine, Params(proposer_first=first, proposer_period=period, proposer_window=window))
    ctl = Controllers(proposer, lambda d: Verdict(False), lambda d: RedirectText(""), None)
    expected = []
    for i in range(1, 16):
        stream.feed(Trajectory(f"task-{i}", KINDS["idle"], True), ctl)
        if i >= first and (i - first) % period == 0:
            expected.append(tuple(f"task-{j}" for j in range(max(1, i - window + 1), i + 1)))
    assert seen == expected


def test_paper_schedule_is_after_4_9_14() -> None:
    assert [i for i in range(1, 25) if rules.proposer_due(i, Params())] == [4, 9, 14, 19, 24]


@pytest.mark.parametrize("engine", ENGINES)
def test_at_most_max_proposals_per_call(engine: str) -> None:
    many = tuple(cite(attrs.evolve(SKILL, id=f"s-{k}"), 2) for k in range(6))
    params = Params(proposer_first=2, proposer_period=10**6, proposer_window=2, max_proposals=4)
    stream = Stream(engine, params)
    ctl = controllers(many)
    for i in (1, 2):
        stream.feed(Trajectory(f"task-{i}", KINDS["confirm"], True), ctl)
    assert sorted(stream.skills()) == ["s-0", "s-1", "s-2", "s-3"]
    assert [r.skill_id for r in stream.rejections()] == ["s-4", "s-5"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "citations, admitted",
    [
        (("task-1", "task-2"), True),
        (("task-1",), False),
        (("task-1", "task-1"), False),  # a task cited twice is one citation
        (("task-1", "task-9"), False),  # not in the window
        (("task-1", "task-3"), False),  # in the window, but confirm does not match there
    ],
)
def test_citations_are_verified(engine: str, citations: tuple[str, ...], admitted: bool) -> None:
    params = Params(proposer_first=3, proposer_period=10**6, proposer_window=3)
    stream = Stream(engine, params)
    ctl = controllers((attrs.evolve(SKILL, citations=citations),))
    for i, kind in enumerate(["confirm", "confirm", "idle"], 1):
        stream.feed(Trajectory(f"task-{i}", KINDS[kind], True), ctl)
    assert ("run-tool" in stream.skills()) is admitted


@pytest.mark.parametrize("engine", ENGINES)
def test_revision_may_change_only_the_contradict_detector(engine: str) -> None:
    params = Params(proposer_first=2, proposer_period=1, proposer_window=2)
    stream = Stream(engine, params)
    revised = attrs.evolve(SKILL, contradict=Regex("WORSE", "outputs"))
    reworded = attrs.evolve(SKILL, injection="Something else.")
    ctl = controllers((cite(SKILL, 2),), (revised,), (reworded,))
    for i in range(1, 5):
        stream.feed(Trajectory(f"task-{i}", KINDS["confirm"], True), ctl)
    view = stream.skills()["run-tool"]
    assert view["definition"].contradict == Regex("WORSE", "outputs")
    assert view["definition"].injection == SKILL.injection
    assert view["confirmations"] == 4  # the revision kept its history
    assert [r.reason for r in stream.rejections()] == ["a revision may change only the contradict detector"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("pattern", ["(a+)+$", "(\\w+\\s?)*x", "[unclosed", "(x)\\1"])
def test_inadmissible_regex_from_proposer_is_rejected_with_reason(engine: str, pattern: str) -> None:
    stream = Stream(engine, Params(proposer_first=2, proposer_period=10**6, proposer_window=2))
    ctl = controllers((cite(attrs.evolve(SKILL, need=Regex(pattern)), 2),))
    for i in (1, 2):
        stream.feed(Trajectory(f"task-{i}", KINDS["confirm"], True), ctl)
    assert stream.skills() == {}
    (rejection,) = stream.rejections()
    assert rejection.reason.startswith("need detector rejected:") and regex_error(pattern) in rejection.reason


def test_slow_regex_is_bounded_and_rejected() -> None:
    """Passes the static check (one unbounded repeat per segment) but is cubic on this input."""
    slow = r".*a.*a.*a.*b"
    assert regex_error(slow) is None
    blob = "a" * 1900
    params = Params(proposer_first=2, proposer_period=10**6, proposer_window=2)
    with BoundedMatcher(timeout=0.3) as matcher:
        controller = Controller("owner/repo", params=params, matcher=matcher)
        ctl = controllers((cite(attrs.evolve(SKILL, need=Regex(slow)), 2),))
        for i in (1, 2):
            controller.feed(Trajectory(f"task-{i}", (Step("RUN", "GOOD"), Step("x", blob)), True), ctl)
    assert controller.skills == {}
    assert "did not finish" in controller.rejections[0].reason


@settings(max_examples=60, deadline=None)
@given(
    injections=st.lists(st.text(st.characters(codec="ascii", categories=["L", "N", "P", "Zs"]), min_size=1, max_size=120), max_size=8),
    budget=st.integers(0, 700),
)
def test_manual_stays_within_its_budget(injections: list[str], budget: int) -> None:
    params = Params(need_gate=0)
    states = [
        SkillState(attrs.evolve(SKILL, id=f"s-{k}", injection=text), Status.CONFIRMED, (Evidence(1, True, True, False, True),), 1)
        for k, text in enumerate(injections)
    ]
    manual, ids = rules.render_manual("owner/repo", states, 1, params, budget)
    assert len(manual) <= budget
    assert all(f"- {s.definition.injection}" in manual.splitlines() for s in states if s.id in ids)
    if not ids:
        assert manual == ""


evidence = st.builds(Evidence, st.integers(0, 20), st.booleans(), st.booleans(), st.booleans(), st.booleans())


@settings(max_examples=100, deadline=None)
@given(log=st.lists(evidence, max_size=10), extra=evidence, now=st.integers(20, 30))
def test_support_is_monotone_in_evidence(log, extra, now) -> None:
    params = Params()
    base = SkillState(SKILL, Status.CONFIRMED, tuple(log), 0)
    more = attrs.evolve(base, evidence=base.evidence + (extra,))
    delta = rules.support(more, now, params) - rules.support(base, now, params)
    if extra.contradicted and not extra.confirmed:
        assert delta == -params.contradiction_weight
    elif extra.confirmed and not extra.contradicted:
        assert delta == params.decay ** (now - extra.task) > 0


@pytest.mark.parametrize("text", ["two\nlines", "sep\x1eparated", "para\u2029graph", "x" * 201, "   "])
def test_an_injection_must_be_one_short_printable_line(text: str) -> None:
    assert rules.definition_error(attrs.evolve(SKILL, injection=text)) is not None
    assert rules.definition_error(SKILL) is None


# --- the whole lifecycle as one property, rule by rule, on random task sequences ---------------

EVIDENCE_OF = {  # kind -> (exercised, confirmed, contradicted, needed by the WASTE need detector)
    "confirm": (1, 1, 0, 0),
    "contradict": (1, 0, 1, 0),
    "both": (1, 0, 1, 0),  # matches confirm and contradict: the contradiction wins
    "neutral": (1, 0, 0, 0),
    "idle": (0, 0, 0, 0),
    "confirm+waste": (1, 1, 0, 1),
}


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(sorted(EVIDENCE_OF)), max_size=12),
    c=st.integers(1, 4),
    decay=st.sampled_from([Fraction(1, 2), Fraction(9, 10), Fraction(1)]),
    weight=st.sampled_from([Fraction(0), Fraction(1), Fraction(5)]),
    gate=st.sampled_from([Fraction(0), Fraction(1, 4), Fraction(1, 2), Fraction(1)]),
    high_stakes=st.booleans(),
    no_need_detector=st.booleans(),
)
# The two boundaries a random draw may miss: support exactly 0 (not yet retired), a need rate
# exactly at the gate (injected).
@example(kinds=["contradict"] * 3, c=2, decay=Fraction(1), weight=Fraction(1), gate=Fraction(0), high_stakes=False, no_need_detector=False)
@example(kinds=["confirm+waste", "confirm", "confirm"], c=2, decay=Fraction(9, 10), weight=Fraction(5), gate=Fraction(1, 4), high_stakes=False, no_need_detector=False)
def test_lifecycle_rules_hold_after_every_task(
    engine: str, kinds: list[str], c: int, decay: Fraction, weight: Fraction, gate: Fraction, high_stakes: bool, no_need_detector: bool
) -> None:
    """Each rule of Table 5, checked between consecutive states on a random stream, against
    counts kept here from the kinds of the tasks: confirmation at exactly c, contradiction
    checked first, support = decayed confirmations - lambda * contradictions, retirement below
    0 or (high-stakes) at a contradiction once confirmed, retirement permanent, no need
    detector = every exercised task needed, injection only while the need rate clears the gate."""
    params = Params(confirmations=c, decay=decay, contradiction_weight=weight, need_gate=gate)
    definition = attrs.evolve(SKILL, high_stakes=high_stakes, need=None if no_need_detector else SKILL.need)
    _, views = run(engine, params, kinds, definition)
    confirming_tasks, contradicted, exercised, needed = [1, 2], 0, 2, (2 if no_need_detector else 0)
    previous = views[0]
    assert previous["status"] == ("confirmed" if c <= 2 else "candidate")  # admitted with 2 retro confirmations
    for task, (kind, view) in enumerate(zip(kinds, views[1:]), 3):
        if previous["status"] == "retired":
            assert {k: v for k, v in view.items() if k != "support"} == {k: v for k, v in previous.items() if k != "support"}
            previous = view
            continue
        ex, conf, contra, need = EVIDENCE_OF[kind]
        confirming_tasks += [task] * conf
        contradicted += contra
        exercised += ex
        needed += ex if no_need_detector else need
        assert (view["confirmations"], view["contradictions"], view["exercised"], view["needed"]) == (len(confirming_tasks), contradicted, exercised, needed)
        support = sum((decay ** (task - j) for j in confirming_tasks), Fraction(0)) - weight * contradicted
        assert view["support"] == support
        injectable = previous["status"] == "confirmed" and previous["exercised"] > 0 and Fraction(previous["needed"], previous["exercised"]) >= gate
        assert (task in view["injected_tasks"]) is injectable
        if previous["status"] == "confirmed":
            if high_stakes and contra:
                assert (view["status"], view["retired_at"], view["retired_reason"]) == ("retired", task, "high-stakes skill contradicted")
            elif support < 0:
                assert (view["status"], view["retired_at"], view["retired_reason"]) == ("retired", task, "support below 0")
            else:
                assert view["status"] == "confirmed"
        else:
            assert view["status"] == ("confirmed" if len(confirming_tasks) >= c else "candidate")
            assert view["confirmed_at"] == (task if view["status"] == "confirmed" else None)
        previous = view


CITABLE = ("task-1", "task-2", "task-3", "task-9")
"""Window tasks 1-2 confirm, 3 is idle (its citation does not verify), 9 is outside the window."""


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None)
@given(
    citations=st.lists(st.lists(st.sampled_from(CITABLE), max_size=4), max_size=7),
    limit=st.integers(1, 5),
    required=st.integers(1, 3),
    revisions=st.lists(st.tuples(st.integers(0, 6), st.sampled_from(["contradict", "injection", "need", "high_stakes"])), max_size=4),
)
# Revisions of an admitted skill need a lucky draw; these pin one of each kind, and a citation
# of the idle window task that must not verify.
@example(citations=[["task-1", "task-2"], ["task-2", "task-1"]], limit=4, required=2, revisions=[(0, "injection"), (1, "contradict")])
@example(citations=[["task-1", "task-3"], ["task-1", "task-2"]], limit=4, required=2, revisions=[(1, "need")])
def test_admission_rules_on_random_proposer_answers(engine, citations, limit, required, revisions) -> None:
    """One call proposes skills s-0, s-1, ... with drawn citations: exactly the first `limit`
    are considered, and one is admitted iff at least `required` distinct cited tasks are in
    the window and match its confirm detector. A second call revises admitted ids: accepted
    iff only the contradict detector changed, and the skill keeps its evidence."""
    params = Params(proposer_first=3, proposer_period=1, proposer_window=3, max_proposals=limit, min_citations=required)
    first = tuple(attrs.evolve(SKILL, id=f"s-{k}", citations=tuple(cited)) for k, cited in enumerate(citations))
    changed = {
        "contradict": {"contradict": Regex("WORSE", "outputs")},
        "injection": {"injection": "Something else."},
        "need": {"need": None},
        "high_stakes": {"high_stakes": True},
    }
    second = tuple(attrs.evolve(first[k], **changed[field]) for k, field in revisions if k < len(first))
    stream = Stream(engine, params)
    ctl = controllers(first, second)
    for i, kind in enumerate(["confirm", "confirm", "idle"], 1):
        stream.feed(Trajectory(f"task-{i}", KINDS[kind], True), ctl)
    expected = [f"s-{k}" for k, cited in enumerate(citations[:limit]) if len({c for c in cited if c in ("task-1", "task-2")}) >= required]
    assert sorted(stream.skills()) == sorted(expected)
    assert [r.skill_id for r in stream.rejections()] == [f"s-{k}" for k in range(len(citations)) if f"s-{k}" not in expected]
    before, rejected_before = stream.skills(), len(stream.rejections())
    stream.feed(Trajectory("task-4", KINDS["idle"], True), ctl)
    after = stream.skills()
    refused = [r.skill_id for r in stream.rejections()[rejected_before:] if r.reason == "a revision may change only the contradict detector"]
    seen: set[str] = set()
    for position, revision in enumerate(second):
        name = revision.id
        if position >= limit or name in seen or name not in before:
            continue  # over the limit, proposed twice, or a new id (checked above)
        seen.add(name)
        accepted = revision.injection == SKILL.injection and revision.need == SKILL.need and revision.high_stakes == SKILL.high_stakes
        assert (after[name]["definition"].contradict == revision.contradict) is (accepted or revision.contradict == SKILL.contradict)
        assert after[name]["confirmations"] == before[name]["confirmations"]
        assert (name in refused) is not accepted
        if not accepted:
            assert after[name]["definition"] == before[name]["definition"]
