"""Redundant re-reads, judged by the ground truth whatever Ledger decided (the perfect ledger).

Every key has a version that the ground truth advances whenever the key really changes, and
the tree has one that advances on any change. A completed read is **redundant** when

  verbatim    the same normalized command ran before, printed the same output and exit status,
              and nothing it depends on changed since (its file's version for a file target,
              the tree's version otherwise); or
  sub-range   it reads lines inside an earlier, successful read of the same file and view
              (plain, `cat -n`, `nl -ba`), the file unchanged since.

What counts as a read is decided here independently of the classifier (`is_inspection`: only
programs that print what they read, with no writing redirection or flag), so that a read the
classifier calls `run` still counts as a re-read Ledger could not serve.
"""

from __future__ import annotations

import collections
import os
import re

import attrs

from ledger_impl import shell
from ledger_spec import Command, FileTarget
from ledger_spec.values import READ_ONLY, SLICEABLE_VIEWS, LineRange

VERBATIM = "verbatim"
SUB_RANGE = "sub-range"

INSPECTION_TOOLS = frozenset(
    {"cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "find", "ls", "wc", "nl", "sort", "uniq",
     "cut", "tr", "diff", "file", "stat", "tree", "du", "echo", "printf", "pwd", "true", "cd", "awk",
     "sed", "less", "more", "column", "comm", "basename", "dirname", "realpath", "readlink", "xargs",
     "git"}
)
_WRITING_FLAGS = re.compile(r"(^|\s)(-i\S*|--in-place\S*|-exec\S*|-delete|-ok|-fprint\S*)(\s|$)")
_GIT_INSPECTION = frozenset({"status", "diff", "log", "show", "blame", "ls-files", "grep", "rev-parse"})
_XARGS_READERS = frozenset({"grep", "cat", "wc", "head", "ls"})


def is_inspection(command: str) -> bool:
    """Whether `command` is made only of programs that print what they read, writing nothing."""
    try:
        script = shell.parse(command)
    except shell.ShellSyntaxError:
        return False
    simples = script.commands()
    if not simples:
        return False
    for simple in simples:
        if simple.compound is not None or any(r.writes_file for r in simple.redirects):
            return False
        name = simple.name
        if name not in INSPECTION_TOOLS or _WRITING_FLAGS.search(simple.text):
            return False
        args = [w.text for w in simple.args]
        if name == "git" and not (args and args[0] in _GIT_INSPECTION):
            return False
        if name == "xargs" and not (args and os.path.basename(args[-1] if len(args) == 1 else args[0]) in _XARGS_READERS):
            return False
    return True


@attrs.frozen
class _Seen:
    normalized: str
    file_key: str | None
    lines: LineRange | None
    view: str | None
    version: int
    output: str
    exit_code: int


class PerfectLedger:
    """Per-key and tree versions from the ground truth, and the reads seen at each version."""

    def __init__(self) -> None:
        self.versions: collections.Counter[str] = collections.Counter()
        self.tree_version = 0
        self._seen: list[_Seen] = []

    def advance(self, changed: frozenset[str]) -> None:
        """Record keys the ground truth saw change."""
        for key in changed:
            self.versions[key] += 1
        if changed:
            self.tree_version += 1

    def _dependency(self, command: Command) -> tuple[str | None, int]:
        target = command.target
        if isinstance(target, FileTarget):
            return target.key, self.versions[target.key]
        return None, self.tree_version

    @staticmethod
    def _is_read(command: Command) -> bool:
        return command.category in READ_ONLY or is_inspection(command.text)

    def judge(self, command: Command, output: str, exit_code: int) -> str | None:
        """`VERBATIM`, `SUB_RANGE` or None: whether an earlier read could have served this one."""
        if not self._is_read(command):
            return None
        key, version = self._dependency(command)
        target = command.target
        for seen in self._seen:
            if (
                seen.normalized == command.normalized
                and seen.file_key == key
                and seen.version == version
                and (seen.output, seen.exit_code) == (output, exit_code)
            ):
                return VERBATIM
        if isinstance(target, FileTarget) and target.view in SLICEABLE_VIEWS:
            for seen in self._seen:
                if (
                    seen.file_key == target.key
                    and seen.view == target.view
                    and seen.version == version
                    and seen.exit_code == 0
                    and seen.lines is not None
                    and seen.lines.covers(target.lines)
                ):
                    return SUB_RANGE
        return None

    def observe(self, command: Command, output: str, exit_code: int) -> None:
        """Remember a completed read (call after `advance` for its step)."""
        if not self._is_read(command):
            return
        key, version = self._dependency(command)
        target = command.target
        file_target = target if isinstance(target, FileTarget) else None
        self._seen.append(
            _Seen(
                command.normalized, key, file_target.lines if file_target else None, file_target.view if file_target else None,
                version, output, exit_code,
            )
        )
