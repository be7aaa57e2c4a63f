"""Where a path word lands: the one model of the root, the working directory and keys.

Both readers of command text need it. The classifier asks which key a read names (resolving
`.`, `..` and, on disk, symbolic links) and whether it stays inside the root; the rules
detector asks which keys a write changes. A `cd` is followed the same way by both: lexically,
as bash does without `-P`, and never out of the root.

A `Workspace` made without a root, or with one that is not a directory, answers lexically:
nothing on disk is consulted, and any absolute path is outside.
"""

from __future__ import annotations

import glob
import os
import posixpath

from . import shell
from .shell import Word


class Workspace:
    """Maps words to keys: inside the root, resolving `.`, `..` and (on disk) symbolic links."""

    def __init__(self, root: str | os.PathLike[str] | None) -> None:
        self.root: str | None = None
        self.real_root: str | None = None
        if root is not None:
            self.root = os.path.normpath(os.path.abspath(os.fspath(root)))
            if os.path.isdir(self.root):
                self.real_root = os.path.realpath(self.root)

    # -- the working directory ------------------------------------------------------------

    def cd(self, cwd: str | None, text: str) -> str | None:
        """The logical working directory after `cd text` from `cwd`, as a key ('.' for the
        root), or None when it is unknown or outside the root."""
        if cwd is None or not text:
            return None
        if text.startswith("/"):
            if self.root is None:
                return None
            absolute = posixpath.normpath(text)
            if not self._within(absolute, self.root):
                return None
            text, cwd = posixpath.relpath(absolute, self.root), "."
        joined = posixpath.normpath(posixpath.join(cwd, text))
        if joined == ".." or joined.startswith("../"):
            return None
        return joined

    def cd_word(self, cwd: str | None, word: Word) -> str | None:
        """`cd` for a shell word: only a word whose value the text alone fixes can be followed."""
        return self.cd(cwd, word.text) if word.static else None

    # -- keys -----------------------------------------------------------------------------

    def relative(self, path: str | os.PathLike[str]) -> str | None:
        """The key of an absolute, already resolved path: '.' for the root, None outside."""
        base = self.real_root or self.root
        if base is None:
            return None
        text = os.fspath(path)
        if not self._within(text, base):
            return None
        rel = os.path.relpath(text, base).replace(os.sep, "/")
        return "." if rel in ("", ".") else rel

    def key(self, cwd: str | None, word: Word) -> str | None:
        """The key a path operand names, '.' for the root itself, None if outside or unknowable."""
        if cwd is None or word.dynamic or word.executes or not word.text:
            return None
        text = word.text
        if word.has_glob and self.real_root is not None:
            # On disk, every match must resolve inside the root: `cat l*/data` can reach
            # through a symbolic link to a directory outside it.
            assert self.root is not None
            pattern = os.path.join(self.root, cwd, text)
            if any(not self._within(os.path.realpath(match), self.real_root) for match in glob.glob(pattern)):
                return None
        if word.has_glob:
            # A pattern is checked through its literal prefix; a component that starts with a dot
            # and holds a glob could match `..` and reach outside.
            for component in text.split("/"):
                if component.startswith(".") and any(g in component for g in shell.GLOB_CHARS):
                    return None
            components = text.split("/")
            literal = []
            for component in components:
                if any(g in component for g in shell.GLOB_CHARS):
                    break
                literal.append(component)
            if ".." in components[len(literal) :]:
                return None
            text = "/".join(literal) or ("/" if text.startswith("/") else ".")
        if self.real_root is not None:
            assert self.root is not None
            return self.relative(os.path.realpath(os.path.join(self.root, cwd, text)))
        return self.cd(cwd, text)

    # -- facts on disk --------------------------------------------------------------------

    def readable_file(self, cwd: str, word: Word) -> bool:
        """On disk: whether the operand is a readable regular file now. Lexically: assumed."""
        if self.real_root is None:
            return True
        assert self.root is not None
        path = os.path.join(self.root, cwd, word.text)
        return os.path.isfile(path) and os.access(path, os.R_OK)

    def holds_repository(self) -> bool:
        """On disk: whether the root holds its git repository. Lexically: assumed."""
        if self.real_root is None:
            return True
        return os.path.lexists(os.path.join(self.real_root, ".git"))

    @staticmethod
    def _within(path: str, base: str) -> bool:
        return path == base or path.startswith(base.rstrip("/") + "/")
