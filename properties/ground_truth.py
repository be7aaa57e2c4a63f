"""Independent ground truth: what is on disk under a root, and which paths changed between two looks.

This module is the judge of every detector, so it shares no code with them: it walks the tree
in `os.walk`'s order over `os.scandir`, calls `lstat` on every entry, reads each symbolic link's target and hashes every
regular file's content. Nothing is skipped (`.git/` included) and no link is followed.

One definition of "changed" serves the hunt's oracle, the detector scenario tests and `ledger
audit`: a path changed if it appeared, disappeared, or any of its kind, mode, owner, size,
mtime, ctime, inode, link count, link target or content differs. Only atime is ignored, since
reading a file sets it.

Hashing every file at every step is a large part of a hunt step's cost, so a `HashCache` may
be passed in: it reuses a digest only when the file's (device, inode, size, mtime_ns, ctime_ns)
is the same as when the digest was taken *and* the hashing started well after the file's last
change (outside the cache's racy window). A file written within the same clock tick as its
hashing is re-hashed every time, so a same-size rewrite in that tick cannot hide behind a
cached digest.

The window must exceed the filesystem's timestamp granularity. `RACY_NS` (two seconds) is safe
for every filesystem; `racy_window_for(directory)` narrows it to `FINE_RACY_NS` where the
filesystem keeps sub-millisecond timestamps, which Linux takes from its coarse clock (one tick,
at most 10 ms): a hunt's files are seconds old at most, so only a narrow window lets the cache
work there.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import time
from typing import NamedTuple

# Timestamps come from a coarse kernel clock and some filesystems keep whole seconds; a digest
# taken within this window of the file's last mtime/ctime is not trusted for later looks.
RACY_NS: int = 2_000_000_000
# Five ticks of the coarsest kernel clock (HZ=100): for filesystems with fine timestamps only.
FINE_RACY_NS: int = 50_000_000

_CHUNK = 1 << 20


class Node(NamedTuple):
    """One path's observable state: lstat (but atime), link target, and content digest."""

    kind: int
    mode: int
    uid: int
    gid: int
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    nlink: int
    link_target: str | None
    digest: str | None


class Tree(NamedTuple):
    """Every path under `root` (POSIX, relative; the root itself is `"."`), and what could not be read."""

    root: str
    nodes: dict[str, Node]
    unreadable: frozenset[str]


class HashCache:
    """Digests reused across looks while a file's identity and timestamps are unchanged and not racy."""

    def __init__(self, racy_ns: int = RACY_NS) -> None:
        self.racy_ns = racy_ns
        self._digests: dict[tuple[int, int, int, int, int], str] = {}
        self.hashed = 0
        self.reused = 0

    def digest(self, path: str, st: os.stat_result) -> str | None:
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        cached = self._digests.get(key)
        if cached is not None:
            self.reused += 1
            return cached
        # The clock is read before the content: a write landing during the read must get a
        # newer timestamp than `st` holds, hence a different key, for the digest to be kept.
        started = time.time_ns()
        value = _hash(path)
        self.hashed += 1
        newest_change = max(st.st_mtime_ns, st.st_ctime_ns)
        if value is not None and started - newest_change > self.racy_ns:
            self._digests[key] = value
        return value


_windows_by_device: dict[int, int] = {}


def racy_window_for(directory: os.PathLike[str] | str) -> int:
    """`FINE_RACY_NS` if files written in `directory` get sub-millisecond timestamps, else `RACY_NS`.

    Three probe files are written (and removed) in a private temporary directory inside
    `directory`'s parent, never inside `directory` itself, which may be the tree being judged;
    the answer is remembered per device.
    """
    parent = os.path.dirname(os.path.abspath(os.fspath(directory)))
    try:
        device = os.stat(parent).st_dev
    except OSError:
        return RACY_NS
    if device not in _windows_by_device:
        _windows_by_device[device] = _probe_window(parent)
    return _windows_by_device[device]


def _probe_window(parent: str) -> int:
    try:
        with tempfile.TemporaryDirectory(prefix=".ledger-clock-", dir=parent) as probe:
            stamps = []
            for index in range(3):
                path = os.path.join(probe, str(index))
                with open(path, "wb") as handle:
                    handle.write(b"x")
                stamps.append(os.lstat(path).st_mtime_ns)
    except OSError:
        return RACY_NS
    return FINE_RACY_NS if any(stamp % 1_000_000 for stamp in stamps) else RACY_NS


def _hash(path: str) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb", buffering=0) as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def _node(path: str, cache: HashCache | None) -> Node:
    st = os.lstat(path)
    target = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
    digest = None
    if stat.S_ISREG(st.st_mode):
        digest = cache.digest(path, st) if cache is not None else _hash(path)
    return Node(
        stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_size,
        st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_nlink, target, digest,
    )


def look(root: os.PathLike[str] | str, cache: HashCache | None = None) -> Tree:
    """Record every path under `root` as it is now.

    The walk is `os.walk`'s (top down, each directory's subdirectories before its files, no
    link followed) written over `os.scandir` directly: keys are built by appending names rather
    than by `os.path.relpath`, and entry types come from the listing, which halves the cost of
    a look at a 10,000-path tree (the audit looks after every step).
    """
    top = os.fspath(root)
    nodes: dict[str, Node] = {}
    unreadable: set[str] = set()
    try:
        nodes["."] = _node(top, cache)
    except OSError:
        unreadable.add(".")
        return Tree(top, nodes, frozenset(unreadable))
    pending: list[tuple[str, str]] = [(".", top)]  # (key, path) of directories still to list
    while pending:
        key, directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError:
            unreadable.add(key)  # as os.walk: a listing that fails mid-way yields none of it
            continue
        prefix = "" if key == "." else key + "/"
        subdirs, files = [], []
        for entry in entries:
            (subdirs if _is_dir(entry) else files).append(entry)
        for entry in subdirs + files:
            entry_key = prefix + entry.name
            try:
                nodes[entry_key] = _node(entry.path, cache)
            except OSError:
                unreadable.add(entry_key)
        # Reversed onto the stack, so the first subdirectory is listed next (os.walk's order).
        pending.extend((prefix + entry.name, entry.path) for entry in reversed(subdirs) if not _is_link(entry))
    return Tree(top, nodes, frozenset(unreadable))


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """os.walk's test: a directory, or a link to one (listed with the directories, never entered)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def changed(before: Tree, after: Tree, *, include_root: bool = False) -> frozenset[str]:
    """Paths that appeared, disappeared or differ in anything but atime between two looks."""
    old, new = before.nodes, after.nodes
    keys = {key for key, node in old.items() if new.get(key) != node}  # changed or gone
    keys.update(new.keys() - old.keys())  # appeared
    if not include_root:
        keys.discard(".")
    return frozenset(keys)


def owed_by_key(before: Tree, after: Tree, keys: frozenset[str]) -> frozenset[str]:
    """The changed keys a detector must name; the rest it owes only as "something changed".

    A directory whose type, mode, owner and link target are the same changed only because
    entries were added or removed below it (size, timestamps, link count follow the listing).
    Its listing is read only by tree targets, which depend on the global counter, and the
    entries themselves are owed by key; so naming the directory adds nothing to safety.
    """
    owed = set()
    for key in keys:
        old, new = before.nodes.get(key), after.nodes.get(key)
        if (
            old is not None
            and new is not None
            and stat.S_ISDIR(old.kind)
            and (old.kind, old.mode, old.uid, old.gid, old.link_target) == (new.kind, new.mode, new.uid, new.gid, new.link_target)
        ):
            continue
        owed.add(key)
    return frozenset(owed)
