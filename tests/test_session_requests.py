"""What a hook says of its call reaches spec govern through `DurableSession.decide`.

The durable session adds no refusal of its own: a call id still in flight, an agent's rendered
output and a call the agent runs anyway are the spec's `Request` (`ledger_spec.state`), and
these tests check that each one arrives there, on a real session over a real workspace, by
contrast with the same call asked without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_impl import DurableSession
from fresh_runs import fresh


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("alpha\nbravo\ncharlie\ndelta\n")
    (root / "b.txt").write_text("echo\n")
    return root


@pytest.fixture
def session(workspace: Path, tmp_path: Path):
    with DurableSession.open(workspace, state_dir=tmp_path / "state") as opened:
        yield opened


def observed(session: DurableSession, root: Path, command: str) -> None:
    """`command` run and recorded, its probe run: its output may serve from now on."""
    assert session.decide(command, call_id="first").verdict == "allow"
    session.record("first", *fresh(root, command))
    session.run_queued_probes()


def test_a_read_decided_under_an_id_still_in_flight_is_not_served(workspace: Path, session: DurableSession) -> None:
    observed(session, workspace, "cat a.txt")
    session.decide("cat b.txt", call_id="dup")  # a read in flight: it blocks no other call
    assert session.decide("cat a.txt", call_id="other").verdict == "reuse"
    assert session.decide("cat a.txt", call_id="dup").verdict != "reuse"


@pytest.mark.parametrize("probe", [True, False], ids=["probe", "no-probe"])
def test_a_rendered_output_serves_only_the_same_command(workspace: Path, tmp_path: Path, probe: bool) -> None:
    # With the probe on, the probes a rendered call may rest on are its own command's too
    # (`session_probe.candidates`); without it, govern's rule alone keeps the lines uncut.
    with DurableSession.open(workspace, state_dir=tmp_path / "state", probe=probe) as session:
        observed(session, workspace, "cat a.txt")
        served = session.decide("sed -n '2,3p' a.txt", call_id="sliced")
        assert served.verdict == "reuse" and served.output == "bravo\ncharlie\n"
        assert session.decide("sed -n '2,3p' a.txt", call_id="rendered", serve_slices=False).verdict != "reuse"
        assert session.decide("cat a.txt", call_id="same", serve_slices=False).verdict == "reuse"


def test_a_call_the_agent_runs_anyway_is_nudged_and_recorded(workspace: Path, session: DurableSession) -> None:
    observed(session, workspace, "cat a.txt")
    decision = session.decide("cat a.txt", call_id="read", withhold=False)
    assert decision.verdict == "nudge" and decision.note == "[ledger] Unchanged since step 1: you already saw this result then."
    recorded = session.record("read", *fresh(workspace, "cat a.txt"), exact=False)
    assert recorded.step == 1 and recorded.nudge_note == decision.note  # it ran as a call of its own
