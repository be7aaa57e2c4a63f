"""The probe in the Runtime: which observations may serve, given what their probes traced.

The ledger serves an observation only if the fingerprint govern is given equals the one the
observation recorded (`ledger_spec.reusable`). The guard folds the traced dependencies into
that value, so the ledger and the spec need no new rule and agree by construction:

- after a read ran and before its observation is recorded, `after_run` probes it. Servable,
  the observation records `TracedFingerprint(enumerated, step)`: the step names the probe
  whose dependency set it rests on. Not servable (or no probe possible), it records None,
  which is never reusable: the observation is kept, its output never served;
- before govern, `candidates` checks the newest probed observations that could answer the
  command (same normalized command; with the enumerated fingerprint on, also reads of the same
  file, for range reuse) and gives `TracedFingerprint(enumerated_now, step)` for each whose
  dependencies all hold: the Runtime governs with each in turn (only that observation can
  match it) until one serves, and last with a value no observation recorded.

A dependency holds by `ledger_spec.dependencies.holds`: inside the root, when no change since
the probe reported its key (or, for a directory listed inside the root, any key) and none was
of unknown scope; outside (and for a file inside), when its identity is unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Final, Hashable, Iterable, Iterator, Mapping

import attrs

from ledger_spec import Command, FileTarget, Fingerprint
from ledger_spec import dependencies as spec_dependencies
from ledger_spec.degraded import Degraded
from ledger_spec.values import check_key

from . import DEFAULT_PROBE_TIMEOUT, ProbeResult, probe, unavailable
from .dependencies import OutsideDependency, identity_now

# How many probed observations `candidates` examines per command: the newest are the likeliest
# to hold and to cover a requested range, and each costs its dependencies' stat calls.
CANDIDATES: Final = 32
NONE_HOLDS: Final = -1


@attrs.frozen
class TracedFingerprint:
    """The fingerprint an observation resting on a probe records, and govern is given."""

    enumerated: object  # the enumerated fingerprint (`ledger_impl.fingerprint`), or STEADY when off
    probe_step: int  # the step whose probe traced the dependencies; NONE_HOLDS: no probe holds


@attrs.frozen
class TracedRecord:
    """What a confirmed probe leaves for revalidation at every Reuse (the session stores it)."""

    dependencies: spec_dependencies.Dependencies  # as the spec states them
    counters: spec_dependencies.Counters  # G, W and L of each inside key the read rests on
    checked: tuple[OutsideDependency, ...]  # each identity-checked path, as recorded
    recorded: Mapping[str, OutsideDependency] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "recorded", {dependency.path: dependency for dependency in self.checked})


# The counters of the given keys: now (the Runtime, right after its probe) or at the start of
# the agent's run (the hook path, whose probe runs later).
CountersOf = Callable[[Iterable[str]], spec_dependencies.Counters]


def traced_record(found: DependencySet, counters_of: CountersOf) -> TracedRecord:
    """The record of a probe that confirmed a read whose traced set is `found`."""
    countable = sorted(key for key in found.inside if _is_key(key))
    if len(countable) != len(found.inside - {"."}):
        found = attrs.evolve(found, listed_inside=True)  # a name no counter holds: any change counts
    checked = (*found.outside, *found.inside_files)
    return TracedRecord(
        spec_dependencies.Dependencies(
            found.inside, found.listed_inside, tuple((d.path, d.identity) for d in checked), found.never
        ),
        counters_of(countable),
        checked,
    )


def record_holds(record: TracedRecord, ledger: object, measured: dict[str, Hashable] | None = None) -> bool:
    """Whether every dependency of `record` is unchanged, by `ledger_spec.dependencies.holds`:
    the counters now against the recorded ones, each checked path's identity now (measured once
    per path in `measured`, shared by the candidates of one decision)."""
    now = ledger_counters(ledger, [key for key, _ in record.counters.locals])
    identities = _IdentitiesNow(record.recorded, {} if measured is None else measured)
    return spec_dependencies.holds(record.dependencies, record.counters, now, identities)


def first_moved(record: TracedRecord, ledger: object) -> str | None:
    """Which dependency of `record` moved (for reports), or None if all hold."""
    for path, identity in record.dependencies.outside:
        if identity_now(record.recorded[path]) != identity:
            return f"dependency changed: {path}"
    return "a change inside the root since the probe" if not record_holds(record, ledger) else None


class _IdentitiesNow(Mapping[str, Hashable]):
    """Each recorded path's identity now, measured only when asked (the spec's `holds` stops
    at the first that moved)."""

    def __init__(self, recorded: Mapping[str, OutsideDependency], measured: dict[str, Hashable]) -> None:
        self._recorded = recorded
        self._measured = measured  # shared by the candidates of one decision: one stat per path

    def __getitem__(self, path: str) -> Hashable:
        if path not in self._measured:
            self._measured[path] = identity_now(self._recorded[path])
        return self._measured[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._recorded)

    def __len__(self) -> int:
        return len(self._recorded)


class ProbeGuard:
    """The Runtime's probe: runs it after reads, and turns its verdicts into fingerprints."""

    def __init__(self, root: Path, *, timeout: float = DEFAULT_PROBE_TIMEOUT, cross_command: bool = True) -> None:
        self.root = root
        self.timeout = timeout
        self.cross_command = cross_command
        self.unavailable = unavailable()
        self._records: dict[int, TracedRecord] = {}
        self._by_command: dict[str, list[int]] = {}
        self._by_key: dict[str, list[int]] = {}
        self._refused: dict[str, str] = {}  # normalized command -> why its last probe refused it

    @property
    def degraded(self) -> Degraded | None:
        """The fallback rule in force when the probe cannot run here at all."""
        return self.unavailable

    def candidates(self, command: Command, enumerated: Fingerprint | None, ledger: object) -> list[Fingerprint | None]:
        """The fingerprints to try govern with, in order: one per probed observation that could
        answer `command` and whose dependencies all hold (newest first, at most `CANDIDATES`),
        then one no observation recorded (what govern is given when none serves)."""
        if enumerated is None or not command.read_only or command.target is None:
            return [enumerated]
        steps = list(reversed(self._by_command.get(command.normalized, ())))
        if self.cross_command and isinstance(command.target, FileTarget):
            steps += [step for step in reversed(self._by_key.get(command.target.key, ())) if step not in steps]
        measured: dict[str, Hashable] = {}
        holding = [step for step in steps[:CANDIDATES] if record_holds(self._records[step], ledger, measured)]
        return [*(TracedFingerprint(enumerated, step) for step in holding), TracedFingerprint(enumerated, NONE_HOLDS)]

    def after_run(
        self, step: int, command: Command, output: str, exit_code: int, recorded: Fingerprint | None,
        environment: Mapping[str, str], started_ns: int, output_limit: int, ledger: object,
    ) -> tuple[Fingerprint | None, ProbeResult | None]:
        """The fingerprint the observation of this step records, and the probe's result (None
        when no probe was needed: not a read that could be stored)."""
        if recorded is None or not command.read_only or command.target is None:
            return recorded, None
        if self.unavailable is not None:
            return None, ProbeResult(False, self.unavailable)
        result = probe(
            self.root, command.text, environment, output, exit_code,
            started_ns=started_ns, timeout=self.timeout, output_limit=output_limit,
        )
        if not result.servable or result.dependencies is None:
            self._refused[command.normalized] = str(result.reason)
            return None, result
        self._refused.pop(command.normalized, None)
        self._records[step] = traced_record(result.dependencies, lambda keys: ledger_counters(ledger, keys))
        self._by_command.setdefault(command.normalized, []).append(step)
        if isinstance(command.target, FileTarget):
            self._by_key.setdefault(command.target.key, []).append(step)
        return TracedFingerprint(recorded, step), result

    def why_not(self, command: Command, ledger: object) -> str | None:
        """Why the newest probed observation of `command` cannot serve now (for reports): its
        probe refused it, or which dependency moved; None if it can, or none was probed."""
        if command.normalized in self._refused:
            return self._refused[command.normalized]
        steps = self._by_command.get(command.normalized)
        if not steps:
            return None
        return first_moved(self._records[steps[-1]], ledger)


def ledger_counters(ledger: object, keys: Iterable[str]) -> spec_dependencies.Counters:
    """G, W and L of `keys` in `ledger` now."""
    return spec_dependencies.Counters(
        ledger.total, ledger.wildcard, tuple((key, ledger.local(key)) for key in keys)  # type: ignore[attr-defined]
    )


def _is_key(key: str) -> bool:
    """Whether `key` is one the counters hold (the root itself, ".", is not)."""
    try:
        check_key(key)
    except ValueError:
        return False
    return True
