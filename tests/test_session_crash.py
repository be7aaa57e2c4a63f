"""A hook process killed (SIGKILL) before each SQL statement of a decide/record pair in turn:
the database stays intact, later calls work, and no later Reuse is stale."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from ledger_impl import DurableSession
from ledger_properties import ground_truth
from fresh_runs import fresh

EDIT = "sed -i s/alpha/beta/ a.txt"


def killed_before_statement(root: Path, state: Path, statement: int) -> bool:
    """Run decide, the edit, record in a forked child that kills itself just before its
    `statement`-th SQL statement; whether it was killed (False: it ran to the end)."""
    pid = os.fork()
    if pid == 0:  # the child: a hook process
        count = 0

        def trace(_: str) -> None:
            nonlocal count
            count += 1
            if count == statement:
                os.kill(os.getpid(), signal.SIGKILL)

        try:
            with DurableSession.open(root, state_dir=state) as session:
                session._store._db.set_trace_callback(trace)
                session.decide(EDIT, call_id="edit")
            fresh(root, EDIT)
            with DurableSession.open(root, state_dir=state) as session:
                session._store._db.set_trace_callback(trace)
                session.record("edit", "", 0)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status)


def test_a_kill_before_any_statement_never_leaves_a_stale_reuse(tmp_path: Path) -> None:
    statement, outcomes = 0, []
    while True:
        statement += 1
        root, state = tmp_path / f"root{statement}", tmp_path / f"state{statement}"
        root.mkdir()
        (root / "a.txt").write_text("alpha\n")
        with DurableSession.open(root, state_dir=state) as session:
            session.decide("cat a.txt", call_id="read")
            session.record("read", *fresh(root, "cat a.txt"))
        before = ground_truth.look(root)
        killed = killed_before_statement(root, state, statement)
        edited = ground_truth.changed(before, ground_truth.look(root)) != frozenset()
        with DurableSession.open(root, state_dir=state) as session:
            again = session.decide("cat a.txt", call_id="again")
        if again.verdict == "reuse":
            assert (again.output, again.exit_code) == fresh(root, "cat a.txt"), (statement, edited)
        outcomes.append((edited, again.verdict))
        if not killed:
            break
    assert statement > 10  # the pair really has many statements, each one a kill point
    assert (True, "reuse") not in outcomes
    assert any(edited for edited, _ in outcomes) and any(not edited for edited, _ in outcomes)
