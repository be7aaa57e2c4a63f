"""Tool pruning, cost attribution and stream causality, on the spec and the implementation."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from economizer_spec.cost import ControllerCall, Prices, Usage, cost, task_cost
from economizer_spec.guard import RedirectText, Verdict
from economizer_spec.params import Params
from economizer_spec.stream import Controllers, ProposerAnswer, ToolJudgeAnswer
from economizer_spec.trajectory import Step, Trajectory
from ledger_properties.economizer_engines import ENGINES, Stream
from ledger_properties.economizer_strategies import params_strategy, seeded_controllers, streams

CATALOG = ("bash", "read", "edit", "web", "notebook")
CORE = ("bash", "read", "edit")
RELAXED = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def quiet(tool_judge=None) -> Controllers:
    return Controllers(lambda r, i, d: ProposerAnswer(()), lambda d: Verdict(False), lambda d: RedirectText(""), tool_judge)


def task(i: int, *tools: str) -> Trajectory:
    return Trajectory(f"task-{i}", tuple(Step("ls", "", 0, tool) for tool in (tools or ("bash",))), True)


@pytest.mark.parametrize("engine", ENGINES)
@RELAXED
@given(stream=streams(max_size=12), params=params_strategy, seed=st.integers(0, 10**6))
def test_core_and_ever_called_tools_are_never_masked(engine, stream, params, seed) -> None:
    s = Stream(engine, params, CATALOG, CORE)
    called: set[str] = set()
    for trajectory in stream:
        record = s.feed(trajectory, seeded_controllers(seed))
        assert not record.mask & set(CORE)
        assert not record.mask & called
        called |= {step.tool for step in trajectory.steps}


@pytest.mark.parametrize("engine", ENGINES)
def test_unused_streak_of_three_masks_and_reaudit_loads_all(engine: str) -> None:
    s = Stream(engine, Params(unused_streak=3, reaudit_period=10), CATALOG, CORE)
    masks = [s.feed(task(i), quiet()).mask for i in range(1, 13)]
    never = frozenset({"web", "notebook"})
    # streak after task i-1 is i-1: masked from task 4 on, except the re-audit task 10
    assert masks == [frozenset()] * 3 + [never] * 6 + [frozenset()] + [never] * 2


@pytest.mark.parametrize("engine", ENGINES)
def test_a_call_resets_the_streak_and_protects_forever(engine: str) -> None:
    s = Stream(engine, Params(unused_streak=2, reaudit_period=100), CATALOG, CORE)
    s.feed(task(1), quiet())
    s.feed(task(2, "bash", "web"), quiet())
    assert s.tools()["web"] == (True, 0)
    assert s.tools()["notebook"] == (False, 2)
    masks = [s.feed(task(i), quiet()).mask for i in range(3, 9)]
    assert all(m == {"notebook"} for m in masks)


@pytest.mark.parametrize("engine", ENGINES)
def test_tool_judge_drops_candidates_failure_keeps_them_no_call_on_reaudit(engine: str) -> None:
    asked = []

    def judge(text, candidates):
        asked.append(candidates)
        return ToolJudgeAnswer({"web": False, "notebook": True})

    def failing(text, candidates):
        return ToolJudgeAnswer(None)

    s = Stream(engine, Params(unused_streak=50, reaudit_period=2), CATALOG, CORE)
    first = s.feed(task(1), quiet(judge))
    second = s.feed(task(2), quiet(judge))  # re-audit
    third = s.feed(task(3), quiet(failing))
    assert first.mask == {"web"} and [c.kind for c in first.calls] == ["tool_judge"]
    assert second.mask == frozenset() and second.calls == ()
    assert third.mask == frozenset()
    assert asked == [("web", "notebook")]


@pytest.mark.parametrize("engine", ENGINES)
@RELAXED
@given(stream=streams(max_size=8), seed=st.integers(0, 10**6))
def test_the_mask_is_fixed_before_the_task(engine, stream, seed) -> None:
    s = Stream(engine, Params(unused_streak=1), CATALOG, CORE)
    for trajectory in stream:
        planned = s.plan(seeded_controllers(seed))
        assert s.plan(seeded_controllers(seed)) == planned  # planning changes nothing
        record = s.feed(trajectory, seeded_controllers(seed))
        assert record.mask == planned.mask and record.injected == planned.injected


# --- cost --------------------------------------------------------------------------------------

usages = st.builds(Usage, *[st.integers(0, 10**7)] * 4)
prices = st.builds(Prices, *[st.fractions(0, 100, max_denominator=100)] * 4)


@settings(max_examples=100, deadline=None)
@given(usage=usages, price=prices, field=st.sampled_from(["uncached_input", "cache_read", "cache_write", "output"]),
       delta=st.fractions(0, 10, max_denominator=10))
def test_each_token_class_has_its_own_price(usage, price, field, delta) -> None:
    import attrs

    bumped = attrs.evolve(price, **{field: getattr(price, field) + delta})
    assert cost(usage, bumped) - cost(usage, price) == getattr(usage, field) * delta / 1_000_000


@settings(max_examples=50, deadline=None)
@given(agent=usages, calls=st.lists(usages, max_size=5), price=prices)
def test_task_cost_is_agent_plus_every_controller_call(agent, calls, price) -> None:
    charged = [ControllerCall("trace_judge", u) for u in calls]
    total = agent
    for u in calls:
        total = total + u
    assert task_cost(agent, charged, price) == cost(total, price)


@pytest.mark.parametrize("engine", ENGINES)
@RELAXED
@given(stream=streams(max_size=12), params=params_strategy, seed=st.integers(0, 10**6))
def test_controller_calls_are_charged_to_the_task_that_triggered_them(engine, stream, params, seed) -> None:
    s = Stream(engine, params, CATALOG, CORE)
    for i, trajectory in enumerate(stream, 1):
        record = s.feed(trajectory, seeded_controllers(seed))
        kinds = [c.kind for c in record.calls]
        due = i >= params.proposer_first and (i - params.proposer_first) % params.proposer_period == 0
        assert kinds.count("proposer") == int(due)
        assert kinds.count("redirect_writer") == sum(d.action == "redirect" for d in record.decisions)
        if "proposer" in kinds:
            assert kinds[-1] == "proposer"  # after the task, so after its guard calls


@pytest.mark.parametrize("engine", ENGINES)
@RELAXED
@given(stream=streams(min_size=2, max_size=10), params=params_strategy, seed=st.integers(0, 10**6), data=st.data())
def test_no_decision_depends_on_a_later_task(engine, stream, params, seed, data) -> None:
    cut = data.draw(st.integers(1, len(stream)))
    full, prefix = Stream(engine, params, CATALOG, CORE), Stream(engine, params, CATALOG, CORE)
    all_records = [full.feed(t, seeded_controllers(seed)) for t in stream]
    assert [prefix.feed(t, seeded_controllers(seed)) for t in stream[:cut]] == all_records[:cut]


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=40, deadline=None)
@given(
    calls=st.lists(st.sets(st.sampled_from(CATALOG[1:])), max_size=14),
    unused=st.integers(1, 4),
    period=st.integers(2, 6),
)
@example(calls=[set()] * 5, unused=3, period=100)  # the paper's streak: masked from task 4 exactly
def test_pruning_rules_hold_before_every_task(engine: str, calls: list[set[str]], unused: int, period: int) -> None:
    """The pruning rules on random call histories, against streaks kept here: a call resets a
    tool's streak and marks it called for good; before task i the mask is exactly the non-core,
    never-called tools whose streak reached `unused`, and nothing on a re-audit (i a multiple
    of R). With no tool judge, nothing else is ever masked."""
    s = Stream(engine, Params(unused_streak=unused, reaudit_period=period), CATALOG, CORE)
    streak = {name: 0 for name in CATALOG}
    ever = {name: False for name in CATALOG}
    for i, called in enumerate(calls, 1):
        expected = frozenset() if i % period == 0 else frozenset(
            n for n in CATALOG if n not in CORE and not ever[n] and streak[n] >= unused
        )
        record = s.feed(task(i, "bash", *sorted(called)), quiet())
        assert record.mask == expected
        for name in CATALOG:
            used = name == "bash" or name in called
            streak[name] = 0 if used else streak[name] + 1
            ever[name] = ever[name] or used
        assert s.tools() == {n: (ever[n], streak[n]) for n in CATALOG}
