"""The service's resident detectors, beyond what the shared detector tests check
(`ledger_impl.service.resident`): which tokens the Watchman one trusts, and that draining
between calls reads the event queue only once a root is known. Written for the survivors of the
module's operator mutation (docs/mutation/survivors.md).
"""

from __future__ import annotations

import pathlib

import pytest

from ledger_impl.detectors import watchman
from ledger_impl.detectors.baseline import unusable
from ledger_impl.detectors.events import EventDetector
from ledger_impl.service.resident import ResidentDetector, ResidentWatchman
from ledger_spec.degraded import Cause


@pytest.mark.skipif(not watchman.available(), reason="no watchman binary on PATH (.ci/run installs Debian's watchman package)")
def test_a_token_older_than_the_latest_is_refused_when_its_count_sorts_higher(tmp_path: pathlib.Path) -> None:
    """Tokens end in a report count: after the tenth report, the ninth token sorts above the
    latest as bytes ("9" > "10"). A real miss of the operator mutation
    (ledger_impl/service/resident.py line 79, `==` -> `>=`): that older baseline was taken for
    the latest, and what changed since it went unreported."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    durable = watchman.WatchmanIndex(tmp_path / "state")
    resident = ResidentWatchman(durable)
    try:
        blob = None
        tokens = []
        for _ in range(10):
            _, blob, _ = resident.changes_since(root, blob)
            tokens.append(blob)
        assert tokens[-1].endswith(b":10") and tokens[-2] > tokens[-1]
        changes, _, problem = resident.changes_since(root, tokens[-2])
        assert changes.unknown and problem == unusable(Cause.WRITTEN_ELSEWHERE)
    finally:
        resident.close()
        durable.daemon.shutdown()


class _Recording(EventDetector):
    """The event detector, with each `before` it is asked for noted."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[pathlib.Path] = []

    def before(self, root, command):  # type: ignore[no-untyped-def]
        self.asked.append(pathlib.Path(root))
        return super().before(root, command)


def test_draining_reads_the_queue_only_once_a_root_is_known(tmp_path: pathlib.Path) -> None:
    events = _Recording()
    resident = ResidentDetector(events)
    try:
        resident.drain()  # no call yet: nothing is watched
        assert events.asked == []
        resident.changes_since(tmp_path, None)
        asked = len(events.asked)
        (tmp_path / "new.txt").write_text("while idle\n")
        resident.drain()
        assert events.asked[asked:] == [tmp_path]
    finally:
        resident.close()
