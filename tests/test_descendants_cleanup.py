"""A command's tracking after the command: the same answer on every look, and nothing left behind."""

from __future__ import annotations

import atexit
import pathlib
import subprocess

from test_descendants import needs_cgroup

from ledger_impl import descendants
from ledger_impl.execution import run_command


@needs_cgroup
def test_a_cgroup_found_empty_is_removed() -> None:
    """Counterexample (CI under load, test_killing_a_cgroup_kills_a_job_in_a_session_of_its_own):
    a release after a kill waits RELEASE_WAIT for the killed processes to leave the cgroup, and
    they left later, so the empty cgroup stayed. The next look that finds it empty removes it."""
    started = descendants.launch("true")
    try:
        cgroup = started._cgroup
        assert cgroup is not None and cgroup.is_dir()
        assert not descendants.CgroupDescendants(cgroup).alive()
        assert not cgroup.exists()
    finally:
        started.abandon()


@needs_cgroup
def test_a_launch_gives_the_same_tracking_on_every_call() -> None:
    """The join marker is read once and removed: a second call (the cleanup after an
    interrupted wait) must still see the cgroup the command joined, not fall back to the
    session, whose tracking cannot see a job that left it."""
    started = descendants.launch("true")
    subprocess.run(started.argv, check=True)
    first, second = started.descendants(0), started.descendants(0)  # the pid matters to session tracking only
    assert (first.how, second.how) == (descendants.CGROUP, descendants.CGROUP)
    second.release()


@needs_cgroup
def test_commands_add_no_exit_handler_each(tmp_path: pathlib.Path) -> None:
    """The markers' directory is made again for nearly every command a long-lived process
    (the resident service) runs; one exit handler serves them all, instead of one more per
    directory for as long as the process lives."""
    run_command("true", tmp_path, 10, 100)
    handlers = atexit._ncallbacks()
    for _ in range(3):
        run_command("true", tmp_path, 10, 100)
    assert atexit._ncallbacks() == handlers
