"""The persisted stat index: byte round trip, a damaged index never trusted, detection across
separate detector instances (as separate processes would be), and the ci hunt."""

from __future__ import annotations

import hashlib
import marshal
import os
import time
from pathlib import Path

import pytest

from ledger_impl.detectors.baseline import unusable
from ledger_spec.degraded import Cause
from ledger_impl.detectors import stat_index
from ledger_impl.detectors.stat_index import (
    INDEX_FORMAT, IndexDamaged, changes_since, decode, encode, same_snapshot,
)
from ledger_impl.tree_snapshot import take_snapshot


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "d" / "e").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "d" / "e" / "b.txt").write_text("beta\n")
    os.symlink("a.txt", root / "link")
    return root


def test_encode_decode_round_trips_every_field(tree: Path) -> None:
    snapshot = take_snapshot(tree)
    assert decode(encode(snapshot)) == snapshot


@pytest.mark.parametrize("damage", [lambda b: b[:-1], lambda b: b[:40] + bytes([b[40] ^ 1]) + b[41:], lambda b: b""])
def test_a_damaged_index_gives_unknown_scope_and_a_reason(tree: Path, damage: object) -> None:
    _, blob, _ = changes_since(tree, None)
    changes, fresh_blob, problem = changes_since(tree, damage(blob))  # type: ignore[operator]
    assert changes.unknown and problem is not None and problem.cause is Cause.BASELINE_UNREADABLE
    assert changes_since(tree, fresh_blob)[0].empty  # the new index is sound again


@pytest.mark.parametrize("name", ["other", "z-other"])  # sorting before and after "root"
def test_an_index_of_another_root_is_not_used(tree: Path, tmp_path: Path, name: str) -> None:
    other = tmp_path / name
    other.mkdir()
    _, blob, _ = changes_since(other, None)
    changes, _, problem = changes_since(tree, blob)
    assert changes.unknown and problem == unusable(
        Cause.BASELINE_OF_ANOTHER_ROOT, "stat index", repr(os.path.abspath(other)), repr(os.path.abspath(tree)))


# A window short enough that a short sleep ages every file out of it, so the shortcuts for
# entries proved by stat data alone (not by a digest) are the ones exercised.
SHORT_WINDOW_NS = 50_000_000


def aged_index(root: Path) -> bytes:
    """An index of `root` taken once every file is older than `SHORT_WINDOW_NS`."""
    time.sleep(0.15)
    _, blob, _ = changes_since(root, None, racy_window_ns=SHORT_WINDOW_NS)
    time.sleep(0.15)
    return blob


def restore_times(path: Path, before: os.stat_result) -> None:
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns), follow_symlinks=False)


def test_a_same_size_rewrite_with_mtime_restored_in_an_unchanged_directory_is_seen(tree: Path) -> None:
    """The directory's listing is reused (its stat data did not change) and the file's size and
    mtime are as before: only the file's own lstat (ctime) can show the write."""
    blob = aged_index(tree)
    target, directory = tree / "d" / "e" / "b.txt", tree / "d" / "e"
    file_before, dir_before = target.stat(), directory.stat()
    target.write_text("BETA\n")
    restore_times(target, file_before)
    assert directory.stat().st_mtime_ns == dir_before.st_mtime_ns
    time.sleep(0.15)  # out of the racy window again: the stat comparison alone must see it
    changes, _, _ = changes_since(tree, blob, racy_window_ns=SHORT_WINDOW_NS)
    assert changes.paths == frozenset({"d/e/b.txt"}) and not changes.unknown


def test_a_file_replaced_by_rename_in_a_directory_whose_mtime_is_restored_is_seen(tree: Path) -> None:
    """`mv new b.txt` then `touch -d` on the directory: same names, same mtimes, new inode."""
    blob = aged_index(tree)
    target, directory = tree / "d" / "e" / "b.txt", tree / "d" / "e"
    file_before, dir_before = target.stat(), directory.stat()
    replacement = directory / "b.new"
    replacement.write_text("BETA\n")
    restore_times(replacement, file_before)
    os.replace(replacement, target)
    restore_times(directory, dir_before)
    assert sorted(os.listdir(directory)) == ["b.txt"]
    time.sleep(0.15)  # out of the racy window again: the stat comparison alone must see it
    changes, _, _ = changes_since(tree, blob, racy_window_ns=SHORT_WINDOW_NS)
    assert "d/e/b.txt" in changes.paths and not changes.unknown


def test_an_unchanged_tree_keeps_the_stored_bytes_and_a_change_is_reported_once(tree: Path) -> None:
    """The index is rewritten only when the scan saw something new; a report must still
    advance the baseline, or the same change would be reported again at the next call."""
    blob = aged_index(tree)
    unchanged, kept, _ = changes_since(tree, blob, racy_window_ns=SHORT_WINDOW_NS)
    assert unchanged.empty and kept == blob
    os.chmod(tree / "a.txt", 0o600)
    time.sleep(0.15)
    changed, advanced, _ = changes_since(tree, kept, racy_window_ns=SHORT_WINDOW_NS)
    assert changed.paths == frozenset({"a.txt"}) and advanced != kept
    assert changes_since(tree, advanced, racy_window_ns=SHORT_WINDOW_NS)[0].empty


