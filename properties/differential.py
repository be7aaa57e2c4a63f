"""Spec-vs-impl differential run: `ledger_spec` and `ledger_impl.ledger.Ledger` fed the same events.

At every step both must return equal decisions; after every event they must agree on the
counters (G, W, L[key] for every key seen), on the view with and without a task, and the
ledger's `snapshot()` must equal the spec state. Three session shapes are driven:

  sessions        as `properties.strategies.sessions()` draws them
  misclassified   read-only commands that report changes (a wrong classifier)
  interleaved     standalone `modify` events between steps (changes noticed between commands,
                  background jobs), and a harness that sometimes runs a command govern wanted
                  to withhold or nudge, recording it as allowed
  ranges          many reads of a few ranges of two files in two views, with edits: the general
                  sessions almost never serve a range from a wider one, or hold several current
                  observations that could serve the same request, and these do both

Every shape also varies the fingerprint: each step's is drawn from a few values (and None), the
one recorded can differ from the one govern saw (the runtime records None when the fingerprint
moved while the command ran), and small `stored_output_limit`s make eviction happen.

`run_differential` is what `ledger verify` and the test suite call.
"""

from __future__ import annotations

import traceback
from typing import Callable, Sequence

import attrs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import ledger_spec
from ledger_impl.ledger import Ledger
from ledger_spec import (
    NUMBERED,
    PLAIN,
    Allow,
    Category,
    Changes,
    Command,
    Decision,
    FileTarget,
    Policy,
    State,
)
from properties.strategies import DEFAULT_KEYS, changes, line_ranges, outputs_for, policies, sessions

TASKS: tuple[str, ...] = ("", "fix the   failing\ttest in src/c.py")


@attrs.frozen
class Event:
    """One abstract event: a standalone modification, or a governed step."""

    changes: Changes | None = None  # set for a standalone modification
    command: Command | None = None
    output: str = ""
    exit_status: int = 0
    step_changes: Changes = Changes()
    harness_allows: bool = False  # run the command whatever govern said, as an Allow
    fingerprint: object = ledger_spec.STEADY  # the fingerprint govern is given
    recorded_fingerprint: object = ledger_spec.STEADY  # the one an observation of this step records


class Divergence(AssertionError):
    """The spec and the optimized ledger disagree; the message says where and how."""


def replay(policy: Policy, events: Sequence[Event]) -> Ledger:
    """Drive both sides through `events`, raising `Divergence` at the first disagreement;
    return the ledger they leave behind."""
    state = ledger_spec.INITIAL
    ledger = Ledger(policy)
    keys = set(DEFAULT_KEYS)
    for index, event in enumerate(events):
        where = f"event {index} ({event!r})"
        if event.changes is not None:
            keys |= event.changes.paths
            state = ledger_spec.modify(state, event.changes)
            ledger.modify(event.changes)
        else:
            assert event.command is not None
            expected = ledger_spec.govern(state, event.command, policy, event.fingerprint)
            actual = ledger.govern(event.command, event.fingerprint)
            _agree(where + ": govern", expected, actual)
            decision: Decision = Allow() if event.harness_allows and not isinstance(expected, Allow) else expected
            keys |= event.step_changes.paths
            state = ledger_spec.advance(
                state, event.command, decision, event.output, event.exit_status, event.step_changes,
                event.recorded_fingerprint, policy,
            )
            ledger.advance(
                event.command, decision, event.output, event.exit_status, event.step_changes, event.recorded_fingerprint
            )
        _check_state(where, state, ledger, policy, keys)
    return ledger


def _agree(where: str, expected: object, actual: object) -> None:
    if expected != actual:
        raise Divergence(f"{where}\n  spec: {expected!r}\n  impl: {actual!r}")


def _check_state(where: str, state: State, ledger: Ledger, policy: Policy, keys: set[str]) -> None:
    _agree(where + ": step", state.step, ledger.step)
    _agree(where + ": G", state.total, ledger.total)
    _agree(where + ": W", state.wildcard, ledger.wildcard)
    for key in sorted(keys):
        _agree(f"{where}: L[{key}]", state.local(key), ledger.local(key))
    _agree(where + ": interventions", ledger_spec.interventions(state), ledger.interventions)
    _agree(where + ": stored bytes", ledger_spec.state.stored_bytes(state), ledger.stored_bytes)
    for task in TASKS:
        _agree(f"{where}: render(task={task!r})", ledger_spec.render(state, policy, task), ledger.render(task))
    _agree(where + ": snapshot", state, ledger.snapshot())


def _steps_as_events(script: Sequence[object]) -> list[Event]:
    return [Event(command=s.command, output=s.output, exit_status=s.exit_status, step_changes=s.changes) for s in script]  # type: ignore[attr-defined]


FINGERPRINTS: tuple[object, ...] = (ledger_spec.STEADY, ledger_spec.STEADY, ledger_spec.STEADY, 1, 2, None)


