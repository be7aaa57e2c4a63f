"""Snapshots of a directory tree, and the difference between two of them.

A snapshot records, for every path below the root (including `.git/`), the data `lstat` gives
(type, mode, owner, size, mtime, ctime, inode, device, link count), the target string of each
symbolic link, and the names in each directory. Symbolic links are never followed, so a link
loop is just two entries.

Stat data proves a file unchanged only if a later write could not have left it equal. A write
sets mtime and ctime to the filesystem's current (coarse) time, so a file whose timestamps lie
within `RACY_WINDOW_NS` of the moment the snapshot was taken can be rewritten, same size, in the
same clock tick without its stat data changing: git calls such an entry "racily clean". Those
entries are marked `racy` and their content hashed; the next snapshot re-hashes them when their
stat data is unchanged and compares the digests. For the same reason a directory whose listing
is reused (its stat data is unchanged, the trick of git's untracked cache) must not be racy.

What really changed is judged elsewhere, by `properties/ground_truth.py`, which shares no code
with this module: a bug here cannot blind the judge of the detectors built on it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable
from typing import NamedTuple

from ledger_spec.values import Changes

# Filesystem timestamps come from the kernel's coarse clock (one tick, 1-10 ms) and some
# filesystems store whole seconds (ext3, HFS+) or two-second units (FAT). Two seconds covers all
# of them and a little clock skew between a network filesystem's server and this machine; the
# only price of a wide window is hashing recently written files, which are few.
RACY_WINDOW_NS: int = 2_000_000_000

# Files are hashed in chunks of this size, so a large file never has to fit in memory.
_HASH_CHUNK = 1 << 20

# Indices into `Entry.sig`, the stat signature compared between snapshots.
KIND, MODE, UID, GID, SIZE, MTIME_NS, CTIME_NS, INO, DEV, NLINK, LINK_TARGET = range(11)

# The root's own entry and listing are stored under this key; it is never reported.
ROOT_KEY = ""


class Entry(NamedTuple):
    """One path in a snapshot.

    `sig` is (kind, mode, uid, gid, size, mtime_ns, ctime_ns, ino, dev, nlink, link target):
    everything `lstat` says except atime (reading a file changes only atime, and a detector
    must not report its own reads), plus the target of a symbolic link. `racy` is set when
    the timestamps were too recent, at capture time, for stat data to prove the entry
    unchanged later. `digest` is the content hash of a regular file, or None if not taken.
    """

    sig: tuple
    racy: bool
    digest: bytes | None


class Snapshot(NamedTuple):
    """A recorded tree: entries and directory listings by key, and what could not be read.

    Keys are POSIX paths relative to the root; the root itself is `ROOT_KEY`. `unreadable`
    holds keys that could not be listed, stat'ed or read by link: a diff involving them
    cannot be proved complete.
    """

    root: str
    entries: dict[str, Entry]
    listings: dict[str, tuple[str, ...]]
    unreadable: frozenset[str]
    taken_at_ns: int


DirectoryHook = Callable[[str, str], None]


def _hash_file(path: str) -> tuple[bytes | None, os.stat_result | None]:
    """The content digest of the regular file at `path`, and its stat data after reading.

    The stat data is taken after the content, so a write racing with the read either lands in
    the digest or happens after the stat (and is caught by re-hashing the racy entry next
    time). Opening never follows a link and never blocks on a FIFO swapped in meanwhile.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None, None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, None
        digest = hashlib.blake2b(digest_size=20)
        while True:
            chunk = os.read(fd, _HASH_CHUNK)
            if not chunk:
                break
            digest.update(chunk)
        return digest.digest(), os.fstat(fd)
    except OSError:
        return None, None
    finally:
        os.close(fd)


def _signature(st: os.stat_result, link_target: str | None) -> tuple:
    return (
        stat.S_IFMT(st.st_mode),
        st.st_mode,
        st.st_uid,
        st.st_gid,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
        st.st_dev,
        st.st_nlink,
        link_target,
    )


