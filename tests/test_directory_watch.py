"""DirectoryWatch: the directories `ledger serve` must look at again, from inotify events.

What must hold (a directory left out is one whose stat data the Watchman index trusts
unlooked-at): the first call, a changed mount table and a queue overflow say "look at every
one"; any entry made or removed in a directory, and a chmod of it, names it; a directory
renamed (with what is below it) is named under its new path; a directory that cannot be
watched is named at every call.
"""

from __future__ import annotations

import os
import pathlib
import types

import pytest

from ledger_impl.service import directory_watch
from ledger_impl.service.directory_watch import DirectoryWatch

pytestmark = pytest.mark.skipif(directory_watch.INotify is None, reason="inotify is Linux-only")


@pytest.fixture
def root(tmp_path: pathlib.Path) -> pathlib.Path:
    for directory in ("a/b", "other"):
        (tmp_path / "ws" / directory).mkdir(parents=True)
    return tmp_path / "ws"


@pytest.fixture
def watch():
    directories = DirectoryWatch()
    yield directories
    directories.close()


KEYS = {"a", "a/b", "other"}


def settled(watch: DirectoryWatch, root: pathlib.Path, keys: set[str] = KEYS) -> None:
    assert watch.suspects(str(root), keys) is None  # the first call: nothing is known yet
    assert watch.suspects(str(root), keys) == set()


def test_a_name_made_and_removed_names_its_directory_only(watch, root):
    settled(watch, root)
    (root / "a" / "b" / "index.lock").write_text("1")
    (root / "a" / "b" / "index.lock").unlink()
    assert watch.suspects(str(root), KEYS) & KEYS == {"a/b"}
    assert watch.suspects(str(root), KEYS) == set()


def test_a_subdirectory_made_and_a_chmod_name_the_directory(watch, root):
    settled(watch, root)
    (root / "other" / "new").mkdir()
    os.chmod(root / "a", 0o700)
    assert {"other", "a"} <= watch.suspects(str(root), KEYS)


def test_a_renamed_directory_is_named_under_its_new_path(watch, root):
    settled(watch, root)
    (root / "a").rename(root / "z")
    assert {"a", "a/b"} <= watch.suspects(str(root), KEYS)
    moved = {"z", "z/b", "other"}
    assert {"z", "z/b"} <= watch.suspects(str(root), moved)  # not watched under these names yet
    assert watch.suspects(str(root), moved) == set()
    (root / "z" / "b" / "lock").write_text("1")
    (root / "z" / "b" / "lock").unlink()
    assert watch.suspects(str(root), moved) & moved == {"z/b"}


def test_a_directory_that_cannot_be_watched_is_named_every_time(watch, root):
    keys = KEYS | {"missing"}
    assert watch.suspects(str(root), keys) is None
    assert watch.suspects(str(root), keys) == {"missing"}
    assert watch.suspects(str(root), keys) == {"missing"}


def test_a_changed_mount_table_means_every_directory(watch, root, monkeypatch):
    settled(watch, root)
    monkeypatch.setattr(directory_watch, "mount_table", lambda path: (b"a mount appeared",))
    assert watch.suspects(str(root), KEYS) is None
    assert watch.suspects(str(root), KEYS) == set()  # the new table is the one compared with


def test_an_overflowed_queue_means_every_directory(watch, root, monkeypatch):
    settled(watch, root)
    inotify = watch._inotify
    real_read = inotify.read
    queued = [[types.SimpleNamespace(wd=-1, mask=int(directory_watch._flags.Q_OVERFLOW), name="")]]
    monkeypatch.setattr(inotify, "read", lambda timeout=None: queued.pop() if queued else real_read(timeout=timeout))
    assert watch.suspects(str(root), KEYS) is None
    assert watch.suspects(str(root), KEYS) == set()


def test_another_root_starts_over(watch, root, tmp_path):
    settled(watch, root)
    (tmp_path / "second").mkdir()
    assert watch.suspects(str(tmp_path / "second"), set()) is None
