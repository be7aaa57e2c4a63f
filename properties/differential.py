"""Spec-vs-impl differential run: `ledger_spec` and `ledger_impl.ledger.Ledger` fed the same events.

At every step both must return equal decisions; after every event they must agree on the
counters (G, W, L[key] for every key seen), on the view with and without a task, and the
ledger's `snapshot()` must equal the spec state. Three session shapes are driven:

  sessions        as `ledger_properties.strategies.sessions()` draws them
  misclassified   read-only commands that report changes (a wrong classifier)
  interleaved     standalone `modify` events between steps (changes noticed between commands,
                  background jobs), and a harness that sometimes runs a command govern wanted
                  to withhold or nudge, recording it as allowed
  overlapping     the steps of a session as parallel tool calls: each command starts (govern,
                  then `start`) and finishes (`finish` with its report) separately, up to three
                  in flight at once, with standalone changes, unvouched results and abandoned
                  calls among them
  ranges          many reads of a few ranges of two files in two views, with edits: the general
                  sessions almost never serve a range from a wider one, or hold several current
                  observations that could serve the same request, and these do both

Calls carry a `Request` now and then: only the same command's rendering may serve, the agent
runs the call whatever the answer, or (overlapping) a call id still in flight is decided again.

Every shape also varies the fingerprint: each step's is drawn from a few values (and None), the
one recorded can differ from the one govern saw (the runtime records None when the fingerprint
moved while the command ran), and small `stored_output_limit`s make eviction happen.

The same comparison also runs as a Hypothesis state machine, `LedgerMatchesSpec` (the spec as
the model, the ledger as the system under test, the checks as invariants), whose rules mix all
of the above freely; `replay` drives that machine through one fixed event list.

`run_differential` is what `ledger verify` calls; the test suite runs its shapes one by one.
"""

from __future__ import annotations

import traceback
from typing import Callable, Sequence

import attrs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

import ledger_spec
from ledger_impl import state_rows
from ledger_impl.ledger import Ledger
from ledger_spec import (
    ANY_CALL,
    NUMBERED,
    PLAIN,
    Allow,
    Category,
    Changes,
    Command,
    Decision,
    FileTarget,
    Observation,
    Policy,
    Request,
    State,
)
from ledger_properties.spec_driver import take_step
from ledger_properties.strategies import DEFAULT_KEYS, Step, changes, line_ranges, outputs_for, policies, sessions, steps
from ledger_spec.errors import PropertyViolation

TASKS: tuple[str, ...] = ("", "fix the   failing\ttest in src/c.py")


@attrs.frozen
class Event:
    """One abstract event: a standalone modification, a governed step, or (with `call` set) the
    start, finish, abandonment or expiry of one of several commands in flight."""

    changes: Changes | None = None  # set for a standalone modification
    call: str | None = None  # set for the events of a command in flight
    phase: str = "start"  # with `call`: 'start' (govern, then start), 'finish', 'abandon' or 'expire'
    may_write: bool = False  # for a start: the caller says the call may write (an id reused by a writer)
    exact: bool = True  # for a finish: the caller vouches for the output
    fingerprint_moved: bool = False  # for a finish: the caller saw the fingerprint move
    command: Command | None = None
    output: str = ""
    exit_status: int = 0
    step_changes: Changes = Changes()
    harness_allows: bool = False  # run the command whatever govern said, as an Allow
    fingerprint: object = ledger_spec.STEADY  # the fingerprint govern is given
    recorded_fingerprint: object = ledger_spec.STEADY  # the one an observation of this step records
    request: Request = ANY_CALL  # what the caller says of the call (its `call` is set for a start)


class Divergence(PropertyViolation, AssertionError):
    """The spec and the optimized ledger disagree; the message says where and how."""


