"""DurableSession: govern commands that someone else runs, across processes and crashes.

Claude Code and Codex run each command themselves and call a hook process before
(`decide`) and after (`record`) it; every call is a new process, and calls can overlap. The
session keeps the ledger and the detector's baseline in the workspace's database (see
`ledger_impl.store`) and does each call in one `BEGIN IMMEDIATE` transaction.

Theory of operation.
- decide(command, call_id): load the state; expire abandoned calls; poll the detector for
  everything changed since the stored baseline and record it; govern. A Reuse is answered at
  once (nothing runs, no record follows). Anything else *starts* the call in the ledger (spec
  `start`: stamped with the counters at the command's start) and leaves a *pending* row for
  abandonment and a call id decided twice.
- record(call_id, output, exit_code): load; poll and record what changed since (while the
  command ran, and anything else); *finish* the call (spec `finish`). Its observation carries
  the counters at its start, so a change recorded since then by any command (one that
  overlapped it, or itself) that reaches its target makes it stale at once: recorded without
  its output, never served. A change to another file does not.
- Reuse is refused while another call that may write is in flight: its writes may not have
  landed yet. Calls in flight that only read do not block it. The spec's govern enforces this
  (`ledger_spec.writers_in_flight`, from each pending call's `may_write`).
- What the hook says of its call is the spec's `Request` (`decide`'s `call_id`, `serve_slices`
  and `withhold`), and govern applies it: the session adds no refusal of its own.
- A call decided and never recorded (the agent was interrupted, the tool failed with no
  PostToolUse) is abandoned after `abandon_after` seconds, or at once by `abandon()` (spec
  `expire`): the workspace is then treated as changed in unknown scope, and the call no longer
  counts as a writer in flight.
- State that cannot be shown intact is discarded with a note, which reaches the agent in the
  next Decision's `degraded`. Losing state costs reuse, never correctness.
- With the probe on (the default; `ledger_impl.session_probe`), a read's stored output serves
  only once a probe run, after the agent's answer was given, has confirmed it and its traced
  dependencies hold: `record` queues the probe, `run_probe` runs it (a detached process of the
  command hook, the service's background worker). Until then, or if it refused, nothing is
  served from that output.
"""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Iterable
from typing import Mapping

import attrs

from ledger_spec import Changes, Command, Policy, Request, Reuse, State
from ledger_spec.degraded import Degraded, from_notes
from ledger_spec.values import FileTarget, Nudge

from . import session_probe, state_codec, state_rows
from .classifier import classify
from .context_journal import ContextJournal
from .detectors import session_detector
from .detectors.protocol import Detector, as_detector
from .engine import UNKNOWN_SCOPE, fingerprint_and_refusal, first_reuse, observation_fingerprint
from .fingerprint import Fingerprint
from .ledger import Ledger
from .probe import DEFAULT_PROBE_TIMEOUT
from .probe import rendering as renderings
from .probe.guard import NONE_HOLDS, TracedFingerprint
from .state_rows import Row, Written
from .store import PendingRow, StateRow, Store, new_revision

# Claude Code's Bash tool stops a command after 10 minutes at most; a call still pending well
# after that was abandoned.
DEFAULT_ABANDON_AFTER_S = 15 * 60.0
# An abandoned call whose record has not come after this long is dropped from the store.
FORGET_ABANDONED_AFTER_S = 24 * 3600.0
# Outputs longer than this (in UTF-8 bytes) are never stored, so never reused.
DEFAULT_OUTPUT_CAP = 256 * 1024


@attrs.frozen
class Decision:
    """What the hook tells the agent about one proposed command."""

    verdict: str  # 'allow' | 'reuse' | 'nudge'
    output: str | None = None  # the stored output, if reuse
    exit_code: int | None = None  # the stored exit status, if reuse
    note: str | None = None  # the nudge or reuse note for the agent
    served_step: int | None = None  # the step whose result is reused
    degraded: Degraded | None = None  # any degraded or unknown state the user should see


@attrs.frozen
class Recorded:
    """What recording a finished call tells the hook that recorded it."""

    step: int | None  # the ledger step of its result (what a later Reuse names); None: not in flight
    nudge_note: str | None = None  # the note of the Nudge it was decided with, for an after-call answer


