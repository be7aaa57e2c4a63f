"""The stat index: the snapshot diff with its baseline kept on disk, like git's index.

A hook process lives for one call, so the baseline a diff needs cannot stay in memory. The
stat index is the tree snapshot of `ledger_impl.tree_snapshot` (stat data per path, digests of
racily-clean files, directory listings reused when the directory's stat data is unchanged),
serialized to bytes. `changes_since(root, blob)` scans the tree against the stored baseline and
returns the changes and the new blob; it writes nothing, so the caller decides where the blob
lives (the session keeps it in the same SQLite transaction as the ledger, so a crash can never
leave a baseline that is newer than the ledger it belongs to).

The index speaks the one detector protocol (`ledger_impl.detectors.protocol`) as it is, so the
Runtime and `ledger check-detector ledger_impl.detectors.stat_index:make` drive the same
`changes_since` a hook process does, with the blob kept in memory instead of in SQLite.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import pathlib

from ledger_impl.detectors.baseline import read_stored, unusable
from ledger_spec.degraded import Cause, Degraded
from ledger_impl.detectors.protocol import Before, Moment, Report, deferred
from ledger_impl.tree_snapshot import RACY_WINDOW_NS, Entry, Snapshot, diff, take_snapshot
from ledger_spec.values import Changes
from ledger_spec.errors import UnreadableState

# Bumped whenever the layout of the encoded snapshot changes; a blob of another version is
# never decoded (it proves nothing, so the next scan reports unknown scope).
INDEX_FORMAT = 2
_DIGEST_SIZE = 32


class IndexDamaged(UnreadableState, ValueError):
    """A stored index that cannot be shown intact (wrong format, checksum, or shape)."""


def encode(snapshot: Snapshot) -> bytes:
    """The snapshot as bytes: a checksum, then marshal of plain tuples and lists (no code).

    Keys and entries go in two parallel lists rather than one dict: marshal reads two flat
    lists faster than a dict, and `decode` rebuilds the mapping in one C-level pass."""
    entries = snapshot.entries
    body = marshal.dumps(
        (
            INDEX_FORMAT,
            snapshot.root,
            list(entries),
            list(map(tuple, entries.values())),  # (sig, racy, digest): marshal takes exact tuples only
            snapshot.listings,
            tuple(sorted(snapshot.unreadable)),
            snapshot.taken_at_ns,
        )
    )
    return hashlib.blake2b(body, digest_size=_DIGEST_SIZE).digest() + body


def decode(blob: bytes) -> Snapshot:
    """The snapshot `encode` wrote; `IndexDamaged` if the bytes cannot be shown to be one."""
    checksum, body = blob[:_DIGEST_SIZE], blob[_DIGEST_SIZE:]
    if len(checksum) != _DIGEST_SIZE or hashlib.blake2b(body, digest_size=_DIGEST_SIZE).digest() != checksum:
        raise IndexDamaged("stat index checksum mismatch")
    try:
        version, *fields = marshal.loads(body)
    except (ValueError, EOFError, TypeError) as error:
        raise IndexDamaged(f"stat index unreadable: {error}") from None
    if version != INDEX_FORMAT:
        raise IndexDamaged(f"stat index format {version!r}, expected {INDEX_FORMAT}")
    try:
        root, keys, values, listings, unreadable, taken_at = fields
        entries = dict(zip(keys, map(Entry._make, values), strict=True))
    except (ValueError, TypeError) as error:
        raise IndexDamaged(f"stat index malformed: {error}") from None
    return Snapshot(root, entries, listings, frozenset(unreadable), taken_at)


def same_snapshot(baseline: Snapshot, current: Snapshot) -> bool:
    """Whether `current` records exactly what `baseline` does, apart from when it was taken.

    Then the stored index can stay as it is: `taken_at_ns` of a baseline is never read (each
    scan judges raciness against its own clock), so re-encoding would only cost time. Entries
    the scan kept are the baseline's own objects, so the comparison is mostly identity checks.
    """
    return (
        baseline.root == current.root
        and baseline.unreadable == current.unreadable
        and baseline.entries == current.entries
        and baseline.listings == current.listings
    )


def changes_since(
    root: os.PathLike[str] | str, blob: bytes | None, *, racy_window_ns: int = RACY_WINDOW_NS
) -> tuple[Changes, bytes, Degraded | None]:
    """What changed under `root` since the index `blob` was taken, the new index, and why the
    report is unknown scope when the stored index could not be used (None otherwise).

    With no stored index there is nothing to compare against: the report is unknown scope and
    the caller decides whether that matters (it does not for a session with no history)."""
    root_s = os.path.abspath(os.fspath(root))
    baseline, problem = read_stored(blob, decode, "stat index", IndexDamaged)
    if baseline is not None and baseline.root != root_s:
        problem, baseline = unusable(Cause.BASELINE_OF_ANOTHER_ROOT, "stat index", repr(baseline.root), repr(root_s)), None
    current = take_snapshot(root_s, baseline, racy_window_ns=racy_window_ns)
    if baseline is None:
        return Changes(unknown=True), encode(current), problem
    changes = diff(baseline, current)
    if blob is not None and changes.empty and same_snapshot(baseline, current):
        return changes, blob, None
    return changes, encode(current), None


class StatIndex:
    """The default detector of a `DurableSession`: `changes_since` over the local tree."""

    name = "stat-index"

    def __init__(self, racy_window_ns: int = RACY_WINDOW_NS) -> None:
        self.racy_window_ns = racy_window_ns

    def changes_since(self, root: os.PathLike[str] | str, blob: bytes | None, moment: Moment = None) -> Report:
        if isinstance(moment, Before) and blob is not None:
            return deferred(blob)  # the report after the command covers this interval too
        return changes_since(root, blob, racy_window_ns=self.racy_window_ns)


def make() -> StatIndex:
    """The stat index for `ledger check-detector`."""
    return StatIndex()
