"""The resident detectors: a session's `changes_since` answered from a baseline held in memory.

A `DurableSession` asks its detector for the changes since a stored baseline blob. In the
service the baseline lives in memory, and the blob the session stores is only a token naming
it: this process (a random nonce) and the number of reports handed out. A stored blob that is
not the latest token means the stored state was written by someone else since (the in-process
fallback hook, a previous service killed with `kill -9`, a transaction rolled back after the
report): what this process saw does not line up with that state, so the report is unknown
scope. The first report after a start is unknown scope too; the session ignores it while the
workspace has no history.

- `ResidentDetector`: the inotify event detector, kept current by the kernel's events.
- `ResidentWatchman`: the Watchman index with its baseline (the clock, and the stat data of
  every directory and multiply linked file) kept as a value, so that no call encodes, stores
  and decodes it again: on a large tree that codec, not the query, was most of a call's cost.
  A stored blob that is a real Watchman baseline (written by the in-process fallback hook,
  which asks the same daemon) is decoded and used as the hook would use it. Directories are
  looked at only where inotify says they may have changed (`directory_watch`).
"""

from __future__ import annotations

import os
import pathlib

from ledger_impl.detectors import watchman
from ledger_impl.detectors.baseline import read_stored, unusable
from ledger_impl.detectors.events import EventDetector
from ledger_impl.detectors.protocol import BETWEEN_STEPS, Bracketed, Moment, Report, Tokens
from ledger_spec.degraded import Cause, Degraded
from ledger_spec.values import Changes

from .directory_watch import DirectoryWatch

TOKEN_PREFIX = b"ledger-resident:"
RESTARTED = unusable(Cause.SERVICE_RESTARTED)
WRITTEN_ELSEWHERE = unusable(Cause.WRITTEN_ELSEWHERE)


class ResidentDetector(Bracketed):
    """`changes_since` over one workspace, answered from inotify events drained in memory:
    the event detector behind the protocol's one adapter, with the service's reasons."""

    name = "resident-inotify"

    def __init__(self, events: EventDetector | None = None) -> None:
        super().__init__(
            events if events is not None else EventDetector(),
            first=RESTARTED, stale=WRITTEN_ELSEWHERE, tokens=Tokens(TOKEN_PREFIX),
        )
        self.name = ResidentDetector.name

    @property
    def _events(self) -> EventDetector:
        return self.inner  # type: ignore[no-any-return]

    def drain(self) -> None:
        """Read what piled up in the kernel queue (between calls, so an idle spell cannot overflow it)."""
        if self._root is not None:
            self._events.before(pathlib.Path(self._root), BETWEEN_STEPS)


class ResidentWatchman:
    """`changes_since` over one workspace, asked of Watchman since a baseline held in memory."""

    name = "resident-watchman"

    def __init__(self, index: watchman.WatchmanIndex, directories: DirectoryWatch | None = None) -> None:
        self.index = index
        self._directories = directories if directories is not None else DirectoryWatch()
        self._tokens = Tokens(TOKEN_PREFIX)
        self._latest: watchman.Baseline | None = None

    def changes_since(self, root: os.PathLike[str] | str, blob: bytes | None, moment: Moment = None) -> Report:
        root_s = os.path.realpath(root)
        stored: watchman.Baseline | None
        problem: Degraded | None
        if blob is not None and blob.startswith(TOKEN_PREFIX):
            if self._latest is not None and blob == self._tokens.latest():
                stored, problem = self._latest, None
            else:
                stored, problem = None, RESTARTED if self._latest is None else WRITTEN_ELSEWHERE
        else:
            stored, problem = read_stored(
                blob, lambda data: watchman.Baseline.decode(data, root_s), "Watchman clock"
            )
        # Forgotten before the query: if it fails, no later call may use the older baseline.
        self._latest = None
        changes, baseline, problem = self.index.compare(root_s, stored, problem, self._directories.suspects)
        if baseline is None:
            return changes, None, problem
        self._latest = baseline
        return changes, self._tokens.issue(), problem

    @property
    def daemon(self) -> watchman.Daemon:
        return self.index.daemon

    def drain(self) -> None:
        """Read the directory events queued (between calls, so an idle spell cannot overflow it)."""
        self._directories.drain()

    def close(self) -> None:
        self._directories.close()  # a Watchman daemon outlives the service on purpose
