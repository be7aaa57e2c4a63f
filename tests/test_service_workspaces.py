"""One served workspace (`ledger_impl/service/workspaces.py`) driven in process: calls counted,
the probes a call queued run on the prober thread so that a later call may be served, and a
closed workspace (or all of them) answering nothing more. Written for the survivors of the
module's operator mutation; the service's own tests reach this code through a subprocess,
where the mutation run's coverage does not follow."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger_impl.execution import run_command
from ledger_impl.service.workspaces import Workspace, Workspaces
from ledger_impl.session import DurableSession


@pytest.fixture
def root(tmp_path: Path) -> str:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    return os.fspath(workspace)


def _read(call_id: str):
    def job(session: DurableSession) -> str:
        decision = session.decide("cat notes.txt", call_id=call_id)
        if decision.verdict != "reuse":
            done = run_command("cat notes.txt", session.root, 30, 1 << 20)
            session.record(call_id, done.output, done.exit_code)
        return decision.verdict
    return job


def test_calls_are_counted_and_a_probed_read_is_served_by_the_next_call(root: str, tmp_path: Path) -> None:
    workspace = Workspace(root, os.fspath(tmp_path / "state"))
    try:
        assert workspace.calls == 0
        assert workspace.call(_read("t1"), dict(os.environ)) == "allow"
        workspace.settle_probes()  # the probe the first call queued has stored its verdict
        assert workspace.call(_read("t2"), dict(os.environ)) == "reuse"
        assert workspace.calls == 2
    finally:
        workspace.close()


def test_a_workspace_never_called_closes_cleanly(root: str, tmp_path: Path) -> None:
    Workspace(root, os.fspath(tmp_path / "state")).close()


def test_closing_every_workspace_closes_each_one(root: str, tmp_path: Path) -> None:
    workspaces = Workspaces(os.fspath(tmp_path / "state"))
    workspace = workspaces.get(root)
    assert workspaces.get(root) is workspace
    workspace.call(_read("t1"), dict(os.environ))
    workspaces.close()
    with pytest.raises(RuntimeError, match="shutdown"):
        workspace.call(_read("t2"), dict(os.environ))


def test_calls_made_at_once_run_one_after_the_other_on_the_workspace_s_thread(root: str, tmp_path: Path) -> None:
    """The session's SQLite connection belongs to the thread that opened it: two agents calling
    at once are served in turn by the one worker thread, never side by side."""
    import threading
    import time

    workspace = Workspace(root, os.fspath(tmp_path / "state"))
    results: list[object] = []

    def slow(session: DurableSession) -> str:
        time.sleep(0.3)
        return session.view()

    def call() -> None:
        try:
            results.append(workspace.call(slow, dict(os.environ)))
        except Exception as error:  # noqa: BLE001 - the assertion names it
            results.append(error)

    try:
        callers = [threading.Thread(target=call) for _ in range(2)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        assert all(isinstance(result, str) for result in results), results
    finally:
        workspace.close()


def test_closing_a_workspace_closes_the_prober_s_connection(root: str, tmp_path: Path) -> None:
    """The store runs in WAL mode: its `-wal` file is removed when the last connection closes,
    so one left open by the prober thread keeps it."""
    from ledger_impl.store import database_path

    workspace = Workspace(root, os.fspath(tmp_path / "state"))
    workspace.call(_read("t1"), dict(os.environ))
    workspace.settle_probes()
    probed = workspace._probe_session is not None
    workspace.close()
    if not probed:
        pytest.skip("the probe cannot run here, so no prober connection was opened")
    database = database_path(Path(root), tmp_path / "state")
    assert not Path(f"{database}-wal").exists()