class DurableSession:
    """The ledger of one workspace root, shared by every process that opens it."""

    def __init__(
        self,
        root: pathlib.Path,
        store: Store,
        policy: Policy,
        detector: Detector,
        *,
        output_cap: int,
        abandon_after: float,
        probe: bool = True,
        probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
    ) -> None:
        self.root = root
        # False: Reuse rests on the counters and the enumerated fingerprint alone (to measure
        # those lines on their own); True: also on a confirmed probe (`run_probe`).
        self.probe = probe
        self.probe_timeout = probe_timeout
        # The probes `record` queued in this process, for its caller to run after answering.
        self.queued_probes: list[int] = []
        self.policy = policy
        # Any detector speaks the protocol; one that keeps its baseline in memory (`Bracketed`)
        # reports unknown scope at every call of a new hook process, which is honest.
        self.detector = as_detector(detector)
        self.output_cap = output_cap
        self.abandon_after = abandon_after
        self._store = store
        # The environment the agent's commands run with, which classification and fingerprints
        # read (PATH, HOME's git config, TZ, ...): a hook process inherits it, so by default its
        # own; a resident service sets the calling agent's for each call.
        self.environment: Mapping[str, str] | None = None
        # How the agent's hooks answer a Reuse: "verbatim" (the stored output) or "reference"
        # (a note pointing at the earlier result, when the model provably still holds it in
        # full; `context` tracks that). Set by the hook or the service for each call.
        self.reuse_answer: str = "verbatim"
        self.context = ContextJournal(store)
        # What this process stored last: the ledger object, the revision its save wrote and
        # what the rows hold. A load that finds the same revision uses the object instead of
        # decoding the whole state and rebuilding its indexes, which grows with the session (a
        # resident service loads at every call), and the next save writes only what changed.
        # Taken out at each load, so that an object changed by a call whose transaction then
        # rolled back is never used: it is put back only by a save.
        self._saved: _Saved | None = None

    @classmethod
    def open(
        cls,
        root: str | os.PathLike[str],
        *,
        state_dir: str | os.PathLike[str] | None = None,
        policy: Policy | None = None,
        detector: Detector | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        abandon_after: float = DEFAULT_ABANDON_AFTER_S,
        probe: bool = True,
        probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
    ) -> "DurableSession":
        path = pathlib.Path(root)
        if not path.is_dir():
            raise ValueError(f"session root must be an existing directory: {os.fspath(root)!r}")
        if output_cap < 0:
            raise ValueError(f"output_cap must be non-negative, got {output_cap!r}")
        if abandon_after <= 0:
            raise ValueError(f"abandon_after must be positive, got {abandon_after!r}")
        resolved = path.resolve()
        store = Store.open(resolved, state_dir)
        return cls(
            resolved,
            store,
            policy if policy is not None else Policy(),
            detector if detector is not None else session_detector(state_dir),
            output_cap=output_cap,
            abandon_after=abandon_after,
            probe=probe,
            probe_timeout=probe_timeout,
        )

    @property
    def database(self) -> pathlib.Path:
        return self._store.path

    # --- the two calls around a command -------------------------------------------------------

    def decide(
        self, command: str, *, call_id: str, cwd: str | os.PathLike[str] | None = None, serve_slices: bool = True,
        withhold: bool = True,
    ) -> Decision:
        """Govern `command` before the agent runs it. Unless the verdict is 'reuse', the agent
        runs it and `record(call_id, ...)` follows. `serve_slices=False`: the recorded outputs
        are an agent's rendering (Claude strips leading blank lines and trailing whitespace),
        not the command's bytes, so lines cut from one command's output cannot serve another:
        only an observation of the same command does. `withhold=False`: the agent runs this
        call whatever the answer (a file read its edits require, a command sent to the
        background), so a stored result that would serve it is named in a Nudge instead. Both
        are the spec's `Request`, as is `call_id`: a call id still in flight is never served."""
        if not isinstance(command, str):
            raise TypeError(f"a command is a string, got {type(command).__name__}")
        _check_call_id(call_id)
        with self._store.transaction():
            state = self._load()
            # Classified after the poll: the names it resolves on disk (symbolic links) are those
            # of the state the start stamp covers; a change after the poll is caught at record.
            classified = classify(
                command, cwd=self._relative_cwd(cwd), root=self.root, environment=self._environment()
            )
            started_with, refusal = fingerprint_and_refusal(self.root, classified, self._environment())
            request = Request(call=call_id, same_command_only=not serve_slices, withhold=withhold)
            decision, probed = self._govern(state, classified, started_with, request)
            # An id still pending names two calls at once: which result a record carries is
            # unknowable, so nothing is served (spec `Request.call`), and the earlier call is
            # treated as abandoned (below) with its may-write flag carried over.
            earlier = next((row for row in self._store.pending() if row.call_id == call_id and not row.abandoned), None)
            if refusal is not None:
                state.notes.append(refusal)
            writers = state.ledger.writers_in_flight()
            if writers and classified.read_only and classified.target is not None:
                # Govern serves nothing while they run (spec `writers_in_flight`): say why.
                state.notes.append(f"not reused: {writers} command(s) that may write still running")
            if isinstance(decision, Reuse):
                state.ledger.advance(classified, decision, "", decision.exit_status, Changes())
                result = Decision(
                    "reuse",
                    decision.output,
                    decision.exit_status,
                    decision.note,
                    decision.observation.step,
                    from_notes(state.notes),
                )
            else:
                ambiguous = earlier is not None or state.ledger.running(call_id) is not None
                if state.ledger.running(call_id) is not None:
                    state.ledger.abandon(call_id)  # the earlier call under this id (it may have run)
                # A read under the id of an earlier writer may be that writer still running.
                inherited = earlier is not None and earlier.may_write
                state.ledger.start(
                    call_id, classified, decision, self._probed_start(classified, started_with, call_id, cwd),
                    may_write=inherited,
                )
                may_write = not classified.read_only or inherited
                self._store.add_pending(
                    PendingRow(call_id, _storable(command), state.ledger.total, may_write, time.time())
                )
                if ambiguous:
                    # After this call's start stamp: its own record then counts as overlapped.
                    state.ledger.modify(UNKNOWN_SCOPE)
                    self._store.add_note(
                        f"call id {call_id!r} decided again while in flight: the earlier call is abandoned, changes unknown"
                    )
                    state.notes.extend(self._store.take_unshown_notes())
                if probed is not None:
                    state.notes.append(probed)
                result = Decision(decision.verdict.value, note=getattr(decision, "note", None), degraded=from_notes(state.notes))
            self._save(state)
        return result

    def record(
        self, call_id: str, output: str, exit_code: int, *, exact: bool = True, ran: str | None = None,
        rendering: str = renderings.EXACT,
    ) -> Recorded:
        """What the command decided under `call_id` printed and returned; the detector's report of
        everything changed since the last call is recorded with it. `exact=False`: the caller
        cannot vouch that `output` and `exit_code` are exactly what the command printed and
        returned (an agent's hook that sees only a reformatted or status-less result): the
        step is kept, its output is never served. `ran`: the command the agent reports it ran;
        when it is not the one decided (another hook rewrote it, the payloads disagree), what
        ran is unknown: the step is recorded as a change in unknown scope, its output not kept.
        `rendering`: how the agent showed `output` (`ledger_impl.probe.rendering`). With the
        probe on, a stored output is queued for its probe (`queued_probes`, `run_probe`).
        Returns the ledger step of the call's result (what a later Reuse names; None when the
        call was not in flight) and the note of the Nudge the call was decided with (None for
        any other verdict), for an agent that can hand its model a note only after the call
        (Gemini CLI, Qwen Code)."""
        _check_call_id(call_id)
        if not isinstance(output, str):
            raise TypeError(f"output is a string, got {type(output).__name__}")
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            raise TypeError(f"exit_code is an int, got {type(exit_code).__name__}")
        if rendering not in renderings.RENDERINGS:
            raise ValueError(f"unknown rendering {rendering!r}")
        with self._store.transaction():
            state = self._load()
            running = state.ledger.running(call_id)
            step = None if running is None else state.ledger.step
            if running is None:
                # Never decided, forgotten long after it was abandoned, or decided under a
                # ledger since discarded: nothing to observe; what it changed was recorded by
                # the poll in `_load`. An inexact result would not have been kept anyway (a
                # hook's Read answered as unchanged), so it leaves no note.
                if exact:
                    self._store.add_note(f"record for unknown call {call_id!r}: its output is not kept")
            elif ran is not None and ran != running.command.text:
                state.ledger.finish(call_id, output, exit_code, UNKNOWN_SCOPE, exact=False)
                self._store.add_note(
                    f"call {call_id!r} ran a command other than the one decided (rewritten by another hook?): "
                    "changes unknown, its output not kept"
                )
            else:
                # A fingerprint that moved while the command ran: its output may mix both worlds.
                taken = observation_fingerprint(self.root, running.command, self._environment())
                moved = taken != session_probe.enumerated(running.fingerprint)
                step = state.ledger.step
                # surrogatepass: JSON can carry lone surrogates, which no strict codec encodes.
                too_long = len(output.encode("utf-8", "surrogatepass")) > self.output_cap
                # Changes() because the poll in `_load` already recorded everything it changed.
                state.ledger.finish(
                    call_id, output, exit_code, Changes(), exact=exact and not too_long, fingerprint_moved=moved
                )
                queued = session_probe.queue(self._store, state.ledger, running.fingerprint, step, rendering)
                if queued is not None:
                    self.queued_probes.append(queued)
            if running is not None:
                session_probe.forget_unqueued(self._store, running.fingerprint)
            self._store.remove_pending(call_id)
            self._save(state)
        note = running.decision.note if running is not None and isinstance(running.decision, Nudge) else None
        return Recorded(step, note)

    def run_probe(self, probe_id: int, environment: Mapping[str, str] | None = None) -> str | None:
        """Run the queued probe `probe_id` (outside any transaction: it takes as long as the
        read, within `probe_timeout`) and store its verdict: confirmed, its observation may
        serve while its traced dependencies hold; refused, never, and a note says why (the
        reason is also returned). `environment`: the agent's, as the command ran with it
        (the session's own by default). Returns None when confirmed or not runnable here."""
        with self._store.transaction():
            job = session_probe.claim(self._store, self._stored_ledger(), probe_id)
        if job is None:
            return None
        result = session_probe.run(self.root, job, self._environment() if environment is None else environment,
                                   self.probe_timeout, self.output_cap)
        with self._store.transaction():
            return session_probe.settle(self._store, self._stored_ledger(), job, result)

    def run_queued_probes(self, environment: Mapping[str, str] | None = None) -> None:
        """Run every probe this process's `record` calls queued (see `run_probe`)."""
        while self.queued_probes:
            self.run_probe(self.queued_probes.pop(0), environment)

    def wait_for_probes(self, timeout: float) -> bool:
        """Wait until no probe is queued or running (another process or thread runs them), at
        most `timeout` seconds; whether none is left."""
        deadline = time.monotonic() + timeout
        while True:
            with self._store.transaction():
                if not self._store.unfinished_probes():
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def refuse_unfinished_probes(self, reason: str) -> int:
        """Refuse every probe that is queued or running: their runner is gone (a service that
        restarted), so they never confirm; how many."""
        with self._store.transaction():
            count = self._store.refuse_unfinished_probes(reason)
            if count:
                self._store.add_note(f"{count} probe(s) refused: {reason}; their outputs are not served")
        return count

    def abandon(self, call_id: str | None = None, reason: str = "abandoned") -> int:
        """Declare one pending call (or all) abandoned: the workspace is then treated as changed
        in unknown scope. Returns how many calls were pending."""
        with self._store.transaction():
            state = self._load()
            rows = [
                row for row in self._store.pending() if not row.abandoned and (call_id is None or row.call_id == call_id)
            ]
            for row in rows:
                self._store.mark_abandoned(row.call_id)
            if rows:
                _expire(state.ledger, [row.call_id for row in rows])
                self._store.add_note(f"{len(rows)} command(s) {reason} before their result was recorded: changes unknown")
            self._save(state)
        return len(rows)

    # --- inform and housekeeping --------------------------------------------------------------

    def view(self, task: str = "") -> str:
        """The inform view of the stored ledger (read only; no poll)."""
        with self._store.transaction():
            state = self._load(poll=False)
            self._save(state)
        return state.ledger.render(task)

    def snapshot(self) -> State:
        """The stored ledger as a `ledger_spec.State` (read only; no poll): for checks and tools."""
        with self._store.transaction():
            state = self._load(poll=False)
            self._save(state)
        return state.ledger.snapshot()

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> "DurableSession":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- internals ----------------------------------------------------------------------------

    def _relative_cwd(self, cwd: str | os.PathLike[str] | None) -> str:
        if cwd is None:
            return "."
        return os.path.relpath(os.path.realpath(cwd), self.root)

    def _load(self, *, poll: bool = True) -> "_State":
        """The stored state, repaired: damaged parts discarded with a note, abandoned calls
        expired, and (with `poll`) everything changed since the last call recorded."""
        row = self._store.load_state()
        saved, self._saved = self._saved, None
        ledger: Ledger | None = None
        written: Written | None = None
        index: bytes | None = None
        if row is not None:
            index = row.stat_index
            if saved is not None and saved.holds(row, self.policy):
                ledger, written, problem = saved.ledger, saved.written, None
            else:
                ledger, written, problem = trusted_ledger(row, self._store.load_rows(), self.policy)
            if problem is not None:
                self._store.add_note(f"session state discarded: {problem}; starting a new ledger")
                self._store.clear_pending()
        if ledger is None:
            ledger = Ledger(self.policy)
        state = _State(ledger, index, written)
        now = time.time()
        expired = [
            row for row in self._store.pending() if not row.abandoned and now - row.started_at > self.abandon_after
        ]
        for pending in expired:
            # Kept, marked: a record arriving late still concludes the step (with no observation:
            # the unknown scope recorded now moved G since its start).
            self._store.mark_abandoned(pending.call_id)
        self._store.forget_abandoned(now - FORGET_ABANDONED_AFTER_S)
        stored = {pending.call_id for pending in self._store.pending()}
        for call in [call for call in ledger.running_calls() if call not in stored]:
            ledger.abandon(call)  # its row was forgotten: it will never be finished
        given_up = [pending.call_id for pending in expired]
        # Marked abandoned by a Ledger that predates spec `expire`: still counted as writers.
        given_up += [
            row.call_id for row in self._store.pending()
            if row.abandoned and row.call_id not in given_up and _may_write(ledger, row.call_id)
        ]
        if given_up:
            _expire(ledger, given_up)
        if expired:
            self._store.add_note(
                f"{len(expired)} command(s) never reported a result within {self.abandon_after:.0f} s: changes unknown"
            )
        if poll:
            self._poll(state)
        state.notes.extend(self._store.take_unshown_notes())
        return state

    def _poll(self, state: "_State") -> None:
        """Record everything the detector finds changed since the stored baseline."""
        has_history = state.ledger.step > 0 or bool(self._store.pending())
        try:
            changes, index, problem = self.detector.changes_since(self.root, state.index)
        except Exception as error:  # noqa: BLE001 - a failed scan proves nothing unchanged
            state.ledger.modify(UNKNOWN_SCOPE)
            self._store.add_note(f"{self.detector.name} failed ({error!r}): changes unknown")
            return
        state.index = index
        if problem is not None and not has_history:
            return  # nothing observed yet, so nothing a first baseline must vouch for
        if problem is not None:
            self._store.add_note(f"{self.detector.name}: {problem}")
        state.ledger.modify(changes)

    def _save(self, state: "_State") -> None:
        """Write what changed since the load (everything, if what the rows held was unknown)."""
        policy = state_codec.dumps(state.ledger.policy)
        rows, written = state_rows.changes(state.ledger.snapshot(), state.written)
        revision = new_revision()
        self._store.save_state(policy, rows, revision, state.index, state.ledger.step)
        self._saved = _Saved(revision, policy, state.ledger, written)

    def _govern(
        self, state: "_State", classified: Command, started_with: Fingerprint | None, request: Request
    ) -> tuple[object, Degraded | None]:
        """The ledger's decision, and why the probe costs reuse here (None: it does not). With
        the probe on, govern is given, in turn, a fingerprint naming each confirmed probe that
        could answer and whose traced dependencies all hold (newest first), as the Runtime does
        (`ledger_impl.probe.guard`), and last one naming no probe."""
        if not self.probe or started_with is None or not classified.read_only or classified.target is None:
            return state.ledger.govern(classified, started_with, request), None
        unavailable = session_probe.unavailable()
        if unavailable is not None:
            return state.ledger.govern(classified, TracedFingerprint(started_with, NONE_HOLDS), request), unavailable
        target = classified.target
        key = target.key if isinstance(target, FileTarget) and not request.same_command_only else None
        candidates = session_probe.candidates(self._store, classified, key, started_with, state.ledger)
        return first_reuse(state.ledger, classified, candidates, TracedFingerprint(started_with, NONE_HOLDS), request)[0], None

    def _probed_start(
        self, classified: Command, started_with: Fingerprint | None, call_id: str, cwd: str | os.PathLike[str] | None
    ) -> Fingerprint | None:
        """The fingerprint a call starts with: with the probe on, a read's names a new probe row,
        so that its observation can serve only once that probe is confirmed."""
        if not self.probe or started_with is None or not classified.read_only or classified.target is None:
            return started_with
        key = classified.target.key if isinstance(classified.target, FileTarget) else None
        probe_id = self._store.add_probe(call_id, classified.normalized, key, self._relative_cwd(cwd), time.time_ns())
        return TracedFingerprint(started_with, probe_id)

    def _stored_ledger(self) -> Ledger | None:
        """The stored ledger, if intact (read inside the caller's transaction; no poll)."""
        row = self._store.load_state()
        if row is None:
            return None
        if self._saved is not None and self._saved.holds(row, self.policy):
            return self._saved.ledger  # read, never changed, by the caller
        return trusted_ledger(row, self._store.load_rows(), self.policy)[0]

    def _environment(self) -> Mapping[str, str]:
        return os.environ if self.environment is None else self.environment


