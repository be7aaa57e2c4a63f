"""The observation fingerprint: what a read's output depends on outside the counters' view.

The counters answer "did the detector report a change to what this read names". They cannot
see the program PATH resolves (a `head` dropped into a directory earlier on PATH), the
environment (`LC_ALL`, `LS_COLORS`, `BASH_FUNC_cat%%`, ...), the root itself being deleted and
recreated or an ancestor swapped, git's repository and configuration outside the root, or a
file whose inode was changed through a name the detector never heard of (a hard link made
from outside). The fingerprint is a second, independent line of defense: the Runtime takes it
when it records an observation and again before every Reuse, and `ledger_spec` serves a
Reuse only if the two are equal. Taking one costs `stat` calls and the reading of small
configuration files (cached by their stat identity); no command runs.

What `take` puts in a `Fingerprint`:

  root        (dev, ino) of the root and of every ancestor up to `/`;
  paths       for a file target, the lstat identity of every directory from the root to the
              file (dev, ino, mode, uid, gid: the path resolves to the same objects with the
              same permissions) and the file's full identity (dev, ino, nlink, size, mtime_ns,
              ctime_ns, mode, uid, gid); for a tree target, the directories from the root to
              its scope. Names as typed are not included: the classifier resolves symlinks
              when it classifies, so a retargeted link gives a different target, and every
              spelling that one observation serves (`./a`, `cd src && cat a`, another line
              range) must give the same fingerprint;
  programs    every program the command runs, resolved as bash does (exported function, then
              builtin, then the first executable on PATH), as realpath plus identity; for a
              file target also every line-printing tool a narrower range could be served to
              (cat, head, tail, sed, awk, nl), because range reuse answers one with another's
              output; and bash itself;
  spelling    the command text, only when a line tool is not the system's own: range reuse
              applies the real tools' semantics, so another spelling is served only when the
              tools are the real ones;
  environment the whole environment the command runs with. The list of variables tools read
              is open-ended (LANG/LC_*, TZ, GIT_*, GREP_*, LS_COLORS, TIME_STYLE, QUOTING_STYLE,
              BLOCK_SIZE, POSIXLY_CORRECT, GLOBIGNORE, BASH_ENV, BASH_FUNC_*, XDG_*, PYTHON*,
              ...): comparing all of it cannot miss one; plus the identity of the files
              BASH_ENV and RIPGREP_CONFIG_PATH name, which bash and rg read at start;
  git         for a command that runs git: see `ledger_impl.git_inputs`.

`take` returns None when the command cannot be fingerprinted (it does not parse, runs a
program whose name is computed, a compound command, or a git read that may run a configured
program): such a result is never reused. Those are refusals by design. A git read whose inputs
could not all be found (more configuration, refs or worktrees than `git_inputs` looks at, an
include it cannot resolve) is refused too, but that is a bound of Ledger's, not a property of
the command: `take_or_refusal` says so as a `Degraded`, which the drivers show the user.

Directories on the path are compared by (dev, ino, mode, uid, gid) rather than the full
identity: their mtime, ctime, size and link count move whenever a sibling is created or
removed, which says nothing about the file read and would cost every Reuse near a busy file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Mapping

import attrs

from ledger_spec import Command, FileTarget
from ledger_spec.degraded import Cause, Degraded, Effect

from . import git_inputs, shell

# Tools whose output one file read may be served to another through range reuse.
LINE_TOOLS: Final = ("awk", "cat", "head", "nl", "sed", "tail")

# bash's builtins and reserved words as of bash 5: never looked up on PATH.
BASH_BUILTINS: Final = frozenset(
    ". : [ alias bg bind break builtin caller cd command compgen complete compopt continue declare dirs "
    "disown echo enable eval exec exit export false fc fg getopts hash help history jobs kill let local "
    "logout mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend "
    "test times trap true type typeset ulimit umask unalias unset wait "
    "if then else elif fi case esac for select while until do done in function time { } ! [[ ]] coproc".split()
)
# Wrappers that run the program named by their first non-option operand.
_WRAPPERS: Final = frozenset({"command", "builtin", "exec", "env", "nice", "nohup", "timeout", "stdbuf", "time"})
_FILES_READ_AT_START: Final = ("BASH_ENV", "RIPGREP_CONFIG_PATH")

Identity = tuple[object, ...]


@attrs.frozen
class Fingerprint:
    """Everything outside the counters' view that one read's output depends on. Compare with
    `==`; it is hashable, so the ledger can index observations by it."""

    root: tuple[Identity, ...]
    paths: tuple[tuple[str, object], ...]
    programs: tuple[tuple[str, object], ...]
    environment: tuple[tuple[str, str], ...]
    files_read_at_start: tuple[tuple[str, Identity], ...]
    git: object | None
    spelling: str | None = None
    """The command as typed, when a line tool is not the system's own (see `_line_tools_standard`):
    then only the same command is served, never another spelling or range of the same file."""


def take(root: Path, command: Command, env: Mapping[str, str]) -> Fingerprint | None:
    """The fingerprint of `command` run by `bash -c` in `root` with environment `env`, now;
    None if it cannot be fingerprinted (never reuse it)."""
    found = take_or_refusal(root, command, env)
    return found if isinstance(found, Fingerprint) else None


# git_inputs' reasons that are Ledger's own limits rather than the command's nature.
_UNKNOWN_INPUTS: Final = (git_inputs.BEYOND_LIMITS, git_inputs.UNRESOLVABLE)


def take_or_refusal(root: Path, command: Command, env: Mapping[str, str]) -> Fingerprint | Degraded | None:
    """`take`, except that a read refused because its inputs could not all be found gives why
    (a `Degraded`: the user is told), not None."""
    try:
        script = shell.parse(command.text)
    except shell.ShellSyntaxError:
        return None
    root_text = os.fspath(root)
    root_chain = _root_chain(root_text)
    if root_chain is None:
        return None
    names: list[str] = ["bash"]
    git_config: list[tuple[str, str]] = []
    runs_git = False
    for simple in script.commands():
        if simple.compound is not None:
            return None  # a subshell, loop or function hides the programs it runs
        if not simple.words:
            continue
        called = _called_programs(simple)
        if called is None:
            return None
        names.extend(called)
        if _runs_git(called):
            runs_git = True
            git_config.extend(_command_line_config(simple))
    if isinstance(command.target, FileTarget):
        names.extend(LINE_TOOLS)
    # A builtin cannot change under the command (an exported function overriding it is in
    # the environment); leaving builtins out keeps `cd src && cat a` equal to `cat src/a`.
    programs = _resolve_all(sorted(set(names) - BASH_BUILTINS), env, root_text)
    # Range reuse answers one spelling with another's output by applying the line tools'
    # semantics itself, which is right only for the system's own tools. A tool shadowed before
    # the read was recorded resolves the same at both fingerprints, so equality alone cannot
    # tell; the command text then makes only a verbatim repeat match.
    # So is a start file (BASH_ENV): it runs before the command and can print, or define a
    # function over a line tool, and the output is then not the file's lines alone.
    start_file = isinstance(command.target, FileTarget) and bool(env.get("BASH_ENV"))
    spelling = command.text if start_file else None
    if isinstance(command.target, FileTarget) and not _line_tools_standard(programs, root_text):
        spelling = command.text
    target = command.target
    if isinstance(target, FileTarget):
        paths: tuple[tuple[str, object], ...] = ((target.key, _key_chain(root_text, target.key, whole_last=True)),)
    elif target is not None and target.scope != ".":
        paths = ((target.scope, _key_chain(root_text, target.scope, whole_last=False)),)
    else:
        paths = ()
    git: object | None = None
    if runs_git:
        git = git_inputs.inputs(root_text, env, git_config)
        if git in _UNKNOWN_INPUTS:
            return Degraded(Cause.INPUTS_UNKNOWN, (str(git),), Effect.NOT_SERVED)
        if isinstance(git, str):
            return None  # runs a configured program: its output is whatever that prints
    return Fingerprint(
        root=root_chain,
        paths=paths,
        programs=programs,
        environment=_environment(env),
        files_read_at_start=tuple(
            (name, git_inputs.identity(env[name])) for name in _FILES_READ_AT_START if env.get(name)
        ),
        git=git,
        spelling=spelling,
    )


def repository_outside_the_root(root: Path, command: Command) -> bool:
    """Whether `command` may run git on a repository whose `.git` is a file (a linked worktree,
    a submodule, `--separate-git-dir`). Such a repository's index, refs and objects lie outside
    the root, where no detector looks: only a fingerprint covers them, so with the fingerprint
    off such a read must not be reused. Unparsable or compound text counts as running git."""
    if not os.path.isfile(os.path.join(root, ".git")):
        return False
    try:
        script = shell.parse(command.text)
    except shell.ShellSyntaxError:
        return True
    for simple in script.commands():
        if simple.compound is not None:
            return True
        called = _called_programs(simple) if simple.words else []
        if called is None or _runs_git(called):
            return True
    return False


def _runs_git(called: list[str]) -> bool:
    return any(name == "git" or name.endswith("/git") for name in called)


def _root_chain(root: str) -> tuple[Identity, ...] | None:
    """(dev, ino) of `root` and each ancestor, or None if one cannot be stat'ed."""
    chain: list[Identity] = []
    path = os.path.abspath(root)
    while True:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        chain.append((st.st_dev, st.st_ino, st.st_mode))
        parent = os.path.dirname(path)
        if parent == path:
            return tuple(chain)
        path = parent