def make_entry(
    path: str,
    st: os.stat_result,
    previous: Entry | None,
    racy_threshold_ns: int,
    hash_racy: bool = True,
) -> tuple[Entry, bool]:
    """Build the entry for `path` from its `lstat` result; also say whether it was readable.

    A regular file is hashed when it is racy now and `hash_racy` is set, or when its previous entry was racy and the stat data still match
    (the digest is then the only proof that the content did not change).
    """
    mode = st.st_mode
    readable = True
    link_target = None
    if stat.S_ISLNK(mode):
        try:
            link_target = os.readlink(path)
        except OSError:
            readable = False
    sig = _signature(st, link_target)
    racy = max(st.st_mtime_ns, st.st_ctime_ns) >= racy_threshold_ns
    digest = None
    if stat.S_ISREG(mode) and ((racy and hash_racy) or (previous is not None and previous.racy and previous.sig == sig)):
        digest, after = _hash_file(path)
        if after is None or after.st_ino != st.st_ino or after.st_dev != st.st_dev:
            # Replaced or unreadable while hashing: no proof either way, so the next
            # comparison must report it (racy with no digest never compares equal).
            return Entry(sig, True, None), True
        sig = _signature(after, None)
        racy = racy or max(after.st_mtime_ns, after.st_ctime_ns) >= racy_threshold_ns
    return Entry(sig, racy, digest), readable


def scan_into(
    root: str,
    start_key: str,
    previous: Snapshot | None,
    entries: dict[str, Entry],
    listings: dict[str, tuple[str, ...]],
    unreadable: set[str],
    racy_threshold_ns: int,
    on_directory: DirectoryHook | None = None,
    hash_racy: bool = True,
) -> None:
    """Record the directory `start_key` (whose own entry is already in `entries`) and all below.

    `on_directory(key, path)` runs before a directory is listed, so a watch it adds sees every
    change made after the listing. A directory's previous listing is reused without listing it
    again when its stat data is unchanged and it was not racy: creating, deleting or renaming an
    entry sets the directory's mtime and ctime to the current time.
    """
    prev_entries = previous.entries if previous is not None else {}
    prev_listings = previous.listings if previous is not None else {}
    lstat = os.lstat
    is_dir = stat.S_ISDIR
    link_kind = stat.S_IFLNK
    stack = [start_key]
    while stack:
        key = stack.pop()
        path = os.path.join(root, key) if key else root
        if on_directory is not None:
            on_directory(key, path)
        prefix = key + "/" if key else ""
        base = path + "/"
        children: list[tuple[str, os.stat_result]] | None = None
        prev_dir = prev_entries.get(key)
        names = prev_listings.get(key)
        if names is not None and prev_dir is not None and not prev_dir.racy and prev_dir.sig == entries[key].sig:
            children = []
            for name in names:
                try:
                    children.append((name, lstat(base + name)))
                except FileNotFoundError:
                    children = None  # the listing changed after all: list it again
                    break
                except OSError:
                    unreadable.add(prefix + name)
        if children is None:
            children = []
            names_found = []
            try:
                with os.scandir(path) as listing:
                    for item in listing:
                        names_found.append(item.name)
                        try:
                            children.append((item.name, item.stat(follow_symlinks=False)))
                        except FileNotFoundError:
                            names_found.pop()  # deleted between listing and stat: gone
                        except OSError:
                            unreadable.add(prefix + item.name)
            except OSError:
                unreadable.add(key)
            names = tuple(names_found)
        listings[key] = names
        for name, st in children:
            child_key = prefix + name
            mode = st.st_mode
            previous_entry = prev_entries.get(child_key)
            # Fast path, the common case: same stat data as before and old enough to be
            # trusted, so the previous entry (and its identity, which `diff` checks first)
            # is kept. Links go the slow way because their target is part of the signature.
            # The signature is built inline (the same tuple `_signature` makes): this loop runs
            # once per path at every hook call, and a function call per path is measurable.
            if (
                previous_entry is not None
                and not previous_entry.racy
                and mode & 0o170000 != link_kind
                and previous_entry.sig
                == (
                    mode & 0o170000, mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns,
                    st.st_ctime_ns, st.st_ino, st.st_dev, st.st_nlink, None,
                )
                and st.st_mtime_ns < racy_threshold_ns
                and st.st_ctime_ns < racy_threshold_ns
            ):
                entries[child_key] = previous_entry
            else:
                entry, readable = make_entry(base + name, st, previous_entry, racy_threshold_ns, hash_racy)
                if not readable:
                    unreadable.add(child_key)
                entries[child_key] = entry
            if is_dir(mode):
                stack.append(child_key)


