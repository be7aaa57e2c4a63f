"""The ledger's rows read back exactly, and rows that are not what a save writes are refused
as unreadable (`ledger_impl.state_rows`): the session then discards the ledger with a note
instead of loading a wrong one or failing to open. Written for the survivors of the module's
operator mutation run (issue 23)."""

from __future__ import annotations

import json

import attrs
import pytest

from ledger_impl import state_codec, state_rows
from ledger_impl.state_codec import CodecError
from ledger_impl.state_rows import Row
from ledger_spec import INITIAL, Allow, Category, Changes, Command, State, modify, observe, start
from ledger_spec.values import FileTarget, LineRange

READ = Command("cat a.txt", "cat a.txt", Category.READ, FileTarget("a.txt", LineRange(1, None), "plain"))


def _session() -> State:
    state = observe(INITIAL, READ, "é\n", 0)
    state = modify(state, Changes(frozenset({"b.txt"})))
    return start(state, "call", READ, Allow())


def _row(log: str | None, position: int, tree: object) -> Row:
    text = json.dumps(tree)
    return Row(log, position, text, state_rows.checksum(text))


def _header(tree: object) -> str:
    return json.dumps(tree)


def test_a_state_reads_back_from_its_rows() -> None:
    state = _session()
    saved, _ = state_rows.changes(state, None)
    assert state_rows.decode(saved.header, saved.rows)[0] == state


def test_text_is_stored_as_utf8_not_as_escapes() -> None:
    """The documented format: JSON in UTF-8 (a reader of the database sees the output as text)."""
    saved, _ = state_rows.changes(_session(), None)
    (observation,) = [row for row in saved.rows if row.log == "observations"]
    assert "é" in observation.text and "\\u00e9" not in observation.text


@pytest.mark.parametrize(
    "header",
    [
        5, {"t": [0, {"t": []}]}, {"t": [0, {"t": []}, {"t": [0, 0, 0]}, 0]},  # not a tuple of three
        {"t": ["0", {"t": []}, {"t": [0, 0, 0]}]},  # step not an int
        {"t": [0, "calls", {"t": [0, 0, 0]}]}, {"t": [0, "", {"t": [0, 0, 0]}]},  # calls not a tuple
        {"t": [0, {"t": [1]}, {"t": [0, 0, 0]}]},  # a call not Pending
        {"t": [0, {"t": []}, "lengths"]}, {"t": [0, {"t": []}, {"s": [0, 1, 2]}]},  # lengths not a tuple
        {"t": [0, {"t": []}, {"t": [0, 0]}]},  # lengths not three
        {"t": [0, {"t": []}, {"t": [0, 0, 0, 0]}]}, {"t": [0, {"t": []}, {"t": [0, "0", 0]}]},  # lengths not ints
    ],
    ids=["int", "two", "four", "step", "calls", "no-calls", "call", "lengths", "set", "two-lengths", "four-lengths", "length"],
)
def test_a_header_that_is_not_step_calls_and_lengths_is_refused(header: object) -> None:
    with pytest.raises(CodecError, match=r"^the header is not \(step, calls in flight, log lengths\)$"):
        state_rows.decode(_header(header), [])


@pytest.mark.parametrize(
    ("positions", "length"), [([0, 2], 2), ([0], 2), ([1], 1), ([0, 1], 1)], ids=["gap", "missing", "shifted", "extra"]
)
def test_a_log_whose_positions_are_not_0_to_its_length_is_refused(positions: list[int], length: int) -> None:
    saved, _ = state_rows.changes(State(modifications=(modify(INITIAL, Changes(unknown=True)).modifications * 3)), None)
    entry = next(json.loads(row.text) for row in saved.rows if row.log == "modifications")
    rows = [_row("modifications", position, entry) for position in positions]
    with pytest.raises(CodecError) as refused:
        state_rows.decode(_header({"t": [0, {"t": []}, {"t": [length, 0, 0]}]}), rows)
    assert str(refused.value) == f"the modifications log: {len(positions)} rows, expected positions 0 to {length - 1}"


def test_shared_values_numbered_with_a_gap_are_refused() -> None:
    rows = [_row(None, 0, "a"), _row(None, 2, "b")]
    with pytest.raises(CodecError, match=r"^shared values: 2 rows, expected positions 0 to 1$"):
        state_rows.decode(_header({"t": [0, {"t": []}, {"t": [0, 0, 0]}]}), rows)


def test_a_row_that_is_not_json_is_refused_as_unreadable() -> None:
    text = "{not json"
    with pytest.raises(CodecError, match="^not JSON"):
        state_rows.decode(_header({"t": [0, {"t": []}, {"t": [0, 0, 0]}]}), [Row(None, 0, text, state_rows.checksum(text))])
    with pytest.raises(CodecError, match="^not JSON"):
        state_rows.decode(text, [])


def test_an_entry_of_an_unknown_log_is_refused() -> None:
    with pytest.raises(CodecError, match="an entry of an unknown log 'notes'"):
        state_rows.decode(_header({"t": [0, {"t": []}, {"t": [0, 0, 0]}]}), [_row("notes", 0, 1)])


def test_a_log_never_shrinks_between_saves() -> None:
    session = _session()
    _, written = state_rows.changes(session, None)
    with pytest.raises(ValueError, match="the observations log shrank from 1 to 0 entries"):
        state_rows.changes(attrs.evolve(session, observations=()), written)


def test_a_shared_value_is_written_once_across_saves() -> None:
    """The second save names the command the first one wrote: no shared row again."""
    first = observe(INITIAL, READ, "x\n", 0)
    saved, written = state_rows.changes(first, None)
    assert [json.loads(row.text)["a"][0] for row in saved.rows if row.log is None] == ["Command"]
    again, _ = state_rows.changes(observe(first, READ, "y\n", 0), written)
    assert [row.log for row in again.rows] == ["observations"]
    assert state_codec.decode(json.loads(again.rows[0].text), [READ]).command == READ
