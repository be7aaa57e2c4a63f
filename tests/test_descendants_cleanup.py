"""What a command's tracking leaves behind once the command is gone: nothing."""

from __future__ import annotations

from test_descendants import needs_cgroup

from ledger_impl import descendants


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
