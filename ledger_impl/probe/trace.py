"""The syscall trace of the probe run: which paths the command's processes looked at.

strace from Debian's package, with `--seccomp-bpf`, rather than a seccomp tracer of our own:
strace is maintained against every new kernel's system calls and their argument layouts (a
tracer of our own would have to decode `openat2`, `statx`, `execveat`, ... and keep up), and
with a BPF filter only the traced calls stop the process, so the cost is paid per file call
rather than per system call. `-xx` prints every string as hex, so any byte in a file name
(quotes, newlines, invalid UTF-8) parses the same way; `-y` annotates every descriptor with
its path, which gives the directory of each `*at` call and of `getdents64`.

What `parse` records, per access: the path (absolute, joined to the directory it was looked up
from but not normalized, so a stat later walks the same names), the call, whether it succeeded
(a failed lookup is a dependency too: creating the missing file changes the output), and
whether it only opened for writing (what a redirect to /dev/null does; output, not input).
Relative paths are joined to the calling process's working directory, which is followed
through `chdir`/`fchdir`, inherited at `clone`/`fork`/`vfork`, and read off every `AT_FDCWD<...>`
annotation strace prints. When a relative path's directory cannot be known the trace is
marked incomplete: a dependency set with a hole is never used.

Sockets. A read that asks a server answers with the server's state, which no stat can
revalidate; and a probe that reached a host server through the read-only bind would make it
act (an auditor had a probe make a host daemon write a file). So every call that addresses a
socket or talks over one is traced (`%network`), and the ones that could reach a peer outside
the sandbox, `connect`, `sendto`, `sendmsg` and `sendmmsg`, are refused by strace before they
run (`inject=...:error=ENOENT`): the trace still shows the address the read wanted. Why
injection rather than hiding the host's sockets:

- a Unix socket can live anywhere (the workspace, $HOME, /var/lib, ...), so no set of tmpfs
  mounts over /run and /var/run hides them all; and `--unshare-net` only separates the
  abstract namespace, not sockets named by a path;
- a seccomp filter of our own (`bwrap --seccomp`) cannot read the address a `connect` points
  to, and a call it refuses never reaches the tracer, so the trace would lose what the read
  asked for, and glibc's lookup of nscd's socket before every user or group lookup (`ls -l`)
  would cost every such read its reuse;
- injection holds even when tracing does not: strace's `--seccomp-bpf` filter stops each
  traced call for the tracer, and the kernel fails a stop that has no tracer (a child cloned
  with CLONE_UNTRACED, a tracer that died) with ENOSYS, so the call never runs untraced.
  `io_uring_setup` is refused too (ENOSYS, what a kernel without io_uring answers): a ring
  could connect, send or open files with no system call to trace.

What `parse` records of them: a `connect` to a Unix socket path, as a lookup of that path (its
absence is a dependency, as any failed lookup: glibc's nscd check); every other call that
addresses a peer or moves data over a socket, as a conversation that can never be revalidated
(`Access.socket`). Making a socket, a socket pair or reading its options talks to no one.
"""

from __future__ import annotations

import os
import re
from typing import Final, Iterable

import attrs

# File and process calls, plus the descriptor calls that list a directory or change into one.
TRACED_CALLS: Final = "%file,%process,getdents64,getdents,fchdir,%network,io_uring_setup"
# Refused before they run: the calls that could reach a peer outside the sandbox, and a ring.
REFUSED_CALLS: Final = ("inject=connect,sendto,sendmsg,sendmmsg:error=ENOENT", "inject=io_uring_setup:error=ENOSYS")
STRACE_OPTIONS: Final = (
    "-f", "-qq", "--seccomp-bpf", "-xx", "-y", "-e", f"trace={TRACED_CALLS}", "-e", "signal=none",
    *(option for refused in REFUSED_CALLS for option in ("-e", refused)),
)

