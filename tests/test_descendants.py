"""Every process a command starts is tracked until it exits, also one that leaves bash's process
group (`set -m`) or session (`setsid`, a double fork): while any lives, the Runtime serves nothing.

Each job waits for a file outside the root before it writes, so no assertion depends on the
machine's speed; each wait is bounded, so a test stopped half way leaves no job running long."""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile
import time
from typing import Callable

import pytest

from ledger_impl import Runtime, default_detector
from ledger_impl import descendants
from ledger_impl.execution import run_command

needs_cgroup = pytest.mark.skipif(
    descendants.cgroup_base() is None, reason="no writable cgroup v2 here: only session tracking can be tested"
)


def _wait(outside: pathlib.Path, name: str) -> str:
    return f"i=0; while [ ! -e {outside}/{name} ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"


def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# How a job leaves bash: each is a background writer that outlives the command. The second item
# says whether session tracking still sees it (a new session escapes it).
# Each job touches `left` once it runs where it will stay, and bash waits for that before it
# exits: otherwise bash could exit while the job is still in its session (tracked either way).
ESCAPES = {
    "job-control": ("set -m; (touch {left}; {wait}; echo late >> a.txt) > /dev/null 2>&1 & {wait_left}", True),
    "nohup": ("nohup sh -c 'touch {left}; {wait}; echo late >> a.txt' > /dev/null 2>&1 & {wait_left}", True),
    "setsid": ("setsid sh -c 'touch {left}; {wait}; echo late >> a.txt' > /dev/null 2>&1 < /dev/null & {wait_left}", False),
    "double-fork-setsid": (
        "( setsid sh -c 'touch {left}; {wait}; echo late >> a.txt' > /dev/null 2>&1 < /dev/null & ) ; {wait_left}", False
    ),
}


def _job(escape: str, outside: pathlib.Path, suffix: str = "") -> str:
    return ESCAPES[escape][0].format(
        wait=_wait(outside, "go"), left=f"{outside}/left", wait_left=_wait(outside, "left")
    ) + suffix


def _ours() -> set[pathlib.Path]:
    """This process's cgroups (other processes make and remove theirs beside them meanwhile)."""
    base = descendants.cgroup_base()
    assert base is not None
    return {path for path in base.iterdir() if path.name.startswith(f"ledger-{os.getpid()}-")}


