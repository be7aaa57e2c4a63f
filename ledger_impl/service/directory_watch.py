"""DirectoryWatch: which of a workspace's directories may have changed since the last call.

The Watchman index compares the stat data of every directory under the root at each call (a
name created and removed before Watchman's thread looked is reported by no one else): one
`lstat` per directory, most of a call's cost on a large tree. A resident service can ask the
kernel instead. Every directory gets an inotify watch (directories only: a few thousand
watches on a 100,000-file tree, far below `fs.inotify.max_user_watches`); a directory whose
own watch reported nothing since it was last looked at has the stat data it had then, so only
the directories an event names, and those not (yet) watched, are looked at again.

Why that holds. A directory's stat data (mode, owner, size, times, link count, inode) moves
only when an entry in it is created, removed or renamed (IN_CREATE, IN_DELETE, IN_MOVED_*, a
subdirectory's included, which moves the link count), when its own attributes change
(IN_ATTRIB), or when the name is another directory now (the parent's watch names it, the old
one reports IN_DELETE_SELF or IN_MOVE_SELF). The kernel queues an event inside the system call
that caused it, so draining the queue at a call reads every change made before it. The watch
of a directory is added before the look whose stat data is kept, so a change after that look
leaves an event.

Where events cannot vouch, every directory is looked at (`suspects` returns None): the queue
overflowed, or the mount table at or below the root changed (a mount raises no event, though
it changes the stat data of the directory mounted over). A directory that cannot be watched
(permissions, the watch limit), or whose watch was lost or may name another path now (it was
renamed, with everything below it), is looked at at every call until a watch is in place.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ledger_impl.detectors.events import mount_table

try:  # Linux only; elsewhere every directory is looked at every call
    from inotify_simple import INotify
    from inotify_simple import flags as _flags
except ImportError:  # pragma: no cover - exercised only off Linux
    INotify = None  # type: ignore[assignment,misc]
    _flags = None  # type: ignore[assignment]

if _flags is not None:
    MASK: int = (
        _flags.CREATE | _flags.DELETE | _flags.MOVED_FROM | _flags.MOVED_TO | _flags.ATTRIB
        | _flags.DELETE_SELF | _flags.MOVE_SELF | _flags.ONLYDIR | _flags.DONT_FOLLOW
    )
    _OVERFLOW = int(_flags.Q_OVERFLOW)
    _IGNORED = int(_flags.IGNORED)
    _GONE_OR_MOVED = int(_flags.MOVE_SELF | _flags.DELETE_SELF | _flags.MOVED_FROM | _flags.DELETE)
else:  # pragma: no cover
    MASK = _OVERFLOW = _IGNORED = _GONE_OR_MOVED = 0


class DirectoryWatch:
    """Directory watches under one root, and what they reported since the last `suspects`."""

    def __init__(self) -> None:
        try:
            self._inotify = INotify() if INotify is not None else None
        except OSError:  # the per-user limit of inotify instances: every directory is looked at
            self._inotify = None
        self._root: str | None = None
        self._mounts: tuple[bytes, ...] | None = None
        self._by_wd: dict[int, str] = {}
        self._by_key: dict[str, int] = {}
        self._dirty: set[str] = set()
        self._overflowed = False

    def suspects(self, root: str, keys: Iterable[str]) -> set[str] | None:
        """The keys among `keys` (directories under `root`, relative to it) whose stat data may
        have changed since the last call, after adding a watch to each one not yet watched
        (those are suspects too); None: any may have, look at every one. The root's own stat
        data is not covered: the caller looks at it every time."""
        if self._inotify is None:
            return None
        mounts = mount_table(root)
        if root != self._root:
            self.reset()
            self._root, self._mounts = root, mounts
            self._watch_all(keys)
            return None
        self.drain()
        everything = self._overflowed or mounts is None or mounts != self._mounts
        self._overflowed, self._mounts = False, mounts
        dirty, self._dirty = self._dirty, set()
        unwatched = self._watch_all(keys)
        return None if everything else (dirty | unwatched)

    def drain(self) -> None:
        """Read what the kernel queued (between calls too, so an idle spell cannot overflow it)."""
        if self._inotify is None or self._root is None:
            return
        while True:
            events = self._inotify.read(timeout=0)
            if not events:
                return
            for event in events:
                self._note(event)

    def reset(self) -> None:
        """Forget every watch: the next call looks at everything."""
        for wd in list(self._by_wd):
            self._unwatch(wd)
        self._dirty.clear()
        if self._inotify is not None:
            self._inotify.read(timeout=0)  # events of the removed watches, now meaningless
        self._root = None

    def close(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None

    def _note(self, event: object) -> None:
        mask, wd, name = event.mask, event.wd, event.name  # type: ignore[attr-defined]
        if mask & _OVERFLOW:
            self._overflowed = True
            return
        key = self._by_wd.get(wd)
        if key is None:
            return  # a watch already forgotten (its directory is looked at until watched again)
        self._dirty.add(key)
        child = f"{key}/{name}" if key and name else name
        if child:
            self._dirty.add(child)  # the name may be a directory replaced or made
        if mask & _IGNORED or (not name and mask & _GONE_OR_MOVED):
            self._forget_below(key)  # the watch is gone, or its inode has another path now
        elif name and mask & _GONE_OR_MOVED:
            self._forget_below(child)  # a directory renamed away: its watches name old paths

    def _forget_below(self, key: str) -> None:
        prefix = key + "/"
        for other in [k for k in self._by_key if k == key or k.startswith(prefix) or not key]:
            self._dirty.add(other)
            self._unwatch(self._by_key[other])

    def _unwatch(self, wd: int) -> None:
        key = self._by_wd.pop(wd)
        if self._by_key.get(key) == wd:
            del self._by_key[key]
        try:
            self._inotify.rm_watch(wd)  # type: ignore[union-attr]
        except OSError:
            pass  # already removed by the kernel (the directory is gone)

    def _watch_all(self, keys: Iterable[str]) -> set[str]:
        """Add a watch to every key not watched; the keys that had none."""
        assert self._root is not None and self._inotify is not None
        unwatched = {key for key in keys if key not in self._by_key}
        for key in unwatched:
            try:
                wd = self._inotify.add_watch(os.path.join(self._root, key), MASK)
            except OSError:
                continue  # gone, not a directory, not readable, or the watch limit: looked at every call
            stale = self._by_wd.get(wd)
            if stale is not None and stale != key:
                # The kernel gave an existing watch: that inode is this path now, not the old one.
                self._dirty.add(stale)
                del self._by_key[stale]
            self._by_wd[wd] = key
            self._by_key[key] = wd
        return unwatched
