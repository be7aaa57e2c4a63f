"""The one session driver over the reference spec: govern, run (or not), then advance.

Every harness that feeds a session to `ledger_spec` goes through `drive_step` (one step) or
`drive` (a list of steps), so the order of the calls, and what `advance` is given (the
decision, the step's result, the fingerprints, the session's policy), are written once:

  1. changes noticed since the last step (`changes_before`) are recorded with `modify`;
  2. `govern` answers the proposed command (unless the caller holds the decision already);
  3. `execute(proposal, decision)` says what happened under that answer: what the command
     printed and changed, or, for a Reuse, whatever the harness wants to compare the reused
     output with (the spec ignores a reused step's result);
  4. `advance` records it.

The callers differ only in `execute`: a fixed script returns its own recorded result
(`take_step`, `replay_spec`: the spec properties, the Z3 conformance check, the rule-by-rule
tests); the world-model safety property runs the command against a model file system
(`spec_run.first_stale_reuse`); the hunt's oracle returns what the Runtime really ran
(`oracle.CheckedSession`). Generated sessions that hold the optimized ledger against the spec
use the state machine in `ledger_properties.differential`, which advances the spec through
`take_step` too.
"""

from __future__ import annotations

from typing import Callable, Generic, Iterable, Iterator, NamedTuple, Protocol, TypeVar

from ledger_spec import (
    INITIAL,
    STEADY,
    Changes,
    Command,
    Decision,
    Fingerprint,
    Policy,
    State,
    advance,
    govern,
    modify,
)


class Proposal(Protocol):
    """What a harness proposes at a step: at least the command."""

    @property
    def command(self) -> Command: ...


class SpecStep(Proposal, Protocol):
    """A step that ran (or was reused): the command recorded and what running it produced."""

    @property
    def output(self) -> str: ...

    @property
    def exit_status(self) -> int: ...

    @property
    def changes(self) -> Changes: ...


ProposalT = TypeVar("ProposalT", bound=Proposal)
StepT = TypeVar("StepT", bound=SpecStep)


class Transition(NamedTuple, Generic[StepT]):
    """One step of a session: the state govern saw, the step as run, govern's answer, the
    state after."""

    before: State
    step: StepT
    decision: Decision
    after: State


def drive_step(
    state: State,
    proposal: ProposalT,
    policy: Policy,
    execute: Callable[[ProposalT, Decision], StepT],
    *,
    decision: Decision | None = None,
    fingerprint: Fingerprint | None = STEADY,
    recorded_fingerprint: Fingerprint | None = STEADY,
    changes_before: Iterable[Changes] = (),
) -> Transition[StepT]:
    """Record `changes_before`, govern `proposal.command` (given the fingerprint taken now)
    unless the caller already holds the `decision`, let `execute` say what happened under it,
    and advance with that result (its command is the one recorded: a harness may record a
    command without its target when its result cannot be vouched for)."""
    for changes in changes_before:
        state = modify(state, changes)
    if decision is None:
        decision = govern(state, proposal.command, policy, fingerprint)
    ran = execute(proposal, decision)
    after = advance(
        state, ran.command, decision, ran.output, ran.exit_status, ran.changes, recorded_fingerprint, policy
    )
    return Transition(state, ran, decision, after)


def drive(
    proposals: Iterable[ProposalT],
    policy: Policy,
    execute: Callable[[ProposalT, Decision], StepT],
    state: State = INITIAL,
) -> Iterator[Transition[StepT]]:
    """`drive_step` over every proposal in turn from `state`, under a steady fingerprint,
    lazily (a caller that stops early runs no further step)."""
    for proposal in proposals:
        transition = drive_step(state, proposal, policy, execute)
        yield transition
        state = transition.after


def _scripted(step: StepT, decision: Decision) -> StepT:
    """A fixed script's step: its result is recorded in it, whatever govern answered."""
    return step


def take_step(
    state: State,
    step: StepT,
    policy: Policy,
    *,
    decision: Decision | None = None,
    fingerprint: Fingerprint | None = STEADY,
    recorded_fingerprint: Fingerprint | None = STEADY,
) -> Transition[StepT]:
    """`drive_step` for a scripted step, whose result is known before govern answers."""
    return drive_step(
        state, step, policy, _scripted, decision=decision, fingerprint=fingerprint,
        recorded_fingerprint=recorded_fingerprint,
    )


def replay_spec(steps: Iterable[StepT], policy: Policy, state: State = INITIAL) -> Iterator[Transition[StepT]]:
    """Every step of a fixed script in turn from `state`, under a steady fingerprint, lazily."""
    return drive(steps, policy, _scripted, state)
