"""Adversarial sequences against DurableSession: each test is a counterexample found by hand
(a stale Reuse or a lost update) or a guard shown to fail under a deliberate mutation. Every
Reuse is compared byte for byte with a fresh run of the command at that moment."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest

from ledger_impl import DurableSession
from ledger_impl.detectors.stat_index import StatIndex
from fresh_runs import fresh


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("bravo\n")
    return root


@pytest.fixture
def session(workspace: Path, tmp_path: Path):
    with DurableSession.open(workspace, state_dir=tmp_path / "state") as opened:
        yield opened


def run(session: DurableSession, root: Path, command: str, call_id: str):
    decision = session.decide(command, call_id=call_id)
    if decision.verdict != "reuse":
        session.record(call_id, *fresh(root, command))
    return decision


def assert_not_stale(session: DurableSession, root: Path, command: str, call_id: str) -> None:
    decision = session.decide(command, call_id=call_id)
    if decision.verdict == "reuse":
        assert (decision.output, decision.exit_code) == fresh(root, command)


# --- duplicate call ids -----------------------------------------------------------------------


def test_a_call_id_decided_twice_never_attributes_one_result_to_the_other(workspace: Path, session: DurableSession) -> None:
    # Counterexample: the second decide replaced the first's pending row, so `cat a.txt`'s
    # output was recorded as the observation of `cat b.txt` and served for it.
    session.decide("cat a.txt", call_id="dup")
    session.decide("cat b.txt", call_id="dup")
    session.record("dup", *fresh(workspace, "cat a.txt"))
    assert_not_stale(session, workspace, "cat b.txt", "later")


def test_a_call_id_reused_while_its_write_is_pending_is_not_served(workspace: Path, session: DurableSession) -> None:
    # Counterexample: the writer in flight was excluded from the "writers still running" check
    # because it had the same id as the read being decided, so the read was served while the
    # write had not landed yet.
    run(session, workspace, "cat a.txt", "1")
    session.decide("echo changed > a.txt", call_id="dup")
    assert session.decide("cat a.txt", call_id="dup").verdict != "reuse"


def test_a_call_id_decided_again_keeps_the_earlier_call_s_may_write_flag(
    workspace: Path, session: DurableSession
) -> None:
    # The earlier call under the id (a write) may still be running when the id is decided again
    # as a read: until a record for the id comes, nothing is served, as with any writer in flight.
    session.decide("echo changed > a.txt", call_id="dup")
    session.decide("cat b.txt", call_id="dup")
    run(session, workspace, "cat a.txt", "after")  # observed after the unknown scope of the re-decide
    session.run_queued_probes()
    decision = session.decide("cat a.txt", call_id="blocked")
    assert decision.verdict != "reuse" and "may write" in str(decision.degraded or "")
    session.record("dup", *fresh(workspace, "cat b.txt"))
    session.record("blocked", *fresh(workspace, "cat a.txt"))
    session.run_queued_probes()
    assert session.decide("cat a.txt", call_id="served").verdict == "reuse", "the block lifts with the id's record"


def test_a_duplicate_id_is_visible(workspace: Path, session: DurableSession) -> None:
    session.decide("cat a.txt", call_id="dup")
    assert "dup" in str(session.decide("cat b.txt", call_id="dup").degraded or "")


# --- text that is not valid UTF-8 -------------------------------------------------------------


def test_an_output_with_a_lone_surrogate_is_recorded(workspace: Path, session: DurableSession) -> None:
    # Counterexample: JSON can carry "\ud800"; the size check encoded it strictly and raised,
    # so the record was lost and the call stayed pending as if still running.
    session.decide("cat a.txt", call_id="1")
    session.record("1", "alpha\ud800\n", 0)
    assert session.snapshot().step == 1
    assert not session._store.pending()


def test_a_command_with_a_lone_surrogate_is_still_bracketed(workspace: Path, session: DurableSession) -> None:
    # Counterexample: storing the pending row raised, so a write was never bracketed.
    run(session, workspace, "cat a.txt", "1")
    command = "echo changed > a.txt # \ud800"
    session.decide(command, call_id="w")
    assert session.decide("cat a.txt", call_id="r").verdict != "reuse"  # the writer is in flight


# --- regression guards (each shown failing under a mutation, see the report) ------------------


# A narrow racy window, so that stat data alone vouches for files a moment old (the default,
# two seconds, would have the test hash everything and never exercise the stat comparison).
NARROW_RACY_WINDOW_NS = 50_000_000


@pytest.fixture
def stat_session(workspace: Path, tmp_path: Path):
    detector = StatIndex(racy_window_ns=NARROW_RACY_WINDOW_NS)
    with DurableSession.open(workspace, state_dir=tmp_path / "state", detector=detector) as opened:
        yield opened


def settle() -> None:
    time.sleep(3 * NARROW_RACY_WINDOW_NS / 1e9)


def test_a_rewrite_with_its_mtime_restored_is_seen(workspace: Path, stat_session: DurableSession) -> None:
    target = workspace / "a.txt"
    settle()
    run(stat_session, workspace, "cat a.txt", "1")
    before = target.stat()
    target.write_text("ALPHA\n")  # same size, same inode
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    settle()
    assert_not_stale(stat_session, workspace, "cat a.txt", "2")


def test_the_root_replaced_by_a_look_alike_is_seen(workspace: Path, stat_session: DurableSession, tmp_path: Path) -> None:
    settle()
    run(stat_session, workspace, "cat a.txt", "1")
    times = {name: (workspace / name).stat() for name in ("a.txt", "b.txt")}
    workspace.rename(tmp_path / "old-repo")
    workspace.mkdir()
    (workspace / "a.txt").write_text("ALPHA\n")
    (workspace / "b.txt").write_text("bravo\n")
    for name, st in times.items():
        os.utime(workspace / name, ns=(st.st_atime_ns, st.st_mtime_ns))
    settle()
    assert_not_stale(stat_session, workspace, "cat a.txt", "2")


def test_a_read_recorded_after_an_overlapping_write_is_not_kept(workspace: Path, session: DurableSession) -> None:
    # Two PreToolUse before any PostToolUse, PostToolUse in reverse order: the read ran first,
    # then the write, and the write's result is recorded before the read's.
    session.decide("cat a.txt", call_id="read")
    session.decide("echo changed > a.txt", call_id="write")
    read_result = fresh(workspace, "cat a.txt")
    write_result = fresh(workspace, "echo changed > a.txt")
    session.record("write", *write_result)
    session.record("read", *read_result)
    assert_not_stale(session, workspace, "cat a.txt", "again")


def test_a_change_reported_against_a_damaged_baseline_is_never_dropped(
    workspace: Path, stat_session: DurableSession
) -> None:
    # The stored stat index cannot be read: the detector's report is unknown scope with the
    # problem. A listing shows the change only through that report (its fingerprint holds the
    # directory's identity, not its entries, and its probe rests on the counters inside).
    settle()
    run(stat_session, workspace, "ls", "1")
    stat_session.run_queued_probes()
    assert stat_session.decide("ls", call_id="2").verdict == "reuse"
    (workspace / "c.txt").write_text("charlie\n")
    database = sqlite3.connect(stat_session.database)
    try:
        with database:
            database.execute("UPDATE state SET stat_index = ?", (b"not a stat index",))
    finally:
        database.close()
    assert_not_stale(stat_session, workspace, "ls", "3")
