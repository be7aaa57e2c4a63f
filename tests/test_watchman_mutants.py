"""The Watchman detector's edges that its behaviour tests did not pin, each found by a mutant of
`ledger_impl/detectors/watchman.py` that survived them (see `mutation-survivors.md`).

The daemon's wire errors are provoked with a small scripted server on a Unix socket (loopback
only), so that each error names the command that failed; everything else runs the real
`watchman` binary, as `tests/test_watchman_detector.py` does.
"""

from __future__ import annotations

import contextlib
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
from ledger_impl.detectors.baseline import unusable
from ledger_spec.degraded import Cause
from test_watchman_detector import durable, gone, index, layout, started  # noqa: F401 (fixtures)

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
    """A Unix socket server that answers each command line it reads as `behaviour` says: the
    next of `replies` (over as many connections as the client opens), closing without a word,
    or saying nothing until it is stopped."""

    def __init__(self, path: pathlib.Path, behaviour: str, *replies: bytes) -> None:
        self.behaviour, self.replies = behaviour, list(replies)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(os.fspath(path))
        self.listener.listen(1)
        self.listener.settimeout(10)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection, connection.makefile("rwb") as stream:
                while stream.readline():
                    if self.behaviour == "silent":
                        self.stopped.wait(10)
                        return
                    if self.behaviour == "close" or not self.replies:
                        break
                    stream.write(self.replies.pop(0))
                    stream.flush()

    def stop(self) -> None:
        self.stopped.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept(); close() alone does not
        self.listener.close()
        self.thread.join(10)


@pytest.mark.parametrize(
    ("behaviour", "reply", "message"),
    [
        ("reply", b"not json\n", "watchman answered 'watch' with b'not json"),
        ("reply", b"x" * 300 + b"\n", "watchman answered 'watch' with b'" + "x" * 120 + "'"),
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


def _written_through(link: pathlib.Path, index: watchman.WatchmanIndex, root: pathlib.Path, blob: bytes):
    """Append to a file through `link`, a name outside the watched parent; the next report."""
    with open(link, "a") as through_the_link:
        through_the_link.write("written from outside\n")
    changes, _, _ = index.changes_since(root, blob)
    return changes


@needs_watchman
def test_a_write_through_an_outside_link_is_reported_however_many_calls_later(index, layout, tmp_path):
    """A name inside the root linked from outside: a write through the outside name raises no
    event under the watched parent. The link stays tracked from one baseline to the next, not
    only in the baseline that first counted it. Pins a mutant of `ledger_impl/detectors/watchman.py`
    that let a change go unreported and that no test had caught (line 335: `> 1` -> `<= 1`): the
    link was forgotten at the second call. Listed in `scripts/mutation_survivors.json`."""
    root, _ = layout
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.link(root / "a.txt", outside / "a-link.txt")
    blob = started(index, root)
    for _ in range(2):
        changes, blob, problem = index.changes_since(root, blob)
        assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)
    assert "a.txt" in _written_through(outside / "a-link.txt", index, root, blob).paths


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
def test_a_fresh_baseline_holds_every_directory_s_own_look(durable, layout):
    """The first baseline's directory entries are the directories' stat data as looked at
    then, so that a listing change Watchman does not report (a name created and deleted before
    its thread looked) is found at the first call after it. Pins a mutant of
    `ledger_impl/detectors/watchman.py` that let a change go unreported and that no test had
    caught (line 361: `is not None` -> `is None`, the fresh directories): no directory was
    compared until Watchman named it. Listed in `scripts/mutation_survivors.json`."""
    root, _ = layout
    _, blob, _ = durable.changes_since(root, None)
    dirs = watchman.Baseline.decode(blob, os.path.realpath(root)).dirs
    assert {"src", ".git"} <= set(dirs)
    assert dirs["src"] == watchman._stat_data(os.path.join(os.path.realpath(root), "src"))


@needs_watchman
def test_only_the_root_s_metadata_moved_names_its_entries(index, layout):
    """Pins a mutant of `ledger_impl/detectors/watchman.py` that let a change go unreported and that
    no test had caught (line 387: `if not names` -> `if names`; with
    `test_an_empty_root_whose_metadata_moved_is_unknown`): an empty root read as "nothing
    changed". Listed in `scripts/mutation_survivors.json`."""
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
    assert changes.unknown and problem is not None and "cannot be listed" in str(problem)


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
def test_a_detector_on_a_given_state_directory_leaves_it_and_its_daemon_at_close_but_stops_watching(layout):
    root, state = layout
    detector = watchman.detector(state)
    try:
        detector.changes_since(root, None)
        (roots,) = detector.daemon.commands(["watch-list"])
        assert str(root.parent) in roots["roots"]
        detector.close()
        assert state.is_dir()
        (roots,) = detector.daemon.commands(["watch-list"], spawn=False)
        assert str(root.parent) not in roots["roots"], "the daemon lives on, but no longer watches the root"
    finally:
        detector.daemon.shutdown()


def test_a_long_state_directory_gets_a_short_socket_name_every_process_agrees_on(tmp_path):
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 5)
    daemon = watchman.Daemon(deep)
    assert len(os.fsencode(daemon.socket_path)) <= 107 and not str(daemon.socket_path).startswith(str(deep))
    assert watchman.Daemon(deep).socket_path == daemon.socket_path
    assert watchman.Daemon(tmp_path / "other").socket_path != daemon.socket_path


