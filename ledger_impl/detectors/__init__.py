"""Edit detectors: what changed in the workspace around each command.

A detector has `name`, `before(root, command)` and `after(root, command, exit_code) -> Changes`
(see DESIGN.md, "Edit detector"). `default_detector()` is the one the runtime uses unless told
otherwise.

The detector classes are loaded on first use (PEP 562): importing one detector module, as the
hook's session does with `stat_index`, must not load inotify (ctypes) or the rules detector.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger_impl.detectors.events import EventDetector
    from ledger_impl.detectors.rules import RulesDetector
    from ledger_impl.detectors.snapshot import SnapshotDetector

_EXPORTS: dict[str, str] = {
    "EventDetector": "ledger_impl.detectors.events",
    "RulesDetector": "ledger_impl.detectors.rules",
    "SnapshotDetector": "ledger_impl.detectors.snapshot",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ledger_impl.detectors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def default_detector() -> EventDetector | SnapshotDetector:
    """The sound default: inotify events confirmed by stat, falling back to a full snapshot diff.

    Without inotify (not Linux, or `inotify_simple` missing) the EventDetector runs the full
    snapshot diff at every command by itself; returning the SnapshotDetector then says so.
    """
    from ledger_impl.detectors import events
    from ledger_impl.detectors.snapshot import SnapshotDetector

    if events.INotify is None:
        return SnapshotDetector()
    return events.EventDetector()


__all__ = ["EventDetector", "RulesDetector", "SnapshotDetector", "default_detector"]
