"""WatchmanIndex: changes since a Watchman clock, for sessions whose processes come and go.

A hook process lives for one call; Watchman is a daemon that keeps watching between calls. The
session stores a small baseline (the Watchman clock of its last answer, and the root's own stat
data) and asks "what changed since that clock" at each call: the cost grows with the number of
changes, not the size of the tree, and no path is `lstat`ed by Ledger but the root.

Theory of operation.

- **A private daemon.** Ledger starts its own Watchman server (`watchman --sockname ...
  --statefile ... --logfile ... --pidfile ...`, all under Ledger's state directory, never under
  the root) and talks to it over its Unix socket with Watchman's JSON protocol: one JSON
  command per line, one JSON answer per line. The standard library suffices, so `pywatchman`
  (a C extension built from source at install) is not needed. The daemon is spawned on first
  use with every standard stream on /dev/null, so it never holds an agent's hook pipe open.
- **The parent is watched, not the root.** To answer a query with everything that happened
  before it ("sync"), Watchman writes a cookie file into the watched directory (or into its
  `.git`) and waits for its own inotify event. A cookie in the root would be a write into the
  workspace: it moves the root's (or `.git`'s) mtime at every query, which a listing shows.
  So the watched directory is the root's parent, the query is scoped to the root with
  `relative_root`, and the cookies land beside the workspace, never in it. The price: Watchman
  also crawls and watches the root's siblings.
- **What is reported.** Every path Watchman names, and each of its ancestors up to the root (a
  created or deleted name changes its directory too). The root's own stat data is not in
  Watchman's answer (the query is relative to it), so it is compared here, and the root
  replaced (another device or inode) is unknown scope.
- **Unknown scope, never "nothing changed"**, whenever the answer cannot vouch for everything
  since the stored clock: no stored clock; a fresh instance (the daemon restarted, the watch was
  removed and added again, the clock is of another server); a recrawl (Watchman lost events and
  re-read the tree: its answer's warning changes); no daemon, a refused connection, an error
  answer, a timeout, a malformed answer or baseline. The next answer's clock starts a new
  baseline, so one such report costs reuse once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pathlib
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Callable, Collection, Iterable
from typing import Any

import attrs

from ledger_spec.degraded import Cause, Degraded
from ledger_spec.values import Changes

from .baseline import read_stored, unusable
from .protocol import Before, Moment, Report, deferred
from ..state_directory import check_outside, resolve
from ledger_spec.errors import DetectorFailure

BINARY = "watchman"
# Bumped whenever the stored baseline's layout changes: a baseline of another format is unknown.
BASELINE_FORMAT = 1
BASELINE_TAG = "ledger-watchman"
# How long Watchman may take to see its own cookie (everything before the query): past this the
# query fails, and the report is unknown scope.
SYNC_TIMEOUT_MS = 10_000
# The socket's own limit, a little above the sync timeout; a daemon that does not answer by then
# is treated as unreachable.
ANSWER_TIMEOUT_S = 20.0
SPAWN_TIMEOUT_S = 30.0
_COOKIE_PREFIX = ".watchman-cookie-"
# Unix socket paths are limited to 108 bytes on Linux (including the NUL).
_SOCKET_PATH_LIMIT = 107


class WatchmanError(DetectorFailure, RuntimeError):
    """The daemon could not be reached, or did not answer a command as expected."""


class _Unreachable(DetectorFailure):
    """No daemon behind the socket (refused, reset, closed): one may be started."""


def available() -> bool:
    """Whether a `watchman` binary is on PATH."""
    return shutil.which(BINARY) is not None


class Daemon:
    """Ledger's own Watchman server, whose files all live in `directory` (outside any root)."""

    def __init__(self, directory: os.PathLike[str] | str) -> None:
        self.directory = pathlib.Path(directory)
        # A long state directory would overflow the socket path: the socket then gets a short
        # name of its own, derived from the directory so that every process finds the same one.
        socket_path = self.directory / "sock"
        if len(os.fsencode(socket_path)) > _SOCKET_PATH_LIMIT:
            digest = hashlib.sha256(os.fsencode(self.directory)).hexdigest()[:16]
            socket_path = pathlib.Path(tempfile.gettempdir()) / f"ledger-watchman-{os.getuid()}-{digest}.sock"
        self.socket_path = socket_path

    def _arguments(self) -> list[str]:
        return [
            f"--sockname={self.socket_path}",
            f"--statefile={self.directory / 'state'}",
            f"--logfile={self.directory / 'log'}",
            f"--pidfile={self.directory / 'pid'}",
            "--no-save-state",
        ]

    def pid(self) -> int | None:
        """The server's process id as its pid file says, if there is one."""
        try:
            return int((self.directory / "pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def spawn(self) -> None:
        """Start the server (the CLI daemonizes it) unless one already answers on the socket."""
        binary = shutil.which(BINARY)
        if binary is None:
            raise WatchmanError("no watchman binary on PATH")
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            completed = subprocess.run(
                [binary, *self._arguments(), "--no-pretty", "get-pid"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                timeout=SPAWN_TIMEOUT_S,
                env={**os.environ, "WATCHMAN_CONFIG_FILE": os.devnull},
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise WatchmanError(f"could not start watchman: {error}") from None
        if completed.returncode != 0:
            raise WatchmanError(f"watchman get-pid exited {completed.returncode}")

    def commands(self, *commands: list[Any], spawn: bool = True) -> list[dict[str, Any]]:
        """Send `commands` over one connection and return their answers, in order. An answer
        with an `error` raises WatchmanError, as does a daemon that cannot be reached: one that
        refuses or drops the connection is started again once (if `spawn`) and asked again
        (the commands Ledger sends can be repeated); one that does not answer in time is not."""
        try:
            return self._exchange(commands)
        except _Unreachable as error:
            if not spawn:
                raise WatchmanError(f"no watchman daemon on {self.socket_path}: {error}") from None
        self.spawn()
        try:
            return self._exchange(commands)
        except _Unreachable as error:
            raise WatchmanError(f"watchman started but does not answer on {self.socket_path}: {error}") from None

    def _exchange(self, commands: tuple[list[Any], ...]) -> list[dict[str, Any]]:
        try:
            connection = self._connect()
        except OSError as error:
            raise _Unreachable(repr(error)) from None
        answers = []
        # Written straight to the socket, read through a read-only buffer: a buffered writer
        # would flush again when closed, and a daemon gone mid-command would then escape as a
        # raw BrokenPipeError instead of reading as unreachable.
        with connection, connection.makefile("rb") as reader:
            for command in commands:
                try:
                    connection.sendall(json.dumps(command).encode("utf-8", "surrogateescape") + b"\n")
                    line = reader.readline()
                except ConnectionError as error:
                    raise _Unreachable(repr(error)) from None
                except OSError as error:  # socket.timeout included: alive, perhaps, but stuck
                    raise WatchmanError(f"watchman did not answer {command[0]!r}: {error!r}") from None
                if not line:
                    raise _Unreachable(f"the connection closed before an answer to {command[0]!r}")
                try:
                    answer = json.loads(line.decode("utf-8", "surrogateescape"))
                except ValueError:
                    raise WatchmanError(f"watchman answered {command[0]!r} with {line[:120]!r}") from None
                if not isinstance(answer, dict):
                    raise WatchmanError(f"watchman answered {command[0]!r} with {answer!r}"[:200])
                if "error" in answer:
                    raise WatchmanError(f"watchman {command[0]}: {answer['error']}")
                answers.append(answer)
        return answers

    def _connect(self) -> socket.socket:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(ANSWER_TIMEOUT_S)
        try:
            connection.connect(os.fspath(self.socket_path))
        except OSError:
            connection.close()
            raise
        return connection

    def shutdown(self) -> None:
        """Stop the server, if one answers."""
        with contextlib.suppress(WatchmanError):
            self.commands(["shutdown-server"], spawn=False)


def _stat_data(path: str) -> list[int] | None:
    """What the baseline keeps of a path's lstat (atime aside); None if it is gone."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink]


@attrs.frozen
class Baseline:
    """What a session stores between calls: the clock of the last answer, the warning it
    carried, the root's own stat data, the stat data of every file under the root with more
    than one link (a new name, or a write through a name outside the root, changes every
    name's link count or times with no event in the directories of the others), and that of
    every directory under the root (see `WatchmanIndex` on names Watchman does not report)."""

    root: str
    clock: str
    warning: str | None
    root_stat: list[int]
    links: dict[str, list[int]]
    dirs: dict[str, list[int]]

    def encode(self) -> bytes:
        # Not recursive: the fields are JSON already, and a deep copy of every directory's
        # stat data cost a hook call more than the query.
        document = {"tag": BASELINE_TAG, "format": BASELINE_FORMAT, **attrs.asdict(self, recurse=False)}
        return json.dumps(document, sort_keys=True).encode("utf-8", "surrogateescape")

    @classmethod
    def decode(cls, blob: bytes, root: str) -> "Baseline":
        """The baseline `encode` wrote for `root`; ValueError if `blob` is not one."""
        try:
            document = json.loads(blob.decode("utf-8", "surrogateescape"))
        except ValueError:
            raise ValueError("the stored baseline is not a Watchman baseline") from None
        if not isinstance(document, dict) or document.pop("tag", None) != BASELINE_TAG:
            raise ValueError("the stored baseline is not a Watchman baseline")
        if document.pop("format", None) != BASELINE_FORMAT:
            raise ValueError(f"the Watchman baseline is not of format {BASELINE_FORMAT}")
        try:
            baseline = cls(**document)
        except TypeError:
            raise ValueError("the Watchman baseline is malformed") from None
        if baseline.root != root:
            raise ValueError(f"the Watchman baseline is for {baseline.root!r}, not {root!r}")
        if not (
            isinstance(baseline.clock, str)
            and (baseline.warning is None or isinstance(baseline.warning, str))
            and _is_stat(baseline.root_stat)
            and isinstance(baseline.links, dict)
            and all(isinstance(name, str) and _is_stat(data) for name, data in baseline.links.items())
            and isinstance(baseline.dirs, dict)
            and all(isinstance(name, str) and _is_stat(data) for name, data in baseline.dirs.items())
        ):
            raise ValueError("the Watchman baseline is malformed")
        return baseline


def _is_stat(value: object) -> bool:
    return isinstance(value, list) and len(value) == 9 and all(type(n) is int for n in value)


def _with_ancestors(names: Iterable[str]) -> frozenset[str]:
    keys: set[str] = set()
    for name in names:
        while name and name not in keys:
            keys.add(name)
            name = name.rpartition("/")[0]
    return frozenset(keys)


_INO, _MODE, _NLINK = 1, 2, 8  # positions in `_stat_data`
# The stored data of a directory first seen after the query: it was not looked at before the
# query, so the next call reports it once rather than trust a look that came too late.
_NOT_YET_SEEN = [0] * 9


class WatchmanIndex:
    """The session detector backed by Watchman: `changes_since(root, baseline)`, like the stat
    index's, with a Watchman clock as the baseline. The daemon's files live in `state_dir`.

    Watchman does not report every name that came and went. A name it knows as deleted,
    created and deleted again before its thread looked (a lock file git takes and rolls back)
    is not reported at all, though the directory's mtime moved (`tests/test_watchman_detector.py`
    reproduces it by pausing the daemon). So every directory's stat data is kept and compared
    at each call, one `lstat` per directory: a directory whose listing changed is reported even
    when no name in it is.
    """

    name = "watchman"

    def __init__(self, state_dir: os.PathLike[str] | str | None = None, *, track_links: bool = True) -> None:
        self.state_dir = resolve(state_dir)
        self.daemon = Daemon(self.state_dir / "watchman")
        # False only for `ledger_impl.detectors.unsound.watchman_by_name`: Watchman's names alone.
        self.track_links = track_links

    def changes_since(self, root: os.PathLike[str] | str, blob: bytes | None, moment: Moment = None) -> Report:
        """What changed under `root` since the baseline `blob`, the new baseline, and why the
        report is unknown scope when it is (None otherwise). The new baseline is None when no
        clock could be had: the next call is then unknown scope too. Just before a command
        (`Before`) with a baseline in hand, nothing is asked: the next report covers it."""
        if isinstance(moment, Before) and blob is not None:
            return deferred(blob)
        root_s = os.path.realpath(root)
        stored, problem = read_stored(blob, lambda data: Baseline.decode(data, root_s), "Watchman clock")
        changes, baseline, problem = self.compare(root_s, stored, problem)
        return changes, None if baseline is None else baseline.encode(), problem

    def compare(
        self,
        root: os.PathLike[str] | str,
        stored: Baseline | None,
        problem: Degraded | None,
        suspects: Callable[[str, Collection[str]], set[str] | None] | None = None,
    ) -> tuple[Changes, Baseline | None, Degraded | None]:
        """`changes_since` with the stored baseline already decoded (None: there is none, and
        `problem` says why): the report, the new baseline as a value, and why the report is
        unknown scope. A resident caller keeps the baseline in memory and skips the codec.
        `suspects(root, directories)`: those of the stored directories whose stat data may have
        moved since it was last looked at (None: any may have); the others keep their stored
        data unlooked-at. Only a caller that watches every directory can say: `ledger serve`
        (`ledger_impl.service.directory_watch`), whose watches vouch for a directory unchanged
        since its last look, and so since any later one (a baseline the fallback hook stored)."""
        root_s = os.path.realpath(root)
        watched = os.path.dirname(root_s)
        if watched == root_s:
            return Changes(unknown=True), None, unusable(Cause.NO_PARENT_TO_WATCH)
        check_outside(root_s, self.state_dir)
        try:
            # Looked at before the query: a change after these looks is seen at the next call,
            # never absorbed into this baseline unreported.
            root_stat = _stat_data(root_s)
            links = {name: _stat_data(os.path.join(root_s, name)) for name in (stored.links if stored else {})}
            # `dirs`: the directories looked at again, and what they are now (None: gone). The
            # others are the stored ones unchanged, so no step below goes through them one by one.
            stored_dirs = stored.dirs if stored else {}
            suspected = None if suspects is None else suspects(root_s, stored_dirs.keys())
            looked = stored_dirs if suspected is None else [name for name in suspected if name in stored_dirs]
            dirs = {name: _stat_data(os.path.join(root_s, name)) for name in looked}
            if root_stat is None:
                raise WatchmanError(f"the root {root_s!r} is gone")
            scope = {"relative_root": os.path.basename(root_s), "sync_timeout": SYNC_TIMEOUT_MS}
            # No stored clock: a clock of no server, so the answer is a fresh instance (empty).
            since = {"since": stored.clock if stored is not None else "c:0:0:0:0", "empty_on_fresh_instance": True}
            _, answer = self.daemon.commands(
                ["watch", watched], ["query", watched, {**scope, **since, "fields": ["name", "exists", "type"]}]
            )
            clock, warning, files = answer.get("clock"), answer.get("warning"), answer.get("files")
            if not isinstance(clock, str) or not isinstance(files, list) or not (warning is None or isinstance(warning, str)):
                raise WatchmanError("malformed query answer")
            entries = [_entry(item) for item in files]
            entries = [entry for entry in entries if not entry[0].rpartition("/")[2].startswith(_COOKIE_PREFIX)]
            fresh = stored is None or bool(answer.get("is_fresh_instance"))
            # Inodes with several names among those Watchman gave: their other names changed too
            # (link count, ctime), with no event in their own directories.
            # (A symbolic link can be hard-linked too: every type but directories counts.)
            named = [_stat_data(os.path.join(root_s, name)) for name, exists, _ in entries if exists]
            linked_inodes = {
                data[_INO] for data in named
                if data is not None and data[_NLINK] > 1 and not stat.S_ISDIR(data[_MODE]) and self.track_links
            }
            # The multiply linked files: those of the stored baseline still linked, and every
            # name of an inode just named. Watchman's link counts can be stale (a new link raises
            # no event for the old name), its inode numbers cannot (a name gets another inode
            # only through an event on that name), so names are found by inode and counted here.
            now_linked = {name: data for name, data in links.items() if data is not None and data[_NLINK] > 1}
            now_dirs = {} if suspected is None else dict(stored_dirs)
            for name, data in dirs.items():
                if data is not None and stat.S_ISDIR(data[_MODE]):
                    now_dirs[name] = data
                else:
                    now_dirs.pop(name, None)
            for name, exists, kind in entries:
                if not exists:
                    now_linked.pop(name, None)
                elif kind == "d" and name not in now_dirs:
                    now_dirs[name] = _NOT_YET_SEEN
            if fresh or linked_inodes:
                (everything,) = self.daemon.commands(
                    ["query", watched, {**scope, "fields": ["name", "ino", "type"]}]
                )
                listed = [item for item in everything.get("files") or [] if isinstance(item, dict) and isinstance(item.get("name"), str)]
                if fresh:
                    now_dirs = {item["name"]: _NOT_YET_SEEN for item in listed if item.get("type") == "d"}
                # A new baseline knows of no link yet: every file is counted (an lstat each,
                # once per baseline); otherwise only the names of the inodes just named.
                candidates = [
                    item["name"] for item in listed
                    if item.get("type") != "d" and self.track_links and (fresh or item.get("ino") in linked_inodes)
                ]
                counted = {name: _stat_data(os.path.join(root_s, name)) for name in candidates}
                now_linked.update({name: data for name, data in counted.items() if data is not None and data[_NLINK] > 1})
        except (OSError, WatchmanError, ValueError) as error:
            return Changes(unknown=True), None, unusable(Cause.WATCHMAN_FAILED, str(error))
        if fresh:
            # Nothing to compare with yet: the first look at each directory is the baseline.
            now_dirs = {name: data for name in now_dirs if (data := _stat_data(os.path.join(root_s, name))) is not None}
        baseline = Baseline(root_s, clock, warning, root_stat, now_linked, now_dirs)
        if stored is None:
            return Changes(unknown=True), baseline, problem
        if answer.get("is_fresh_instance"):
            return Changes(unknown=True), baseline, unusable(Cause.WATCHMAN_FRESH_INSTANCE)
        if warning is not None and warning != stored.warning:
            return Changes(unknown=True), baseline, unusable(Cause.WATCHMAN_WARNING, warning.splitlines()[0])
        if root_stat[:2] != stored.root_stat[:2]:
            return Changes(unknown=True), baseline, unusable(Cause.ROOT_REPLACED)
        names = {name for name, _, _ in entries}
        # Every name of an inode that changed: the names Watchman gave, and multiply linked
        # files whose stat data moved since the stored baseline.
        moved = {stored.links[name][_INO] for name, data in links.items() if data != stored.links[name]}
        moved |= {data[_INO] for name, data in now_linked.items() if name in names}
        names |= {name for name, data in {**stored.links, **now_linked}.items() if data[_INO] in moved}
        names |= {name for name, data in links.items() if data != stored.links[name]}
        names |= {name for name, data in dirs.items() if data != stored.dirs[name]}
        if not names and root_stat != stored.root_stat:
            # Only the root's own stat data moved. No key names the root; as the snapshot diff
            # does, its entries are named instead (any key advances G, which tree reads
            # follow). An empty root can only say "unknown".
            try:
                names = set(os.listdir(root_s))
            except OSError as error:
                return Changes(unknown=True), baseline, unusable(Cause.ROOT_UNLISTABLE, str(error))
            if not names:
                return Changes(unknown=True), baseline, None
        return Changes(paths=_with_ancestors(names)), baseline, None

    def forget(self, root: os.PathLike[str] | str) -> None:
        """Stop watching `root`'s parent (if this daemon was watching it)."""
        with contextlib.suppress(WatchmanError):
            self.daemon.commands(["watch-del", os.path.dirname(os.path.realpath(root))], spawn=False)


def _entry(item: object) -> tuple[str, bool, str]:
    """(name, exists, type) of one file in an answer; ValueError if malformed."""
    if not isinstance(item, dict):
        raise ValueError(f"malformed file in the answer: {item!r}"[:200])
    name, exists, kind = item.get("name"), item.get("exists"), item.get("type")
    if not isinstance(name, str) or not name or not isinstance(exists, bool) or not isinstance(kind, str):
        raise ValueError(f"malformed file in the answer: {item!r}"[:200])
    return name, exists, kind


class WatchmanDetector(WatchmanIndex):
    """The Watchman index for a driver that keeps its baseline in memory (the Runtime, `ledger
    check-detector`): the watches it made are deleted at `close`, and with `disposable`, its
    daemon and state directory too. (A session's index is never closed: the next hook process
    needs the same watch.)"""

    def __init__(
        self, state_dir: os.PathLike[str] | str | None = None, *, track_links: bool = True, disposable: bool = False
    ) -> None:
        super().__init__(state_dir, track_links=track_links)
        self._disposable = disposable
        self._roots: set[str] = set()

    def changes_since(self, root: os.PathLike[str] | str, blob: bytes | None, moment: Moment = None) -> Report:
        self._roots.add(os.path.realpath(root))
        return super().changes_since(root, blob, moment)

    def close(self) -> None:
        for root in self._roots:
            self.forget(root)
        self._roots.clear()
        if self._disposable:
            self.daemon.shutdown()
            shutil.rmtree(self.state_dir, ignore_errors=True)


def detector(state_dir: os.PathLike[str] | str | None = None, *, track_links: bool = True) -> WatchmanDetector:
    """The Watchman detector for embedding: its daemon's files under `state_dir`."""
    return WatchmanDetector(state_dir, track_links=track_links)


def make(*, track_links: bool = True) -> WatchmanDetector:
    """A detector with a daemon and state directory of its own, both gone on close (for
    `ledger check-detector`)."""
    return WatchmanDetector(tempfile.mkdtemp(prefix="ledger-watchman-"), track_links=track_links, disposable=True)
