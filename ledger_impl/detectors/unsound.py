"""Known-unsound edit detectors, shipped as documentation of real failure modes.

Each one is wrong in a way a plausible detector is wrong, and the safety hunt finds a stale
Reuse for each within the `ci` profile; the counterexamples it found are stored under
`counterexamples/` and replayed by the test suite. Never use these in a Runtime.

  optimistic_rules   reads the command text and treats what it cannot see into (`python
                     tool.py`, a test run, `find -exec`) as "no change": the detector the
                     paper's referee worries about
  stat_only          compares size and mtime only: no ctime, no racy-clean hashing, so a
                     same-size rewrite that puts the old mtime back (or lands in the same
                     clock tick) goes unseen, as does a chmod
  blind              reports nothing at all: the counters never move (the fingerprint alone)
  events_by_name     the inotify detector with its link tracking as it was before the
                     thorough hunt: a hard link made and removed within one command (`ln -f`
                     onto a name of the same inode), or a hard link to a symlink, changes an
                     inode's ctime and link count under names no event mentions
  events_by_directory
                     the inotify detector as it was before inode watches: directories only,
                     so a file written through a hard link made outside the root (after the
                     session started) raises no event the detector sees
  events_without_closes
                     the inotify detector as it was before its file watches took a close
                     without a write: `chattr` changes a file's flags and ctime through an
                     ioctl that raises no other event
  watchman_by_name   the Watchman detector trusting the names Watchman gives, as first
                     written: `ln` raises an event for the new name only, so the old name's
                     link count and ctime change unreported
"""

from __future__ import annotations

import os
import pathlib

from ledger_spec import Changes

from .events import EventDetector
from .rules import RulesDetector


def events_by_name() -> EventDetector:
    """The inotify detector tracking only regular files' links, through names events mention."""
    return EventDetector(complete_link_tracking=False, watch_inodes=False)


def events_by_directory() -> EventDetector:
    """The inotify detector with directory watches only, no watch on any file's inode."""
    return EventDetector(watch_inodes=False)


def events_without_closes() -> EventDetector:
    """The inotify detector whose file watches leave IN_CLOSE_NOWRITE out (misses `chattr`)."""
    return EventDetector(watch_closes=False)


def watchman_by_name() -> object:
    """The Watchman detector without its hard-link tracking (needs a `watchman` binary)."""
    from .watchman import make

    return make(track_links=False)


def optimistic_rules() -> RulesDetector:
    """The rules detector with opaque commands reported as changing nothing."""
    return RulesDetector(unknown_for_opaque=False)


class StatOnlyDetector:
    """Reports a key when its size or mtime changed, or it appeared or disappeared.

    This is the check many build tools make. It misses every change that keeps both: a
    same-size rewrite within one timestamp tick, a rewrite followed by `os.utime` to the old
    mtime (what `cp -p`, `rsync -t` and `touch -r` do), and mode changes (`chmod`).
    """

    name = "stat-only"

    def __init__(self) -> None:
        self._root: str | None = None
        self._baseline: dict[str, tuple[int, int]] | None = None

    def before(self, root: pathlib.Path, command: str) -> None:
        root_s = os.path.abspath(root)
        if self._baseline is None or self._root != root_s:
            self._root, self._baseline = root_s, _sizes_and_mtimes(root_s)

    def after(self, root: pathlib.Path, command: str, exit_code: int) -> Changes:
        root_s = os.path.abspath(root)
        if self._baseline is None or self._root != root_s:
            self._root, self._baseline = root_s, _sizes_and_mtimes(root_s)
            return Changes(unknown=True)
        now = _sizes_and_mtimes(root_s)
        changed = {key for key in self._baseline.keys() | now.keys() if self._baseline.get(key) != now.get(key)}
        self._baseline = now
        return Changes(frozenset(changed))


def _sizes_and_mtimes(root: str) -> dict[str, tuple[int, int]]:
    table: dict[str, tuple[int, int]] = {}
    for directory, names, files in os.walk(root):
        for name in names + files:
            path = os.path.join(directory, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            table[os.path.relpath(path, root).replace(os.sep, "/")] = (st.st_size, st.st_mtime_ns)
    return table


def stat_only() -> StatOnlyDetector:
    """Size + mtime comparison, without ctime or the racy-clean rule."""
    return StatOnlyDetector()


__all__ = ["StatOnlyDetector", "optimistic_rules", "stat_only"]


class BlindDetector:
    """Reports that nothing ever changed: the counters never move. With it, only the
    observation fingerprint stands between an edit and a stale Reuse, which is how the
    defense-in-depth measurement isolates the fingerprint's share."""

    name = "blind"

    def before(self, root: str, command: str) -> None:
        return None

    def after(self, root: str, command: str, exit_code: int) -> Changes:
        return Changes()


def blind() -> BlindDetector:
    return BlindDetector()
