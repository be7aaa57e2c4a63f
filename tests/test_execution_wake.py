"""The wait for a command ends when bash exits: woken by the exit itself where the system gives
a descriptor for it, by a short slice otherwise; both ways give the same results."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger_impl import execution
from ledger_impl.execution import TIMEOUT_EXIT_CODE, run_command

def _has_exit_descriptors() -> bool:
    # Asked of the system, not of `execution._exit_descriptor`: a fault there that never gives
    # a descriptor must fail the test below, not skip it.
    try:
        descriptor = os.pidfd_open(os.getpid())
    except (AttributeError, OSError):
        return False
    os.close(descriptor)
    return True


needs_exit_descriptor = pytest.mark.skipif(not _has_exit_descriptors(), reason="no process descriptors (os.pidfd_open) here")


@needs_exit_descriptor
def test_a_step_ends_when_bash_exits_even_while_a_background_job_holds_the_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With slices as long as the step's timeout, only the exit itself can end the wait before
    # the job (which holds the pipe) is done.
    monkeypatch.setattr(execution, "POLL_SLICE", 30.0)
    completed = run_command("(sleep 3; echo late) & echo now", tmp_path, 10, 1000)
    try:
        assert completed.output == "now\n"
        assert completed.background is not None and completed.background.alive(), (
            "the step waited for the background job instead of ending with bash"
        )
    finally:
        if completed.background is not None:
            completed.background.kill()


SCENARIOS = [
    ("echo out; echo err >&2; exit 3", 10, ("out\nerr\n", 3, False)),
    ("exec 1>&- 2>&-; sleep 0.2; exit 4", 10, ("", 4, False)),
    # bash outlives the first look, so the wait for its exit really happens, and the job
    # outlives bash by far more than a slice
    ("(sleep 1) & sleep 0.1; echo now", 10, ("now\n", 0, False)),
    ("echo start; sleep 5", 0.5, (None, TIMEOUT_EXIT_CODE, True)),
    # Issue 13 (mutation run): the pipe is read while bash runs, never left full while waiting
    # for its exit; a command that closed its output is still stopped at the deadline; a job
    # that prints after bash has exited is not waited for
    ("sleep 0.3; head -c 200000 /dev/zero | tr '\\0' x", 20, (None, 0, False)),
    ("exec 1>&- 2>&-; sleep 0.9; exit 4", 0.2, (None, TIMEOUT_EXIT_CODE, True)),
    ("(sleep 0.6; echo late) & sleep 0.2", 20, ("", 0, False)),
]


@pytest.mark.parametrize("command, timeout, expected", SCENARIOS)
def test_the_slice_fallback_gives_the_same_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, timeout: float, expected: tuple[object, ...]
) -> None:
    woken = run_command(command, tmp_path, timeout, 1000)
    monkeypatch.setattr(execution, "_exit_descriptor", lambda pid: None)
    sliced = run_command(command, tmp_path, timeout, 1000)
    output, exit_code, timed_out = expected
    for completed in (woken, sliced):
        if output is not None:
            assert completed.output == output
        assert (completed.exit_code, completed.timed_out) == (exit_code, timed_out)
        if completed.background is not None:
            completed.background.kill()
    assert woken.output == sliced.output
    assert (woken.background is None) == (sliced.background is None), "one waited for the job"


def test_a_system_that_refuses_process_descriptors_falls_back_to_slices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kernel before 5.3 answers ENOSYS, a sandbox EPERM: the command still runs, sliced.
    def refused(pid: int) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(execution.os, "pidfd_open", refused, raising=False)
    completed = run_command("echo out; exit 3", tmp_path, 10, 1000)
    assert (completed.output, completed.exit_code, completed.complete) == ("out\n", 3, True)
