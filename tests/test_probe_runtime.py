"""The probe in the Runtime: reads are served on their traced dependencies (issue 19).

Each scenario is stale with the probe off (the enumerated fingerprint alone, as before) and
fresh with it on; the workspace and the outside files are temporary. Outside files live
under /var/tmp, not /tmp: the probe's /tmp is private, and what it hides is simply not served.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from probe_workspace import outside, root  # noqa: F401 (fixtures)

from ledger_impl import Runtime
from ledger_impl.detectors import default_detector
from ledger_impl.execution import command_environment, run_command
from ledger_impl.probe import sandbox, unavailable
from ledger_impl.probe.dependencies import CTIME_SLACK_NS
from ledger_impl.probe.guard import TracedFingerprint

MISSING = unavailable()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} (.ci/run installs them)")


def _fresh(root: Path, command: str, environment: dict[str, str]) -> str:
    return run_command(command, root, 30, 1 << 20, command_environment(environment)).output


def _stale(
    root: Path, environment: dict[str, str], read: str, change: "object", *, probe: bool, detector: "object | None" = None
) -> bool:
    """Read, make a change, read again: was a stale output served?"""
    with Runtime(root, environment=environment, probe=probe, detector=detector) as runtime:
        first = runtime.step(read)
        assert first.verdict == "allow"
        change() if callable(change) else runtime.step(str(change))
        again = runtime.step(read)
        return again.verdict == "reuse" and again.output != _fresh(root, read, environment)


def test_a_probed_read_is_reused_and_records_its_probe(root: Path) -> None:
    with Runtime(root) as runtime:
        first = runtime.step("cat a.txt")
        assert isinstance(first.recorded_fingerprint, TracedFingerprint)
        assert first.recorded_fingerprint.probe_step == first.index
        assert runtime.step("cat a.txt").verdict == "reuse"
        assert runtime.step("sed -n 1p a.txt").verdict == "reuse"  # range reuse, fingerprint on


def test_a_start_file_sourced_by_the_start_file_is_a_dependency(root: Path, outside: Path) -> None:
    (outside / "env.sh").write_text(f". {outside}/more.sh\n")
    (outside / "more.sh").write_text("echo from-start-file\n")
    environment = {**os.environ, "BASH_ENV": str(outside / "env.sh")}

    def edit() -> None:
        (outside / "more.sh").write_text("echo edited-start\n")

    assert _stale(root, environment, "cat a.txt", edit, probe=False)
    (outside / "more.sh").write_text("echo from-start-file\n")
    time.sleep(2 * CTIME_SLACK_NS / 1e9)  # older than the next command: a dependency that can hold
    with Runtime(root, environment=environment) as runtime:  # unchanged, it is served
        assert [runtime.step("cat a.txt").verdict for _ in range(2)] == ["allow", "reuse"]
    assert not _stale(root, environment, "cat a.txt", edit, probe=True)


def test_a_relative_path_entry_is_looked_up_where_the_command_runs(root: Path) -> None:
    environment = {**os.environ, "PATH": f"tools:{os.environ['PATH']}"}
    shadow = "mkdir -p sub/tools && printf '#!/bin/sh\\necho shadowed\\n' > sub/tools/cat && chmod +x sub/tools/cat"
    assert _stale(root, environment, "cd sub && cat a.txt", shadow, probe=False)
    subprocess.run(["rm", "-rf", str(root / "sub" / "tools")], check=True)
    assert not _stale(root, environment, "cd sub && cat a.txt", shadow, probe=True)


def test_an_attribute_change_the_detector_misses_is_seen(root: Path) -> None:
    """The default detector sees a `chattr` (`tests/test_event_detector.py`); the one that
    missed it stands in for any detector that does, and the probe still refuses the read."""
    from ledger_impl.detectors.unsound import events_without_closes

    (root / "ref").touch()
    if subprocess.run(["chattr", "+d", str(root / "a.txt")], capture_output=True).returncode != 0:
        pytest.skip("chattr is not supported on this filesystem")
    subprocess.run(["chattr", "-d", str(root / "a.txt")], check=True)
    (root / "ref").touch()
    environment = dict(os.environ)
    read = "find . -cnewer ref -name a.txt"
    assert _stale(root, environment, read, "chattr +d a.txt", probe=False, detector=events_without_closes())
    subprocess.run(["chattr", "-d", str(root / "a.txt")], check=True)
    (root / "ref").touch()
    assert not _stale(root, environment, read, "chattr +d a.txt", probe=True, detector=events_without_closes())
    subprocess.run(["chattr", "-d", str(root / "a.txt")], check=True)
    (root / "ref").touch()
    assert not _stale(root, environment, read, "chattr +d a.txt", probe=False)  # the default detector sees it


def test_the_traced_set_alone_sees_a_program_shadowed_outside_the_root(root: Path, outside: Path) -> None:
    environment = {**os.environ, "PATH": f"{outside}:{os.environ['PATH']}"}

    def shadow() -> None:
        (outside / "cat").write_text("#!/bin/sh\necho shadowed\n")
        (outside / "cat").chmod(0o755)

    with Runtime(root, environment=environment, fingerprint=False) as runtime:
        runtime.step("cat a.txt")
        shadow()
        again = runtime.step("cat a.txt")
    assert again.verdict != "reuse" and again.output == "shadowed\n"


def test_without_the_probe_tools_nothing_is_reused_and_it_says_so(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "SYSTEM_PATH", str(root / "no-tools-here"))
    with Runtime(root) as runtime:
        first = runtime.step("cat a.txt")
        again = runtime.step("cat a.txt")
        view = runtime.view()
    assert again.verdict != "reuse" and first.recorded_fingerprint is None
    assert again.degraded is not None and "bwrap" in str(again.degraded) and "not reused" in str(again.degraded)
    assert "not reused" in view


def test_a_time_dependent_read_is_kept_but_never_served(root: Path) -> None:
    with Runtime(root, detector=default_detector()) as runtime:
        first = runtime.step("ls -l a.txt")  # prints the time of day of a file written just now
        again = runtime.step("ls -l a.txt")
    assert first.recorded_fingerprint is None and again.verdict != "reuse"


def test_the_time_zone_database_is_a_dependency(root: Path, outside: Path) -> None:
    utc, new_york = Path("/usr/share/zoneinfo/UTC"), Path("/usr/share/zoneinfo/America/New_York")
    if not (utc.is_file() and new_york.is_file()):
        pytest.skip("no time zone database here")
    os.utime(root / "a.txt", (1577838600, 1577838600))  # 2020-01-01 00:30 UTC, 2019-12-31 in New York
    zone = outside / "zone"
    environment = {**os.environ, "TZ": f":{zone}"}

    def move_the_zone() -> None:
        zone.write_bytes(new_york.read_bytes())

    for probe, stale in ((False, True), (True, False)):
        zone.write_bytes(utc.read_bytes())
        time.sleep(2 * CTIME_SLACK_NS / 1e9)
        assert _stale(root, environment, "ls -l a.txt", move_the_zone, probe=probe) is stale


def test_the_verify_grammar_draws_the_clock_classes() -> None:
    from ledger_properties.hunt import FULL_GRAMMAR
    from ledger_properties.shell_strategies import PROBE_CLASS_EDIT_IDIOMS, PROBE_CLASS_READ_IDIOMS

    assert set(PROBE_CLASS_EDIT_IDIOMS) <= set(FULL_GRAMMAR.edit_idioms)
    assert set(PROBE_CLASS_READ_IDIOMS) <= set(FULL_GRAMMAR.read_idioms)


@pytest.mark.parametrize("idiom", ["start-file", "zone-file", "passwd-name"])
def test_the_session_file_idioms_serve_stale_without_the_probe_and_fresh_with_it(idiom: str) -> None:
    """The idioms of `ledger verify`'s grammar that edit a file outside the root every command
    may read reach their class: in a hunt's session with `SESSION_FILES` (BASH_ENV, TZ and a
    preloaded passwd database naming files outside the root, as `materialize` writes them) the
    read after the idiom's edit is served stale with the probe off, and not served with it on."""
    import hypothesis

    from ledger_properties.oracle import REUSE_IS_FRESH, probe_line, run_checked
    from ledger_properties.shell_strategies import OWNER_NAMES, PROBE_CLASS_EDIT_IDIOMS, SESSION_FILES, ZONES
    from ledger_properties.shell_strategies import WorkspaceSetup, edit_commands

    if idiom not in PROBE_CLASS_EDIT_IDIOMS:
        pytest.skip(f"{idiom} is not drawn here: no time zone database, or no libnss_wrapper to preload")
    # The idiom's own command, one that changes what the read prints: a start file that prints,
    # a zone other than the one a session starts with, another name for the session's user.
    changes = {
        "start-file": lambda c: c.startswith("echo"),
        "zone-file": lambda c: ZONES[0] not in c,
        "passwd-name": lambda c: OWNER_NAMES[0] not in c,
    }[idiom]
    edit = hypothesis.find(edit_commands(idioms=(idiom,)), changes)
    read = {"start-file": "cat a.txt", "zone-file": "ls -l --time-style=+%H:%M a.txt"}.get(idiom, "ls -l --time-style=+ a.txt")
    steps = ["touch -d '2026-01-01 12:00 UTC' a.txt && sleep 1", read, read, edit, read]
    for probe in (False, True):
        with probe_line(probe):
            records = run_checked(WorkspaceSetup({"a.txt": "alpha\n"}, {}, environment=SESSION_FILES), steps, default_detector())
        stale = [r for r in records if r.violation is not None and r.violation.property == REUSE_IS_FRESH]
        assert [r.verdict for r in records][:3] == ["allow", "allow", "reuse"], (probe, records)
        assert bool(stale) is not probe, (idiom, probe, records[-1])


