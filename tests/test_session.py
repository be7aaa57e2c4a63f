"""DurableSession: decide and record from separate opens (as separate hook processes would),
verdicts byte-exact against a fresh run, and every degraded path costing reuse, never truth."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from ledger_impl import DurableSession, Policy
from ledger_impl.store import database_path
from ledger_properties import ground_truth
from switched_program import SwitchedProgram
from fresh_runs import fresh


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 31)))
    (root / "notes.txt").write_text("alpha\n")
    return root


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


def call(root: Path, state_dir: Path, command: str, call_id: str, **options: object):
    """One hook round trip: decide in one open, run unless reused, record in another open."""
    with DurableSession.open(root, state_dir=state_dir, **options) as session:
        decision = session.decide(command, call_id=call_id)
    if decision.verdict != "reuse":
        output, code = fresh(root, command)
        with DurableSession.open(root, state_dir=state_dir, **options) as session:
            session.record(call_id, output, code)
            session.run_queued_probes()  # what the hook's detached probe does after the answer
    return decision


def test_a_repeated_read_is_reused_across_opens_byte_for_byte(workspace: Path, state_dir: Path) -> None:
    first = call(workspace, state_dir, "cat -n src/app.py", "t1")
    again = call(workspace, state_dir, "cat -n src/app.py", "t2")
    assert (first.verdict, again.verdict) == ("allow", "reuse")
    assert (again.output, again.exit_code) == fresh(workspace, "cat -n src/app.py")
    assert again.served_step == 0


@pytest.mark.parametrize(
    "edit", ["sed -i 's/line 5/LINE 5/' src/app.py", "echo x >> src/app.py", "touch -d '2001-01-01' src/app.py"]
)
def test_an_edit_between_reads_forces_a_fresh_run(workspace: Path, state_dir: Path, edit: str) -> None:
    call(workspace, state_dir, "cat src/app.py", "t1")
    call(workspace, state_dir, edit, "t2")
    assert call(workspace, state_dir, "cat src/app.py", "t3").verdict == "allow"


def test_an_edit_by_another_process_between_calls_is_caught(workspace: Path, state_dir: Path) -> None:
    call(workspace, state_dir, "ls src", "t1")
    (workspace / "src" / "new.py").write_text("")
    assert call(workspace, state_dir, "ls src", "t2").verdict == "allow"


def test_an_abandoned_call_makes_the_scope_unknown(workspace: Path, state_dir: Path) -> None:
    call(workspace, state_dir, "cat notes.txt", "t1")
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("python3 script.py", call_id="lost")
        assert session.abandon() == 1
        decision = session.decide("cat notes.txt", call_id="t3")
    assert decision.verdict == "allow"
    assert "unknown" in str(decision.degraded or "")


def test_an_unknown_scope_change_is_still_unknown_when_another_process_loads_it(workspace: Path, state_dir: Path) -> None:
    # Each hook call is a new process: what one recorded as changes unknown must be read back
    # as such from the store, or the next process serves a read from before it.
    call(workspace, state_dir, "cat notes.txt", "t1")
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("python3 script.py", call_id="lost")
        assert session.abandon() == 1
    assert call(workspace, state_dir, "cat notes.txt", "t2").verdict == "allow"
    assert call(workspace, state_dir, "cat notes.txt", "t3").verdict == "reuse"


def test_a_call_pending_past_the_deadline_is_abandoned(workspace: Path, state_dir: Path) -> None:
    call(workspace, state_dir, "cat notes.txt", "t1")
    with DurableSession.open(workspace, state_dir=state_dir, abandon_after=0.01) as session:
        session.decide("python3 script.py", call_id="lost")
    import time

    time.sleep(0.05)
    with DurableSession.open(workspace, state_dir=state_dir, abandon_after=0.01) as session:
        decision = session.decide("cat notes.txt", call_id="t3")
    assert decision.verdict == "allow"
    assert "never reported" in str(decision.degraded or "")


def test_a_record_after_the_deadline_concludes_the_step_but_is_never_served(workspace: Path, state_dir: Path) -> None:
    import time

    with DurableSession.open(workspace, state_dir=state_dir, abandon_after=0.01) as session:
        session.decide("cat notes.txt", call_id="slow")
        time.sleep(0.05)
        session.decide("ls", call_id="other")  # expires "slow"
        session.record("slow", *fresh(workspace, "cat notes.txt"))
        assert session.decide("cat notes.txt", call_id="again").verdict != "reuse"
        history = [record.command.text for record in session.snapshot().history]
    assert history == ["cat notes.txt"]


def test_no_reuse_while_a_writer_is_in_flight(workspace: Path, state_dir: Path) -> None:
    call(workspace, state_dir, "cat notes.txt", "t1")
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        assert session.decide("sed -i s/alpha/beta/ notes.txt", call_id="w").verdict == "allow"
        blocked = session.decide("cat notes.txt", call_id="r")
        assert blocked.verdict == "allow" and "still running" in str(blocked.degraded or "")
        session.record("r", *fresh(workspace, "cat notes.txt"))
    # A reader in flight does not block reuse of another read.
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        fresh(workspace, "sed -i s/alpha/beta/ notes.txt")
        session.record("w", "", 0)
        session.decide("cat src/app.py", call_id="r1")
        session.record("r1", *fresh(workspace, "cat src/app.py"))
        session.run_queued_probes()
        session.decide("ls", call_id="r2")
        assert session.decide("cat src/app.py", call_id="r3").verdict == "reuse"


def test_a_writer_given_up_on_no_longer_blocks_reuse_but_its_late_record_still_counts(
    workspace: Path, state_dir: Path
) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("sed -i s/alpha/beta/ notes.txt", call_id="w")
        assert session.abandon("w") == 1  # spec `expire`: unknown scope, no longer a writer in flight
        assert session.snapshot().pending[0].may_write is False
        session.decide("cat notes.txt", call_id="r1")
        session.record("r1", *fresh(workspace, "cat notes.txt"))
        session.run_queued_probes()
        assert session.decide("cat notes.txt", call_id="r2").verdict == "reuse"
        fresh(workspace, "sed -i s/alpha/beta/ notes.txt")  # it ran after all, and reports late
        session.record("w", "", 0)
        assert session.decide("cat notes.txt", call_id="r3").verdict == "allow"
        history = [record.command.text for record in session.snapshot().history]
    assert history[-2:] == ["cat notes.txt", "sed -i s/alpha/beta/ notes.txt"]


def test_a_writer_abandoned_before_expire_existed_stops_blocking_reuse_at_the_next_load(
    workspace: Path, state_dir: Path
) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("sed -i s/alpha/beta/ notes.txt", call_id="w")
        with session._store.transaction():
            session._store.mark_abandoned("w")  # as an older Ledger left it: its ledger call still may write
        assert session.snapshot().pending[0].may_write is False  # given up on at the load
        session.decide("cat notes.txt", call_id="r1")
        session.record("r1", *fresh(workspace, "cat notes.txt"))
        session.run_queued_probes()
        assert session.decide("cat notes.txt", call_id="r2").verdict == "reuse"


def test_a_read_overlapping_a_recorded_change_is_not_kept(workspace: Path, state_dir: Path) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("cat notes.txt", call_id="read")
        output = fresh(workspace, "cat notes.txt")  # the read ran first...
        session.decide("echo more >> notes.txt", call_id="write")
        session.record("write", *fresh(workspace, "echo more >> notes.txt"))
        session.record("read", *output)  # ...and reports after the write was recorded
        again = session.decide("cat notes.txt", call_id="read2")
    assert again.verdict != "reuse"  # served, it would lack the line the write appended


def test_a_read_overlapping_a_write_to_another_file_is_kept(workspace: Path, state_dir: Path) -> None:
    # Stamped at its start, the read depends only on its own file: a change to another file
    # recorded while it ran does not spoil it (the old rule dropped any read G moved under).
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("cat notes.txt", call_id="read")
        output = fresh(workspace, "cat notes.txt")
        session.decide("echo x >> src/app.py", call_id="write")
        session.record("write", *fresh(workspace, "echo x >> src/app.py"))
        session.record("read", *output)
        session.run_queued_probes()
        again = session.decide("cat notes.txt", call_id="read2")
    assert again.verdict == "reuse" and again.output == output[0]


def test_a_read_started_before_an_unrecorded_write_landed_is_stale(workspace: Path, state_dir: Path) -> None:
    # The write lands while the read is in flight and is found by the read's own record poll:
    # recorded after the read's start stamp, so the read is never served.
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("cat notes.txt", call_id="read")
        output = fresh(workspace, "cat notes.txt")
        (workspace / "notes.txt").write_text("changed while the read ran\n")
        session.record("read", *output)
        again = session.decide("cat notes.txt", call_id="read2")
    assert again.verdict != "reuse"


def test_an_output_over_the_cap_is_never_reused(workspace: Path, state_dir: Path) -> None:
    call(workspace, state_dir, "cat src/app.py", "t1", output_cap=10)
    assert call(workspace, state_dir, "cat src/app.py", "t2", output_cap=10).verdict != "reuse"


def test_the_session_never_writes_into_the_root(workspace: Path, state_dir: Path) -> None:
    before = ground_truth.look(workspace)
    for index in range(3):
        call(workspace, state_dir, "cat notes.txt", f"t{index}")
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.view()
    assert ground_truth.changed(before, ground_truth.look(workspace), include_root=True) == frozenset()
    assert database_path(workspace, state_dir).is_file()


def test_a_state_dir_inside_the_root_is_refused(workspace: Path) -> None:
    with pytest.raises(ValueError, match="inside the workspace"):
        DurableSession.open(workspace, state_dir=workspace / ".ledger")


def test_a_damaged_ledger_is_discarded_with_a_note(workspace: Path, state_dir: Path) -> None:
    call(workspace, state_dir, "cat notes.txt", "t1")
    with sqlite3.connect(database_path(workspace, state_dir)) as db:
        (value,) = db.execute("SELECT value FROM log_entries WHERE log = 'observations'").fetchone()
        flipped = value[:-2] + bytes([value[-2] ^ 1]) + value[-1:]
        db.execute("UPDATE log_entries SET value = ? WHERE log = 'observations'", (flipped,))
    decision = call(workspace, state_dir, "cat notes.txt", "t2")
    assert decision.verdict == "allow"
    assert "discarded" in str(decision.degraded or "")


def test_a_file_that_is_not_a_database_is_set_aside(workspace: Path, state_dir: Path) -> None:
    path = database_path(workspace, state_dir)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a database" * 100)
    decision = call(workspace, state_dir, "cat notes.txt", "t1")
    assert decision.verdict == "allow" and "discarded" in str(decision.degraded or "")
    assert call(workspace, state_dir, "cat notes.txt", "t2").verdict == "reuse"
    assert any(p.name.startswith(path.name + ".discarded-") for p in path.parent.iterdir())


def test_state_kept_under_another_policy_is_not_trusted(workspace: Path, state_dir: Path) -> None:
    call(workspace, state_dir, "cat notes.txt", "t1")
    other = Policy(reuse_mode="reference")
    decision = call(workspace, state_dir, "cat notes.txt", "t2", policy=other)
    assert decision.verdict == "allow" and "another policy" in str(decision.degraded or "")


def test_bad_input_is_a_clear_error_and_leaves_state_intact(workspace: Path, state_dir: Path) -> None:
    call(workspace, state_dir, "cat notes.txt", "t1")
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        with pytest.raises(ValueError, match="call_id"):
            session.decide("cat notes.txt", call_id="")
        with pytest.raises(TypeError):
            session.record("t9", b"bytes", 0)  # type: ignore[arg-type]
    assert call(workspace, state_dir, "cat notes.txt", "t2").verdict == "reuse"


def test_a_link_retargeted_just_before_the_poll_cannot_misname_the_read(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command is classified after the poll: a change that lands before the poll (and is
    recorded by it, so the read's start stamp includes it) must also be what names its target."""
    (workspace / "b.txt").write_text("beta\n")
    (workspace / "link").symlink_to("notes.txt")
    original = DurableSession._load

    def retarget_then_load(self: DurableSession, **options: object):  # type: ignore[no-untyped-def]
        if (workspace / "link").readlink() == Path("notes.txt"):
            (workspace / "link").unlink()
            (workspace / "link").symlink_to("b.txt")
        return original(self, **options)  # type: ignore[arg-type]

    with DurableSession.open(workspace, state_dir=state_dir) as session:
        monkeypatch.setattr(DurableSession, "_load", retarget_then_load)
        session.decide("cat link", call_id="read")
        monkeypatch.setattr(DurableSession, "_load", original)
        session.record("read", *fresh(workspace, "cat link"))
        again = session.decide("cat notes.txt", call_id="other")
    if again.verdict == "reuse":
        assert (again.output, again.exit_code) == fresh(workspace, "cat notes.txt")


