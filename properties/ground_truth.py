"""Independent ground truth: what is on disk under a root, and which paths changed between two looks.

This module is the judge of every detector, so it shares no code with them: it walks the tree
with `os.walk`, calls `lstat` on every entry, reads each symbolic link's target and hashes every
regular file's content. Nothing is skipped (`.git/` included) and no link is followed.

One definition of "changed" serves the hunt's oracle, the detector scenario tests and `ledger
audit`: a path changed if it appeared, disappeared, or any of its kind, mode, owner, size,
mtime, ctime, inode, link count, link target or content differs. Only atime is ignored, since
reading a file sets it.

Hashing every file at every step is most of a hunt step's cost, so a `HashCache` may be passed
in: it reuses a digest only when the file's (device, inode, size, mtime_ns, ctime_ns) is the
same as when the digest was taken *and* that stat was taken well after the file's last change
(outside `RACY_NS`). A file written within the same clock tick as its hashing is re-hashed every
time, so a same-size rewrite in that tick cannot hide behind a cached digest.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from typing import NamedTuple

# Timestamps come from a coarse kernel clock and some filesystems keep whole seconds; a digest
# taken within this window of the file's last mtime/ctime is not trusted for later looks.
RACY_NS: int = 2_000_000_000

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

    def __init__(self) -> None:
        self._digests: dict[tuple[int, int, int, int, int], str] = {}
        self.hashed = 0
        self.reused = 0

    def digest(self, path: str, st: os.stat_result) -> str | None:
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        cached = self._digests.get(key)
        if cached is not None:
            self.reused += 1
            return cached
        value = _hash(path)
        self.hashed += 1
        newest_change = max(st.st_mtime_ns, st.st_ctime_ns)
        if value is not None and time.time_ns() - newest_change > RACY_NS:
            self._digests[key] = value
        return value


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
    """Record every path under `root` as it is now."""
    top = os.fspath(root)
    nodes: dict[str, Node] = {}
    unreadable: set[str] = set()

    def key_of(path: str) -> str:
        relative = os.path.relpath(path, top)
        return relative.replace(os.sep, "/")

    def on_error(error: OSError) -> None:
        unreadable.add(key_of(error.filename) if error.filename else ".")

    try:
        nodes["."] = _node(top, cache)
    except OSError:
        unreadable.add(".")
        return Tree(top, nodes, frozenset(unreadable))
    for directory, subdirs, files in os.walk(top, onerror=on_error, followlinks=False):
        for name in subdirs + files:
            path = os.path.join(directory, name)
            try:
                nodes[key_of(path)] = _node(path, cache)
            except OSError:
                unreadable.add(key_of(path))
    return Tree(top, nodes, frozenset(unreadable))


def changed(before: Tree, after: Tree, *, include_root: bool = False) -> frozenset[str]:
    """Paths that appeared, disappeared or differ in anything but atime between two looks."""
    keys = set(before.nodes) | set(after.nodes)
    if not include_root:
        keys.discard(".")
    return frozenset(key for key in keys if before.nodes.get(key) != after.nodes.get(key))
