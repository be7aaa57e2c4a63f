"""EventDetector cases added for the mutants its other tests let survive (see
mutation-survivors.md, section `ledger_impl/detectors/events.py`), on real trees."""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import subprocess
import threading
import time

import pytest
from inotify_simple import Event

from detector_scenarios import Session, sh
from ledger_impl.detectors import EventDetector, events

pytestmark = pytest.mark.skipif(events.INotify is None, reason="inotify is Linux-only")


def _record_calls(monkeypatch: pytest.MonkeyPatch, name: str, inside: pathlib.Path) -> list[str]:
    """Record the paths below `inside` that `os.<name>` is called on (the detector and the
    snapshot code share the `os` module), from now until `monkeypatch.undo()`."""
    seen: list[str] = []
    real = getattr(os, name)
    prefix = str(inside) + os.sep

    def recording(path, *args, **kwargs):
        if os.fspath(path).startswith(prefix):
            seen.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, name, recording)
    return seen


def _root_and_outside(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A root to watch and a directory beside it, outside the root."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    return root, outside


def _inotify_acting_before_each_watch(act):
    """An INotify that calls `act(path)` just before adding each watch: a change in the gap
    between a file's stat and its watch, which only a real race would otherwise make."""

    class RacingINotify(events.INotify):  # type: ignore[misc,valid-type]
        def add_watch(self, path, mask):  # type: ignore[no-untyped-def]
            act(str(path))
            return super().add_watch(path, mask)

    return RacingINotify


def _after_a_raced_first_look(root: pathlib.Path, racing_inotify, monkeypatch: pytest.MonkeyPatch):
    """The detector's first look at `root` under `racing_inotify`, then an after() with no
    command: what it reports for the race."""
    monkeypatch.setattr(events, "INotify", racing_inotify)
    with contextlib.closing(EventDetector(racy_window_ns=0)) as detector:
        detector.before(root, "true")
        return detector.after(root, "true", 0)


@pytest.mark.parametrize("complete_link_tracking", [True, False], ids=["sound", "regular-files-only-variant"])
def test_settled_files_are_proved_by_their_watch_and_not_re_stat_ed(tmp_path, monkeypatch, complete_link_tracking):
    # The module's promise: cost grows with the changes, not the tree. A file whose stat right
    # after its watch matches its entry (and is not racy) is proved at the first scan, so a
    # command that touches nothing makes the next after() stat nothing inside the root. A
    # directory is watched as a directory, never as an inode (that would leave it unproven).
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(name)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.txt").write_text("d")
    os.symlink("a.txt", tmp_path / "link")
    time.sleep(0.05)  # older than the (zero) racy window: the entries are settled
    detector = EventDetector(racy_window_ns=0, complete_link_tracking=complete_link_tracking)
    try:
        detector.before(tmp_path, "true")
        seen = _record_calls(monkeypatch, "lstat", tmp_path)
        changes = detector.after(tmp_path, "true", 0)
        assert changes.empty and detector.fallbacks == 0
        assert seen == [], "settled files were compared again though no event named them"
    finally:
        detector.close()


_MOUNTINFO = b"\n".join(
    b"%d 1 0:%d / %s rw - tmpfs tmpfs rw" % (number, number, point)
    for number, point in enumerate(
        (b"/", b"/work", b"/work/root", b"/work/root/sub", b"/work/root\\040x/in", b"/work/rootz", b"/zzz", b"/work/roo"),
        start=20,
    )
)


def test_the_mount_table_holds_the_mounts_at_or_below_the_root_only(monkeypatch):
    # A mount elsewhere (one that sorts before or after the root, a sibling whose name extends
    # the root's) must not be compared: on a busy machine it would cost a full diff for nothing.
    # A mount point's escaped space is decoded, so `/work/root x/in` is not below `/work/root`.
    real_open = open

    def fake_open(path, *args, **kwargs):
        if path == "/proc/self/mountinfo":
            return io.BytesIO(_MOUNTINFO)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(events, "open", fake_open, raising=False)
    points = [line.split(b" ")[4] for line in events.mount_table("/work/root")]
    assert points == [b"/work/root", b"/work/root/sub"]
    assert [line.split(b" ")[4] for line in events.mount_table("/work/root x/")] == [b"/work/root\\040x/in"]


def test_a_deleted_file_leaves_no_inode_watch_behind(tmp_path):
    # The watch of a file whose last name in the root is gone is released and forgotten:
    # otherwise a long session keeps one record per file it ever saw.
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    detector = EventDetector()
    try:
        session = Session(detector, tmp_path)
        session.step("true")
        assert len(detector._inode_wd) == 2
        changes, truth = session.step("rm a.txt b.txt")
        assert changes.paths == truth == {"a.txt", "b.txt"}
        assert detector._inode_wd == {} and detector._wd_to_inode == {}
    finally:
        detector.close()


def test_a_lost_marker_ends_in_a_full_diff_after_the_timeout_not_a_hang(tmp_path):
    # If the marker's event never comes (a wedged queue), after() must give up once
    # `marker_timeout_s` has passed and diff in full, never block on an empty queue.
    (tmp_path / "a.txt").write_text("a")
    detector = EventDetector(marker_timeout_s=0.3)
    outcome: list = []
    try:
        detector.before(tmp_path, "true")
        detector._inotify.rm_watch(detector._marker_wd)  # the marker now raises no event
        (tmp_path / "a.txt").write_text("changed")
        worker = threading.Thread(target=lambda: outcome.append(detector.after(tmp_path, "true", 0)), daemon=True)
        worker.start()
        worker.join(timeout=20)
        assert not worker.is_alive(), "after() hung waiting for a marker that cannot come"
        assert outcome[0].paths == {"a.txt"} and detector.fallbacks == 1
        assert "marker" in str(detector.degraded)
    finally:
        detector.close()


def test_a_marker_that_is_not_readable_at_once_is_waited_for(tmp_path):
    # The marker is normally read at the first try; if a read comes back empty first, the
    # detector waits (up to `marker_timeout_s`) rather than giving up on events at once, and
    # the events already read (by before()) are no reason to suspect an overflow.
    (tmp_path / "a.txt").write_text("a")
    detector = EventDetector()
    try:
        session = Session(detector, tmp_path)
        session.step("true")
        real_read = detector._inotify.read
        calls: list[int] = []

        def slow_first_read(timeout=None, read_delay=None):
            calls.append(timeout)
            if len(calls) == 1:
                return []
            return real_read(timeout=timeout)

        (tmp_path / "a.txt").write_text("b")  # before() reads its events: they wait in the list
        detector.before(tmp_path, "true")
        detector._inotify.read = slow_first_read
        changes = detector.after(tmp_path, "true", 0)
        assert changes.paths == {"a.txt"}
        assert detector.fallbacks == 0 and len(calls) >= 2
    finally:
        detector.close()


def test_a_reused_inode_number_after_a_full_diff_forgets_the_dropped_watch(tmp_path, monkeypatch):
    # A full diff discards the queued events, among them the kernel's notice that a deleted
    # file's watch is gone. When the next file gets the freed inode number (ext4 often hands it
    # out again at once), its new watch must replace the dropped one in the records: every inode
    # watch recorded is a live one, and the dropped one's late events are ignored.
    detector = EventDetector()
    try:
        session = Session(detector, tmp_path)
        session.step("echo 0 > f0")
        for i in range(1, 13):
            st = os.lstat(tmp_path / f"f{i - 1}")
            old_wd = detector._inode_wd[(st.st_dev, st.st_ino)]
            monkeypatch.setattr(events, "mount_table", lambda root: ("a mount appeared",))
            session.step(f"rm f{i - 1} && echo {i} > f{i}")
            monkeypatch.undo()
            assert detector.fallbacks == i
            assert set(detector._wd_to_inode) == set(detector._inode_wd.values())
            if os.lstat(tmp_path / f"f{i}").st_ino == st.st_ino:
                break
        else:
            pytest.skip("this filesystem did not reuse an inode number in 12 tries")
        assert old_wd in detector._released
        changes, truth = session.step(f"echo more >> f{i}")
        assert changes.paths == truth == {f"f{i}"} and detector.fallbacks == i
    finally:
        detector.close()


def test_a_new_directory_s_files_are_found_by_stat_without_reading_them(tmp_path, monkeypatch):
    # after() reads a file's content at most once: a fresh (racy) file in a new directory is
    # found by stat when the directory is scanned, and hashed once, when it is proved.
    with contextlib.closing(EventDetector()) as detector:
        detector.before(tmp_path, "true")
        detector.before(tmp_path, "mkdir d")
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "f").write_text("fresh")
        opened = _record_calls(monkeypatch, "open", tmp_path)
        changes = detector.after(tmp_path, "mkdir d", 0)
        monkeypatch.undo()
    assert changes.paths == {"d", "d/f"} and detector.fallbacks == 0
    assert opened == [str(tmp_path / "d" / "f")]


