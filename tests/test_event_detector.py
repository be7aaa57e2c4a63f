"""EventDetector (inotify with snapshot fallback), on real trees with real commands."""

from __future__ import annotations

import errno
import os
import pathlib
import shutil
import subprocess
import time

import pytest

from detector_scenarios import READ_ONLY_COMMANDS, SCENARIOS, Session, deny_listing, sh
from ledger_impl.detectors import EventDetector, default_detector, events
from ledger_spec import Changes

pytestmark = pytest.mark.skipif(events.INotify is None, reason="inotify is Linux-only")


@pytest.fixture
def detector():
    made = EventDetector()
    yield made
    made.close()


@pytest.mark.parametrize("name,setup,command,expected", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_reports_every_change_of_a_real_command(tmp_path, detector, name, setup, command, expected):
    assert sh(tmp_path, setup) == 0
    session = Session(detector, tmp_path)
    changes, truth = session.step(command)
    assert expected <= truth, "the scenario must really change these keys"
    assert not changes.unknown
    assert detector.fallbacks == 0, "events alone must have accounted for the command"


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_read_only_command_reports_nothing(tmp_path, detector, command):
    sh(tmp_path, "echo abc > a.txt && mkdir sub && echo b > sub/b.txt")
    session = Session(detector, tmp_path)
    changes, truth = session.step(command)
    assert truth == frozenset()
    assert changes.empty, changes


def test_scenarios_in_one_long_session(tmp_path, detector):
    # Watches, the inode index and the baseline must stay right across many commands.
    session = Session(detector, tmp_path)
    for _, setup, command, _ in SCENARIOS:
        session.step(f"rm -rf ./* ./.[!.]* 2>/dev/null; {setup}")
        session.step(command)
    assert detector.fallbacks == 0


def test_edit_inside_a_moved_directory(tmp_path, detector):
    sh(tmp_path, "mkdir -p d/e && echo f > d/e/f.txt")
    session = Session(detector, tmp_path)
    session.step("mv d moved")
    changes, truth = session.step("echo g >> moved/e/f.txt")
    assert "moved/e/f.txt" in changes.paths
    changes, truth = session.step("mkdir moved/e/new && echo h > moved/e/new/h")
    assert "moved/e/new/h" in changes.paths


def test_hard_link_written_from_outside_the_root(tmp_path, detector):
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    os.link(root / "a.txt", tmp_path / "outside.txt")
    session = Session(detector, root)
    changes, truth = session.step(f"echo more >> {tmp_path / 'outside.txt'}")
    assert "a.txt" in truth and "a.txt" in changes.paths


def test_change_between_commands_is_reported_at_the_next_after(tmp_path, detector):
    sh(tmp_path, "echo a > f")
    session = Session(detector, tmp_path)
    session.step("(sleep 0.3; echo x > f) > /dev/null 2>&1 &")
    time.sleep(0.8)
    changes, truth = session.step("true")
    assert "f" in truth and "f" in changes.paths


def test_queue_overflow_falls_back_to_the_snapshot(tmp_path, detector, monkeypatch):
    sh(tmp_path, "echo a > a.txt && mkdir d")
    session = Session(detector, tmp_path)
    detector.before(tmp_path, "start watching")
    real_read = detector._inotify.read

    def read_then_overflow(timeout=None, read_delay=None):
        batch = real_read(timeout=timeout, read_delay=read_delay)
        # Pretend the kernel dropped everything the command did.
        from inotify_simple import Event

        return [Event(-1, int(events._Q_OVERFLOW), 0, "")] + [e for e in batch if e.wd == detector._marker_wd]

    monkeypatch.setattr(detector._inotify, "read", read_then_overflow)
    changes, truth = session.step("echo b >> a.txt && mkdir d/new && echo c > d/new/c")
    assert {"a.txt", "d/new", "d/new/c"} <= changes.paths
    assert detector.fallbacks == 1
    monkeypatch.undo()
    # After the fallback the watches are re-armed, including on the directory created unseen.
    changes, truth = session.step("echo d >> d/new/c")
    assert "d/new/c" in changes.paths and detector.fallbacks == 1


def test_failed_watch_degrades_to_full_diffs(tmp_path, detector, monkeypatch):
    session = Session(detector, tmp_path)
    session.step("true")

    def no_more_watches(path, mask):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(detector._inotify, "add_watch", no_more_watches)
    changes, truth = session.step("mkdir -p x/y && echo a > x/y/f")
    assert {"x", "x/y", "x/y/f"} <= changes.paths
    changes, truth = session.step("echo b >> x/y/f")  # no watch on x/y: only the diff sees it
    assert "x/y/f" in changes.paths
    assert detector.fallbacks >= 2


def test_unmappable_event_falls_back(tmp_path, detector, monkeypatch):
    sh(tmp_path, "echo a > a.txt")
    session = Session(detector, tmp_path)
    detector.before(tmp_path, "start watching")
    real_read = detector._inotify.read

    def read_with_stranger(timeout=None, read_delay=None):
        from inotify_simple import Event

        return [Event(987654, 2, 0, "ghost")] + real_read(timeout=timeout, read_delay=read_delay)

    monkeypatch.setattr(detector._inotify, "read", read_with_stranger)
    changes, _ = session.step("echo b >> a.txt")
    assert "a.txt" in changes.paths and detector.fallbacks == 1


def test_unreadable_new_directory_reports_unknown(tmp_path, detector, monkeypatch):
    session = Session(detector, tmp_path)
    deny_listing(monkeypatch, tmp_path / "locked")
    changes, _ = session.step("mkdir locked && echo x > locked/f")
    assert changes.unknown


def test_open_for_write_without_writing_is_not_a_change(tmp_path, detector):
    sh(tmp_path, "echo a > a.txt && touch -d @1000000000 a.txt")
    session = Session(detector, tmp_path)
    changes, truth = session.step(": >> a.txt")
    assert truth == frozenset() and changes.empty


def test_default_detector_uses_events(tmp_path):
    made = default_detector()
    try:
        assert isinstance(made, EventDetector)
        session = Session(made, tmp_path)
        session.step("echo a > a.txt")
        assert made.fallbacks == 0
    finally:
        made.close()


def test_a_transient_hard_link_that_only_changes_ctime_is_reported(tmp_path, detector):
    # Found by the safety hunt (counterexamples/default-detector-detector-covers-changes-*):
    # `ln -f` over a name of the same inode links a temporary name, renames it (a no-op for
    # two names of one inode) and unlinks it. inotify names only the temporary file, yet the
    # shared inode's ctime changed, which `stat` and `ls -lc` print.
    sh(tmp_path, "mkdir docs && echo hello > docs/notes.md && ln docs/notes.md a.txt")
    session = Session(detector, tmp_path)
    before = os.stat(tmp_path / "a.txt").st_ctime_ns
    changes, _ = session.step("ln -f docs/notes.md a.txt")
    assert os.stat(tmp_path / "a.txt").st_ctime_ns != before, "the scenario must really change ctime"
    assert changes.unknown or {"a.txt", "docs/notes.md"} <= changes.paths


def test_a_temporary_file_written_and_removed_is_handled_by_events_alone(tmp_path, detector):
    session = Session(detector, tmp_path)
    changes, _ = session.step("echo scratch > tmp.txt && rm tmp.txt")
    assert changes.empty and detector.fallbacks == 0


def test_a_hard_link_to_a_symlink_reports_the_symlink_s_other_name(tmp_path, detector):
    # Found by the thorough safety hunt (seed 20261130): GNU `ln` hard-links a symlink itself,
    # so the symlink inode's link count and ctime change under its first name too.
    sh(tmp_path, "mkdir docs && ln -s 'docs/naïve notes.txt' a.txt")
    session = Session(detector, tmp_path)
    changes, _ = session.step("ln -f a.txt 'docs/naïve notes.txt'")
    assert os.lstat(tmp_path / "a.txt").st_nlink == 2, "the scenario must really link the symlink"
    assert changes.unknown or {"a.txt", "docs/naïve notes.txt"} <= changes.paths


@pytest.mark.parametrize("command", ["touch -d '2001-01-01' .", "chmod 700 ."])
def test_a_change_to_the_root_s_own_metadata_is_reported_through_its_top_level_names(tmp_path, detector, command):
    sh(tmp_path, "echo a > a.txt")
    session = Session(detector, tmp_path)
    changes, _ = session.step(command)
    # No key names the root, yet `ls -ld .` prints its mode and mtime: a top-level name must
    # advance G for tree reads of the root, and a known name is better than "unknown".
    assert changes == Changes(frozenset({"a.txt"})), changes


# --- root identity, mounts, loop devices and degraded modes (issue 8) -------------------------


def test_an_ancestor_swapped_is_unknown_scope_and_said_so(tmp_path: pathlib.Path) -> None:
    """Renaming the root's parent raises no event on any watch (the parent is not watched):
    only comparing the ancestors' identities shows the root is another directory now."""
    root = tmp_path / "parent" / "root"
    root.mkdir(parents=True)
    (root / "a.txt").write_text("one\n")
    detector = EventDetector()
    try:
        detector.before(root, "true")
        assert detector.after(root, "true", 0) == Changes()
        detector.before(root, "swap")
        (tmp_path / "parent").rename(tmp_path / "old-parent")
        root.mkdir(parents=True)
        (root / "a.txt").write_text("two\n")
        assert detector.after(root, "swap", 0).unknown
        assert detector.degraded is not None and "root" in str(detector.degraded)
        # Watches were rebuilt on the new directory: an edit is seen by events again.
        detector.before(root, "edit")
        (root / "a.txt").write_text("three\n")
        assert detector.after(root, "edit", 0) == Changes({"a.txt"})
        assert detector.degraded is None
    finally:
        detector.close()


def test_the_root_deleted_and_recreated_is_seen_and_said_so(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    detector = EventDetector()
    try:
        detector.before(root, "true")
        detector.after(root, "true", 0)
        detector.before(root, "recreate")
        shutil.rmtree(root)
        root.mkdir()  # may get the old inode number back: the identity alone cannot tell
        (root / "a.txt").write_text("two\n")
        report = detector.after(root, "recreate", 0)
        assert report.unknown or "a.txt" in report.paths
        assert detector.degraded is not None and "root" in str(detector.degraded)
        detector.before(root, "edit")
        (root / "a.txt").write_text("three\n")
        assert detector.after(root, "edit", 0) == Changes({"a.txt"})
    finally:
        detector.close()


def test_a_watch_limit_is_reported_as_degraded(tmp_path: pathlib.Path, monkeypatch) -> None:
    (tmp_path / "sub").mkdir()

    class LimitedINotify(events.INotify):  # type: ignore[misc,valid-type]
        def add_watch(self, path, mask):  # type: ignore[no-untyped-def]
            if str(path).endswith("/sub"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return super().add_watch(path, mask)

    monkeypatch.setattr(events, "INotify", LimitedINotify)
    detector = EventDetector()
    try:
        detector.before(tmp_path, "true")
        (tmp_path / "sub" / "new.txt").write_text("x\n")
        assert "sub/new.txt" in detector.after(tmp_path, "true", 0).paths  # the full diff sees it
        assert detector.degraded is not None and "max_user_watches" in str(detector.degraded)
    finally:
        detector.close()


needs_mount = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting needs root and mount(8)"
)


@needs_mount
def test_a_bind_mount_inside_the_root_raises_no_event_but_is_seen(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("inside\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("from elsewhere\n")
    detector = EventDetector()
    mounted = False
    try:
        detector.before(root, "true")
        detector.after(root, "true", 0)
        detector.before(root, "mount")
        done = subprocess.run(["mount", "--bind", str(other), str(root / "sub")], capture_output=True, timeout=60)
        if done.returncode != 0:
            pytest.skip(f"bind mount not permitted here: {done.stderr.decode().strip()}")
        mounted = True
        report = detector.after(root, "mount", 0)
        assert "sub/a.txt" in report.paths or report.unknown
        assert detector.degraded is not None and "mount table" in str(detector.degraded)
    finally:
        if mounted:
            subprocess.run(["umount", str(root / "sub")], capture_output=True, timeout=60)
        detector.close()


@needs_mount
def test_a_write_through_a_loop_device_raises_no_event_but_is_seen(tmp_path: pathlib.Path) -> None:
    if shutil.which("losetup") is None:
        pytest.skip("losetup(8) is not installed")
    root = tmp_path / "root"
    root.mkdir()
    image = root / "disk.img"
    image.write_bytes(b"\0" * (1 << 20))
    attached = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True, timeout=60)
    if attached.returncode != 0:
        pytest.skip(f"no loop device here: {attached.stderr.strip()}")
    device = attached.stdout.strip()
    detector = EventDetector()
    try:
        detector.before(root, "true")
        detector.after(root, "true", 0)
        detector.before(root, "write through the device")
        with open(device, "r+b") as handle:
            handle.write(b"x" * 4096)
            handle.flush()
            os.fsync(handle.fileno())
        assert "disk.img" in detector.after(root, "write through the device", 0).paths
    finally:
        detector.close()
        subprocess.run(["losetup", "-d", device], capture_output=True, timeout=60)


def test_a_chattr_flag_change_raises_no_attrib_event_but_is_seen(tmp_path: pathlib.Path, detector) -> None:
    # FS_IOC_SETFLAGS moves the file's ctime (`stat` and `ls -lc` print it) but raises only
    # IN_OPEN and IN_CLOSE_NOWRITE, never IN_ATTRIB (counterexamples/probe-chattr-attribute-change).
    scratch = tmp_path / "scratch"
    scratch.write_text("x\n")
    tried = subprocess.run(["chattr", "+d", str(scratch)], capture_output=True) if shutil.which("chattr") else None
    if tried is None or tried.returncode != 0:
        pytest.skip("chattr is not supported on this filesystem")
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    detector.before(root, "true")
    detector.after(root, "true", 0)  # the baseline, its watches and their proof
    before = os.stat(root / "a.txt").st_ctime_ns
    detector.before(root, "chattr +d a.txt")
    assert sh(root, "chattr +d a.txt") == 0
    changes = detector.after(root, "chattr +d a.txt", 0)
    assert os.stat(root / "a.txt").st_ctime_ns != before, "the scenario must really change ctime"
    assert changes == Changes(frozenset({"a.txt"})), changes
    assert detector.fallbacks == 0, "the file's own inode watch must account for it, not a full diff"


def test_reading_files_opened_without_writing_reports_nothing(tmp_path, detector):
    # Inode watches see every close without a write, so a read makes the file be stat'ed
    # again: the comparison must find nothing, also for a file whose baseline entry is racy
    # with no digest (written by the previous command, re-stat'ed by events without hashing).
    sh(tmp_path, "echo a > a.txt && mkdir sub && echo b > sub/b.txt")
    session = Session(detector, tmp_path)
    session.step("true")  # the baseline, its watches, and the proof of its racy entries
    session.step("echo new > fresh.txt && echo more >> a.txt")
    for command in ["cat a.txt", "cat fresh.txt sub/b.txt", "lsattr a.txt fresh.txt || true", "grep -rn zzz . || true"]:
        changes, truth = session.step(command)
        assert truth == frozenset()
        assert changes.empty, (command, changes)
    assert detector.fallbacks == 0


def test_a_directory_watch_that_took_a_file_s_mask_reports_no_read_below_it(tmp_path, detector):
    # A file's inode watch is added with MASK_ADD after its stat: if the name has become a
    # watched directory meanwhile, that directory's watch takes IN_CLOSE_NOWRITE as well, and
    # then reports every read below it. The file's own watch already covers the file.
    sh(tmp_path, "mkdir sub && echo b > sub/b.txt")
    session = Session(detector, tmp_path)
    session.step("true")
    session.step("echo more >> sub/b.txt")  # its entry is now racy with no digest
    detector._inotify.add_watch(str(tmp_path / "sub"), events.FILE_WATCH_MASK)  # as that race would
    for command in ("cat sub/b.txt", "ls sub"):
        changes, _ = session.step(command)
        assert changes.empty, (command, changes)
    assert detector.fallbacks == 0


def test_a_change_to_an_empty_root_s_metadata_is_reported_as_unknown(tmp_path, detector):
    session = Session(detector, tmp_path)
    changes, _ = session.step("chmod 700 .")
    assert changes.unknown


def test_after_without_before_is_unknown(tmp_path, detector):
    sh(tmp_path, "echo a > a.txt")
    assert detector.after(tmp_path, "echo b > a.txt", 0).unknown
    detector.before(tmp_path, "true")
    assert detector.after(tmp_path / "elsewhere", "true", 0).unknown, "a baseline of another root proves nothing"


def test_an_lstat_error_other_than_not_found_falls_back_to_the_full_diff(tmp_path, detector, monkeypatch):
    # EACCES or EIO on a path an event names proves nothing either way: not "gone", not
    # "unchanged". The full diff must decide, and the baseline must stay right afterwards.
    sh(tmp_path, "echo a > a.txt")
    detector.before(tmp_path, "start watching")
    detector.after(tmp_path, "start watching", 0)
    real_lstat = os.lstat
    denied = str(tmp_path / "a.txt")

    def lstat_denied_once(path, *args, **kwargs):
        if os.fspath(path) == denied:
            monkeypatch.setattr(events.os, "lstat", real_lstat)
            raise PermissionError(13, "Permission denied", path)
        return real_lstat(path, *args, **kwargs)

    detector.before(tmp_path, "echo b >> a.txt")
    sh(tmp_path, "echo b >> a.txt")
    monkeypatch.setattr(events.os, "lstat", lstat_denied_once)
    changes = detector.after(tmp_path, "echo b >> a.txt", 0)
    monkeypatch.setattr(events.os, "lstat", real_lstat)
    assert "a.txt" in changes.paths and detector.fallbacks == 1
    session = Session(detector, tmp_path)
    changes, truth = session.step("echo c >> a.txt")
    assert truth == {"a.txt"} and changes.paths == {"a.txt"} and detector.fallbacks == 1


def test_an_inotify_setup_failure_degrades_to_full_diffs(tmp_path, monkeypatch):
    # inotify_init fails when fs.inotify.max_user_instances is reached (EMFILE): every after()
    # is then a full diff, and still complete.
    def no_instance():
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(events, "INotify", no_instance)
    made = EventDetector()
    try:
        session = Session(made, tmp_path)
        changes, _ = session.step("mkdir d && echo a > d/f")
        assert {"d", "d/f"} <= changes.paths and not changes.unknown
        changes, _ = session.step("echo b >> d/f")
        assert changes.paths == {"d/f"} and made.fallbacks == 2
    finally:
        made.close()


def test_a_watch_limit_reached_at_the_first_scan_degrades_to_full_diffs(tmp_path, detector, monkeypatch):
    # A tiny fs.inotify.max_user_watches: the first watches succeed, a later one gets ENOSPC.
    sh(tmp_path, "mkdir -p a/b c && echo x > a/b/f && echo y > c/g")
    instance = events.INotify()
    real_add = instance.add_watch
    added = []

    def limited_add_watch(path, mask):
        if len(added) >= 2:
            raise OSError(28, "No space left on device")
        added.append(path)
        return real_add(path, mask)

    instance.add_watch = limited_add_watch
    monkeypatch.setattr(events, "INotify", lambda: instance)
    session = Session(detector, tmp_path)
    for command in ("echo z >> a/b/f", "echo w >> c/g", "rm -r a"):
        changes, truth = session.step(command)
        assert truth <= changes.paths and not changes.unknown
    assert detector.fallbacks == 3


def test_a_bind_mounted_directory_degrades_to_full_diffs(tmp_path, detector):
    # One directory under two keys: an inotify watch maps to one of them only, so the events
    # of a write through the other name could be attributed to the wrong key.
    sh(tmp_path, "mkdir real view && echo a > real/f")
    mounted = subprocess.run(["mount", "--bind", str(tmp_path / "real"), str(tmp_path / "view")], capture_output=True, timeout=60)
    if mounted.returncode != 0:
        pytest.skip(f"mount --bind not permitted here: {mounted.stderr.decode().strip()}")
    try:
        session = Session(detector, tmp_path)
        changes, truth = session.step("echo b >> view/f")
        assert {"real/f", "view/f"} <= truth, "the scenario must change the file under both keys"
        assert {"real/f", "view/f"} <= changes.paths and not changes.unknown
        assert detector.fallbacks == 1
    finally:
        subprocess.run(["umount", str(tmp_path / "view")], check=False, timeout=60)


# --- hard links made from outside the root (issue 8) ------------------------------------------
# A write through a name outside the root notifies that name's directory (unwatched) and the
# inode's own watchers; a link made there only changes the inode's link count. Only a watch on
# the inode itself sees either.


def _watch_count(detector: EventDetector) -> int:
    """The watches the detector's inotify instance holds, as the kernel lists them."""
    with open(f"/proc/self/fdinfo/{detector._inotify.fileno()}") as handle:
        return sum(1 for line in handle if line.startswith("inotify wd:"))


def test_a_link_made_from_outside_after_the_start_and_written_through_is_reported(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.txt").write_text("a\n")
    detector = EventDetector()
    try:
        session = Session(detector, root)
        session.step("true")  # the baseline and watches exist before the link does
        changes, truth = session.step(f"ln a.txt {outside}/hl && echo more >> {outside}/hl")
        assert truth == {"a.txt"}, "the scenario must change a.txt only"
        assert changes == Changes(frozenset({"a.txt"})) and detector.fallbacks == 0
        assert detector.degraded is None
    finally:
        detector.close()


def test_a_write_through_an_outside_link_between_commands_is_reported_next(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    (root / "src" / "app.py").write_text("x = 1\n")
    detector = EventDetector()
    try:
        session = Session(detector, root)
        session.step("true")
        os.link(root / "src" / "app.py", outside / "hl")  # not by a command: by anyone, any time
        changes, _ = session.step("true")
        assert changes == Changes(frozenset({"src/app.py"})), "the new link changed the inode's link count"
        with open(outside / "hl", "a") as handle:
            handle.write("x = 2\n")
        changes, truth = session.step("true")
        assert truth == {"src/app.py"} and changes == Changes(frozenset({"src/app.py"}))
    finally:
        detector.close()


def test_a_file_that_leaves_the_root_releases_its_watch(tmp_path):
    # Once no name in the root reaches an inode, writes through its outside names are none of
    # the detector's business: they must neither be reported nor cost a full diff, and the
    # watch (one of a per-user budget) is given back.
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    os.link(root / "a.txt", outside / "hl")
    detector = EventDetector()
    try:
        session = Session(detector, root)
        session.step("true")
        watches = _watch_count(detector)
        changes, _ = session.step("rm a.txt")
        assert changes == Changes(frozenset({"a.txt"}))
        assert _watch_count(detector) == watches - 1
        with open(outside / "hl", "a") as handle:
            handle.write("more\n")
        changes, truth = session.step("true")
        assert truth == frozenset() and changes.empty and detector.fallbacks == 0
    finally:
        detector.close()


def test_a_file_watch_refused_by_the_watch_limit_degrades_visibly(tmp_path, monkeypatch):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.txt").write_text("a\n")

    class LimitedINotify(events.INotify):  # type: ignore[misc,valid-type]
        def add_watch(self, path, mask):  # type: ignore[no-untyped-def]
            if str(path).endswith("a.txt"):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return super().add_watch(path, mask)

    monkeypatch.setattr(events, "INotify", LimitedINotify)
    detector = EventDetector()
    try:
        session = Session(detector, root)
        session.step("true")
        assert detector.degraded is not None and "max_user_watches" in str(detector.degraded)
        assert detector._inotify is None, "the watches it holds go back to the user's budget"
        changes, _ = session.step(f"ln a.txt {outside}/hl && echo more >> {outside}/hl")
        assert "a.txt" in changes.paths  # the full diff sees what no watch does
        assert detector.fallbacks == 2
    finally:
        detector.close()


def test_a_write_between_a_file_s_scan_and_its_watch_is_reported(tmp_path, monkeypatch):
    # The scan stats a file before its watch exists; a write through an outside name in that
    # gap leaves no event. The detector stats the file again once watched and compares.
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.txt").write_text("a\n")
    os.link(root / "a.txt", outside / "hl")

    class RacingINotify(events.INotify):  # type: ignore[misc,valid-type]
        raced = False

        def add_watch(self, path, mask):  # type: ignore[no-untyped-def]
            if str(path).endswith("a.txt") and not RacingINotify.raced:
                RacingINotify.raced = True
                with open(outside / "hl", "a") as handle:
                    handle.write("written in the gap\n")
            return super().add_watch(path, mask)

    monkeypatch.setattr(events, "INotify", RacingINotify)
    detector = EventDetector()
    try:
        detector.before(root, "true")  # the baseline scan: a.txt is stat'ed, then watched
        assert RacingINotify.raced
        changes = detector.after(root, "true", 0)
        assert "a.txt" in changes.paths or changes.unknown
    finally:
        detector.close()


def test_the_root_replaced_between_two_commands_is_unknown_scope(tmp_path: pathlib.Path) -> None:
    """Replaced after one after() and before the next before(): the restart happens in
    before(), and the after() that follows must still say that nothing is proven."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    detector = EventDetector()
    try:
        detector.before(root, "true")
        assert detector.after(root, "true", 0) == Changes()
        keep = tmp_path / "kept"
        keep.mkdir()  # holds the old root's inode number, so the new root cannot reuse it
        root.rename(keep / "old-root")
        root.mkdir()
        (root / "a.txt").write_text("two\n")
        detector.before(root, "true")
        report = detector.after(root, "true", 0)
        assert report.unknown, report
        assert detector.degraded is not None and "root" in str(detector.degraded)
    finally:
        detector.close()


def test_inode_numbers_freed_and_reused_keep_their_watches_right(tmp_path):
    # A file deleted frees its inode number (the kernel drops its watch); the next file often
    # gets the same number. Each new file must get a watch of its own, or a later write to it
    # through an outside link goes unseen.
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    detector = EventDetector()
    try:
        session = Session(detector, root)
        numbers = set()
        for i in range(12):
            session.step(f"rm -f f{i - 1} && echo {i} > f{i}")
            numbers.add(os.lstat(root / f"f{i}").st_ino)
            os.link(root / f"f{i}", outside / f"hl{i}")
            with open(outside / f"hl{i}", "a") as handle:
                handle.write("through the outside name\n")
            session.step("true")  # Session asserts the write and the link are reported
            os.unlink(outside / f"hl{i}")
        assert detector.fallbacks == 0
        print(f"{len(numbers)} distinct inode numbers for 12 files")
    finally:
        detector.close()


def test_a_file_watch_refused_for_permission_leaves_that_file_re_stat_ed(tmp_path, monkeypatch):
    # inotify needs read access to the inode; a file the user may not read cannot be watched.
    # That one file is compared by stat data at every after(), the rest stays on events.
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    os.link(root / "a.txt", outside / "hl")

    class PickyINotify(events.INotify):  # type: ignore[misc,valid-type]
        def add_watch(self, path, mask):  # type: ignore[no-untyped-def]
            if str(path).endswith("a.txt"):
                raise OSError(errno.EACCES, os.strerror(errno.EACCES))
            return super().add_watch(path, mask)

    monkeypatch.setattr(events, "INotify", PickyINotify)
    detector = EventDetector()
    try:
        session = Session(detector, root)
        session.step("true")
        with open(outside / "hl", "a") as handle:
            handle.write("more\n")
        changes, truth = session.step("echo c >> b.txt")
        assert truth == {"a.txt", "b.txt"} and changes == Changes(frozenset(truth))
        assert detector.fallbacks == 0 and detector.degraded is None
    finally:
        detector.close()