def test_the_working_directory_names_the_target(workspace: Path, state_dir: Path, tmp_path: Path) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as session:
        session.decide("cat app.py", call_id="in-src", cwd=workspace / "src")
        session.record("in-src", *fresh(workspace / "src", "cat app.py"))
        session.run_queued_probes()
        served = session.decide("cat src/app.py", call_id="from-root")
        assert (served.verdict, served.output) == ("reuse", fresh(workspace, "cat src/app.py")[0])
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        (outside / "notes.txt").write_text("other\n")
        session.decide("cat notes.txt", call_id="out", cwd=outside)
        session.record("out", *fresh(outside, "cat notes.txt"))
        again = session.decide("cat notes.txt", call_id="out2", cwd=outside)
    assert again.verdict != "reuse"  # a file outside the root is never vouched for


def test_a_program_shadowed_on_path_between_reads_is_never_served_stale(
    workspace: Path, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The counters see only the tree; a `head` placed first on PATH (an activated venv, a shim)
    # changes what `head` prints without any change under the root. The hook process's
    # environment is the agent's, so the session fingerprints the program it resolves.
    shims = tmp_path / "shims"
    shims.mkdir()
    monkeypatch.setenv("PATH", f"{shims}:{__import__('os').environ['PATH']}")
    first = call(workspace, state_dir, "head -n 2 notes.txt", "c1")
    assert first.verdict != "reuse"
    shim = shims / "head"
    shim.write_text("#!/bin/sh\necho shadowed\n")
    shim.chmod(0o755)
    second = call(workspace, state_dir, "head -n 2 notes.txt", "c2")
    assert second.verdict != "reuse", "served the output of the program PATH no longer resolves to"


def test_a_program_switched_while_the_read_ran_is_not_served_once_switched_back(
    workspace: Path, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process switches `cat` to another version between decide and record, and back
    # before the next call: the fingerprint is then what it was at decide, but the recorded
    # output came from the other version. Only the record's own comparison can tell. The probe
    # is off (`ledger hook --no-probe`), so Reuse rests on the fingerprint alone.
    program = SwitchedProgram(tmp_path / "alternatives")
    monkeypatch.setenv("PATH", program.search_path(os.environ["PATH"]))
    with DurableSession.open(workspace, state_dir=state_dir, probe=False) as session:
        assert session.decide("cat notes.txt", call_id="c1").verdict == "allow"
        program.switch("b")
        session.record("c1", *fresh(workspace, "cat notes.txt"))
    program.switch("a")
    again = call(workspace, state_dir, "cat notes.txt", "c2", probe=False)
    if again.verdict == "reuse":
        assert (again.output, again.exit_code) == fresh(workspace, "cat notes.txt")
    assert call(workspace, state_dir, "cat notes.txt", "c3", probe=False).verdict == "reuse", \
        "a read recorded with the fingerprint unmoved is served"


def test_a_session_kept_open_sees_what_another_process_stored(workspace: Path, state_dir: Path) -> None:
    """A resident service keeps one session open and reuses the ledger object it saved while
    the stored bytes are its own: a write by another process (the fallback hook) must be read."""
    with DurableSession.open(workspace, state_dir=state_dir) as kept:
        kept.decide("cat notes.txt", call_id="t1")
        kept.record("t1", *fresh(workspace, "cat notes.txt"))
        kept.run_queued_probes()  # what the service's probe thread does after the answer
        assert kept.decide("cat notes.txt", call_id="t2").verdict == "reuse"
        call(workspace, state_dir, "echo beta > notes.txt", "t3")  # another open, as the fallback hook
        assert kept.decide("cat notes.txt", call_id="t4").verdict == "allow"


def test_a_call_rolled_back_leaves_no_trace_in_a_session_kept_open(
    workspace: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with DurableSession.open(workspace, state_dir=state_dir) as kept:
        kept.decide("cat notes.txt", call_id="t1")
        kept.record("t1", *fresh(workspace, "cat notes.txt"))
        kept.run_queued_probes()  # what the service's probe thread does after the answer
        before = kept.snapshot()
        store = kept._store
        real_save = store.save_state

        def failing(*args: object) -> None:
            real_save(*args)
            raise sqlite3.OperationalError("disk I/O error (test)")

        monkeypatch.setattr(store, "save_state", failing)
        with pytest.raises(sqlite3.OperationalError):
            kept.decide("echo gamma > notes.txt", call_id="t2")  # started in the ledger object, then rolled back
        monkeypatch.setattr(store, "save_state", real_save)
        assert kept.snapshot() == before
        assert kept.decide("cat notes.txt", call_id="t3").verdict == "reuse"