def test_no_pid_file_is_no_pid(tmp_path):
    assert watchman.Daemon(tmp_path).pid() is None
    (tmp_path / "pid").write_text("not a number\n")
    assert watchman.Daemon(tmp_path).pid() is None
    (tmp_path / "pid").write_text("1234\n")
    assert watchman.Daemon(tmp_path).pid() == 1234


@pytest.mark.parametrize(
    "field, value, refusal",
    [
        ("tag", None, "not a Watchman baseline"),
        ("tag", "aaa", "not a Watchman baseline"),  # sorts before the real tag
        ("tag", "zzz", "not a Watchman baseline"),  # and after it
        ("tag", "ledger-watchman-2", "not a Watchman baseline"),
        ("format", None, "format"),
        ("format", 0, "format"),
        ("root", "/z/r", "is for"),  # another root, sorting after the one asked for
        ("root", "/a/r", "is for"),  # and before it
    ],
)
def test_a_baseline_of_another_kind_format_or_root_is_refused(field, value, refusal):
    valid = [1, 2, stat.S_IFDIR | 0o755, 0, 0, 4096, 10, 10, 2]
    document = json.loads(watchman.Baseline("/m/r", "c:1:2:3:4", None, valid, {}, {}).encode())
    if value is None:
        del document[field]
    else:
        document[field] = value
    with pytest.raises(ValueError, match=refusal):
        watchman.Baseline.decode(json.dumps(document).encode(), "/m/r")


def test_a_malformed_file_is_quoted_by_its_first_200_characters():
    with pytest.raises(ValueError) as raised:
        watchman._entry({"name": "n" * 500, "exists": "yes", "type": "f"})
    assert len(str(raised.value)) == 200
    with pytest.raises(ValueError) as raised:
        watchman._entry(["n" * 500])
    assert len(str(raised.value)) == 200


def test_the_filesystem_root_cannot_be_watched(tmp_path):
    changes, blob, problem = watchman.WatchmanIndex(tmp_path / "state").changes_since("/", None)
    assert changes.unknown and blob is None and problem == unusable(Cause.NO_PARENT_TO_WATCH)


def _answer(document: dict) -> bytes:
    return json.dumps(document).encode() + b"\n"


@pytest.mark.parametrize(
    "query_answer",
    [
        {"files": []},
        {"clock": 7, "files": []},
        {"clock": "c:1:2:3:4", "files": {}},
        {"clock": "c:1:2:3:4", "files": [], "warning": 5},
    ],
    ids=["no-clock", "clock-not-a-string", "files-not-a-list", "warning-not-a-string"],
)
def test_a_malformed_query_answer_is_unknown_scope(tmp_path, query_answer):
    root = tmp_path / "parent" / "ws"
    root.mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    root_s = os.path.realpath(root)
    stored = watchman.Baseline(root_s, "c:1:2:3:3", None, watchman._stat_data(root_s), {}, {}).encode()
    index = watchman.WatchmanIndex(tmp_path / "state")
    server = ScriptedDaemon(index.daemon.socket_path, "reply", _answer({"watch": str(root.parent)}), _answer(query_answer))
    try:
        changes, blob, problem = index.changes_since(root, stored)
    finally:
        server.stop()
    assert changes.unknown and blob is None and "malformed query answer" in str(problem)


def test_a_malformed_item_of_the_full_listing_is_left_out(tmp_path):
    root = tmp_path / "parent" / "ws"
    root.mkdir(parents=True)
    index = watchman.WatchmanIndex(tmp_path / "state")
    server = ScriptedDaemon(
        index.daemon.socket_path, "reply",
        _answer({"watch": str(root.parent)}),
        _answer({"clock": "c:1:2:3:4", "files": [], "is_fresh_instance": True}),
        _answer({"clock": "c:1:2:3:4", "files": [1, "x", {"name": 5}, {"name": "d", "type": "d", "ino": 1}]}),
    )
    try:
        changes, blob, problem = index.changes_since(root, None)
    finally:
        server.stop()
    assert changes.unknown and problem == unusable(Cause.BASELINE_MISSING, "Watchman clock")
    assert blob is not None and watchman.Baseline.decode(blob, os.path.realpath(root)).clock == "c:1:2:3:4"


