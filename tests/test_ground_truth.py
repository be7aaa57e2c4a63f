"""The independent ground truth sees every kind of change, and its hash cache never hides one."""

from __future__ import annotations

import os
import pathlib

from properties.ground_truth import HashCache, changed, look


def _tree(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "d" / "b.txt").write_text("beta\n")
    return root


def test_content_rewrite_with_old_timestamps_restored_is_seen(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path)
    target = root / "a.txt"
    st = target.stat()
    before = look(root)
    target.write_text("ALPHA\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert changed(before, look(root)) == {"a.txt"}


def test_link_count_inode_and_symlink_target_are_seen(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path)
    os.symlink("a.txt", root / "s")
    before = look(root)
    os.link(root / "a.txt", tmp_path / "outside-link")  # only a's nlink and ctime change
    os.remove(root / "s")
    os.symlink("d/b.txt", root / "s")
    assert changed(before, look(root)) == {"a.txt", "s"}


def test_reading_changes_nothing_and_root_is_opt_in(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path)
    before = look(root)
    (root / "a.txt").read_text()
    assert changed(before, look(root)) == frozenset()
    (root / "new").write_text("")
    assert changed(before, look(root)) == {"new"}
    assert "." in changed(before, look(root), include_root=True)


def test_cache_rehashes_recent_files_and_reuses_old_ones(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path)
    old = 1_000_000_000_000_000_000
    os.utime(root / "d" / "b.txt", ns=(old, old))  # mtime old, but ctime is now: still racy
    cache = HashCache()
    first = look(root, cache)
    second = look(root, cache)
    assert cache.reused == 0 and first == second
    target = root / "a.txt"
    st = target.stat()
    target.write_text("ALPHA\n")  # same size, same tick, timestamps put back
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert "a.txt" in changed(second, look(root, cache))