def test_events_after_an_earlier_after_s_late_marker_are_kept(tmp_path, monkeypatch):
    # An after() that gave up waiting leaves its marker's event queued. The next after() skips
    # that stale marker and keeps reading the events behind it: they are the command's.
    (tmp_path / "a.txt").write_text("a")
    detector = EventDetector(marker_timeout_s=0.3)
    try:
        session = Session(detector, tmp_path)
        session.step("true")
        monkeypatch.setattr(detector._inotify, "read", lambda timeout=None, read_delay=None: [])
        session.step("true")  # its marker is never read: a full diff, the marker stays queued
        assert detector.fallbacks == 1
        detector.before(tmp_path, "echo b > a.txt")
        monkeypatch.undo()
        (tmp_path / "a.txt").write_text("b")
        changes = detector.after(tmp_path, "echo b > a.txt", 0)
        assert changes.paths == {"a.txt"} and detector.fallbacks == 1
    finally:
        detector.close()


def test_a_transient_link_is_reported_by_the_directory_watch_variant(tmp_path):
    # Without inode watches (`unsound.events_by_directory`, which is meant to miss only writes
    # through links made outside the root), a hard link made and removed within a command
    # changes an existing file's ctime and link count under a name no event mentions: the
    # created-and-never-written name must send the detector to the full diff.
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 618: `mask & (CLOSE_WRITE | MOVED_FROM)` -> `mask + ...`): the
    created-and-never-written name is forgotten, so a link made and removed changed a file's
    ctime unreported. The sound detector's inode watch reports it anyway, which is why no test
    noticed. Listed in `scripts/mutation_survivors.json`."""
    (tmp_path / "a.txt").write_text("a")
    detector = EventDetector(watch_inodes=False)
    try:
        session = Session(detector, tmp_path)
        session.step("true")
        changes, truth = session.step("ln a.txt tmp && rm tmp")
        assert truth == {"a.txt"} and "a.txt" in changes.paths
    finally:
        detector.close()


def test_a_directory_moved_out_of_the_root_loses_its_watch(tmp_path):
    # Its watch would keep reporting the outside directory's events under the old key, and
    # watches are a per-user budget: the detector removes it.
    root, outside = _root_and_outside(tmp_path)
    (root / "d").mkdir()
    (root / "d" / "f").write_text("f")
    detector = EventDetector()
    try:
        session = Session(detector, root)
        session.step("true")
        wd = detector._dir_to_wd["d"]
        changes, truth = session.step(f"mv d {outside / 'd'}")
        assert changes.paths == truth == {"d", "d/f"}
        assert "d" not in detector._dir_to_wd and wd not in detector._wd_to_dir
    finally:
        detector.close()


def test_a_closed_detector_still_reports_changes_by_full_diff(tmp_path):
    # close() releases the inotify instance; a detector used after it must not trust (or
    # touch) events any more, but still report every change, by full snapshot diff.
    (tmp_path / "a.txt").write_text("a")
    detector = EventDetector()
    session = Session(detector, tmp_path)
    session.step("true")
    detector.close()
    changes, truth = session.step("echo b > a.txt && echo c > c.txt")
    assert changes.paths == truth == {"a.txt", "c.txt"} and detector.fallbacks == 1
    detector.close()


@pytest.mark.parametrize("made_first", ["a.txt", "b.txt"])
def test_a_name_replaced_by_an_already_watched_file_before_its_watch_is_compared_again(tmp_path, monkeypatch, made_first):
    # Between the scan's stat of the second file and its watch, the first (already watched)
    # file is renamed over it: the new watch lands on the other inode. Whichever inode number
    # is the larger (made_first), the detector must mark it unproven and report both names.
    made_second = "b.txt" if made_first == "a.txt" else "a.txt"
    (tmp_path / made_first).write_text("1")
    (tmp_path / made_second).write_text("2")
    time.sleep(0.05)  # older than the (zero) racy window: only the watch can prove the entries
    watched: list[str] = []

    def rename_the_first_over_the_second(path: str) -> None:
        if path.endswith(".txt"):
            watched.append(path)
            if len(watched) == 2:
                os.replace(watched[0], watched[1])

    monkeypatch.setattr(events, "INotify", _inotify_acting_before_each_watch(rename_the_first_over_the_second))
    detector = EventDetector(racy_window_ns=0)
    try:
        detector.before(tmp_path, "true")
        assert len(watched) >= 2
        changes = detector.after(tmp_path, "true", 0)
        assert {"a.txt", "b.txt"} <= changes.paths or changes.unknown
    finally:
        detector.close()


@pytest.mark.parametrize("view", ["aaa", "view"])
def test_a_bind_mount_seen_first_or_second_in_the_scan_degrades(tmp_path, view):
    # One directory under two keys: whichever key the scan reaches first, the second one
    # must make the detector stop trusting events (an event maps to one key only).
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_text("a")
    (tmp_path / view).mkdir()
    mounted = subprocess.run(["mount", "--bind", str(tmp_path / "real"), str(tmp_path / view)], capture_output=True, timeout=60)
    if mounted.returncode != 0:
        pytest.skip(f"mount --bind not permitted here: {mounted.stderr.decode().strip()}")
    detector = EventDetector()
    try:
        detector.before(tmp_path, "true")
        assert detector.degraded is not None and "reachable as" in str(detector.degraded)
    finally:
        detector.close()
        subprocess.run(["umount", str(tmp_path / view)], check=False, timeout=60)


def test_a_directory_replaced_by_another_moved_in_reports_the_old_contents_gone(tmp_path):
    # Renames raise events for the directories only, none for what they hold: the rescan of
    # the new one must report every key of the old one it no longer finds.
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 724: `for old_key in old_subtree` -> `in []` in
    `_rescan_directory`): `mv d out && mv other d`: `d/a.txt` gone unreported, as renames raise
    no event for a directory's contents; no test had a directory replaced by a rename. Listed in
    `scripts/mutation_survivors.json`."""
    root, outside = _root_and_outside(tmp_path)
    assert sh(root, f"mkdir d {outside}/other && echo a > d/a.txt && echo b > {outside}/other/b.txt") == 0
    detector = EventDetector()
    try:
        session = Session(detector, root)
        session.step("true")
        changes, truth = session.step(f"mv d {outside / 'gone'} && mv {outside / 'other'} d")
        assert {"d/a.txt", "d/b.txt"} <= truth and truth <= changes.paths
        assert "d/a.txt" not in detector._baseline.entries and detector.fallbacks == 0
    finally:
        detector.close()


