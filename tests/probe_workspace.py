"""The workspace the probe's tests read: two small files, one in a subdirectory."""

from __future__ import annotations

from pathlib import Path


def make_workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "sub" / "a.txt").write_text("beta\n")
    return workspace.resolve()