def _key_chain(root: str, key: str, *, whole_last: bool) -> tuple[Identity, ...]:
    """Each directory from the root down to `key` by (dev, ino, mode, uid, gid), then, with
    `whole_last`, the file's full identity; stops at the first name that cannot be stat'ed."""
    chain: list[Identity] = []
    path = root
    parts = key.split("/")
    for index, part in enumerate(parts):
        path = os.path.join(path, part)
        found = git_inputs.identity(path)
        if found[0] == "absent" or (whole_last and index == len(parts) - 1):
            chain.append(found)
            break
        dev, ino, _nlink, _size, _mtime, _ctime, mode, uid, gid = found
        chain.append((dev, ino, mode, uid, gid))
    return tuple(chain)


def _called_programs(simple: shell.SimpleCommand) -> list[str] | None:
    """The program names a simple command runs: its own, and a wrapper's operand."""
    name = simple.name
    if name is None:
        return None
    called = [name]
    if name in _WRAPPERS:
        for word in simple.args:
            if not word.static:
                return None
            text = word.text
            if text.startswith("-") or (name == "env" and "=" in text) or (name == "timeout" and text[:1].isdigit()):
                continue
            called.append(text)
            break
    return called


def _command_line_config(simple: shell.SimpleCommand) -> list[tuple[str, str]]:
    """`git -c key=value` pairs given before the subcommand."""
    pairs: list[tuple[str, str]] = []
    args = simple.args
    for index, word in enumerate(args):
        text = word.text
        if text == "-c" and index + 1 < len(args):
            key, _, value = args[index + 1].text.partition("=")
            pairs.append((key, value or "true"))
        elif text.startswith("--config-env"):
            pairs.append(("diff.external", "unknown"))  # a value we cannot see: refuse
    return pairs


