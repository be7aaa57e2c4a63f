"""Which recorded steps audit replays, and the shell command each becomes in the copy.

The recorded workspace path (`/testbed` for SWE-bench runs, the session's cwd for Claude Code)
is rewritten to the copy's path; nothing else in a command changes. Claude Code's file tools
become the shell commands that do the same thing, so that every step goes through the Runtime,
its detector and the ground truth alike.

A step is skipped, with its reason, when it installs packages, uses the network, controls
processes (`pkill -f python` could end the audit), or may write outside the workspace and /tmp.
A step that certainly writes outside (a redirection or a file tool naming such a path) is not
skipped silently: it makes the trajectory bad input (`OutsideWrite`), unless the caller asked
to skip those too.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ledger_impl import RulesDetector, classify, shell
from ledger_spec.values import READ_ONLY

from .formats import FileEdit, FileRead, FileWrite, Item, Shell, Skipped
from ledger_spec.errors import InvalidInput

PACKAGE_INSTALL = "package install"
NETWORK = "network"
PROCESS_CONTROL = "process control"
MAY_WRITE_OUTSIDE = "may write outside workspace"
WRITES_OUTSIDE = "writes outside workspace"

_START = r"(?:^|[\s;&|(`])"  # a program name starts a word
_INSTALL = re.compile(
    r"\bpip[\d.]*['\"]?\s*,?\s*['\"]?(?:install|uninstall|download)\b"
    r"|\bsetup\.py\s+(?:install|develop|build_ext|build|bdist\w*|sdist|egg_info)\b"
    rf"|{_START}(?:conda|mamba|micromamba|apt|apt-get|dpkg|yum|dnf|apk|brew|poetry|pipx|easy_install|npm|yarn)\s"
    rf"|{_START}uv\s+(?:pip|add|sync)\b"
)
_NETWORK = re.compile(
    rf"{_START}(?:curl|wget|ssh|scp|rsync|nc|ncat|telnet|ftp|sftp)\s"
    r"|\bgit\s+(?:clone|fetch|pull|push|ls-remote|submodule)\b"
)
_PROCESS = re.compile(rf"{_START}(?:kill|pkill|killall|sudo|su|reboot|shutdown|systemctl|service)\s")
_ABSOLUTE_PATH = re.compile(r"(?<![\w./~$-])/(?:[\w.+@-]+(?:/[\w.+@*-]*)*|(?=[\s'\";)|&*]|$))")
_DEEP_ESCAPE = re.compile(r"\.\./\.\./\.\.")
# Absolute names agents mention that never receive a write here.
HARMLESS_PATHS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/usr/bin/env", "/bin/bash", "/bin/sh",
     "/usr/bin/python", "/usr/bin/python3", "/usr/bin/bash"}
)
WRITABLE_PREFIXES: tuple[str, ...] = ("/tmp",)

# Claude Code's Edit, as a program: exit 1 without writing when the old text is absent, or
# ambiguous without replace_all, as the tool refuses.
_EDIT_PROGRAM = """import sys
path, old, new, every = sys.argv[1:]
text = open(path, encoding="utf-8").read()
count = text.count(old)
if count == 0:
    sys.exit("old_string not found")
if count > 1 and every != "1":
    sys.exit("old_string is not unique")
