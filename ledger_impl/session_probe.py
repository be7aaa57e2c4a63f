"""The probe on the hook path: a durable session's reads are confirmed after the agent's answer.

The Runtime probes a read right after running it (`ledger_impl.probe.guard`). A hook cannot:
the agent waits for its answer. So the durable session splits the same steps across calls,
keeping what links them in the store's `probes` table (format 4):

  decide   a read that will run gets a probe row ('running'); the call starts with the
           fingerprint `TracedFingerprint(enumerated, row id)`, so its observation names it;
  record   if the observation was stored with its output, the row is queued ('pending');
           otherwise it is deleted: there is nothing to confirm;
  run      later, in another process or thread (`DurableSession.run_probe`): the row is
           claimed ('probing'), the probe (`ledger_impl.probe.probe`, unchanged) reruns the
           command in the sandbox with the moved clock, and the verdict is stored: 'confirmed'
           with the traced dependencies (`TracedRecord`), or 'refused' with why, in a note too;
  decide   govern is given `TracedFingerprint(enumerated now, id)` only for confirmed rows
           whose dependencies hold by the Runtime's own rule (`record_holds`); a row that
           does not hold becomes 'stale' for good.

An observation whose row is anything but 'confirmed' is never served: a probe not run yet, one
whose process was killed ('probing' forever), one refused. Row ids are never reused
(AUTOINCREMENT), so a row can only ever name the observation it was made for.

The inside counters a confirmed record holds are those at the start of the agent's run, not
at the probe's: a change recorded in between reaches the read, and the dependencies then do
not hold. An outside path changed since the agent's run started makes the read never
reusable (`ledger_impl.probe.dependencies`, given that start).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Mapping

import attrs

from ledger_spec import Command, Fingerprint, Observation
from ledger_spec import dependencies as spec_dependencies
from ledger_spec.degraded import Degraded

from . import probe as probes
from . import state_codec
from .execution import command_environment
from .ledger import Ledger
from .probe import ProbeResult
from .probe.guard import CANDIDATES, TracedFingerprint, TracedRecord, record_holds, traced_record
from .probe.rendering import RENDERINGS
from .store import ProbeRow, Store


@attrs.frozen
class Job:
    """A claimed probe: the row, and what the agent saw of the read it confirms."""

    row: ProbeRow
    command: str
    output: str
    exit_status: int


def enumerated(fingerprint: Fingerprint | None) -> Fingerprint | None:
    """The enumerated fingerprint a call started with, with or without a probe named."""
    return fingerprint.enumerated if isinstance(fingerprint, TracedFingerprint) else fingerprint


def unavailable() -> Degraded | None:
    """The fallback rule in force when the probe cannot run on this machine, or None."""
    return probes.unavailable()


def candidates(
    store: Store, command: Command, target_key: str | None, started_with: Fingerprint, ledger: Ledger
) -> Iterator[TracedFingerprint]:
    """The fingerprints naming each confirmed probe of `command` (or of a read of
    `target_key`) whose traced dependencies all hold now, newest first. One that does not hold
    is marked 'stale' (a counter never moves back, an identity that moved names another file),
    so the candidates stay the few that may still serve."""
    measured: dict[str, object] = {}  # one identity measurement per path for the whole decision
    for row in store.confirmed_probes(command.normalized, target_key, CANDIDATES):
        record = _record(row)
        if record is not None and record_holds(record, ledger, measured):  # type: ignore[arg-type]
            yield TracedFingerprint(started_with, row.id)
        else:
            store.set_probe_status(row.id, "stale", "a dependency changed since the probe")


def queue(store: Store, ledger: Ledger, fingerprint: Fingerprint | None, step: int, rendering: str) -> int | None:
    """Queue the probe of the observation `step` if it was stored with its output under the
    probe `fingerprint` names; its id, or None."""
    if not isinstance(fingerprint, TracedFingerprint):
        return None
    observation = ledger.retained(step)
    if observation is None or observation.fingerprint != fingerprint:
        return None
    store.queue_probe(fingerprint.probe_step, step, rendering)
    return fingerprint.probe_step


def forget_unqueued(store: Store, fingerprint: Fingerprint | None) -> None:
    """Drop the probe row of a finished call whose output was not stored: nothing to confirm."""
    if isinstance(fingerprint, TracedFingerprint):
        row = store.probe(fingerprint.probe_step)
        if row is not None and row.status == "running":
            store.forget_probe(row.id)


def claim(store: Store, ledger: Ledger | None, probe_id: int) -> Job | None:
    """Mark a queued probe as running and return what it needs, or None if it is not queued
    (run already, or refused). A read gone stale since is refused without running."""
    row = store.probe(probe_id)
    if row is None or row.status != "pending":
        return None
    observation = _observation(ledger, row)
    if observation is None:
        store.set_probe_status(row.id, "refused", "its output went stale before the probe ran")
        return None
    store.set_probe_status(row.id, "probing")
    return Job(row, observation.command.text, observation.output or "", observation.exit_status)


def run(root: Path, job: Job, environment: Mapping[str, str], timeout: float, output_limit: int) -> ProbeResult:
    """The probe of `job`, where the agent ran it (the probe module's own run, unchanged)."""
    workdir = Path(os.path.normpath(root / job.row.cwd))
    if workdir != root and not os.fspath(workdir).startswith(os.fspath(root) + os.sep):
        return ProbeResult(False, f"the read ran outside the root ({job.row.cwd})")
    shown = RENDERINGS[job.row.rendering]
    return probes.probe(
        root, job.command, command_environment(environment), job.output, job.exit_status,
        started_ns=job.row.started_ns, timeout=timeout, output_limit=output_limit,
        rendering=None if shown is None else (lambda output: shown(output, job.exit_status)), workdir=workdir,
    )


def settle(store: Store, ledger: Ledger | None, job: Job, result: ProbeResult) -> str | None:
    """Store the verdict of `job`'s probe: None when confirmed, else why it was refused (also
    kept as a note, which the agent's next decision shows)."""
    row = store.probe(job.row.id)
    if row is None or row.status != "probing":
        return None  # refused meanwhile (a service that restarted)
    observation = _observation(ledger, row)
    if observation is None:
        reason = "its output went stale while the probe ran"
    elif not result.servable or result.dependencies is None:
        reason = str(result.reason)
    else:
        assert ledger is not None
        started_at = observation.total

        def counters_at_start(keys: object) -> spec_dependencies.Counters:
            return spec_dependencies.Counters(*ledger.counters_at(started_at, keys))  # type: ignore[arg-type]

        record = traced_record(result.dependencies, counters_at_start)
        blob = state_codec.dumps(record).encode("utf-8", "surrogatepass")
        store.set_probe_status(row.id, "confirmed", None, blob)
        return None
    store.set_probe_status(row.id, "refused", reason)
    store.add_note(f"probe of `{_short(job.command)}`: {reason}; its output is not served")
    return reason


def _observation(ledger: Ledger | None, row: ProbeRow) -> Observation | None:
    """The stored observation `row` was made for, if it still holds its output."""
    if ledger is None or row.step is None:
        return None
    observation = ledger.retained(row.step)
    if observation is None or not isinstance(observation.fingerprint, TracedFingerprint):
        return None
    return observation if observation.fingerprint.probe_step == row.id else None


def _record(row: ProbeRow) -> TracedRecord | None:
    """A confirmed row's record; None if it does not decode (then it never serves)."""
    if row.record is None:
        return None
    try:
        record = state_codec.loads(row.record.decode("utf-8", "surrogatepass"))
    except (state_codec.CodecError, UnicodeDecodeError):
        return None
    return record if isinstance(record, TracedRecord) else None


def _short(command: str) -> str:
    return command if len(command) <= 80 else command[:77] + "..."