_last_environment: tuple[dict[str, str], tuple[tuple[str, str], ...]] = ({}, ())


def _environment(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The environment as a sorted tuple; the last one is kept, since it rarely changes."""
    global _last_environment
    if env != _last_environment[0]:
        _last_environment = (dict(env), tuple(sorted(env.items())))
    return _last_environment[1]


class _PathLookup:
    """Which file each name resolves to on one PATH, valid while no PATH directory changes:
    a program added, removed or renamed in a directory changes that directory's mtime/ctime,
    so the directories' identities are the key and a lookup is a few stat calls."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._found: dict[str, str | None] = {}

    def candidate(self, name: str, directories: list[str], key: tuple[object, ...]) -> str | None:
        if key != self._key:
            self._key, self._found = key, {}
        if name not in self._found:
            self._found[name] = _search(name, directories)
        return self._found[name]


def _search(name: str, directories: list[str]) -> str | None:
    for directory in directories:
        candidate = os.path.join(directory, name)
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if (st.st_mode & 0o170000) == 0o100000 and os.access(candidate, os.X_OK):
            return candidate
    return None


_lookups: dict[tuple[str, str], _PathLookup] = {}


def _resolve_all(names: list[str], env: Mapping[str, str], cwd: str) -> tuple[tuple[str, object], ...]:
    """What bash runs for each name: an exported function, a builtin, or a file (its path and
    the identity of what it resolves to, symlinks followed: a retargeted link or a file
    rewritten in place changes it), in bash's order; a name not found is recorded as such,
    with the PATH directories' identities (a program may appear in one)."""
    search_path = env.get("PATH", os.defpath)
    directories = [directory or cwd for directory in search_path.split(":")]
    key = tuple(_directory_identity(directory) for directory in directories)
    lookup = _lookups.get((search_path, cwd))
    if lookup is None:
        if len(_lookups) > 64:
            _lookups.clear()
        lookup = _lookups[(search_path, cwd)] = _PathLookup()
    resolved: list[tuple[str, object]] = []
    for name in names:
        if f"BASH_FUNC_{name}%%" in env:
            resolved.append((name, ("function", env[f"BASH_FUNC_{name}%%"])))
        elif name in BASH_BUILTINS:
            resolved.append((name, ("builtin",)))
        elif "/" in name:
            path = os.path.join(cwd, name)
            resolved.append((name, ("file", path, _followed_identity(path))))
        else:
            candidate = lookup.candidate(name, directories, key)
            found = ("not-found", key) if candidate is None else ("file", candidate, _followed_identity(candidate))
            resolved.append((name, found))
    return tuple(resolved)


# The system's own search path (POSIX `confstr(_CS_PATH)`): where the standard utilities are.
SYSTEM_PATH: Final = os.confstr("CS_PATH") if "CS_PATH" in os.confstr_names else "/bin:/usr/bin"


def _line_tools_standard(programs: tuple[tuple[str, object], ...], cwd: str) -> bool:
    """Whether every line tool resolves to the same file as on the system's own search path
    (not an exported function, not another file earlier on PATH, not missing)."""
    resolved = dict(programs)
    system = dict(_resolve_all(list(LINE_TOOLS), {"PATH": SYSTEM_PATH}, cwd))
    for tool in LINE_TOOLS:
        ours, theirs = resolved.get(tool), system[tool]
        if not (isinstance(ours, tuple) and ours[0] == "file" and theirs[0] == "file"):  # type: ignore[index]
            return False
        if ours[2] != theirs[2] or ours[2][0] == "absent":  # type: ignore[index]
            return False
    return True


def _directory_identity(path: str) -> Identity:
    try:
        st = os.stat(path)
    except OSError as error:
        return ("absent", error.errno)
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def _followed_identity(path: str) -> Identity:
    try:
        st = os.stat(path)
    except OSError as error:
        return ("absent", error.errno)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_uid, st.st_gid)
