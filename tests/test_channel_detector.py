"""The channel detector: a tree snapshot read from one listing script's output, sent through the
harness's `run`; anything short of a complete listing is unknown scope."""

from __future__ import annotations

import ast
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from ledger_impl import Runtime
from ledger_impl.detectors.channel import (
    END_MARKER, HASHES_MARKER, ChannelDetector, ListingError, listing_script, local_run, parse_listing,
    take_channel_snapshot,
)
from ledger_impl.detectors.snapshot import SnapshotDetector
from ledger_impl.tree_snapshot import ROOT_KEY, take_snapshot


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "work tree"  # a space: the script must quote the root
    (root / "d").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "d" / "odd\nname").write_text("x")
    os.symlink("a.txt", root / "link")
    return root


def test_the_listing_agrees_with_a_local_snapshot(tree: Path) -> None:
    output, code = local_run(listing_script(str(tree)))
    assert code == 0
    listed = parse_listing(str(tree), output)
    local = take_snapshot(tree)
    assert set(listed.entries) == set(local.entries)
    for key, entry in local.entries.items():
        # Same type, mode, owner, size, times, inode, links and link target; the device number
        # is the channel's own (find's %D), consistent between listings but not os.stat's.
        assert listed.entries[key].sig[:8] == entry.sig[:8], key
        assert listed.entries[key].sig[9:] == entry.sig[9:], key


@pytest.mark.parametrize("cut", [1, 30, 200])
def test_a_listing_cut_short_is_refused(tree: Path, cut: int) -> None:
    output, _ = local_run(listing_script(str(tree)))
    with pytest.raises(ListingError):
        parse_listing(str(tree), output[:-cut])


def test_a_same_size_rewrite_in_the_same_tick_is_caught(tree: Path) -> None:
    detector = ChannelDetector(local_run, str(tree))
    detector.before(None, "")
    stat_before = os.stat(tree / "a.txt")
    (tree / "a.txt").write_text("ALPHA\n")
    os.utime(tree / "a.txt", ns=(stat_before.st_atime_ns, stat_before.st_mtime_ns))
    assert "a.txt" in detector.after(None, "", 0).paths


def test_a_failing_channel_is_unknown_scope(tree: Path) -> None:
    detector = ChannelDetector(lambda command: ("sh: find: -printf: unknown primary\n", 1), str(tree))
    detector.before(None, "")
    assert detector.after(None, "", 0).unknown


def test_a_runtime_over_the_channel_reuses_and_sees_edits(tree: Path) -> None:
    def run(command: str) -> tuple[str, int]:
        return local_run(command, str(tree))

    with Runtime(tree, ChannelDetector(run, str(tree))) as runtime:
        runtime.step("cat a.txt", run=run)
        assert runtime.step("cat a.txt", run=run).verdict == "reuse"
        assert runtime.step("echo more >> a.txt", run=run).changes.paths == frozenset({"a.txt"})
        after = runtime.step("cat a.txt", run=run)
    assert (after.verdict, after.output) == ("allow", "alpha\nmore\n")


def test_the_channel_detector_reports_what_the_snapshot_detector_reports(tree: Path) -> None:
    channel, snapshot = ChannelDetector(local_run, str(tree)), SnapshotDetector()
    for detector in (channel, snapshot):
        detector.before(tree, "")
    (tree / "d" / "new").write_text("")
    (tree / "link").unlink()
    os.chmod(tree / "a.txt", 0o600)
    assert channel.after(tree, "", 0) == snapshot.after(tree, "", 0)


CLOCK = 2_000_000_000_000_000_000
DIGEST = "ab" * 32


def listing(*records: tuple[str, str], hashes: tuple[str, ...] = (), clock: str = str(CLOCK)) -> str:
    """A listing as the script prints it: the clock, (fields, link target) per path, the hashes
    marker, the hash lines, the end marker; every item NUL-terminated."""
    items = [clock, *(item for record in records for item in record), HASHES_MARKER, "", *hashes, END_MARKER]
    return "".join(item + "\x00" for item in items)


def record(kind: str, path: str, *, mtime: str = "1000000000.5", size: int = 1, target: str = "") -> tuple[str, str]:
    return (f"{kind} 11 22 {size} {mtime} {mtime} 644 0 0 1 {path}", target)


ROOT = record("d", ".")


def test_a_hand_written_listing_is_parsed_field_by_field() -> None:
    snapshot = parse_listing(
        "/w",
        listing(ROOT, record("f", "./a b.txt", mtime="1000000000.25", size=7), record("l", "./link", target="a b.txt"),
                hashes=(f"{DIGEST}  ./a b.txt",)),
    )
    assert set(snapshot.entries) == {ROOT_KEY, "a b.txt", "link"}
    assert snapshot.taken_at_ns == CLOCK
    entry = snapshot.entries["a b.txt"]
    assert entry.sig == (stat.S_IFREG, stat.S_IFREG | 0o644, 0, 0, 7, 1_000_000_000_250_000_000,
                         1_000_000_000_250_000_000, 11, 22, 1, None)
    assert entry.digest == bytes.fromhex(DIGEST) and not entry.racy
    assert snapshot.entries["link"].sig[-1] == "a b.txt" and snapshot.entries["link"].digest is None


