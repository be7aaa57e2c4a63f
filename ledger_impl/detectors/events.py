"""EventDetector: inotify events name the candidates, stat data against a baseline confirms them.

Cost grows with the number of changes, not the size of the tree. The detector keeps a full
`Snapshot` of the root as its baseline (taken at the first `before()`, with a watch added to
each directory just before it is listed) and updates it incrementally: each event names a path,
the path is `lstat`'ed again and compared with its baseline entry, and the entry is replaced.
Comparing instead of trusting events keeps the detector's own activity and no-op writes (a file
opened for writing and closed unchanged) out of the report.

Why draining the queue after the command is enough: the kernel queues an inotify event inside
the system call that caused it, before that call returns. Once the command's processes have
exited, every event they caused is queued. `after()` then touches a marker file in a private
directory (outside the root, watched by the same inotify instance) and reads until the marker's
event arrives: everything queued before it, i.e. everything the command did, has been read.
Writers still running after the command returned (background jobs, an editor) are reported at
the next `after()`, since their events wait in the queue.

When events cannot be trusted, the detector falls back to a full snapshot diff against the
baseline (which is why it keeps one): on queue overflow (IN_Q_OVERFLOW), an event from a watch
it cannot map to a path, the root itself being moved or deleted, or a failure to add a watch
(ENOSPC when fs.inotify.max_user_watches is exhausted). A failed watch, or inotify being
unavailable, makes the detector run the full diff at every `after()` from then on. Since file
watches see a close without a write (below), reading files queues one event per file read: a
command that reads more files than fs.inotify.max_queued_events (16384 by default) between two
polls overflows the queue and gets the full diff.

Hard links: a directory watch reports a write only under the name it went through, and only if
that name is in a watched directory. A write through a hard link outside the root notifies the
outside directory and the inode's own watchers; a link made there (at any time, before or after
the session started) only changes the inode's link count, which is reported to the inode's
watchers alone. So every file (every non-directory: GNU `ln` hard-links symlinks too) also gets
an inode watch, and an event on it re-stats every key that names the inode. Every file's
(device, inode) is indexed with its keys for that; a changed file with more than one link also
gets its other names re-stat'ed (their ctime and content changed too).

An inode watch is added after the file was stat'ed (the scan lists a directory, then the files
are watched), so a write in between would leave no event. The file is stat'ed once more after
its watch exists: if that differs from the entry, or the entry's timestamps are too recent for
stat data to prove anything (racy), the inode is "unproven" and all its keys are compared again
at the next `after()` (by content, for a racy entry with a digest). A watch the kernel refuses
for lack of permission (inotify needs read access) leaves that key re-stat'ed at every
`after()`; one refused for the watch limit (ENOSPC) degrades the detector to the full diff.

Kernel-level changes that raise no inotify event, and how each is covered:

- the root deleted and recreated, or an ancestor swapped: the (dev, ino) of the root and every
  ancestor is compared at every call; a change starts over (new baseline, new watches) and
  reports unknown scope;
- a filesystem mounted (or bind-mounted) over a directory inside the root, or unmounted: no
  event at all. The mount table (`/proc/self/mountinfo`) is compared at every call; a change
  runs the full diff;
- a file in the root written through a loop device it backs (`losetup`, then writes to
  `/dev/loopN`): no event, though mtime and ctime move. Loop devices' backing files
  (`/sys/block/loop*/loop/backing_file`) inside the root are re-stat'ed at every `after()`;
- a file written through a hard link made from outside the root: no event under any name in
  the root, but one on the inode's own watch (above);
- `chattr` flags (the FS_IOC_SETFLAGS ioctl) change a file's ctime with no IN_ATTRIB. The ioctl
  needs an open descriptor (an O_PATH one cannot issue it), and closing one opened for reading
  raises IN_CLOSE_NOWRITE on the file's inode watch, whose mask has it: such a close makes the
  inode's keys re-stat'ed and their stat data compared with the baseline. A plain read moves
  none of it and reports nothing; the content needs no digest, since a write raises IN_MODIFY
  on the same watch. An ioctl through a descriptor that stays open is seen once it is closed,
  at the `after()` that follows. `chattr` on a directory stays a blind spot: directories have
  no inode watch, and their watches do not take IN_CLOSE_NOWRITE, which would raise an event
  for every file read in them. Nothing else compares a directory's ctime inside the root (the
  fingerprint and the probe leave directories' times out), so a read that prints it
  (`find . -cnewer ref -name sub` after `chattr +d sub`) can be served stale.

Every degraded mode (no inotify, watch limit, queue overflow, an unmappable event, the root
replaced, the mount table changed) is reported in `degraded`, which the Runtime puts in `Step`
and in the view.

Known blind spots of inotify that this detector inherits (the snapshot detector has none of
them): writes through a shared memory mapping that stays open produce no event; changes made by
another machine on a network filesystem produce no event.
"""

