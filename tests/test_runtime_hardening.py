"""The Runtime's limits hold however a step ends: only a complete result of a command that ran
is ever an observation, stored outputs stay bounded, nothing the Runtime started outlives it,
and what it hands the harness is always well-formed."""

from __future__ import annotations

import inspect
import math
import os
import re
import shutil
import time
from collections.abc import Collection
from pathlib import Path

import pytest

from ledger_impl import Policy, Runtime
from ledger_impl import execution
from ledger_impl.descendants import SessionDescendants
from ledger_impl.ledger import Ledger
from ledger_impl.runtime import printable
from ledger_spec import Allow, Category, Changes, Command, FileTarget, Reuse


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


def test_a_launch_failure_is_never_stored_and_never_reused(workspace: Path) -> None:
    runtime = Runtime(workspace)
    try:
        moved = workspace.parent / "moved"
        workspace.rename(moved)  # bash cannot start in a missing directory
        failed = runtime.step("cat a.txt")
        assert failed.exit_code == execution.LAUNCH_FAILURE_EXIT_CODE
        assert "could not start bash" in failed.output
        assert failed.recorded is not None and failed.recorded.target is None
        moved.rename(workspace)
        again = runtime.step("cat a.txt")
        assert again.verdict != "reuse"
        assert again.output == "alpha\n"
    finally:
        runtime.close()


@pytest.mark.parametrize("timeout", [0, -1, math.inf, math.nan, "5", True])
def test_timeout_must_be_a_finite_positive_number(workspace: Path, timeout: object) -> None:
    with pytest.raises(ValueError, match="timeout must be a finite positive number"):
        Runtime(workspace, timeout=timeout)  # type: ignore[arg-type]