@pytest.mark.parametrize("offset,racy", [(0, True), (-1, False), (1, True)])
def test_an_entry_is_racy_from_exactly_the_window_before_the_clock(offset: int, racy: bool) -> None:
    threshold = CLOCK - 1_000_000_000
    mtime = threshold + offset
    text = f"{mtime // 1_000_000_000}.{mtime % 1_000_000_000:09d}"
    snapshot = parse_listing("/w", listing(ROOT, record("f", "./a", mtime=text)), racy_window_ns=1_000_000_000)
    assert snapshot.entries["a"].racy is racy


@pytest.mark.parametrize(
    "output,reason",
    [
        (listing(ROOT, clock="soon"), "no clock reading: 'soon'"),
        (listing(ROOT).replace(HASHES_MARKER, "ledger-hashed"), "no hashes marker"),
        (listing(ROOT, hashes=(f"{DIGEST} ./a",)), "malformed hash line"),
        (listing(ROOT, hashes=(f"{DIGEST[:-2]}  ./a",)), "malformed hash line"),
        (listing(ROOT, hashes=(f"{DIGEST}  a",)), "unexpected path"),
        (listing(ROOT, record("f", "./caf\ufffd")), "not valid UTF-8"),
        (listing(ROOT, record("x", "./a")), "malformed record"),
        (listing(ROOT, ("f 11 22 1 1.0 1.0 644 0 0 ./a", "")), "malformed record"),
        (listing(ROOT, record("f", "./a", mtime="yesterday")), "malformed record"),
        (listing(record("f", "./a")), "the root is not in the listing"),
        (listing(ROOT)[: -len(END_MARKER) - 1], "incomplete"),
        ("\x00".join(["1", END_MARKER, ""]), "incomplete"),
        (listing(), "the root is not in the listing"),
        (listing(ROOT, hashes=(f"{DIGEST}00  ./a",)), "malformed hash line"),
        (listing(ROOT, record("f", "+a")), "unexpected path"),
        (listing(ROOT).replace(END_MARKER, "ledger-listing-fin"), "incomplete"),
        (listing(ROOT).replace(f"{HASHES_MARKER}\x00\x00", f"{HASHES_MARKER}\x00x\x00"), "no hashes marker"),
        ("\x00".join(["1", "x", END_MARKER, ""]), "incomplete"),
        (listing(ROOT, hashes=(f"{DIGEST}  ./a",)).replace(HASHES_MARKER, "ledger-hashed"), "no hashes marker"),
    ],
    ids=["clock", "no-marker", "one-space", "short-digest", "hash-path", "undecodable", "kind", "fields",
         "time", "no-root", "no-end", "too-short", "nothing-listed", "long-digest", "path-before-dot",
         "wrong-end", "marker-with-target", "four-items", "no-marker-even"],
)
def test_a_malformed_listing_is_a_listing_error_naming_what_is_wrong(output: str, reason: str) -> None:
    with pytest.raises(ListingError, match=reason):
        parse_listing("/w", output)


@pytest.mark.parametrize(
    "make_output, prefix",
    [
        (lambda long: listing(ROOT, clock=long), "no clock reading: "),
        (lambda long: listing(ROOT, hashes=(long,)), "malformed hash line "),
        (lambda long: listing(ROOT, (long, "")), "malformed record "),
        (lambda long: listing(ROOT, record("f", "./a", mtime=long)), "malformed record "),
    ],
    ids=["clock", "hash-line", "record", "record-time"],
)
def test_an_error_quotes_the_first_80_characters_of_a_long_bad_line(make_output, prefix: str) -> None:
    long = "t" + "".join(f"{i:03d}" for i in range(100))  # not a number; no two prefixes alike
    output = make_output(long)
    with pytest.raises(ListingError) as error:
        parse_listing("/w", output)
    message = str(error.value)
    assert message.startswith(prefix)
    excerpt = ast.literal_eval(message[len(prefix):])
    assert len(excerpt) == 80 and excerpt in output, excerpt


def test_a_failed_listing_command_is_quoted_by_its_last_200_characters(tree: Path) -> None:
    said = "".join(f"{i:03d}" for i in range(100)) + "find: -printf: unknown primary\n"
    with pytest.raises(ListingError) as error:
        take_channel_snapshot(lambda command: (said, 1), str(tree))
    assert str(error.value) == f"the listing command exited 1: {said[-200:]!r}"


def listed_at(root: Path, clock_ns: int, bin_dir: Path) -> dict:
    """The entries of a listing whose clock reads `clock_ns`: a `date` on PATH that prints it
    (a file's ctime cannot be set back, so the channel's clock is moved instead)."""
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "date").write_text(f"#!/bin/sh\necho {clock_ns}\n")
    (bin_dir / "date").chmod(0o755)
    environment = dict(os.environ, PATH=f"{bin_dir}:{os.environ.get('PATH', '')}")
    completed = subprocess.run(["bash", "-c", listing_script(str(root))], env=environment, capture_output=True)
    assert completed.returncode == 0, completed.stdout
    return parse_listing(str(root), completed.stdout.decode("utf-8", "surrogateescape")).entries