def test_a_write_in_a_watched_directory_does_not_list_it_again(tmp_path, monkeypatch):
    # An existing, watched directory whose file changed is re-stat'ed, not rescanned: its
    # children are refreshed by their own events, so the cost stays with the change.
    (tmp_path / "d").mkdir()
    for name in ("a", "b", "c"):
        (tmp_path / "d" / name).write_text(name)
    detector = EventDetector()
    try:
        session = Session(detector, tmp_path)
        session.step("true")
        detector.before(tmp_path, "echo more >> d/a")
        with open(tmp_path / "d" / "a", "a") as handle:
            handle.write("more")
        listed = _record_calls(monkeypatch, "scandir", tmp_path)
        changes = detector.after(tmp_path, "echo more >> d/a", 0)
        monkeypatch.undo()
        assert "d/a" in changes.paths and detector.fallbacks == 0
        assert listed == []
    finally:
        detector.close()


def test_the_root_identity_holds_the_root_and_every_ancestor(tmp_path):
    # The chain ends at "/" (its own parent) and names every directory on the way.
    chain = events._root_identity(str(tmp_path))
    expected = [str(tmp_path), *map(str, tmp_path.parents)]
    assert chain == tuple((os.lstat(path).st_dev, os.lstat(path).st_ino) for path in expected)
    assert events._root_identity(str(tmp_path / "missing")) is None



