"""The Watchman detector's edges that its behaviour tests did not pin, each found by a mutant of
`ledger_impl/detectors/watchman.py` that survived them (see `mutation-survivors.md`).

The daemon's wire errors are provoked with a small scripted server on a Unix socket (loopback
only), so that each error names the command that failed; everything else runs the real
`watchman` binary, as `tests/test_watchman_detector.py` does.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import stat
import subprocess
import threading

import pytest

from ledger_impl.detectors import watchman

# Not `watchman.available()`: a broken `available` would skip the very tests that catch it.
needs_watchman = pytest.mark.skipif(
    shutil.which("watchman") is None, reason="no watchman binary on PATH (.ci/run installs Debian's watchman package)"
)


def test_available_follows_path(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "watchman"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert watchman.available()
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert not watchman.available()


class ScriptedDaemon:
    """A Unix socket server that reads one command line and answers it as `behaviour` says:
    a given reply line, closing without a word, or saying nothing until it is stopped."""

    def __init__(self, path: pathlib.Path, behaviour: str, reply: bytes = b"") -> None:
        self.behaviour, self.reply = behaviour, reply
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(os.fspath(path))
        self.listener.listen(1)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection, connection.makefile("rwb") as stream:
            stream.readline()
            if self.behaviour == "reply":
                stream.write(self.reply)
                stream.flush()
            elif self.behaviour == "silent":
                self.stopped.wait(10)

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(10)
        self.listener.close()


@pytest.mark.parametrize(
    ("behaviour", "reply", "message"),
    [
        ("reply", b"not json\n", "watchman answered 'watch' with b'not json"),
        ("reply", b"[1, 2]\n", "watchman answered 'watch' with [1, 2]"),
        ("reply", b'{"error": "no such root"}\n', "watchman watch: no such root"),
        ("close", b"", "the connection closed before an answer to 'watch'"),
        ("silent", b"", "watchman did not answer 'watch'"),
    ],
)
def test_a_daemon_s_bad_answer_names_the_command(tmp_path, monkeypatch, behaviour, reply, message):
    daemon = watchman.Daemon(tmp_path)
    monkeypatch.setattr(watchman, "ANSWER_TIMEOUT_S", 0.3)
    server = ScriptedDaemon(daemon.socket_path, behaviour, reply)
    try:
        with pytest.raises(watchman.WatchmanError) as raised:
            daemon.commands(["watch", str(tmp_path / "watched")], spawn=False)
    finally:
        server.stop()
    assert message in str(raised.value)


def test_a_baseline_with_a_malformed_directory_entry_is_refused():
    valid = [1, 2, stat.S_IFDIR | 0o755, 0, 0, 4096, 10, 10, 2]
    baseline = watchman.Baseline("/r", "c:1:2:3:4", None, valid, {}, {"src": valid})
    assert watchman.Baseline.decode(baseline.encode(), "/r") == baseline
    for damaged in ({"src": [1, 2]}, {"src": "stat"}, {"src": [*valid[:8], "2"]}):
        document = {**json.loads(baseline.encode()), "dirs": damaged}
        with pytest.raises(ValueError, match="malformed"):
            watchman.Baseline.decode(json.dumps(document).encode(), "/r")


@pytest.mark.parametrize(
    "item",
    [
        {"name": "a.txt", "exists": "yes", "type": "f"},
        {"name": "a.txt", "exists": True, "type": None},
        {"name": "a.txt", "exists": 1, "type": "f"},
        {"name": "", "exists": True, "type": "f"},
        {"name": 7, "exists": True, "type": "f"},
        ["a.txt", True, "f"],
    ],
)
def test_a_malformed_file_in_an_answer_is_refused(item):
    with pytest.raises(ValueError, match="malformed file"):
        watchman._entry(item)
    assert watchman._entry({"name": "a.txt", "exists": False, "type": "f"}) == ("a.txt", False, "f")


@pytest.fixture
def layout(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A git workspace `parent/ws` with `a.txt` and `src/b.txt`, and a state directory beside it."""
    root = tmp_path / "parent" / "ws"
    (root / "src").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "src" / "b.txt").write_text("beta\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root, tmp_path / "state"


@pytest.fixture
def index(layout):
    detector = watchman.WatchmanIndex(layout[1])
    yield detector
    detector.daemon.shutdown()


def started(index: watchman.WatchmanIndex, root: pathlib.Path) -> bytes:
    """A baseline after the first (unknown-scope) call and one quiet call."""
    changes, blob, _ = index.changes_since(root, None)
    assert changes.unknown
    changes, blob, problem = index.changes_since(root, blob)
    assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)
    assert blob is not None
    return blob


