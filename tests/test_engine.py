"""The step logic both drivers share (`ledger_impl.engine`), asked directly."""

from __future__ import annotations

import os
from pathlib import Path

from ledger_impl.classifier import classify
from ledger_impl.engine import first_reuse, observation_fingerprint
from ledger_impl.ledger import Ledger
from ledger_spec import STEADY, Changes, Nudge, Request, Reuse


def test_only_a_read_with_a_target_in_the_root_has_a_fingerprint(tmp_path: Path) -> None:
    # A read outside the root and a write are never reused: fingerprinting them is work for
    # nothing, and a Step would carry a fingerprint that no decision used.
    (tmp_path / "a.txt").write_text("a\n")
    env = dict(os.environ)
    take = lambda text: observation_fingerprint(tmp_path, classify(text, cwd=".", root=tmp_path), env)  # noqa: E731
    assert take("cat a.txt") is not None
    assert take("cat /etc/hostname") is None, "a read with no target in the root"
    assert take("echo x > a.txt") is None, "a write"


def test_first_reuse_serves_a_withheld_call_and_nudges_one_the_agent_runs_anyway() -> None:
    """The candidate a stored result serves under decides; a call the agent runs whatever the
    answer (`withhold=False`) gets the Nudge naming that result, never the Reuse."""
    ledger = Ledger()
    read = classify("cat a.txt")
    ledger.advance(read, ledger.govern(read), "a\n", 0, Changes())
    other = object()  # a fingerprint no observation was made under: serves nothing
    served, under = first_reuse(ledger, read, [other, STEADY], last=other)
    assert isinstance(served, Reuse) and served.output == "a\n" and under is STEADY
    ran, under = first_reuse(ledger, read, [other, STEADY], last=other, request=Request(withhold=False))
    assert isinstance(ran, Nudge) and "Unchanged since step 1" in ran.note and under is STEADY
    nothing, under = first_reuse(ledger, read, [other], last=other, request=Request(withhold=False))
    assert not isinstance(nothing, Reuse) and under is other
