"""The reference semantics of Ledger's execution state.

Theory of operation
-------------------
A session is a sequence of steps. At each step govern looks at the state and the proposed
command and answers Allow, Reuse or Nudge. Then exactly one of two things is recorded:

  reused     the command did not run; only the command record is added.
  executed   the detector's report is added to the modification log (if it changed anything);
             a read-only command whose step changed nothing becomes an observation,
             snapshotting the counters and the fingerprint taken at that step; the command
             record is added.

The counters are not stored. They are counts over the modification log:

  G     = number of modifications                      (anything changed)
  L[k]  = number of modifications whose keys include k (this file changed)
  W     = number of modifications of unknown scope     (anything may have changed)

which makes three invariants true by construction: counters never decrease, L[k] <= G and
W <= G. An observation is *current* when the counters it depends on still hold the values it
snapshotted: a file target depends on (L[key], W), a tree target on G. If the detector reports
every change, a current observation's dependencies hold the content they held when it was
recorded, so its output is what the command would print now. That conditional is the whole
safety argument; the detector's completeness is checked elsewhere, on a real filesystem.

The counters see only what the detector reports about files under the root. Everything else a
read's output depends on (the program PATH resolves, the environment, the root's own identity,
git's configuration outside the root) is summed up by a *fingerprint*, an opaque value the
runtime takes with `stat` calls. An observation records the fingerprint of its step; govern is
given the fingerprint of the proposed command as it is now, and an observation is *reusable*
only if it is current, still holds its output, and its fingerprint equals the current one. A
`None` fingerprint (cannot be taken) is never reusable. The two lines are independent: either
one noticing a change prevents the Reuse.

Overlapping commands. Agents run tool calls in parallel, so a command is two events: `start`
(it begins to run, under the decision govern gave) and `finish` (its output, exit status and
the detector's report are recorded). A command in flight is *pending*. An observation is
stamped with the counters at its command's start, i.e. with the prefix of the modification log
recorded before it started; every change recorded after that prefix (while it ran, by any
command, itself included, or after it) counts against it. So a change recorded by a command
whose execution overlapped a read makes the read's observation stale from the moment both are
recorded, and it is recorded without its output. Stamping at the end would be wrong: a write
that lands after the read saw the file and is recorded before the read finishes would leave the
observation current with the old content (`ledger_spec/z3_overlap.py` proves the start stamp
fresh under any interleaving, and finds that interleaving for the end stamp). The fingerprint
is stamped at the start too. A sequential step is a `start` immediately followed by its
`finish` (`advance` is exactly that), and nothing is recorded between them, so the start and
the end stamps coincide and the sequential semantics are those described above. `abandon`
gives up on a pending command that will never finish: the workspace is then changed in
unknown scope. `expire` gives up on pending commands that may still finish late: the
workspace is changed in unknown scope, and they stay pending so that a late `finish` still
closes their step.

Writers in flight. A command that may write and has not finished may still be writing: its
changes are recorded only at its `finish`, so an observation that looks current may already
be stale, and "nothing changed since" unproven. Govern therefore answers Allow, neither Reuse
nor Nudge, while a pending command may write (its `may_write`, set at `start` for every
command that is not read-only, cleared by `expire`). Reads in flight block neither.

What the caller says of one call (`Request`). An agent's hook knows three things about a call
that the command text does not, and each narrows what govern may answer. A call whose name is
still running is never served: a result recorded later under that name could belong to
either. A call whose stored outputs are the agent's rendering, not the command's bytes, is
served only from an observation of the same command (range reuse off for it). A call the
agent must run whatever the answer is never withheld: where a Reuse would serve, the answer is
a Nudge naming the step whose result it already saw, and the call runs and is recorded like
any other.

Stored outputs are bounded: a modification drops the output of every observation it makes
stale, and after each step the least recently used outputs (recorded or served last) are
dropped until their total is within `Policy.stored_output_limit` bytes.

Govern intervenes only under the rules in the tables below, at most `Policy.intervention_cap`
times, and only Reuse withholds an execution.

This module is written to be obviously right, not fast: every query scans the log. The
optimized implementation in `ledger_impl` must reach the same answers.
"""

