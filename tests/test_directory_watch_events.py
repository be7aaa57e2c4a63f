"""Which directories the service's directory watch names as suspects, event by event
(`ledger_impl.service.directory_watch`).

`tests/test_directory_watch.py` checks that no change is missed across whole calls; these check
the exact set each kind of event gives (a name made, a directory's own attributes, a directory
moved away and made again, removed), that a watch forgotten is watched again, and that the
watch works without inotify at all. Written for the survivors of the module's operator
mutation (docs/mutation/survivors.md).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator

import pytest

from ledger_impl.service import directory_watch
from ledger_impl.service.directory_watch import DirectoryWatch


@pytest.fixture
def tree(tmp_path: pathlib.Path) -> pathlib.Path:
    for directory in ("sub/deep/deeper", "other"):
        (tmp_path / directory).mkdir(parents=True)
    return tmp_path


@pytest.fixture
def watch() -> Iterator[DirectoryWatch]:
    watching = DirectoryWatch()
    yield watching
    watching.close()


KEYS = ["", "sub", "sub/deep", "sub/deep/deeper", "other"]


def _settled(watch: DirectoryWatch, root: pathlib.Path, keys: list[str] = KEYS) -> None:
    assert watch.suspects(str(root), keys) is None  # the first call: everything, and the watches
    assert watch.suspects(str(root), keys) == set()


def test_a_name_made_in_the_root_names_the_root_and_the_name(watch: DirectoryWatch, tree: pathlib.Path) -> None:
    _settled(watch, tree)
    (tree / "new").mkdir()
    assert watch.suspects(str(tree), KEYS) == {"", "new"}


def test_a_file_made_in_a_directory_names_it_and_the_name_only(watch: DirectoryWatch, tree: pathlib.Path) -> None:
    _settled(watch, tree)
    (tree / "sub" / "f.txt").write_text("f")
    assert watch.suspects(str(tree), KEYS) == {"sub", "sub/f.txt"}


def test_a_directory_s_own_attributes_name_it_and_its_parent_only(watch: DirectoryWatch, tree: pathlib.Path) -> None:
    _settled(watch, tree)
    os.chmod(tree / "sub" / "deep", 0o700)
    assert watch.suspects(str(tree), KEYS) == {"sub", "sub/deep"}


def test_a_directory_moved_away_and_made_again_is_watched_again(watch: DirectoryWatch, tree: pathlib.Path) -> None:
    """A real miss of the operator mutation (ledger_impl/service/directory_watch.py line 138,
    `==` -> `!=`, `<` or `>`): the watch of a directory moved away was removed but its key kept,
    so the directory made again under that name was taken for watched, and a change in it was
    never named."""
    keys = ["", "sub", "sub/deep", "sub/deep/deeper", "other", "moved"]
    assert watch.suspects(str(tree), keys) is None
    assert watch.suspects(str(tree), keys) == {"moved"}  # not there yet: unwatched, so suspect
    (tree / "sub").rename(tree / "moved")
    assert {"", "sub", "moved"} <= (watch.suspects(str(tree), keys) or set())
    (tree / "sub").mkdir()
    assert "sub" in (watch.suspects(str(tree), keys) or set())
    (tree / "sub" / "f.txt").write_text("in the new one")
    assert "sub" in (watch.suspects(str(tree), keys) or set())


def test_a_directory_removed_is_forgotten_without_error(watch: DirectoryWatch, tree: pathlib.Path) -> None:
    _settled(watch, tree)
    (tree / "other").rmdir()
    assert {"", "other"} <= (watch.suspects(str(tree), ["", "sub", "sub/deep", "sub/deep/deeper"]) or set())


def test_a_directory_renamed_between_the_drain_and_the_watch_forgets_its_old_name(watch: DirectoryWatch, tree: pathlib.Path) -> None:
    """The kernel gives the existing watch for an inode already watched: the old key names
    another path now, whichever way the two names sort."""
    for old, new in (("sub", "a-before"), ("a-before", "z-after")):
        watch.suspects(str(tree), ["", old])
        watch.suspects(str(tree), ["", old])
        (tree / old).rename(tree / new)
        watch._watch_all([new])  # as `suspects` does right after its drain
        assert old in watch._dirty and old not in watch._by_key and new in watch._by_key
        watch.reset()


def test_switching_roots_drops_the_old_root_s_watches(watch: DirectoryWatch, tree: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    second = tmp_path_factory.mktemp("second")
    (second / "elsewhere").mkdir()
    _settled(watch, tree)
    assert watch.suspects(str(second), ["", "elsewhere"]) is None
    (tree / "sub" / "f.txt").write_text("in the first root")
    assert watch.suspects(str(second), ["", "elsewhere"]) == set()


@pytest.mark.parametrize(("before", "after"), [(b"one", b"two"), (b"two", b"one")])
def test_a_change_of_the_mount_table_makes_every_directory_suspect(
    watch: DirectoryWatch, tree: pathlib.Path, monkeypatch: pytest.MonkeyPatch, before: bytes, after: bytes
) -> None:
    """A mount raises no event: a table that differs, whichever way it sorts, is a change. A
    real miss of the operator mutation (ledger_impl/service/directory_watch.py line 82, `!=` ->
    `>`): a new table that sorted lower was taken for the same, and the directories a mount
    covered were trusted by their watches."""
    tables = iter([(before,), (before,), (after,), (after,)])
    monkeypatch.setattr(directory_watch, "mount_table", lambda root: next(tables))
    _settled(watch, tree)
    assert watch.suspects(str(tree), KEYS) is None
    assert watch.suspects(str(tree), KEYS) == set()


def test_without_inotify_every_directory_is_looked_at(monkeypatch: pytest.MonkeyPatch, tree: pathlib.Path) -> None:
    def limit_reached() -> object:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(directory_watch, "INotify", limit_reached)
    without = DirectoryWatch()
    assert without.suspects(str(tree), KEYS) is None and without.suspects(str(tree), KEYS) is None
    without.drain()
    without.reset()


def test_a_closed_watch_drains_and_resets_without_error(watch: DirectoryWatch, tree: pathlib.Path) -> None:
    _settled(watch, tree)
    watch.close()
    watch.drain()
    watch._by_wd.clear()  # what reset unwatches needs the instance that was closed
    watch.reset()
    assert watch.suspects(str(tree), KEYS) is None and watch.suspects(str(tree), KEYS) is None, "closed: no watch vouches"