def test_before_on_a_root_deleted_since_the_last_after_does_not_raise(tmp_path):
    # The root's identity cannot be taken (None): before() leaves it to after(), which starts
    # over with unknown scope, or (the new root got the old inode number) diffs in full.
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a")
    with contextlib.closing(EventDetector()) as detector:
        Session(detector, root).step("true")
        (root / "a.txt").unlink()
        root.rmdir()
        detector.before(root, "true")
        root.mkdir()
        changes = detector.after(root, "true", 0)
        assert changes.unknown or changes.paths == {"a.txt"}


def test_a_directory_s_metadata_change_does_not_list_it_again(tmp_path, monkeypatch):
    # Only a new name (created or moved in) is scanned; a chmod of an existing directory is
    # re-stat'ed, its children untouched.
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a").write_text("a")
    with contextlib.closing(EventDetector()) as detector:
        Session(detector, tmp_path).step("true")
        detector.before(tmp_path, "chmod 700 d")
        os.chmod(tmp_path / "d", 0o700)
        listed = _record_calls(monkeypatch, "scandir", tmp_path)
        changes = detector.after(tmp_path, "chmod 700 d", 0)
        monkeypatch.undo()
    assert changes.paths == {"d"} and listed == []


def test_a_new_detector_is_not_degraded():
    # Nothing is degraded before the first call: `degraded` is what the Runtime shows.
    assert EventDetector().degraded is None


