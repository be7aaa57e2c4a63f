"""The model's context as the session's store keeps it (`ledger_impl/context_journal.py`): kept
across opens, and replaced by a new epoch, with a note, when the stored record cannot be shown
intact (a checksum that differs either way, text that does not decode, a value that is not a
context). Written for the survivors of the module's operator mutation; a damaged record taken
as intact would let a Reuse be answered by reference to a result the model may not hold."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ledger_impl import DurableSession
from ledger_impl.store import checksum, database_path
from ledger_spec.context import INITIAL_CONTEXT


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


def _delivered(workspace: Path, state_dir: Path) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.context.begin_epoch("s")
        session.context.deliver("s", 4, full=True)


def test_a_new_store_holds_the_initial_context(workspace: Path, tmp_path: Path) -> None:
    with DurableSession.open(workspace, state_dir=tmp_path / "state") as session:
        assert session.context.current() == INITIAL_CONTEXT


def test_a_delivery_is_kept_across_opens(workspace: Path, tmp_path: Path) -> None:
    _delivered(workspace, tmp_path / "state")
    with DurableSession.open(workspace, state_dir=tmp_path / "state") as session:
        context = session.context.current()
        assert context.owner == "s" and [d.step for d in context.deliveries] == [4]
        assert session.context.answer("s", 4, verbatim_full=True) == "reference"


@pytest.mark.parametrize(
    "damage",
    [
        ("UPDATE context SET value_sum = ?", "0" * 64),
        ("UPDATE context SET value_sum = ?", "f" * 64),
        ("UPDATE context SET value = ?, value_sum = ?", "{not json", checksum(b"{not json")),
        ("UPDATE context SET value = ?, value_sum = ?", '"text"', checksum(b'"text"')),
    ],
    ids=["checksum-sorting-before", "checksum-sorting-after", "not-decodable", "not-a-context"],
)
def test_a_damaged_record_starts_a_new_epoch_with_a_note(workspace: Path, tmp_path: Path, damage: tuple[str, ...]) -> None:
    """Pins `ledger_impl/context_journal.py` line 56 (a miss: a checksum compared by order took
    a damaged record, deliveries and all, for intact)."""
    state_dir = tmp_path / "state"
    _delivered(workspace, state_dir)
    statement, *values = damage
    with sqlite3.connect(database_path(workspace, state_dir)) as db:
        db.execute(statement, values)
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        context = session.context.current()
        assert context.deliveries == () and context.epoch == INITIAL_CONTEXT.epoch + 1
        assert session.context.answer("s", 4, verbatim_full=True) == "verbatim"
        decision = session.decide("ls", call_id="t1")
    assert "the model's context record was damaged" in str(decision.degraded or "")
