"""Bracket: a session detector behind the Runtime's `before`/`after` contract.

A session detector (the stat index, Watchman) answers "what changed under `root` since this
baseline" (`changes_since(root, baseline)`) and hands back the next baseline; it keeps nothing
itself, so a hook process can store the baseline beside the ledger it belongs to. The Runtime
and `ledger check-detector` speak `before(root, command)` and `after(root, command, exit_code)`.
`Bracket` is the one adapter between the two: it keeps each root's baseline in a `Baselines`
store between the calls, in memory (Watchman, whose daemon is what persists) or one file per
root under a state directory, read back at every call (the stat index, so that
`check-detector` checks the persisted path a hook process takes).

`after` reports only `Changes`: a report of unknown scope keeps its reason to itself here, since
the contract has no place for one; the Runtime records the unknown scope all the same.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import tempfile
from typing import Callable, Protocol

from ledger_spec.values import Changes

from .. import state_directory


class SessionIndex(Protocol):
    """What a session asks of its detector (`ledger_impl.session.SessionDetector`)."""

    name: str

    def changes_since(
        self, root: os.PathLike[str] | str, blob: bytes | None
    ) -> tuple[Changes, bytes | None, str | None]: ...


class Baselines(Protocol):
    """Where a `Bracket` keeps each root's baseline between `before` and `after`."""

    def get(self, root: str) -> bytes | None: ...

    def put(self, root: str, blob: bytes | None) -> None: ...


class InMemory:
    """Baselines held by this object, for as long as it lives."""

    def __init__(self) -> None:
        self._blobs: dict[str, bytes | None] = {}

    def get(self, root: str) -> bytes | None:
        return self._blobs.get(root)

    def put(self, root: str, blob: bytes | None) -> None:
        self._blobs[root] = blob


class InDirectory:
    """One file per root under `directory` (never under the root), replaced atomically: a
    process killed mid-write leaves the previous baseline, whose next diff still reports
    everything since."""

    def __init__(self, directory: os.PathLike[str] | str) -> None:
        self.directory = pathlib.Path(directory)

    def _path(self, root: str) -> pathlib.Path:
        return self.directory / (hashlib.sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:24] + ".index")

    def get(self, root: str) -> bytes | None:
        try:
            return self._path(root).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, root: str, blob: bytes | None) -> None:
        if blob is None:
            self._path(root).unlink(missing_ok=True)
            return
        state_directory.check_outside(root, self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".index-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
            os.replace(temporary, self._path(root))
        except BaseException:
            os.unlink(temporary)
            raise


class Bracket:
    """`index` behind `before`/`after`, its baselines kept in `baselines`. `canonical` names a
    root the way `index` does (its baselines are keyed by it); `cleanup` runs at `close`, after
    `index.forget(root)` (where the index has one) for every root seen."""

    def __init__(
        self,
        index: SessionIndex,
        baselines: Baselines,
        *,
        canonical: Callable[[str], str] = os.path.abspath,
        cleanup: Callable[[], None] | None = None,
    ) -> None:
        self.index = index
        self.baselines = baselines
        self.name = index.name
        self._canonical = canonical
        self._cleanup = cleanup
        self._roots: set[str] = set()

    def before(self, root: os.PathLike[str] | str, command: str) -> None:
        root_s = self._canonical(os.fspath(root))
        self._roots.add(root_s)
        if self.baselines.get(root_s) is None:
            _, blob, _ = self.index.changes_since(root_s, None)
            self.baselines.put(root_s, blob)

    def after(self, root: os.PathLike[str] | str, command: str, exit_code: int) -> Changes:
        root_s = self._canonical(os.fspath(root))
        stored = self.baselines.get(root_s)
        changes, blob, _ = self.index.changes_since(root_s, stored)
        if blob is not stored:  # an index hands back the stored bytes when nothing changed
            self.baselines.put(root_s, blob)
        return changes

    def close(self) -> None:
        forget = getattr(self.index, "forget", None)
        if forget is not None:
            for root in self._roots:
                forget(root)
        self._roots.clear()
        if self._cleanup is not None:
            self._cleanup()