class LedgerMatchesSpec(RuleBasedStateMachine):
    """The spec as the model, the optimized ledger as the system under test.

    Each rule is one event fed to both sides; a governed step must get equal decisions, and
    after every event the invariants compare what the two hold: counters, the currentness of
    every observation, the views, and the whole state. Proposed steps and recorded
    observations go into bundles, so later rules repeat earlier commands (where Reuse and
    Nudge happen) and re-read what was observed. `replay` drives the same machine through a
    fixed list of events, which is how the differential's session shapes run.
    """

    proposals = Bundle("proposals")
    observations = Bundle("observations")

    def __init__(self, policy: Policy | None = None) -> None:
        super().__init__()
        self._start(policy if policy is not None else Policy())

    def _start(self, policy: Policy) -> None:
        self.policy = policy
        self.state: State = ledger_spec.INITIAL
        self.ledger = Ledger(policy)
        self.keys: set[str] = set(DEFAULT_KEYS)
        self.calls = 0  # tool calls started, to name the next one
        self.where = "start"
        # The session store's rows of the ledger (`ledger_impl.state_rows`), by (log, position),
        # and what this process knows they hold: each reload writes only what changed.
        self.stored_rows: dict[tuple[str | None, int], state_rows.Row] = {}
        self.written: state_rows.Written | None = None

    # --- driving both sides -------------------------------------------------------------

    def apply(self, event: Event, where: str) -> Observation | None:
        """Feed `event` to both sides; return the observation it recorded, if any."""
        self.where = where
        if event.changes is not None:
            self.keys |= event.changes.paths
            self.state = ledger_spec.modify(self.state, event.changes)
            self.ledger.modify(event.changes)
            return None
        if event.call is not None:
            # One event of a command in flight (overlapping tool calls).
            self.keys |= event.step_changes.paths
            before = len(self.state.observations)
            self.state = _replay_call(where, event, self.state, self.ledger, self.policy)
            return self.state.observations[-1] if len(self.state.observations) > before else None
        assert event.command is not None
        expected = ledger_spec.govern(self.state, event.command, self.policy, event.fingerprint, event.request)
        actual = self.ledger.govern(event.command, event.fingerprint, event.request)
        _agree(where + ": govern", expected, actual)
        decision: Decision = Allow() if event.harness_allows and not isinstance(expected, Allow) else expected
        self.keys |= event.step_changes.paths
        before = len(self.state.observations)
        self.state = take_step(
            self.state,
            Step(event.command, event.output, event.exit_status, event.step_changes),
            self.policy,
            decision=decision,
            recorded_fingerprint=event.recorded_fingerprint,
        ).after
        self.ledger.advance(
            event.command, decision, event.output, event.exit_status, event.step_changes, event.recorded_fingerprint
        )
        return self.state.observations[-1] if len(self.state.observations) > before else None

    def check(self) -> None:
        """Every invariant, for a driver that is not Hypothesis."""
        self.counters_agree()
        self.currentness_agrees()
        self.views_agree()
        self.snapshots_agree()

    # --- rules --------------------------------------------------------------------------

    @initialize(policy=st.deferred(lambda: _policy_strategy()))
    def choose_policy(self, policy: Policy) -> None:
        self._start(policy)

    @rule(target=proposals, step=steps())
    def propose(self, step: Step) -> Event:
        return _steps_as_events([step])[0]

    @rule(target=proposals, step=steps(read_only_changes=True))
    def propose_misclassified(self, step: Step) -> Event:
        """A read-only command that reports changes: a wrong classifier."""
        return _steps_as_events([step])[0]

    @rule(target=proposals, event=st.deferred(lambda: range_reads()))
    def propose_range_read(self, event: Event) -> Event:
        return event

    @rule(target=observations, proposal=proposals, data=st.data())
    def run(self, proposal: Event, data: st.DataObject) -> object:
        """Run a proposed step (a new one or a repeat), with fingerprints that move now and then,
        a report that may differ from the first run's, and a harness that may override govern."""
        now = data.draw(st.sampled_from(FINGERPRINTS), label="fingerprint")
        recorded = now if data.draw(st.integers(0, 4), label="recorded same") else data.draw(st.sampled_from(FINGERPRINTS))
        event = attrs.evolve(
            proposal,
            step_changes=data.draw(st.sampled_from((proposal.step_changes, Changes())), label="changes"),
            harness_allows=data.draw(st.integers(0, 5), label="harness allows") == 0,
            fingerprint=now,
            recorded_fingerprint=recorded,
            request=data.draw(requests(), label="request"),
        )
        observation = self.apply(event, f"run {event!r}")
        return multiple() if observation is None else observation

    @rule(observation=observations, same_fingerprint=st.integers(0, 4))
    def reread(self, observation: Observation, same_fingerprint: int) -> None:
        """Propose an observed command again, usually under the fingerprint it recorded."""
        fingerprint = observation.fingerprint if same_fingerprint else ledger_spec.STEADY
        event = Event(
            command=observation.command,
            output=observation.output,
            exit_status=observation.exit_status,
            fingerprint=fingerprint,
            recorded_fingerprint=fingerprint,
        )
        self.apply(event, f"reread step {observation.step}")

    @rule(proposal=proposals, data=st.data())
    def start_call(self, proposal: Event, data: st.DataObject) -> None:
        """Start a proposed step as a tool call that runs alongside others (govern, then start),
        now and then under the name of a call still in flight (an id decided twice)."""
        if len(self.state.pending) >= 3:
            return
        self.calls += 1
        call = f"call-{self.calls}"
        if self.state.pending and data.draw(st.integers(0, 5), label="name in flight") == 0:
            call = data.draw(st.sampled_from([pending.call for pending in self.state.pending]), label="call")
        event = attrs.evolve(
            proposal,
            call=call,
            phase="start",
            harness_allows=data.draw(st.integers(0, 5), label="harness allows") == 0,
            may_write=data.draw(st.integers(0, 7), label="may write") == 0,
            request=attrs.evolve(data.draw(requests(), label="request"), call=call),
        )
        self.apply(event, f"start {event!r}")

    @rule(target=observations, data=st.data())
    def end_call(self, data: st.DataObject) -> object:
        """Finish (or abandon, or expire) one of the calls in flight, in any order."""
        if not self.state.pending:
            return multiple()
        pending = data.draw(st.sampled_from(self.state.pending), label="call")
        phase = ("abandon", "expire", "finish", "finish", "finish", "finish")[data.draw(st.integers(0, 5), label="end")]
        command = pending.command
        event = Event(
            call=pending.call,
            phase=phase,
            command=command,
            output=data.draw(outputs_for(command), label="output"),
            exit_status=data.draw(st.sampled_from((0, 0, 0, 1)), label="exit"),
            step_changes=data.draw(changes(unknown_probability=0.1), label="changes")
            if command.category not in ledger_spec.READ_ONLY
            else Changes(),
            exact=data.draw(st.integers(0, 7), label="exact") > 0,
            fingerprint_moved=data.draw(st.integers(0, 7), label="moved") == 0,
        )
        observation = self.apply(event, f"{phase} {event!r}")
        return multiple() if observation is None else observation

    @rule(report=changes(unknown_probability=0.2))
    def modify(self, report: Changes) -> None:
        """A change noticed between commands (a background job, the user)."""
        self.apply(Event(changes=report), f"modify {report!r}")

    @rule(another_process=st.booleans())
    def reload(self, another_process: bool) -> None:
        """The ledger stored and loaded again, as a session is between hook calls: what changed
        written as the store's rows, which must read back as the whole state. The next call is
        either another process, which reads every row and rebuilds the indexes
        (`Ledger.from_state`), or this one, which goes on with the ledger it saved and writes
        only what changes next."""
        self.reload_ledger(another_process)

    def reload_ledger(self, another_process: bool = True) -> None:
        self.where = "reload"
        snapshot = self.ledger.snapshot()
        saved, self.written = state_rows.changes(snapshot, self.written)
        if saved.rewrites_all:
            self.stored_rows.clear()
        self.stored_rows.update({(row.log, row.position): row for row in saved.rows})
        state, written = state_rows.decode(saved.header, self.stored_rows.values())
        _agree("reload: the stored rows read back", snapshot, state)
        if another_process:
            self.ledger, self.written = Ledger.from_state(state, self.policy), written

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def counters_agree(self) -> None:
        state, ledger, where = self.state, self.ledger, self.where
        _agree(where + ": step", state.step, ledger.step)
        _agree(where + ": G", state.total, ledger.total)
        _agree(where + ": W", state.wildcard, ledger.wildcard)
        for key in sorted(self.keys):
            _agree(f"{where}: L[{key}]", state.local(key), ledger.local(key))
        _agree(where + ": interventions", ledger_spec.interventions(state), ledger.interventions)
        _agree(where + ": stored bytes", ledger_spec.state.stored_bytes(state), ledger.stored_bytes)

    @invariant()
    def currentness_agrees(self) -> None:
        for observation in self.state.observations:
            _agree(
                f"{self.where}: current(observation of step {observation.step})",
                ledger_spec.current(observation, self.state),
                self.ledger.is_current(observation),
            )

    @invariant()
    def views_agree(self) -> None:
        for task in TASKS:
            _agree(
                f"{self.where}: render(task={task!r})",
                ledger_spec.render(self.state, self.policy, task),
                self.ledger.render(task),
            )

    @invariant()
    def snapshots_agree(self) -> None:
        _agree(self.where + ": snapshot", self.state, self.ledger.snapshot())


