"""RulesDetector: what a command changed, read from its text alone.

It knows the idioms whose writes the text names: redirections, `tee`, `sed -i`, `perl -i`,
`mv`/`cp`/`rm`/`touch`/`mkdir`/`ln`/`chmod`, `patch`, `git apply/checkout/...`, `find -delete`.
Anything it cannot see into (`python fix.py`, `make`, a formatter, a test run, `find -exec`)
makes the report `unknown=True`, unless `unknown_for_opaque=False`: that optimistic mode is the
failure the referee warns about (an edit made by a script goes unreported) and exists so the
property suite can show it.

Paths are resolved at `before()` time, while the files still exist under their old names: a
write through a symbolic link changes the link target's key, and the key of a directory that
`rm -r`/`cp -r`/`mv` touches expands to every key listed below it then (and again after, for
what appeared). A written file with more than one hard link changes names the detector cannot
list, so the report is unknown.
"""

from __future__ import annotations

import os
import pathlib

from ledger_spec import Changes

from .. import shell
from ..classifier import Kind, effect_of, sed_script_is_safe
from ..classifier.git import GIT_WRITERS, subcommand
from ..shell import SimpleCommand, Word
from ..workspace import Workspace
from ledger_spec.errors import DetectorFailure

# Programs whose every operand (after options) may be changed, and whether they recurse.
_OPERAND_WRITERS = frozenset({"rm", "touch", "mkdir", "chmod", "chown", "chgrp", "truncate", "rmdir", "unlink",
                              "shred"})


class _Unknown(DetectorFailure):
    """The command's writes cannot be listed."""


