"""The failure-loop guard run inside `ledger hook`: one task = one hook session.

Every finished shell call of a session is one more turn of its task. The turns are kept in
one SQLite database under Ledger's state root, `<root>/economizer-hook/turns.sqlite3` (its own
folder, so no repository name can collide with it), with the session store's rules: WAL, a
busy timeout, and one `BEGIN IMMEDIATE` transaction per turn. Inside that transaction the
turn gets the next number and the guard is replayed over the task's turns up to it, so
concurrent hook processes of one session each get their own turn (none is lost or counted
twice; a retried call id keeps its number) and the decision for turn t depends only on turns
1..t, as the spec's guard does.

Why replay rather than store the guard's counters: the replay is the same `Guard` that the
differential property checks against the spec, so nothing new has to be shown equal; it
costs O(turns) per call, a few hundred steps at most for a real task.

The budget B is read from the repository's fed history at the task's first turn and kept
with the task, so a feed that lands mid-task cannot move the forced-stop line under turns
already taken. Once the guard stops a task, `stopped` answers its stop message for every later
call of the session, so the hook can refuse the next tool call too. A task that starts before the repository has a B stores no turns and never
answers anything but "continue": with the default trace judge (never stuck) and no B, no
rule of the guard can fire.
"""

from __future__ import annotations

import pathlib
import sqlite3
from typing import Literal

import attrs

from economizer_spec.guard import Decision
from economizer_spec.params import Params
from economizer_spec.trajectory import Step
from ledger_impl.state_directory import resolve
from ledger_impl.store import connect, write_transaction

from .guard import Guard
from .protocols import default_controllers
from .store import fed_budget

HOOK_DIR = "economizer-hook"
BUSY_TIMEOUT_S = 30.0
"""As the session store: a hook waits for a slow neighbour rather than failing the call."""

Action = Literal["continue", "redirect", "stop"]


@attrs.frozen
class TurnVerdict:
    turn: int
    action: Action
    text: str = ""
    reason: str = ""


def turns_path(state_dir: pathlib.Path | None) -> pathlib.Path:
    root = resolve(state_dir)
    return root / HOOK_DIR / "turns.sqlite3"


def stop_text(turn: int, reason: str) -> str:
    return f"[ledger economize] the failure-loop guard stopped this task at turn {turn}: {reason}"


def stopped(repository: str, session_id: str, state_dir: pathlib.Path | None = None) -> str | None:
    """The stop message if the guard has stopped this session's task, else None. Read only:
    a session the guard never saw creates nothing."""
    path = turns_path(state_dir)
    if not path.is_file():
        return None
    connection = connect(path, BUSY_TIMEOUT_S)
    try:
        row = connection.execute("SELECT stopped FROM tasks WHERE repository=? AND session=?", (repository, session_id)).fetchone()
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return None
        raise
    finally:
        connection.close()
    return row[0] if row else None


def observe_turn(
    repository: str,
    session_id: str,
    call_id: str,
    step: Step,
    state_dir: pathlib.Path | None = None,
) -> TurnVerdict:
    """Record one finished shell call as the next turn of the session's task; the guard's verdict."""
    path = turns_path(state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = connect(path, BUSY_TIMEOUT_S)
    try:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS tasks (repository TEXT NOT NULL, session TEXT NOT NULL, budget INTEGER,"
            " stopped TEXT, PRIMARY KEY (repository, session))"
        )
        connection.execute(
            "CREATE TABLE IF NOT EXISTS turns (repository TEXT NOT NULL, session TEXT NOT NULL, seq INTEGER NOT NULL,"
            " call_id TEXT NOT NULL, command TEXT NOT NULL, output TEXT NOT NULL, status INTEGER NOT NULL,"
            " PRIMARY KEY (repository, session, seq), UNIQUE (repository, session, call_id))"
        )
        with write_transaction(connection):
            return _observe(connection, (repository, session_id), call_id, step, state_dir)
    finally:
        connection.close()


def _observe(connection: sqlite3.Connection, key: tuple[str, str], call_id: str, step: Step, state_dir: pathlib.Path | None) -> TurnVerdict:
    budget_now, params = fed_budget(key[0], state_dir)
    row = connection.execute("SELECT budget FROM tasks WHERE repository=? AND session=?", key).fetchone()
    if row is None:
        budget = budget_now
        connection.execute("INSERT INTO tasks (repository, session, budget) VALUES (?, ?, ?)", (*key, budget))
    else:
        budget = row[0]
    if budget is None:  # no B when the task began: nothing can fire, nothing is kept
        return TurnVerdict(0, "continue", reason="no budget yet")
    known = connection.execute("SELECT seq FROM turns WHERE repository=? AND session=? AND call_id=?", (*key, call_id)).fetchone()
    if known is None:
        seq = connection.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE repository=? AND session=?", key).fetchone()[0]
        connection.execute(
            "INSERT INTO turns (repository, session, seq, call_id, command, output, status) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (*key, seq, call_id, step.command, step.output, step.returncode),
        )
    else:
        seq = known[0]
    controllers = default_controllers()
    guard = Guard(params, budget, controllers.trace_judge, controllers.redirect_writer)
    decision: Decision | None = None
    for command, output, status in connection.execute(
        "SELECT command, output, status FROM turns WHERE repository=? AND session=? AND seq<=? ORDER BY seq", (*key, seq)
    ):
        decision = guard.observe(Step(command, output, status))
    assert decision is not None  # the turn itself was just read back
    if decision.action == "stop":
        connection.execute("UPDATE tasks SET stopped=COALESCE(stopped, ?) WHERE repository=? AND session=?",
                           (stop_text(decision.turn, decision.reason), *key))
    return TurnVerdict(decision.turn, decision.action, decision.text, decision.reason)