@needs_watchman
def test_a_write_through_an_outside_link_is_reported_however_many_calls_later(index, layout, tmp_path):
    """A name inside the root linked from outside: a write through the outside name raises no
    event under the watched parent. The link stays tracked from one baseline to the next, not
    only in the baseline that first counted it."""
    root, _ = layout
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.link(root / "a.txt", outside / "a-link.txt")
    blob = started(index, root)
    for _ in range(2):
        changes, blob, problem = index.changes_since(root, blob)
        assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)
    with open(outside / "a-link.txt", "a") as through_the_link:
        through_the_link.write("written from outside\n")
    changes, blob, _ = index.changes_since(root, blob)
    assert "a.txt" in changes.paths


@needs_watchman
def test_a_write_to_a_single_name_file_asks_the_daemon_once(index, layout):
    """Only an inode with several names costs the whole listing: "the cost grows with the
    number of changes, not the size of the tree"."""
    root, _ = layout
    blob = started(index, root)
    asked: list[tuple[object, ...]] = []
    commands = index.daemon.commands

    def counting(*sent, **options):
        asked.append(sent)
        return commands(*sent, **options)

    index.daemon.commands = counting  # type: ignore[method-assign]
    (root / "a.txt").write_text("edited\n")
    changes, blob, _ = index.changes_since(root, blob)
    assert "a.txt" in changes.paths
    assert len(asked) == 1, asked


@needs_watchman
def test_a_fresh_baseline_holds_every_directory_s_own_look(index, layout):
    """The first baseline's directory entries are the directories' stat data as looked at
    then, so that a listing change Watchman does not report (a name created and deleted before
    its thread looked) is found at the first call after it."""
    root, _ = layout
    _, blob, _ = index.changes_since(root, None)
    dirs = watchman.Baseline.decode(blob, os.path.realpath(root)).dirs
    assert {"src", ".git"} <= set(dirs)
    assert dirs["src"] == watchman._stat_data(os.path.join(os.path.realpath(root), "src"))


@needs_watchman
def test_only_the_root_s_metadata_moved_names_its_entries(index, layout):
    root, _ = layout
    blob = started(index, root)
    os.chmod(root, 0o700)
    changes, blob, problem = index.changes_since(root, blob)
    assert (changes.unknown, problem) == (False, None)
    assert {"a.txt", "src", ".git"} <= changes.paths


@needs_watchman
def test_an_empty_root_whose_metadata_moved_is_unknown(tmp_path):
    root = tmp_path / "parent" / "empty"
    root.mkdir(parents=True)
    index = watchman.WatchmanIndex(tmp_path / "state")
    try:
        blob = started(index, root)
        os.chmod(root, 0o700)
        changes, _, _ = index.changes_since(root, blob)
        assert changes.unknown, "no key can name an empty root's change: it must not read as nothing changed"
    finally:
        index.daemon.shutdown()


@needs_watchman
def test_a_root_that_cannot_be_listed_is_unknown(index, layout, monkeypatch):
    root, _ = layout
    blob = started(index, root)
    os.chmod(root, 0o700)
    real_listdir = os.listdir
    root_s = os.path.realpath(root)

    def refusing(path=".", *args):
        if os.fspath(path) == root_s:
            raise PermissionError(13, "Permission denied", root_s)
        return real_listdir(path, *args)

    monkeypatch.setattr(os, "listdir", refusing)
    changes, _, problem = index.changes_since(root, blob)
    assert changes.unknown and problem is not None and "cannot be listed" in problem


@needs_watchman
def test_watchman_s_cookies_are_never_reported(tmp_path):
    """Watchman writes its sync cookies into the watched directory's VCS directory. A root that
    is that directory holds the cookies for a moment; their names are not changes of it."""
    parent = tmp_path / "parent"
    root = parent / ".git"
    (root / "sub").mkdir(parents=True)
    (root / "f").write_text("x\n")
    index = watchman.WatchmanIndex(tmp_path / "state")
    try:
        _, blob, _ = index.changes_since(root, None)
        for _ in range(3):
            changes, blob, _ = index.changes_since(root, blob)
            assert not [key for key in changes.paths if ".watchman-cookie-" in key], changes.paths
    finally:
        index.daemon.shutdown()


@needs_watchman
def test_a_detector_on_a_given_state_directory_leaves_it_and_its_daemon_at_close(layout):
    root, state = layout
    detector = watchman.WatchmanDetector(state)
    try:
        detector.before(root, "true")
        detector.close()
        assert state.is_dir()
        assert detector.index.daemon.commands(["version"], spawn=False)[0]["version"]
    finally:
        detector.index.daemon.shutdown()