class RulesDetector:
    """Reports changed keys for the edit idioms whose targets the command text names."""

    name = "rules"

    def __init__(self, unknown_for_opaque: bool = True) -> None:
        self.unknown_for_opaque = unknown_for_opaque
        self._pending: tuple[pathlib.Path, str, frozenset[str], bool] | None = None

    # -- detector contract ----------------------------------------------------------------

    def before(self, root: pathlib.Path, command: str) -> None:
        root = pathlib.Path(root)
        try:
            paths, unknown = self._predict(root, command)
        except _Unknown:
            paths, unknown = set(), True
        except Exception:  # noqa: BLE001 - a detector that cannot tell says so
            paths, unknown = set(), True
        self._pending = (root, command, frozenset(paths), unknown)

    def after(self, root: pathlib.Path, command: str, exit_code: int) -> Changes:
        root = pathlib.Path(root)
        pending, self._pending = self._pending, None
        if pending is None or pending[0] != root or pending[1] != command:
            return Changes(unknown=True)  # before() was not called for this command
        _, _, predicted, unknown = pending
        paths = set(predicted)
        # Directories seen before may have gained entries (cp -r, mv into a directory).
        workspace = Workspace(root)
        for key in predicted:
            paths.update(_keys_below(workspace, key))
        # Creating or removing an entry changes its directory (mtime), and mkdir -p creates
        # every missing ancestor: report each ancestor too; over-reporting only costs reuse.
        for key in list(paths):
            parts = key.split("/")
            paths.update("/".join(parts[:i]) for i in range(1, len(parts)))
        paths = {p for p in paths if p != "."}
        return Changes(paths=frozenset(paths), unknown=unknown)

    # -- prediction ------------------------------------------------------------------------

    def _predict(self, root: pathlib.Path, command: str) -> tuple[set[str], bool]:
        try:
            script = shell.parse(command)
        except shell.ShellSyntaxError:
            return set(), True
        real_root = pathlib.Path(os.path.realpath(root))
        workspace = Workspace(real_root)
        paths: set[str] = set()
        unknown = False
        cwd: str | None = "."
        for statement in script.statements:
            for index, pipeline in enumerate(statement.pipelines):
                start = cwd
                # In a pipeline of several commands each runs in its own subshell: a `cd` there
                # moves nothing that follows.
                in_subshells = len(pipeline.commands) > 1
                for simple in pipeline.commands:
                    try:
                        moved = self._command(workspace, start if in_subshells else cwd, simple, paths)
                    except _Unknown:
                        unknown = True
                        moved = cwd
                    if not in_subshells:
                        cwd = moved
                chained = index < len(statement.connectors) and statement.connectors[index] == "&&"
                if cwd != start and not chained:
                    cwd = None  # after `;` or `||` the cd may have failed: later paths are unknown
        return paths, unknown

    def _command(self, workspace: Workspace, cwd: str | None, command: SimpleCommand, paths: set[str]) -> str | None:
        """Add the keys `command` may change to `paths`; return the working directory after it."""
        if command.compound is not None or command.assignments:
            raise _Unknown
        if any(w.dynamic or w.executes for w in command.words):
            raise _Unknown
        for redirect in command.redirects:
            # An expanded here-document, or a target whose expansion runs code (a here-string
            # or an input file named by `$(...)`, which runs even though nothing is written).
            if redirect.dynamic or (redirect.target is not None and redirect.target.executes):
                raise _Unknown
            if redirect.writes_file:
                if redirect.target is None or not redirect.target.static:
                    raise _Unknown
                paths.update(self._keys(workspace, cwd, redirect.target, follow=True))
        if not command.words:
            return cwd
        name = command.name
        args = command.args
        if name == "cd":
            # Following a cd whose success is uncertain would put later paths in the wrong place.
            if len(args) != 1 or not args[0].static or cwd is None:
                return None
            return workspace.cd(cwd, args[0].text)
        if name is None:
            raise _Unknown
        effect = effect_of(command)
        if effect.kind in (Kind.READS, Kind.FILTER, Kind.NEUTRAL, Kind.CD):
            return cwd
        operands = plain_operands(args)
        if any(w.has_glob for w in args):
            raise _Unknown  # which files a pattern names is known only when the shell expands it
        if name == "sed":
            if effect.kind is not Kind.EDIT:
                return self._opaque(cwd)
            return self._sed_in_place(workspace, cwd, args, paths)
        if name == "perl":
            # perl -i names its files, but its code can write anything else.
            for word in operands[1:]:
                paths.update(self._keys(workspace, cwd, word, follow=True))
            return self._opaque(cwd)
        if name == "tee":
            for word in operands:
                paths.update(self._keys(workspace, cwd, word, follow=True))
            return cwd
        if name in _OPERAND_WRITERS:
            # rm and chmod -R recurse into directories: every key below is listed.
            removes = name in ("rm", "rmdir", "unlink")
            for word in operands:
                paths.update(self._keys(workspace, cwd, word, follow=not removes))
            return cwd
        if name in ("mv", "cp", "ln", "install"):
            if any(_names_target_directory(w.text) for w in args):
                raise _Unknown  # the directory written into is not an operand
            if any(_makes_backups(w.text) for w in args):
                raise _Unknown  # a backup (`f~`, `f.~1~`, `f.orig`) is named by flags and VERSION_CONTROL
            for word in operands:
                # mv removes the source name and creates the destination (or an entry inside it).
                paths.update(self._keys(workspace, cwd, word, follow=True))
            if operands:
                dest = operands[-1]
                for source in operands[:-1]:
                    inside = Word(((dest.text.rstrip("/") + "/" + os.path.basename(source.text.rstrip("/")), False),))
                    # cp writes through a link already there (mv and ln replace it: over-reported).
                    paths.update(self._keys(workspace, cwd, inside, follow=True))
            return cwd
        if name == "patch":
            raise _Unknown  # the files a patch touches are named inside the patch, not the command
        if name == "git":
            index = subcommand(args)
            if index is not None and args[index].text in GIT_WRITERS:
                raise _Unknown  # any file in the work tree and .git itself
            return self._opaque(cwd)
        if name == "find" and effect.kind is Kind.EDIT:
            raise _Unknown
        return self._opaque(cwd)

    def _sed_in_place(self, workspace: Workspace, cwd: str | None, args: list[Word], paths: set[str]) -> str | None:
        scripts: list[str] = []
        files: list[Word] = []
        suffix = ""
        i = 0
        while i < len(args):
            text = args[i].text
            if text == "--":
                files.extend(args[i + 1 :])  # after `--` every word is an operand, even `-x`
                break
            if text in ("-e", "--expression", "-f", "--file", "-l", "--line-length"):
                if text in ("-f", "--file"):
                    raise _Unknown
                scripts.append(args[i + 1].text if i + 1 < len(args) else "")
                i += 2
                continue
            if text.startswith("--expression="):
                scripts.append(text.partition("=")[2])
            elif text.startswith("--in-place="):
                suffix = text.partition("=")[2]
            elif text.startswith("-") and not text.startswith("--") and "i" in text[1:]:
                # -i, -ni, -i.bak: what follows i in the cluster is the backup suffix.
                suffix = text[text.index("i", 1) + 1 :]
            elif not text.startswith("-") or text == "-":
                files.append(args[i])
            i += 1
        if not scripts:
            if not files:
                raise _Unknown
            scripts, files = [files[0].text], files[1:]
        if not sed_script_is_safe("\n".join(scripts)):
            raise _Unknown  # w, W, e or s///w write or run elsewhere
        if "*" in suffix or "/" in suffix:
            raise _Unknown
        for word in files:
            paths.update(self._keys(workspace, cwd, word, follow=True))
            if suffix:
                paths.update(self._keys(workspace, cwd, Word(((word.text + suffix, False),)), follow=False))
        return cwd

    def _opaque(self, cwd: str | None) -> str | None:
        if self.unknown_for_opaque:
            raise _Unknown
        return cwd

    def _keys(self, workspace: Workspace, cwd: str | None, word: Word, follow: bool) -> set[str]:
        """Keys a write to `word` changes: the name itself, the file it links to if `follow`,
        and for a directory everything below it. Raises _Unknown outside the root, and for a
        file with other hard links, named or below a named directory: writing it changes their
        contents, and removing or replacing it their link count, under names not listed here."""
        if cwd is None or not word.static or not word.text:
            raise _Unknown
        if word.text == "/dev/null":
            return set()
        path = pathlib.Path(os.path.join(str(workspace.real_root or workspace.root), cwd, word.text))
        name = pathlib.PurePosixPath(word.text).name
        if name in ("", ".", "..") or word.text.endswith("/"):
            named = pathlib.Path(os.path.realpath(path))
        else:
            named = pathlib.Path(os.path.realpath(path.parent)) / name
        resolved = pathlib.Path(os.path.realpath(path)) if follow else named
        keys: set[str] = set()
        for candidate in {named, resolved}:
            key = workspace.relative(candidate)
            if key is None:
                raise _Unknown  # a write outside the root may be visible through a link inside it
            if key != ".":
                keys.add(key)
        key = workspace.relative(resolved) or "."
        if os.path.islink(named) and not follow:
            return keys
        try:
            stat = os.lstat(resolved)
        except OSError:
            return keys
        if not os.path.isdir(resolved) and stat.st_nlink > 1:
            raise _Unknown  # other names of this inode are not known
        if os.path.isdir(resolved) and not os.path.islink(resolved):
            # rm -r, chmod -R, cp -r into it reach a hard-linked file's other names.
            keys.update(_keys_below(workspace, key, hard_links_unknown=True))
        return keys


