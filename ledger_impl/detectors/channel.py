"""ChannelDetector: the snapshot diff, taken through the harness's own `run` (a container's shell).

mini-swe-agent's docker environment runs commands in a container Ledger is not inside. This
detector sends one shell script through the same `run(command) -> (output, exit_code)` the
harness executes with, and builds the tree snapshot from what it prints:

- the container's clock (`date +%s%N`), the racy window's reference;
- one NUL-separated `find -printf` record per path under the root: type, inode, device, size,
  mtime, ctime, permission bits, owner, group, link count, path and link target;
- a SHA-256 for every regular file changed within `HASH_WINDOW_NS` of that clock: that covers
  the racily-clean files now and, at the next listing, those that were racy at this one (the
  digest is then the only proof their content did not change). A racy entry whose file is not
  hashed at the next listing (the steps were further apart than the window) compares as
  changed: it costs reuse, never correctness;
- an end marker, so a listing cut short (an output limit, a killed command) is never taken
  as complete.

Anything that is not a complete, well-formed listing (no GNU find, an unreadable directory,
a missing marker) is unknown scope.
"""

from __future__ import annotations

import shlex
import stat
from collections.abc import Callable

from ledger_impl.tree_snapshot import RACY_WINDOW_NS, ROOT_KEY, Entry, Snapshot, diff
from ledger_spec.values import Changes
from ledger_spec.errors import DetectorFailure

Run = Callable[[str], tuple[str, int]]

# Files changed this recently are hashed at every listing. Ten minutes spans the gap between two
# agent steps with a wide margin, and few files in a repository change that often.
HASH_WINDOW_NS = 600 * 1_000_000_000
HASHES_MARKER = "ledger-hashes"  # never a record: a record starts with a type letter and a space
END_MARKER = "ledger-listing-end"
_KINDS = {
    "f": stat.S_IFREG, "d": stat.S_IFDIR, "l": stat.S_IFLNK, "p": stat.S_IFIFO,
    "s": stat.S_IFSOCK, "c": stat.S_IFCHR, "b": stat.S_IFBLK,
}
_FIELDS = 11  # type inode device size mtime ctime mode uid gid nlink path; then the link target


class ListingError(DetectorFailure, ValueError):
    """The listing is not complete and well formed."""


# An error quotes at most this much of the line it rejects, and of a failed listing command's
# output only the end, where the shell's complaint is: a corrupt listing can be megabytes long,
# and the message goes into the user's log.
EXCERPT_CHARS = 80
FAILED_OUTPUT_TAIL_CHARS = 200


def _excerpt(text: str) -> str:
    return repr(text[:EXCERPT_CHARS])


def listing_script(root: str) -> str:
    """The one command sent through `run`; `root` is the workspace path as the channel sees it.

    Output, every item NUL-terminated: the clock; two items per path (the fields, the link
    target); the hashes marker and an empty item; one `sha256sum -z` line per hashed file;
    the end marker."""
    window_s = HASH_WINDOW_NS // 1_000_000_000
    return (
        f"cd {shlex.quote(root)} || exit 97; now=$(date +%s%N) || exit 97; printf '%s\\0' \"$now\"; "
        "find . -printf '%y %i %D %s %T@ %C@ %m %U %G %n %p\\0%l\\0' || exit 98; "
        f"printf '{HASHES_MARKER}\\0\\0'; since=$(( now / 1000000000 - {window_s} )); "
        "find . -type f \\( -newermt \"@$since\" -o -newerct \"@$since\" \\) -exec sha256sum -z -- {} + || exit 99; "
        f"printf '{END_MARKER}\\0'"
    )


def _ns(timestamp: str) -> int:
    seconds, _, fraction = timestamp.partition(".")
    return int(seconds) * 1_000_000_000 + int((fraction + "000000000")[:9])


def _key(path: str) -> str:
    if "\ufffd" in path:
        # Undecodable bytes were replaced: two names may now look alike, so nothing is proved.
        raise ListingError(f"a file name is not valid UTF-8: {path!r}")
    if path == ".":
        return ROOT_KEY
    if not path.startswith("./"):
        raise ListingError(f"unexpected path {path!r}")
    return path[2:]


