"""Driving the reference spec through a fixed list of steps: govern, then advance.

Harnesses that replay a scripted session through `ledger_spec` alone (the spec properties,
the Z3 conformance check, the rule-by-rule tests) go through `take_step` and `replay_spec`, so
the order of the two calls, and what `advance` is given (the decision, the step's result, the
fingerprints, the session's policy), are written once. Generated sessions that hold the
optimized ledger against the spec use the state machine in `properties.differential`.
"""

from __future__ import annotations

from typing import Generic, Iterable, Iterator, NamedTuple, Protocol, TypeVar

from ledger_spec import INITIAL, STEADY, Changes, Command, Decision, Fingerprint, Policy, State, advance, govern


class SpecStep(Protocol):
    """What a scripted step must say: the command proposed and what running it produced."""

    @property
    def command(self) -> Command: ...

    @property
    def output(self) -> str: ...

    @property
    def exit_status(self) -> int: ...

    @property
    def changes(self) -> Changes: ...


StepT = TypeVar("StepT", bound=SpecStep)


class Transition(NamedTuple, Generic[StepT]):
    """One step of a session: the state before, the step, govern's answer, the state after."""

    before: State
    step: StepT
    decision: Decision
    after: State


def take_step(
    state: State,
    step: StepT,
    policy: Policy,
    *,
    decision: Decision | None = None,
    fingerprint: Fingerprint | None = STEADY,
    recorded_fingerprint: Fingerprint | None = STEADY,
) -> Transition[StepT]:
    """Govern `step.command` on `state` (given the fingerprint taken now) unless the caller
    already holds the `decision` to record, then advance with the step's result."""
    if decision is None:
        decision = govern(state, step.command, policy, fingerprint)
    after = advance(
        state, step.command, decision, step.output, step.exit_status, step.changes, recorded_fingerprint, policy
    )
    return Transition(state, step, decision, after)


def replay_spec(steps: Iterable[StepT], policy: Policy, state: State = INITIAL) -> Iterator[Transition[StepT]]:
    """Every step of `steps` in turn from `state`, under a steady fingerprint, lazily."""
    for step in steps:
        transition = take_step(state, step, policy)
        yield transition
        state = transition.after
