"""The safety hunt finds the failure of each known-unsound detector, and passes the default one.

Seeds are fixed so the runs are repeatable; budgets are small (a handful of runs) so the whole
module fits in CI. Throughput is printed (pytest -s), never asserted.
"""

from __future__ import annotations

import sys
import pathlib

import pytest

from ledger_impl.detectors import default_detector, unsound
from properties.hunt import run_hunt
from properties.oracle import (
    DETECTOR_COVERS_CHANGES,
    READ_ONLY_CHANGES_NOTHING,
    REUSE_IS_FRESH,
    SPEC_AGREES,
    fingerprint_line,
    run_checked,
)
from properties.shell_strategies import WorkspaceSetup

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent))
from examples.append_blind_detector import make as append_blind  # noqa: E402

SETUP = WorkspaceSetup({"a.txt": "alpha 1 beta\nbeta 2 gamma\n", "src/app.py": "x = 1\n"}, {"ext.txt": "out\n"})


def _report(name: str, report: object) -> None:
    print(f"\n{name}: {report.examples} runs, {report.steps} steps, {report.seconds:.1f} s, "  # type: ignore[attr-defined]
          f"{report.steps_per_second:.1f} steps/s, found {[d['property'] for d in report.counterexamples]}")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "name, factory",
    [("optimistic_rules", unsound.optimistic_rules), ("stat_only", unsound.stat_only), ("append_blind", append_blind)],
)
def test_hunt_finds_a_violation_for_each_unsound_detector(name: str, factory: object, tmp_path: pathlib.Path) -> None:
    report = run_hunt(factory, "ci", seed=2, out_dir=tmp_path, detector=f"test:{name}", max_examples=15)  # type: ignore[arg-type]
    _report(name, report)
    assert report.found, f"the hunt missed the known fault of {name}"
    assert {d["property"] for d in report.counterexamples} <= {REUSE_IS_FRESH, DETECTOR_COVERS_CHANGES}
    assert len(report.files) == len(report.counterexamples)


def test_the_default_detector_passes_a_short_hunt() -> None:
    report = run_hunt(default_detector, "ci", seed=3, max_examples=8)
    _report("default", report)
    assert not report.found, report.counterexamples
    assert report.steps > 0


# The oracle itself must be able to fail: each property is shown violated by a hand-made case.


class _Blind:
    """Reports nothing, ever."""

    name = "blind"

    def before(self, root: object, command: str) -> None:
        pass

    def after(self, root: object, command: str, exit_code: int) -> object:
        from ledger_spec import Changes

        return Changes()


def test_oracle_flags_a_stale_reuse_and_the_missed_change() -> None:
    with fingerprint_line(True):  # the fingerprint sees the append the blind detector misses
        guarded = run_checked(SETUP, ["cat a.txt", "echo more >> a.txt", "cat a.txt"], _Blind())
    assert guarded[1].violation is not None and guarded[1].violation.property == DETECTOR_COVERS_CHANGES
    assert guarded[2].verdict != "reuse" and guarded[2].violation is None
    with fingerprint_line(False):
        records = run_checked(SETUP, ["cat a.txt", "echo more >> a.txt", "cat a.txt"], _Blind())
    assert records[1].violation is not None and records[1].violation.property == DETECTOR_COVERS_CHANGES
    assert records[2].verdict == "reuse"
    assert records[2].violation is not None and records[2].violation.property == REUSE_IS_FRESH
    assert records[2].violation.expected["output"].endswith("more\n")


def test_oracle_flags_a_read_only_command_that_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    from ledger_impl import runtime
    from ledger_spec import Category

    real = runtime.classify

    def lying(command: str, cwd: str = ".", root: object = None) -> object:
        classified = real(command, cwd=cwd, root=root)
        if command.startswith("touch"):
            import attrs

            from ledger_spec import TreeTarget

            return attrs.evolve(classified, category=Category.SEARCH, target=TreeTarget("."))
        return classified

    monkeypatch.setattr(runtime, "classify", lying)
    records = run_checked(SETUP, ["touch a.txt"], default_detector())
    assert records[0].violation is not None and records[0].violation.property == READ_ONLY_CHANGES_NOTHING


def test_oracle_flags_a_runtime_that_disagrees_with_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    from ledger_impl.ledger import Ledger
    from ledger_spec import Allow

    monkeypatch.setattr(Ledger, "govern", lambda self, command, *fingerprint: Allow())
    records = run_checked(SETUP, ["cat a.txt", "cat a.txt"], default_detector())
    assert records[1].violation is not None and records[1].violation.property == SPEC_AGREES


def test_a_crash_inside_the_hunt_is_raised_not_reported_as_no_violation(monkeypatch) -> None:
    # Found in review: exception groups and Flaky were swallowed, so a hunt whose own code
    # crashed reported "no violation" and check-detector exited 0.
    from ledger_impl.detectors import default_detector
    from properties import oracle
    from properties.hunt import run_hunt

    def broken_step(self, template):
        # Two distinct crashes, which Hypothesis reports together as an exception group.
        if "cat" in template:
            raise RuntimeError("the oracle itself broke")
        raise ValueError("the oracle broke another way")

    monkeypatch.setattr(oracle.CheckedSession, "step", broken_step)
    with pytest.raises(BaseException) as raised:
        run_hunt(default_detector, "ci", seed=3, max_examples=20)
    assert "broke" in repr(raised.value) + "".join(repr(e) for e in getattr(raised.value, "exceptions", ()))
