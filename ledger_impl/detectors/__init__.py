"""Edit detectors: what changed in the workspace around each command.

Every driver asks a detector one question, `changes_since(root, baseline, moment)`
(`ledger_impl.detectors.protocol`). The stat index and Watchman answer it as they are; a
detector that keeps its baseline in memory may instead follow DESIGN.md's "Edit detector"
contract (`before(root, command)`, `after(root, command, exit_code) -> Changes`), as the event,
snapshot, rules and channel detectors and users' detectors do, and is put behind the protocol
by its one adapter. `default_detector()` is the one the runtime uses unless told otherwise;
`session_detector()` is the one a `DurableSession` (the hooks) uses unless told otherwise.

The detector classes are loaded on first use (PEP 562): importing one detector module, as the
hook's session does with `stat_index`, must not load inotify (ctypes) or the rules detector.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger_impl.detectors.stat_index import StatIndex
    from ledger_impl.detectors.watchman import WatchmanIndex
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


SESSION_DETECTOR_VARIABLE = "LEDGER_SESSION_DETECTOR"
SESSION_DETECTORS = ("stat-index", "watchman")


def session_detector(state_dir: str | os.PathLike[str] | None = None) -> StatIndex | WatchmanIndex:
    """The detector of a durable session: Watchman when a `watchman` binary is on PATH (its
    daemon's files under `state_dir`), else the persisted stat index, which needs no daemon.
    `$LEDGER_SESSION_DETECTOR` (`stat-index` or `watchman`) forces one; any other value is an
    error, not a silent default."""
    from ledger_impl.detectors import watchman
    from ledger_impl.detectors.stat_index import StatIndex

    return watchman.WatchmanIndex(state_dir) if prefers_watchman() else StatIndex()


def prefers_watchman() -> bool:
    """Whether a durable session (or `ledger serve`) uses Watchman: forced by
    `$LEDGER_SESSION_DETECTOR`, else whenever a `watchman` binary is on PATH."""
    from ledger_impl.detectors import watchman

    forced = os.environ.get(SESSION_DETECTOR_VARIABLE) or None
    if forced is not None and forced not in SESSION_DETECTORS:
        raise ValueError(f"{SESSION_DETECTOR_VARIABLE}={forced!r}: choose one of {', '.join(SESSION_DETECTORS)}")
    return forced == "watchman" or (forced is None and watchman.available())


__all__ = ["EventDetector", "RulesDetector", "SnapshotDetector", "default_detector", "prefers_watchman", "session_detector"]