def test_a_machine_without_a_block_device_list_has_no_loop_backed_files(monkeypatch):
    # A container may have no /sys/block: no loop device can be backed by a file in the root.
    real = os.listdir

    def no_sys_block(path="."):
        if os.fspath(path) == "/sys/block":
            raise PermissionError(13, "Permission denied", "/sys/block")
        return real(path)

    monkeypatch.setattr(os, "listdir", no_sys_block)
    assert events._loop_backing_files() == []


def test_before_reads_what_piled_up_between_commands(tmp_path):
    # The kernel queue is bounded: events made while no command runs are read at before(), so
    # that a long idle period between commands cannot overflow it.
    with contextlib.closing(EventDetector()) as detector:
        session = Session(detector, tmp_path)
        session.step("true")
        (tmp_path / "made-between-commands.txt").write_text("x")
        detector.before(tmp_path, "true")
        assert any(event.name == "made-between-commands.txt" for event in detector._events)
        changes = detector.after(tmp_path, "true", 0)
        assert "made-between-commands.txt" in changes.paths


def test_no_inotify_is_said_as_such(tmp_path, monkeypatch):
    monkeypatch.setattr(events, "INotify", None)
    with contextlib.closing(EventDetector()) as detector:
        changes, truth = Session(detector, tmp_path).step("echo x > a.txt")
        assert "a.txt" in changes.paths
        assert detector.degraded is not None and "inotify is not available" in str(detector.degraded)


def test_a_file_removed_between_its_watch_and_its_check_is_reported(tmp_path, monkeypatch):
    # The name is gone after the watch was added on its inode and before the stat that proves
    # the watch: the detector lets the watch go and the removal is reported, never raised.
    (tmp_path / "a.txt").write_text("a")
    time.sleep(0.05)
    removed: list[str] = []

    class RemovingAfterTheWatch(events.INotify):  # type: ignore[misc,valid-type]
        def add_watch(self, path, mask):  # type: ignore[no-untyped-def]
            wd = super().add_watch(path, mask)
            if str(path).endswith("a.txt") and not removed:
                removed.append(str(path))
                os.unlink(path)
            return wd

    changes = _after_a_raced_first_look(tmp_path, RemovingAfterTheWatch, monkeypatch)
    assert removed and ("a.txt" in changes.paths or changes.unknown)