def replay(policy: Policy, events: Sequence[Event], *, reload: bool = False) -> Ledger:
    """Drive both sides through `events`, raising `Divergence` at the first disagreement;
    return the ledger they leave behind. `reload`: after every event the ledger is stored and
    loaded again (the session store's round trip), and must go on agreeing."""
    machine = LedgerMatchesSpec(policy)
    for index, event in enumerate(events):
        machine.apply(event, f"event {index} ({event!r})")
        machine.check()
        if reload:
            machine.reload_ledger()
            machine.check()
    return machine.ledger


def _replay_call(where: str, event: Event, state: State, ledger: Ledger, policy: Policy) -> State:
    """One event of a command in flight, on both sides. A call that govern answered with a
    Reuse never started, and an abandoned one never finishes: their later events do nothing."""
    in_flight = any(pending.call == event.call for pending in state.pending)
    if event.phase == "finish" and in_flight:
        moved = event.fingerprint_moved
        ledger.finish(
            event.call, event.output, event.exit_status, event.step_changes, exact=event.exact, fingerprint_moved=moved
        )
        return ledger_spec.finish(
            state, event.call, event.output, event.exit_status, event.step_changes, policy,
            exact=event.exact, fingerprint_moved=moved,
        )
    if event.phase == "abandon" and in_flight:
        ledger.abandon(event.call)
        return ledger_spec.abandon(state, event.call)
    if event.phase == "expire" and in_flight:
        ledger.expire([event.call])
        return ledger_spec.expire(state, [event.call])
    if event.phase != "start":
        return state
    assert event.command is not None
    expected = ledger_spec.govern(state, event.command, policy, event.fingerprint, event.request)
    _agree(where + ": govern", expected, ledger.govern(event.command, event.fingerprint, event.request))
    if isinstance(expected, ledger_spec.Reuse) and not event.harness_allows:
        ledger.advance(event.command, expected, "", 0, Changes())
        return ledger_spec.advance(state, event.command, expected, "", 0, Changes(), policy=policy)
    decision = Allow() if isinstance(expected, ledger_spec.Reuse) else expected
    if in_flight:
        # An id decided twice: the earlier call under it is given up, as a durable session does.
        ledger.abandon(event.call)
        state = ledger_spec.abandon(state, event.call)
    ledger.start(event.call, event.command, decision, event.recorded_fingerprint, may_write=event.may_write)
    return ledger_spec.start(
        state, event.call, event.command, decision, event.recorded_fingerprint, may_write=event.may_write
    )


