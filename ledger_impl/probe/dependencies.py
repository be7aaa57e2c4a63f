"""The traced set as an observation's dependencies, and their revalidation at Reuse.

Each path a probe looked at is either inside the root or outside it:

- inside, it is a key whose counter the detector moves (`inside`), and a directory listed
  inside the root (`listed_inside`) is a dependency on every key below it, which per-key
  counters cannot name: the global counter stands for it. A file (not a directory: their
  times move with every sibling) is also compared by its lstat identity, which costs one
  stat and catches what a detector missed (an attribute change moves only the ctime);
- outside, it is revalidated by its identity: lstat and stat (dev, ino, nlink, size, mtime,
  ctime, mode, uid, gid, or the error) and, for a regular file of at most `HASHED_BYTES`, a
  hash of its content, so a same-size rewrite with the old times restored is still seen.

The root's ancestors are the exception: they are compared by (dev, ino, mode, uid, gid), as
the fingerprint compares them, since bash stats them at every start.

Some dependencies can never be revalidated, and make the read never reusable (`never`): a
device, FIFO or socket, anything under /proc, /sys or /dev (except /dev/null, which is always
empty, a write-only open, which is output, and the few accesses in `EXEMPT_PSEUDO`), a
write-only open that succeeded on the host's side of the sandbox (`_reached_the_host`: a FIFO
or device, which a read-only bind does not close), a path inside the root on another filesystem
than the root's (a mount inside the workspace: the detector's watches do not cross into it),
a conversation over a socket (`socket_reason`: a server's answer rests on its state, which
nothing here can revalidate; a `connect` the probe refused to a Unix socket path where nothing
exists is a failed lookup instead), an outside path whose state now contradicts what the probe saw (found where the probe found
nothing), or one changed since the command started (its ctime is at or after the start,
minus `CTIME_SLACK_NS` for the kernel's coarse clock): what the probe read and what is
recorded may then differ.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Final, Iterable

import attrs

from . import clock
from .trace import UNIX_SOCKET, Access

HASHED_BYTES: Final = 64 * 1024
# The kernel stamps ctime from a coarse clock that lags the real time by up to one tick
# (10 ms at HZ=100); a change made just after the command started may carry a ctime this
# much before the start.
CTIME_SLACK_NS: Final = 20_000_000
PSEUDO_ROOTS: Final = ("/proc", "/sys", "/dev")
ALWAYS_EMPTY: Final = frozenset({"/dev/null"})
# Pseudo-file accesses that say nothing about the world the read looks at, each seen in the
# traces of everyday reads (the corpus's commands), with why it is exempt:
EXEMPT_PSEUDO: Final = frozenset({
    ("/dev/tty", "ENXIO"),  # bash asks for a terminal; both runs are in sessions of their own
    ("/sys/fs/selinux", "ENOENT"),  # libselinux: SELinux is not mounted (constant per boot)
    ("/proc/filesystems", None),  # libselinux: the kernel's filesystem types
    ("/proc/self/maps", None),  # PCRE2's JIT reads its own process's memory map
})

Identity = tuple[object, ...]


@attrs.frozen
class OutsideDependency:
    path: str
    identity: Identity


@attrs.frozen
class DependencySet:
    """What one probed read depends on, as recorded right after its probe."""

    inside: frozenset[str]  # keys relative to the root
    listed_inside: bool  # a directory inside the root was listed
    outside: tuple[OutsideDependency, ...]
    never: str | None = None  # why this read can never be reused, if so
    # The lstat identity of each non-directory inside the root: a change the detector missed
    # (an attribute set by `chattr` moves only the ctime) still shows.
    inside_files: tuple[OutsideDependency, ...] = ()


def _stat_identity(result: os.stat_result) -> Identity:
    return (
        result.st_dev, result.st_ino, result.st_nlink, result.st_size, result.st_mtime_ns, result.st_ctime_ns,
        result.st_mode, result.st_uid, result.st_gid,
    )


_digests: dict[tuple[str, Identity], str] = {}
_DIGEST_CACHE_LIMIT: Final = 4096


def identity(path: str) -> Identity:
    """lstat and stat identity of `path` (or the error), plus a content hash of a small
    regular file (cached by its identity: a change moves the identity first)."""
    try:
        linked: Identity = _stat_identity(os.lstat(path))
    except OSError as error:
        return ("absent", error.errno)
    try:
        followed_stat = os.stat(path)
    except OSError as error:
        return (linked, ("absent", error.errno))
    followed = _stat_identity(followed_stat)
    digest = None
    if stat.S_ISREG(followed_stat.st_mode) and followed_stat.st_size <= HASHED_BYTES:
        key = (path, followed)
        digest = _digests.get(key)
        if digest is None:
            try:
                with open(path, "rb") as handle:
                    digest = hashlib.blake2b(handle.read(HASHED_BYTES + 1), digest_size=16).hexdigest()
            except OSError as error:
                digest = f"unreadable {error.errno}"
            if len(_digests) > _DIGEST_CACHE_LIMIT:
                _digests.clear()
            _digests[key] = digest
    return (linked, followed, digest)


def directory_identity(path: str) -> Identity:
    """(dev, ino, mode, uid, gid) of a directory on the way to the root, or the error."""
    try:
        found = os.stat(path)
    except OSError as error:
        return ("absent", error.errno)
    return ("directory", found.st_dev, found.st_ino, found.st_mode, found.st_uid, found.st_gid)


def _ancestors(root: str) -> frozenset[str]:
    found = set()
    path = root
    while path != "/":
        path = os.path.dirname(path)
        found.add(path)
    return frozenset(found)


def _inside(path: str, root: str) -> str | None:
    if path == root:
        return "."
    if path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return None


def _real(path: str, directories: dict[str, str]) -> str:
    """os.path.realpath(path), with each directory's real path computed once (a search of a
    tree looks up thousands of names in a few hundred directories)."""
    directory, name = os.path.split(path)
    if name in ("", ".", ".."):
        return os.path.realpath(path)
    real_directory = directories.get(directory)
    if real_directory is None:
        real_directory = directories[directory] = os.path.realpath(directory)
    candidate = os.path.join(real_directory, name)
    return os.path.realpath(candidate) if os.path.islink(candidate) else candidate


def _pseudo(path: str) -> bool:
    return any(path == top or path.startswith(top + "/") for top in PSEUDO_ROOTS)


def _reached_the_host(path: str, root: str) -> str | None:
    """Why a write-only open that succeeded reached outside the sandbox, or None. The sandbox's
    own /dev and /proc and its private /tmp take writes; everywhere else the host is bound
    read-only, where only a FIFO, socket or device opens for writing (no read-only mount stops
    that), and a reader on the host then receives what the probe writes."""
    own = any(path == top or path.startswith(top + "/") for top in ("/dev", "/proc", "/tmp"))
    if own and _inside(path, root) is None:
        return None
    return f"opens {path} for writing: a FIFO or device the read-only sandbox does not close"


def _special(mode: int) -> bool:
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _talks_to_a_socket(access: Access) -> str | None:
    if access.socket is None:
        return None
    if access.socket != UNIX_SOCKET:
        return f"talks over a socket ({access.socket})"
    if access.ok or os.path.lexists(access.path):
        return f"asks the socket {access.path}"
    return None  # refused before any socket was reached, and none is there: a failed lookup


def socket_reason(accesses: Iterable[Access]) -> str | None:
    """Why the read talked to a socket, if it did: never reusable (and the probe, refused its
    conversation, may print something else than the agent saw)."""
    return next((reason for reason in map(_talks_to_a_socket, accesses) if reason is not None), None)


def collect(accesses: Iterable[Access], root: str, started_ns: int) -> DependencySet:
    """The dependency set of a probe's accesses, with each outside path's identity now, for
    a command started at `started_ns` (time.time_ns())."""
    root_dev = os.stat(root).st_dev
    ancestors = _ancestors(root)
    inside: set[str] = set()
    inside_files: dict[str, OutsideDependency] = {}
    listed_inside = False
    outside: dict[str, OutsideDependency] = {}
    directories: dict[str, str] = {}  # a directory as traced -> its real path
    seen: set[Access] = set()
    for access in accesses:
        if access in seen:
            continue  # a search opens, stats and reads one file with several calls
        seen.add(access)
        talked = _talks_to_a_socket(access)
        if talked is not None:
            return _never(talked)
        path = access.path
        normal = os.path.normpath(path)
        if clock.own_file(normal) or normal in ALWAYS_EMPTY or (normal, access.error) in EXEMPT_PSEUDO:
            continue
        if access.write_only:  # output, not input; unless it reached the host
            reached = _reached_the_host(normal, root) if access.ok else None
            if reached is not None:
                return _never(reached)
            continue
        real = _real(path, directories)
        if _pseudo(normal) or _pseudo(real):
            return _never(f"reads {normal}, under a pseudo-filesystem")
        keys = {key for key in (_inside(normal, root), _inside(real, root)) if key is not None}
        if keys:
            inside.update(keys)
            listed_inside = listed_inside or access.listing
            try:
                found = os.lstat(real)
            except OSError:
                continue  # absent: creating it is a change the detector reports
            if not stat.S_ISDIR(found.st_mode) and real not in inside_files:
                inside_files[real] = OutsideDependency(real, lstat_identity(real))
            if _special(found.st_mode):
                return _never(f"{os.path.relpath(real, root)} is a device, FIFO or socket")
            if found.st_dev != root_dev:
                return _never(f"{os.path.relpath(real, root)} is on another filesystem than the workspace")
            continue
        if normal in outside:
            continue
        if normal in ancestors:
            # bash stats the root's ancestors to check $PWD at every start; their times move
            # whenever a sibling of the workspace comes or goes (a busy /tmp), which says
            # nothing about the read: they are compared as the fingerprint compares them.
            outside[normal] = OutsideDependency(normal, directory_identity(normal))
            continue
        now = identity(normal)
        if now[0] == "absent":
            if access.ok:
                return _never(f"{normal} is gone since the probe read it")
        else:
            if access.error == "ENOENT":
                return _never(f"{normal} exists, but the probe found nothing there")
            followed = now[1]
            if followed[0] != "absent":
                mode, ctime = followed[6], followed[5]
                if _special(mode):  # type: ignore[arg-type]
                    return _never(f"{normal} is a device, FIFO or socket")
                if ctime >= started_ns - CTIME_SLACK_NS:  # type: ignore[operator]
                    return _never(f"{normal} changed while the command ran")
        outside[normal] = OutsideDependency(normal, now)
    return DependencySet(frozenset(inside), listed_inside, tuple(outside.values()), None, tuple(inside_files.values()))


def _never(reason: str) -> DependencySet:
    return DependencySet(frozenset(), False, (), reason)


def lstat_identity(path: str) -> Identity:
    """("lstat", dev, ino, ...) of a file inside the root, or the error."""
    try:
        return ("lstat", *_stat_identity(os.lstat(path)))
    except OSError as error:
        return ("absent", error.errno)


def identity_now(dependency: OutsideDependency) -> Identity:
    """The dependency's identity now, measured the way its recorded one was."""
    kind = dependency.identity[0]
    measure = directory_identity if kind == "directory" else lstat_identity if kind == "lstat" else identity
    return measure(dependency.path)


def first_changed(dependencies: DependencySet) -> str | None:
    """The first dependency (outside, or a file inside) whose identity moved, or the
    never-reusable reason, or None if all hold."""
    if dependencies.never is not None:
        return dependencies.never
    for dependency in (*dependencies.outside, *dependencies.inside_files):
        if identity_now(dependency) != dependency.identity:
            return f"{dependency.path} changed"
    return None
