"""Running one command: the limits (timeout, output cap) and odd inputs all have defined results."""

from __future__ import annotations

import time
from pathlib import Path

from ledger_impl.execution import LAUNCH_FAILURE_EXIT_CODE, TIMEOUT_EXIT_CODE, group_alive, run_command


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
    assert completed.background_group is not None and not completed.complete
    assert group_alive(completed.background_group)
    deadline = time.monotonic() + 10
    while group_alive(completed.background_group) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_alive(completed.background_group)
    assert (tmp_path / "f").read_text() == "late\n"


def test_a_command_that_closes_stdout_early_still_reports_its_exit(tmp_path: Path) -> None:
    completed = run_command("exec 1>&- 2>&-; sleep 0.2; exit 4", tmp_path, 10, 100)
    assert completed.exit_code == 4
    assert completed.output == ""


def test_a_nul_byte_cannot_be_passed_to_bash_and_says_so(tmp_path: Path) -> None:
    completed = run_command("echo a\0b", tmp_path, 10, 100)
    assert completed.exit_code == LAUNCH_FAILURE_EXIT_CODE
    assert "could not start bash" in completed.output


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


def test_a_group_left_with_only_a_zombie_is_not_alive() -> None:
    # An orphan that PID 1 never reaps stays a zombie in its group: a signal probe finds the
    # group, yet nothing in it can write any more. Here the test process is the parent that
    # does not reap (yet).
    import os
    import subprocess

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
    import subprocess

    process = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert group_alive(process.pid)
    finally:
        process.kill()
        process.wait()


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()[0]
