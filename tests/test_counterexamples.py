"""Every stored counterexample is a regression case, reproduced exactly.

Each file must reproduce against the detector it was recorded with (the same property fails
at the recorded step with the recorded outputs: the failure mode it documents is still real),
and must not reproduce against the default detector (the sound one does not have it). A file
that stops reproducing against its own detector means the replay lost its teeth; a file that
reproduces against the default means a real bug is open.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import tempfile
from typing import Iterator

import attrs
import pytest

from ledger_impl import descendants, probe
from ledger_impl.detectors import watchman
from ledger_properties.counterexample import Counterexample, Outcome, load, outcomes
from ledger_properties.oracle import REUSE_IS_FRESH
from ledger_properties.replay import load_factory, replay

COUNTEREXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "counterexamples").glob("*.json"))
# A fault of Ledger itself that has been fixed has no detector left that shows it: its
# regression check is that the default detector does not.
REPRODUCIBLE = [path for path in COUNTEREXAMPLES if load(path).status != "fixed"]
DEFAULT_DETECTOR = "ledger_impl.detectors:default_detector"
# Files that show what the probe closes: recorded with it off (issue 19).
PROBE_CASES = [path for path in COUNTEREXAMPLES if load(path).found_by.get("probe") is False]
PROBE_MISSING = probe.unavailable()


@pytest.fixture(autouse=True)
def workspaces_the_probe_sees(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Replays make their workspace (the root and @OUTSIDE@) under /var/tmp: the probe's /tmp is
    private, so under /tmp every outside file is hidden from it and a read that depends on one
    is never served for that reason alone, not because its traced dependency changed."""
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="ledger-counterexamples-") as directory:
        monkeypatch.setattr(tempfile, "tempdir", directory)
        yield


def _chattr_works() -> bool:
    with tempfile.NamedTemporaryFile(dir="/var/tmp") as handle:
        return subprocess.run(["chattr", "+d", handle.name], capture_output=True).returncode == 0


def _lacking(counterexample: Counterexample) -> str | None:
    """What this machine lacks to replay the file's steps as recorded, or None."""
    commands = " ".join(counterexample.commands)
    preload = counterexample.setup.environment.get("LD_PRELOAD", "")
    if preload and "cannot be preloaded" in subprocess.run(["env", f"LD_PRELOAD={preload}", "true"], capture_output=True, text=True).stderr:
        return f"no {preload} to preload (libnss_wrapper: Debian's libnss-wrapper)"
    if "localedef" in commands and not (shutil.which("localedef") and pathlib.Path("/usr/share/i18n/locales/fr_FR").is_file()):
        return "no localedef or locale sources"
    if "mknod" in commands and os.geteuid() != 0:
        return "mknod needs root (CAP_MKNOD)"
    if "chattr" in commands and not (shutil.which("chattr") and _chattr_works()):
        return "chattr is not supported on this filesystem"
    missing = [path for path in re.findall(r"/usr/share/\S+", commands) if not pathlib.Path(path).exists()]
    return f"no {missing[0]}" if missing else None


def _skip_if_lacking(counterexample: Counterexample) -> None:
    lacking = _lacking(counterexample)
    if lacking is not None:
        pytest.skip(lacking)


def test_there_are_counterexamples_to_replay() -> None:
    assert COUNTEREXAMPLES, "counterexamples/ holds no JSON file"


@pytest.mark.parametrize("path", COUNTEREXAMPLES, ids=lambda p: p.stem)
def test_file_follows_the_schema_and_the_readme_lists_it(path: pathlib.Path) -> None:
    loaded = load(path)  # validates every field and names the wrong one
    assert loaded.id == path.stem
    readme = (path.parent / "README.md").read_text(encoding="utf-8")
    assert f"`{path.name}`" in readme, f"counterexamples/README.md does not say what {path.name} shows"


@pytest.mark.parametrize("path", REPRODUCIBLE, ids=lambda p: p.stem)
def test_reproduces_exactly_against_its_recorded_detector(path: pathlib.Path) -> None:
    counterexample = load(path)
    if "watchman" in counterexample.detector and not watchman.available():
        pytest.skip("no watchman binary on PATH: its detector cannot run (.ci/run installs it)")
    _skip_if_lacking(counterexample)
    result = replay(counterexample, load_factory(counterexample.detector))
    assert result.reproduced, f"{path.name} no longer shows {counterexample.property} with {counterexample.detector}: {result.mismatch}"


def test_a_different_recorded_output_is_not_a_reproduction() -> None:
    """Exactness has teeth: the same property at the same step, but another recorded output."""
    counterexample = load(next(p for p in REPRODUCIBLE if "reuse-is-fresh" in p.name))
    observed = counterexample.observed
    edited = attrs.evolve(
        counterexample,
        violation=attrs.evolve(counterexample.violation, observed=Outcome(observed.output + "x", observed.exit_code, observed.verdict)),
    )
    result = replay(edited, load_factory(edited.detector))
    assert result.violation is not None and not result.reproduced
    assert "observed output differ" in str(result.mismatch)


