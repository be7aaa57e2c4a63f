"""`minimize` returns only runs it replayed itself, and the hunt writes files that reproduce.

The runs replay a Z3 counterexample found without the observation fingerprint, so the
fingerprint is off here as it was then (with it on, the stale read is caught and nudged).
"""

from __future__ import annotations

import pathlib
from typing import Iterator

import attrs
import pytest

from ledger_impl.detectors import default_detector
from ledger_impl.detectors.unsound import optimistic_rules
from ledger_properties.counterexample import from_run, load
from ledger_properties.hunt import FailingRun, minimize
from ledger_properties.oracle import fingerprint_line, probe_line
from ledger_properties.replay import replay, run_recorded

Z3_FILE = pathlib.Path(__file__).resolve().parent.parent / "counterexamples" / "z3-stale-reuse-if-opaque-reported-unchanged.json"


def _failing_run() -> FailingRun:
    counterexample = load(Z3_FILE)
    # Padding that minimizing must remove: a file no step needs.
    setup = attrs.evolve(counterexample.setup.workspace(), files={**counterexample.setup.files, "unused.txt": "x\n"})
    records = run_recorded(setup, counterexample.commands, optimistic_rules())
    violation = next(r.violation for r in records if r.violation is not None and r.violation.property == counterexample.property)
    return FailingRun(setup, tuple(records), violation)


@pytest.fixture(autouse=True)
def no_fingerprint() -> Iterator[None]:
    # The counterexample shows the detector's miss: the other lines (the fingerprint, the probe's
    # lstat check of the edited file) would refuse its stale Reuse.
    with fingerprint_line(False), probe_line(False):
        yield


def test_a_run_that_does_not_fail_again_is_dropped() -> None:
    run = _failing_run()
    assert minimize(run, default_detector, budget_seconds=30) is None  # the sound detector: no failure to keep


def test_the_minimized_run_is_a_replayed_one_and_its_file_reproduces(tmp_path: pathlib.Path) -> None:
    run = _failing_run()
    # A run whose recorded outputs were never seen by any replay: minimize must not return them.
    doctored = attrs.evolve(run, steps=tuple(attrs.evolve(r, output="never printed\n") for r in run.steps))
    best = minimize(doctored, optimistic_rules, budget_seconds=30)
    assert best is not None
    assert [r.template for r in best.steps] == [r.template for r in run.steps]
    assert "unused.txt" not in best.setup.files  # the padding is gone
    assert all(r.output != "never printed\n" for r in best.steps)
    counterexample = from_run(best.setup, best.steps, best.violation, detector="ledger_impl.detectors.unsound:optimistic_rules",
                              found_by={"tool": "hypothesis"})
    assert replay(counterexample, optimistic_rules, fingerprint=False).reproduced
