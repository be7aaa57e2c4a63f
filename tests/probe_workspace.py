"""The workspace the probe's tests read (two small files, one in a subdirectory), and a
directory outside it for outside dependencies: under /var/tmp, since the probe's /tmp is
private and what it hides is simply not served."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def make_workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "sub" / "a.txt").write_text("beta\n")
    return workspace.resolve()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def outside() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="ledger-probe-test-") as directory:
        yield Path(directory)
