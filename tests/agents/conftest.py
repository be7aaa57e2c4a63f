"""Fixtures the agents' payload tests share: a workspace and a durable session over it."""

from __future__ import annotations

import pathlib
from typing import Iterator

import pytest

from ledger_impl.session import DurableSession


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    """A workspace holding `notes.txt` ("alpha\\nbeta\\n"); a test module may define its own."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root


@pytest.fixture
def session(workspace: pathlib.Path, tmp_path: pathlib.Path) -> Iterator[DurableSession]:
    with DurableSession.open(workspace, state_dir=tmp_path / "state") as opened:
        yield opened