from __future__ import annotations

from typing import Final, Hashable, Iterable

import attrs

from . import lines, texts
from .policy import Policy
from .values import READ_ONLY, SLICEABLE_VIEWS, Allow, Category, Changes, Command, CommandRecord, Decision, FileTarget
from .values import ANY_CALL, Fingerprint, Modification, Nudge, Observation, Pending, Request, Reuse, STEADY, TreeTarget
from .values import Verdict, check_key

# Which categories each verdict may apply to. Reuse is further limited to commands with a
# target and a current observation that serves it; Nudge to repeats with nothing but
# transient files changed since.
REUSABLE: frozenset[Category] = READ_ONLY
NUDGEABLE_ANY_TIME: frozenset[Category] = frozenset({Category.TEST})
NUDGEABLE_IN_SHORT_LOOP: frozenset[Category] = frozenset(
    {Category.READ, Category.SEARCH, Category.TEST, Category.EDIT, Category.RUN}
)
WITHHOLDING: frozenset[Verdict] = frozenset({Verdict.REUSE})
INTERVENING: frozenset[Verdict] = frozenset({Verdict.REUSE, Verdict.NUDGE})


@attrs.frozen
class State:
    """Everything the ledger knows: the step number, three append-only logs, and the commands
    in flight (in the order they started)."""

    step: int = 0
    modifications: tuple[Modification, ...] = ()
    observations: tuple[Observation, ...] = ()
    history: tuple[CommandRecord, ...] = ()
    pending: tuple[Pending, ...] = ()

    @property
    def total(self) -> int:
        """G: how many modifications happened."""
        return len(self.modifications)

    @property
    def wildcard(self) -> int:
        """W: how many modifications had unknown scope."""
        return sum(1 for m in self.modifications if m.changes.unknown)

    def local(self, key: str) -> int:
        """L[key]: how many modifications reported `key`. Unknown keys have L = 0."""
        check_key(key)
        return sum(1 for m in self.modifications if key in m.changes.paths)

    def as_of(self, total: int) -> "State":
        """The modification log as it was when it held `total` entries: its counters are the
        counters at that moment."""
        return State(modifications=self.modifications[:total])


INITIAL: State = State()
DEFAULT_POLICY: Policy = Policy()


# --- events -------------------------------------------------------------------------------


def modify(state: State, changes: Changes) -> State:
    """Record a detector report. A report that changed nothing changes nothing. The outputs of
    the observations it makes stale are dropped: nothing can serve from them again.

    post: __return__.total == state.total + (0 if changes.empty else 1)
    """
    if changes.empty:
        return state
    state = attrs.evolve(state, modifications=state.modifications + (Modification(state.step, changes),))
    kept = tuple(
        observation if not observation.retained or current(observation, state) else observation.dropped()
        for observation in state.observations
    )
    return attrs.evolve(state, observations=kept)


def observe(
    state: State, command: Command, output: str, exit_status: int, fingerprint: Fingerprint | None = STEADY,
    started_at: int | None = None,
) -> State:
    """Record the completed result of a read-only command, stamped with the counters at its
    start (when the log held `started_at` modifications; now, if None) and the fingerprint
    taken then. If a change recorded since its start reaches it, it is recorded stale: without
    its output.

    A read-only command without a target (a file outside the root) is not recorded: nothing
    could ever prove it current.
    """
    if not command.read_only:
        raise ValueError(f"only read-only commands are observed; {command.category.value} is not")
    if command.target is None:
        return state
    stamp = state.as_of(state.total if started_at is None else started_at)
    local = stamp.local(command.target.key) if isinstance(command.target, FileTarget) else 0
    observation = Observation(
        step=state.step,
        command=command,
        output=output,
        exit_status=exit_status,
        local=local,
        wildcard=stamp.wildcard,
        total=stamp.total,
        fingerprint=fingerprint,
    )
    if not current(observation, state):
        observation = observation.dropped()
    return attrs.evolve(state, observations=state.observations + (observation,))


