"""SnapshotDetector and the snapshot/diff functions, on real trees with real commands."""

from __future__ import annotations

import os
import time

import pytest

from detector_scenarios import READ_ONLY_COMMANDS, SCENARIOS, Session, deny_listing, sh
from ledger_impl import tree_snapshot
from ledger_impl.detectors import SnapshotDetector, default_detector
from ledger_spec import Changes
from ledger_impl.tree_snapshot import Entry, diff, take_snapshot


@pytest.mark.parametrize("name,setup,command,expected", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_reports_every_change_of_a_real_command(tmp_path, name, setup, command, expected):
    assert sh(tmp_path, setup) == 0
    session = Session(SnapshotDetector(), tmp_path)
    changes, truth = session.step(command)
    assert expected <= truth, "the scenario must really change these keys"
    assert not changes.unknown


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS)
def test_read_only_command_reports_nothing(tmp_path, command):
    sh(tmp_path, "echo abc > a.txt && mkdir sub && echo b > sub/b.txt")
    session = Session(SnapshotDetector(), tmp_path)
    changes, truth = session.step(command)
    assert truth == frozenset()
    assert changes.empty, changes


def test_read_only_commands_report_nothing_once_files_are_old(tmp_path):
    # Without racy files every comparison takes the stat-only path.
    sh(tmp_path, "echo abc > a.txt && mkdir sub && echo b > sub/b.txt && touch -d @1000000000 a.txt sub/b.txt sub .")
    session = Session(SnapshotDetector(), tmp_path)
    for command in READ_ONLY_COMMANDS:
        changes, _ = session.step(command)
        assert changes.empty, (command, changes)


def test_change_between_commands_is_reported_at_the_next_after(tmp_path):
    sh(tmp_path, "echo a > f")
    session = Session(SnapshotDetector(), tmp_path)
    changes, _ = session.step("(sleep 0.3; echo x > f) > /dev/null 2>&1 &")
    time.sleep(0.8)
    changes, truth = session.step("true")
    assert "f" in truth and "f" in changes.paths


def test_change_made_with_no_command_running_is_reported(tmp_path):
    sh(tmp_path, "echo a > f")
    session = Session(SnapshotDetector(), tmp_path)
    session.step("true")
    (tmp_path / "f").write_text("editor\n")  # the user's editor, between commands
    changes, truth = session.step("true")
    assert "f" in changes.paths


def test_racy_same_size_rewrite_with_equal_stat_is_caught_by_digest(tmp_path):
    # Forge the worst case directly: stat data identical before and after, content different.
    path = tmp_path / "a.txt"
    path.write_text("aaaa")
    before = take_snapshot(tmp_path)
    assert before.entries["a.txt"].racy and before.entries["a.txt"].digest is not None
    path.write_text("bbbb")
    current_sig = take_snapshot(tmp_path, hash_racy=False).entries["a.txt"].sig
    forged = before._replace(entries={**before.entries, "a.txt": before.entries["a.txt"]._replace(sig=current_sig)})
    after = take_snapshot(tmp_path, forged)
    assert "a.txt" in diff(forged, after).paths
    # The same forgery without the racy mark is trusted on stat data: the test can fail.
    trusting = forged._replace(entries={**forged.entries, "a.txt": Entry(current_sig, False, None)})
    assert "a.txt" not in diff(trusting, take_snapshot(tmp_path, trusting)).paths


def test_rewrite_in_the_same_tick_as_the_baseline(tmp_path):
    path = tmp_path / "a.txt"
    detector = SnapshotDetector()
    for attempt in range(20):
        path.write_text("aaaa")
        detector.before(tmp_path, "x")
        detector.after(tmp_path, "x", 0)  # baseline taken right after the write
        path.write_text("bbbb")  # same size, very likely same mtime tick
        changes = detector.after(tmp_path, "x", 0)
        assert "a.txt" in changes.paths, attempt


def test_old_file_restored_mtime_is_caught_by_ctime(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("aaaa")
    os.utime(path, ns=(10**18, 10**18))
    detector = SnapshotDetector()
    detector.before(tmp_path, "x")
    detector.after(tmp_path, "x", 0)
    st = path.stat()
    path.write_text("bbbb")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "a.txt" in detector.after(tmp_path, "x", 0).paths


def test_unreadable_directory_reports_unknown(tmp_path, monkeypatch):
    # Running as root, chmod cannot make a directory unreadable: simulate the listing error.
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "f").write_text("x")
    detector = SnapshotDetector()
    detector.before(tmp_path, "x")
    deny_listing(monkeypatch, tmp_path / "locked")
    os.utime(tmp_path / "locked", ns=(1, 1))  # its stat changed, so its listing cannot be reused
    assert detector.after(tmp_path, "x", 0).unknown


