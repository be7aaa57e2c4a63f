"""Edit detectors: what changed in the workspace around each command.

A detector has `name`, `before(root, command)` and `after(root, command, exit_code) -> Changes`
(see DESIGN.md, "Edit detector"). `default_detector()` is the one the runtime uses unless told
otherwise.
"""

from __future__ import annotations

from ledger_impl.detectors.events import EventDetector
from ledger_impl.detectors.rules import RulesDetector
from ledger_impl.detectors.snapshot import SnapshotDetector


def default_detector() -> EventDetector | SnapshotDetector:
    """The sound default: inotify events confirmed by stat, falling back to a full snapshot diff.

    Without inotify (not Linux, or `inotify_simple` missing) the EventDetector runs the full
    snapshot diff at every command by itself; returning the SnapshotDetector then says so.
    """
    from ledger_impl.detectors import events

    if events.INotify is None:
        return SnapshotDetector()
    return EventDetector()


__all__ = ["EventDetector", "RulesDetector", "SnapshotDetector", "default_detector"]