@st.composite
def fingerprinted(draw: st.DrawFn, events: list[Event]) -> list[Event]:
    """`events` with fingerprints that move now and then: mostly one steady value (so that
    Reuse still happens), sometimes another, sometimes None; the recorded one usually equals
    the one govern saw."""
    result = []
    for event in events:
        if event.command is None or draw(st.integers(0, 2)) == 0:
            result.append(event)
            continue
        now = draw(st.sampled_from(FINGERPRINTS))
        recorded = now if draw(st.integers(0, 4)) else draw(st.sampled_from(FINGERPRINTS))
        result.append(attrs.evolve(event, fingerprint=now, recorded_fingerprint=recorded))
    return result


@st.composite
def interleaved_events(draw: st.DrawFn) -> list[Event]:
    """A session with standalone modifications and harness overrides mixed in."""
    events: list[Event] = []
    for event in _steps_as_events(draw(sessions())):
        for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 3)) == 0 else 0):
            events.append(Event(changes=draw(changes(unknown_probability=0.2))))
        events.append(attrs.evolve(event, harness_allows=draw(st.integers(0, 5)) == 0))
    return events


RANGE_KEYS: tuple[str, ...] = ("a.py", "src/c.py")


@st.composite
def range_reads(draw: st.DrawFn) -> Event:
    """A read of a few lines of one of two files; typed in one of two spellings."""
    target = FileTarget(
        draw(st.sampled_from(RANGE_KEYS)), draw(line_ranges(max_line=8)), draw(st.sampled_from((PLAIN, PLAIN, NUMBERED)))
    )
    end = "$" if target.lines.end is None else str(target.lines.end)
    normalized = f"{target.view} {target.lines.start},{end} {target.key}"
    command = Command(normalized + " " * draw(st.integers(0, 1)), normalized, Category.READ, target)
    return Event(
        command=command,
        output=draw(outputs_for(command)),
        exit_status=draw(st.sampled_from((0, 0, 0, 0, 0, 1))),
        # Running a read that govern would have served records a second, narrower current
        # observation inside a wider one: the case where "newest" and "widest" differ.
        harness_allows=draw(st.booleans()),
    )


@st.composite
def range_heavy_events(draw: st.DrawFn) -> list[Event]:
    events: list[Event] = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(("read",) * 6 + ("repeat", "repeat", "edit", "modify")))
        if kind == "repeat" and events:
            # Agents repeat what they just did; a recent repeat finds its observations current,
            # and when the harness runs it anyway there are several that could serve the next
            # request, so picking the newest gets tested.
            for _ in range(draw(st.integers(1, 3))):
                events.append(attrs.evolve(draw(st.sampled_from(events[-4:])), harness_allows=draw(st.booleans())))
        elif kind == "edit":
            key = draw(st.sampled_from(RANGE_KEYS))
            report = Changes({key}, unknown=draw(st.integers(0, 5)) == 0)
            events.append(Event(command=Command(f"edit {key}", f"edit {key}", Category.EDIT), step_changes=report))
        elif kind == "modify":
            events.append(Event(changes=draw(changes(keys=RANGE_KEYS, unknown_probability=0.1))))
        else:
            events.append(draw(range_reads()))
    return events


SHAPES: dict[str, Callable[[], st.SearchStrategy[list[Event]]]] = {
    "sessions": lambda: sessions().map(_steps_as_events).flatmap(fingerprinted),
    "misclassified": lambda: sessions(read_only_changes=True).map(_steps_as_events).flatmap(fingerprinted),
    "interleaved": lambda: interleaved_events().flatmap(fingerprinted),
    "ranges": lambda: range_heavy_events().flatmap(fingerprinted),
}


def _policy_strategy() -> st.SearchStrategy[Policy]:
    # Small budgets exercise truncation; the default budget shows long views whole.
    return policies() | policies(vary_budget=False)


def run_shape(shape: str, max_examples: int, seed: int | None = None, *, shrink: bool = True) -> tuple[bool, str]:
    """One session shape; on failure the message holds the minimal diverging example (or the
    first one found, without `shrink`: shrinking long sessions can take minutes)."""
    failure: list[str] = []
    phases = tuple(Phase) if shrink else tuple(phase for phase in Phase if phase is not Phase.shrink)

    @settings(
        max_examples=max_examples,
        phases=phases,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(policy=_policy_strategy(), events=SHAPES[shape]())
    def differential(policy: Policy, events: list[Event]) -> None:
        try:
            replay(policy, events)
        except Exception as error:
            # Hypothesis replays the minimal failing example last, so this ends up describing it.
            failure[:] = [_describe(policy, events, error)]
            raise

    if seed is not None:
        differential = hypothesis_seed(seed)(differential)
    try:
        differential()
    except Exception:
        return False, f"{shape}: spec and impl diverge\n" + (failure[0] if failure else traceback.format_exc())
    return True, f"{shape}: {max_examples} examples agree"


def run_differential(max_examples: int, seed: int | None = None, *, shrink: bool = True) -> tuple[bool, str]:
    """Run every session shape for `max_examples` examples each; (all agree, summary)."""
    results = [run_shape(shape, max_examples, seed, shrink=shrink) for shape in SHAPES]
    return all(ok for ok, _ in results), "\n".join(message for _, message in results)


def _describe(policy: Policy, events: Sequence[Event], error: BaseException) -> str:
    lines = [f"policy: {policy!r}", "events:"]
    lines.extend(f"  {index}: {event!r}" for index, event in enumerate(events))
    lines.append(f"{type(error).__name__}: {error}")
    return "\n".join(lines)
