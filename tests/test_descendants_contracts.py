"""The descendants tracker's parts one at a time (`ledger_impl.descendants`): finding the
cgroup base, killing through a cgroup or a session when the usual way fails, and the join
markers' directory. `tests/test_descendants.py` drives whole commands; these reach the
fallbacks a healthy machine never takes, by making one call fail. Written for the survivors of
the module's operator mutation (docs/mutation/survivors.md).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
from module_os import ModuleOs
from test_descendants import needs_cgroup

from ledger_impl import Runtime, descendants
from ledger_impl.descendants import CgroupDescendants, SessionDescendants


def _gone(pid: int) -> bool:
    """Whether `pid` has exited (reaped or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except FileNotFoundError:
        return True


def _joined(started: descendants.Launch) -> None:
    """Wait until the command has joined its cgroup (the wrapper leaves its marker then)."""
    deadline = time.monotonic() + 10
    while started._joined is not None and not started._joined.exists() and time.monotonic() < deadline:
        time.sleep(0.005)


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def job_control_child() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """bash in a session of its own, with a job in a process group of its own (`set -m`):
    killing bash's group alone leaves the job."""
    bash = subprocess.Popen(
        ["bash", "-c", "set -m; sleep 300 & echo $!; wait"], stdout=subprocess.PIPE, start_new_session=True,
    )
    assert bash.stdout is not None
    job = int(bash.stdout.readline())
    yield bash, job
    for pid in (job, bash.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    bash.wait()


def test_a_session_s_kill_reaches_a_job_in_another_process_group(job_control_child: tuple[subprocess.Popen[bytes], int]) -> None:
    bash, job = job_control_child
    assert os.getpgid(job) != bash.pid and os.getsid(job) == bash.pid
    SessionDescendants(bash.pid).kill()
    assert _wait_gone(job)


@pytest.mark.parametrize("error", [ProcessLookupError, PermissionError])
def test_a_process_that_cannot_be_signalled_is_passed_over(monkeypatch: pytest.MonkeyPatch, error: type[OSError]) -> None:
    """Gone since it was listed, or not ours: neither stops the kill of the rest."""
    def refusing_kill(pid: int, sig: int) -> None:
        raise error()

    monkeypatch.setattr(descendants, "os", ModuleOs(kill=refusing_kill, killpg=refusing_kill))
    monkeypatch.setattr(descendants, "live_processes", lambda member: [12345])
    SessionDescendants(12345).kill()


def test_without_proc_a_session_is_killed_by_its_group_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    killed: list[int] = []

    def no_proc(path: str) -> list[str]:
        raise FileNotFoundError(2, "No such file or directory", path)

    monkeypatch.setattr(descendants, "os", ModuleOs(killpg=lambda group, sig: killed.append(group), listdir=no_proc))
    SessionDescendants(4242).kill()
    assert killed == [4242]
    assert SessionDescendants(4242).alive(), "without /proc nothing tells a live process from a zombie"


def test_a_process_that_exits_between_the_listing_and_the_read_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    listing = os.listdir
    monkeypatch.setattr(descendants, "os", ModuleOs(listdir=lambda path: [*listing(path), "999999999"]))
    assert os.getpid() in descendants.live_processes(lambda group, session: group == os.getpgid(0))


@needs_cgroup
def test_killing_a_launch_reaches_a_job_that_left_bash_s_process_group() -> None:
    started = descendants.launch("set -m; sleep 300 & echo $!; wait")
    bash = subprocess.Popen(started.argv, stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert bash.stdout is not None
        job = int(bash.stdout.readline())
        assert os.getpgid(job) != bash.pid
        _joined(started)
        assert started.descendants(bash.pid).how == descendants.CGROUP
        started.kill(bash.pid)
        assert _wait_gone(job)
    finally:
        bash.kill()
        bash.wait()
        started.abandon()


def test_killing_a_launch_tracked_by_its_session_kills_its_group(job_control_child: tuple[subprocess.Popen[bytes], int]) -> None:
    bash, _ = job_control_child
    started = descendants.launch("true", tracking=descendants.SESSION)
    started.kill(bash.pid)
    assert bash.wait(10) == -signal.SIGKILL


def test_a_launch_killed_after_its_group_is_gone_raises_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_ours(group: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(descendants, "os", ModuleOs(killpg=not_ours))
    descendants.launch("true", tracking=descendants.SESSION).kill(999999)


@needs_cgroup
def test_a_cgroup_that_cannot_be_made_falls_back_to_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    real_mkdir = pathlib.Path.mkdir

    def refused(self: pathlib.Path, *args: object, **kwargs: object) -> None:
        if self.name.startswith("ledger-"):
            raise PermissionError(13, "Permission denied", str(self))
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pathlib.Path, "mkdir", refused)
    started = descendants.launch("true")
    assert started.argv == ["bash", "-c", "true"] and started.descendants(os.getpid()).how == descendants.SESSION


@pytest.mark.parametrize("base", [None, pathlib.Path("/somewhere")], ids=["none", "base"])
def test_the_tracking_available_is_the_cgroup_s_only_with_a_base(monkeypatch: pytest.MonkeyPatch, base: object) -> None:
    monkeypatch.setattr(descendants, "cgroup_base", lambda: base)
    assert descendants.available() == (descendants.SESSION if base is None else descendants.CGROUP)


@needs_cgroup
def test_killing_a_cgroup_without_cgroup_kill_signals_each_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels before 5.14 have no `cgroup.kill`: each process listed in `cgroup.procs` is
    signalled instead."""
    started = descendants.launch("sleep 300")
    sleeper = subprocess.Popen(started.argv, start_new_session=True)
    try:
        _joined(started)
        tracked = started.descendants(sleeper.pid)
        assert tracked.how == descendants.CGROUP
        real_write = pathlib.Path.write_text

        def no_cgroup_kill(self: pathlib.Path, *args: object, **kwargs: object) -> int:
            if self.name == "cgroup.kill":
                raise FileNotFoundError(2, "No such file or directory", str(self))
            return real_write(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(pathlib.Path, "write_text", no_cgroup_kill)
        tracked.kill()
        assert sleeper.wait(10) == -signal.SIGKILL
    finally:
        sleeper.kill()
        sleeper.wait()
        started.abandon()


@needs_cgroup
def test_a_kill_returns_once_the_cgroup_is_empty_or_after_the_release_wait() -> None:
    started = descendants.launch("sleep 300")
    sleeper = subprocess.Popen(started.argv, start_new_session=True)
    try:
        _joined(started)
        tracked = started.descendants(sleeper.pid)
        assert isinstance(tracked, CgroupDescendants) and tracked.alive()
        began = time.monotonic()
        tracked.kill()
        waited = time.monotonic() - began
        assert not tracked.path.exists() or waited >= descendants.RELEASE_WAIT, \
            "the kill returned with the cgroup still populated, before its wait was over"
    finally:
        sleeper.kill()
        sleeper.wait()
        started.abandon()


@needs_cgroup
def test_an_empty_cgroup_that_cannot_be_removed_is_still_not_alive() -> None:
    base = descendants.cgroup_base()
    assert base is not None
    parent = base / f"ledger-{os.getpid()}-test-busy"
    (parent / "child").mkdir(parents=True)
    try:
        assert not CgroupDescendants(parent).alive()  # rmdir: busy, a child cgroup is in it
        assert parent.is_dir()
    finally:
        (parent / "child").rmdir()
        parent.rmdir()


def _fake_proc(monkeypatch: pytest.MonkeyPatch, mountinfo: str, own: str | None) -> None:
    real_read = pathlib.Path.read_text

    def read(self: pathlib.Path, *args: object, **kwargs: object) -> str:
        if str(self) == "/proc/self/mountinfo":
            return mountinfo
        if str(self) == "/proc/self/cgroup":
            if own is None:
                raise PermissionError(13, "Permission denied", str(self))
            return own
        return real_read(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pathlib.Path, "read_text", read)


@pytest.fixture
def fake_mount(tmp_path: pathlib.Path) -> pathlib.Path:
    """A directory standing in for a cgroup v2 mount, with our cgroup `work/sub` in it."""
    (tmp_path / "work" / "sub").mkdir(parents=True)
    (tmp_path / "work" / "sub" / "cgroup.procs").write_text("")
    return tmp_path


def _mountinfo(mount: pathlib.Path) -> str:
    return (
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        f"41 31 0:38 / {mount} rw,relatime - cgroup2 cgroup2 rw\n"
    )


def test_the_cgroup_base_is_the_v2_mount_joined_with_our_cgroup(monkeypatch: pytest.MonkeyPatch, fake_mount: pathlib.Path) -> None:
    _fake_proc(monkeypatch, _mountinfo(fake_mount), "1:cpu:/elsewhere\n0::/work/sub\n")
    assert descendants.cgroup_base.__wrapped__() == fake_mount / "work" / "sub"
    assert not any(name.name.endswith("-trial") for name in (fake_mount / "work" / "sub").iterdir())


@pytest.mark.parametrize(
    ("mountinfo", "own"),
    [
        ("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", "0::/work/sub\n"),  # no cgroup v2 mount
        (None, "1:cpu:/\n"),  # no v2 line for our process
        (None, None),  # /proc/self/cgroup unreadable
    ],
    ids=["no-mount", "no-v2-cgroup", "unreadable"],
)
def test_no_cgroup_base_without_a_mount_and_our_place_in_it(
    monkeypatch: pytest.MonkeyPatch, fake_mount: pathlib.Path, mountinfo: str | None, own: str | None
) -> None:
    _fake_proc(monkeypatch, _mountinfo(fake_mount) if mountinfo is None else mountinfo, own)
    assert descendants.cgroup_base.__wrapped__() is None


def test_no_cgroup_base_where_no_cgroup_can_be_made(monkeypatch: pytest.MonkeyPatch, fake_mount: pathlib.Path) -> None:
    _fake_proc(monkeypatch, _mountinfo(fake_mount), "0::/work/missing\n")
    assert descendants.cgroup_base.__wrapped__() is None


def test_no_cgroup_base_where_processes_cannot_be_moved(monkeypatch: pytest.MonkeyPatch, fake_mount: pathlib.Path) -> None:
    (fake_mount / "work" / "sub" / "cgroup.procs").unlink()  # root may write anything that is there
    _fake_proc(monkeypatch, _mountinfo(fake_mount), "0::/work/sub\n")
    assert descendants.cgroup_base.__wrapped__() is None


def test_the_markers_directory_stays_while_another_launch_waits_on_one() -> None:
    markers = descendants._Markers()
    first, second = markers.take("one"), markers.take("two")
    assert first.parent == second.parent
    markers.release(first)
    assert second.parent.is_dir()
    markers.release(second)
    assert not second.parent.exists()


def test_a_markers_directory_removed_by_someone_else_is_no_error() -> None:
    markers = descendants._Markers()
    marker = markers.take("one")
    shutil.rmtree(marker.parent)  # a temporary-file cleaner
    markers.release(marker)
    assert markers.take("two").parent.is_dir()
    markers._remove()


@pytest.mark.parametrize("tracking", [descendants.CGROUP, descendants.SESSION])
def test_a_runtime_holds_each_command_s_background_jobs_as_one_entry(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """The Runtime keeps trackings in a set: each is its own entry, compared by identity (two
    commands' trackings are never one), and must be hashable."""
    if tracking == descendants.CGROUP and descendants.cgroup_base() is None:
        pytest.skip("no cgroup v2 to make cgroups in")
    if tracking == descendants.SESSION:
        monkeypatch.setattr(descendants, "cgroup_base", lambda: None)
    with Runtime(tmp_path) as runtime:
        runtime.step("sleep 300 &")
        runtime.step("sleep 300 &")
        jobs = runtime.background_jobs
        assert len(jobs) == 2 and {job.how for job in jobs} == {tracking}
        runtime.stop_background()
        deadline = time.monotonic() + 10  # killed processes leave a moment after the signal
        while any(job.alive() for job in jobs) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not any(job.alive() for job in jobs)


@pytest.mark.parametrize("tracking", [None, descendants.SESSION], ids=["best", "session"])
def test_a_launch_that_never_started_leaves_nothing(tracking: str | None) -> None:
    started = descendants.launch("true", tracking=tracking)
    made = started._cgroup
    started.abandon()
    assert made is None or not made.exists()