def test_directory_listing_is_reused_only_when_proved_unchanged(tmp_path, monkeypatch):
    for i in range(3):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "f").write_text("x")
    # ctime cannot be set back, so wait out a short racy window instead of the default one.
    window = 50_000_000
    time.sleep(0.1)
    first = take_snapshot(tmp_path, racy_window_ns=window)
    listed = []
    real_scandir = os.scandir
    monkeypatch.setattr(tree_snapshot.os, "scandir", lambda p: listed.append(os.fspath(p)) or real_scandir(p))
    (tmp_path / "d1" / "new").write_text("y")
    second = take_snapshot(tmp_path, first, racy_window_ns=window)
    assert listed == [str(tmp_path / "d1")]
    assert diff(first, second).paths == {"d1", "d1/new"}


def test_keys_are_valid_and_never_include_the_root(tmp_path):
    sh(tmp_path, "mkdir -p 'a b/c' && echo x > 'a b/c/d'")
    detector = SnapshotDetector()
    detector.before(tmp_path, "x")
    sh(tmp_path, "rm -r 'a b'")
    changes = detector.after(tmp_path, "x", 0)
    assert changes.paths == {"a b", "a b/c", "a b/c/d"}


def test_after_without_before_is_unknown(tmp_path):
    assert SnapshotDetector().after(tmp_path, "x", 0).unknown


def test_default_detector_is_sound_and_precise_on_a_sequence(tmp_path):
    # Session.step asserts coverage, which an always-unknown detector passes: the report must
    # also be known, and so name every key that changed.
    detector = default_detector()
    session = Session(detector, tmp_path)
    for name, setup, command, _ in SCENARIOS:
        steps = ["rm -rf ./* ./.[!.]* 2>/dev/null", setup, command]
        changes, truth = session.step("\n".join(step for step in steps if step))
        assert not changes.unknown, name
        assert truth <= changes.paths, (name, truth - changes.paths)


@pytest.mark.parametrize("command", ["touch -d '2001-01-01' .", "chmod 700 ."])
def test_a_change_to_the_root_s_own_metadata_is_reported_through_its_top_level_names(tmp_path, command):
    # No key names the root, yet `ls -ld .` prints its mode and mtime.
    sh(tmp_path, "echo a > a.txt")
    session = Session(SnapshotDetector(), tmp_path)
    changes, _ = session.step(command)
    # No key names the root, yet `ls -ld .` prints its mode and mtime: a top-level name must
    # advance G for tree reads of the root, and a known name is better than "unknown".
    assert changes == Changes(frozenset({"a.txt"})), changes


def test_a_change_to_an_empty_root_s_metadata_is_unknown(tmp_path):
    session = Session(SnapshotDetector(), tmp_path)
    changes, _ = session.step("chmod 700 .")
    assert changes.unknown


def test_a_new_top_level_file_explains_the_root_s_new_mtime(tmp_path):
    session = Session(SnapshotDetector(), tmp_path)
    changes, _ = session.step("echo x > new.txt")
    assert changes == Changes(frozenset({"new.txt"}))


def two_roots(tmp_path, order):
    """Two roots holding the same file, in the order given: `!=` between root paths mutated to
    `<` or `>` is wrong in only one of the two orders."""
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        root.mkdir()
        (root / "f.txt").write_text("f\n")
    return roots if order == "a-then-b" else roots[::-1]


def used_on(root):
    """A SnapshotDetector that has bracketed one no-op command on `root`."""
    detector = SnapshotDetector()
    detector.before(root, "true")
    assert detector.after(root, "true", 0) == Changes()
    return detector


@pytest.mark.parametrize("order", ["a-then-b", "b-then-a"])
def test_a_detector_moved_to_another_root_takes_that_root_s_baseline_in_before(tmp_path, order):
    # One detector, two roots (a harness reusing it): `before` on the new root must start from
    # that root, so a command that changes nothing there reports nothing, not "unknown".
    first, second = two_roots(tmp_path, order)
    detector = used_on(first)
    detector.before(second, "true")
    assert detector.after(second, "true", 0) == Changes()
    detector.before(second, "echo g >> f.txt")
    (second / "f.txt").write_text("f\ng\n")
    assert detector.after(second, "echo g >> f.txt", 0).paths == frozenset({"f.txt"})


@pytest.mark.parametrize("order", ["a-then-b", "b-then-a"])
def test_after_on_a_root_with_no_baseline_of_its_own_is_unknown(tmp_path, order):
    # Comparing another root's baseline with this root would report a fiction.
    first, second = two_roots(tmp_path, order)
    assert used_on(first).after(second, "true", 0).unknown
