"""The channel detector: a tree snapshot read from one listing script's output, sent through the
harness's `run`; anything short of a complete listing is unknown scope."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger_impl import Runtime
from ledger_impl.detectors.channel import ChannelDetector, ListingError, listing_script, local_run, parse_listing
from ledger_impl.detectors.snapshot import SnapshotDetector
from ledger_impl.tree_snapshot import take_snapshot


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
