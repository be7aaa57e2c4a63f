"""The Runtime's probe guard, piece by piece (`ledger_impl.probe.guard`).

`tests/test_probe_runtime.py` checks what the Runtime serves with the probe on. These tests
take the guard's parts one at a time: the record a confirmed probe leaves, the report of
which dependency moved, and `after_run`, `candidates` and `why_not` given each kind of read.
Written for the survivors of the module's operator mutation (docs/mutation/survivors.md).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import attrs
import pytest
from probe_workspace import outside, root  # noqa: F401 (fixtures)

from ledger_impl import Runtime
from ledger_impl.classifier import classify
from ledger_impl.execution import command_environment, run_command
from ledger_impl.ledger import Ledger
from ledger_impl.probe import ProbeResult, unavailable
from ledger_impl.probe.dependencies import DependencySet, OutsideDependency, identity
from ledger_impl.probe.guard import NONE_HOLDS, ProbeGuard, TracedFingerprint, first_moved, ledger_counters, traced_record
from ledger_spec import Changes
from ledger_spec import dependencies as spec_dependencies
from ledger_spec.degraded import Cause, Degraded, Effect

MISSING = unavailable()
needs_the_probe = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} (.ci/run installs them)")


def _zero(keys: object) -> spec_dependencies.Counters:
    return spec_dependencies.Counters(0, 0, tuple((key, 0) for key in keys))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("inside", "listed"),
    [
        ({"a.txt", "sub/a.txt"}, False),  # every name is a key the counters hold
        ({".", "a.txt"}, False),  # the root itself is no key, and needs none
        ({"a.txt", "./odd"}, True),  # a name no counter holds: any change inside counts
        ({"sub/../a.txt"}, True),
    ],
)
def test_a_name_no_counter_holds_makes_any_change_inside_count(inside: set[str], listed: bool) -> None:
    """A real miss of the operator mutation (ledger_impl/probe/guard.py line 72, `!=` -> `>=`):
    a traced name that no counter holds was left out of the record and not marked listed, so a
    change to it was never seen, and a read resting on it could be served stale."""
    record = traced_record(DependencySet(frozenset(inside), False, ()), _zero)
    assert record.dependencies.listed_inside is listed
    assert [key for key, _ in record.counters.locals] == sorted(key for key in inside if key in {"a.txt", "sub/a.txt"})


@pytest.mark.parametrize("edit", ["grows", "shrinks"])
def test_the_report_names_the_outside_dependency_that_moved(outside: Path, edit: str) -> None:
    """Identities are tuples: a test of `>` or `<` instead of `!=` sees only one direction."""
    path = outside / "config"
    path.write_text("middle\n")
    ledger = Ledger()
    found = DependencySet(frozenset(), False, (OutsideDependency(os.fspath(path), identity(os.fspath(path))),))
    record = traced_record(found, lambda keys: ledger_counters(ledger, keys))
    assert first_moved(record, ledger) is None
    path.write_text("a longer line than before\n" if edit == "grows" else "m\n")
    assert first_moved(record, ledger) == f"dependency changed: {path}"


def test_the_report_tells_a_change_inside_the_root_from_none() -> None:
    ledger = Ledger()
    record = traced_record(DependencySet(frozenset({"a.txt"}), False, ()), lambda keys: ledger_counters(ledger, keys))
    assert first_moved(record, ledger) is None
    ledger.modify(Changes({"b.txt"}))
    assert first_moved(record, ledger) is None, "another file's change is not this read's"
    ledger.modify(Changes({"a.txt"}))
    assert first_moved(record, ledger) == "a change inside the root since the probe"


def _after_run(guard: ProbeGuard, root: Path, text: str, recorded: object, *, started_ns: int | None = None) -> tuple[object, object]:
    """Run `text` as the agent did, then hand it to the guard as the Runtime would."""
    started = time.time_ns() if started_ns is None else started_ns
    ran = run_command(text, root, 30, 1 << 20, command_environment(dict(os.environ)))
    return guard.after_run(
        0, classify(text, root=root), ran.output, ran.exit_code, recorded, dict(os.environ), started, 1 << 20, Ledger(),
    )


@needs_the_probe
def test_only_a_read_with_a_target_and_a_fingerprint_is_probed(root: Path) -> None:
    guard = ProbeGuard(root)
    assert _after_run(guard, root, "cat a.txt", None) == (None, None), "no fingerprint: never stored, nothing to probe"
    command = attrs.evolve(classify("cat a.txt", root=root), target=None)
    assert command.read_only
    assert guard.after_run(0, command, "alpha\n", 0, "steady", dict(os.environ), time.time_ns(), 1 << 20, Ledger()) == (
        "steady", None,
    ), "a read without a target is never stored with its output"
    recorded, result = _after_run(guard, root, "cat a.txt", "steady")
    assert isinstance(recorded, TracedFingerprint) and result is not None and result.servable  # type: ignore[attr-defined]


@needs_the_probe
def test_a_probe_that_finds_a_dependency_never_reusable_is_a_refusal(root: Path) -> None:
    """The probe returns its dependency set along with the reason; not servable is a refusal
    all the same. A run that started at the epoch makes every program it ran look changed
    while it ran."""
    guard = ProbeGuard(root)
    recorded, result = _after_run(guard, root, "cat a.txt", "steady", started_ns=0)
    assert recorded is None and result is not None
    assert not result.servable and result.dependencies is not None  # type: ignore[attr-defined]
    assert "changed while the command ran" in str(result.reason)  # type: ignore[attr-defined]
    command = classify("cat a.txt", root=root)
    assert guard.why_not(command, Ledger()) == result.reason  # type: ignore[attr-defined]
    assert guard.candidates(command, "steady", Ledger()) == [TracedFingerprint("steady", NONE_HOLDS)]


@needs_the_probe
def test_why_not_is_none_for_a_read_never_probed_or_one_that_holds(root: Path) -> None:
    with Runtime(root) as runtime:
        guard = runtime.probe
        assert guard is not None
        assert guard.why_not(classify("cat sub/a.txt", root=root), runtime.ledger) is None
        first = runtime.step("cat a.txt")
        assert guard.why_not(first.command, runtime.ledger) is None
        runtime.step("echo more >> a.txt")
        # A file inside the root is identity-checked too, so the edit shows as that file.
        assert guard.why_not(first.command, runtime.ledger) == f"dependency changed: {root / 'a.txt'}"
        assert runtime.step("cat a.txt").verdict == "allow"  # probed again: the newest probe holds
        assert guard.why_not(first.command, runtime.ledger) is None


@needs_the_probe
def test_a_guard_made_with_its_defaults_serves_a_read_of_the_same_file_by_another_command(root: Path) -> None:
    with Runtime(root) as runtime:
        runtime.probe = ProbeGuard(runtime.root)
        runtime.step("cat a.txt")
        served = runtime.step("sed -n 1p a.txt")
    assert served.verdict == "reuse" and served.output == "alpha\n"


@needs_the_probe
@pytest.mark.parametrize(("newer", "served"), [(31, True), (32, False)])
def test_the_guard_examines_the_newest_32_probed_reads_of_a_file(root: Path, newer: int, served: bool) -> None:
    """At most 32 (`CANDIDATES`): the cost of a decision is bounded, each examined read costing
    the stat calls of its dependencies. A wide read with 31 newer narrow ones is the last
    examined and serves; with 32, it is not examined and the request runs."""
    (root / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 60 + newer)))
    with Runtime(root) as runtime:
        runtime.step("sed -n '1,50p' big.txt")
        for line in range(51, 51 + newer):
            runtime.step(f"sed -n '{line}p' big.txt")
        request = runtime.step("sed -n '20,22p' big.txt")
    assert request.output == "line 20\nline 21\nline 22\n"
    assert (request.verdict == "reuse") is served


def test_without_the_probe_tools_no_read_is_servable(root: Path) -> None:
    guard = ProbeGuard(root)
    guard.unavailable = Degraded(Cause.PROBE_UNAVAILABLE, ("strace",), Effect.NUDGE_ONLY)
    command = classify("cat a.txt", root=root)
    recorded, result = guard.after_run(0, command, "alpha\n", 0, "steady", dict(os.environ), time.time_ns(), 1 << 20, Ledger())
    assert recorded is None and result == ProbeResult(False, guard.unavailable)
    assert guard.degraded == guard.unavailable


@needs_the_probe
def test_a_read_with_no_fingerprint_or_no_target_is_governed_with_its_fingerprint_alone(root: Path) -> None:
    guard = ProbeGuard(root)
    recorded, _ = _after_run(guard, root, "cat a.txt", "steady")
    assert isinstance(recorded, TracedFingerprint)  # a probe of this read holds
    read = classify("cat a.txt", root=root)
    assert guard.candidates(read, None, Ledger()) == [None], "no fingerprint now: nothing can serve"
    untargeted = attrs.evolve(read, target=None)
    assert guard.candidates(untargeted, "steady", Ledger()) == ["steady"]