from __future__ import annotations

import errno
import os
import pathlib
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable

from ledger_impl.tree_snapshot import (
    DEV,
    INO,
    KIND,
    NLINK,
    RACY_WINDOW_NS,
    ROOT_KEY,
    Entry,
    Snapshot,
    diff,
    entry_changed,
    make_entry,
    scan_into,
    take_snapshot,
)
from ledger_spec.values import Changes
from ledger_spec.degraded import Cause, Degraded, Effect
from ledger_spec.errors import DetectorFailure

try:  # inotify is Linux-only; elsewhere the detector runs as a plain snapshot diff
    from inotify_simple import INotify
    from inotify_simple import flags as _flags
except ImportError:  # pragma: no cover - exercised only off Linux
    INotify = None  # type: ignore[assignment,misc]
    _flags = None  # type: ignore[assignment]

if _flags is not None:
    WATCH_MASK: int = (
        _flags.CREATE
        | _flags.DELETE
        | _flags.MODIFY
        | _flags.ATTRIB
        | _flags.MOVED_FROM
        | _flags.MOVED_TO
        | _flags.CLOSE_WRITE
        | _flags.DELETE_SELF
        | _flags.MOVE_SELF
        | _flags.ONLYDIR
        | _flags.DONT_FOLLOW
    )
    _Q_OVERFLOW = int(_flags.Q_OVERFLOW)
    _IGNORED = int(_flags.IGNORED)
    _ISDIR = int(_flags.ISDIR)
    _NEW_NAME = int(_flags.CREATE | _flags.MOVED_TO)
    _CREATE = int(_flags.CREATE)
    _CLOSE_WRITE = int(_flags.CLOSE_WRITE)
    _CLOSE_NOWRITE = int(_flags.CLOSE_NOWRITE)
    _MOVED_FROM = int(_flags.MOVED_FROM)
    _SELF_GONE = int(_flags.DELETE_SELF | _flags.MOVE_SELF)
    # Inode watches on files: a write or a link count change, whatever name it went through,
    # and a close without a write: `chattr` changes flags and ctime through an ioctl on an
    # open descriptor and raises nothing else. Directory watches do not take CLOSE_NOWRITE:
    # every read of a file in them would raise a second event for it.
    # MASK_ADD: if the name became a watched directory meanwhile, a plain add would replace
    # that directory's mask with this one.
    FILE_WATCH_MASK: int = (
        _flags.MODIFY
        | _flags.ATTRIB
        | _flags.CLOSE_WRITE
        | _flags.CLOSE_NOWRITE
        | _flags.DONT_FOLLOW
        | _flags.MASK_ADD
    )
else:  # pragma: no cover
    WATCH_MASK = FILE_WATCH_MASK = 0
    _Q_OVERFLOW = _IGNORED = _ISDIR = _NEW_NAME = _CREATE = _CLOSE_WRITE = _CLOSE_NOWRITE = 0
    _MOVED_FROM = _SELF_GONE = 0

def _stat_data(st: os.stat_result) -> tuple:
    """The stat part of an `Entry.sig` (everything but a symlink's target)."""
    return (
        stat.S_IFMT(st.st_mode), st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns,
        st.st_ctime_ns, st.st_ino, st.st_dev, st.st_nlink,
    )


def _root_identity(root: str) -> tuple[tuple[int, int], ...] | None:
    """(dev, ino) of `root` and each ancestor; None if one cannot be stat'ed."""
    chain: list[tuple[int, int]] = []
    path = root
    while True:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        chain.append((st.st_dev, st.st_ino))
        parent = os.path.dirname(path)
        if parent == path:
            return tuple(chain)
        path = parent