def test_the_device_idioms_serve_stale_without_the_probe_and_fresh_with_it() -> None:
    """`device-node` makes a device in the root whose every read prints new bytes (urandom, or a
    link to it without the privilege to make a node); `device-read` reads it. With the probe
    off the repeat is served stale; with it on it is never served."""
    import hypothesis

    from ledger_properties.oracle import REUSE_IS_FRESH, probe_line, run_checked
    from ledger_properties.shell_strategies import WorkspaceSetup, edit_commands, read_commands

    edit = hypothesis.find(edit_commands(idioms=("device-node",)), lambda c: True)
    read = hypothesis.find(read_commands(idioms=("device-read",)), lambda c: True)
    for probe in (False, True):
        with probe_line(probe):
            records = run_checked(WorkspaceSetup({"a.txt": "alpha\n"}, {}), [edit, read, read], default_detector())
        stale = [r for r in records if r.violation is not None and r.violation.property == REUSE_IS_FRESH]
        assert [r.exit_code for r in records] == [0, 0, 0], records
        assert bool(stale) is not probe, (probe, records[-1])
        assert probe is (records[2].verdict != "reuse"), records[2]


def test_a_short_hunt_on_the_traced_set_alone_finds_nothing() -> None:
    from ledger_properties.hunt import FULL_GRAMMAR, run_hunt

    report = run_hunt(default_detector, "ci", seed=5, max_examples=3, grammar=FULL_GRAMMAR, fingerprint=False)
    assert not report.found, report.counterexamples
    assert report.steps > 0


def test_an_older_probed_read_that_covers_the_range_still_serves(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    with Runtime(root) as runtime:
        runtime.step("sed -n '1,4p' big.txt")
        runtime.step("sed -n '10,14p' big.txt")  # newer, and its dependencies hold too
        served = runtime.step("sed -n '2,3p' big.txt")
    assert served.verdict == "reuse" and served.output == "line 2\nline 3\n"


def test_a_wide_read_serves_after_many_newer_narrow_ones(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 61)))
    with Runtime(root) as runtime:
        runtime.step("sed -n '1,50p' big.txt")
        for start in range(51, 61):  # ten newer reads, none covering the request below
            runtime.step(f"sed -n '{start}p' big.txt")
        served = runtime.step("sed -n '20,22p' big.txt")
    assert served.verdict == "reuse" and served.output == "line 20\nline 21\nline 22\n"