def conclude(
    state: State,
    command: Command,
    verdict: Verdict,
    exit_status: int,
    served_from: int | None = None,
    started_at: int | None = None,
) -> State:
    """Close the step: add the command record (with G at the command's start, `started_at`, or
    now if None) and move to the next step."""
    started_at = state.total if started_at is None else started_at
    record = CommandRecord(state.step, command, verdict, exit_status, served_from, started_at)
    return attrs.evolve(state, step=state.step + 1, history=state.history + (record,))


def last_use(observation: Observation, state: State) -> int:
    """The latest step that recorded `observation` or served a Reuse from it."""
    served = [record.step for record in state.history if record.served_from == observation.step]
    return max([observation.step] + served)


def stored_bytes(state: State) -> int:
    """How many bytes of outputs the state holds."""
    return sum(observation.stored_bytes for observation in state.observations)


def evict(state: State, policy: Policy) -> State:
    """Drop the least recently used outputs until the total is within the policy's limit."""
    while stored_bytes(state) > policy.stored_output_limit:
        retained = [observation for observation in state.observations if observation.retained]
        oldest = min(retained, key=lambda observation: last_use(observation, state))
        state = attrs.evolve(
            state,
            observations=tuple(
                observation.dropped() if observation is oldest else observation for observation in state.observations
            ),
        )
    return state


def advance(
    state: State,
    command: Command,
    decision: Decision,
    output: str,
    exit_status: int,
    changes: Changes,
    fingerprint: Fingerprint | None = STEADY,
    policy: Policy = DEFAULT_POLICY,
) -> State:
    """One whole step, after govern returned `decision` and the command ran or was reused.

    For a reused step `output`, `exit_status`, `changes` and `fingerprint` are ignored: nothing
    ran. `fingerprint` is what an observation recorded at this step holds; `policy` bounds the
    stored outputs.
    post: __return__.step == state.step + 1
    """
    if isinstance(decision, Reuse):
        state = conclude(state, command, Verdict.REUSE, decision.exit_status, decision.observation.step)
        return evict(state, policy)
    state = start(state, SEQUENTIAL, command, decision, fingerprint)
    return finish(state, SEQUENTIAL, output, exit_status, changes, policy)


SEQUENTIAL: Final[str] = "<sequential step>"
"""The call name `advance` gives the command it starts and finishes at once."""


def check_startable(decision: Decision, call: Hashable, already_running: bool) -> None:
    """Raise ValueError unless a command may start as `call` under `decision`: a Reuse runs
    nothing, and a call name is used by one running command at a time. The optimized ledger
    calls this too, so both sides refuse the same events with the same words."""
    if isinstance(decision, Reuse):
        raise ValueError("a Reuse runs nothing: record it with advance, never start it")
    if already_running:
        raise ValueError(f"call {call!r} is already running")


def start(
    state: State, call: Hashable, command: Command, decision: Allow | Nudge, fingerprint: Fingerprint | None = STEADY,
    *, may_write: bool = False,
) -> State:
    """`command` begins to run under `decision`, as call `call`; stamp it with the counters now
    (G, i.e. the log so far) and `fingerprint`, the fingerprint taken now. A Reuse runs
    nothing, so it is never started: `advance` records it. It may write if its command is not
    read-only, or if the caller says so (`may_write`: it cannot tell this call from an earlier
    writer under the same name).

    post: __return__.total == state.total
    """
    check_startable(decision, call, any(pending.call == call for pending in state.pending))
    running = Pending(call, command, decision, state.total, fingerprint, may_write or not command.read_only)
    return attrs.evolve(state, pending=state.pending + (running,))


def finish(
    state: State,
    call: Hashable,
    output: str,
    exit_status: int,
    changes: Changes,
    policy: Policy = DEFAULT_POLICY,
    *,
    exact: bool = True,
    fingerprint_moved: bool = False,
) -> State:
    """Call `call` ended: record the detector's report `changes`, then, for a read-only command
    that changed nothing, an observation stamped at its start, and close the step.
    `exact=False`: the caller cannot vouch that `output` and `exit_status` are what the command
    printed, so no observation is recorded. `fingerprint_moved`: the caller saw the fingerprint
    change while the command ran (its output may mix both worlds), so the observation records
    None, never reusable.

    post: __return__.step == state.step + 1
    """
    running = _running(state, call)
    state = attrs.evolve(state, pending=tuple(pending for pending in state.pending if pending is not running))
    state = modify(state, changes)
    if exact and running.command.read_only and changes.empty:
        fingerprint = None if fingerprint_moved else running.fingerprint
        state = observe(state, running.command, output, exit_status, fingerprint, running.started_at)
    concluded = conclude(state, running.command, running.decision.verdict, exit_status, None, running.started_at)
    return evict(concluded, policy)


