"""The core properties of the reference specification over abstract sessions, runnable anywhere.

Each property is a check over drawn arguments plus the strategy that draws them. `as_test`
turns one into a Hypothesis test (pytest calls it that way) and `run_spec_properties` runs
them all for `ledger verify`, so both run the same definition.
"""

from __future__ import annotations

from typing import Callable, Sequence

import attrs
import hypothesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_spec import (
    INITIAL,
    READ_ONLY,
    Allow,
    Changes,
    FileTarget,
    Nudge,
    Observation,
    Policy,
    Reuse,
    State,
    TreeTarget,
    current,
    interventions,
    render,
)

from .spec_driver import Transition, drive, replay_spec, take_step
from .strategies import DEFAULT_KEYS, Step, policies, sessions
from .world_model import Detector, FileSystem, ModelWorld, WorldStep, complete_detector, world_sessions


@attrs.frozen
class SpecProperty:
    """A named property: `check(*args)` raises AssertionError when `args` violate it."""

    name: str
    arguments: st.SearchStrategy[tuple[object, ...]]
    check: Callable[..., None]


def replay(script: Sequence[Step], policy: Policy) -> list[Transition[Step]]:
    """Govern and advance every step of `script`: (before, step, decision, after) per step."""
    return list(replay_spec(script, policy))


def _counters(state: State) -> tuple[int, int, tuple[int, ...]]:
    return state.total, state.wildcard, tuple(state.local(key) for key in DEFAULT_KEYS)


# --- properties over abstract sessions ----------------------------------------------------


def check_counters_never_decrease(script: list[Step], policy: Policy) -> None:
    for before, _, _, after in replay(script, policy):
        old_total, old_wildcard, old_locals = _counters(before)
        new_total, new_wildcard, new_locals = _counters(after)
        assert new_total >= old_total and new_wildcard >= old_wildcard, (before, after)
        assert all(new >= old for old, new in zip(old_locals, new_locals)), (old_locals, new_locals)


def check_local_and_wildcard_bounded_by_total(script: list[Step], policy: Policy) -> None:
    for _, _, _, after in replay(script, policy):
        total, wildcard, locals_ = _counters(after)
        assert wildcard <= total, (wildcard, total)
        assert all(local <= total for local in locals_), (locals_, total)


def check_counters_move_exactly_as_reported(script: list[Step], policy: Policy) -> None:
    """A step that changed nothing (or was not run) changes no counter; any other step adds
    one to G, one to each reported L[k], and one to W if its scope was unknown."""
    for before, step, decision, after in replay(script, policy):
        total, wildcard, locals_ = _counters(before)
        if isinstance(decision, Reuse) or step.changes.empty:
            assert _counters(after) == (total, wildcard, locals_), (step, decision)
            continue
        expected_locals = tuple(
            local + (key in step.changes.paths) for key, local in zip(DEFAULT_KEYS, locals_)
        )
        assert _counters(after) == (total + 1, wildcard + step.changes.unknown, expected_locals), step


def _independently_current(observation: Observation, changes_log: list[tuple[int, Changes]]) -> bool:
    target = observation.command.target
    for step_number, changes in changes_log:
        if step_number <= observation.step:
            continue
        if isinstance(target, TreeTarget) or changes.unknown:
            return False
        if isinstance(target, FileTarget) and target.key in changes.paths:
            return False
    return True


def check_current_exactly_when_nothing_it_depends_on_changed(script: list[Step], policy: Policy) -> None:
    """Currentness against a log kept here from the script, not from the state's own log."""
    changes_log: list[tuple[int, Changes]] = []
    for number, (_, step, decision, after) in enumerate(replay(script, policy)):
        if not isinstance(decision, Reuse) and not step.changes.empty:
            changes_log.append((number, step.changes))
        for observation in after.observations:
            assert current(observation, after) == _independently_current(observation, changes_log), (
                observation,
                changes_log,
            )


def check_reuse_only_for_read_only_commands_with_a_target(script: list[Step], policy: Policy) -> None:
    for before, step, decision, _ in replay(script, policy):
        if isinstance(decision, Reuse):
            assert step.command.category in READ_ONLY, step.command
            assert step.command.target is not None, step.command
            assert current(decision.observation, before), decision.observation


def check_allow_and_nudge_never_withhold(script: list[Step], policy: Policy) -> None:
    """An Allowed or Nudged step is recorded exactly as if it ran: its changes, its exit status,
    and, for a read-only command that changed nothing, its own output."""
    for before, step, decision, after in replay(script, policy):
        if isinstance(decision, Reuse):
            continue
        assert isinstance(decision, (Allow, Nudge)), decision
        assert after.history[-1].exit_status == step.exit_status
        assert after.history[-1].verdict is decision.verdict
        executed = take_step(before, step, policy, decision=Allow()).after
        assert after.modifications == executed.modifications
        assert after.observations == executed.observations
        if step.command.read_only and step.command.target is not None and step.changes.empty:
            recorded = after.observations[-1]
            assert recorded.step == before.step, recorded
            # Under a small `stored_output_limit` the output may be evicted at once; if held,
            # it is the step's own.
            assert recorded.output == step.output or not recorded.retained, (recorded, step)


