"""The Runtime end to end on real temporary workspaces: verdicts, byte-exact reuse, and every
odd input the issue names getting defined behaviour instead of a crash or a stale answer."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from ledger_impl import Policy, Runtime
from ledger_impl.execution import command_environment, run_command
from switched_program import SwitchedProgram


def fresh(root: Path, command: str) -> tuple[str, int]:
    """What running `command` now prints, bypassing the ledger."""
    completed = run_command(command, root, 30, 4 * 1024 * 1024)
    return completed.output, completed.exit_code


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 51)))
    (tmp_path / "notes.txt").write_text("alpha\nbeta")  # no final newline
    return tmp_path


def test_a_repeated_read_is_reused_byte_for_byte(workspace: Path) -> None:
    runtime = Runtime(workspace)
    first = runtime.step("cat -n src/app.py")
    again = runtime.step("cat  -n ./src/app.py")
    assert (first.verdict, again.verdict) == ("allow", "reuse")
    assert (again.output, again.exit_code) == fresh(workspace, "cat -n src/app.py")
    assert "step 1" in again.note


def test_a_narrower_range_is_sliced_from_a_wider_read(workspace: Path) -> None:
    runtime = Runtime(workspace)
    runtime.step("sed -n '1,40p' src/app.py")
    narrower = runtime.step("sed -n '10,20p' src/app.py")
    assert narrower.verdict == "reuse"
    assert (narrower.output, narrower.exit_code) == fresh(workspace, "sed -n '10,20p' src/app.py")


def test_a_missing_final_newline_survives_slicing(workspace: Path) -> None:
    runtime = Runtime(workspace)
    runtime.step("cat notes.txt")
    tail = runtime.step("sed -n '2,9p' notes.txt")
    assert tail.verdict == "reuse"
    assert tail.output == "beta" == fresh(workspace, "sed -n '2,9p' notes.txt")[0]


@pytest.mark.parametrize(
    "edit",
    [
        "sed -i 's/line 5/LINE 5/' src/app.py",
        "echo extra >> src/app.py",
        "python3 -c \"import pathlib; p = pathlib.Path('src/app.py'); p.write_text(p.read_text().upper())\"",
        "cp notes.txt src/app.py",
        "ln -f notes.txt hard && echo x >> hard && ln -f hard src/app.py",
    ],
)
def test_an_edit_makes_the_next_read_run_again(workspace: Path, edit: str) -> None:
    runtime = Runtime(workspace)
    runtime.step("cat src/app.py")
    runtime.step(edit)
    reread = runtime.step("cat src/app.py")
    assert reread.verdict == "allow"
    assert (reread.output, reread.exit_code) == fresh(workspace, "cat src/app.py")


def test_a_script_written_now_and_run_later_is_seen(workspace: Path) -> None:
    runtime = Runtime(workspace)
    runtime.step("cat <<'EOF' > fix.py\nimport pathlib\npathlib.Path('src/app.py').write_text('fixed\\n')\nEOF")
    runtime.step("cat src/app.py")
    runtime.step("python3 fix.py")
    assert runtime.step("cat src/app.py").output == "fixed\n"


def test_a_write_made_between_steps_is_caught_before_reuse(workspace: Path) -> None:
    runtime = Runtime(workspace)
    runtime.step("cat notes.txt")
    (workspace / "notes.txt").write_text("changed behind the ledger's back\n")
    step = runtime.step("cat notes.txt")
    assert step.verdict == "allow"
    assert step.output == "changed behind the ledger's back\n"


def test_a_background_writer_keeps_the_workspace_changing_until_it_exits(workspace: Path) -> None:
    runtime = Runtime(workspace)
    runtime.step("cat notes.txt")
    runtime.step("(sleep 0.3; echo late >> notes.txt) &")
    deadline = time.monotonic() + 10
    verdicts = []
    while time.monotonic() < deadline:
        step = runtime.step("cat notes.txt")
        verdicts.append(step.verdict)
        if "late" in step.output:
            break
        time.sleep(0.05)
    # Comparing each step with a separate fresh run would race the writer; what must hold is
    # that nothing is served from storage while it may still write.
    assert "reuse" not in verdicts
    assert "late" in step.output
    settled = runtime.step("cat notes.txt")
    assert (settled.output, settled.exit_code) == fresh(workspace, "cat notes.txt")
    assert runtime.step("cat notes.txt").verdict == "reuse", "once the writer is gone, reuse resumes"


def test_a_write_made_just_before_a_background_job_exited_is_not_missed(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    # The job writes, then exits before the next step: that step must still count the time it
    # lived as changes unknown. A rules detector sees nothing between steps, the fingerprint of
    # a listing holds no entries, and the probe is off, as the mini-SWE-agent adapter runs.
    from ledger_impl import RulesDetector

    outside = tmp_path_factory.mktemp("signals")
    runtime = Runtime(workspace, detector=RulesDetector(), probe=False)
    runtime.step(f"(while [ ! -e {outside}/go ]; do sleep 0.02; done; echo late > src/late.txt) &")
    assert runtime.step("ls src").verdict == "allow"  # the job is alive: run, and observed
    (outside / "go").touch()
    deadline = time.monotonic() + 10
    while any(job.alive() for job in runtime.background_jobs) or not (workspace / "src" / "late.txt").exists():
        assert time.monotonic() < deadline, "the job did not finish"
        time.sleep(0.02)
    step = runtime.step("ls src")
    if step.verdict == "reuse":
        assert (step.output, step.exit_code) == fresh(workspace, "ls src")
    assert runtime.step("ls src").verdict == "reuse", "once the job is gone, reuse resumes"


def test_a_program_switched_while_the_read_ran_is_not_served_once_switched_back(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The fingerprint taken after the run differs from the one taken before: the output may be
    # the other version's, so it is recorded without a fingerprint, even though the program is
    # switched back (and the fingerprint is as before) by the next step. The probe is off.
    program = SwitchedProgram(tmp_path_factory.mktemp("alternatives"))
    environment = {**os.environ, "PATH": program.search_path(os.environ["PATH"])}
    runtime = Runtime(workspace, environment=environment, probe=False)

    def switched_by_another_process(command: str) -> tuple[str, int]:
        program.switch("b")
        completed = run_command(command, workspace, 30, 1 << 20, command_environment(environment))
        return completed.output, completed.exit_code

    runtime.step("cat notes.txt", run=switched_by_another_process)
    program.switch("a")
    step = runtime.step("cat notes.txt")
    if step.verdict == "reuse":
        now = run_command("cat notes.txt", workspace, 30, 1 << 20, command_environment(environment))
        assert (step.output, step.exit_code) == (now.output, now.exit_code)
    assert runtime.step("cat notes.txt").verdict == "reuse", "a read with its fingerprint unmoved is served"


def test_a_repeated_test_with_no_change_is_nudged_not_withheld(workspace: Path) -> None:
    (workspace / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    runtime = Runtime(workspace)
    # The suite's own interpreter has pytest; plugins that write (caches, benchmarks) are off
    # so that the first run's changes are nothing at all.
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:benchmark test_ok.py"
    runtime.step(command)
    second = runtime.step(command)
    assert second.verdict == "nudge"
    assert "passed" in second.output, "a nudged command still runs"
    assert second.note and "already ran" in second.note


def test_a_repeated_test_that_only_wrote_its_own_caches_is_nudged(workspace: Path) -> None:
    (workspace / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    runtime = Runtime(workspace)
    command = f"{sys.executable} -m pytest -q -p no:benchmark test_ok.py"
    first = runtime.step(command)
    assert any(key.startswith(".pytest_cache") for key in first.changes.paths), "the cache must really be written"
    assert runtime.step(command).verdict == "nudge"


def test_reference_mode_returns_a_short_note_instead_of_the_output(workspace: Path) -> None:
    runtime = Runtime(workspace, policy=Policy(reuse_mode="reference"))
    runtime.step("cat src/app.py")
    step = runtime.step("cat src/app.py")
    assert step.verdict == "reuse"
    assert "step 1" in step.output and "line 1" not in step.output


def test_view_reports_current_and_stale_observations(workspace: Path) -> None:
    runtime = Runtime(workspace, task="make app.py shout")
    runtime.step("cat src/app.py")
    runtime.step("cat notes.txt")
    runtime.step("sed -i 's/alpha/ALPHA/' notes.txt")
    view = runtime.view()
    assert "task: make app.py shout" in view
    assert "cat src/app.py [current]" in view
    assert "cat notes.txt [stale: notes.txt changed at step 3]" in view
    assert len(view) <= runtime.policy.view_budget


# --- bad input: defined behaviour, never a crash, never a result it did not see ---------------


def test_unparsable_commands_are_allowed_and_never_reused(workspace: Path) -> None:
    runtime = Runtime(workspace)
    for _ in range(3):
        step = runtime.step("cat 'unterminated")
        assert step.verdict in ("allow", "nudge")
        assert step.exit_code != 0
    assert runtime.step("").verdict == "allow"


def test_a_command_that_is_not_a_string_is_a_type_error(workspace: Path) -> None:
    with pytest.raises(TypeError):
        Runtime(workspace).step(b"cat notes.txt")  # type: ignore[arg-type]


def test_a_root_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="existing directory"):
        Runtime(tmp_path / "missing")


def test_binary_files_are_reused_exactly_as_they_decode(workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(bytes(range(256)) * 4)
    runtime = Runtime(workspace)
    first = runtime.step("cat blob.bin")
    second = runtime.step("cat blob.bin")
    assert second.verdict == "reuse"
    assert second.output == first.output == fresh(workspace, "cat blob.bin")[0]


def test_truncated_output_is_never_recorded(workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 10_000)
    runtime = Runtime(workspace, output_limit=1000)
    first = runtime.step("cat big.txt")
    assert "truncated" in first.output
    assert runtime.step("cat big.txt").verdict != "reuse"


def test_a_timed_out_read_is_never_recorded(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")  # reading a FIFO with no writer blocks
    runtime = Runtime(workspace, timeout=0.3)
    first = runtime.step("cat pipe")
    assert first.exit_code == 124 and "timed out" in first.output
    assert runtime.step("cat pipe").verdict != "reuse"


@pytest.mark.parametrize("name", ["with space.txt", "new\nline.txt", "ünïcødé.txt", "-dash.txt"])
def test_odd_file_names_are_read_and_reused_exactly(workspace: Path, name: str) -> None:
    (workspace / name).write_text("content\n")
    quoted = "'" + name.replace("'", "'\\''") + "'"
    runtime = Runtime(workspace)
    command = f"cat -- {quoted}"
    runtime.step(command)
    again = runtime.step(command)
    assert (again.output, again.exit_code) == fresh(workspace, command)
    (workspace / name).write_text("changed\n")
    assert runtime.step(command).output == "changed\n"


def test_files_outside_the_root_are_never_reused(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside") / "o.txt"
    outside.write_text("one\n")
    runtime = Runtime(workspace)
    for command in (f"cat {outside}", f"cd {outside.parent} && cat o.txt", f"cat ../{outside.parent.name}/o.txt"):
        runtime.step(command)
        assert runtime.step(command).verdict != "reuse"
    link = workspace / "link.txt"
    link.symlink_to(outside)
    runtime.step("cat link.txt")
    outside.write_text("two\n")
    assert runtime.step("cat link.txt").output == "two\n"


def test_cd_outside_the_root_does_not_carry_over(workspace: Path) -> None:
    runtime = Runtime(workspace)
    runtime.step("cd / && ls")
    assert runtime.step("cat notes.txt").output == "alpha\nbeta"


def test_a_symlink_loop_is_an_error_result_not_a_crash(workspace: Path) -> None:
    (workspace / "loop_a").symlink_to("loop_b")
    (workspace / "loop_b").symlink_to("loop_a")
    runtime = Runtime(workspace)
    step = runtime.step("cat loop_a")
    assert step.exit_code != 0 and "Too many levels of symbolic links" in step.output
    again = runtime.step("cat loop_a")
    assert (again.output, again.exit_code) == fresh(workspace, "cat loop_a")


def test_an_unreadable_file_gives_the_same_answer_as_running_it(workspace: Path) -> None:
    secret = workspace / "secret.txt"
    secret.write_text("hidden\n")
    secret.chmod(0)
    runtime = Runtime(workspace)
    runtime.step("cat secret.txt")
    again = runtime.step("cat secret.txt")
    assert (again.output, again.exit_code) == fresh(workspace, "cat secret.txt")
    secret.chmod(0o644)
    secret.write_text("visible\n")
    assert runtime.step("cat secret.txt").output == "visible\n"


def test_a_prefix_read_through_a_pipe_is_served_from_an_absolute_path_read(workspace: Path) -> None:
    # The safety hunt's thorough profile found this sequence served four lines instead of
    # three while a deliberately off-by-one `serve` mutant was in the tree; kept so the
    # slicing path through the classifier and the runtime stays pinned.
    (workspace / "a.txt").write_text("".join(f"{c}\n" for c in "abcdefg"))
    runtime = Runtime(workspace)
    runtime.step(f"head -n 6 {workspace}/a.txt")
    served = runtime.step("cat a.txt | head -n 3")
    assert served.verdict == "reuse"
    assert (served.output, served.exit_code) == fresh(workspace, "cat a.txt | head -n 3") == ("a\nb\nc\n", 0)


@pytest.mark.parametrize("change", ["touch -d '2001-01-01' .", "chmod 700 ."])
def test_a_listing_of_the_root_itself_sees_a_change_to_the_root_s_metadata(workspace: Path, change: str) -> None:
    runtime = Runtime(workspace)
    runtime.step("ls -ld .")
    runtime.step(change)
    again = runtime.step("ls -ld .")
    assert (again.output, again.exit_code) == fresh(workspace, "ls -ld .")
    assert again.verdict != "reuse"


def test_a_text_only_detector_sees_nothing_in_the_poll_before_a_reuse(workspace: Path) -> None:
    # The poll shows detectors the no-op `:`; a rules detector answering "unknown" to it would
    # silently turn every Reuse off.
    from ledger_impl import RulesDetector

    runtime = Runtime(workspace, detector=RulesDetector())
    runtime.step("cat notes.txt")
    assert runtime.step("cat notes.txt").verdict == "reuse"


class BrokenDetector:
    """A detector whose report fails, as a user's might, after the command already ran."""

    name = "broken"

    def __init__(self, fail_in: str) -> None:
        self.fail_in = fail_in

    def before(self, root: Path, command: str) -> None:
        if self.fail_in == "before":
            raise OSError("before failed")

    def after(self, root: Path, command: str, exit_code: int):
        if self.fail_in == "after":
            raise OSError("after failed")
        from ledger_impl import Changes

        return Changes()


