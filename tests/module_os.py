"""The os module with some functions replaced, for one module under test."""

from __future__ import annotations

import os


class ModuleOs:
    """Put in place of a module's `os` (`monkeypatch.setattr(module, "os", ModuleOs(read=...))`):
    the replaced functions are seen by that module only, and other threads of the test process
    (xdist's, a server's) keep the real ones."""

    def __init__(self, **replaced: object) -> None:
        self._replaced = replaced

    def __getattr__(self, name: str) -> object:
        return self._replaced[name] if name in self._replaced else getattr(os, name)