def check_intervention_cap_respected(script: list[Step], policy: Policy) -> None:
    for before, _, decision, after in replay(script, policy):
        assert interventions(after) <= policy.intervention_cap, (interventions(after), policy)
        if interventions(before) >= policy.intervention_cap:
            assert isinstance(decision, Allow), decision


def check_view_within_budget_and_deterministic(script: list[Step], policy: Policy, task: str) -> None:
    """Within budget at every step; and a state rebuilt from the same events, with every set of
    changed keys built in another order, renders the same text."""
    transitions = replay(script, policy)
    for _, _, _, after in transitions:
        view = render(after, policy, task)
        assert len(view) <= policy.view_budget, (len(view), policy.view_budget)
    final = transitions[-1][3] if transitions else INITIAL
    rebuilt = INITIAL
    for _, step, decision, _ in transitions:
        rebuilt = take_step(rebuilt, attrs.evolve(step, changes=_reordered(step.changes)), policy, decision=decision).after
    assert rebuilt == final
    assert render(rebuilt, policy, task) == render(final, policy, task)


def _reordered(changes: Changes) -> Changes:
    return Changes(frozenset(sorted(changes.paths, reverse=True)), changes.unknown)


# --- world-model safety -------------------------------------------------------------------


def first_stale_reuse(
    files: FileSystem, script: Sequence[WorldStep], policy: Policy, detector: Detector
) -> str | None:
    """Drive the spec over `script` against the model file system; describe the first Reuse
    whose output or exit status differs from what running the command now would print."""
    world = ModelWorld(files, detector)
    for number, (_, ran, decision, _) in enumerate(drive(script, policy, world.execute)):
        if isinstance(decision, Reuse) and (decision.output, decision.exit_status) != (ran.output, ran.exit_status):
            return (
                f"step {number}: {ran.command.text!r} reused step {decision.observation.step} "
                f"({decision.output!r}, exit {decision.exit_status}) but running it prints "
                f"({ran.output!r}, exit {ran.exit_status})"
            )
    return None


def check_reuse_is_safe_with_a_complete_detector(world: tuple[dict[str, str], list[WorldStep]], policy: Policy) -> None:
    files, script = world
    stale = first_stale_reuse(files, script, policy, complete_detector)
    assert stale is None, stale


def full_reuse_policies() -> st.SearchStrategy[Policy]:
    """Policies whose Reuse returns the stored output itself, so it can be compared."""
    return policies().map(lambda policy: attrs.evolve(policy, reuse_mode="full"))


_ABSTRACT = st.tuples(sessions(), policies())

PROPERTIES: tuple[SpecProperty, ...] = (
    SpecProperty("counters never decrease", _ABSTRACT, check_counters_never_decrease),
    SpecProperty("L[k] <= G and W <= G", _ABSTRACT, check_local_and_wildcard_bounded_by_total),
    SpecProperty("counters move exactly as reported", _ABSTRACT, check_counters_move_exactly_as_reported),
    SpecProperty(
        "current exactly when nothing it depends on changed",
        _ABSTRACT,
        check_current_exactly_when_nothing_it_depends_on_changed,
    ),
    SpecProperty("reuse only for read-only targets", _ABSTRACT, check_reuse_only_for_read_only_commands_with_a_target),
    SpecProperty("allow and nudge never withhold", _ABSTRACT, check_allow_and_nudge_never_withhold),
    SpecProperty("intervention cap respected", _ABSTRACT, check_intervention_cap_respected),
    SpecProperty(
        "view within budget and deterministic",
        st.tuples(sessions(), policies(), st.text(max_size=200)),
        check_view_within_budget_and_deterministic,
    ),
    SpecProperty(
        "world-model safety (complete detector)",
        st.tuples(world_sessions(), full_reuse_policies()),
        check_reuse_is_safe_with_a_complete_detector,
    ),
)


def as_test(prop: SpecProperty, *, max_examples: int, seed: int | None = None) -> Callable[[], None]:
    """A fresh Hypothesis test of `prop`; calling it raises on the minimal counterexample."""

    @settings(
        max_examples=max_examples,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(prop.arguments)
    def test(arguments: tuple[object, ...]) -> None:
        prop.check(*arguments)

    return hypothesis.seed(seed)(test) if seed is not None else test


def run_spec_properties(max_examples: int, seed: int | None = None) -> list[tuple[str, bool, str]]:
    """Run every core property; (name, held, message) each, message empty when it held."""
    if max_examples < 1:
        raise ValueError(f"max_examples must be at least 1, got {max_examples!r}")
    results: list[tuple[str, bool, str]] = []
    for prop in PROPERTIES:
        try:
            as_test(prop, max_examples=max_examples, seed=seed)()
        except Exception as error:  # noqa: BLE001 - any failure of a property is its verdict
            notes = "\n".join(getattr(error, "__notes__", ()))
            results.append((prop.name, False, f"{type(error).__name__}: {error}\n{notes}".strip()))
        else:
            results.append((prop.name, True, ""))
    return results