@pytest.mark.parametrize("path", COUNTEREXAMPLES, ids=lambda p: p.stem)
def test_does_not_reproduce_against_the_default_detector(path: pathlib.Path) -> None:
    counterexample = load(path)
    _skip_if_lacking(counterexample)
    result = replay(counterexample, load_factory(DEFAULT_DETECTOR), fingerprint=True, probe=True)  # as shipped
    if counterexample.status == "open":
        # A real fault of Ledger itself (not of the recorded detector), kept until fixed: when
        # this assertion fails, the fix landed; mark the file fixed.
        assert result.reproduced, f"{path.name} is marked open but no longer reproduces: mark it fixed"
        return
    assert not result.reproduced, f"{path.name}: the default detector shows {result.violation}"
    assert all(record.violation is None for record in result.records), [r.violation for r in result.records if r.violation]


@pytest.mark.skipif(PROBE_MISSING is not None, reason=f"{PROBE_MISSING} (.ci/run installs them)")
@pytest.mark.parametrize("path", PROBE_CASES, ids=lambda p: p.stem)
def test_a_probe_case_is_stale_without_the_probe_and_fresh_with_it(path: pathlib.Path) -> None:
    """Both ways, whatever property the file records (an open detector fault may come first):
    with the probe off a Reuse is stale; with it on none is, and every repeat the file records
    as served before the stale one is still served, so the probe closes it by what it traced,
    not by refusing every read."""
    counterexample = load(path)
    _skip_if_lacking(counterexample)
    factory = load_factory(counterexample.detector)
    off = replay(counterexample, factory, probe=False)
    stale = [r.index for r in off.records if r.violation is not None and r.violation.property == REUSE_IS_FRESH]
    assert stale, f"{path.name}: no stale Reuse with the probe off"
    on = replay(counterexample, factory, probe=True)
    assert not [r for r in on.records if r.violation is not None and r.violation.property == REUSE_IS_FRESH]
    served = [i for i, step in enumerate(counterexample.steps[: stale[0]]) if step.verdict == "reuse"]
    unserved = [(i, on.records[i].verdict, on.records[i].note) for i in served if on.records[i].verdict != "reuse"]
    assert not unserved, f"{path.name}: a control repeat is no longer served (step, verdict, note): {unserved}"


# Files that show what only a cgroup per command closes (issue 19's background writers).
TRACKING_CASES = [path for path in COUNTEREXAMPLES if load(path).found_by.get("process_tracking")]


@pytest.mark.skipif(descendants.available() != descendants.CGROUP, reason="no cgroup can be made here (root, or a delegated subtree)")
@pytest.mark.parametrize("path", TRACKING_CASES, ids=lambda p: p.stem)
def test_a_process_tracking_case_is_stale_with_its_tracking_and_fresh_with_a_cgroup(path: pathlib.Path) -> None:
    counterexample = load(path)
    factory = load_factory(counterexample.detector)
    recorded = replay(counterexample, factory)
    assert recorded.reproduced, recorded.mismatch
    tracked = replay(counterexample, factory, process_tracking=descendants.CGROUP)
    assert not [r for r in tracked.records if r.violation is not None], [r.violation for r in tracked.records if r.violation]
    assert tracked.records[-1].verdict != "reuse"


def _ls_long_counterexample() -> "tuple[object, Outcome, Outcome]":
    """A stale `ls -l .` (optimistic rules miss a write made by Python), with the outcomes
    of a replay just now: its output holds each file's modification time."""
    stored = load(next(p for p in REPRODUCIBLE if p.name.startswith("optimistic-rules-reuse-is-fresh")))
    listing = attrs.evolve(stored.steps[0], command="ls -l .")
    steps = (listing, stored.steps[1], attrs.evolve(stored.steps[2], command="ls -l ."))
    draft = attrs.evolve(stored, steps=steps, violation=attrs.evolve(stored.violation, command="ls -l ."))
    found = replay(draft, load_factory(draft.detector)).records[2]
    assert found.violation is not None and found.violation.property == "reuse-is-fresh", found
    expected, observed = outcomes(found, found.violation)
    return draft, expected, observed


def _at_another_time(outcome: Outcome) -> Outcome:
    return attrs.evolve(outcome, output=re.sub(r"[A-Z][a-z]{2} +\d+ +\d\d:\d\d", "Jan  1  2020", outcome.output))


def test_a_listing_replayed_at_another_minute_still_reproduces() -> None:
    """`ls -l` prints modification times, and a replay makes its files at a later time: the
    comparison leaves the clock out, and nothing else."""
    draft, expected, observed = _ls_long_counterexample()
    assert _at_another_time(observed) != observed  # the listing does show a time
    earlier = attrs.evolve(
        draft, violation=attrs.evolve(draft.violation, expected=_at_another_time(expected), observed=_at_another_time(observed))
    )
    assert replay(earlier, load_factory(earlier.detector)).reproduced
    grown = attrs.evolve(expected, output=re.sub(r"^total \d+", "total 999", expected.output))
    assert grown != expected
    other = attrs.evolve(earlier, violation=attrs.evolve(earlier.violation, expected=grown))
    assert "expected output differ" in str(replay(other, load_factory(other.detector)).mismatch)


def test_a_setup_environment_round_trips_and_files_without_one_still_load() -> None:
    from ledger_properties.counterexample import loads, to_json
    import json

    stored = load(next(p for p in PROBE_CASES if p.stem == "probe-start-file-sources-another"))
    assert stored.setup.environment == {"BASH_ENV": "@OUTSIDE@/start/env.sh"}
    assert loads(json.dumps(to_json(stored)).encode()) == stored
    older = load(next(p for p in COUNTEREXAMPLES if p.stem == "probe-file-time-near-now"))
    assert older.setup.environment == {} and "environment" not in to_json(older)["setup"]
