"""8 hook processes at once on one workspace, kill -9 at random moments: no lost update, no stale
Reuse, an intact database. The full-size run (1,000 pairs) is `python -m ledger_properties.session_stress`."""

from __future__ import annotations

import json
from pathlib import Path

from ledger_properties import session_stress
from ledger_properties.session_stress import run_stress


def test_concurrent_hooks_killed_at_random_lose_nothing_and_serve_nothing_stale(tmp_path: Path) -> None:
    report = run_stress(tmp_path, workers=8, pairs=240, kills=8, seed=11, timeout_s=300)
    assert report.integrity == "ok"
    assert report.stale_reuses == ()
    assert not report.lost_update, report
    assert report.completed == 240
    assert report.conclusive_reuse_checks >= 10, report  # the oracle really compared reuses


def test_a_worker_killed_while_checking_a_reuse_is_not_a_lost_update(tmp_path: Path) -> None:
    """Counterexample (CI, seed 11 under load): a Reuse is in the history once decided; the
    worker then re-runs the command to check it. Killed during that check, the call was
    counted neither completed (no "reused" line) nor cut short (its "decided" line was
    written), so the history held one step more than the accounting allowed."""
    root, state, logs = tmp_path / "root", tmp_path / "state", tmp_path / "logs"
    session_stress.make_workspace(root)
    state.mkdir()
    logs.mkdir()
    events = []
    with session_stress.DurableSession.open(root, state_dir=state, policy=session_stress.POLICY, probe=False,
                                            detector=session_stress.StatIndex()) as session:
        first = session.decide("cat f0", call_id="0-1-0")
        assert first.verdict != "reuse"
        session.record("0-1-0", "a0\nb0\nc0\n", 0)
        events += [{"event": "decide", "call": "0-1-0", "command": "cat f0"},
                   {"event": "decided", "call": "0-1-0", "command": "cat f0", "verdict": first.verdict},
                   {"event": "record", "call": "0-1-0", "command": "cat f0"},
                   {"event": "recorded", "call": "0-1-0", "command": "cat f0"}]
        again = session.decide("cat f0", call_id="0-1-1")
        assert again.verdict == "reuse"
        events += [{"event": "decide", "call": "0-1-1", "command": "cat f0"},
                   {"event": "decided", "call": "0-1-1", "command": "cat f0", "verdict": "reuse"}]
    # killed here, while re-running `cat f0` for the check: no "reused" line
    (logs / "w0-1.log").write_text("".join(json.dumps(event) + "\n" for event in events))
    report = session_stress._report(root, state, logs, kills=1, pairs=2, seconds=0.0)
    assert (report.history, report.completed, report.cut_short) == (2, 2, 0)
    assert not report.lost_update, report
