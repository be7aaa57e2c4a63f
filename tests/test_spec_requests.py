"""What a caller says of one call (`ledger_spec.Request`) narrows govern, in the spec itself.

Three refusals used to live in the durable session and the agent adapters, where neither the
proofs nor the differential saw them; they are govern's rules now, and these tests pin each one
on a state built with the spec's own events. The Z3 theorem `govern-reuse-as-requested` and the
differential (`properties/differential.py`, which draws requests) cover them on every state.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_spec import (
    INITIAL,
    Allow,
    Category,
    Changes,
    Command,
    FileTarget,
    LineRange,
    Nudge,
    Policy,
    Request,
    Reuse,
    advance,
    govern,
    start,
)
from ledger_spec.values import PLAIN, WHOLE_FILE
from ledger_properties.spec_driver import replay_spec
from ledger_properties.strategies import Step, policies, sessions

POLICY = Policy()


def read(lines: LineRange = WHOLE_FILE) -> Command:
    normalized = f"{PLAIN} {lines.start},{lines.end} a.py"
    return Command(normalized, normalized, Category.READ, FileTarget("a.py", lines, PLAIN))


def observed(command: Command, output: str) -> object:
    return advance(INITIAL, command, Allow(), output, 0, Changes(), policy=POLICY)


def test_a_call_whose_name_is_in_flight_is_never_served() -> None:
    state = start(observed(read(), "a\nb\n"), "t1", read(), Allow())
    assert isinstance(govern(state, read(), POLICY, request=Request(call="t2")), Reuse)
    assert not isinstance(govern(state, read(), POLICY, request=Request(call="t1")), Reuse)


def test_a_rendered_output_serves_only_the_same_command() -> None:
    state = observed(read(LineRange(1, 4)), "a\nb\nc\nd\n")
    narrower = read(LineRange(2, 3))
    served = govern(state, narrower, POLICY)
    assert isinstance(served, Reuse) and served.output == "b\nc\n"
    assert isinstance(govern(state, narrower, POLICY, request=Request(same_command_only=True)), Allow)
    same = govern(state, read(LineRange(1, 4)), POLICY, request=Request(same_command_only=True))
    assert isinstance(same, Reuse) and same.output == "a\nb\nc\nd\n"


def test_a_call_the_agent_must_run_gets_a_nudge_naming_the_step_and_runs() -> None:
    state = observed(read(), "a\nb\n")
    decision = govern(state, read(), POLICY, request=Request(call="t1", withhold=False))
    assert decision == Nudge("[ledger] Unchanged since step 1: you already saw this result then.")
    running = start(state, "t1", read(), decision)  # a Nudge starts like any call that runs
    assert running.pending[0].decision == decision


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=sessions(max_steps=20), policy=policies(), data=st.data())
def test_a_request_only_ever_narrows_what_govern_answers(
    script: list[Step], policy: Policy, data: st.DataObject
) -> None:
    """Whatever the request, govern never serves what the default request would not, and a
    call that must run is never withheld; a Reuse the default would give becomes a Nudge."""
    state = INITIAL
    for transition in replay_spec(script, policy):
        state = transition.after
    request = Request(same_command_only=data.draw(st.booleans()), withhold=data.draw(st.booleans()))
    for step in script:
        plain = govern(state, step.command, policy)
        asked = govern(state, step.command, policy, request=request)
        if isinstance(asked, Reuse):
            assert request.withhold and isinstance(plain, Reuse)
            if request.same_command_only:
                assert asked.observation.command.normalized == step.command.normalized
        if not request.withhold and isinstance(plain, Reuse) and not request.same_command_only:
            assert isinstance(asked, Nudge) and f"step {plain.observation.step + 1}:" in asked.note
