"""Indexes behind the optimized ledger: each answers one spec query without scanning a log.

The reference specification (`ledger_spec.state`, `ledger_spec.view`) recounts the logs on
every query. These structures keep the same answers up to date as events arrive:

- `CurrentEpoch`: the observations that are still current for one file key (or for the tree),
  indexed for exact and range reuse, one sub-index per recorded fingerprint. Counters only grow, so for a fixed key the observations
  whose snapshot equals today's counters are exactly those recorded since the last change that
  reached the key: an epoch is thrown away whole when such a change happens.
- `RangeFrontier`: for one (key, view) epoch, the stored ranges that may serve a request, minus
  those an equally current, newer range already covers.
- `ModificationIndex`: the modification log with, per key, the positions of the changes that
  touched it, so "which change made this stale first" is a bisection, and the counters G, W
  and L[key] are lengths.
- `RepeatCounter`: how often each normalized command ran, bucketed by count in the order the
  view lists them.
"""

from __future__ import annotations

import bisect
import math
from typing import Iterator

from ledger_spec import lines
from ledger_spec.values import (
    SLICEABLE_VIEWS,
    Command,
    FileTarget,
    Fingerprint,
    LineRange,
    Modification,
    Observation,
    Target,
)

_UNBOUNDED = math.inf


def _newer(first: Observation | None, second: Observation | None) -> Observation | None:
    if first is None:
        return second
    if second is None:
        return first
    return first if first.step > second.step else second


class _ExactSlot:
    """The newest current observations of one (normalized command, target).

    Spec `serve` answers an identical command from an observation that exited 0, or from one
    typed the same way whatever its exit status (an error message may quote the path as typed),
    so the newest of each kind is all that can ever be chosen.
    """

    __slots__ = ("newest_success", "newest_by_text")

    def __init__(self) -> None:
        self.newest_success: Observation | None = None
        self.newest_by_text: dict[str, Observation] = {}

    def add(self, observation: Observation) -> None:
        if observation.exit_status == 0:
            self.newest_success = observation
        self.newest_by_text[observation.command.text] = observation

    def newest_serving(self, command: Command) -> Observation | None:
        return _newer(self.newest_success, self.newest_by_text.get(command.text))

    def remove(self, observation: Observation) -> None:
        """Forget `observation`. An older one it shadowed is never uncovered: it was used less
        recently, so the least-recently-used eviction has already dropped it."""
        if self.newest_success is observation:
            self.newest_success = None
        if self.newest_by_text.get(observation.command.text) is observation:
            del self.newest_by_text[observation.command.text]

    def __bool__(self) -> bool:
        return self.newest_success is not None or bool(self.newest_by_text)