def test_close_kills_the_background_jobs_the_runtime_started(workspace: Path) -> None:
    runtime = Runtime(workspace)
    step = runtime.step("sleep 60 &")
    jobs = set(runtime.background_jobs)
    assert jobs and all(job.alive() for job in jobs), step
    runtime.close()
    deadline = time.monotonic() + 5
    while any(job.alive() for job in jobs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(job.alive() for job in jobs)


class _InterruptingDetector:
    """Raises KeyboardInterrupt once the command is running, as a user's Ctrl-C would."""

    name = "interrupting"

    def before(self, root: str, command: str) -> None:
        return None

    def after(self, root: str, command: str, exit_code: int) -> Changes:
        return Changes()


def _record_started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the processes the Runtime starts from now on (each leads its own group)."""
    started: list[int] = []
    real_popen = execution.subprocess.Popen

    def recording_popen(*args, **kwargs):  # type: ignore[no-untyped-def]
        process = real_popen(*args, **kwargs)
        started.append(process.pid)
        return process

    monkeypatch.setattr(execution.subprocess, "Popen", recording_popen)
    return started


def test_an_interrupt_inside_a_step_kills_the_command_s_process_group(workspace: Path, monkeypatch) -> None:
    started = _record_started(monkeypatch)
    def interrupted_select(self, timeout=None):  # type: ignore[no-untyped-def]
        time.sleep(0.2)  # the command is running by now
        raise KeyboardInterrupt

    monkeypatch.setattr(execution.selectors.DefaultSelector, "select", interrupted_select)
    runtime = Runtime(workspace, _InterruptingDetector())
    try:
        with pytest.raises(KeyboardInterrupt):
            runtime.step("sleep 60 & sleep 1")  # bash exits soon; its child must not outlive the step
    finally:
        runtime.close()
    assert started
    deadline = time.monotonic() + 5
    while SessionDescendants(started[0]).alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not SessionDescendants(started[0]).alive()


def test_the_view_is_valid_utf8_with_undecodable_file_names(workspace: Path) -> None:
    name = os.fsdecode(b"caf\xe9.txt")
    (workspace / name).write_text("x\n")
    runtime = Runtime(workspace)
    try:
        runtime.step(f"cat '{name}'")
        runtime.step(f"echo y > '{name}'")
        view = runtime.view()
        view.encode("utf-8")  # never raises
        assert "caf\\xe9.txt" in view
    finally:
        runtime.close()


def _read(key: str, text: str) -> Command:
    return Command(text, text, Category.READ, FileTarget(key))


def test_stored_outputs_stay_within_the_limit_over_150_read_append_rounds() -> None:
    """The issue's leak, on the eviction logic itself: 150 rounds of reading a 2 MB file and
    appending to it once kept every output; now at most the limit is held at any point."""
    limit = 4 * 1024 * 1024
    ledger = Ledger(Policy(stored_output_limit=limit))
    output = "x" * (2 * 1024 * 1024)
    most = 0
    for round_ in range(150):
        read = _read("big.txt", "cat big.txt")
        ledger.advance(read, ledger.govern(read), output + str(round_), 0, Changes())
        most = max(most, ledger.stored_bytes)
        append = Command("echo >> big.txt", "echo >> big.txt", Category.EDIT)
        ledger.advance(append, Allow(), "", 0, Changes({"big.txt"}))
        most = max(most, ledger.stored_bytes)
    assert most <= limit
    assert ledger.stored_bytes == 0, "the last read went stale with the last append"


def test_least_recently_used_outputs_go_first_and_never_serve_again() -> None:
    ledger = Ledger(Policy(stored_output_limit=10))
    a, b, c = _read("a", "cat a"), _read("b", "cat b"), _read("c", "cat c")
    for command in (a, b):
        ledger.advance(command, Allow(), "1234", 0, Changes())
    served = ledger.govern(a)
    assert isinstance(served, Reuse)
    ledger.advance(a, served, "", 0, Changes())  # a is now more recently used than b
    ledger.advance(c, Allow(), "5678", 0, Changes())  # 12 bytes > 10: b goes
    assert ledger.stored_bytes == 8
    assert isinstance(ledger.govern(a), Reuse)
    assert isinstance(ledger.govern(c), Reuse)
    assert not isinstance(ledger.govern(b), Reuse)


def test_a_missing_root_mid_session_costs_reuse_not_correctness(workspace: Path, tmp_path: Path) -> None:
    runtime = Runtime(workspace)
    try:
        runtime.step("cat a.txt")
        shutil.rmtree(workspace)
        workspace.mkdir()
        (workspace / "a.txt").write_text("recreated\n")
        again = runtime.step("cat a.txt")
        assert again.verdict != "reuse"
        assert again.output == "recreated\n"
    finally:
        runtime.close()


class _DegradedDetector:
    """A detector running in a degraded mode, as the events detector does past the watch limit."""

    name = "degraded"
    degraded = "cannot watch sub (watch limit): every command runs a full snapshot diff"

    def before(self, root: str, command: str) -> None:
        return None

    def after(self, root: str, command: str, exit_code: int) -> Changes:
        return Changes()


def test_a_degraded_detector_is_reported_in_the_step_and_the_view(workspace: Path) -> None:
    runtime = Runtime(workspace, _DegradedDetector())
    try:
        step = runtime.step("cat a.txt")
        assert step.degraded is not None and step.degraded.text() == _DegradedDetector.degraded
        assert "detector degraded: cannot watch sub" in runtime.view()
    finally:
        runtime.close()
    healthy = Runtime(workspace)
    try:
        assert healthy.step("cat a.txt").degraded is None
        assert "degraded" not in healthy.view()
    finally:
        healthy.close()


def _all_gone(groups: Collection[int], seconds: float = 5.0) -> bool:
    """Whether every process group is gone within `seconds` (a kill is not instantaneous)."""
    deadline = time.monotonic() + seconds
    while any(SessionDescendants(group).alive() for group in groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(SessionDescendants(group).alive() for group in groups)


def test_stop_background_kills_the_jobs_and_forgets_them(workspace: Path) -> None:
    # A harness ending a session without closing the Runtime (its detector stays open).
    with Runtime(workspace) as runtime:
        runtime.step("sleep 60 &")
        jobs = set(runtime.background_jobs)
        assert jobs and all(job.alive() for job in jobs)
        runtime.stop_background()
        assert not runtime.background_jobs
        deadline = time.monotonic() + 5
        while any(job.alive() for job in jobs) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(job.alive() for job in jobs), "stop_background left a job running"


class _NamedFailingDetector:
    """Fails in `before`, so that the Step names it in its error."""

    name = "named-detector"

    def before(self, root: str, command: str) -> None:
        raise OSError("cannot start")

    def after(self, root: str, command: str, exit_code: int) -> Changes:
        return Changes()


def test_a_detector_error_names_the_detector_and_the_hook(workspace: Path) -> None:
    with Runtime(workspace, _NamedFailingDetector()) as runtime:
        step = runtime.step("cat a.txt")
        assert step.changes.unknown
        assert (step.detector_error or "").startswith("named-detector.before: OSError('cannot start')"), step.detector_error


class _DegradingDetector(_DegradedDetector):
    """Falls back to a degraded mode while a command runs (its event queue overflows)."""

    degraded = None  # type: ignore[assignment]

    def after(self, root: str, command: str, exit_code: int) -> Changes:
        self.degraded = "event queue overflowed: every command runs a full snapshot diff"
        return Changes()


def test_a_detector_degraded_by_the_command_is_reported_in_that_step(workspace: Path) -> None:
    detector = _DegradingDetector()
    with Runtime(workspace, detector) as runtime:
        step = runtime.step("cat a.txt")
        assert step.degraded is not None and step.degraded.text() == detector.degraded, "the step that degraded the detector says so"


class _RecordingDetector(_DegradedDetector):
    """Records every `after` call, to see what the Runtime tells a detector."""

    degraded = None  # type: ignore[assignment]

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def after(self, root: str, command: str, exit_code: int) -> Changes:
        self.calls.append((command, exit_code))
        return Changes()


def test_the_poll_before_a_reuse_is_shown_as_a_no_op_that_succeeded(workspace: Path) -> None:
    # A detector may weigh the exit code; the poll runs nothing, so it must not look like a failure.
    detector = _RecordingDetector()
    with Runtime(workspace, detector) as runtime:
        runtime.step("cat a.txt")
        assert runtime.step("cat a.txt").verdict == "reuse"
        assert detector.calls == [("cat a.txt", 0), (":", 0)]


def test_a_megabyte_file_is_reused_under_the_default_output_limit(workspace: Path) -> None:
    # Large source files are the reads worth reusing; the default limit must not exclude them.
    big = "".join(f"line {number:07d}\n" for number in range(1 << 16))  # 1 MiB
    (workspace / "big.txt").write_text(big)
    with Runtime(workspace) as runtime:
        first = runtime.step("cat big.txt")
        assert first.complete and first.output == big
        again = runtime.step("cat big.txt")
        assert again.verdict == "reuse" and again.output == big and again.complete


def test_an_output_limit_of_zero_records_only_empty_outputs(workspace: Path) -> None:
    # 0 is a valid limit (keep nothing but empty results); only a negative one is refused.
    with pytest.raises(ValueError, match="output_limit must be non-negative"):
        Runtime(workspace, output_limit=-1)
    (workspace / "empty.txt").write_text("")
    with Runtime(workspace, output_limit=0) as runtime:
        assert not runtime.step("cat a.txt").complete
        assert runtime.step("cat a.txt").verdict != "reuse"
        assert runtime.step("cat empty.txt").complete
        assert runtime.step("cat empty.txt").verdict == "reuse"


@pytest.mark.parametrize("degraded", ["", True, 1])
def test_only_a_non_empty_string_counts_as_a_degraded_account(workspace: Path, degraded: object) -> None:
    class Odd(_DegradedDetector):
        pass

    Odd.degraded = degraded  # type: ignore[assignment]
    with Runtime(workspace, Odd()) as runtime:
        assert runtime.step("cat a.txt").degraded is None
        assert "degraded" not in runtime.view()


def test_printable_escapes_a_lone_surrogate_that_is_not_a_smuggled_byte() -> None:
    # \udc80-\udcff carry undecodable bytes (shown as \xNN); any other lone surrogate cannot be
    # encoded that way and is shown as its code point.
    assert printable("a\udcffb") == "a\\xffb"
    assert printable("a\ud800b") == "a\\ud800b"


def test_a_write_is_governed_without_a_fingerprint(workspace: Path) -> None:
    # Only a read with a target is fingerprinted: a write or a read with no target is never
    # served, so it needs none (and a fingerprint costs a PATH lookup per program). The probe
    # off: with it, the recorded value also names the probe (tests/test_probe_runtime.py).
    with Runtime(workspace, probe=False) as runtime:
        write = runtime.step("echo more >> a.txt")
        assert write.fingerprint is None and write.recorded_fingerprint is None
        read = runtime.step("cat a.txt")
        assert read.fingerprint is not None and read.recorded_fingerprint == read.fingerprint
        # A read outside the root has no target: it is never served either.
        outside = runtime.step(f"cat {workspace.parent}/elsewhere.txt")
        assert outside.command.read_only and outside.command.target is None
        assert outside.fingerprint is None


class _InterruptedAfterDetector(_DegradedDetector):
    """Raises KeyboardInterrupt in `after`: the command has run and left its job behind."""

    degraded = None  # type: ignore[assignment]

    def after(self, root: str, command: str, exit_code: int) -> Changes:
        raise KeyboardInterrupt


def test_an_interrupt_in_the_detector_kills_the_job_the_command_left(workspace: Path, monkeypatch) -> None:
    started = _record_started(monkeypatch)
    runtime = Runtime(workspace, _InterruptedAfterDetector())
    with pytest.raises(KeyboardInterrupt):
        runtime.step("sleep 60 &")
    assert started and not runtime.background_jobs, "the interrupted step never reached the bookkeeping"
    try:
        assert _all_gone(started[:1]), "the job outlived the interrupted step"
    finally:
        SessionDescendants(started[0]).kill()


def test_the_readme_states_the_runtime_s_defaults() -> None:
    # Users size their harness by these numbers (a 4 MiB output is kept whole, a 2-minute
    # command is not cut off); the signature on the embedding page (docs/embedding.md, moved
    # there from the README) is where they read them.
    page = (Path(__file__).resolve().parent.parent / "docs" / "embedding.md").read_text()
    stated = re.search(r"`Runtime\(root, detector, policy, \*, timeout=([0-9.]+), output_limit=([0-9_]+),", page)
    assert stated, "docs/embedding.md no longer shows Runtime's signature"
    defaults = inspect.signature(Runtime).parameters
    assert float(stated[1]) == defaults["timeout"].default
    assert int(stated[2]) == defaults["output_limit"].default
