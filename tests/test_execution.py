"""Running one command: the limits (timeout, output cap) and odd inputs all have defined results."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from ledger_impl import execution
from ledger_impl.descendants import SessionDescendants
from ledger_impl.execution import LAUNCH_FAILURE_EXIT_CODE, TIMEOUT_EXIT_CODE, run_command


def group_alive(group: int) -> bool:
    """Whether session tracking finds a live process in `group` (a group leader's session or group)."""
    return SessionDescendants(group).alive()


def kill_group(group: int) -> None:
    SessionDescendants(group).kill()


def test_stdout_and_stderr_interleave_in_one_text_with_the_exit_code(tmp_path: Path) -> None:
    completed = run_command("echo out; echo err >&2; echo out2; exit 3", tmp_path, 10, 10_000)
    assert completed.output == "out\nerr\nout2\n"
    assert completed.exit_code == 3
    assert completed.complete


def test_runs_in_the_given_directory_with_no_stdin(tmp_path: Path) -> None:
    (tmp_path / "marker").write_text("here\n")
    completed = run_command("cat marker; cat; echo done", tmp_path, 10, 10_000)
    assert completed.output == "here\ndone\n"


def test_a_command_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    completed = run_command("(sleep 30; touch late) & sleep 30", tmp_path, 0.3, 10_000)
    assert completed.timed_out and not completed.complete
    assert completed.exit_code == TIMEOUT_EXIT_CODE
    assert "timed out" in completed.output
    time.sleep(0.1)
    assert not (tmp_path / "late").exists()


def test_output_beyond_the_limit_is_dropped_and_said_so(tmp_path: Path) -> None:
    completed = run_command("head -c 3000000 /dev/zero | tr '\\0' x", tmp_path, 30, 1000)
    assert completed.truncated and not completed.complete
    assert completed.output.startswith("x" * 1000)
    assert "2999000 more bytes not shown" in completed.output
    assert completed.exit_code == 0


def test_output_exactly_at_the_limit_is_complete(tmp_path: Path) -> None:
    completed = run_command("printf '%0100d' 0", tmp_path, 10, 100)
    assert completed.output == "0" * 100
    assert completed.complete


def test_undecodable_bytes_are_replaced_the_same_way_every_time(tmp_path: Path) -> None:
    first = run_command("printf 'a\\xff\\xfeb'", tmp_path, 10, 100)
    second = run_command("printf 'a\\xff\\xfeb'", tmp_path, 10, 100)
    assert first.output == second.output == "a\ufffd\ufffdb"


def test_a_background_job_is_reported_and_does_not_hold_the_step(tmp_path: Path) -> None:
    started = time.monotonic()
    completed = run_command("(sleep 1; echo late > f) & echo now", tmp_path, 20, 1000)
    assert time.monotonic() - started < 0.9, "the step must not wait for the background job's pipe"
    assert completed.output == "now\n"
    assert completed.background is not None and not completed.complete
    assert completed.background.alive()
    deadline = time.monotonic() + 10
    while completed.background.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not completed.background.alive()
    assert (tmp_path / "f").read_text() == "late\n"


def test_a_command_that_closes_stdout_early_still_reports_its_exit(tmp_path: Path) -> None:
    completed = run_command("exec 1>&- 2>&-; sleep 0.2; exit 4", tmp_path, 10, 100)
    assert completed.exit_code == 4
    assert completed.output == ""


def test_a_nul_byte_cannot_be_passed_to_bash_and_says_so(tmp_path: Path) -> None:
    completed = run_command("echo a\0b", tmp_path, 10, 100)
    assert completed.exit_code == LAUNCH_FAILURE_EXIT_CODE
    assert "could not start bash" in completed.output
    # Nothing ran: no timeout, no truncation, no job left, and never complete.
    assert (completed.launched, completed.timed_out, completed.truncated, completed.background) == (False, False, False, None)
    assert not completed.complete


def test_a_syntax_error_is_bash_s_answer_not_a_crash(tmp_path: Path) -> None:
    completed = run_command("if then fi (((", tmp_path, 10, 1000)
    assert completed.exit_code == 2
    assert "syntax error" in completed.output


def test_git_status_does_not_rewrite_the_index(tmp_path: Path) -> None:
    setup = "git init -q && echo a > a && git add a && git -c user.name=t -c user.email=t@t commit -qm a && touch a"
    assert run_command(setup, tmp_path, 30, 10_000).exit_code == 0
    index = tmp_path / ".git" / "index"
    before = index.stat().st_mtime_ns, index.read_bytes()
    assert run_command("git status --porcelain", tmp_path, 30, 10_000).exit_code == 0
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before


def test_cd_prints_nothing_even_with_cdpath_set(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "sub").mkdir()
    monkeypatch.setenv("CDPATH", str(tmp_path))
    assert run_command("cd sub && pwd", tmp_path, 10, 1000).output == f"{tmp_path}/sub\n"


def test_git_diff_after_a_stat_only_change_does_not_rewrite_the_index(tmp_path: Path) -> None:
    # Stored as counterexamples/classifier-git-diff-rewrites-index.json by the safety hunt:
    # porcelain `git diff` refreshes the index even with optional locks off.
    setup = "git init -q && echo a > a && git add a && git -c user.name=t -c user.email=t@t commit -qm a"
    assert run_command(setup, tmp_path, 30, 10_000).exit_code == 0
    time.sleep(1.1)  # past the index's racy window, so the refresh would really write
    assert run_command("touch a", tmp_path, 30, 10_000).exit_code == 0
    index = tmp_path / ".git" / "index"
    before = index.stat().st_mtime_ns, index.read_bytes()
    assert run_command("git diff", tmp_path, 30, 10_000).output == ""
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before


def test_the_user_s_own_git_config_variables_are_kept(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.name")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "someone")
    output = run_command("git config user.name; git config diff.autoRefreshIndex", tmp_path, 30, 1000).output
    assert output == "someone\nfalse\n"


# --- Issue 13: tests written for the mutation survivors of execution.py ---


@contextlib.contextmanager
def _running_group(**popen_options: object) -> Iterator[int]:
    """The group of a `sleep 30` started in a session of its own (or as `popen_options` say),
    killed on the way out."""
    child = subprocess.Popen(["sleep", "30"], **(popen_options or {"start_new_session": True}))
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait()


def test_a_timed_out_command_exits_with_the_code_coreutils_timeout_gives(tmp_path: Path) -> None:
    # Agents recognise a timeout by the code `timeout` returns; the oracle is `timeout` itself.
    expected = int(run_command("timeout 0.1 sleep 5; echo $?", tmp_path, 30, 100).output)
    assert run_command("sleep 5", tmp_path, 0.2, 100).exit_code == expected


def test_a_launch_failure_exits_with_the_code_a_shell_gives_a_command_it_cannot_run(tmp_path: Path) -> None:
    expected = run_command("ledger-test-no-such-program", tmp_path, 30, 1000).exit_code
    assert run_command("echo a\0b", tmp_path, 30, 1000).exit_code == expected


def test_a_process_gone_during_the_proc_scan_does_not_end_it(tmp_path: Path, monkeypatch) -> None:
    # A process can exit between the listing of /proc and the read of its stat file; the scan
    # goes on to the others, so a live group is still found.
    listdir = os.listdir

    def listing_with_a_vanished_process(path: str) -> list[str]:
        names = listdir(path)
        return ["999999999", *names] if path == "/proc" else names  # a pid whose stat is gone

    with _running_group() as group:
        monkeypatch.setattr(execution.os, "listdir", listing_with_a_vanished_process)
        assert group_alive(group)


def test_an_unreadable_git_config_count_is_replaced_not_fatal(tmp_path: Path, monkeypatch) -> None:
    # git refuses a bogus GIT_CONFIG_COUNT; the environment still turns the index refresh off.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "several")
    assert run_command("git config diff.autoRefreshIndex", tmp_path, 30, 1000).output == "false\n"


def test_a_command_that_pauses_then_prints_more_than_a_pipe_holds_completes(tmp_path: Path) -> None:
    # While the pipe is open it is read, never left full while waiting for bash to exit.
    completed = run_command("sleep 0.3; head -c 200000 /dev/zero | tr '\\0' x", tmp_path, 20, 1 << 20)
    assert (completed.output, completed.timed_out) == ("x" * 200000, False)


def test_a_command_that_closed_its_output_is_still_stopped_at_its_timeout(tmp_path: Path) -> None:
    # With the pipe closed the wait is for the process alone, and it must end at the deadline:
    # here the command would exit by itself 0.7 s after it.
    completed = run_command("exec 1>&- 2>&-; sleep 0.9; exit 4", tmp_path, 0.2, 100)
    assert completed.timed_out and completed.exit_code != 4


def test_a_group_is_found_by_its_process_group_not_its_session(tmp_path: Path) -> None:
    # A job started under job control has a group of its own inside the caller's session.
    with _running_group(process_group=0) as group:
        assert group_alive(group)


def test_a_group_that_may_not_be_signalled_is_looked_up_in_proc(tmp_path: Path, monkeypatch) -> None:
    # Another user's group answers the probe with EPERM: it exists, so /proc decides.
    def refused(group: int, signal: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    with _running_group() as group:
        monkeypatch.setattr(execution.os, "killpg", refused)
        assert group_alive(group)
        kill_group(group)  # refused too, and said nothing


def test_killing_a_group_that_is_already_gone_is_no_error(tmp_path: Path) -> None:
    child = subprocess.Popen(["true"], start_new_session=True)
    child.wait()
    kill_group(child.pid)
    assert not group_alive(child.pid)


def test_a_command_that_ends_within_its_timeout_is_not_cut_short(tmp_path: Path) -> None:
    completed = run_command("sleep 0.7; echo done", tmp_path, 1.5, 100)
    assert (completed.output, completed.timed_out) == ("done\n", False)


def test_reading_an_empty_pipe_that_is_still_open_gives_nothing_yet(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    with os.fdopen(read_end, "rb") as pipe, os.fdopen(write_end, "wb"):
        assert execution._read_available(pipe) is None


def test_without_proc_a_group_that_answers_the_probe_is_taken_as_alive(tmp_path: Path, monkeypatch) -> None:
    # Off Linux there is no /proc to tell zombies apart: a group that exists may still run.
    listdir = os.listdir

    def no_proc(path: str) -> list[str]:
        if path == "/proc":
            raise FileNotFoundError(2, "No such file or directory", path)
        return listdir(path)

    with _running_group() as group:
        monkeypatch.setattr(execution.os, "listdir", no_proc)
        assert group_alive(group)


def test_the_step_ends_when_bash_does_not_when_a_job_it_left_prints(tmp_path: Path) -> None:
    # bash exits at 0.2 s while its job keeps the pipe open and prints at 0.6 s: the step is
    # over before that, so the job's line is not part of it (and the job is reported).
    completed = run_command("(sleep 0.6; echo late) & sleep 0.2", tmp_path, 20, 100)
    try:
        assert completed.output == ""
        assert completed.background is not None
    finally:
        if completed.background is not None:
            completed.background.kill()


def test_a_group_left_with_only_a_zombie_is_not_alive() -> None:
    # An orphan that PID 1 never reaps stays a zombie in its group: a signal probe finds the
    # group, yet nothing in it can write any more. Here the test process is the parent that
    # does not reap (yet).
    process = subprocess.Popen(["true"], start_new_session=True)
    deadline = time.monotonic() + 10
    while _state(process.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert _state(process.pid) == "Z"
        os.killpg(process.pid, 0)  # the group still exists
        assert not group_alive(process.pid)
    finally:
        process.wait()
    assert not group_alive(process.pid)


def test_a_group_with_a_live_process_is_alive() -> None:
    process = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert group_alive(process.pid)
    finally:
        process.kill()
        process.wait()


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()[0]


def test_a_command_is_stopped_at_its_deadline_before_what_it_would_do_next(tmp_path: Path) -> None:
    # Past the timeout bash itself is killed, not left to finish and only then called timed out.
    completed = run_command("sleep 0.6; touch late", tmp_path, 0.2, 100)
    time.sleep(0.8)
    assert completed.timed_out and not (tmp_path / "late").exists()