def test_files_older_than_the_hash_window_are_not_hashed(tree: Path, tmp_path: Path) -> None:
    # Hashing is for files changed recently (racy now or at the last listing); an old file is
    # proved unchanged by its stat data alone, so hashing it at every step would only cost.
    entries = listed_at(tree, time.time_ns() + 2 * 3600 * 1_000_000_000, tmp_path / "bin")
    assert entries[ROOT_KEY].sig and all(entry.digest is None for entry in entries.values())
    assert local_run(listing_script(str(tree)))[0].count("  ./") == 2, "changed just now: both files hashed"


def test_the_hash_window_is_the_ten_minutes_the_readme_states(tmp_path: Path) -> None:
    # The script compares whole seconds: a file changed at second S (and a fraction) is hashed
    # by a listing at second S + 600, and not by one at S + 601.
    root = tmp_path / "root"
    root.mkdir()
    (root / "f.txt").write_text("f\n")
    status = os.stat(root / "f.txt")
    changed_s = max(status.st_mtime_ns, status.st_ctime_ns) // 1_000_000_000
    if not max(status.st_mtime_ns, status.st_ctime_ns) % 1_000_000_000:
        pytest.skip("the file system keeps whole seconds: the window's edge cannot be placed")
    page = (Path(__file__).resolve().parent.parent / "docs" / "internals" / "detectors.md").read_text()
    assert "SHA-256 of files changed in the last ten minutes" in " ".join(page.split())
    at_window = listed_at(root, (changed_s + 600) * 1_000_000_000, tmp_path / "bin")
    past_window = listed_at(root, (changed_s + 601) * 1_000_000_000, tmp_path / "bin")
    assert at_window["f.txt"].digest is not None and past_window["f.txt"].digest is None


def test_the_last_complete_listing_is_kept_and_a_failed_one_forgets_it(tree: Path) -> None:
    answers = [local_run, lambda command: ("find: unknown primary", 1)]
    detector = ChannelDetector(lambda command: answers[0](command), str(tree))
    assert detector.last_snapshot is None
    detector.before(None, "")
    assert detector.last_snapshot is not None and "a.txt" in detector.last_snapshot.entries
    answers.pop(0)
    assert detector.after(None, "", 0).unknown
    assert detector.last_snapshot is None


def test_records_of_every_kind_are_parsed_and_only_regular_files_hold_a_digest() -> None:
    # A pipe's or socket's record sorts after the hashes marker; a path hashed as a file and
    # listed as a link (replaced between the two finds) must not lend the link its digest.
    kinds = {"p": "./fifo", "s": "./socket", "l": "./link", "f": "./file"}
    snapshot = parse_listing(
        "/w",
        listing(ROOT, *(record(kind, path) for kind, path in kinds.items()),
                hashes=tuple(f"{DIGEST}  {path}" for path in kinds.values())),
    )
    assert set(snapshot.entries) == {ROOT_KEY, "fifo", "socket", "link", "file"}
    assert [key for key, entry in snapshot.entries.items() if entry.digest is not None] == ["file"]
    assert [key for key, entry in snapshot.entries.items() if entry.sig[-1] is not None] == ["link"]


@pytest.mark.parametrize("exit_code", [1, -9])  # -9: killed by a signal
def test_a_failed_listing_command_shows_what_the_channel_said(tree: Path, exit_code: int) -> None:
    output, _ = local_run(listing_script(str(tree)))
    with pytest.raises(ListingError, match=f"exited {exit_code}: 'find: -printf: unknown primary"):
        take_channel_snapshot(lambda command: ("find: -printf: unknown primary\n", exit_code), str(tree))
    with pytest.raises(ListingError, match=f"exited {exit_code}"):
        take_channel_snapshot(lambda command: (output, exit_code), str(tree))  # whole, yet not trusted


def test_a_detector_whose_first_listing_failed_reports_unknown_once_listings_work(tree: Path) -> None:
    answers = [lambda command: ("", 1), local_run]
    detector = ChannelDetector(lambda command: answers[0](command), str(tree))
    detector.before(None, "")
    answers.pop(0)
    assert detector.after(None, "", 0).unknown, "no baseline: nothing proves what the command did"
    assert detector.after(None, "", 0).empty


def test_a_file_racy_at_the_last_listing_is_hashed_again_a_while_later(tree: Path) -> None:
    # Its baseline entry is racy, so only a digest proves it unchanged: the next listing, more
    # than two seconds later but within the hash window, must hash it again.
    (tree / "a.txt").write_text("fresh\n")
    detector = ChannelDetector(local_run, str(tree))
    detector.before(None, "")
    assert detector.last_snapshot is not None and detector.last_snapshot.entries["a.txt"].racy
    time.sleep(2.5)  # the script's clock is in whole seconds
    assert detector.after(None, "", 0).empty