@pytest.mark.parametrize("skipped", ["removal-notice-of-a-forgotten-watch", "event-of-a-released-watch"])
def test_an_event_the_detector_skips_does_not_end_the_batch(tmp_path, skipped):
    # The kernel's last word on a watch the detector no longer records, or any event of a watch
    # it released, is skipped; the events queued after it in the same batch are still applied.
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 589: `continue` -> `break` (a released watch's event)). Listed in
    `scripts/mutation_survivors.json`."""
    (tmp_path / "a.txt").write_text("a")
    with contextlib.closing(EventDetector()) as detector:
        Session(detector, tmp_path).step("true")
        (tmp_path / "a.txt").write_text("written\n")
        unknown_wd = max([*detector._wd_to_dir, *detector._wd_to_inode, detector._marker_wd]) + 100
        if skipped == "event-of-a-released-watch":
            detector._released.add(unknown_wd)
            first = Event(wd=unknown_wd, mask=events._CLOSE_WRITE, cookie=0, name="")
        else:
            first = Event(wd=unknown_wd, mask=events._IGNORED, cookie=0, name="")
        changed: set[str] = set()
        detector._apply([first, Event(wd=detector._dir_to_wd[""], mask=events._CLOSE_WRITE, cookie=0, name="a.txt")], changed)
        assert "a.txt" in changed


def test_a_directory_refreshed_by_events_is_listed_again_by_a_later_full_diff(tmp_path, monkeypatch):
    # Events refresh a directory's own entry but not its stored listing: the entry is marked
    # racy so that a full diff lists the directory again instead of trusting that listing.
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old.txt").write_text("old")
    time.sleep(0.05)
    with contextlib.closing(EventDetector(racy_window_ns=0)) as detector:
        session = Session(detector, tmp_path)
        session.step("true")
        changes, truth = session.step("echo new > d/new.txt")
        assert "d/new.txt" in changes.paths and detector.fallbacks == 0
        monkeypatch.setattr(events, "mount_table", lambda root: ("a mount appeared",))
        changes, truth = session.step("true")
        monkeypatch.undo()
        assert detector.fallbacks == 1
        assert changes.paths == truth == frozenset(), "the full diff must not take d/new.txt for gone"


def test_an_unreadable_mount_table_is_no_table(monkeypatch):
    def no_proc(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(events, "open", no_proc, raising=False)
    assert events.mount_table("/work/root") is None


@pytest.mark.parametrize("change", ["a mount went away", "a mount appeared"])
def test_any_change_of_the_mount_table_is_a_full_diff(tmp_path, monkeypatch, change):
    # Mounting or unmounting raises no inotify event. A table compared by order rather than
    # equality would let some changes through (a removed line can sort either way).
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 296: the mount table `!=` -> `<`). Listed in
    `scripts/mutation_survivors.json`."""
    first, then = (("m1", "m2"), ("m1",)) if change == "a mount went away" else (("m2",), ("m1", "m2"))
    tables = iter([first, then])
    monkeypatch.setattr(events, "mount_table", lambda root: next(tables))
    with contextlib.closing(EventDetector()) as detector:
        detector.before(tmp_path, "true")
        detector.after(tmp_path, "true", 0)
        assert detector.fallbacks == 1 and "mount table changed" in str(detector.degraded)


def test_close_removes_the_private_marker_directory(tmp_path):
    detector = EventDetector()
    Session(detector, tmp_path).step("true")
    private = detector._private_dir
    assert private is not None and os.path.isdir(private)
    detector.close()
    assert not os.path.exists(private)


def test_a_refused_watch_on_the_root_names_it_as_dot(tmp_path, monkeypatch):
    class RefusingTheRoot(events.INotify):  # type: ignore[misc,valid-type]
        def add_watch(self, path, mask):  # type: ignore[no-untyped-def]
            if os.fspath(path) == str(tmp_path):
                raise OSError(28, "No space left on device")
            return super().add_watch(path, mask)

    monkeypatch.setattr(events, "INotify", RefusingTheRoot)
    with contextlib.closing(EventDetector()) as detector:
        Session(detector, tmp_path).step("echo x > a.txt")
        assert detector.degraded is not None and str(detector.degraded).startswith("cannot watch . (")


def test_a_file_watch_refused_for_another_reason_than_the_limit_leaves_that_file_to_its_stat(tmp_path, monkeypatch):
    # Only the watch limit (ENOSPC) makes events untrustworthy for good; a file refused for
    # another reason (EACCES, ELOOP) is re-stat'ed at every after() instead.
    (tmp_path / "a.txt").write_text("a")

    class RefusingOneFile(events.INotify):  # type: ignore[misc,valid-type]
        def add_watch(self, path, mask):  # type: ignore[no-untyped-def]
            if os.fspath(path).endswith("a.txt"):
                raise OSError(40, "Too many levels of symbolic links")
            return super().add_watch(path, mask)

    monkeypatch.setattr(events, "INotify", RefusingOneFile)
    with contextlib.closing(EventDetector()) as detector:
        Session(detector, tmp_path).step("true")
        assert detector.degraded is None and "a.txt" in detector._unwatchable


@pytest.mark.parametrize("write", ["grows", "shrinks"])
def test_a_write_to_a_settled_file_between_its_scan_and_its_watch_is_reported(tmp_path, monkeypatch, write):
    # As test_event_detector's race, on a file older than the racy window: only the stat taken
    # once the watch exists, compared with the scan's, can show the write in the gap. It is
    # compared for equality: a file that shrank (its size sorts lower) is as changed as one
    # that grew.
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 467: `sig != fresh` -> `<`). Pins a mutant of
    `ledger_impl/detectors/events.py` that let a change go unreported and that no test had caught
    (line 467: `sig[:NLINK + 1] != fresh` -> `==`): a write through an outside link between a
    settled file's scan and its watch; `test_event_detector`'s race used a fresh, racy file,
    which is re-compared anyway. Also by the settled-files test. Listed in
    `scripts/mutation_survivors.json`."""
    root, outside = _root_and_outside(tmp_path)
    (root / "a.txt").write_text("a longer first text\n")
    os.link(root / "a.txt", outside / "hl")
    time.sleep(0.05)
    raced: list[bool] = []

    def write_through_the_outside_link_once(path: str) -> None:
        if path.endswith("a.txt") and not raced:
            raced.append(True)
            (outside / "hl").write_text("a longer first text\nand more\n" if write == "grows" else "a\n")

    changes = _after_a_raced_first_look(root, _inotify_acting_before_each_watch(write_through_the_outside_link_once), monkeypatch)
    assert raced and ("a.txt" in changes.paths or changes.unknown)


def test_a_fifo_linked_from_outside_is_tracked_like_a_file(tmp_path):
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 518: `!= S_IFDIR` -> `>`). Listed in
    `scripts/mutation_survivors.json`."""
    root, outside = _root_and_outside(tmp_path)
    os.mkfifo(root / "pipe")
    os.link(root / "pipe", outside / "pipe-link")
    with contextlib.closing(EventDetector()) as detector:
        session = Session(detector, root)
        session.step("true")
        os.chmod(outside / "pipe-link", 0o600)  # through the outside name: its ctime changes
        changes, truth = session.step("true")
        assert "pipe" in truth and "pipe" in changes.paths


