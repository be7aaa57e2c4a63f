"""A ledger's spec-level state as rows that grow with it: each call writes what it added, not
the whole state again.

Theory of operation. A `ledger_spec.State` is a step number, the calls in flight and three logs
(modifications, observations, history). The logs only grow, except that an observation whose
output is dropped is replaced, at its position, by its dropped version. So the stored form is:
- one row per log entry, keyed by (log, position), each its own `state_codec` encoding;
- one row per shared value (a command or a fingerprint, which recur across entries), numbered
  in the order first written; entries name them by that number (`{"r": i}`), so a value is
  encoded once for the whole session, not once per save;
- a header: the step number, the calls in flight and the length of each log.
Every row carries the SHA-256 of its text. `Written` is what this process knows the database
holds (the entries as written, by identity, and the shared numbering); `changes` compares a
new state with it and yields only the rows to insert or replace. A process that did not write
the newest rows reads them all (`decode`), which also gives it a `Written` to continue from.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Final

import attrs

from ledger_spec.state import State
from ledger_spec.values import CommandRecord, Modification, Observation, Pending

from . import state_codec
from .state_codec import CodecError

# The three logs, in the order the header gives their lengths, and the type of their entries.
ENTRY_TYPES: Final[dict[str, type]] = {
    "modifications": Modification, "observations": Observation, "history": CommandRecord,
}
LOGS: Final = tuple(ENTRY_TYPES)


def checksum(text: str) -> str:
    # surrogatepass: outputs and names may carry lone surrogates (undecodable bytes).
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class Row:
    """One stored row: a shared value (`log` is None) or a log entry, with its text's checksum."""

    log: str | None
    position: int
    text: str
    text_sum: str


@attrs.frozen
class RowDelta:
    """What a save writes: the header (always) and the rows that are new or replaced."""

    header: str
    rows: tuple[Row, ...]
    rewrites_all: bool  # the database's rows are not this state's: clear them before writing


@attrs.define
class Written:
    """What the database holds of one ledger's state, as this process last wrote or read it."""

    logs: dict[str, tuple[object, ...]]
    shared: dict[object, int]  # value -> its number in the shared rows
    shared_trees: list[object]  # the encoded shared values, by number (the encoder appends here)

    @classmethod
    def empty(cls) -> "Written":
        return cls({log: () for log in LOGS}, {}, [])


def changes(state: State, written: Written | None) -> tuple[RowDelta, Written]:
    """The rows that turn `written` (None: unknown, everything is written again) into `state`,
    and what the database holds once they are written. `written` is updated in place."""
    rewrites_all = written is None
    if written is None:
        written = Written.empty()
    first_new_shared = len(written.shared_trees)
    entries: list[tuple[str, int, str]] = []
    for log in LOGS:
        old: tuple[object, ...] = written.logs[log]
        new: tuple[object, ...] = getattr(state, log)
        if len(new) < len(old):
            raise ValueError(f"the {log} log shrank from {len(old)} to {len(new)} entries")
        for position, entry in enumerate(new):
            # Identity: an unchanged entry is the very object written (the logs share them).
            if position < len(old) and entry is old[position]:
                continue
            entries.append((log, position, _text(state_codec.encode(entry, written.shared, written.shared_trees))))
        written.logs[log] = new
    header = _text(state_codec.encode(
        (state.step, state.pending, tuple(len(getattr(state, log)) for log in LOGS)), written.shared, written.shared_trees
    ))
    shared_rows = [
        Row(None, number, text, checksum(text))
        for number, text in ((n, _text(written.shared_trees[n])) for n in range(first_new_shared, len(written.shared_trees)))
    ]
    rows = shared_rows + [Row(log, position, text, checksum(text)) for log, position, text in entries]
    return RowDelta(header, tuple(rows), rewrites_all), written


def decode(header: str, rows: Iterable[Row]) -> tuple[State, Written]:
    """The state stored as `header` and `rows` (shared values and log entries), and what the
    database then holds. Raises CodecError when any row's checksum does not match, a number or
    position is missing or repeated, or a text does not decode."""
    shared_rows: list[Row] = []
    entry_rows: dict[str, list[Row]] = {log: [] for log in LOGS}
    for row in rows:
        if row.text_sum != checksum(row.text):
            where = "shared value" if row.log is None else f"{row.log} entry"
            raise CodecError(f"the checksum of {where} {row.position} does not match")
        if row.log is None:
            shared_rows.append(row)
        elif row.log in entry_rows:
            entry_rows[row.log].append(row)
        else:
            raise CodecError(f"an entry of an unknown log {row.log!r}")
    shared_rows.sort(key=lambda row: row.position)
    _check_positions("shared values", [row.position for row in shared_rows], len(shared_rows))
    trees = [_tree(row.text) for row in shared_rows]
    values: list[object] = []
    for tree in trees:
        values.append(state_codec.decode(tree, values))  # each names only those numbered before it
    step, pending, lengths = _header(state_codec.decode(_tree(header), values))
    logs: dict[str, tuple[object, ...]] = {}
    for log, length in zip(LOGS, lengths):
        ordered = sorted(entry_rows[log], key=lambda row: row.position)
        _check_positions(f"the {log} log", [row.position for row in ordered], length)
        logs[log] = tuple(state_codec.decode(_tree(row.text), values) for row in ordered)
        stray = next((entry for entry in logs[log] if not isinstance(entry, ENTRY_TYPES[log])), None)
        if stray is not None:
            raise CodecError(f"the {log} log holds a {type(stray).__name__}")
    state = State(step=step, pending=pending, **logs)  # type: ignore[arg-type]
    shared = {value: number for number, value in enumerate(values)}
    return state, Written(dict(logs), shared, trees)


def _header(value: object) -> tuple[int, tuple[Pending, ...], Sequence[int]]:
    if (
        not isinstance(value, tuple) or len(value) != 3 or not isinstance(value[0], int)
        or not isinstance(value[1], tuple) or not all(isinstance(call, Pending) for call in value[1])
        or not isinstance(value[2], tuple) or len(value[2]) != len(LOGS) or not all(isinstance(n, int) for n in value[2])
    ):
        raise CodecError("the header is not (step, calls in flight, log lengths)")
    return value[0], value[1], value[2]


def _check_positions(what: str, positions: list[int], expected: int) -> None:
    if positions != list(range(expected)):
        raise CodecError(f"{what}: {len(positions)} rows, expected positions 0 to {expected - 1}")


def _text(tree: object) -> str:
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False)


def _tree(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError as error:
        raise CodecError(f"not JSON: {error}") from None