@needs_watchman
def test_a_written_file_is_reported_once_then_not(index, layout):
    root, _ = layout
    blob = started(index, root)
    (root / "a.txt").write_text("edited\n")
    changes, blob, _ = index.changes_since(root, blob)
    assert "a.txt" in changes.paths
    changes, blob, problem = index.changes_since(root, blob)
    assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)


@needs_watchman
def test_only_names_with_other_links_are_kept_in_the_baseline(durable, layout):
    """Each kept name costs an lstat at every call: a tree without hard links keeps none, and a
    name whose other link is gone is let go."""
    root, _ = layout
    root_s = os.path.realpath(root)
    _, blob, _ = durable.changes_since(root, None)  # a fresh baseline counts every file's links
    assert watchman.Baseline.decode(blob, root_s).links == {}
    blob = started(durable, root)
    assert watchman.Baseline.decode(blob, root_s).links == {}
    os.link(root / "a.txt", root / "b.txt")
    changes, blob, _ = durable.changes_since(root, blob)
    assert set(watchman.Baseline.decode(blob, root_s).links) == {"a.txt", "b.txt"}
    (root / "b.txt").unlink()
    changes, blob, _ = durable.changes_since(root, blob)
    changes, blob, _ = durable.changes_since(root, blob)
    assert watchman.Baseline.decode(blob, root_s).links == {}


@needs_watchman
def test_hard_linked_device_nodes_are_tracked_like_files(durable, layout):
    """Pins a mutant of `ledger_impl/detectors/watchman.py` that let a change go unreported and that
    no test had caught (line 353: `type != "d"` -> `>`): a character device's other name went
    unreported. Listed in `scripts/mutation_survivors.json`."""
    root, _ = layout
    try:
        os.mknod(root / "dev1", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("no permission to make a device node here")
    os.link(root / "dev1", root / "dev2")
    blob = started(durable, root)
    assert {"dev1", "dev2"} <= set(watchman.Baseline.decode(blob, os.path.realpath(root)).links)
    os.chmod(root / "dev1", 0o644)
    changes, blob, _ = durable.changes_since(root, blob)
    assert {"dev1", "dev2"} <= changes.paths
    changes, blob, problem = durable.changes_since(root, blob)
    assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)


def test_a_daemon_gone_before_the_command_is_written_is_unreachable(tmp_path, monkeypatch):
    """A daemon that exits as a command is sent (a shutdown racing another) must read as
    unreachable, never as a raw BrokenPipeError: `shutdown()` then says nothing, and a call
    that may start a daemon starts one."""

    def connect_to_a_closed_peer(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        theirs.close()
        return ours

    monkeypatch.setattr(watchman.Daemon, "_connect", connect_to_a_closed_peer)
    daemon = watchman.Daemon(tmp_path)
    with pytest.raises(watchman.WatchmanError, match="no watchman daemon"):
        daemon.commands(["version"], spawn=False)
    daemon.shutdown()


@needs_watchman
def test_a_detector_built_directly_tracks_links_as_make_does(layout, tmp_path):
    # Embedding code builds `watchman.detector(state_dir)` itself: it must be the sound one, which
    # sees a write through a link made outside the root, not the names-only variant.
    """Pins a mutant of `ledger_impl/detectors/watchman.py` that let a change go unreported and that
    no test had caught (then line 413: `WatchmanIndex(..., track_links=True)` -> `False`): only
    `make()` passed `True`. Listed in `scripts/mutation_survivors.json`."""
    root, state = layout
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.link(root / "a.txt", outside / "a-link.txt")
    detector = watchman.detector(state)
    try:
        _, blob, _ = detector.changes_since(root, None)
        unchanged, blob, _ = detector.changes_since(root, blob)
        assert unchanged.paths == frozenset()
        with open(outside / "a-link.txt", "a") as through_the_link:
            through_the_link.write("written from outside\n")
        assert "a.txt" in detector.changes_since(root, blob)[0].paths
    finally:
        detector.close()
        detector.daemon.shutdown()


@needs_watchman
@pytest.mark.parametrize("action", ["shutdown", "forget"])
def test_with_no_daemon_running_shutting_down_or_forgetting_a_root_starts_none(tmp_path, action):
    index = watchman.WatchmanIndex(tmp_path / "state")
    if action == "shutdown":
        index.daemon.shutdown()
    else:
        index.forget(tmp_path / "parent" / "ws")
    assert index.daemon.pid() is None and not (tmp_path / "state").exists()


def test_the_socket_lives_in_the_state_directory_while_its_path_fits(tmp_path):
    short = watchman.Daemon(tmp_path / "state")
    assert short.socket_path == tmp_path / "state" / "sock"
    # "/sock" is 5 bytes: a directory of 102 bytes makes a socket path of exactly 107, the
    # longest Linux takes; one more byte and the short name is used.
    for extra, fits in ((0, True), (1, False)):
        directory = tmp_path / ("d" * (102 + extra - len(os.fsencode(tmp_path)) - 1))
        assert len(os.fsencode(directory / "sock")) == 107 + extra
        assert (watchman.Daemon(directory).socket_path == directory / "sock") is fits


def _fake_watchman(tmp_path: pathlib.Path, script: str, monkeypatch) -> None:
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    program = bin_dir / "watchman"
    program.write_text(script)
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("#!/bin/sh\nexit 3\n", "watchman get-pid exited 3"),
        ("#!/bin/sh\nkill -9 $$\n", "watchman get-pid exited -9"),
        ("#!/nonexistent/interpreter\n", "could not start watchman"),
        ("#!/bin/sh\nexit 0\n", "watchman started but does not answer"),
    ],
    ids=["exit-status", "killed", "cannot-run", "starts-nothing"],
)
def test_a_watchman_that_cannot_start_a_daemon_is_a_watchman_error(tmp_path, monkeypatch, script, message):
    _fake_watchman(tmp_path, script, monkeypatch)
    daemon = watchman.Daemon(tmp_path / "state")
    with pytest.raises(watchman.WatchmanError, match=message):
        daemon.commands(["version"])


