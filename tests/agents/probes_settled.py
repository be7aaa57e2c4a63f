"""Waiting for the probes Ledger runs after its PostToolUse answers (`ledger_impl.session_probe`).

A scripted model answers at once, faster than any agent's next turn: a repeat would then come
before its read's probe has confirmed it and run again, which is safe but makes which calls are
answered depend on timing. The end-to-end tests call `settle` before each next turn.
"""

from __future__ import annotations

import contextlib
import pathlib
import sqlite3

from ledger_impl.session import DurableSession
from ledger_impl.store import database_path


def settle(workspace: pathlib.Path, state: pathlib.Path) -> None:
    """Until every probe of `workspace`'s session has stored its verdict."""
    with DurableSession.open(workspace, state_dir=state) as session:
        assert session.wait_for_probes(60), "a probe never stored its verdict"


def verdicts(workspace: pathlib.Path, state: pathlib.Path) -> list[tuple[str, str, str | None]]:
    """Each probe's command, status and reason, oldest first: what a failure message needs when
    a repeat was not served (a refused probe is the usual why)."""
    uri = f"file:{database_path(workspace, state)}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        return db.execute("SELECT command, status, reason FROM probes ORDER BY id").fetchall()
