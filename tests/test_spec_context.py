"""The context epoch (`ledger_spec.context`) against the meaning it stands for, read off the
event sequence: a reference is served only for a result that reached the model in full with
nothing since that may have removed it, and (so the rule is not vacuous) it is served whenever
the newest delivery of the step is such a result."""

from __future__ import annotations

from typing import Union

import attrs
from hypothesis import given, strategies as st

from ledger_spec.context import INITIAL_CONTEXT, Context, answer, attend, begin_epoch, deliver, may_reference


@attrs.frozen
class Deliver:
    owner: str
    step: int
    full: bool


@attrs.frozen
class NewEpoch:  # compaction, clear, resume
    owner: str


@attrs.frozen
class Ask:  # a Reuse of `step` to answer
    owner: str
    step: int
    verbatim_full: bool


Event = Union[Deliver, NewEpoch, Ask]
owners = st.sampled_from(["session-a", "session-a/agent-1", "session-b"])
steps = st.integers(0, 3)
events = st.lists(
    st.one_of(
        st.builds(Deliver, owners, steps, st.booleans()),
        st.builds(NewEpoch, owners),
        st.builds(Ask, owners, steps, st.booleans()),
    ),
    max_size=12,
)


def _apply(context: Context, event: Event) -> tuple[Context, str | None]:
    if isinstance(event, Deliver):
        return deliver(attend(context, event.owner), event.step, full=event.full), None
    if isinstance(event, NewEpoch):
        return begin_epoch(context, event.owner), None
    kind, context = answer(context, event.owner, event.step, verbatim_full=event.verbatim_full)
    return context, kind


def _held(history: list[tuple[Event, str | None]], owner: str, step: int) -> bool:
    """Read off the sequence: the newest delivery of `step` to `owner` (deliver, or verbatim
    answer) was full, and since it no new epoch and no event from any other owner."""
    for event, kind in reversed(history):
        if event.owner != owner or isinstance(event, NewEpoch):
            return False
        delivered = isinstance(event, Deliver) or kind == "verbatim"
        if delivered and event.step == step:
            return event.full if isinstance(event, Deliver) else event.verbatim_full
    return False


@given(events)
def test_a_reference_is_served_exactly_when_the_result_is_held_in_full(sequence: list[Event]) -> None:
    context, history = INITIAL_CONTEXT, []
    for event in sequence:
        held = isinstance(event, Ask) and _held(history, event.owner, event.step)
        context, kind = _apply(context, event)
        if isinstance(event, Ask):
            assert (kind == "reference") == held, (history, event)
        history.append((event, kind))


@given(events, owners, steps)
def test_a_new_epoch_or_another_owner_never_gets_a_reference(sequence: list[Event], owner: str, step: int) -> None:
    context = INITIAL_CONTEXT
    for event in sequence:
        context, _ = _apply(context, event)
    assert not may_reference(begin_epoch(context, owner), owner, step)
    for other in {"session-a", "session-a/agent-1", "session-b"} - {context.owner}:
        assert answer(context, other, step, verbatim_full=True)[0] == "verbatim"


def test_a_reference_answer_delivers_nothing_and_a_verbatim_one_delivers_the_step() -> None:
    context = deliver(attend(INITIAL_CONTEXT, "s"), 7, full=True)
    kind, after = answer(context, "s", 7, verbatim_full=False)
    assert (kind, after) == ("reference", context)
    kind, after = answer(begin_epoch(context, "s"), "s", 7, verbatim_full=True)
    assert kind == "verbatim" and may_reference(after, "s", 7)
    kind, after = answer(begin_epoch(context, "s"), "s", 7, verbatim_full=False)
    assert kind == "verbatim" and not may_reference(after, "s", 7)


def test_no_owner_never_gets_a_reference() -> None:
    context = deliver(attend(INITIAL_CONTEXT, None), 1, full=True)
    assert answer(context, None, 1, verbatim_full=True)[0] == "verbatim"
