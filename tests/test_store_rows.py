"""The session store's rows and its opening checks, read back in-process (`ledger_impl.store`).

The session tests reach the store through the session, and `ledger sessions` through the CLI
in a subprocess, which the mutation run's coverage does not trace: these tests pin what each
row reads back as, and which databases opening refuses (written for the survivors of the
store's mutation run, issue 23).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path

import pytest
from stored_databases import install_stored_database

from ledger_impl import state_rows
from ledger_impl.store import (
    SCHEMA_VERSION, PendingRow, StateRow, Store, database_path, discarded_databases, list_sessions, read_state,
    summarize,
)
from ledger_spec import Changes, State
from ledger_spec.values import Modification

# A ledger state of two modifications, as rows (`state_rows`).
_TWO_CHANGES = State(step=3, modifications=(Modification(0, Changes(frozenset({"a.txt"}))), Modification(2, Changes(unknown=True))))
_ROWS, _ = state_rows.changes(_TWO_CHANGES, None)

@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def _set_version(path: Path, version: int) -> None:
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {version}")


def test_a_database_is_named_by_the_hash_of_the_root_s_real_path_and_its_cleaned_name(tmp_path: Path) -> None:
    """The name is the format (docs/internals/session-store.md): another name after an
    upgrade would leave every existing session behind."""
    root = tmp_path / ("a b$c-d_e.f" + "x" * 45)
    root.mkdir()
    digest = hashlib.sha256(os.path.realpath(root).encode()).hexdigest()
    assert database_path(root, tmp_path / "state") == tmp_path / "state" / "sessions" / (
        f"{digest[:16]}-a_b_c-d_e.f{'x' * 29}.sqlite")
    assert database_path("/", tmp_path / "state").name.endswith("-root.sqlite")


@pytest.mark.parametrize("version", [-1, 1, SCHEMA_VERSION + 1])
def test_a_database_of_an_unknown_format_is_set_aside_with_a_note(root: Path, tmp_path: Path, version: int) -> None:
    """A format this Ledger does not know (older than any migration, or written by a newer
    Ledger) is never read as its own: it is moved aside and a new store starts."""
    state = tmp_path / "state"
    Store.open(root, state).close()
    _set_version(database_path(root, state), version)
    store = Store.open(root, state)
    try:
        assert any(f"schema version {version}" in note for note in store.opening_notes), store.opening_notes
        assert len(discarded_databases(state)) == 1
        assert sqlite3.connect(store.path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        store.close()


def test_a_database_of_format_4_is_opened_with_its_ledger(root: Path, tmp_path: Path) -> None:
    """A store this Ledger wrote (format 4, kept as `tests/data/session-format-4.sqlite`: one
    read recorded and probed) opens with its ledger and nothing set aside, today as after any
    later format's migration: a format number moved without a migration from 4 would set every
    existing session aside."""
    state = tmp_path / "state"
    install_stored_database(4, root, state)
    store = Store.open(root, state)
    try:
        assert store.opening_notes == [] and discarded_databases(state) == []
        assert store.load_state() is not None
    finally:
        store.close()


def test_a_database_with_a_damaged_page_is_set_aside_with_a_note(root: Path, tmp_path: Path) -> None:
    """The file opens and its header reads, but `PRAGMA quick_check` finds a damaged table:
    nothing in it is trusted."""
    state = tmp_path / "state"
    store = Store.open(root, state)
    store.close()
    path = database_path(root, state)
    with sqlite3.connect(path) as db:
        # An index's page: SQLite reads a damaged table page as "malformed" at once, but
        # reports a damaged index only through the check.
        page = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'probes_by_command'").fetchone()[0]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    damaged = bytearray(path.read_bytes())
    damaged[(page - 1) * page_size:page * page_size] = b"\xff" * page_size
    path.write_bytes(bytes(damaged))
    store = Store.open(root, state)
    try:
        assert any("integrity check failed" in note for note in store.opening_notes), store.opening_notes
        assert len(discarded_databases(state)) == 1
    finally:
        store.close()


@pytest.mark.parametrize("names", [("aaa", "zzz"), ("zzz", "aaa")], ids=["sorting-after", "sorting-before"])
def test_a_database_of_another_root_is_set_aside_with_a_note(tmp_path: Path, names: tuple[str, str]) -> None:
    state = tmp_path / "state"
    first, second = (tmp_path / name for name in names)
    first.mkdir()
    second.mkdir()
    Store.open(first, state).close()
    os.replace(database_path(first, state), database_path(second, state))
    store = Store.open(second, state)
    try:
        assert any(f"belongs to {os.path.realpath(first)!r}" in note for note in store.opening_notes), store.opening_notes
        assert store.meta("root") == os.path.realpath(second)
        assert store.meta("no-such-key") is None
    finally:
        store.close()


def test_opening_without_create_finds_an_existing_store_and_makes_none(root: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    with pytest.raises(FileNotFoundError):
        Store.open(root, state, create=False)
    assert not database_path(root, state).exists()
    Store.open(root, state).close()
    Store.open(root, state, create=False).close()


@pytest.mark.parametrize("stat_index", [b"index", None])
def test_the_state_row_reads_back_as_it_was_saved(root: Path, tmp_path: Path, stat_index: bytes | None) -> None:
    store = Store.open(root, tmp_path / "state")
    before = time.time()
    with store.transaction():
        store.save_state("policy", _ROWS, "revision", stat_index, 7)
    after = time.time()
    row = store.load_state()
    rows = store.load_rows()
    store.close()
    assert row is not None and before <= row.updated_at <= after
    assert row == StateRow("policy", _ROWS.header, state_rows.checksum(_ROWS.header), "revision", stat_index, 7, row.updated_at)
    assert sorted(rows, key=repr) == sorted(_ROWS.rows, key=repr)
    assert state_rows.decode(row.header, rows)[0] == _TWO_CHANGES
    assert read_state(store.path)[:2] == (row, rows)


def test_a_save_that_rewrites_all_clears_the_rows_of_the_ledger_before(root: Path, tmp_path: Path) -> None:
    """A save from an unknown state (a ledger discarded, another policy) writes every row: rows
    of the ledger before that it does not overwrite must not survive to be read with it."""
    store = Store.open(root, tmp_path / "state")
    with store.transaction():
        store.save_state("policy", _ROWS, "first", None, 3)
    smaller, _ = state_rows.changes(State(step=1, modifications=_TWO_CHANGES.modifications[:1]), None)
    with store.transaction():
        store.save_state("policy", smaller, "second", None, 1)
    rows = store.load_rows()
    store.close()
    assert sorted(rows, key=repr) == sorted(smaller.rows, key=repr)


def test_pending_calls_read_back_as_they_were_added_oldest_first(root: Path, tmp_path: Path) -> None:
    rows = [PendingRow("late", "ls", 9, False, 20.5, True), PendingRow("early", "cat a.txt", 4, True, 10.25, False)]
    store = Store.open(root, tmp_path / "state")
    with store.transaction():
        for row in rows:
            store.add_pending(row)
    assert store.pending() == rows[::-1]
    store.close()


def test_a_note_is_taken_once_and_the_latest_twenty_are_listed(root: Path, tmp_path: Path) -> None:
    store = Store.open(root, tmp_path / "state")
    with store.transaction():
        for number in range(25):
            store.add_note(f"note {number}")
    with store.transaction():
        assert len(store.take_unshown_notes()) == 25
    with store.transaction():
        assert store.take_unshown_notes() == []
    assert [text for _, text in store.notes()] == [f"note {number}" for number in range(5, 25)]
    store.close()


def test_a_failed_transaction_leaves_nothing_and_the_store_usable(root: Path, tmp_path: Path) -> None:
    store = Store.open(root, tmp_path / "state")
    with store.transaction():
        store.add_note("kept")
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.add_note("dropped")
            raise RuntimeError("the caller failed")
    with store.transaction():
        store.add_note("after")
    assert [text for _, text in store.notes()] == ["kept", "after"]
    store.close()


def test_a_session_s_summary_counts_its_steps_and_pending_calls(root: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    store = Store.open(root, state)
    empty = summarize(store.path)
    assert (empty.root, empty.steps, empty.pending, empty.abandoned, empty.updated_at, empty.problem) == (
        os.path.realpath(root), 0, 0, 0, None, None)
    with store.transaction():
        store.save_state("policy", _ROWS, "revision", None, 7)
        store.add_pending(PendingRow("c1", "ls", 0, False, 1.0))
        store.add_pending(PendingRow("c2", "ls", 0, False, 2.0, abandoned=True))
        store.add_pending(PendingRow("c3", "ls", 0, False, 3.0, abandoned=True))
    saved = store.load_state()
    store.close()
    (summary,) = list_sessions(state)
    assert saved is not None
    assert (summary.root, summary.steps, summary.pending, summary.abandoned, summary.updated_at, summary.problem) == (
        os.path.realpath(root), 7, 1, 2, saved.updated_at, None)
    assert summary.ident == database_path(root, state).name[:16] and len(summary.ident) == 16


@pytest.mark.parametrize("version", [SCHEMA_VERSION - 1, SCHEMA_VERSION + 1, None], ids=["older", "newer", "not-a-database"])
def test_a_session_that_cannot_be_read_is_summarized_as_unreadable_and_empty(
    root: Path, tmp_path: Path, version: int | None
) -> None:
    state = tmp_path / "state"
    path = database_path(root, state)
    Store.open(root, state).close()
    if version is None:
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"not a database at all" * 100)
    else:
        _set_version(path, version)
    summary = summarize(path)
    assert (summary.root, summary.steps, summary.pending, summary.abandoned, summary.updated_at) == (None, 0, 0, 0, None)
    assert summary.problem is not None and summary.problem.startswith("unreadable: ")
    if version is not None:
        assert f"schema version {version}" in summary.problem