def trusted_ledger(
    row: StateRow, rows: Iterable[Row], policy: Policy | None
) -> tuple[Ledger | None, Written | None, str | None]:
    """The stored ledger, its indexes rebuilt, and what its rows hold, if it can be shown intact
    (and kept under `policy`, unless None), else None, None and why not."""
    if state_rows.checksum(row.header) != row.header_sum:
        return None, None, "its checksum does not match"
    try:
        stored_policy = state_codec.loads(row.policy)
        state, written = state_rows.decode(row.header, rows)
    except state_codec.CodecError as error:
        return None, None, f"it cannot be read ({error})"
    if not isinstance(stored_policy, Policy):
        return None, None, "it is not a ledger"
    if policy is not None and stored_policy != policy:
        return None, None, "it was kept under another policy"
    return Ledger.from_state(state, stored_policy), written, None


@attrs.frozen
class _Saved:
    """What this process's last save wrote, under which revision."""

    revision: str
    policy: str
    ledger: Ledger
    written: Written

    def holds(self, row: StateRow, policy: Policy) -> bool:
        """Whether the stored row is still this save's, and under `policy`."""
        return row.revision == self.revision and row.policy == self.policy and self.ledger.policy == policy


@attrs.define
class _State:
    ledger: Ledger
    index: bytes | None
    written: Written | None = None  # what the rows hold (None: unknown; the save writes them all)
    notes: list[str | Degraded] = attrs.Factory(list)  # shown once, in the next Decision's `degraded`


def _expire(ledger: Ledger, calls: list[str]) -> None:
    """Give up on `calls` (spec `expire`): unknown scope, once, and they no longer count as
    writers in flight; those the ledger no longer holds as running just cost the unknown scope."""
    running = [call for call in calls if ledger.running(call) is not None]
    if running:
        ledger.expire(running)
    else:
        ledger.modify(UNKNOWN_SCOPE)


def _may_write(ledger: Ledger, call: str) -> bool:
    running = ledger.running(call)
    return running is not None and running.may_write


def _storable(text: str) -> str:
    """`text` with anything SQLite cannot store as UTF-8 (lone surrogates) replaced: the pending
    row's command is for display; the classification in the ledger's pending call is what the record uses."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _check_call_id(call_id: object) -> None:
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"call_id must be a non-empty string, got {call_id!r}")


