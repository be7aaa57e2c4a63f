"""The tree snapshot's own contracts (`ledger_impl.tree_snapshot`), below the detectors built on it.

The detectors' tests and hunts judge what a snapshot diff reports. These check two things
they cannot see: a file whose hash proves nothing (replaced or unreadable while it was read)
is kept racy with no digest, so the next comparison reports it; and an entry that stat data
proves unchanged is the previous snapshot's own object, which `changed_keys` skips without
comparing (the scan runs at every hook call). Written for the survivors of the module's
operator mutation (docs/mutation/survivors.md).
"""

from __future__ import annotations

import contextlib
import os
import time
import types
from pathlib import Path

import pytest
from module_os import ModuleOs

from ledger_impl import tree_snapshot
from ledger_impl.tree_snapshot import Entry, changed_keys, make_entry, take_snapshot


@pytest.mark.parametrize("order", ["lower", "higher"])
def test_a_file_replaced_while_it_is_hashed_is_left_racy_with_no_digest(tmp_path: Path, order: str) -> None:
    """Replaced between the scan's lstat and the hash's open, by a file with a lower or a
    higher inode number: same size, so only the inode tells them apart."""
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_text("before\n")
    two.write_text("after!\n")
    low, high = sorted((one, two), key=lambda path: os.lstat(path).st_ino)
    path, replacement = (high, low) if order == "lower" else (low, high)
    seen = os.lstat(path)
    os.replace(replacement, path)
    entry, readable = make_entry(os.fspath(path), seen, None, racy_threshold_ns=0)
    assert entry == Entry(tree_snapshot._signature(seen, None), True, None)
    assert readable, "the path was read; only its content is unproved"



def test_a_link_replaced_before_its_target_is_read_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "link"
    path.symlink_to("target")
    seen = os.lstat(path)
    path.unlink()
    path.write_text("now a file\n")  # readlink fails: the entry's link target is unknown
    entry, readable = make_entry(os.fspath(path), seen, None, racy_threshold_ns=time.time_ns() + 10**12)
    assert not readable and entry.sig[-1] is None


def test_a_file_deleted_between_listing_and_stat_is_gone_not_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    listing = os.scandir

    def deleting_scandir(path: str) -> object:
        entries = list(listing(path))
        (tmp_path / "b.txt").unlink(missing_ok=True)  # after the listing, before each stat
        return contextlib.nullcontext(iter(entries))

    monkeypatch.setattr(tree_snapshot, "os", ModuleOs(scandir=deleting_scandir))
    snapshot = take_snapshot(tmp_path)
    assert snapshot.listings[""] == ("a.txt",) and "b.txt" not in snapshot.entries
    assert snapshot.unreadable == frozenset()


