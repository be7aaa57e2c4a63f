"""`ledger check-detector` passes for every detector a session or harness ships with: `dev` profile for the sessions' detectors.

The hook sessions' detectors (the persisted stat index, and Watchman where its binary is
installed) each get the `dev` profile's full hunt (200 runs of up to 40 steps); the container
harness's channel detector, which the issue asks only to pass `check-detector`, gets the `ci`
profile's, so that the suite stays within CI's budget (its `dev` run passed from the CLI; see
docs/hunt/index.md). Each is judged alone (no fingerprint), through the CLI exactly as a user runs it. The
seed is fixed so that a failure here is the same hunt on every machine; the counterexample files
a failure writes are in the test's temporary directory, named in the assertion. Two hunt workers
per test: the suite's scheduler may put these tests on one of its workers in a row, and two
processes let the hunt use the other core whenever the rest of the suite leaves it free.
"""

from __future__ import annotations

import json
import pathlib

import pytest

from ledger_cli import main as cli
from ledger_impl.detectors import watchman
from ledger_properties.profiles import PROFILES

SEED = 20261201
DETECTORS = [
    pytest.param("ledger_impl.detectors.stat_index:make", "dev", id="stat-index"),
    pytest.param("ledger_impl.detectors.channel:make", "ci", id="channel"),
    pytest.param(
        "ledger_impl.detectors.watchman:make",
        "dev",
        id="watchman",
        marks=pytest.mark.skipif(not watchman.available(), reason="no watchman binary on PATH (.ci/run installs it)"),
    ),
]


# A dev run is 7,800 real steps (23-35 ms of CPU each): 3-5 minutes on a free core, far more on a
# loaded one, so the suite's 900 s hang guard is widened for these tests alone.
@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("detector", "profile"), DETECTORS)
def test_the_profile_hunt_finds_nothing(
    detector: str, profile: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "counterexamples"
    code = cli.main(
        ["check-detector", detector, "--profile", profile, "--workers", "2", "--seed", str(SEED), "--out", str(out), "--json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert report["profile"] == profile and report["runs"] >= PROFILES[profile].hunt_examples, report
    assert code == 0 and not report["violations"], f"{detector}: {report['violations']} (files in {out})"
    assert report["unconfirmed"] == 0, f"{detector}: {report['unconfirmed']} failing run(s) did not fail again when replayed"
    assert not report["detector_errors"], report["detector_errors"]