def _failing_joins(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """Every command launched from now on joins a cgroup whose `cgroup.procs` is not there."""
    real = descendants.launch

    def misdirected(command: str, *, tracking: str | None = None) -> descendants.Launch:
        start = real(command, tracking=tracking)
        start.argv[4] = str(tmp_path / "no-such-cgroup" / "cgroup.procs")
        return start

    monkeypatch.setattr(descendants, "launch", misdirected)


def _workspace(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.txt").write_text("before\n")
    return root, outside


@needs_cgroup
@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_a_job_that_leaves_the_group_or_session_is_tracked_by_its_cgroup(tmp_path: pathlib.Path, escape: str) -> None:
    root, outside = _workspace(tmp_path)
    with Runtime(root, default_detector(), process_tracking="cgroup") as runtime:
        runtime.step("cat a.txt")
        started = runtime.step(_job(escape, outside))
        assert not started.complete and runtime.background_jobs, "the job that left bash is tracked"
        assert runtime.step("cat a.txt").verdict != "reuse", "no Reuse while a descendant lives"
        (outside / "go").touch()
        _wait_for(lambda: (root / "a.txt").read_text() == "before\nlate\n")
        _wait_for(lambda: not any(job.alive() for job in runtime.background_jobs))
        after = runtime.step("cat a.txt")
        assert after.verdict != "reuse" and after.output == "before\nlate\n"
        assert not runtime.background_jobs


@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_session_tracking_sees_what_stays_in_the_session(tmp_path: pathlib.Path, escape: str) -> None:
    root, outside = _workspace(tmp_path)
    _, seen = ESCAPES[escape]
    completed = run_command(_job(escape, outside), root, 20, 1000, process_tracking="session")
    try:
        assert (completed.background is not None) == seen
    finally:
        (outside / "go").touch()
        if completed.background is not None:
            completed.background.kill()


@needs_cgroup
def test_killing_a_cgroup_kills_a_job_in_a_session_of_its_own(tmp_path: pathlib.Path) -> None:
    root, outside = _workspace(tmp_path)
    completed = run_command(_job("setsid", outside), root, 20, 1000)
    assert completed.background is not None and completed.background.how == descendants.CGROUP
    completed.background.kill()
    _wait_for(lambda: not completed.background.alive())
    (outside / "go").touch()
    time.sleep(0.2)  # it would have written by now, had it lived
    assert (root / "a.txt").read_text() == "before\n"
    assert not completed.background.path.exists(), "the killed command's cgroup is removed"


@needs_cgroup
def test_a_timeout_kills_what_left_the_session_and_removes_the_cgroup(tmp_path: pathlib.Path) -> None:
    root, outside = _workspace(tmp_path)
    before = _ours()
    completed = run_command(_job("setsid", outside, "; sleep 30"), root, 3, 1000)
    assert completed.timed_out and completed.background is None
    (outside / "go").touch()
    time.sleep(0.2)
    assert (root / "a.txt").read_text() == "before\n", "the job outlived the timeout"
    assert _ours() == before, "the command's cgroup is left behind"


@needs_cgroup
def test_a_command_with_nothing_left_leaves_no_cgroup(tmp_path: pathlib.Path) -> None:
    before = _ours()
    assert run_command("echo hi", tmp_path, 10, 100).output == "hi\n"
    assert _ours() == before


@needs_cgroup
def test_a_failed_join_falls_back_to_session_tracking(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # sh cannot write its pid into a cgroup.procs that is not there: the command still runs once,
    # no marker says it joined, and session tracking follows it.
    _failing_joins(monkeypatch, tmp_path)
    root, outside = _workspace(tmp_path)
    completed = run_command(f"echo ran >> {outside}/count; " + _job("job-control", outside), root, 20, 1000)
    try:
        assert (outside / "count").read_text() == "ran\n", "the command ran exactly once"
        assert completed.background is not None and completed.background.how == descendants.SESSION
    finally:
        (outside / "go").touch()
        if completed.background is not None:
            completed.background.kill()


@needs_cgroup
@pytest.mark.parametrize("join", ["fails", "succeeds"])
def test_a_command_runs_once_and_is_tracked_soundly_after_its_marker_directory_was_removed(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, join: str
) -> None:
    """Counterexample (CI, `-n 3`): the private directory of the join markers is made once per
    process under the temporary directory, and something removed it. With the join failing
    too, `/bin/sh` could write neither and exited before it ran the command: the command never
    ran. A join that cannot be confirmed must fall back to session tracking, and the command
    must run either way."""
    # Another launch of this process is pending, so the directory exists; a temporary-file
    # cleaner (or another test) removes it.
    held = descendants._markers.take("held")
    shutil.rmtree(held.parent, ignore_errors=True)
    if join == "fails":
        _failing_joins(monkeypatch, tmp_path)
    root, outside = _workspace(tmp_path)
    try:
        completed = run_command(f"echo ran >> {outside}/count; " + _job("job-control", outside), root, 20, 1000)
    finally:
        descendants._markers.release(held)
    try:
        assert (outside / "count").read_text() == "ran\n", "the command ran exactly once"
        assert completed.output == "", "nothing of the join reaches the command's output"
        assert completed.background is not None
        assert completed.background.how == (descendants.SESSION if join == "fails" else descendants.CGROUP)
    finally:
        (outside / "go").touch()
        if completed.background is not None:
            completed.background.kill()


@needs_cgroup
def test_no_marker_directory_outlives_the_commands_that_wait_on_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counterexample (CI, tests/test_interrupt.py): the join markers' directory was made once
    per process and removed only by an atexit handler; a hunt worker stopped during its
    interpreter's exit left it in the user's TMPDIR. It is now gone once no launch waits on
    a marker, and made again for the next one."""
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", None)
    for _ in range(2):
        completed = run_command("echo ran", tmp_path, 10, 100)
        assert completed.output == "ran\n"
        assert list(private.iterdir()) == []
    started = descendants.launch("true")
    assert [entry.name for entry in private.iterdir()] == [started._joined.parent.name]
    started.abandon()
    assert list(private.iterdir()) == []


def test_the_runtime_says_how_it_tracks_and_refuses_an_unknown_way(tmp_path: pathlib.Path) -> None:
    with Runtime(tmp_path, process_tracking="session") as runtime:
        assert runtime.process_tracking.startswith("session: ") and "setsid" in runtime.process_tracking
    with pytest.raises(ValueError, match="process_tracking"):
        Runtime(tmp_path, process_tracking="ptrace")


def test_the_wrapper_keeps_bash_s_arguments_and_exit_status(tmp_path: pathlib.Path) -> None:
    # Under cgroup tracking bash is started through sh; what the command sees must not change.
    for tracking in (None, "session"):
        completed = run_command('echo "$0" "$#" "$$" >/dev/null; echo "$0 $#"; exit 7', tmp_path, 10, 100, process_tracking=tracking)
        assert (completed.output, completed.exit_code) == ("bash 0\n", 7)
