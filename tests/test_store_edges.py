"""The session store at its edges: what a format-4 database's migration keeps and drops, how a
damaged database is set aside, the switch to WAL under contention, and the read-only reads
`ledger sessions` makes. The kept format-4 database is `tests/data/session-format-4.sqlite`
(`stored_databases.py`)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

import pytest

from ledger_impl import state_codec, store
from ledger_impl.session import DurableSession
from stored_databases import install_stored_database
from test_session_store_format import workspace  # noqa: F401  (the same workspace fixture: `a.txt`)


def _notes(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [text for (text,) in db.execute("SELECT text FROM notes ORDER BY id")]


@pytest.mark.parametrize("stat_index", ["kept", None])
def test_a_format_4_migration_keeps_the_step_count_and_the_stat_index(workspace: Path, tmp_path: Path,
                                                                      stat_index: str | None) -> None:
    path = install_stored_database(4, workspace, tmp_path / "state")
    with sqlite3.connect(path) as db:
        if stat_index is None:
            db.execute("UPDATE state SET stat_index = NULL")
        db.execute("UPDATE state SET steps = 41")
        before = db.execute("SELECT stat_index FROM state").fetchone()[0]
    DurableSession.open(workspace, state_dir=tmp_path / "state").close()
    with sqlite3.connect(path) as db:
        steps, after = db.execute("SELECT steps, stat_index FROM state WHERE id = 1").fetchone()
    assert steps == 41 and after == before


@pytest.mark.parametrize("ledger_sum", ["0" * 64, "f" * 64])
def test_a_format_4_ledger_whose_checksum_differs_either_way_is_dropped(workspace: Path, tmp_path: Path,
                                                                        ledger_sum: str) -> None:
    path = install_stored_database(4, workspace, tmp_path / "state")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE state SET ledger_sum = ?", (ledger_sum,))
    DurableSession.open(workspace, state_dir=tmp_path / "state").close()
    assert any("its checksum does not match" in note for note in _notes(path))


@pytest.mark.parametrize("blob, problem", [
    (b"\xff\xfe not text", "it cannot be read"),
    (state_codec.dumps((1, 2)).encode(), "it is not a ledger"),
])
def test_a_format_4_ledger_that_is_not_text_or_not_a_ledger_is_dropped_with_a_note(
        workspace: Path, tmp_path: Path, blob: bytes, problem: str) -> None:
    path = install_stored_database(4, workspace, tmp_path / "state")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE state SET ledger = ?, ledger_sum = ?", (blob, store.checksum(blob)))
    with DurableSession.open(workspace, state_dir=tmp_path / "state") as session:
        assert session.snapshot().observations == ()
    assert any(f"format 4 discarded: {problem}" in note for note in _notes(path))


def test_a_format_3_store_holding_a_ledger_is_told_its_outputs_were_never_probed(workspace: Path, tmp_path: Path) -> None:
    path = install_stored_database(4, workspace, tmp_path / "state")
    with sqlite3.connect(path) as db:  # as Ledger with format 3 left it
        db.execute("DROP TABLE probes")
        db.execute("PRAGMA user_version = 3")
    DurableSession.open(workspace, state_dir=tmp_path / "state").close()
    assert any("format 3" in note and "never probed" in note for note in _notes(path))


class _Switching:
    """A connection whose `PRAGMA journal_mode=WAL` raises `errors` in turn, then succeeds."""

    def __init__(self, *errors: str) -> None:
        self.errors = list(errors)
        self.calls = 0

    def execute(self, statement: str) -> None:
        self.calls += 1
        if self.calls > 200:
            raise AssertionError("still retrying past the deadline")
        if self.errors:
            raise sqlite3.OperationalError(self.errors.pop(0))


def test_switching_to_wal_retries_a_locked_file_and_nothing_else() -> None:
    import time

    locked_twice = _Switching("database is locked", "database is locked")
    store._enter_wal(locked_twice, time.monotonic() + 30)  # type: ignore[arg-type]
    assert locked_twice.calls == 3
    other = _Switching("disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        store._enter_wal(other, time.monotonic() + 30)  # type: ignore[arg-type]
    assert other.calls == 1  # raised at once, not retried until the deadline
    always = _Switching(*["database is locked"] * 1000)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        store._enter_wal(always, time.monotonic() + 0.05)  # type: ignore[arg-type]
    assert always.calls < 200


def test_sessions_are_read_without_writing_and_wherever_the_reader_stands(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ledger sessions` opens each database read-only by its URI: read as a plain file name, the
    URI would name a file in the reader's directory."""
    with DurableSession.open(workspace, state_dir=tmp_path / "state") as session:
        session.decide("cat a.txt", call_id="c1")
        session.record("c1", "alpha\n", 0)
    path = store.database_path(workspace, tmp_path / "state")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    summary = store.summarize(path)
    assert summary.problem is None and summary.root == os.path.realpath(workspace) and summary.steps == 1
    state, rows, notes = store.read_state(path)
    assert state is not None and rows
    assert list(elsewhere.iterdir()) == []


def test_a_stored_value_that_is_not_utf8_is_replaced_for_its_checksum_to_judge() -> None:
    assert store._text(b"ok \xff") == "ok \ufffd"
    assert store._text(b"ok \xed\xa0\x80") == "ok \ud800"  # a lone surrogate, as written