def parse_listing(root: str, output: str, racy_window_ns: int = RACY_WINDOW_NS) -> Snapshot:
    """The snapshot the listing describes; `ListingError` if it is not complete and well formed."""
    items = output.split("\x00")
    if len(items) < 5 or items[-2:] != [END_MARKER, ""]:
        raise ListingError("the listing is incomplete")
    try:
        taken_at = int(items[0])
    except ValueError:
        raise ListingError(f"no clock reading: {_excerpt(items[0])}") from None
    threshold = taken_at - racy_window_ns
    records: list[tuple[str, str]] = []
    index = 1
    while True:
        if index + 1 >= len(items):
            raise ListingError("the listing has no hashes marker")
        fields, target = items[index], items[index + 1]
        index += 2
        if fields == HASHES_MARKER and target == "":
            break
        records.append((fields, target))
    digests: dict[str, bytes] = {}
    for line in items[index:-2]:
        digest, separator, path = line.partition("  ")
        if not separator or len(digest) != 64:
            raise ListingError(f"malformed hash line {_excerpt(line)}")
        digests[_key(path)] = bytes.fromhex(digest)
    entries: dict[str, Entry] = {}
    for fields_text, target in records:
        fields = fields_text.split(" ", _FIELDS - 1)
        if len(fields) != _FIELDS or fields[0] not in _KINDS:
            raise ListingError(f"malformed record {_excerpt(fields_text)}")
        kind_letter, ino, dev, size, mtime, ctime, perm, uid, gid, nlink, path = fields
        kind = _KINDS[kind_letter]
        try:
            mtime_ns, ctime_ns = _ns(mtime), _ns(ctime)
            numbers = (int(perm, 8), int(uid), int(gid), int(size), int(ino), int(dev), int(nlink))
        except ValueError:
            raise ListingError(f"malformed record {_excerpt(fields_text)}") from None
        mode, uid_n, gid_n, size_n, ino_n, dev_n, nlink_n = numbers
        link_target = target if kind == stat.S_IFLNK else None
        sig = (kind, kind | mode, uid_n, gid_n, size_n, mtime_ns, ctime_ns, ino_n, dev_n, nlink_n, link_target)
        key = _key(path)
        racy = max(mtime_ns, ctime_ns) >= threshold
        entries[key] = Entry(sig, racy, digests.get(key) if kind == stat.S_IFREG else None)
    if ROOT_KEY not in entries:
        raise ListingError("the root is not in the listing")
    return Snapshot(root, entries, {}, frozenset(), taken_at)


def take_channel_snapshot(run: Run, root: str, racy_window_ns: int = RACY_WINDOW_NS) -> Snapshot:
    output, exit_code = run(listing_script(root))
    if exit_code != 0:
        raise ListingError(f"the listing command exited {exit_code}: {output[-FAILED_OUTPUT_TAIL_CHARS:]!r}")
    return parse_listing(root, output, racy_window_ns)


class ChannelDetector:
    """Detects through `run`, for a workspace at `root` as the channel sees it.

    The `root` the Runtime passes to `before`/`after` is ignored: the tree lives behind `run`.
    """

    name = "channel"

    def __init__(self, run: Run, root: str, racy_window_ns: int = RACY_WINDOW_NS) -> None:
        self.run = run
        self.root = root
        self.racy_window_ns = racy_window_ns
        self._baseline: Snapshot | None = None

    @property
    def last_snapshot(self) -> Snapshot | None:
        """The tree as the latest complete listing showed it (None if it was not complete)."""
        return self._baseline

    def _snapshot(self) -> Snapshot | None:
        try:
            return take_channel_snapshot(self.run, self.root, self.racy_window_ns)
        except ListingError:
            return None

    def before(self, root: object, command: str) -> None:
        if self._baseline is None:
            self._baseline = self._snapshot()

    def after(self, root: object, command: str, exit_code: int) -> Changes:
        current = self._snapshot()
        baseline, self._baseline = self._baseline, current
        if baseline is None or current is None:
            return Changes(unknown=True)
        return diff(baseline, current)


def local_run(command: str, cwd: str = "/") -> tuple[str, int]:
    """`run` for the local machine: bash, output and errors together (as mini-swe-agent's)."""
    import subprocess

    completed = subprocess.run(
        ["bash", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    return completed.stdout.decode("utf-8", "surrogateescape"), completed.returncode


class LocalChannelDetector(ChannelDetector):
    """The channel detector over local bash, for `ledger check-detector` and tests: the root is
    the one the Runtime passes, so the listing is checked against the real tree."""

    def __init__(self, racy_window_ns: int = RACY_WINDOW_NS) -> None:
        super().__init__(local_run, "", racy_window_ns)

    def before(self, root: object, command: str) -> None:
        self.root = str(root)
        super().before(root, command)

    def after(self, root: object, command: str, exit_code: int) -> Changes:
        self.root = str(root)
        return super().after(root, command, exit_code)


def make() -> LocalChannelDetector:
    return LocalChannelDetector()
