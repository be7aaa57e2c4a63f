"""Fixtures the agents' payload tests share: a small workspace and a real session on it."""

from __future__ import annotations

import pathlib
from typing import Iterator

import pytest

from ledger_impl.session import DurableSession


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    """`src/app.py` holding two lines and `notes.txt` ("alpha\\nbeta\\n"), in a temporary
    directory; a test module may define its own."""
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("x = 1\ny = 2\n")
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root


@pytest.fixture
def session(workspace: pathlib.Path, tmp_path: pathlib.Path, request: pytest.FixtureRequest) -> Iterator[DurableSession]:
    """A DurableSession on `workspace`, its state outside it. A test module that feeds an
    agent's payloads with outputs made up for them sets `SESSION_PROBE = False`: a probe would
    (rightly) refuse those outputs; the agent's real-CLI test runs with the probe."""
    probe = getattr(request.module, "SESSION_PROBE", True)
    with DurableSession.open(workspace, state_dir=tmp_path / "state", probe=probe) as opened:
        yield opened