def test_an_index_of_the_previous_format_is_not_trusted(tree: Path) -> None:
    import hashlib
    import marshal

    snapshot = take_snapshot(tree)
    old_body = marshal.dumps((1, snapshot.root, {k: tuple(e) for k, e in snapshot.entries.items()},
                              snapshot.listings, (), snapshot.taken_at_ns))
    old_blob = hashlib.blake2b(old_body, digest_size=32).digest() + old_body
    changes, _, problem = changes_since(tree, old_blob)
    assert changes.unknown and problem is not None and "format 1" in str(problem)


@pytest.mark.parametrize("forged", [bytes(32), b"\xff" * 32], ids=["low-checksum", "high-checksum"])
def test_a_well_formed_body_under_a_wrong_checksum_is_damaged(tree: Path, forged: bytes) -> None:
    # The body decodes perfectly; only the checksum says it is not what was written.
    body = encode(take_snapshot(tree))[32:]
    with pytest.raises(IndexDamaged, match="checksum"):
        decode(forged + body)


def test_an_index_that_settled_is_rewritten_though_nothing_changed(tree: Path) -> None:
    # Taken with every file racy, then rescanned once none is: no change, but the entries now
    # say "settled", so the index is stored again and the next scan need not hash the files.
    _, racy, _ = changes_since(tree, None, racy_window_ns=10**18)
    assert any(entry.racy for entry in decode(racy).entries.values())
    unchanged, settled, _ = changes_since(tree, racy, racy_window_ns=0)
    assert unchanged.empty
    assert settled != racy and not any(entry.racy for entry in decode(settled).entries.values())


def _signed(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=32).digest() + body


@pytest.mark.parametrize(
    "payload,reason",
    [
        (5, "unreadable"), ((), "unreadable"), ((INDEX_FORMAT, "/root"), "malformed"),
        ((INDEX_FORMAT, "/root", ["a"], [5], {}, (), 0), "malformed"),
    ],
    ids=["not-a-tuple", "empty-tuple", "short-tuple", "entry-not-a-tuple"],
)
def test_a_checksummed_body_of_the_wrong_shape_is_damaged(payload: object, reason: str) -> None:
    # Intact bytes that are not an index (another writer, a bug): refused, never a crash.
    with pytest.raises(IndexDamaged, match=reason):
        decode(_signed(marshal.dumps(payload)))


def test_an_index_of_a_later_format_is_not_trusted(tree: Path) -> None:
    # A newer Ledger may mean something else by the same fields: only this format is read.
    snapshot = take_snapshot(tree)
    fields = (snapshot.root, list(snapshot.entries), list(map(tuple, snapshot.entries.values())),
              snapshot.listings, tuple(sorted(snapshot.unreadable)), snapshot.taken_at_ns)
    assert decode(_signed(marshal.dumps((INDEX_FORMAT, *fields)))) == snapshot
    with pytest.raises(IndexDamaged, match=f"format {INDEX_FORMAT + 1}"):
        decode(_signed(marshal.dumps((INDEX_FORMAT + 1, *fields))))


def test_snapshots_of_different_roots_are_never_the_same(tree: Path) -> None:
    snapshot = take_snapshot(tree)
    assert same_snapshot(snapshot, snapshot._replace(taken_at_ns=snapshot.taken_at_ns + 1))
    for root in (snapshot.root + "2", snapshot.root[:-1]):
        assert not same_snapshot(snapshot, snapshot._replace(root=root))
    more = snapshot._replace(unreadable=snapshot.unreadable | {"d/e"})
    assert not same_snapshot(snapshot, more) and not same_snapshot(more, snapshot)


def test_an_index_with_more_keys_than_entries_is_damaged(tree: Path) -> None:
    # Pairing them up to the shorter list would silently drop keys from the baseline.
    snapshot = take_snapshot(tree)
    keys = list(snapshot.entries)
    values = list(map(tuple, snapshot.entries.values()))[:-1]
    body = marshal.dumps((INDEX_FORMAT, snapshot.root, keys, values, snapshot.listings, (), snapshot.taken_at_ns))
    with pytest.raises(IndexDamaged, match="malformed"):
        decode(_signed(body))


def test_a_checksummed_truncated_body_is_damaged() -> None:
    body = marshal.dumps((INDEX_FORMAT, "/root", [], [], {}, (), 0))
    for cut in (body[:-3], b""):
        with pytest.raises(IndexDamaged, match="unreadable"):
            decode(_signed(cut))