def abandon(state: State, call: Hashable) -> State:
    """Call `call` will never report: forget it, and count the workspace as changed in
    unknown scope (it may have changed anything, at any time since it started)."""
    running = _running(state, call)
    state = attrs.evolve(state, pending=tuple(pending for pending in state.pending if pending is not running))
    return modify(state, Changes(unknown=True))


def expire(state: State, calls: Iterable[Hashable]) -> State:
    """Calls `calls` are given up on (their result is long overdue) but may still report: count
    the workspace as changed in unknown scope, once, and stop counting them as writers in
    flight. They stay pending: a late `finish` closes their step, stamped at their start, so
    the unknown scope recorded now leaves their output never served."""
    given_up = {_running(state, call).call for call in calls}
    if not given_up:
        return state
    pending = tuple(
        attrs.evolve(running, may_write=False) if running.call in given_up else running for running in state.pending
    )
    return modify(attrs.evolve(state, pending=pending), Changes(unknown=True))


def writers_in_flight(state: State) -> int:
    """How many pending commands may still be writing."""
    return sum(1 for pending in state.pending if pending.may_write)


def _running(state: State, call: Hashable) -> Pending:
    for pending in state.pending:
        if pending.call == call:
            return pending
    raise ValueError(f"call {call!r} is not running")


def run(events: Iterable[tuple[Command, Decision, str, int, Changes]], state: State = INITIAL) -> State:
    """Fold `advance` over a sequence of steps (a steady fingerprint, the default policy)."""
    for command, decision, output, exit_status, changes in events:
        state = advance(state, command, decision, output, exit_status, changes)
    return state


# --- queries ------------------------------------------------------------------------------


def current(observation: Observation, state: State) -> bool:
    """Whether nothing `observation` depends on has changed since it was recorded."""
    target = observation.command.target
    if isinstance(target, FileTarget):
        return state.local(target.key) == observation.local and state.wildcard == observation.wildcard
    if isinstance(target, TreeTarget):
        return state.total == observation.total
    raise ValueError("an observation always has a target")


def reusable(observation: Observation, state: State, fingerprint: Fingerprint | None) -> bool:
    """Whether `observation` may serve a Reuse now: its output is still held, its counters are
    current, and the fingerprint taken now (never None) equals the one it recorded."""
    return (
        observation.retained
        and current(observation, state)
        and fingerprint is not None
        and observation.fingerprint == fingerprint
    )


def first_invalidation(observation: Observation, state: State) -> Modification | None:
    """The earliest modification that made `observation` potentially stale, if any."""
    target = observation.command.target
    for modification in state.modifications[observation.total :]:  # recorded after its stamp
        if isinstance(target, TreeTarget):
            return modification
        if modification.changes.unknown or target.key in modification.changes.paths:
            return modification
    return None


def interventions(state: State) -> int:
    """How many times govern reused or nudged so far."""
    return sum(1 for record in state.history if record.verdict in INTERVENING)


def serve(observation: Observation, command: Command, policy: Policy) -> tuple[str, int] | None:
    """What `observation` answers for `command`, as (output, exit status), if it can.

    Same normalized command and target: the stored result, if it exited 0 or was typed the
    same way (an error message may quote the path as typed). Same file and sliceable view:
    the requested lines cut from a stored wider range that exited 0.
    """
    stored, requested = observation.command, command
    if stored.normalized == requested.normalized and stored.target == requested.target:
        if observation.exit_status == 0 or stored.text == requested.text:
            return observation.output, observation.exit_status
    if not policy.range_reuse or observation.exit_status != 0:
        return None
    if not (isinstance(stored.target, FileTarget) and isinstance(requested.target, FileTarget)):
        return None
    if stored.target.key != requested.target.key or stored.target.view != requested.target.view:
        return None
    if stored.target.view not in SLICEABLE_VIEWS:
        return None
    stored_lines, output = stored.target.lines, observation.output
    if not (lines.consistent(stored_lines, output) and lines.can_serve(stored_lines, output, requested.target.lines)):
        return None
    return lines.serve(stored_lines, output, requested.target.lines), 0


