"""Session databases kept as test data (`tests/data/session-format-N.sqlite`), installed where
the store looks for a root's database, as if the root had always been theirs."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from ledger_impl.store import database_path

DATA = Path(__file__).parent / "data"


def install_stored_database(version: int, root: Path, state: Path) -> Path:
    """Copy the kept database of format `version` to `root`'s place under `state`; its path."""
    path = database_path(root, state)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / f"session-format-{version}.sqlite", path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == version
        db.execute("UPDATE meta SET value = ? WHERE key = 'root'", (os.path.realpath(root),))
    return path
