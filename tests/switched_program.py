"""A program on PATH whose version a symbolic link selects, as update-alternatives or a version
manager's `current` link does. Switched to another version and back, every stat the
fingerprint takes is as it was (the PATH directory and the link on it are untouched, the
selected file is the same file), so only a fingerprint taken while the command ran can tell
that the output came from the other version."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


class SwitchedProgram:
    """`name` on a PATH directory of its own, run as version "a" (the system's program) or "b"
    (the same, after printing a line of its own)."""

    def __init__(self, base: Path, name: str = "cat") -> None:
        system = shutil.which(name, path=os.confstr("CS_PATH"))
        assert system is not None, f"no system {name}"
        versions = base / "versions"
        for version, first_line in (("a", ""), ("b", f"echo '{name} version b'\n")):
            program = versions / version / name
            program.parent.mkdir(parents=True)
            program.write_text(f'#!/bin/sh\n{first_line}exec {system} "$@"\n')
            program.chmod(0o755)
        self._current = versions / "current"
        self.switch("a")
        self.directory = base / "shims"
        self.directory.mkdir()
        (self.directory / name).symlink_to(self._current / name)

    def switch(self, version: str) -> None:
        """Select `version`, replacing the link atomically as the tools that do this do."""
        staged = self._current.with_name("staged")
        staged.symlink_to(version)
        os.replace(staged, self._current)

    def search_path(self, path: str) -> str:
        """`path` with this program's directory first."""
        return f"{self.directory}:{path}"
