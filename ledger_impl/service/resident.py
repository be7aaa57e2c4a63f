"""The resident detector: the inotify event detector behind the session's `changes_since`.

A `DurableSession` asks its detector for the changes since a stored baseline blob. Here the
baseline lives in memory (the event detector's snapshot, kept current by inotify), and the blob
the session stores is only a token naming it: this process (a random nonce) and the number of
reports handed out. A stored blob that is not the latest token means the stored state was
written by someone else since (the in-process fallback hook, a previous service killed with
`kill -9`, a transaction rolled back after the report): the events this process saw do not
line up with that state, so the report is unknown scope. The first report after a start is
unknown scope too; the session ignores it while the workspace has no history.
"""

from __future__ import annotations

import os
import pathlib
import secrets

from ledger_impl.detectors.events import EventDetector
from ledger_spec.values import Changes

TOKEN_PREFIX = b"ledger-resident:"


class ResidentDetector:
    """`changes_since` over one workspace, answered from inotify events drained in memory."""

    name = "resident-inotify"

    def __init__(self, events: EventDetector | None = None) -> None:
        self._events = events if events is not None else EventDetector()
        self._nonce = secrets.token_hex(16).encode()
        self._reports = 0
        self._root: str | None = None

    @property
    def degraded(self) -> str | None:
        """Why the detector is not on events alone right now (watch limit, overflow), if so."""
        return self._events.degraded

    def _token(self) -> bytes:
        return TOKEN_PREFIX + self._nonce + b":" + str(self._reports).encode()

    def changes_since(self, root: os.PathLike[str] | str, blob: bytes | None) -> tuple[Changes, bytes, str | None]:
        root_s = os.path.abspath(os.fspath(root))
        if self._root != root_s:
            self._root = root_s
            self._events.before(pathlib.Path(root_s), "")  # the baseline snapshot, watches added
            self._reports += 1
            return Changes(unknown=True), self._token(), "the service (re)started: changes before it are unknown"
        expected = self._token()
        self._events.before(pathlib.Path(root_s), "")
        changes = self._events.after(pathlib.Path(root_s), "", 0)
        self._reports += 1
        if blob != expected:
            return Changes(unknown=True), self._token(), "the stored state was written outside this service since its last call"
        return changes, self._token(), None

    def drain(self) -> None:
        """Read what piled up in the kernel queue (between calls, so an idle spell cannot overflow it)."""
        if self._root is not None:
            self._events.before(pathlib.Path(self._root), "")

    def close(self) -> None:
        self._events.close()
