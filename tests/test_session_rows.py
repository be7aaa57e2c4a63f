"""The session store keeps the ledger as rows (`ledger_impl.state_rows`, store format 5): a call
writes what it added, so its cost does not grow with the session, and a process whose last save
is no longer the stored one reads every row again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from fresh_runs import fresh

from ledger_impl import state_rows
from ledger_impl.session import DurableSession
from ledger_impl.store import database_path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    for number in range(30):
        (root / f"f{number}.txt").write_text(f"file {number}\n")
    return root


def _read(session: DurableSession, root: Path, command: str, call_id: str) -> str:
    decision = session.decide(command, call_id=call_id)
    if decision.verdict != "reuse":
        session.record(call_id, *fresh(root, command))
        session.run_queued_probes()
    return decision.verdict


def test_a_call_writes_the_rows_it_added_not_the_session_so_far(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with DurableSession.open(workspace, state_dir=tmp_path / "state") as session:
        written: list[state_rows.RowDelta] = []
        real_save = session._store.save_state

        def counting(policy: str, changes: state_rows.RowDelta, *rest: object) -> None:
            written.append(changes)
            real_save(policy, changes, *rest)  # type: ignore[arg-type]

        monkeypatch.setattr(session._store, "save_state", counting)
        for number in range(30):
            assert _read(session, workspace, f"cat f{number}.txt", f"c{number}") == "allow"
    saves = [len(changes.rows) for changes in written if not changes.rewrites_all]
    assert len(saves) == len(written) - 1, "only the first save writes everything (nothing was stored)"
    # A read decided and recorded writes the same rows at its 30th call as at its 2nd: its
    # observation, its history record and its own command and fingerprint.
    assert saves[-4:] == saves[2:6], saves


def test_a_session_whose_save_is_no_longer_stored_reads_the_other_process_s_rows(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    with DurableSession.open(workspace, state_dir=state) as kept, DurableSession.open(workspace, state_dir=state) as other:
        assert _read(kept, workspace, "cat f1.txt", "k1") == "allow"
        assert _read(other, workspace, "cat f2.txt", "o1") == "allow"  # other reads kept's rows, adds its own
        assert _read(kept, workspace, "cat f2.txt", "k2") == "reuse", "kept sees what other stored"
        assert _read(other, workspace, "cat f1.txt", "o2") == "reuse"
        assert kept.snapshot() == other.snapshot()


def test_a_dropped_output_is_written_again_at_its_position(workspace: Path, tmp_path: Path) -> None:
    """The one entry a log changes in place: an observation whose output is dropped (made
    stale by an edit). Its row must be replaced, or a later process would serve the old output."""
    state = tmp_path / "state"
    with DurableSession.open(workspace, state_dir=state) as session:
        assert _read(session, workspace, "cat f1.txt", "r1") == "allow"
        session.decide("echo changed > f1.txt", call_id="w1")
        session.record("w1", *fresh(workspace, "echo changed > f1.txt"))
    with sqlite3.connect(database_path(workspace, state)) as db:
        (stored,) = db.execute("SELECT value FROM log_entries WHERE log = 'observations' AND position = 0").fetchone()
    assert b"file 1" not in stored, "the stale output is gone from its row"
    with DurableSession.open(workspace, state_dir=state) as session:
        assert _read(session, workspace, "cat f1.txt", "r2") == "allow"


def test_a_row_that_is_not_utf8_is_discarded_by_its_checksum_not_an_error(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    with DurableSession.open(workspace, state_dir=state) as session:
        assert _read(session, workspace, "cat f1.txt", "r1") == "allow"
    with sqlite3.connect(database_path(workspace, state)) as db:
        db.execute("UPDATE log_entries SET value = ? WHERE log = 'observations'", (b"\xff\xfe not text",))
    with DurableSession.open(workspace, state_dir=state) as session:
        decision = session.decide("cat f1.txt", call_id="r2")
    assert decision.verdict == "allow"
    assert "session state discarded: it cannot be read (the checksum of observations entry 0 does not match)" in str(
        decision.degraded)


def test_an_output_rewritten_in_its_row_is_never_served(workspace: Path, tmp_path: Path) -> None:
    """A row edited so that it still decodes (another output in valid JSON) must be caught by
    its checksum: served, it would be an answer no command printed."""
    state = tmp_path / "state"
    with DurableSession.open(workspace, state_dir=state) as session:
        assert _read(session, workspace, "cat f1.txt", "r1") == "allow"
    with sqlite3.connect(database_path(workspace, state)) as db:
        (value,) = db.execute("SELECT value FROM log_entries WHERE log = 'observations'").fetchone()
        assert b"file 1" in value
        db.execute("UPDATE log_entries SET value = ? WHERE log = 'observations'", (value.replace(b"file 1", b"file X"),))
    with DurableSession.open(workspace, state_dir=state) as session:
        decision = session.decide("cat f1.txt", call_id="r2")
    assert decision.verdict == "allow" and "file X" not in (decision.output or "")
    assert "the checksum of observations entry 0 does not match" in str(decision.degraded)


def test_an_entry_of_another_log_s_type_is_refused_as_unreadable(workspace: Path, tmp_path: Path) -> None:
    """A row that decodes, with a valid checksum, but holds a history record where an
    observation belongs: the ledger is discarded with a note, never loaded (or crashed on)."""
    state = tmp_path / "state"
    with DurableSession.open(workspace, state_dir=state) as session:
        assert _read(session, workspace, "cat f1.txt", "r1") == "allow"
    with sqlite3.connect(database_path(workspace, state)) as db:
        (record,) = db.execute("SELECT value FROM log_entries WHERE log = 'history'").fetchone()
        db.execute(
            "UPDATE log_entries SET value = ?, value_sum = ? WHERE log = 'observations'",
            (record, state_rows.checksum(record.decode())),
        )
    with DurableSession.open(workspace, state_dir=state) as session:
        decision = session.decide("cat f1.txt", call_id="r2")
    assert decision.verdict == "allow"
    assert "the observations log holds a CommandRecord" in str(decision.degraded)