open(path, "w", encoding="utf-8").write(text.replace(old, new, -1 if every == "1" else 1))
"""


class OutsideWrite(InvalidInput, ValueError):
    """A step that certainly writes outside the workspace: bad input, not something to run."""


def rewrite(text: str, recorded_root: str, workspace: Path) -> str:
    """`text` as it would read had the agent worked in `workspace` instead of `recorded_root`."""
    if recorded_root.rstrip("/") == "":
        return text  # a root of `/` cannot be told apart from any other absolute path
    return text.replace(recorded_root.rstrip("/"), str(workspace))


def _allowed(workspace: Path, protected: tuple[str, ...], path: str) -> bool:
    """Whether a write to `path` stays in the workspace or /tmp, and off the protected paths
    (the user's repository, which may itself live under /tmp)."""
    if any(_inside(path, (p,)) for p in protected):
        return False
    return _inside(path, (str(workspace),) + WRITABLE_PREFIXES)


def to_command(item: Item, recorded_root: str, workspace: Path, protected: tuple[str, ...] = ()) -> str:
    """The shell command that replays `item` in `workspace` (not for `Skipped`)."""
    if isinstance(item, Shell):
        return rewrite(item.command, recorded_root, workspace)
    path = _file_path(item, recorded_root, workspace, protected)  # type: ignore[arg-type]
    quoted = shlex.quote(path)
    if isinstance(item, FileRead):
        return f"sed -n '{item.offset},{item.offset + item.limit - 1}p' {quoted}"
    if isinstance(item, FileWrite):
        return f"printf '%s' {shlex.quote(item.content)} > {quoted}"
    if isinstance(item, FileEdit):
        every = "1" if item.replace_all else "0"
        return f"python3 -c {shlex.quote(_EDIT_PROGRAM)} {quoted} {shlex.quote(item.old)} {shlex.quote(item.new)} {every}"
    raise TypeError(f"no command for {type(item).__name__}")


def _file_path(item: FileRead | FileWrite | FileEdit, recorded_root: str, workspace: Path, protected: tuple[str, ...]) -> str:
    path = rewrite(item.path, recorded_root, workspace)
    if not path.startswith("/"):
        path = str(workspace / path)
    if not isinstance(item, FileRead) and not _allowed(workspace, protected, path):
        raise OutsideWrite(f"step {item.index + 1} ({type(item).__name__}) writes {item.path}, outside the workspace")
    return path


def _inside(path: str, prefixes: tuple[str, ...]) -> bool:
    normal = str(Path(path).resolve()) if path.startswith("/") else path
    return any(normal == p or normal.startswith(p.rstrip("/") + "/") for p in prefixes)


def skip_reason(item: Item, command: str, workspace: Path, protected: tuple[str, ...] = ()) -> str | None:
    """Why the step must not run (None: run it). Raises `OutsideWrite` for a certain escape."""
    if isinstance(item, Skipped):
        return item.reason
    if not isinstance(item, Shell):
        return None  # file tools were checked when their command was built
    if _INSTALL.search(command):
        return PACKAGE_INSTALL
    if _NETWORK.search(command):
        return NETWORK
    if _PROCESS.search(command):
        return PROCESS_CONTROL
    escape = _redirect_outside(command, workspace, protected)
    if escape is not None:
        raise OutsideWrite(f"step {item.index + 1} redirects output to {escape}, outside the workspace: {command[:120]!r}")
    if classify(command, root=workspace).category in READ_ONLY:
        return None  # the classifier's read-only verdict is what its tests check against real runs
    if _writes_listed_inside(command, workspace):
        return None
    if _DEEP_ESCAPE.search(command):
        return MAY_WRITE_OUTSIDE
    for match in _ABSOLUTE_PATH.finditer(command):
        path = match.group(0).rstrip("/") or "/"
        if path in HARMLESS_PATHS or path.startswith("/dev/fd/") or _allowed(workspace, protected, path):
            continue
        return MAY_WRITE_OUTSIDE
    return None


def _redirect_outside(command: str, workspace: Path, protected: tuple[str, ...] = ()) -> str | None:
    """An absolute path outside the workspace and /tmp that a redirection writes, if any."""
    try:
        script = shell.parse(command)
    except shell.ShellSyntaxError:
        return None
    for simple in script.commands():
        for redirect in simple.redirects:
            target = redirect.target
            if not redirect.writes_file or target is None or not target.static:
                continue
            path = target.text
            if path.startswith("/") and path not in HARMLESS_PATHS and not path.startswith("/dev/") and not _allowed(workspace, protected, path):
                return path
    return None


def _writes_listed_inside(command: str, workspace: Path) -> bool:
    """Whether the RulesDetector can list every key `command` writes: it says "unknown" for a
    write outside the root and for anything it cannot see into, so a definite report means
    every write lands inside the workspace. It only reads the tree; nothing is run."""
    detector = RulesDetector()
    try:
        detector.before(workspace, command)
        return not detector.after(workspace, command, 0).unknown
    except Exception:  # noqa: BLE001 - unsure means skip
        return False


# A stand-in for the copy's path when checking a trajectory before any copy exists.
_PLACEHOLDER = Path("/ledger-audit-workspace")


def certain_escape(item: Item, recorded_root: str, protected: tuple[str, ...] = ()) -> str | None:
    """Why `item` certainly writes outside the workspace, checked before anything runs."""
    if isinstance(item, Skipped):
        return None
    try:
        command = to_command(item, recorded_root, _PLACEHOLDER, protected)
    except OutsideWrite as error:
        return str(error)
    if not isinstance(item, Shell) or any(p.search(command) for p in (_INSTALL, _NETWORK, _PROCESS)):
        return None  # skipped anyway
    target = _redirect_outside(command, _PLACEHOLDER, protected)
    if target is None:
        return None
    return f"step {item.index + 1} redirects output to {target}, outside the workspace: {item.command[:120]!r}"