class RangeFrontier:
    """Current, successful, consistent reads of one (key, view), for slicing narrower requests.

    A stored read of lines `start..end` serves a non-empty request `a..b` exactly when
    `start <= a` and `b <= reach`, where `reach` is unbounded if the stored output shows where
    the file ends and `end` otherwise (see `ledger_spec.lines.can_serve`); an empty request is
    served by any entry. An older entry whose [start, reach] lies inside a newer entry's can
    never be the newest server, so adding an entry drops those: what remains is small (distinct,
    non-nested ranges of one file since it last changed) whatever the number of observations.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: list[tuple[int, float, Observation]] = []  # oldest first

    def add(self, observation: Observation, stored: LineRange) -> None:
        start = stored.start
        reach: float = _UNBOUNDED if lines.reaches_end_of_file(stored, observation.output) else stored.end  # type: ignore[assignment]
        self._entries = [
            entry for entry in self._entries if not (entry[0] >= start and entry[1] <= reach)
        ]
        self._entries.append((start, reach, observation))

    def remove(self, observation: Observation) -> None:
        self._entries = [entry for entry in self._entries if entry[2] is not observation]

    def newest_serving(self, requested: LineRange, newer_than: int) -> Observation | None:
        """The newest entry recorded after step `newer_than` that can serve `requested`."""
        if requested.is_empty:
            newest = self._entries[-1][2] if self._entries else None
            return newest if newest is not None and newest.step > newer_than else None
        wanted_end = _UNBOUNDED if requested.end is None else requested.end
        for start, reach, observation in reversed(self._entries):
            if observation.step <= newer_than:
                return None
            if start <= requested.start and wanted_end <= reach:
                return observation
        return None


class _FingerprintEpoch:
    """The current observations of one epoch that recorded one fingerprint."""

    __slots__ = ("_exact", "_ranges", "_range_reuse")

    def __init__(self, range_reuse: bool) -> None:
        self._exact: dict[tuple[str, Target], _ExactSlot] = {}
        self._ranges: dict[str, RangeFrontier] = {}
        self._range_reuse = range_reuse

    def add(self, observation: Observation) -> None:
        command = observation.command
        assert command.target is not None
        slot = self._exact.get((command.normalized, command.target))
        if slot is None:
            slot = self._exact[(command.normalized, command.target)] = _ExactSlot()
        slot.add(observation)
        target = command.target
        if (
            self._range_reuse
            and observation.exit_status == 0
            and isinstance(target, FileTarget)
            and target.view in SLICEABLE_VIEWS
            and lines.consistent(target.lines, observation.output)
        ):
            frontier = self._ranges.get(target.view)
            if frontier is None:
                frontier = self._ranges[target.view] = RangeFrontier()
            frontier.add(observation, target.lines)

    def remove(self, observation: Observation) -> None:
        command = observation.command
        assert command.target is not None
        slot = self._exact.get((command.normalized, command.target))
        if slot is not None:
            slot.remove(observation)
            if not slot:
                del self._exact[(command.normalized, command.target)]
        if isinstance(command.target, FileTarget):
            frontier = self._ranges.get(command.target.view)
            if frontier is not None:
                frontier.remove(observation)

    def newest_serving(self, command: Command, ranges: bool) -> Observation | None:
        """The newest observation spec `serve` answers `command` from; `ranges=False`: one of
        the same command only (the caller's range reuse is off)."""
        target = command.target
        assert target is not None
        slot = self._exact.get((command.normalized, target))
        best = slot.newest_serving(command) if slot is not None else None
        if ranges and isinstance(target, FileTarget):
            frontier = self._ranges.get(target.view)  # only sliceable views are ever indexed
            if frontier is not None:
                ranged = frontier.newest_serving(target.lines, -1 if best is None else best.step)
                best = _newer(best, ranged)
        return best


class CurrentEpoch:
    """Observations recorded since the last change that could reach them, i.e. the current ones.

    One epoch per file key (current while L[key] and W stay put) and one for the tree (current
    while G stays put); the ledger discards an epoch when its counters move. Inside, one index
    per recorded fingerprint: only an observation whose fingerprint equals today's may serve,
    and the spec's newest-first scan picks the newest of those.
    """

    __slots__ = ("_by_fingerprint", "_range_reuse", "members")

    def __init__(self, range_reuse: bool) -> None:
        self._by_fingerprint: dict[Fingerprint, _FingerprintEpoch] = {}
        self._range_reuse = range_reuse
        self.members: dict[int, Observation] = {}  # step -> observation, the retained ones

    def add(self, observation: Observation) -> None:
        self.members[observation.step] = observation
        if observation.fingerprint is None:
            return  # never reusable
        index = self._by_fingerprint.get(observation.fingerprint)
        if index is None:
            index = self._by_fingerprint[observation.fingerprint] = _FingerprintEpoch(self._range_reuse)
        index.add(observation)

    def remove(self, observation: Observation) -> None:
        """Forget `observation` (its output was evicted)."""
        self.members.pop(observation.step, None)
        index = self._by_fingerprint.get(observation.fingerprint) if observation.fingerprint is not None else None
        if index is not None:
            index.remove(observation)

    def newest_serving(self, command: Command, fingerprint: Fingerprint | None, *, ranges: bool = True) -> Observation | None:
        """The newest observation in this epoch, recorded with `fingerprint`, that spec `serve`
        would answer `command` from (`ranges=False`: under range reuse off)."""
        if fingerprint is None:
            return None
        index = self._by_fingerprint.get(fingerprint)
        return index.newest_serving(command, ranges) if index is not None else None


class ModificationIndex:
    """The modification log, with per-key and unknown-scope positions for bisection."""

    __slots__ = ("log", "_positions_by_key", "_unknown_positions")

    def __init__(self) -> None:
        self.log: list[Modification] = []
        self._positions_by_key: dict[str, list[int]] = {}
        self._unknown_positions: list[int] = []

    def append(self, modification: Modification) -> None:
        position = len(self.log)
        self.log.append(modification)
        for key in modification.changes.paths:
            self._positions_by_key.setdefault(key, []).append(position)
        if modification.changes.unknown:
            self._unknown_positions.append(position)

    def count_touching(self, key: str, before: int) -> int:
        """L[key] when the log held `before` entries."""
        return bisect.bisect_left(self._positions_by_key.get(key, []), before)

    def count_unknown(self, before: int) -> int:
        """W when the log held `before` entries."""
        return bisect.bisect_left(self._unknown_positions, before)

    # The spec's counters are counts over this log; the ledger reads them here, so there is
    # no second copy that could drift from the log.

    @property
    def total(self) -> int:
        """G: how many modifications happened."""
        return len(self.log)

    @property
    def wildcard(self) -> int:
        """W: how many modifications had unknown scope."""
        return len(self._unknown_positions)

    def local(self, key: str) -> int:
        """L[key]: how many modifications reported `key`."""
        return len(self._positions_by_key.get(key, ()))

    @property
    def last_unknown_step(self) -> int | None:
        """The step of the latest modification of unknown scope, if any."""
        return self.log[self._unknown_positions[-1]].step if self._unknown_positions else None

    def first_invalidation(self, observation: Observation) -> Modification | None:
        """Spec `first_invalidation`: the earliest change logged after the observation's stamp
        that a tree target sees (any), or a file target sees (its key, or unknown scope)."""
        after = observation.total  # the log's length when its command started
        target = observation.command.target
        if isinstance(target, FileTarget):
            candidates = [
                _first_at_or_after(self._positions_by_key.get(target.key, []), after),
                _first_at_or_after(self._unknown_positions, after),
            ]
            found = [position for position in candidates if position is not None]
            position = min(found) if found else None
        else:
            position = after if after < len(self.log) else None
        return None if position is None else self.log[position]


def _first_at_or_after(positions: list[int], floor: int) -> int | None:
    index = bisect.bisect_left(positions, floor)
    return positions[index] if index < len(positions) else None


class RepeatCounter:
    """Run counts per normalized command, listed by (count desc, last run desc).

    A command's count only grows, and when it grows its last run is the newest of all, so it
    joins the end of the next bucket: insertion order inside a bucket is last-run order, and
    the spec's sort never needs its text tie-break (two commands never share a last step).
    """

    __slots__ = ("_count", "_buckets", "_counts_ascending", "repeated")

    def __init__(self) -> None:
        self._count: dict[str, int] = {}
        self._buckets: dict[int, dict[str, None]] = {}
        self._counts_ascending: list[int] = []
        self.repeated = 0  # how many commands ran more than once

    def record(self, normalized: str) -> None:
        old = self._count.get(normalized, 0)
        new = old + 1
        self._count[normalized] = new
        if old:
            bucket = self._buckets[old]
            del bucket[normalized]
            if not bucket:
                del self._buckets[old]
                del self._counts_ascending[bisect.bisect_left(self._counts_ascending, old)]
        if new == 2:
            self.repeated += 1
        bucket = self._buckets.get(new)
        if bucket is None:
            bucket = self._buckets[new] = {}
            bisect.insort(self._counts_ascending, new)
        bucket[normalized] = None

    def most_repeated(self) -> Iterator[tuple[str, int]]:
        """Commands run more than once, in the view's order, lazily."""
        for count in reversed(self._counts_ascending):
            if count < 2:
                return
            for normalized in reversed(self._buckets[count]):
                yield normalized, count