_LINE = re.compile(r"^(\d+)\s+(.*)$")
# The ") = " before a call's result: strace pads it to a column after a resumed call, and the
# arguments cannot hold it (`-xx` prints every string in hex).
_RESULT = re.compile(r"\)\s+= ")
_TOKEN = re.compile(r'(?:(AT_FDCWD|-?\d+)<((?:\\x[0-9a-f]{2})*)>, )?"((?:\\x[0-9a-f]{2})*)"|(\d+)<((?:\\x[0-9a-f]{2})*)>')
_CLONES: Final = frozenset({"clone", "clone3", "fork", "vfork"})
_TWO_PATHS: Final = frozenset({"rename", "renameat", "renameat2", "link", "linkat", "mount"})
_SECOND_PATH_ONLY: Final = frozenset({"symlink", "symlinkat"})  # the first is the link's text
_EXECS: Final = frozenset({"execve", "execveat"})
_LISTINGS: Final = frozenset({"getdents64", "getdents"})
# The calls of strace's %network class that address a peer or move data over a socket (the
# others make a socket or read and set its options).
_SOCKET_TALK: Final = frozenset({
    "accept", "accept4", "bind", "connect", "listen", "recv", "recvfrom", "recvmmsg", "recvmsg",
    "send", "sendmmsg", "sendmsg", "sendto", "socketcall",
})
_SOCKET_QUIET: Final = frozenset({"socket", "socketpair", "getsockname", "getpeername", "getsockopt", "setsockopt", "shutdown"})
_UNIX_PATH = re.compile(r'sa_family=AF_UNIX, sun_path="((?:\\x[0-9a-f]{2})*)"')
_FAMILY = re.compile(r"sa_family=(\w+)(, sun_path=@)?")
UNIX_SOCKET: Final = "unix socket path"  # Access.socket of a connect to a socket named by a path


@attrs.frozen
class Access:
    """One path a traced process looked at."""

    path: str
    call: str
    ok: bool
    error: str | None = None  # the errno name of a failed call (ENOENT, EACCES, ...)
    write_only: bool = False
    listing: bool = False
    # A call over a socket: UNIX_SOCKET for a connect to the socket at `path`, else what the
    # conversation was (which never names a file: `path` is empty).
    socket: str | None = None


@attrs.frozen
class Trace:
    accesses: tuple[Access, ...]
    executed: tuple[str, ...]  # programs a successful exec started, in order
    incomplete: str | None = None  # why the trace cannot be trusted to be whole, if so

    @property
    def started(self) -> bool:
        return bool(self.executed)


def _text(hexed: str) -> str:
    return os.fsdecode(bytes.fromhex(hexed.replace("\\x", "")))


def _calls(lines: Iterable[str]) -> Iterable[tuple[int, str]]:
    """(pid, whole call text): an `<unfinished ...>` call joined with its `resumed` rest."""
    pending: dict[int, str] = {}
    for raw in lines:
        match = _LINE.match(raw.rstrip("\n"))
        if match is None:
            continue
        pid, rest = int(match.group(1)), match.group(2)
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")].rstrip()
            continue
        if rest.startswith("<... "):
            head = pending.pop(pid, None)
            marker = rest.find("resumed>")
            if head is None or marker < 0:
                continue
            rest = head + rest[marker + len("resumed>") :]
        yield pid, rest
    # A call still unfinished when the trace ends (its process died in it) may have looked its
    # path up: kept, with a result that says nothing about success.
    for pid, head in pending.items():
        yield pid, head + ") = ?"


