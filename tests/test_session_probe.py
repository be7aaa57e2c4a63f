"""The hook path's probe rows, one step at a time: claim, run and settle (`ledger_impl.session_probe`).

`tests/test_probe_hook_path.py` drives whole calls through a durable session. These tests
stop between the steps, where another process (a restarted service, a second runner) can
change a row, and check that a row is only ever confirmed by the probe of the read it was
made for, and that what a refusal tells the agent names the read. Written for the survivors
of the module's operator mutation (docs/mutation/survivors.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from probe_workspace import root  # noqa: F401 (fixture)

from ledger_impl import session_probe
from ledger_impl.execution import command_environment, run_command
from ledger_impl.probe import ProbeResult, unavailable
from ledger_impl.probe.dependencies import DependencySet
from ledger_impl.session import DurableSession

MISSING = unavailable()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} (.ci/run installs them)")


@pytest.fixture
def session(root: Path, tmp_path: Path) -> Iterator[DurableSession]:
    with DurableSession.open(root, state_dir=tmp_path / "state", probe=True) as opened:
        opened.environment = dict(os.environ)
        yield opened


def _read(session: DurableSession, command: str, call_id: str, output: str | None = None) -> int:
    """Decide and record `command` as the agent ran it (or as it claims it printed `output`):
    the id of its queued probe."""
    assert session.decide(command, call_id=call_id).verdict == "allow"
    ran = run_command(command, session.root, 30, 1 << 20, command_environment(dict(os.environ)))
    session.record(call_id, ran.output if output is None else output, ran.exit_code)
    return session.queued_probes.pop()


def _status(session: DurableSession, probe_id: int) -> str:
    with session._store.transaction():
        row = session._store.probe(probe_id)
    assert row is not None
    return row.status


def _claim(session: DurableSession, probe_id: int) -> session_probe.Job | None:
    with session._store.transaction():
        return session_probe.claim(session._store, session._stored_ledger(), probe_id)


def _settle(session: DurableSession, job: session_probe.Job, result: ProbeResult) -> str | None:
    with session._store.transaction():
        return session_probe.settle(session._store, session._stored_ledger(), job, result)


def _notes(session: DurableSession) -> list[str]:
    with session._store.transaction():
        return [text for _, text in session._store.notes()]


def test_a_confirmed_probe_is_never_claimed_again(session: DurableSession) -> None:
    probe_id = _read(session, "cat a.txt", "c1")
    assert session.run_probe(probe_id) is None and _status(session, probe_id) == "confirmed"
    assert _claim(session, probe_id) is None
    assert _status(session, probe_id) == "confirmed"


def test_a_probe_refused_while_it_ran_stays_refused(session: DurableSession) -> None:
    """A service that restarts refuses the probes it left running; the runner that still
    finishes one must not confirm it (its claim is gone)."""
    probe_id = _read(session, "cat a.txt", "c1")
    job = _claim(session, probe_id)
    assert job is not None and _status(session, probe_id) == "probing"
    with session._store.transaction():
        assert session._store.refuse_unfinished_probes("the service restarted") == 1
    result = session_probe.run(session.root, job, dict(os.environ), 30, 1 << 20)
    assert result.servable, result.reason  # a probe that would have confirmed the read
    assert _settle(session, job, result) is None
    assert _status(session, probe_id) == "refused"
    assert session.decide("cat a.txt", call_id="c2").verdict != "reuse"


def test_a_read_that_ran_outside_the_root_is_never_probed(session: DurableSession) -> None:
    """The root is `ws`; `../a` sorts below it and `../zz` above it: neither is inside."""
    probe_id = _read(session, "cat a.txt", "c1")
    job = _claim(session, probe_id)
    assert job is not None
    for cwd in ("../a", "../zz", "../ws2"):
        outside = attrs.evolve(job, row=attrs.evolve(job.row, cwd=cwd))
        result = session_probe.run(session.root, outside, dict(os.environ), 30, 1 << 20)
        assert not result.servable and result.reason == f"the read ran outside the root ({cwd})"
    inside = attrs.evolve(job, row=attrs.evolve(job.row, cwd="sub/.."))
    assert session_probe.run(session.root, inside, dict(os.environ), 30, 1 << 20).servable


def test_a_probe_that_finds_a_dependency_never_reusable_refuses_the_read(session: DurableSession) -> None:
    """The probe returns its dependency set with the reason (`probe.dependencies._never`):
    a result with dependencies is still a refusal when it is not servable."""
    probe_id = _read(session, "cat a.txt", "c1")
    job = _claim(session, probe_id)
    assert job is not None
    why = "/etc/passwd changed while the command ran"
    never = ProbeResult(False, why, DependencySet(frozenset(), False, (), why), "alpha\n", 0)
    assert _settle(session, job, never) == why
    assert _status(session, probe_id) == "refused"
    assert _notes(session)[-1] == f"probe of `cat a.txt`: {why}; its output is not served"
    assert session.decide("cat a.txt", call_id="c2").verdict != "reuse"


@pytest.mark.parametrize("length", [79, 80, 81, 120])
def test_a_refusal_note_names_the_read_whole_up_to_80_characters(session: DurableSession, length: int) -> None:
    pad = "x" * (length - len("grep -c '' a.txt # "))
    command = f"grep -c '' a.txt # {pad}"
    assert len(command) == length
    probe_id = _read(session, command, "c1", output="not what grep prints\n")
    reason = session.run_probe(probe_id)
    assert reason is not None and "printed something else" in reason
    shown = command if length <= 80 else command[:77] + "..."
    assert _notes(session)[-1] == f"probe of `{shown}`: {reason}; its output is not served"
    assert len(shown) <= 80


def test_a_session_whose_ledger_cannot_be_loaded_refuses_the_probe(session: DurableSession) -> None:
    probe_id = _read(session, "cat a.txt", "c1")
    with session._store.transaction():
        assert session_probe.claim(session._store, None, probe_id) is None
    assert _status(session, probe_id) == "refused"


@pytest.mark.parametrize("moved", ["older", "newer"])
def test_a_row_pointed_at_another_probe_s_observation_is_refused(session: DurableSession, moved: str) -> None:
    """A row confirms only the observation that names it: the older row moved onto the newer
    row's step, or the reverse, is refused (ids only grow, so `<=` or `>=` would take one)."""
    first = _read(session, "cat a.txt", "c1")
    second = _read(session, "cat sub/a.txt", "c2")
    assert first < second
    row, onto = (first, second) if moved == "older" else (second, first)
    with session._store.transaction():
        step = session._store.probe(onto).step  # type: ignore[union-attr]
        assert step is not None
        session._store.queue_probe(row, step, "exact")
    assert _claim(session, row) is None
    assert _status(session, row) == "refused"
    assert session.run_probe(onto) is None and _status(session, onto) == "confirmed"


