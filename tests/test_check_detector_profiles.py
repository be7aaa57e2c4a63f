"""`ledger check-detector` passes for every detector a session or harness ships with.

The hook sessions' detectors (the persisted stat index, and Watchman where its binary is
installed) and the container harness's channel detector each get the `ci` profile's hunt (40
runs of up to 25 steps) here, through the CLI exactly as a user runs it, judged alone (no
fingerprint). Their `dev` hunts (200 runs of up to 40 steps, 7,800 real steps each) are run
from the CLI and recorded in docs/hunt/index.md: in the suite they took 158 s and 116 s of a
test worker with two hunt processes each in a 932 s run of the suite, and CI's 15 minutes
on 2 cores could not hold them. The seed is fixed so that a failure here is the same hunt on
every machine; the counterexample files a failure writes are in the test's temporary
directory, named in the assertion. Two hunt workers per test: the suite's scheduler may put
these tests on one of its workers in a row, and two processes let the hunt use the other core
whenever the rest of the suite leaves it free.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from ledger_cli import main as cli
from ledger_impl.detectors import watchman
from ledger_properties.profiles import PROFILES

SEED = 20261201
PROFILE = "ci"
DETECTORS = [
    pytest.param("ledger_impl.detectors.stat_index:make", id="stat-index"),
    pytest.param("ledger_impl.detectors.channel:make", id="channel"),
    pytest.param(
        "ledger_impl.detectors.watchman:make",
        id="watchman",
        marks=pytest.mark.skipif(not watchman.available(), reason="no watchman binary on PATH (.ci/run installs it)"),
    ),
]


# Under a loaded suite a ci hunt has taken minutes (the channel's once ran into the 900 s hang
# guard beside a dev hunt), so the guard is widened for these tests alone.
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("detector", DETECTORS)
def test_the_profile_hunt_finds_nothing(detector: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "counterexamples"
    code = cli.main(
        ["check-detector", detector, "--profile", PROFILE, "--workers", "2", "--seed", str(SEED), "--out", str(out), "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert report["profile"] == PROFILE and report["runs"] >= PROFILES[PROFILE].hunt_examples, report
    assert code == 0 and not report["violations"], f"{detector}: {report['violations']} (files in {out})"
    assert report["unconfirmed"] == 0, f"{detector}: {report['unconfirmed']} failing run(s) did not fail again when replayed"
    assert not report["detector_errors"], report["detector_errors"]
