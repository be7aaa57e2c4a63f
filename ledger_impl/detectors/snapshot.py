"""SnapshotDetector: compare the whole tree before and after, by stat data and racy-file digests.

Sound on its own, with no help from the kernel: every path below the root is `lstat`'ed at each
`after()`, directories are re-listed only when their stat data changed or was too recent to be
trusted, and files are hashed only when racy (see `ledger_impl.tree_snapshot`).
"""

from __future__ import annotations

import os
import pathlib

from ledger_impl.tree_snapshot import RACY_WINDOW_NS, Snapshot, diff, take_snapshot
from ledger_spec.values import Changes


class SnapshotDetector:
    """Reports every key whose stat data, link target or (racy) content changed.

    The baseline is the snapshot taken at the end of the previous `after()` (or at the first
    `before()`), so changes made between commands, by a background process or the user's
    editor, are reported at the next `after()` rather than lost.
    """

    name = "snapshot"

    def __init__(self, racy_window_ns: int = RACY_WINDOW_NS) -> None:
        self.racy_window_ns = racy_window_ns
        self._root: str | None = None
        self._baseline: Snapshot | None = None

    def before(self, root: pathlib.Path, command: str) -> None:
        root_s = os.path.abspath(root)
        if self._baseline is None or self._root != root_s:
            self._root = root_s
            self._baseline = take_snapshot(root_s, racy_window_ns=self.racy_window_ns)

    def after(self, root: pathlib.Path, command: str, exit_code: int) -> Changes:
        root_s = os.path.abspath(root)
        if self._baseline is None or self._root != root_s:
            # No baseline for this root: nothing proves what the command did.
            self._root = root_s
            self._baseline = take_snapshot(root_s, racy_window_ns=self.racy_window_ns)
            return Changes(unknown=True)
        current = take_snapshot(root_s, self._baseline, racy_window_ns=self.racy_window_ns)
        changes = diff(self._baseline, current)
        self._baseline = current
        return changes
