"""A ledger stored and loaded again (`Ledger.from_state`, through the store's encoding) is the
ledger it was: the same decisions, views and evictions from then on."""

from __future__ import annotations

import pytest

from ledger_impl import state_rows
from ledger_impl.classifier import classify
from ledger_impl.ledger import Ledger
from ledger_spec import Changes, Policy, Reuse
from ledger_properties.differential import SHAPES, run_shape


def _reloaded(ledger: Ledger) -> Ledger:
    """Through the store's rows (`state_rows`), as a process that wrote none of them reads them."""
    saved, _ = state_rows.changes(ledger.snapshot(), None)
    return Ledger.from_state(state_rows.decode(saved.header, saved.rows)[0], ledger.policy)


def _read(ledger: Ledger, command: str, output: str) -> None:
    classified = classify(command)
    decision = ledger.govern(classified)
    ledger.advance(classified, decision, output, 0, Changes())


def test_the_least_recently_served_output_is_evicted_after_a_reload() -> None:
    # a.txt is observed first but served since, so b.txt's output is the least recently used:
    # the next observation must evict b's, in the loaded ledger as in the one that was stored.
    policy = Policy(stored_output_limit=10)
    ledger = Ledger(policy)
    _read(ledger, "cat a.txt", "aaaa\n")
    _read(ledger, "cat b.txt", "bbbb\n")
    served = ledger.govern(classify("cat a.txt"))
    assert isinstance(served, Reuse)
    ledger.advance(classify("cat a.txt"), served, "", 0, Changes())
    loaded = _reloaded(ledger)
    for side in (ledger, loaded):
        _read(side, "cat c.txt", "cc\n")
    assert loaded.snapshot() == ledger.snapshot()
    assert isinstance(loaded.govern(classify("cat a.txt")), Reuse)
    assert not isinstance(loaded.govern(classify("cat b.txt")), Reuse)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_session_shape_agrees_with_the_spec_when_reloaded_after_every_event(shape: str) -> None:
    ok, message = run_shape(shape, 8, seed=20261202, reload=True)
    assert ok, message
