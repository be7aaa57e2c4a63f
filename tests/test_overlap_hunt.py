"""The overlap hunt: a read and a write in flight at once, every Reuse checked by a real run."""

from __future__ import annotations

import random

import attrs
import pytest

from ledger_impl.ledger import Ledger
from ledger_properties.overlap_hunt import interleaving, run_overlap_hunt


def test_interleavings_keep_each_commands_events_in_order_and_vary() -> None:
    rng = random.Random(1)
    orders = {tuple(interleaving(rng)) for _ in range(200)}
    assert len(orders) == 20  # C(6, 3): every merge of the two sequences
    for order in orders:
        for who in "RW":
            assert [event for name, event in order if name == who] == ["decide", "run", "record"]


def test_no_stale_reuse_with_a_read_and_a_write_in_flight() -> None:
    report = run_overlap_hunt(rounds=6, seed=3)
    assert report.ok, report.stale
    assert report.reuses_checked > 0  # the oracle had something to check


def test_the_hunt_catches_observations_stamped_at_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    finish = Ledger.finish

    def stamped_at_the_end(self: Ledger, call: object, *args: object, **kwargs: object) -> None:
        self._pending[call] = attrs.evolve(self._pending[call], started_at=self.total)
        finish(self, call, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Ledger, "finish", stamped_at_the_end)
    report = run_overlap_hunt(rounds=30, seed=1)
    assert not report.ok
    assert any(line.startswith("run") for line in report.stale[0].order)


def test_ledger_verify_runs_the_overlap_hunt() -> None:
    from ledger_cli.commands import verify
    from ledger_properties.profiles import Profile

    result = verify._overlap_hunt(Profile("tiny", 1, 1, hunt_examples=4, hunt_steps=1, contract_timeout=1.0), 5)
    assert result.held and result.name == "safety hunt: overlapping commands"
    assert "1 read/write pairs" in result.detail