def mount_table(root: str) -> tuple[bytes, ...] | None:
    """The mounts at or below `root` in this process's mount table, to compare: a mount or
    unmount raises no inotify event. Mounts elsewhere are left out, so that an unrelated mount
    on a busy machine does not cost a full diff (one over an ancestor changes the root's
    identity, which is checked separately)."""
    try:
        with open("/proc/self/mountinfo", "rb") as handle:
            table = handle.read()
    except OSError:
        return None
    prefix = os.fsencode(root.rstrip("/") + "/")
    inside: list[bytes] = []
    for line in table.splitlines():
        fields = line.split(b" ")
        if len(fields) > 4:
            # The mount point, with space, tab, newline and backslash escaped as octal.
            point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), fields[4])
            if point + b"/" == prefix or point.startswith(prefix):
                inside.append(line)
    return tuple(inside)


def _loop_backing_files() -> list[str]:
    """The files loop devices are backed by, as the kernel reports them."""
    found: list[str] = []
    try:
        devices = os.listdir("/sys/block")
    except OSError:
        return found
    for device in devices:
        if not device.startswith("loop"):
            continue
        try:
            with open(f"/sys/block/{device}/loop/backing_file", "rb") as handle:
                found.append(os.fsdecode(handle.read().rstrip(b"\n")))
        except OSError:
            continue
    return found


# How long `after()` waits for its own marker event before concluding the queue is broken.
# The marker is queued synchronously, so it is normally read in microseconds; the bound only
# keeps a wedged queue from hanging the agent (the detector then falls back to a full diff).
MARKER_TIMEOUT_S: float = 2.0



class _Fallback(DetectorFailure):
    """Events cannot account for the changes: run a full snapshot diff."""

    def __init__(self, cause: Cause = Cause.EVENTS_UNACCOUNTED) -> None:
        self.reason = Degraded(cause, effect=Effect.ONE_FULL_DIFF)
        super().__init__(self.reason.text())


