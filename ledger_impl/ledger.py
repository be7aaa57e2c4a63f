"""The optimized ledger: `ledger_spec`'s verdicts, view and counters, from indexed state.

The reference specification recounts its logs on every query, so one step costs O(n) or
worse in the number of observations. `Ledger` keeps the same three logs (so `snapshot()` can
hand them to the spec) and, beside them, indexes updated per event, so that
govern, advance and render cost O(1) amortized in the number of observations:

  counters      G, W and L[key], read off `ModificationIndex` (lengths of its position
                lists), so the log and the counters cannot drift apart.
  currentness   one `CurrentEpoch` per file key and one for the tree, holding exactly the
                current observations; a change that moves a counter drops the epochs it
                reaches (each observation is dropped at most once).
  reuse         per epoch and recorded fingerprint, the newest observation of each
                (normalized command, target) and a frontier of stored ranges per view; the
                newest of their candidates is the one the spec's newest-first scan would pick.
  memory        the retained outputs in least-recently-used order with their byte total; an
                epoch thrown away drops its members' outputs (they are stale), and past
                `Policy.stored_output_limit` the least recently used output is dropped.
  nudge         the last execution per normalized command, the step of the last nudge, and
                the step of the last change that was not purely transient.
  overlap       the commands in flight, each with G at its start; an observation is stamped
                with L[key] and W counted over the log's prefix at that G (bisection), and
                one that a change recorded since reaches is recorded without its output.
  view          the newest observation per normalized command in recency order, rendered
                newest first only until the character budget runs out; counts for the
                omission marker; bisection for stale reasons; bucketed repeat counts.

`properties/differential.py` checks, on generated sessions, that every decision, counter,
view and snapshot equals the spec's. The event methods (`modify`, `advance`, `start`, `finish`,
`abandon`) take the spec functions' arguments in the same order on purpose, so that the
differential feeds both sides the same calls; what holds no state worth indexing (the texts,
`serve`, `check_startable`) is the spec's own function, called, not copied.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Hashable, Iterable, Iterator

import attrs

from ledger_spec import Policy, State
from ledger_spec.state import INTERVENING, NUDGEABLE_ANY_TIME, NUDGEABLE_IN_SHORT_LOOP, REUSABLE, SEQUENTIAL, WITHHOLDING
from ledger_spec.state import answering, check_startable
from ledger_spec.state import serve as spec_serve
from ledger_spec.values import ANY_CALL, STEADY, Allow, Changes, Command, CommandRecord, Decision, FileTarget, Fingerprint
from ledger_spec.values import Modification, Nudge, Observation, Pending, Request, Reuse, Verdict, check_key

# The view's and the decisions' texts must be byte-identical to the spec's, so the spec's
# wording is called, never copied.
from ledger_spec import texts

from .ledger_index import CurrentEpoch, ModificationIndex, RepeatCounter


class Ledger:
    """Mutable execution state with the semantics of `ledger_spec.State` under one `Policy`."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy: Policy = policy if policy is not None else Policy()
        self._step = 0
        self._observations: list[Observation] = []
        self._history: list[CommandRecord] = []
        self._modifications = ModificationIndex()
        self._pending: dict[Hashable, Pending] = {}  # commands in flight, in start order
        # currentness and reuse
        self._file_epochs: dict[str, CurrentEpoch] = {}
        self._tree_epoch = CurrentEpoch(self.policy.range_reuse)
        # memory: retained observations by step, least recently used first, and their position
        self._retained: OrderedDict[int, int] = OrderedDict()  # step -> index in _observations
        self._stored_bytes = 0
        # govern bookkeeping
        self._interventions = 0
        self._last_nudge_step: int | None = None
        self._last_execution: dict[str, CommandRecord] = {}
        self._last_not_only_transient_step: int | None = None
        self._last_not_only_transient_position: int | None = None  # its index in the log
        # view bookkeeping
        self._transient: dict[str, bool] = {}
        # normalized -> (newest observation, its view line up to the status), oldest first
        self._newest_shown: dict[str, tuple[Observation, str]] = {}
        self._latest_modified: dict[str, int] = {}  # non-transient key -> step, oldest first
        self._modified_line: str | None = None
        self._modified_line_stale = False
        self._repeats = RepeatCounter()

    # --- counters and plain queries -----------------------------------------------------------

    @property
    def step(self) -> int:
        return self._step

    @property
    def total(self) -> int:
        """G: how many modifications happened."""
        return self._modifications.total

    @property
    def wildcard(self) -> int:
        """W: how many modifications had unknown scope."""
        return self._modifications.wildcard

    def local(self, key: str) -> int:
        """L[key]: how many modifications reported `key`. Unknown keys have L = 0."""
        check_key(key)
        return self._modifications.local(key)

    def counters_at(self, position: int, keys: Iterable[str]) -> tuple[int, int, tuple[tuple[str, int], ...]]:
        """G, W and L of each of `keys` when the log held `position` modifications (a command's
        start stamp): what a read that started then rests on."""
        log = self._modifications
        return position, log.count_unknown(before=position), tuple((key, log.count_touching(key, before=position)) for key in keys)

    def retained(self, step: int) -> Observation | None:
        """The observation of `step`, if it still holds its output."""
        index = self._retained.get(step)
        return None if index is None else self._observations[index]

    @property
    def stored_bytes(self) -> int:
        """How many bytes of outputs the ledger holds for Reuse."""
        return self._stored_bytes

    @property
    def interventions(self) -> int:
        """How many times govern reused or nudged so far (as recorded by `advance`)."""
        return self._interventions

    def snapshot(self) -> State:
        """The equal `ledger_spec.State`, rebuilt from the logs (O(n); for checks and tools)."""
        return State(
            step=self._step,
            modifications=tuple(self._modifications.log),
            observations=tuple(self._observations),
            history=tuple(self._history),
            pending=tuple(self._pending.values()),
        )

    @classmethod
    def from_state(cls, state: State, policy: Policy | None = None) -> "Ledger":
        """The ledger whose `snapshot()` is `state`, every index rebuilt from the logs (O(n)):
        how a stored session is loaded. The indexes are functions of the logs, so rebuilding
        them here, in log order, gives the ledger the events built; the differential's reload
        rule checks that the result keeps agreeing with the spec."""
        ledger = cls(policy)
        for position, modification in enumerate(state.modifications):
            ledger._modifications.append(modification)
            ledger._note_modified(modification.changes, modification.step, position)
        last_use: dict[int, int] = {}
        for record in state.history:
            ledger._note_concluded(record)
            if record.served_from is not None:
                last_use[record.served_from] = record.step
        for index, observation in enumerate(state.observations):
            ledger._observations.append(observation)
            target = observation.command.target
            assert target is not None, "only observations with a target are logged"
            if observation.retained:
                ledger._retained[observation.step] = index
                ledger._stored_bytes += observation.stored_bytes
                ledger._epoch_of(target).add(observation)
                last_use.setdefault(observation.step, observation.step)
            if not (isinstance(target, FileTarget) and ledger._is_transient(target.key)):
                ledger._newest_shown.pop(observation.command.normalized, None)
                ledger._newest_shown[observation.command.normalized] = (
                    observation, texts.observation_line_prefix(observation)
                )
        # Least recently used first: an output was last used when observed or last served.
        for step in sorted(ledger._retained, key=last_use.__getitem__):
            ledger._retained.move_to_end(step)
        ledger._pending = {pending.call: pending for pending in state.pending}
        ledger._step = state.step
        return ledger

    def _epoch_of(self, target: object) -> CurrentEpoch:
        """The epoch a current observation of `target` belongs to (made if there is none yet)."""
        if isinstance(target, FileTarget):
            epoch = self._file_epochs.get(target.key)
            if epoch is None:
                epoch = self._file_epochs[target.key] = CurrentEpoch(self.policy.range_reuse)
            return epoch
        return self._tree_epoch

    def _is_transient(self, key: str) -> bool:
        cached = self._transient.get(key)
        if cached is None:
            cached = self._transient[key] = self.policy.is_transient(key)
        return cached

    def is_current(self, observation: Observation) -> bool:
        """Spec `current`: nothing `observation` depends on changed since it was recorded."""
        target = observation.command.target
        if isinstance(target, FileTarget):
            counts = self._modifications
            return counts.local(target.key) == observation.local and counts.wildcard == observation.wildcard
        return self.total == observation.total

    # --- events -------------------------------------------------------------------------------

    def modify(self, changes: Changes) -> None:
        """Record a detector report (spec `modify`). A report that changed nothing does nothing."""
        if changes.empty:
            return
        step = self._step
        self._modifications.append(Modification(step, changes))
        # Any change moves G, so no tree observation is current any more.
        self._drop_epoch(self._tree_epoch)
        self._tree_epoch = CurrentEpoch(self.policy.range_reuse)
        if changes.unknown:
            for epoch in self._file_epochs.values():
                self._drop_epoch(epoch)
            self._file_epochs.clear()  # W moved: no file observation is current any more
        for key in changes.paths:
            dropped = self._file_epochs.pop(key, None)
            if dropped is not None:
                self._drop_epoch(dropped)
        self._note_modified(changes, step, self._modifications.total - 1)

    def _note_modified(self, changes: Changes, step: int, position: int) -> None:
        """The nudge and view bookkeeping of one logged modification at `position`."""
        if changes.unknown:
            self._last_not_only_transient_step = step
            self._last_not_only_transient_position = position
        for key in changes.paths:
            if not self._is_transient(key):
                self._last_not_only_transient_step = step
                self._last_not_only_transient_position = position
                # Re-insert so the dict stays in last-modified order (steps never decrease).
                self._latest_modified.pop(key, None)
                self._latest_modified[key] = step
        self._modified_line_stale = True

    def advance(
        self, command: Command, decision: Decision, output: str, exit_status: int, changes: Changes,
        fingerprint: Fingerprint | None = STEADY,
    ) -> None:
        """One whole step (spec `advance`). For a reused step `output`, `exit_status`, `changes`
        and `fingerprint` are ignored: nothing ran."""
        if isinstance(decision, Reuse):
            served = decision.observation.step
            self._conclude(command, Verdict.REUSE, decision.exit_status, served)
            if served in self._retained:
                self._retained.move_to_end(served)
            self._evict()
            return
        self.start(SEQUENTIAL, command, decision, fingerprint)
        self.finish(SEQUENTIAL, output, exit_status, changes)

    def start(
        self, call: Hashable, command: Command, decision: Decision, fingerprint: Fingerprint | None = STEADY,
        *, may_write: bool = False,
    ) -> None:
        """`command` begins to run under `decision` as `call` (spec `start`)."""
        check_startable(decision, call, call in self._pending)
        self._pending[call] = Pending(
            call, command, decision, self._modifications.total, fingerprint, may_write or not command.read_only
        )

    def finish(
        self, call: Hashable, output: str, exit_status: int, changes: Changes, *, exact: bool = True,
        fingerprint_moved: bool = False,
    ) -> None:
        """Call `call` ended (spec `finish`)."""
        running = self._take_pending(call)
        self.modify(changes)
        if exact and running.command.read_only and changes.empty:
            fingerprint = None if fingerprint_moved else running.fingerprint
            self._observe(running.command, output, exit_status, fingerprint, running.started_at)
        self._conclude(running.command, running.decision.verdict, exit_status, started_at=running.started_at)
        self._evict()

    def abandon(self, call: Hashable) -> None:
        """Call `call` will never report (spec `abandon`)."""
        self._take_pending(call)
        self.modify(Changes(unknown=True))

    def expire(self, calls: Iterable[Hashable]) -> None:
        """Calls `calls` are given up on but may still report (spec `expire`)."""
        given_up = list(calls)
        for call in given_up:
            if call not in self._pending:
                raise ValueError(f"call {call!r} is not running")
        for call in given_up:
            self._pending[call] = attrs.evolve(self._pending[call], may_write=False)
        if given_up:
            self.modify(Changes(unknown=True))

    def writers_in_flight(self) -> int:
        """How many pending commands may still be writing (spec `writers_in_flight`)."""
        return sum(1 for pending in self._pending.values() if pending.may_write)

    def running(self, call: Hashable) -> Pending | None:
        """The pending command of `call`, if it is in flight."""
        return self._pending.get(call)

    def running_calls(self) -> tuple[Hashable, ...]:
        """The calls in flight, in start order."""
        return tuple(self._pending)

    def _take_pending(self, call: Hashable) -> Pending:
        running = self._pending.pop(call, None)
        if running is None:
            raise ValueError(f"call {call!r} is not running")
        return running

    # --- memory -------------------------------------------------------------------------------

    def _drop(self, step: int) -> Observation:
        """Drop the retained observation of `step`'s output; return the retained version."""
        index = self._retained.pop(step)
        observation = self._observations[index]
        self._observations[index] = observation.dropped()
        self._stored_bytes -= observation.stored_bytes
        return observation

    def _drop_epoch(self, epoch: CurrentEpoch) -> None:
        """An epoch's members went stale: their outputs can never serve again."""
        for step in epoch.members:
            self._drop(step)

    def _evict(self) -> None:
        """Spec `evict`: least recently used outputs go until the total fits the limit."""
        while self._stored_bytes > self.policy.stored_output_limit:
            step = next(iter(self._retained))
            observation = self._drop(step)
            target = observation.command.target
            epoch = self._file_epochs.get(target.key) if isinstance(target, FileTarget) else self._tree_epoch
            assert epoch is not None, "a retained observation is a member of a live epoch"
            epoch.remove(observation)

    def _observe(
        self, command: Command, output: str, exit_status: int, fingerprint: Fingerprint | None, started_at: int
    ) -> None:
        target = command.target
        if target is None:
            return  # nothing could ever prove it current
        is_file = isinstance(target, FileTarget)
        log = self._modifications
        observation = Observation(
            step=self._step,
            command=command,
            output=output,
            exit_status=exit_status,
            local=log.count_touching(target.key, before=started_at) if is_file else 0,
            wildcard=log.count_unknown(before=started_at),
            total=started_at,
            fingerprint=fingerprint,
        )
        if self.is_current(observation):
            self._retained[observation.step] = len(self._observations)
            self._stored_bytes += observation.stored_bytes
            self._epoch_of(target).add(observation)
        else:
            # A change recorded since its command started may have reached it midway.
            observation = observation.dropped()
        self._observations.append(observation)
        if not (is_file and self._is_transient(target.key)):
            self._newest_shown.pop(command.normalized, None)
            self._newest_shown[command.normalized] = (observation, texts.observation_line_prefix(observation))

    def _conclude(
        self, command: Command, verdict: Verdict, exit_status: int, served_from: int | None = None,
        started_at: int | None = None,
    ) -> None:
        started_at = self._modifications.total if started_at is None else started_at
        self._note_concluded(CommandRecord(self._step, command, verdict, exit_status, served_from, started_at))
        self._step += 1

    def _note_concluded(self, record: CommandRecord) -> None:
        """Log one concluded command, with govern's and the view's bookkeeping of it."""
        self._history.append(record)
        if record.verdict in INTERVENING:
            self._interventions += 1
        if record.verdict is Verdict.NUDGE:
            self._last_nudge_step = record.step
        if record.verdict not in WITHHOLDING:
            self._last_execution[record.command.normalized] = record
        self._repeats.record(record.command.normalized)

    # --- govern -------------------------------------------------------------------------------

    def govern(self, command: Command, fingerprint: Fingerprint | None = STEADY, request: Request = ANY_CALL) -> Decision:
        """Allow, Reuse or Nudge `command`, exactly as spec `govern` would on this state, given
        `fingerprint`, the fingerprint of `command` taken now, and what the caller says of the
        call (`request`)."""
        if self._interventions >= self.policy.intervention_cap:
            return Allow()
        if self.writers_in_flight():
            return Allow()  # their writes may not have landed yet (spec `govern`)
        if request.call is None or request.call not in self._pending:
            reuse = self._reuse(command, fingerprint, answering(self.policy, request))
            if reuse is not None and request.withhold:
                return reuse
            if reuse is not None:
                return Nudge(texts.unchanged_note(reuse.observation.step))
        nudge = self._nudge(command)
        if nudge is not None:
            return nudge
        return Allow()

    def _reuse(self, command: Command, fingerprint: Fingerprint | None, policy: Policy) -> Reuse | None:
        target = command.target
        if command.category not in REUSABLE or target is None:
            return None
        # Only observations of the same file (or tree observations, for a tree target) can
        # serve, and the epoch holds exactly the current ones among those.
        epoch = self._file_epochs.get(target.key) if isinstance(target, FileTarget) else self._tree_epoch
        observation = (
            epoch.newest_serving(command, fingerprint, ranges=policy.range_reuse) if epoch is not None else None
        )
        if observation is None:
            return None
        served = spec_serve(observation, command, policy)
        assert served is not None, "the reuse index chose an observation that cannot serve"
        output, exit_status = served
        output, note = texts.reuse_answer(observation.step, output, policy.reuse_mode)
        return Reuse(observation=observation, output=output, exit_status=exit_status, note=note)

    def _nudge(self, command: Command) -> Nudge | None:
        policy = self.policy
        in_any_time = command.category in NUDGEABLE_ANY_TIME
        in_short_loop = command.category in NUDGEABLE_IN_SHORT_LOOP and policy.short_loop_window > 0
        if not (in_any_time or in_short_loop):
            return None
        if self._last_nudge_step is not None and self._step - self._last_nudge_step < policy.nudge_cooldown:
            return None
        previous = self._last_execution.get(command.normalized)
        if previous is None:
            return None
        # Modification steps and positions never decrease, so "only transient changes since"
        # is "the last change that was not purely transient came before its step and before
        # its start".
        if self._last_not_only_transient_step is not None and (
            self._last_not_only_transient_step >= previous.step
            or self._last_not_only_transient_position >= previous.started_at  # type: ignore[operator]
        ):
            return None
        if in_any_time or self._step - previous.step <= policy.short_loop_window:
            return Nudge(texts.nudge_note(previous, any_time=in_any_time))
        return None

    # --- inform -------------------------------------------------------------------------------

    def render(self, task: str = "") -> str:
        """The view, byte-identical to `ledger_spec.render(self.snapshot(), policy, task)`.

        Body lines are produced lazily and only until one does not fit, so the cost depends on
        the budget, not on how many observations there are; the omission marker needs only
        how many lines there would be, which is known from the indexes.
        """
        header = texts.view_header(self._step, self._interventions, self.policy.intervention_cap, task)
        modified = self._modified()
        body_count = (
            (1 if modified else 0)
            + (1 + len(self._newest_shown) if self._newest_shown else 0)
            + (1 if self._repeats.repeated else 0)
        )
        return _fit_lazily(header, self._body(modified), body_count, self.policy.view_budget)

    def _body(self, modified: str | None) -> Iterator[str | None]:
        if modified:
            yield modified
        if self._newest_shown:
            yield texts.OBSERVATIONS_HEADING
            for observation, prefix in reversed(self._newest_shown.values()):
                if self.is_current(observation):
                    status = texts.CURRENT
                else:
                    status = texts.stale_reason(observation, self._modifications.first_invalidation(observation))
                yield texts.observation_line(prefix, status)
        if self._repeats.repeated:
            yield self._repeated_line()

    def _modified(self) -> str | None:
        if self._modified_line_stale:
            self._modified_line = self._build_modified_line()
            self._modified_line_stale = False
        return self._modified_line

    def _build_modified_line(self) -> str | None:
        """Spec `_modified_line`: the newest non-transient keys by (step desc, key asc)."""
        latest = self._latest_modified
        last_unknown_step = self._modifications.last_unknown_step
        if not latest and last_unknown_step is None:
            return None
        shown = self.policy.view_recent_modifications
        chosen: list[str] = []
        group: list[str] = []  # keys sharing one step, which the spec orders by key
        group_step: int | None = None
        for key, step in reversed(latest.items()):
            if step != group_step:
                chosen.extend(sorted(group))
                group = []
                if len(chosen) >= shown:
                    break
                group_step = step
            group.append(key)
        chosen.extend(sorted(group))
        shown_pairs = [(key, latest[key]) for key in chosen[:shown]]
        return texts.modified_line(shown_pairs, len(latest) - shown, last_unknown_step)

    def _repeated_line(self) -> str | None:
        """Spec `_repeated_line`, or None once it is certain to exceed the whole budget (then
        it cannot fit and only its existence matters)."""
        budget = self.policy.view_budget
        parts: list[str] = []
        length = len(texts.REPEATED_PREFIX) - len(texts.REPEATED_SEPARATOR)
        for normalized, count in self._repeats.most_repeated():
            part = texts.repeated_part(normalized, count)
            parts.append(part)
            length += len(part) + len(texts.REPEATED_SEPARATOR)
            if length > budget:
                return None
        return texts.REPEATED_PREFIX + texts.REPEATED_SEPARATOR.join(parts)


def _fit_lazily(header: str, body: Iterator[str | None], body_count: int, budget: int) -> str:
    """Spec `view._fit` over lazily produced lines; a None line is one longer than the budget."""
    pieces = [header[:budget]]
    length = len(pieces[0])
    for index, line in enumerate(body):
        remaining = body_count - index - 1
        marker = len(texts.omission_marker(remaining)) if remaining else 0
        if line is not None and length + 1 + len(line) + marker <= budget:
            pieces.append(line)
            length += 1 + len(line)
            continue
        omitted = texts.omission_marker(body_count - index)
        text = "\n".join(pieces)
        return text + omitted if length + len(omitted) <= budget else text
    return "\n".join(pieces)
