"""`ledger_impl.probe.dependencies` asked directly: which write reached the host, what an
outside path's identity holds, and a symbolic link judged by what it points to. Operator
mutation of the module found each of these unasked by the probe's end-to-end tests (which
run with Landlock, so a write into a host FIFO never succeeds there and this rule is never
reached); `docs/mutation/survivors.md` lists the mutants."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from ledger_impl.probe import dependencies
from ledger_impl.probe.trace import Access


def _collect(root: Path, *accesses: Access, started_ns: int | None = None):
    return dependencies.collect(accesses, os.fspath(root), time.time_ns() if started_ns is None else started_ns)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    return workspace


@pytest.mark.parametrize(
    "path",
    ["/etc/ledger-host-fifo", "/home/ledger-host-fifo", "/var/run/ledger-host-fifo"],
    ids=["sorts-after-dev", "sorts-after-dev-and-proc", "sorts-after-tmp"],
)
def test_a_successful_write_outside_the_sandbox_s_own_places_is_never_served(root: Path, path: str) -> None:
    """Only /dev, /proc and /tmp are the sandbox's own; a path that merely sorts after one of
    them (a `>` for `==`) is the host's. Pins `ledger_impl/probe/dependencies.py` lines 168, 169
    and 218 (misses: a write into a host FIFO taken for the sandbox's own output).
    """
    found = _collect(root, Access(path, "openat", True, write_only=True))
    assert found.never is not None and "for writing" in found.never


def test_a_successful_write_inside_the_workspace_is_never_served(root: Path) -> None:
    """The workspace is bound read-only: a write that succeeded there went to a FIFO or device,
    even when the workspace itself lies under /tmp, one of the sandbox's own places."""
    assert os.fspath(root).startswith("/tmp/"), "this test needs its workspace under /tmp"
    found = _collect(root, Access(os.fspath(root / "pipe"), "openat", True, write_only=True))
    assert found.never is not None and "for writing" in found.never


@pytest.mark.parametrize("path", ["/tmp/ledger-scratch", "/dev/stderr", "/proc/self/fd/1"])
def test_a_write_to_the_sandbox_s_own_places_is_output_not_input(root: Path, path: str) -> None:
    assert _collect(root, Access(path, "openat", True, write_only=True)).never is None


def test_a_small_file_s_identity_holds_a_digest_of_its_bytes(tmp_path: Path) -> None:
    """The digest catches a same-size rewrite within one tick of the kernel's clock, which
    leaves every stat field equal."""
    path = tmp_path / "config"
    path.write_bytes(b"x = 1\n")
    linked, followed, digest = dependencies.identity(os.fspath(path))
    assert digest == hashlib.blake2b(b"x = 1\n", digest_size=16).hexdigest()


def test_an_outside_link_is_judged_by_the_file_it_points_to(root: Path, tmp_path: Path) -> None:
    """A read through a symbolic link outside the workspace depends on the target: a target
    changed after the command started makes the read unservable, though the link is older.
    Pins `ledger_impl/probe/dependencies.py` line 254 (a miss: the link's own times were
    checked, not the target's).
    """
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "target.conf"
    target.write_text("one\n")
    link = outside / "link.conf"
    link.symlink_to(target)
    time.sleep(2 * dependencies.CTIME_SLACK_NS / 1e9 + 0.02)
    started = time.time_ns()
    time.sleep(0.02)
    target.write_text("two\n")
    found = _collect(root, Access(os.fspath(link), "openat", True), started_ns=started)
    assert found.never is not None and "changed while the command ran" in found.never


def test_a_dangling_link_s_identity_names_its_missing_target(tmp_path: Path) -> None:
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    linked, followed = dependencies.identity(os.fspath(link))
    assert linked[0] != "absent" and followed == ("absent", 2)


def test_only_a_small_regular_file_is_hashed(tmp_path: Path) -> None:
    """A directory or FIFO is never opened for its digest (opening a FIFO would wait for a
    writer); a file over HASHED_BYTES is judged by its stat fields alone."""
    big = tmp_path / "big"
    big.write_bytes(b"x" * (dependencies.HASHED_BYTES + 1))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (tmp_path, big, fifo):
        assert dependencies.identity(os.fspath(path))[2] is None, path
    exact = tmp_path / "exact"
    exact.write_bytes(b"y" * dependencies.HASHED_BYTES)
    assert dependencies.identity(os.fspath(exact))[2] is not None


def test_a_file_that_cannot_be_opened_has_an_unreadable_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root reads every file, so the refusal a user's unreadable file gets is simulated."""
    path = tmp_path / "secret"
    path.write_text("s\n")

    def refuse(*args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(dependencies, "open", refuse, raising=False)
    assert dependencies.identity(os.fspath(path))[2] == "unreadable 13"


def test_a_missing_path_has_an_absent_identity_of_every_kind(tmp_path: Path) -> None:
    missing = os.fspath(tmp_path / "missing")
    assert dependencies.directory_identity(missing) == ("absent", 2)
    assert dependencies.lstat_identity(missing) == ("absent", 2)
    assert dependencies.identity(missing) == ("absent", 2)


def test_an_outside_link_into_the_workspace_depends_on_the_file_inside(root: Path, tmp_path: Path) -> None:
    link = tmp_path / "shortcut"
    link.symlink_to(root / "a.txt")
    found = _collect(root, Access(os.fspath(link), "openat", True))
    assert found.never is None and "a.txt" in found.inside


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_fifo_or_socket_in_the_workspace_is_never_served(root: Path, kind: str) -> None:
    """Pins `ledger_impl/probe/dependencies.py` line 175 (a miss: a FIFO counted as a plain file)."""
    import socket

    path = root / kind
    if kind == "fifo":
        os.mkfifo(path)
    else:
        server = socket.socket(socket.AF_UNIX)
        server.bind(os.fspath(path))
        server.close()
    found = _collect(root, Access(os.fspath(path), "openat", True))
    assert found.never is not None and "FIFO or socket" in found.never


@pytest.mark.parametrize("conversation", ["connect to 127.0.0.1:80", "zz sorts after"], ids=["before", "after"])
def test_a_conversation_over_any_other_socket_is_never_served(root: Path, conversation: str) -> None:
    found = _collect(root, Access("", "connect", True, socket=conversation))
    assert found.never == f"talks over a socket ({conversation})"


def test_a_failed_write_outside_the_sandbox_reached_nothing(root: Path) -> None:
    assert _collect(root, Access("/etc/ledger-host-fifo", "openat", False, "EACCES", write_only=True)).never is None


def test_a_link_into_a_pseudo_filesystem_is_never_served(root: Path, tmp_path: Path) -> None:
    """Pins `ledger_impl/probe/dependencies.py` line 222 (a miss: a link to /proc from outside the
    workspace passed)."""
    link = tmp_path / "status"
    link.symlink_to("/proc/self/status")
    found = _collect(root, Access(os.fspath(link), "openat", True))
    assert found.never is not None and "pseudo-filesystem" in found.never


def test_an_outside_file_changed_during_the_run_is_caught_by_its_ctime_whatever_its_mtime(
    root: Path, tmp_path: Path
) -> None:
    """`touch -d` can set a modification time back; the change time cannot be set.
    Pins `ledger_impl/probe/dependencies.py` line 256 (a miss: the modification time read as
    the change time)."""
    outside = tmp_path / "tool.conf"
    outside.write_text("one\n")
    old = os.stat(outside).st_mtime_ns
    time.sleep(2 * dependencies.CTIME_SLACK_NS / 1e9 + 0.02)
    started = time.time_ns()
    time.sleep(0.02)
    outside.write_text("two\n")
    os.utime(outside, ns=(old, old))
    found = _collect(root, Access(os.fspath(outside), "openat", True), started_ns=started)
    assert found.never is not None and "changed while the command ran" in found.never


def test_a_fifo_outside_the_workspace_is_never_served(root: Path, tmp_path: Path) -> None:
    """Pins `ledger_impl/probe/dependencies.py` line 256 (a miss: the owner's uid read as the file's
    mode, so a FIFO passed)."""
    fifo = tmp_path / "outside-fifo"
    os.mkfifo(fifo)
    started = time.time_ns() + 10 * dependencies.CTIME_SLACK_NS  # its ctime alone would not refuse it
    found = _collect(root, Access(os.fspath(fifo), "openat", True), started_ns=started)
    assert found.never is not None and "device, FIFO or socket" in found.never


def test_reading_one_file_lists_nothing_and_pins_that_file_alone(root: Path) -> None:
    (root / "src").mkdir()
    found = _collect(root, Access(os.fspath(root / "a.txt"), "openat", True), Access(os.fspath(root / "src"), "stat", True))
    assert found.never is None and found.listed_inside is False
    assert [dependency.path for dependency in found.inside_files] == [os.fspath(root / "a.txt")]
    listing = _collect(root, Access(os.fspath(root / "src"), "getdents64", True, listing=True))
    assert listing.listed_inside is True


def test_a_key_inside_the_workspace_is_always_a_normal_name(root: Path) -> None:
    (root / "src").mkdir()
    found = _collect(root, Access(os.fspath(root / "src") + "/..", "stat", True))
    assert found.inside == frozenset({"."})


@pytest.mark.parametrize("offset", [1, -1], ids=["higher", "lower"])
def test_a_file_inside_the_workspace_on_another_filesystem_is_never_served(
    root: Path, monkeypatch: pytest.MonkeyPatch, offset: int
) -> None:
    """A mount inside the workspace: the detector watches one filesystem. Mounting needs
    privileges a test may not have, so the file's device number is moved instead.
    Pins `ledger_impl/probe/dependencies.py` line 236 (a miss: a mount whose device number
    sorts one way passed).
    """
    mounted = os.fspath(root / "a.txt")
    real_lstat = os.lstat

    def lstat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        found = real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]
        if os.fspath(path) != mounted:  # type: ignore[arg-type]
            return found
        fields = list(found)
        fields[2] = found.st_dev + offset  # st_dev
        return os.stat_result(fields)

    monkeypatch.setattr(os, "lstat", lstat)
    found = _collect(root, Access(mounted, "openat", True))
    assert found.never is not None and "another filesystem" in found.never


def test_a_write_to_the_sandbox_s_own_places_does_not_end_the_look_at_what_follows(root: Path) -> None:
    """Pins `ledger_impl/probe/dependencies.py` line 220 (a miss: every access after the first write
    went unread)."""
    found = _collect(
        root, Access("/tmp/ledger-scratch", "openat", True, write_only=True), Access("/proc/self/status", "openat", True)
    )
    assert found.never is not None and "pseudo-filesystem" in found.never


def test_a_dangling_link_outside_the_workspace_is_a_dependency(root: Path, tmp_path: Path) -> None:
    """`ls -l` of a dangling link looks at the link alone: its target's absence is part of the
    identity recorded, so the target appearing later is a change."""
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "nowhere")
    found = _collect(root, Access(os.fspath(link), "lstat", True))
    assert found.never is None
    (dependency,) = found.outside
    assert dependency.path == os.fspath(link) and dependency.identity[1] == ("absent", 2)
    (tmp_path / "nowhere").write_text("now here\n")
    assert dependencies.first_changed(found) == f"{link} changed"


def test_the_digest_of_a_file_of_the_largest_hashed_size_covers_its_last_byte(tmp_path: Path) -> None:
    content = b"z" * (dependencies.HASHED_BYTES - 1) + b"!"
    path = tmp_path / "largest"
    path.write_bytes(content)
    assert dependencies.identity(os.fspath(path))[2] == hashlib.blake2b(content, digest_size=16).hexdigest()


def test_a_change_stamped_by_the_coarse_clock_just_before_the_start_is_caught(root: Path, tmp_path: Path) -> None:
    """The kernel's ctime lags the real time by up to a tick: a change made as the command
    started may carry a ctime a little before the start. It must still count as during the run.
    Pins `ledger_impl/probe/dependencies.py` line 259 (a miss: the slack added instead of subtracted).
    """
    outside = tmp_path / "tool.conf"
    outside.write_text("one\n")
    time.sleep(2 * dependencies.CTIME_SLACK_NS / 1e9 + 0.02)
    outside.write_text("two\n")
    changed_at = os.stat(outside).st_ctime_ns
    started = changed_at + dependencies.CTIME_SLACK_NS // 2
    found = _collect(root, Access(os.fspath(outside), "openat", True), started_ns=started)
    assert found.never is not None and "changed while the command ran" in found.never