def take_snapshot(
    root: os.PathLike[str] | str,
    previous: Snapshot | None = None,
    *,
    on_directory: DirectoryHook | None = None,
    hash_racy: bool = True,
    racy_window_ns: int = RACY_WINDOW_NS,
) -> Snapshot:
    """Record the tree under `root`, reusing what `previous` proves unchanged.

    Pass the snapshot this one will be compared with as `previous`: its racy files are
    re-hashed here when their stat data is unchanged, so that `diff(previous, result)` can tell
    a same-size, same-tick rewrite from no change at all.
    """
    root_s = os.path.abspath(os.fspath(root))
    taken_at = time.time_ns()
    threshold = taken_at - racy_window_ns
    entries: dict[str, Entry] = {}
    listings: dict[str, tuple[str, ...]] = {}
    unreadable: set[str] = set()
    try:
        root_stat = os.lstat(root_s)
    except OSError:
        return Snapshot(root_s, entries, listings, frozenset({ROOT_KEY}), taken_at)
    if not stat.S_ISDIR(root_stat.st_mode):
        return Snapshot(root_s, entries, listings, frozenset({ROOT_KEY}), taken_at)
    entries[ROOT_KEY] = make_entry(root_s, root_stat, None, threshold)[0]
    scan_into(root_s, ROOT_KEY, previous, entries, listings, unreadable, threshold, on_directory, hash_racy)
    return Snapshot(root_s, entries, listings, frozenset(unreadable), taken_at)


def entry_changed(old: Entry | None, new: Entry | None) -> bool:
    """Whether stat data and digests fail to prove the path unchanged between two entries."""
    if old is None or new is None:
        return old is not new
    if old.sig != new.sig:
        return True
    if old.racy and old.sig[KIND] == stat.S_IFREG:
        return old.digest is None or old.digest != new.digest
    return False


def changed_keys(old: dict[str, Entry], new: dict[str, Entry]) -> set[str]:
    """Keys present in one mapping only, or whose entries `entry_changed` cannot prove equal."""
    changed = set()
    added = False
    get_old = old.get
    for key, entry in new.items():
        previous = get_old(key)
        if previous is entry:
            continue  # the scan kept the previous entry: proved unchanged
        if previous is None:
            added = True
            changed.add(key)
        elif previous.sig != entry.sig or (previous.racy and entry_changed(previous, entry)):
            changed.add(key)
    # With no key added, equal sizes mean no key was removed either.
    if added or len(old) != len(new):
        changed.update(key for key in old if key not in new)
    changed.discard(ROOT_KEY)
    return changed


def diff(before: Snapshot, after: Snapshot) -> Changes:
    """What changed from `before` to `after`; unknown if `after` could not read everything.

    Unknown also when `before` was incomplete: a path unreadable then and readable now may
    have changed in between without any evidence left.
    """
    unknown = bool(after.unreadable) or bool(before.unreadable)
    changed = changed_keys(before.entries, after.entries)
    if not changed and root_entry_changed(before, after):
        # No key names the root, yet `ls -ld .` or `find . -newer x` show its metadata. Only
        # tree targets depend on it, and any reported key advances G, so naming the top-level
        # entries suffices; an empty root can only say "unknown".
        changed = {key for key in after.entries if key != ROOT_KEY and "/" not in key}
        unknown = unknown or not changed
    return Changes(frozenset(changed), unknown=unknown)


def root_entry_changed(before: Snapshot, after: Snapshot) -> bool:
    """Whether the root's own stat data (mode, owner, times, link count) differ."""
    old, new = before.entries.get(ROOT_KEY), after.entries.get(ROOT_KEY)
    return old is not None and new is not None and old.sig != new.sig
