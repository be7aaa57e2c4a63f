"""The durable session's edges that operator mutation of `ledger_impl/session.py` found no test
asking: the bounds of its arguments, what `record` returns, which results it keeps, which
pending call `abandon` names, and what a failing detector or a missing probe shows the agent.
Each test names the bug it catches; `docs/mutation/survivors.md` lists the mutants."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_impl import DurableSession, session_probe
from ledger_spec.degraded import Cause, Degraded, Effect
from fresh_runs import fresh


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\n")
    return root


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


def _read_and_record(session: DurableSession, root: Path, command: str, call_id: str, **record: object) -> object:
    session.decide(command, call_id=call_id)
    recorded = session.record(call_id, *fresh(root, command), **record)
    session.run_queued_probes()
    return recorded


def _recorded_with_its_probe_queued(session: DurableSession, root: Path, call_id: str = "t1") -> list[int]:
    """A read decided and recorded, its probe left queued (the test skips where none can run)."""
    session.decide("cat notes.txt", call_id=call_id)
    session.record(call_id, *fresh(root, "cat notes.txt"))
    if not session.queued_probes:
        pytest.skip(f"the probe cannot run here: {session_probe.unavailable()}")
    return list(session.queued_probes)


def test_an_output_cap_of_zero_is_accepted_and_keeps_nothing(workspace: Path, state_dir: Path) -> None:
    """Zero is a cap (nothing stored, nothing served), not an error; below zero is one. The probe
    is off so that the cap alone decides; the same calls with room for the output are served."""
    for cap, served in ((0, False), (1 << 20, True)):
        with DurableSession.open(workspace, state_dir=state_dir / str(cap), output_cap=cap, probe=False) as session:
            _read_and_record(session, workspace, "cat notes.txt", "t1")
            assert (session.decide("cat notes.txt", call_id="t2").verdict == "reuse") is served
    with pytest.raises(ValueError, match="output_cap"):
        DurableSession.open(workspace, state_dir=state_dir, output_cap=-1)


def test_record_names_the_step_of_a_call_in_flight_and_none_for_an_unknown_one(workspace: Path, state_dir: Path) -> None:
    """`Recorded.step` is what a later Reuse names: a known call's step, even when what ran was
    rewritten, and None for a call never decided here."""
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        assert session.record("never-decided", "x\n", 0).step is None
        session.decide("cat notes.txt", call_id="t1")
        rewritten = session.record("t1", *fresh(workspace, "cat notes.txt"), ran="cat notes.txt # by another hook")
        assert rewritten.step == session.snapshot().step - 1


@pytest.mark.parametrize("ran", ["cat a.txt", "cat z.txt"], ids=["sorts-before", "sorts-after"])
def test_a_rewritten_command_is_never_served_whatever_its_text_sorts_as(workspace: Path, state_dir: Path, ran: str) -> None:
    """`ran` differs from the decided text: what ran is unknown. A check written as `>` or `<`
    instead of `!=` would let a rewrite that sorts the other way through.
    Pins `ledger_impl/session.py` line 284 (a miss: `>` or `<` kept a rewritten command's output).
    """
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("cat notes.txt", call_id="t1")
        session.record("t1", "forged\n", 0, ran=ran)
        session.run_queued_probes()
        again = session.decide("cat notes.txt", call_id="t2")
    assert again.verdict != "reuse"
    assert "rewritten" in str(again.degraded or "")


@pytest.mark.parametrize(("exact", "cap"), [(False, 1 << 20), (True, 3)], ids=["inexact", "over-the-cap"])
def test_a_result_the_caller_cannot_vouch_for_or_too_long_is_never_served(
    workspace: Path, state_dir: Path, exact: bool, cap: int
) -> None:
    """Either reason alone keeps the output from being served: `exact and not too_long`. The
    probe is off: run with the cap as its output limit, it would refuse the long one on its own.
    Pins `ledger_impl/session.py` line 299 (a miss: `or` served an inexact result).
    """
    with DurableSession.open(workspace, state_dir=state_dir, output_cap=cap, probe=False) as session:
        _read_and_record(session, workspace, "cat notes.txt", "t1", exact=exact)
        assert session.decide("cat notes.txt", call_id="t2").verdict != "reuse"


def test_waiting_for_a_probe_nobody_runs_ends_at_its_timeout(workspace: Path, state_dir: Path) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        _recorded_with_its_probe_queued(session, workspace)
        assert session.wait_for_probes(0.1) is False
        session.run_queued_probes()
        assert session.wait_for_probes(0.1) is True


def test_abandoning_one_call_leaves_the_others_pending(workspace: Path, state_dir: Path) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        for call_id in ("a", "b", "c"):
            session.decide("cat notes.txt", call_id=call_id)
        assert session.abandon("b") == 1
        assert session.abandon("b") == 0
        assert session.abandon() == 2


class _AfterFirstReport:
    """A detector whose first report is clean and whose later ones fail (`problem` None: the scan
    raises, a tree it can no longer read) or report losing track (changes unknown, `problem`)."""

    def __init__(self, name: str, problem: str | None = None) -> None:
        self.name, self.problem, self.calls = name, problem, 0

    def changes_since(self, root: object, baseline: object, moment: object = None) -> object:
        from ledger_spec import Changes

        self.calls += 1
        if self.calls == 1:
            return Changes(), b"baseline", None
        if self.problem is None:
            raise OSError("scan failed")
        return Changes(unknown=True), b"baseline", self.problem


def test_a_detector_that_fails_costs_reuse_and_says_so(workspace: Path, state_dir: Path) -> None:
    detector = _AfterFirstReport("failing detector")
    with DurableSession.open(workspace, state_dir=state_dir, detector=detector, probe=False) as session:
        _read_and_record(session, workspace, "cat notes.txt", "t1")
        again = session.decide("cat notes.txt", call_id="t2")
    assert detector.calls > 1
    assert again.verdict != "reuse"
    assert "failing detector failed" in str(again.degraded or "")


def test_a_first_call_carries_no_degraded_note(workspace: Path, state_dir: Path) -> None:
    """The first report has no baseline to compare with (the stat index says so); nothing was
    observed yet, so it costs nothing and shows nothing."""
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        first = session.decide("cat notes.txt", call_id="t1")
    assert first.verdict == "allow" and first.degraded is None


def test_a_probe_that_cannot_run_here_is_named_in_the_decision(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = Degraded(Cause.PROBE_UNAVAILABLE, ("strace",), Effect.NUDGE_ONLY)
    monkeypatch.setattr(session_probe, "unavailable", lambda: missing)
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        _read_and_record(session, workspace, "cat notes.txt", "t1")
        again = session.decide("cat notes.txt", call_id="t2")
    assert again.verdict != "reuse"
    assert str(missing) in str(again.degraded or "")


@pytest.mark.parametrize("exit_code", ["0", 0.0, None, True], ids=["text", "float", "none", "bool"])
def test_an_exit_code_that_is_not_an_int_is_refused_and_changes_nothing(
    workspace: Path, state_dir: Path, exit_code: object
) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("cat notes.txt", call_id="t1")
        with pytest.raises(TypeError, match="exit_code"):
            session.record("t1", "alpha\n", exit_code)  # type: ignore[arg-type]
        assert session.abandon("t1") == 1  # still pending: the bad record changed nothing


def test_abandon_after_must_be_positive(workspace: Path, state_dir: Path) -> None:
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match="abandon_after"):
            DurableSession.open(workspace, state_dir=state_dir, abandon_after=bad)


def test_a_record_for_an_unknown_call_is_noted_only_when_it_claims_to_be_exact(workspace: Path, state_dir: Path) -> None:
    """An inexact record (a hook's Read answered as unchanged) would not have been kept anyway:
    no note. An exact one had an output that is now lost: the agent is told."""
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.record("unknown-inexact", "x\n", 0, exact=False)
        quiet = session.decide("cat notes.txt", call_id="t1")
        session.record("t1", *fresh(workspace, "cat notes.txt"))
        session.record("unknown-exact", "x\n", 0)
        noted = session.decide("cat notes.txt", call_id="t2")
    assert "unknown call" not in str(quiet.degraded or "")
    assert "record for unknown call 'unknown-exact'" in str(noted.degraded or "")


def test_a_call_past_the_deadline_is_marked_abandoned_once(workspace: Path, state_dir: Path) -> None:
    import time

    with DurableSession.open(workspace, state_dir=state_dir, abandon_after=0.05) as session:
        session.decide("cat notes.txt", call_id="slow")
        time.sleep(0.1)
        session.decide("ls", call_id="other")  # its load expires "slow"
        assert session.abandon() == 1  # "other" alone: "slow" was marked when it expired


def test_a_call_whose_row_was_forgotten_is_no_longer_in_flight(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An abandoned call's row is dropped after a day; the ledger then drops the call too, so a
    record arriving after that is for an unknown call (its output is not kept)."""
    import time

    from ledger_impl import session as session_module

    monkeypatch.setattr(session_module, "FORGET_ABANDONED_AFTER_S", 0.0)
    with DurableSession.open(workspace, state_dir=state_dir, abandon_after=0.05) as session:
        session.decide("cat notes.txt", call_id="slow")
        time.sleep(0.1)
        session.decide("ls", call_id="other")  # expires "slow", and forgets its row at once
        assert session.record("slow", *fresh(workspace, "cat notes.txt")).step is None


@pytest.mark.parametrize("damage", ["0" * 64, "f" * 64], ids=["sorts-before", "sorts-after"])
def test_a_header_whose_checksum_does_not_match_is_discarded(workspace: Path, state_dir: Path, damage: str) -> None:
    """Any mismatch discards the ledger, whichever way the stored checksum sorts."""
    import sqlite3

    from ledger_impl.store import database_path

    with DurableSession.open(workspace, state_dir=state_dir) as session:
        _read_and_record(session, workspace, "cat notes.txt", "t1")
    with sqlite3.connect(database_path(workspace, state_dir)) as db:
        db.execute("UPDATE state SET header_sum = ?, revision = 'forged'", (damage,))
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        again = session.decide("cat notes.txt", call_id="t2")
    assert again.verdict == "allow"
    assert "checksum does not match" in str(again.degraded or "")


def test_a_reuse_with_nothing_wrong_carries_no_degraded_note(workspace: Path, state_dir: Path) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        _read_and_record(session, workspace, "cat notes.txt", "t1")
        again = session.decide("cat notes.txt", call_id="t2")
    assert again.verdict == "reuse" and again.degraded is None


def test_waiting_for_probes_returns_once_another_thread_has_run_them(workspace: Path, state_dir: Path) -> None:
    import threading

    with DurableSession.open(workspace, state_dir=state_dir) as session:
        queued = _recorded_with_its_probe_queued(session, workspace)
        session.queued_probes.clear()

        def run_later() -> None:
            with DurableSession.open(workspace, state_dir=state_dir) as other:
                threading.Event().wait(0.2)
                for probe_id in queued:
                    other.run_probe(probe_id)

        runner = threading.Thread(target=run_later)
        runner.start()
        try:
            assert session.wait_for_probes(30.0) is True
        finally:
            runner.join()


def test_an_output_exactly_at_the_cap_is_kept(workspace: Path, state_dir: Path) -> None:
    size = len(fresh(workspace, "cat notes.txt")[0].encode())
    with DurableSession.open(workspace, state_dir=state_dir, output_cap=size) as session:
        _read_and_record(session, workspace, "cat notes.txt", "t1")
        assert session.decide("cat notes.txt", call_id="t2").verdict == "reuse"


def test_refusing_probes_notes_only_what_it_refused(workspace: Path, state_dir: Path) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        assert session.refuse_unfinished_probes("the service restarted") == 0
        session.decide("cat notes.txt", call_id="t1")
        session.record("t1", *fresh(workspace, "cat notes.txt"))
        quiet = session.decide("ls", call_id="t2")
        session.record("t2", *fresh(workspace, "ls"))
        if not session.queued_probes:
            pytest.skip(f"the probe cannot run here: {session_probe.unavailable()}")
        queued = len(session.queued_probes)  # the read's, and the listing's
        assert session.refuse_unfinished_probes("the service restarted") == queued
        noted = session.decide("cat notes.txt", call_id="t3")
    assert "refused" not in str(quiet.degraded or "")
    assert noted.verdict != "reuse" and f"{queued} probe(s) refused: the service restarted" in str(noted.degraded or "")


def test_the_view_is_read_only(workspace: Path, state_dir: Path) -> None:
    """`view` neither polls nor records: what changed is recorded by the next call."""
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        _read_and_record(session, workspace, "cat notes.txt", "t1")
        before = session.snapshot()
        (workspace / "notes.txt").write_text("beta\n")
        session.view()
        assert session.snapshot() == before


def test_a_detector_losing_track_after_the_first_step_costs_the_reuse(workspace: Path, state_dir: Path) -> None:
    """Only before anything was observed may a report's problem be passed over. Pins
    `ledger_impl/session.py` line 451 (a miss: `> 1` passed over a lost track at the first step)."""
    detector = _AfterFirstReport("forgetful detector", "lost track of the tree")
    with DurableSession.open(workspace, state_dir=state_dir, detector=detector, probe=False) as session:
        _read_and_record(session, workspace, "cat notes.txt", "t1")
        (workspace / "notes.txt").write_text("beta\n")
        again = session.decide("cat notes.txt", call_id="t2")
    assert again.verdict != "reuse"
    assert "lost track of the tree" in str(again.degraded or "")


def test_a_session_kept_open_reads_another_save_whichever_way_its_revision_sorts(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger a process saved is trusted only while the stored revision is its own. Here
    every later save's name sorts before the earlier ones (random names do so half the time).
    A listing, with the probe off: a file read's fingerprint (the file's identity) or the probe's
    traced identities would refuse the stale result on their own; only the ledger knows the
    directory gained a name.
    Pins `ledger_impl/session.py` line 544 (a miss: `<` trusted a stale ledger after another process's save).
    """
    from ledger_impl import session as session_module

    names = iter(f"{n:032x}" for n in range(1000, 0, -1))
    monkeypatch.setattr(session_module, "new_revision", lambda: next(names))
    with DurableSession.open(workspace, state_dir=state_dir, probe=False) as kept:
        _read_and_record(kept, workspace, "ls", "t1")
        assert kept.decide("ls", call_id="t1b").verdict == "reuse"
        with DurableSession.open(workspace, state_dir=state_dir, probe=False) as other:  # the fallback hook
            other.decide("touch new.txt", call_id="t2")
            fresh(workspace, "touch new.txt")
            other.record("t2", "", 0)
        again = kept.decide("ls", call_id="t3")
    assert again.verdict != "reuse"
