"""The independent ground truth sees every kind of change, and its hash cache never hides one."""

from __future__ import annotations

import os
import pathlib
import time

from ledger_properties.ground_truth import FINE_RACY_NS, RACY_NS, HashCache, Tree, _node, changed, look, racy_window_for


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


def test_a_narrow_racy_window_still_sees_every_rewrite(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path)
    cache = HashCache(racy_ns=FINE_RACY_NS)
    time.sleep(2 * FINE_RACY_NS / 1e9)
    first = look(root, cache)
    assert cache.hashed == 2 and look(root, cache) == first and cache.reused == 2
    target = root / "a.txt"
    st = target.stat()
    target.write_text("ALPHA\n")  # same size, timestamps put back: only ctime moves
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    second = look(root, cache)
    assert changed(first, second) == {"a.txt"}
    target.write_text("alpha\n")  # within the window of the last hash: never served from the cache
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert changed(second, look(root, cache)) == {"a.txt"}


def test_the_window_is_narrow_only_for_fine_timestamps(tmp_path: pathlib.Path) -> None:
    (tmp_path / "root").mkdir()
    stamp = (tmp_path / "probe").touch() or (tmp_path / "probe").stat().st_mtime_ns
    expected = FINE_RACY_NS if stamp % 1_000_000 else RACY_NS
    assert racy_window_for(tmp_path / "root") == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["probe", "root"], "the probe cleans up after itself"


def _walked_with_os_walk(root: pathlib.Path) -> Tree:
    """The look as it was written over `os.walk`: what the scandir walk must equal, order included."""
    top = os.fspath(root)
    nodes = {".": _node(top, None)}
    unreadable: set[str] = set()

    def key_of(path: str) -> str:
        return os.path.relpath(path, top).replace(os.sep, "/")

    def on_error(error: OSError) -> None:
        unreadable.add(key_of(error.filename) if error.filename else ".")

    for directory, subdirs, files in os.walk(top, onerror=on_error, followlinks=False):
        prefix = key_of(directory) + "/" if directory != top else ""
        for name in subdirs + files:
            nodes[prefix + name] = _node(os.path.join(directory, name), None)
    return Tree(top, nodes, frozenset(unreadable))


def test_the_walk_sees_what_os_walk_sees_in_its_order(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path)
    (root / "d" / "e" / "f").mkdir(parents=True)
    (root / "d" / "e" / "f" / "deep.txt").write_text("deep\n")
    (root / "z").mkdir()
    (root / "z" / "last").write_text("")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    os.symlink("d", root / "link-to-dir")  # listed with the directories, never entered
    os.symlink(tmp_path, root / "link-outside")
    os.symlink("missing", root / "dangling")
    os.mkfifo(root / "d" / "fifo")
    (root / os.fsdecode(b"caf\xe9")).write_text("latin-1 name\n")
    (root / "d" / "e" / "f" / os.fsdecode(b"\xff")).mkdir()
    seen = look(root)
    expected = _walked_with_os_walk(root)
    assert seen == expected
    assert list(seen.nodes) == list(expected.nodes)
    assert "link-to-dir/b.txt" not in seen.nodes and "d/e/f/deep.txt" in seen.nodes