def _agree(where: str, expected: object, actual: object) -> None:
    if expected != actual:
        raise Divergence(f"{where}\n  spec: {expected!r}\n  impl: {actual!r}")


def _steps_as_events(script: Sequence[object]) -> list[Event]:
    return [Event(command=s.command, output=s.output, exit_status=s.exit_status, step_changes=s.changes) for s in script]  # type: ignore[attr-defined]


FINGERPRINTS: tuple[object, ...] = (ledger_spec.STEADY, ledger_spec.STEADY, ledger_spec.STEADY, 1, 2, None)


def requests() -> st.SearchStrategy[Request]:
    """What a caller says of a call: mostly nothing, sometimes that only the same command's
    stored rendering may answer it, or that the agent runs it whatever the answer."""
    flag = st.integers(0, 3).map(lambda drawn: drawn == 0)
    return st.builds(Request, same_command_only=flag, withhold=flag.map(lambda drawn: not drawn))


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


@st.composite
def overlapping_events(draw: st.DrawFn) -> list[Event]:
    """A session's steps as parallel tool calls: each starts and later finishes, and while up
    to three are in flight the others start, finish or report changes in any order."""
    waiting = list(_steps_as_events(draw(sessions())))
    waiting = draw(fingerprinted(waiting))
    in_flight: list[Event] = []
    events: list[Event] = []
    number = 0
    while waiting or in_flight:
        can_start = bool(waiting) and len(in_flight) < 3
        move = draw(st.sampled_from(("start", "start", "finish", "finish", "modify", "abandon")))
        if move == "modify":
            events.append(Event(changes=draw(changes(unknown_probability=0.1))))
        elif can_start and (move == "start" or not in_flight):
            number += 1
            call = f"call-{number}"
            if in_flight and draw(st.integers(0, 5)) == 0:
                # An id decided twice: the earlier call under it is given up at this start.
                call = in_flight.pop(draw(st.integers(0, len(in_flight) - 1))).call
            started = attrs.evolve(waiting.pop(0), call=call, phase="start")
            started = attrs.evolve(
                started, harness_allows=draw(st.integers(0, 5)) == 0,
                request=attrs.evolve(draw(requests()), call=call),
            )
            in_flight.append(started)
            events.append(started)
        elif in_flight:
            ending = in_flight.pop(draw(st.integers(0, len(in_flight) - 1)))
            ending_move = draw(st.integers(0, 3)) if move == "abandon" else None
            if ending_move == 0:
                events.append(attrs.evolve(ending, phase="abandon"))
            elif ending_move == 1:
                events.append(attrs.evolve(ending, phase="expire"))  # given up on, still in flight
                in_flight.append(ending)
            else:
                events.append(
                    attrs.evolve(
                        ending,
                        phase="finish",
                        exact=draw(st.integers(0, 7)) > 0,
                        fingerprint_moved=draw(st.integers(0, 7)) == 0,
                    )
                )
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
        request=draw(requests()),
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
    "overlapping": overlapping_events,
    "ranges": lambda: range_heavy_events().flatmap(fingerprinted),
}