def test_unwatching_a_directory_the_kernel_already_dropped_is_quiet(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    with contextlib.closing(EventDetector()) as detector:
        Session(detector, tmp_path).step("true")

        def already_removed(wd):
            raise OSError(22, "Invalid argument")

        monkeypatch.setattr(detector._inotify, "rm_watch", already_removed)
        wd = detector._dir_to_wd["d"]
        detector._unwatch("d")
        assert "d" not in detector._dir_to_wd and detector._retired[wd] == "d"


def _mount_table_changed(detector: EventDetector, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "mount_table", lambda root: ("a mount appeared",))


def _queue_overflowed(detector: EventDetector, monkeypatch: pytest.MonkeyPatch) -> None:
    real_drain = detector._drain

    def overflowed():
        real_drain()  # read and lost, as the kernel drops events when its queue is full
        return [Event(wd=-1, mask=events._Q_OVERFLOW, cookie=0, name="")]

    monkeypatch.setattr(detector, "_drain", overflowed)


@pytest.mark.parametrize(
    "full_diff",
    [_mount_table_changed, _queue_overflowed],
    # The detector is left degraded after the first, not after the second.
    ids=["mount-table-changed", "queue-overflowed"],
)
def test_a_directory_made_in_a_round_that_ended_in_a_full_diff_is_watched_after_it(tmp_path, monkeypatch, full_diff):
    # The full diff re-arms the watches: a directory it finds first (its events lost with the
    # round, or never looked at) is watched from then on, so a file created in it by the next
    # command is an event, not a miss.
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 768: `_full_diff`'s `not self._degraded` -> `self._degraded`).
    Listed in `scripts/mutation_survivors.json`."""
    with contextlib.closing(EventDetector()) as detector:
        session = Session(detector, tmp_path)
        session.step("true")
        full_diff(detector, monkeypatch)
        session.step("mkdir n")
        monkeypatch.undo()
        assert detector.fallbacks == 1
        changes, truth = session.step("echo x > n/new.txt")
        assert "n/new.txt" in truth and "n/new.txt" in changes.paths and detector.fallbacks == 1


def test_loop_devices_after_other_block_devices_are_all_found(monkeypatch):
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 189: `continue` -> `break` over `/sys/block`). Listed in
    `scripts/mutation_survivors.json`."""
    real_listdir, real_open = os.listdir, open

    def listing(path="."):
        return ["sda", "loop0", "nvme0n1", "loop1"] if os.fspath(path) == "/sys/block" else real_listdir(path)

    def backing(path, *args, **kwargs):
        name = os.fspath(path)
        if name.startswith("/sys/block/loop") and name.endswith("/loop/backing_file"):
            return io.BytesIO(b"/images/" + name.split("/")[3].encode() + b".img\n")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "listdir", listing)
    monkeypatch.setattr(events, "open", backing, raising=False)
    assert events._loop_backing_files() == ["/images/loop0.img", "/images/loop1.img"]


def test_a_hard_link_removed_inside_the_root_reports_the_other_name_without_inode_watches(tmp_path):
    # With directory watches only (the variant), the other name's changed link count and
    # ctime are known only from the removed entry's link count.
    (tmp_path / "a.txt").write_text("a")
    os.link(tmp_path / "a.txt", tmp_path / "b.txt")
    with contextlib.closing(EventDetector(watch_inodes=False)) as detector:
        session = Session(detector, tmp_path)
        session.step("true")
        changes, truth = session.step("rm b.txt")
        assert "a.txt" in truth and "a.txt" in changes.paths