def last_execution(state: State, command: Command) -> CommandRecord | None:
    """The latest step that ran a command with the same normalized text."""
    for record in reversed(state.history):
        if record.verdict not in WITHHOLDING and record.command.normalized == command.normalized:
            return record
    return None


def only_transient_changes_since(state: State, record: CommandRecord, policy: Policy) -> bool:
    """Whether every modification since `record`'s command touched only transient files: those
    recorded at its step or later, and those recorded while it ran (after its start)."""
    for position, modification in enumerate(state.modifications):
        if modification.step < record.step and position < record.started_at:
            continue
        if modification.changes.unknown:
            return False
        if any(not policy.is_transient(key) for key in modification.changes.paths):
            return False
    return True


# --- govern -------------------------------------------------------------------------------


def govern(
    state: State, command: Command, policy: Policy, fingerprint: Fingerprint | None = STEADY,
    request: Request = ANY_CALL,
) -> Decision:
    """Allow, Reuse or Nudge `command`, by the rules in this module's header. `fingerprint` is
    the fingerprint of `command` taken now; `request`, what the caller says of this call.

    post: implies(isinstance(__return__, Reuse), command.category in REUSABLE)
    post: implies(isinstance(__return__, Reuse), writers_in_flight(state) == 0)
    post: implies(isinstance(__return__, Reuse), request.withhold and not running_as(state, request.call))
    """
    if interventions(state) >= policy.intervention_cap:
        return Allow()
    if writers_in_flight(state):
        # Their writes may not have landed yet: neither "the same output" (Reuse) nor "nothing
        # changed since" (Nudge) can be said.
        return Allow()
    if not running_as(state, request.call):
        reuse = _reuse(state, command, answering(policy, request), fingerprint)
        if reuse is not None and request.withhold:
            return reuse
        if reuse is not None:
            return Nudge(texts.unchanged_note(reuse.observation.step))
    nudge = _nudge(state, command, policy)
    if nudge is not None:
        return nudge
    return Allow()


def running_as(state: State, call: Hashable | None) -> bool:
    """Whether a command named `call` is in flight (never, for a sequential step's None)."""
    return call is not None and any(pending.call == call for pending in state.pending)


def answering(policy: Policy, request: Request) -> Policy:
    """The policy a Reuse for `request` is served under: with range reuse off when only the
    same command's stored rendering may answer it."""
    return attrs.evolve(policy, range_reuse=False) if request.same_command_only and policy.range_reuse else policy


def _reuse(state: State, command: Command, policy: Policy, fingerprint: Fingerprint | None) -> Reuse | None:
    if command.category not in REUSABLE or command.target is None:
        return None
    for observation in reversed(state.observations):
        if not reusable(observation, state, fingerprint):
            continue
        served = serve(observation, command, policy)
        if served is None:
            continue
        output, exit_status = served
        output, note = texts.reuse_answer(observation.step, output, policy.reuse_mode)
        return Reuse(observation=observation, output=output, exit_status=exit_status, note=note)
    return None


def _nudge(state: State, command: Command, policy: Policy) -> Nudge | None:
    in_any_time = command.category in NUDGEABLE_ANY_TIME
    in_short_loop = command.category in NUDGEABLE_IN_SHORT_LOOP and policy.short_loop_window > 0
    if not (in_any_time or in_short_loop):
        return None
    for record in reversed(state.history):
        if record.verdict is Verdict.NUDGE:
            if state.step - record.step < policy.nudge_cooldown:
                return None
            break
    previous = last_execution(state, command)
    if previous is None or not only_transient_changes_since(state, previous, policy):
        return None
    if in_any_time or state.step - previous.step <= policy.short_loop_window:
        return Nudge(texts.nudge_note(previous, any_time=in_any_time))
    return None