def test_an_entry_stat_data_proves_unchanged_is_the_previous_snapshot_s_own(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a.txt", "sub/b.txt"):
        (tmp_path / name).write_text(name)
    time.sleep(0.05)
    first = take_snapshot(tmp_path, racy_window_ns=10_000_000)  # 10 ms: every file is old by now
    assert not any(entry.racy for key, entry in first.entries.items() if key)
    second = take_snapshot(tmp_path, first, racy_window_ns=10_000_000)
    for key in ("a.txt", "sub", "sub/b.txt"):
        assert second.entries[key] is first.entries[key], key
    assert changed_keys(first.entries, second.entries) == set()



def test_a_file_that_fails_while_it_is_hashed_is_left_racy_with_no_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.txt"
    path.write_text("content\n")
    seen = os.lstat(path)

    def failing_read(fd: int, size: int) -> bytes:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(tree_snapshot, "os", ModuleOs(read=failing_read))
    entry, readable = make_entry(os.fspath(path), seen, None, racy_threshold_ns=0)
    assert entry == Entry(tree_snapshot._signature(seen, None), True, None) and readable


def test_a_file_replaced_by_a_link_before_it_is_hashed_is_left_racy_with_no_digest(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("content\n")
    seen = os.lstat(path)
    path.unlink()
    path.symlink_to("elsewhere")  # the hash opens without following links: ELOOP
    entry, readable = make_entry(os.fspath(path), seen, None, racy_threshold_ns=0)
    assert entry == Entry(tree_snapshot._signature(seen, None), True, None) and readable


@pytest.mark.parametrize("shift", [1, -1], ids=["higher", "lower"])
def test_a_file_that_moved_to_another_device_while_it_was_hashed_proves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shift: int
) -> None:
    """The same inode number on another device is another file (a mount over the directory)."""
    path = tmp_path / "a.txt"
    path.write_text("content\n")
    seen = os.lstat(path)
    real_fstat = os.fstat

    def other_device(fd: int) -> object:
        found = real_fstat(fd)
        fields = {name: getattr(found, name) for name in dir(found) if name.startswith("st_")}
        return types.SimpleNamespace(**{**fields, "st_dev": found.st_dev + shift})

    monkeypatch.setattr(tree_snapshot, "os", ModuleOs(fstat=other_device))
    entry, _ = make_entry(os.fspath(path), seen, None, racy_threshold_ns=0)
    assert entry == Entry(tree_snapshot._signature(seen, None), True, None)


def test_a_file_whose_times_reach_the_threshold_exactly_is_racy(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("content\n")
    seen = os.lstat(path)
    entry, _ = make_entry(os.fspath(path), seen, None, racy_threshold_ns=max(seen.st_mtime_ns, seen.st_ctime_ns))
    assert entry.racy and entry.digest is not None


@pytest.mark.parametrize("below", [0, 1], ids=["at", "below"])
def test_a_file_written_while_it_was_hashed_becomes_racy(tmp_path: Path, below: int) -> None:
    """Hashed because its previous entry was racy, with the same stat data as then; a write
    lands between the scan's lstat and the hash: the times read after the hash are recent."""
    path = tmp_path / "a.txt"
    path.write_text("first\n")
    seen = os.lstat(path)
    previous = Entry(tree_snapshot._signature(seen, None), True, b"digest of the first")
    time.sleep(0.05)  # past the filesystem's clock tick
    path.write_text("later\n")  # same inode
    written = os.lstat(path)
    threshold = max(written.st_mtime_ns, written.st_ctime_ns) - below
    assert max(seen.st_mtime_ns, seen.st_ctime_ns) < threshold
    entry, _ = make_entry(os.fspath(path), seen, previous, threshold)
    assert entry.racy and entry.digest is not None


@pytest.mark.parametrize("order", ["lower", "higher"])
def test_a_racy_file_rewritten_with_the_same_stat_data_is_told_by_its_digest(order: str) -> None:
    """A same-size rewrite in the same clock tick leaves stat data equal: the digests alone tell
    (ledger_impl/tree_snapshot.py line 287: with `<` for `!=`, a digest that sorted higher than
    the old one passed for unchanged)."""
    sig = (0o100000, 0o100644, 0, 0, 5, 10, 10, 1, 1, 1, None)
    old, new = (b"\x10" * 20, b"\x20" * 20) if order == "higher" else (b"\x20" * 20, b"\x10" * 20)
    assert tree_snapshot.entry_changed(Entry(sig, True, old), Entry(sig, True, new))
    assert changed_keys({"a": Entry(sig, True, old)}, {"a": Entry(sig, True, new)}) == {"a"}
    assert not tree_snapshot.entry_changed(Entry(sig, True, old), Entry(sig, True, old))


@pytest.mark.parametrize("order", ["lower", "higher"])
def test_an_entry_whose_stat_data_moved_either_way_changed(order: str) -> None:
    """ledger_impl/tree_snapshot.py line 284: with `<` for `!=`, a file that shrank (a lower
    signature) passed for unchanged in the event detector, which compares entries this way."""
    small = (0o100000, 0o100644, 0, 0, 5, 10, 10, 1, 1, 1, None)
    large = (0o100000, 0o100644, 0, 0, 9, 10, 10, 1, 1, 1, None)
    old, new = (small, large) if order == "higher" else (large, small)
    assert tree_snapshot.entry_changed(Entry(old, False, None), Entry(new, False, None))


def test_a_missing_root_is_unreadable(tmp_path: Path) -> None:
    snapshot = take_snapshot(tmp_path / "missing")
    assert snapshot.unreadable == frozenset({tree_snapshot.ROOT_KEY}) and snapshot.entries == {}


def _aged(tmp_path: Path) -> tree_snapshot.Snapshot:
    """A tree whose every entry is old enough to be trusted by its stat data (10 ms window)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("a")
    time.sleep(0.05)
    return take_snapshot(tmp_path, racy_window_ns=10_000_000)


def test_a_directory_whose_times_went_back_is_listed_again(tmp_path: Path) -> None:
    """A file added and the directory's times set back (as `tar` restores them): the stat
    data differ from before, though they sort lower, so the listing is read again. A real miss
    of the operator mutation (ledger_impl/tree_snapshot.py line 191, `==` -> `>=`): the old
    listing was reused and the new file never seen."""
    first = _aged(tmp_path)
    sig = list(first.entries["sub"].sig)
    sig[tree_snapshot.MTIME_NS] += 3600 * 10**9  # the first snapshot saw the directory an hour ahead
    ahead = first._replace(entries={**first.entries, "sub": Entry(tuple(sig), False, None)})
    (tmp_path / "sub" / "new.txt").write_text("new")
    time.sleep(0.05)
    second = take_snapshot(tmp_path, ahead, racy_window_ns=10_000_000)
    assert "sub/new.txt" in second.entries


def test_a_reused_listing_with_a_name_gone_is_read_again(tmp_path: Path) -> None:
    first = _aged(tmp_path)
    stale = first._replace(listings={**first.listings, "sub": ("ghost", "a.txt")})
    second = take_snapshot(tmp_path, stale, racy_window_ns=10_000_000)
    assert second.listings["sub"] == ("a.txt",) and second.unreadable == frozenset()


def test_a_reused_listing_with_a_name_that_cannot_be_stated_marks_it_unreadable(tmp_path: Path) -> None:
    first = _aged(tmp_path)
    odd = first._replace(listings={**first.listings, "sub": ("a.txt", "a.txt/inner")})
    second = take_snapshot(tmp_path, odd, racy_window_ns=10_000_000)  # lstat: ENOTDIR
    assert second.unreadable == frozenset({"sub/a.txt/inner"})


def test_a_listed_name_that_cannot_be_stated_is_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("a")
    listing = os.scandir

    class Refused:
        name = "locked"

        def stat(self, follow_symlinks: bool = True) -> os.stat_result:
            raise PermissionError(13, "Permission denied")

    def scandir_with_a_refusal(path: str) -> object:
        return contextlib.nullcontext(iter([*listing(path), Refused()]))

    monkeypatch.setattr(tree_snapshot, "os", ModuleOs(scandir=scandir_with_a_refusal))
    snapshot = take_snapshot(tmp_path)
    assert snapshot.unreadable == frozenset({"locked"}) and "locked" in snapshot.listings[""]


def test_a_step_back_of_the_clock_never_lets_a_recent_file_be_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first snapshot ran with the clock two hours ahead; the clock was then set right. A
    file whose mtime (set into the future) or ctime (just written) lies inside the racy window
    now must be racy again, not kept from the first snapshot as trusted."""
    future = tmp_path / "future.txt"
    future.write_text("f")
    ahead_s = time.time() + 3600
    os.utime(future, (ahead_s, ahead_s))  # mtime an hour ahead, ctime now
    recent = tmp_path / "recent.txt"
    recent.write_text("r")
    old_s = time.time() - 3600
    os.utime(recent, (old_s, old_s))  # mtime an hour back, ctime now
    real = time.time_ns
    monkeypatch.setattr(tree_snapshot.time, "time_ns", lambda: real() + 2 * 3600 * 10**9)
    first = take_snapshot(tmp_path)
    assert not first.entries["future.txt"].racy and not first.entries["recent.txt"].racy
    monkeypatch.setattr(tree_snapshot.time, "time_ns", real)
    second = take_snapshot(tmp_path, first)
    assert second.entries["future.txt"].racy and second.entries["recent.txt"].racy
    # Ten seconds on, the ctimes are old: the future mtime alone still makes the file racy.
    monkeypatch.setattr(tree_snapshot.time, "time_ns", lambda: real() + 10 * 10**9)
    third = take_snapshot(tmp_path, first)
    assert third.entries["future.txt"].racy and not third.entries["recent.txt"].racy


@pytest.mark.parametrize("field", ["mtime", "ctime"])
def test_a_time_exactly_at_the_threshold_is_not_trusted_from_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    path = tmp_path / "a.txt"
    path.write_text("a")
    # The other time lies below the one tested, so that this one alone reaches the threshold.
    moved_s = time.time() + (60 if field == "mtime" else -60)
    os.utime(path, (moved_s, moved_s))
    found = os.lstat(path)
    at = found.st_mtime_ns if field == "mtime" else found.st_ctime_ns
    assert at == max(found.st_mtime_ns, found.st_ctime_ns)
    monkeypatch.setattr(tree_snapshot.time, "time_ns", lambda: at + 3600 * 10**9)
    first = take_snapshot(tmp_path)
    assert not first.entries["a.txt"].racy
    monkeypatch.setattr(tree_snapshot.time, "time_ns", lambda: at + tree_snapshot.RACY_WINDOW_NS)
    second = take_snapshot(tmp_path, first)
    assert second.entries["a.txt"].racy


@pytest.mark.parametrize("racy", [False, True])
def test_a_file_is_read_only_when_racy_and_hashing_is_asked_for(tmp_path: Path, racy: bool) -> None:
    """The event detector asks for no hashing: reading a file under its own watches would
    report its read. And a file old enough to be trusted is never read."""
    path = tmp_path / "a.txt"
    path.write_text("a")
    seen = os.lstat(path)
    threshold = 0 if racy else max(seen.st_mtime_ns, seen.st_ctime_ns) + 1
    hashed, _ = make_entry(os.fspath(path), seen, None, threshold, hash_racy=True)
    unhashed, _ = make_entry(os.fspath(path), seen, None, threshold, hash_racy=False)
    assert (hashed.digest is not None) is racy and unhashed.digest is None
    assert hashed.racy is racy and unhashed.racy is racy


@pytest.mark.parametrize("order", ["lower", "higher"])
def test_a_racy_file_whose_stat_data_moved_is_not_read_again(tmp_path: Path, order: str) -> None:
    """Its change shows in the stat data; the digest is taken again only when the stat data
    match the racy entry's, the one case where it is the only proof."""
    path = tmp_path / "a.txt"
    path.write_text("a")
    seen = os.lstat(path)
    sig = list(tree_snapshot._signature(seen, None))
    sig[tree_snapshot.SIZE] += 1 if order == "higher" else -1
    previous = Entry(tuple(sig), True, b"digest")
    trusted_now = max(seen.st_mtime_ns, seen.st_ctime_ns) + 1
    entry, _ = make_entry(os.fspath(path), seen, previous, trusted_now, hash_racy=False)
    assert entry.digest is None
    same, _ = make_entry(os.fspath(path), seen, previous._replace(sig=tree_snapshot._signature(seen, None)), trusted_now, hash_racy=False)
    assert same.digest is not None