@pytest.mark.parametrize("fail_in", ["before", "after"])
def test_a_failing_detector_costs_reuse_never_the_result(workspace: Path, fail_in: str) -> None:
    runtime = Runtime(workspace, detector=BrokenDetector(fail_in))
    first = runtime.step("echo ran >> notes.txt; cat notes.txt")
    assert first.output == "alpha\nbetaran\n", "the command ran and its output is returned"
    assert first.changes.unknown and f"{fail_in} failed" in (first.detector_error or "")
    runtime.step("cat notes.txt")
    assert runtime.step("cat notes.txt").verdict != "reuse", "nothing can be proved unchanged"


def test_a_read_sent_to_dev_null_is_not_stored_as_the_file(workspace: Path) -> None:
    # Found in review: the empty output of `cat f > /dev/null` was served to later reads of f.
    runtime = Runtime(workspace)
    runtime.step("cat notes.txt > /dev/null")
    for command in ("cat notes.txt", "sed -n '1,2p' notes.txt"):
        step = runtime.step(command)
        assert (step.output, step.exit_code) == fresh(workspace, command) == ("alpha\nbeta", 0)


def test_closing_the_runtime_releases_the_detector(workspace: Path) -> None:
    closed = []

    class ClosableDetector(BrokenDetector):
        def close(self) -> None:
            closed.append(True)

    with Runtime(workspace, detector=ClosableDetector("nowhere")) as runtime:
        runtime.step("true")
    assert closed == [True]


def test_a_detector_that_returns_something_other_than_changes_is_a_failed_report(workspace: Path) -> None:
    class ReturnsNone(BrokenDetector):
        def after(self, root: Path, command: str, exit_code: int):
            return None

    step = Runtime(workspace, detector=ReturnsNone("nowhere")).step("cat notes.txt")
    assert step.output == "alpha\nbeta" and step.changes.unknown
    assert "not a Changes" in (step.detector_error or "")