def _policy_strategy() -> st.SearchStrategy[Policy]:
    # Small budgets exercise truncation; the default budget shows long views whole.
    return policies() | policies(vary_budget=False)


def run_shape(
    shape: str, max_examples: int, seed: int | None = None, *, shrink: bool = True, reload: bool = False
) -> tuple[bool, str]:
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
            replay(policy, events, reload=reload)
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


def run_machine(max_examples: int, seed: int | None = None, *, shrink: bool = True) -> tuple[bool, str]:
    """`LedgerMatchesSpec` for `max_examples` runs; (agrees, message with the failing run)."""
    phases = tuple(Phase) if shrink else tuple(phase for phase in Phase if phase is not Phase.shrink)
    machine_settings = settings(
        max_examples=max_examples,
        phases=phases,
        deadline=None,
        database=None,
        stateful_step_count=40,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )

    def factory() -> LedgerMatchesSpec:
        return LedgerMatchesSpec()

    if seed is not None:
        factory = hypothesis_seed(seed)(factory)
    try:
        run_state_machine_as_test(factory, settings=machine_settings)
    except Exception as error:
        notes = "\n".join(getattr(error, "__notes__", ()))
        return False, f"machine: spec and impl diverge\n{notes}\n{type(error).__name__}: {error}"
    return True, f"machine: {max_examples} runs agree"


def run_differential(max_examples: int, seed: int | None = None, *, shrink: bool = True) -> tuple[bool, str]:
    """Run every session shape, then the state machine, for `max_examples` examples each;
    (all agree, summary)."""
    results = [run_shape(shape, max_examples, seed, shrink=shrink) for shape in SHAPES]
    results.append(run_machine(max_examples, seed, shrink=shrink))
    return all(ok for ok, _ in results), "\n".join(message for _, message in results)


def _describe(policy: Policy, events: Sequence[Event], error: BaseException) -> str:
    lines = [f"policy: {policy!r}", "events:"]
    lines.extend(f"  {index}: {event!r}" for index, event in enumerate(events))
    lines.append(f"{type(error).__name__}: {error}")
    return "\n".join(lines)