def test_a_stale_marker_whose_name_sorts_after_the_current_one_is_not_taken_for_it(tmp_path):
    # Markers are numbered; an earlier after()'s marker "9" that arrives late must not end the
    # wait for marker "10", though "9" sorts after "10" as text.
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 558: `event.name == marker_name` -> `>=`). Listed in
    `scripts/mutation_survivors.json`."""
    with contextlib.closing(EventDetector()) as detector:
        Session(detector, tmp_path).step("true")
        detector._markers = 9
        detector.before(tmp_path, "echo x > a.txt")
        stale = os.path.join(detector._private_dir, "9")
        os.close(os.open(stale, os.O_CREAT | os.O_WRONLY, 0o600))
        os.unlink(stale)
        sh(tmp_path, "echo x > a.txt")
        changes = detector.after(tmp_path, "echo x > a.txt", 0)
        assert "a.txt" in changes.paths and detector.fallbacks == 0


def test_the_last_notice_of_a_watch_removed_by_the_detector_is_read_quietly(tmp_path):
    # A directory moved out of the root loses its watch; the kernel's removal notice comes
    # with the next command's events and must neither raise nor cost a full diff.
    root, outside = _root_and_outside(tmp_path)
    (root / "d").mkdir()
    with contextlib.closing(EventDetector()) as detector:
        session = Session(detector, root)
        session.step("true")
        wd = detector._dir_to_wd["d"]
        session.step(f"mv d {outside / 'd'}")
        changes, truth = session.step("echo x > a.txt")
        assert changes.paths == truth == {"a.txt"} and detector.fallbacks == 0
        assert wd not in detector._wd_to_dir and detector._retired.get(wd) == "d"


def test_a_root_replaced_with_its_parent_by_older_directories_is_unknown_scope(tmp_path):
    # The parent is swapped for one made earlier, holding a root made earlier: the root's own
    # watch sees nothing (it moved along with its parent), and every inode number in the new
    # chain is smaller. The identity is compared for equality, not order.
    """Pins a mutant of `ledger_impl/detectors/events.py` that let a change go unreported and that
    no test had caught (line 286: the root identity `!=` -> `<` in `after()`). Listed in
    `scripts/mutation_survivors.json`."""
    (tmp_path / "older-parent" / "root").mkdir(parents=True)
    (tmp_path / "parent" / "root").mkdir(parents=True)
    old_chain = [os.lstat(tmp_path / "parent" / "root").st_ino, os.lstat(tmp_path / "parent").st_ino]
    new_chain = [os.lstat(tmp_path / "older-parent" / "root").st_ino, os.lstat(tmp_path / "older-parent").st_ino]
    if not all(new < old for new, old in zip(new_chain, old_chain)):
        pytest.skip("this filesystem did not number the earlier directories lower")
    root = tmp_path / "parent" / "root"
    with contextlib.closing(EventDetector()) as detector:
        Session(detector, root).step("true")
        detector.before(root, "true")
        (tmp_path / "parent").rename(tmp_path / "moved-away")
        (tmp_path / "older-parent").rename(tmp_path / "parent")
        changes = detector.after(root, "true", 0)
        assert changes.unknown


def test_files_that_keep_being_replaced_under_the_watches_end_in_a_full_diff(tmp_path, monkeypatch):
    # Each round of proof finds the name replaced again; after the rounds are spent the
    # detector gives up on events for this after() rather than leave an inode unproven.
    (tmp_path / "a.txt").write_text("a")
    time.sleep(0.05)
    replacements = [0]

    def replace_a_txt_each_time(path: str) -> None:
        if path.endswith("a.txt"):
            replacements[0] += 1
            fresh = tmp_path / f".fresh{replacements[0]}"
            fresh.write_text(f"a{replacements[0]}")
            os.replace(fresh, tmp_path / "a.txt")

    monkeypatch.setattr(events, "INotify", _inotify_acting_before_each_watch(replace_a_txt_each_time))
    with contextlib.closing(EventDetector(racy_window_ns=0)) as detector:
        detector.before(tmp_path, "true")
        changes = detector.after(tmp_path, "true", 0)
        assert replacements[0] >= 3 and "a.txt" in changes.paths
        assert detector.fallbacks == 1 and "kept being replaced" in str(detector.degraded or "")
