"""A detector a user might write: the default one, with a "harmless" shortcut for appends.

The author reasoned that `>>` only adds lines at the end of a file, so earlier reads stay
valid, and dropped those reports. `ledger check-detector examples.append_blind_detector:make`
finds the stale read this causes (`cat f; echo x >> f; cat f` reuses the old output), and
`ledger replay` of the file it writes shows the diff.

Run it from the repository root (the current directory is importable), or point
`--path` at the directory that holds this file.
"""

from __future__ import annotations

import pathlib

from ledger_impl.detectors import default_detector
from ledger_spec import Changes


class AppendBlindDetector:
    name = "append-blind"

    def __init__(self) -> None:
        self.inner = default_detector()

    def before(self, root: pathlib.Path, command: str) -> None:
        self.inner.before(root, command)

    def after(self, root: pathlib.Path, command: str, exit_code: int) -> Changes:
        changes = self.inner.after(root, command, exit_code)
        if ">>" in command:
            return Changes()  # the shortcut: an append "cannot" invalidate what was read
        return changes


def make() -> AppendBlindDetector:
    return AppendBlindDetector()
