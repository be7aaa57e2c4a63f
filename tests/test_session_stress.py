"""8 hook processes at once on one workspace, kill -9 at random moments: no lost update, no stale
Reuse, an intact database. The full-size run (1,000 pairs) is `python -m ledger_properties.session_stress`."""

from __future__ import annotations

from pathlib import Path

from ledger_properties.session_stress import run_stress


def test_concurrent_hooks_killed_at_random_lose_nothing_and_serve_nothing_stale(tmp_path: Path) -> None:
    report = run_stress(tmp_path, workers=8, pairs=240, kills=8, seed=11, timeout_s=300)
    assert report.integrity == "ok"
    assert report.stale_reuses == ()
    assert not report.lost_update, report
    assert report.completed == 240
    assert report.conclusive_reuse_checks >= 10, report  # the oracle really compared reuses