def test_an_answer_that_is_not_an_object_is_quoted_by_its_first_200_characters(tmp_path, monkeypatch):
    daemon = watchman.Daemon(tmp_path)
    server = ScriptedDaemon(daemon.socket_path, "reply", json.dumps(list(range(200))).encode() + b"\n")
    try:
        with pytest.raises(watchman.WatchmanError) as raised:
            daemon.commands(["watch", "/x"], spawn=False)
    finally:
        server.stop()
    assert len(str(raised.value)) == 200 and str(raised.value).startswith("watchman answered 'watch' with [0, 1,")


@needs_watchman
def test_a_link_made_while_no_daemon_watched_is_counted_by_the_next_baseline(index, layout, tmp_path):
    """Pins a mutant of `ledger_impl/detectors/watchman.py` that let a change go unreported and that
    no test had caught (line 322: `fresh = stored is None or ...` -> `and`): after a fresh
    instance the links were not counted again. Listed in `scripts/mutation_survivors.json`."""
    root, _ = layout
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    blob = started(index, root)
    pid = index.daemon.pid()
    os.kill(pid, 9)
    gone(pid)
    os.link(root / "a.txt", outside / "a-link.txt")  # no daemon sees it
    changes, blob, problem = index.changes_since(root, blob)
    assert changes.unknown and problem == unusable(Cause.WATCHMAN_FRESH_INSTANCE)
    changes, blob, problem = index.changes_since(root, blob)
    assert (changes.paths, changes.unknown) == (frozenset(), False)
    assert "a.txt" in _written_through(outside / "a-link.txt", index, root, blob).paths


@needs_watchman
def test_a_tracked_directory_removed_is_reported(index, layout):
    root, _ = layout
    blob = started(index, root)
    shutil.rmtree(root / "src")
    changes, blob, problem = index.changes_since(root, blob)
    assert problem is None and {"src", "src/b.txt"} <= changes.paths


@needs_watchman
def test_a_replaced_root_is_unknown_scope(index, layout):
    """Pins a mutant of `ledger_impl/detectors/watchman.py` that let a change go unreported and that
    no test had caught (line 370: a replaced root: `unknown=True` -> `False`): it read as
    "nothing changed". Listed in `scripts/mutation_survivors.json`."""
    root, _ = layout
    blob = started(index, root)
    root.rename(root.parent / "ws-before")
    root.mkdir()
    changes, _, problem = index.changes_since(root, blob)
    assert changes.unknown and problem == unusable(Cause.ROOT_REPLACED)


@needs_watchman
@pytest.mark.parametrize("mode", [0o700, 0o777])
def test_the_root_s_mode_changed_either_way_names_its_entries(index, layout, mode):
    root, _ = layout
    os.chmod(root, 0o750)
    blob = started(index, root)
    os.chmod(root, mode)
    changes, _, problem = index.changes_since(root, blob)
    assert problem is None and {"a.txt", "src"} <= changes.paths