def parse(text: str, root: str) -> Trace:
    """The accesses in strace output `text` of a command started in directory `root`."""
    cwd: dict[int, str] = {}
    guessed: dict[int, str] = {}  # processes seen before their parent's clone returned
    accesses: list[Access] = []
    executed: list[str] = []
    incomplete: str | None = None
    for pid, call in _calls(text.splitlines()):
        name, paren, args_and_result = call.partition("(")
        if not paren or not name.isidentifier():
            continue
        separators = list(_RESULT.finditer(args_and_result))
        if not separators:
            incomplete = f"a call of process {pid} has no result to read: {call[:80]}"
            continue
        args, result = args_and_result[: separators[-1].start()], args_and_result[separators[-1].end() :]
        ok = not result.startswith(("-1", "?"))
        error = result.split()[1] if result.startswith("-1 ") and len(result.split()) > 1 else None
        if pid not in cwd:
            inherited = _inherited_cwd(cwd, root)
            if inherited is not None:
                cwd[pid] = inherited
                guessed[pid] = inherited
        if name in _CLONES:
            child_text = result.split("<")[0].strip()
            if ok and child_text.isdigit():
                child = int(child_text)
                if child not in cwd:
                    if pid in cwd:
                        cwd[child] = cwd[pid]
                elif child in guessed and guessed[child] != cwd.get(pid):
                    incomplete = f"process {child} may have started in another directory than guessed"
            continue
        if name in _SOCKET_QUIET:
            continue
        if name in _SOCKET_TALK:
            access = _socket_access(name, args, ok, error, cwd.get(pid))
            if access is None:
                incomplete = f"the working directory of process {pid} is unknown"
            else:
                accesses.append(access)
            continue
        if name in _EXECS:
            args = args.split("[", 1)[0]  # the argv strings are not paths
        wanted = _wanted_positions(name)
        position = 0
        for token in _TOKEN.finditer(args):
            directory_fd, directory, string, fd, fd_path = token.groups()
            if fd is not None:
                if name in _LISTINGS:
                    accesses.append(Access(_text(fd_path), name, ok, error, listing=True))
                elif name == "fchdir" and ok:
                    cwd[pid] = _text(fd_path)
                continue
            if directory_fd == "AT_FDCWD":
                cwd[pid] = _text(directory)
            if position in wanted and directory_fd not in (None, "AT_FDCWD") and not string:
                position += 1
                continue  # an fstat of a descriptor already open (AT_EMPTY_PATH): its open was traced
            if position in wanted:
                path = _text(string)
                if not path.startswith("/"):
                    base = _text(directory) if directory is not None else cwd.get(pid)
                    if base is None:
                        incomplete = f"the working directory of process {pid} is unknown"
                        continue
                    path = os.path.join(base, path) if path else base
                write_only = "O_WRONLY" in args and name in ("open", "openat", "openat2", "creat")
                accesses.append(Access(path, name, ok, error, write_only=write_only))
                if name in _EXECS and ok:
                    executed.append(path)
                if name == "chdir" and ok:
                    cwd[pid] = path
            position += 1
    return Trace(tuple(accesses), tuple(executed), incomplete)


def _socket_access(name: str, args: str, ok: bool, error: str | None, cwd: str | None) -> Access | None:
    """What a socket call asked for; None when it names a relative socket path from a
    directory that cannot be known."""
    unix_path = _UNIX_PATH.search(args)
    if name == "connect" and unix_path is not None:
        path = _text(unix_path.group(1))
        if not path.startswith("/"):
            if cwd is None:
                return None
            path = os.path.join(cwd, path)
        return Access(path, name, ok, error, socket=UNIX_SOCKET)
    family = _FAMILY.search(args)
    if family is None:
        return Access("", name, ok, error, socket=f"{name} over a socket")
    peer = "the abstract Unix namespace" if family.group(2) else family.group(1)
    return Access("", name, ok, error, socket=f"{name} to {peer}")


def _wanted_positions(name: str) -> frozenset[int]:
    if name in _TWO_PATHS:
        return frozenset({0, 1})
    if name in _SECOND_PATH_ONLY:
        return frozenset({1})
    return frozenset({0})


def _inherited_cwd(known: dict[int, str], root: str) -> str | None:
    """The directory a process first seen now started in: strace may print a child's calls
    before its parent's `clone` returns, so the child is given the one directory every known
    process shares, or the root for the first one. Otherwise it stays unknown (an
    `AT_FDCWD<...>` annotation or a `chdir` may still tell)."""
    directories = set(known.values())
    if not known:
        return root
    if len(directories) == 1:
        return next(iter(directories))
    return None