def plain_operands(args: list[Word]) -> list[Word]:
    """The operands of a GNU-style command: words that are not options, and every word after
    the first `--`, even one that starts with a dash (`rm -- -a.txt` removes `-a.txt`)."""
    operands: list[Word] = []
    for index, word in enumerate(args):
        if word.text == "--":
            return operands + list(args[index + 1 :])
        if not word.text.startswith("-") or word.text == "-":
            operands.append(word)
    return operands


def _keys_below(workspace: Workspace, key: str, *, hard_links_unknown: bool = False) -> set[str]:
    """Every key under directory `key` (not following links), or nothing if it is not one.
    With `hard_links_unknown`, raises _Unknown if a file below has more than one name."""
    if workspace.real_root is None:
        return set()
    root = pathlib.Path(workspace.real_root)
    base = root / key if key != "." else root
    if not base.is_dir() or base.is_symlink():
        return set()
    keys: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            rel = workspace.relative(os.path.join(dirpath, name))
            if rel is not None and rel != ".":
                keys.add(rel)
        if hard_links_unknown and any(_has_other_names(os.path.join(dirpath, name)) for name in filenames):
            raise _Unknown
    return keys


def _has_other_names(path: str) -> bool:
    try:
        return os.lstat(path).st_nlink > 1
    except OSError:
        return False  # gone since the walk listed it: it has no other name to change


def _long_option(argument: str, *names: str) -> bool:
    """Whether `argument` is one of the long options `names`, in any spelling GNU getopt
    accepts: the whole name or a prefix of it (`--targ=DIR` is `--target-directory=DIR`), with
    or without `=VALUE`. A prefix shared with another option is ambiguous, so getopt rejects it;
    counting it too only makes the report unknown."""
    if not argument.startswith("--") or argument == "--":
        return False
    given = argument[2:].partition("=")[0]
    return any(name.startswith(given) for name in names)


def _short_options(argument: str, letters: str) -> bool:
    """Whether `argument` is a cluster of short options holding one of `letters` (`-vt`,
    `-tDIR`). A letter in an option's attached value counts too: that only makes the report
    unknown."""
    return argument.startswith("-") and not argument.startswith("--") and any(c in argument[1:] for c in letters)


def _names_target_directory(argument: str) -> bool:
    """Whether a cp/mv/ln/install argument names the directory to write into (-t DIR, -tDIR,
    -vt DIR, --target-directory=DIR, --targ=DIR)."""
    return _long_option(argument, "target-directory") or _short_options(argument, "t")


def _makes_backups(argument: str) -> bool:
    """Whether a cp/mv/ln/install argument asks for backup copies (-b, -S SUFFIX, --backup,
    --suffix=SUFFIX, which implies backups, and their prefixes `--back`, `--suf=`)."""
    return _long_option(argument, "backup", "suffix") or _short_options(argument, "bS")
