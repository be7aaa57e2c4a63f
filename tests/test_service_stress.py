"""A bounded service stress: 8 sessions on 2 workspaces, `ledger serve` killed -9 at random
moments (see `properties/service_stress.py`; `scripts/service_stress.py` runs the long one)."""

from __future__ import annotations

import pathlib

from ledger_properties.service_stress import run_service_stress


def test_kill_9_under_load_never_serves_stale_and_answers_every_call(tmp_path: pathlib.Path) -> None:
    report = run_service_stress(tmp_path, sessions=8, workspaces=2, calls=20, seed=1)
    assert report.stale == () and report.errors == ()
    assert report.calls == 8 * 20  # tool calls; the user's own edits come between them
    # The run exercised what it claims to: reuse, kills, and calls answered by the fallback.
    assert report.reused > 0 and report.kills > 0 and report.fallbacks > 0, report