class EventDetector:
    """inotify-driven detector with a full-snapshot fallback; see the module docstring."""

    name = "inotify-events"

    def __init__(
        self,
        racy_window_ns: int = RACY_WINDOW_NS,
        marker_timeout_s: float = MARKER_TIMEOUT_S,
        *,
        complete_link_tracking: bool = True,
        watch_inodes: bool = True,
        watch_closes: bool = True,
    ) -> None:
        """`complete_link_tracking=False` reproduces two faults the thorough safety hunt found:
        a hard link made and removed within a command, and a hard link to a symlink, each
        change an inode's ctime and link count under names no event mentions. `watch_inodes=
        False` watches directories only, which misses a file written through a hard link made
        outside the root. `watch_closes=False` leaves IN_CLOSE_NOWRITE out of the inode
        watches, which misses a `chattr`. All for the documented unsound variants and tests only."""
        self.racy_window_ns = racy_window_ns
        self.marker_timeout_s = marker_timeout_s
        self.complete_link_tracking = complete_link_tracking
        self.watch_inodes = watch_inodes
        self._file_watch_mask = FILE_WATCH_MASK if watch_closes else FILE_WATCH_MASK & ~_CLOSE_NOWRITE
        self._root: str | None = None
        self._baseline: Snapshot | None = None
        self._inotify = None
        self._private_dir: str | None = None
        self._marker_wd: int | None = None
        self._wd_to_dir: dict[int, str] = {}
        self._dir_to_wd: dict[str, int] = {}
        self._retired: dict[int, str] = {}  # watches removed by us whose events may still be queued
        self._inodes: dict[tuple[int, int], set[str]] = {}  # (dev, ino) -> keys of non-directories
        self._inode_wd: dict[tuple[int, int], int] = {}  # inode watches: (dev, ino) -> wd
        self._wd_to_inode: dict[int, tuple[int, int]] = {}
        self._released: set[int] = set()  # inode watches we or the kernel removed; their events may be queued
        self._fresh_watches: dict[tuple[int, int], tuple] = {}  # inode -> stat data right after its watch, this round
        self._unproven: set[tuple[int, int]] = set()  # inodes that may have changed before their watch existed
        self._unwatchable: set[str] = set()  # keys whose inode watch was refused (EACCES): re-stat'ed every after()
        self._unlinked: set[tuple[int, int]] = set()  # inodes that lost a key this round: release if none is left
        self._events: list = []  # read by before(), processed by the next after()
        self._markers = 0  # after() n creates marker file "n": a stale marker cannot be mistaken for it
        self._relinked: set[tuple[int, int]] = set()  # inodes with several links touched this round
        self._degraded = False  # True: events are not trusted, every after() is a full diff
        self._degraded_reason: Degraded | None = None  # why, when _degraded
        self._fallback_reason: Degraded | None = None  # why the last after() ran the full diff, if it did
        self._root_identity: tuple[tuple[int, int], ...] | None = None
        self._mounts: bytes | None = None
        self.fallbacks = 0  # how many after() calls ran the full diff (for tests and benchmarks)

    @property
    def degraded(self) -> Degraded | None:
        """Why the detector is not running on events alone, if it is not: a lasting mode (no
        inotify, watch limit) or what made the last report a full diff or unknown scope."""
        if self._degraded:
            return self._degraded_reason or Degraded(Cause.EVENTS_UNTRUSTED)
        return self._fallback_reason

    # -- public contract -------------------------------------------------------------------

    def before(self, root: pathlib.Path, command: str) -> None:
        root_s = os.path.abspath(root)
        if self._baseline is None or self._root != root_s:
            self._start(root_s)
        elif self._root_identity != _root_identity(root_s):
            # Replaced since the last after(): starting over here would let the next after()
            # report only the command's own changes. It starts over and reports unknown scope.
            pass
        elif self._inotify is not None and not self._degraded:
            # Read what piled up between commands so a long idle period cannot overflow the
            # kernel queue; the events are processed at the next after().
            self._events.extend(self._inotify.read(timeout=0))

    def after(self, root: pathlib.Path, command: str, exit_code: int) -> Changes:
        root_s = os.path.abspath(root)
        self._fallback_reason = None
        if self._baseline is None or self._root != root_s:
            self._start(root_s)
            return Changes(unknown=True)  # no baseline: nothing proves what the command did
        if self._root_identity != _root_identity(root_s):
            # The root (or an ancestor) is another directory now: every watch and the baseline
            # describe the old one. Start over; nothing proves what changed.
            self._start(root_s)
            self._fallback_reason = Degraded(Cause.ROOT_REPLACED, effect=Effect.UNKNOWN_SCOPE)
            return Changes(unknown=True)
        if self._degraded or self._inotify is None:
            return self._full_diff(set())
        changed: set[str] = set()
        try:
            if self._mounts != mount_table(root_s):
                raise _Fallback(Cause.MOUNTS_CHANGED)
            events = self._drain()
            self._fresh_watches.clear()  # a new round: every watch so far predates what we stat now
            self._apply(events, changed)
            self._refresh_loop_backed(changed)
            self._refresh_unwatchable(changed)
            self._prove_unproven(changed)
            if self._degraded:
                raise _Fallback  # an inode watch was refused for the watch limit
            self._release_unreached()
        except _Fallback as fallback:
            self._fallback_reason = fallback.reason
            return self._full_diff(changed)
        return Changes(frozenset(changed))

    def close(self) -> None:
        """Release the inotify instance and the private marker directory."""
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # -- setup -----------------------------------------------------------------------------

    def _start(self, root: str) -> None:
        self.close()
        self._root = root
        self._wd_to_dir.clear()
        self._dir_to_wd.clear()
        self._retired.clear()
        self._inode_wd.clear()
        self._wd_to_inode.clear()
        self._released.clear()
        self._fresh_watches.clear()
        self._unproven.clear()
        self._unwatchable.clear()
        self._unlinked.clear()
        self._events = []
        self._root_identity = _root_identity(root)
        self._mounts = mount_table(root)
        self._degraded = INotify is None
        self._degraded_reason = Degraded(Cause.NO_INOTIFY) if self._degraded else None
        if not self._degraded:
            try:
                self._inotify = INotify()
                self._private_dir = tempfile.mkdtemp(prefix="ledger-inotify-")
                self._marker_wd = self._inotify.add_watch(self._private_dir, int(_flags.CREATE))
            except OSError as error:
                self.close()
                self._degraded = True
                self._degraded_reason = Degraded(Cause.NO_INSTANCE, (str(error.strerror),))
        hook = None if self._degraded else self._watch_hook(initial=True)
        self._baseline = take_snapshot(root, on_directory=hook, racy_window_ns=self.racy_window_ns)
        self._rebuild_inode_index()
        self._relinked.clear()  # a fresh baseline has nothing to re-check

    def _watch_hook(self, initial: bool):
        def add_watch(key: str, path: str) -> None:
            if self._degraded:
                return
            try:
                wd = self._inotify.add_watch(path, WATCH_MASK)
            except OSError as error:
                # ENOSPC (watch limit), EACCES, or the directory vanished: this directory's
                # future changes would go unseen, so events alone are no longer sound.
                self._degrade(Degraded(Cause.DIRECTORY_UNWATCHABLE, (key or ".", str(error.strerror))))
                return
            owner = self._wd_to_dir.get(wd)
            if owner is not None and owner != key and initial:
                # One directory reachable under two keys (a bind mount): an event could only
                # be mapped to one of them.
                self._degrade(Degraded(Cause.DIRECTORY_ALIASED, (owner or ".", key)))
            if owner is not None and owner != key:
                self._dir_to_wd.pop(owner, None)
            self._wd_to_dir[wd] = key
            self._dir_to_wd[key] = wd
            self._retired.pop(wd, None)

        return add_watch

    def _degrade(self, reason: Degraded) -> None:
        """Stop trusting events for good: every after() runs the full diff from now on. The
        inotify instance is closed at once: its watches count against a budget every program
        of the user shares (fs.inotify.max_user_watches), and a limit reached is the usual
        reason to be here."""
        self._degraded = True
        self._degraded_reason = reason
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        self._inode_wd.clear()
        self._wd_to_inode.clear()

    def _rebuild_inode_index(self) -> None:
        """Index every file of a fresh baseline, watch its inode, release watches no key needs."""
        self._inodes.clear()
        self._unwatchable.clear()
        for key, entry in self._baseline.entries.items():
            if key != ROOT_KEY:
                self._index_add(key, entry)
        self._unlinked.update(self._inode_wd)
        self._release_unreached()

    def _index_add(self, key: str, entry: Entry) -> None:
        if self._links_tracked(entry):
            inode = (entry.sig[DEV], entry.sig[INO])
            self._inodes.setdefault(inode, set()).add(key)
            if entry.sig[NLINK] > 1:
                self._relinked.add(inode)
            if self.watch_inodes:
                self._watch_inode(key, entry, inode)

    def _watch_inode(self, key: str, entry: Entry, inode: tuple[int, int]) -> None:
        """Make sure the inode `entry` describes is watched, and prove nothing changed between
        the stat that made `entry` and the watch; else mark the inode unproven."""
        if self._degraded or self._inotify is None:
            return
        path = os.path.join(self._root, key)
        try:
            wd = self._inotify.add_watch(path, self._file_watch_mask)
        except (FileNotFoundError, NotADirectoryError):
            return  # the name is gone already: its directory's event is queued
        except OSError as error:
            if error.errno == errno.ENOSPC:
                self._degrade(Degraded(Cause.FILE_UNWATCHABLE, (key, str(error.strerror))))
            else:  # EACCES: inotify needs read access. Stat data will have to do for this one.
                self._unwatchable.add(key)
            return
        known = self._wd_to_inode.get(wd)
        if known == inode and inode not in self._fresh_watches:
            return  # watched since an earlier round: every change after that is queued
        if known is not None and known != inode or wd in self._wd_to_dir:
            # The name reaches another watched inode or a directory now: it was replaced after
            # its stat, and that replacement's directory event is queued. Compare again.
            self._unproven.add(inode)
            return
        if known is None:
            try:
                st = os.lstat(path)
            except OSError:
                st = None
            if st is None or (st.st_dev, st.st_ino) != inode:
                # Replaced after its stat: this new watch is on an inode no entry describes.
                self._release(wd)
                self._unproven.add(inode)
                return
            stale = self._inode_wd.get(inode)
            if stale is not None and stale != wd:
                # The kernel dropped the old watch (inode freed, number reused) unseen so far.
                self._wd_to_inode.pop(stale, None)
                self._released.add(stale)
            self._inode_wd[inode] = wd
            self._wd_to_inode[wd] = inode
            self._fresh_watches[inode] = _stat_data(st)
        # A watch made this round, possibly after this entry's stat: the entry is proved only
        # if the stat taken once the watch existed matches it and is not racy.
        if entry.racy or entry.sig[:NLINK + 1] != self._fresh_watches[inode]:
            self._unproven.add(inode)

    def _forget_inode_watch(self, wd: int) -> None:
        inode = self._wd_to_inode.pop(wd, None)
        if inode is not None and self._inode_wd.get(inode) == wd:
            del self._inode_wd[inode]

    def _release(self, wd: int) -> None:
        """Remove an inode watch of ours; events already queued for it are ignored."""
        self._forget_inode_watch(wd)
        self._released.add(wd)
        try:
            if self._inotify is not None:
                self._inotify.rm_watch(wd)
        except OSError:
            pass  # already removed by the kernel (the inode was freed)

    def _release_unreached(self) -> None:
        """Release the watches of inodes no key in the root names any more: writes through
        their outside names are not ours to report, and watches are a per-user budget."""
        for inode in self._unlinked:
            wd = self._inode_wd.get(inode)
            if wd is not None and inode not in self._inodes:
                self._release(wd)
        self._unlinked.clear()

    def _prove_unproven(self, changed: set[str]) -> None:
        """Compare again every key of an inode that may have changed before its watch existed.
        The watches exist now, so these stats are proof; a name replaced again meanwhile makes
        another round, and a tree that keeps changing under the detector is left to the full diff."""
        for _ in range(3):
            if not self._unproven:
                return
            inodes, self._unproven = self._unproven, set()
            self._fresh_watches.clear()
            keys = {key for inode in inodes for key in self._inodes.get(inode, ())}
            for key in sorted(keys):
                self._refresh(key, changed, deep=False)
        if self._unproven:
            raise _Fallback(Cause.REPLACED_WHILE_WATCHING)

    def _refresh_unwatchable(self, changed: set[str]) -> None:
        """Re-stat the keys whose inode could not be watched (each retries its watch)."""
        pending, self._unwatchable = self._unwatchable, set()
        for key in sorted(pending):
            self._refresh(key, changed, deep=False)

    def _links_tracked(self, entry: Entry) -> bool:
        # Everything but a directory can have several names: GNU `ln` hard-links a symlink itself.
        if self.complete_link_tracking:
            return entry.sig[KIND] != stat.S_IFDIR
        return entry.sig[KIND] == stat.S_IFREG

    def _index_remove(self, key: str, entry: Entry) -> None:
        if self._links_tracked(entry):
            inode = (entry.sig[DEV], entry.sig[INO])
            if entry.sig[NLINK] > 1:
                # The other names share this inode: its link count and ctime changed for them.
                self._relinked.add(inode)
            keys = self._inodes.get(inode)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._inodes[inode]
                    self._unlinked.add(inode)

    # -- reading events --------------------------------------------------------------------

    def _drain(self) -> list:
        """All events queued up to now: touch the marker, read until its event comes back."""
        events = self._events
        self._events = []
        self._markers += 1
        marker_name = str(self._markers)
        marker = os.path.join(self._private_dir, marker_name)
        os.close(os.open(marker, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600))
        os.unlink(marker)
        deadline = time.monotonic() + self.marker_timeout_s
        while True:
            batch = self._inotify.read(timeout=0)
            if not batch:
                if any(event.mask & _Q_OVERFLOW for event in events):
                    # the marker may have been dropped with the rest
                    raise _Fallback(Cause.QUEUE_OVERFLOW)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Fallback(Cause.MARKER_LATE)
                batch = self._inotify.read(timeout=max(1, int(remaining * 1000)))
            for event in batch:
                if event.wd == self._marker_wd and event.wd not in self._wd_to_dir:
                    if event.name == marker_name:
                        # Everything queued before the marker is in `events`; later events
                        # stay queued for the next after().
                        return events
                    continue  # the marker of an earlier after() that gave up waiting
                events.append(event)

    # -- applying events -------------------------------------------------------------------

    def _apply(self, events: Iterable, changed: set[str]) -> None:
        """Refresh the baseline at every path the events name; collect the keys that changed."""
        shallow: set[str] = set()  # paths whose own entry to re-stat
        deep: set[str] = set()  # paths to rescan with everything below them
        opened: set[str] = set()  # names of inodes only closed without a write: stat data to compare
        # A name made by link() gets IN_CREATE and never IN_CLOSE_WRITE. If it is gone again by
        # now, the inode it named (whose ctime and link count changed) cannot be found from
        # its name, so only a full diff can say what changed.
        created_unwritten: set[str] = set()
        for event in events:
            mask = event.mask
            if mask & _Q_OVERFLOW:
                raise _Fallback(Cause.QUEUE_OVERFLOW)
            inode = self._wd_to_inode.get(event.wd)
            if inode is not None:
                # An inode watch: written or relinked through some name, maybe outside the root.
                if mask & _IGNORED:  # the kernel dropped it (the inode's last link is gone): its last event
                    self._forget_inode_watch(event.wd)
                if mask == _CLOSE_NOWRITE:
                    opened.update(self._inodes.get(inode, ()))  # read, or an ioctl such as chattr's
                else:
                    shallow.update(self._inodes.get(inode, ()))
                continue
            if event.wd in self._released:
                if mask & _IGNORED:
                    self._released.discard(event.wd)  # its last event: nothing more can come
                continue  # an inode no key names any more
            directory = self._wd_to_dir.get(event.wd)
            if directory is None:
                directory = self._retired.get(event.wd)
                if directory is None:
                    if mask & _IGNORED:
                        continue  # the removal notice of a watch we already forgot
                    raise _Fallback  # an event we cannot map to a path
            if mask & ~_ISDIR == _CLOSE_NOWRITE:
                # Only a file's inode watch added (MASK_ADD) to a name that had become this
                # directory gives a directory watch this bit. A read below it changes nothing,
                # and a file's own watch reports the file's close.
                continue
            if mask & _IGNORED:
                # The kernel dropped the watch (its directory is gone): confirm by stat.
                if self._wd_to_dir.get(event.wd) == directory:
                    del self._wd_to_dir[event.wd]
                    if self._dir_to_wd.get(directory) == event.wd:
                        del self._dir_to_wd[directory]
                    self._retired[event.wd] = directory
                if directory == ROOT_KEY:
                    raise _Fallback(Cause.ROOT_WATCH_GONE)
                shallow.add(directory)
                continue
            if not event.name:
                # About the watched directory itself (chmod, touch, deleted, moved).
                if directory == ROOT_KEY:
                    # The root's own metadata is not a key; the full diff reports it as unknown.
                    raise _Fallback(Cause.ROOT_CHANGED)
                shallow.add(directory)
                continue
            key = directory + "/" + event.name if directory else event.name
            if mask & _CREATE and not mask & _ISDIR:
                created_unwritten.add(key)
            if mask & (_CLOSE_WRITE | _MOVED_FROM):
                created_unwritten.discard(key)  # written, or renamed to a name that gets its own event
            if mask & _ISDIR and mask & _NEW_NAME:
                deep.add(key)  # a new directory: watch it and scan what it already holds
            else:
                shallow.add(key)
            if directory:
                shallow.add(directory)  # its listing changed, so its mtime probably did too
        for key in sorted(deep):
            self._refresh(key, changed, deep=True)
        for key in sorted(shallow - deep):
            self._refresh(key, changed, deep=False)
        for key in sorted(opened - shallow - deep):
            self._refresh_opened(key, changed)
        if self._degraded:
            raise _Fallback  # a watch could not be added while scanning a new directory
        if self.complete_link_tracking and any(
            not os.path.lexists(os.path.join(self._root, key)) for key in created_unwritten
        ):
            raise _Fallback
        self._refresh_other_links(changed)

    def _refresh_opened(self, key: str, changed: set[str]) -> None:
        """Compare the stat data of a file whose inode was only closed without a write this
        round (read, or an ioctl such as chattr's). Its content cannot have changed: a write
        raises IN_MODIFY on the same watch. So equal stat data prove it unchanged, also for a
        racy entry with no digest (events refresh without hashing), which `_refresh` would
        hash and report: every read of a file written a command earlier would be a change."""
        old = self._baseline.entries.get(key)
        try:
            st = os.lstat(os.path.join(self._root, key))
        except OSError:
            st = None
        if old is not None and st is not None and old.sig[:NLINK + 1] == _stat_data(st):
            return
        self._refresh(key, changed, deep=False)

    def _refresh_loop_backed(self, changed: set[str]) -> None:
        """Re-stat the files in the root that back a loop device: writes through the device
        reach them with no inotify event."""
        prefix = self._root.rstrip("/") + "/"
        for backing in _loop_backing_files():
            if backing.startswith(prefix):
                self._refresh(backing[len(prefix):], changed, deep=False)

    def _refresh_other_links(self, changed: set[str]) -> None:
        """Re-stat every other name of changed multiply-linked files."""
        seen: set[str] = set()
        pending: set[str] = set()
        while True:
            for inode in self._relinked:
                pending |= self._inodes.get(inode, set()) - seen
            self._relinked.clear()
            if not pending:
                break
            key = pending.pop()
            if key not in seen:
                seen.add(key)
                self._refresh(key, changed, deep=False)

    def _refresh(self, key: str, changed: set[str], deep: bool) -> bool:
        """Re-stat `key` (and rescan below it when `deep`), update the baseline; True if changed."""
        entries = self._baseline.entries
        old = entries.get(key)
        path = os.path.join(self._root, key)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        except NotADirectoryError:
            st = None  # a parent became a file: this path is gone
        except OSError:
            raise _Fallback
        if st is None:
            if old is None:
                return False
            self._forget_subtree(key, changed)
            return True
        threshold = time.time_ns() - self.racy_window_ns
        new, readable = make_entry(path, st, old, threshold, hash_racy=False)
        if not readable:
            raise _Fallback
        if stat.S_ISDIR(st.st_mode) and (deep or old is None or old.sig[KIND] != stat.S_IFDIR):
            self._rescan_directory(key, new, changed, threshold)
            return True
        if old is not None and old.sig[KIND] == stat.S_IFDIR and not stat.S_ISDIR(st.st_mode):
            self._forget_subtree(key, changed)
        elif old is not None:
            self._index_remove(key, old)
        if stat.S_ISDIR(st.st_mode):
            # An existing, watched directory: its children are refreshed by their own events.
            # Its stored listing may now be stale, so mark it racy: a later full diff must
            # list it again rather than reuse the listing.
            new = Entry(new.sig, True, None)
        entries[key] = new
        self._index_add(key, new)
        if entry_changed(old, new):
            changed.add(key)
            return True
        return False

    def _rescan_directory(self, key: str, entry: Entry, changed: set[str], threshold: int) -> None:
        """Replace the baseline below `key` by a fresh scan (adding watches) and report differences."""
        entries = self._baseline.entries
        old_subtree = self._subtree(key)
        for old_key in old_subtree:
            self._index_remove(old_key, entries[old_key])
        new_entries: dict[str, Entry] = {key: entry}
        new_listings: dict[str, tuple[str, ...]] = {}
        unreadable: set[str] = set()
        scan_into(
            self._root,
            key,
            self._baseline,
            new_entries,
            new_listings,
            unreadable,
            threshold,
            on_directory=self._watch_hook(initial=False),
            hash_racy=False,
        )
        if unreadable:
            raise _Fallback
        for old_key in old_subtree:
            if old_key not in new_entries:
                changed.add(old_key)
                entries.pop(old_key, None)
                self._baseline.listings.pop(old_key, None)
                self._unwatch(old_key)
        for new_key, new_entry in new_entries.items():
            if entry_changed(entries.get(new_key), new_entry):
                changed.add(new_key)
            entries[new_key] = new_entry
            self._index_add(new_key, new_entry)
        self._baseline.listings.update(new_listings)
        # Entries may have been created before their directory's watch existed, so every key
        # found is compared with the baseline; a key the baseline lacks is reported as new.

    def _forget_subtree(self, key: str, changed: set[str]) -> None:
        entries = self._baseline.entries
        for old_key in self._subtree(key):
            changed.add(old_key)
            self._index_remove(old_key, entries.pop(old_key))
            self._baseline.listings.pop(old_key, None)
            self._unwatch(old_key)

    def _subtree(self, key: str) -> list[str]:
        """`key` and every baseline key below it."""
        prefix = key + "/"
        return [k for k in self._baseline.entries if k == key or k.startswith(prefix)]

    def _unwatch(self, key: str) -> None:
        wd = self._dir_to_wd.pop(key, None)
        if wd is None or self._wd_to_dir.get(wd) != key:
            return  # not watched, or the watch now belongs to the directory's new name
        del self._wd_to_dir[wd]
        self._retired[wd] = key
        try:
            self._inotify.rm_watch(wd)
        except OSError:
            pass  # already removed by the kernel (directory deleted)

    # -- fallback --------------------------------------------------------------------------

    def _full_diff(self, changed: set[str]) -> Changes:
        """Compare a full snapshot with the baseline; re-arm watches on every directory."""
        self.fallbacks += 1
        if self._inotify is not None and not self._degraded:
            # Events up to now are covered by the diff; start the next round with an empty queue.
            # (Discarding before rescanning is safe: a change after this point is either seen
            # by the scan or leaves an event behind for the next after().)
            self._inotify.read(timeout=0)
            self._retired.update(self._wd_to_dir)
            self._wd_to_dir.clear()
            self._dir_to_wd.clear()
            hook = self._watch_hook(initial=False)
        else:
            hook = None
        current = take_snapshot(self._root, self._baseline, on_directory=hook, racy_window_ns=self.racy_window_ns)
        result = diff(self._baseline, current)
        self._baseline = current
        self._fresh_watches.clear()
        self._rebuild_inode_index()
        self._relinked.clear()
        return Changes(frozenset(changed | result.paths), unknown=result.unknown)