def test_a_probe_settled_twice_keeps_its_first_verdict(session: DurableSession) -> None:
    """Two runners that both finish one probe (a service and a detached process): the later
    verdict, whichever it is, changes nothing."""
    probe_id = _read(session, "cat a.txt", "c1")
    job = _claim(session, probe_id)
    assert job is not None
    assert _settle(session, job, session_probe.run(session.root, job, dict(os.environ), 30, 1 << 20)) is None
    assert _status(session, probe_id) == "confirmed"
    notes = _notes(session)
    assert _settle(session, job, ProbeResult(False, "timed out")) is None
    assert _status(session, probe_id) == "confirmed" and _notes(session) == notes
    assert session.decide("cat a.txt", call_id="c2").verdict == "reuse"


def test_a_read_gone_stale_before_its_probe_ran_is_refused_unrun(session: DurableSession) -> None:
    probe_id = _read(session, "cat a.txt", "c1")
    (session.root / "a.txt").write_text("edited\n")
    assert session.decide("cat sub/a.txt", call_id="c2").verdict == "allow"  # its poll records the edit
    assert _claim(session, probe_id) is None
    with session._store.transaction():
        row = session._store.probe(probe_id)
    assert row is not None and (row.status, row.reason) == ("refused", "its output went stale before the probe ran")


def test_a_record_that_does_not_decode_never_serves(session: DurableSession) -> None:
    probe_id = _read(session, "cat a.txt", "c1")
    assert session.run_probe(probe_id) is None and _status(session, probe_id) == "confirmed"
    with session._store.transaction():
        session._store.set_probe_status(probe_id, "confirmed", None, b"\xff\xfe not UTF-8")
    assert session.decide("cat a.txt", call_id="c2").verdict != "reuse"
    assert _status(session, probe_id) == "stale"


def test_a_call_whose_output_is_not_kept_leaves_no_probe_row(session: DurableSession) -> None:
    """An inexact result is never stored, so there is nothing to probe: its row goes."""
    assert session.decide("cat a.txt", call_id="c1").verdict == "allow"
    with session._store.transaction():
        rows = session._store._db.execute("SELECT id, status FROM probes").fetchall()
    assert [status for _, status in rows] == ["running"]
    session.record("c1", "alpha\n", 0, exact=False)
    assert not session.queued_probes
    with session._store.transaction():
        assert session._store.probe(rows[0][0]) is None
