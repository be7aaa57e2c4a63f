"""Driving an agent CLI whose hooks may start `ledger serve` (the thin client does): the run,
then which workspaces the service served, and the service stopped whatever happened."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Callable, TypeVar

Run = TypeVar("Run")


def run_then_stop(run: Callable[[], Run], state: pathlib.Path) -> tuple[Run, str]:
    """`run()`'s result and `ledger serve status` after it (JSON; empty when no service ran)."""
    ledger = [sys.executable, "-m", "ledger_cli.main", "serve"]
    try:
        result = run()
        status = subprocess.run([*ledger, "status", "--state-dir", str(state)], capture_output=True, text=True,
                                timeout=60)
    finally:
        subprocess.run([*ledger, "stop", "--state-dir", str(state)], capture_output=True, timeout=60)
    return result, status.stdout


def assert_served_only(status: str, workspace: pathlib.Path, calls: int) -> None:
    """The service served `workspace` alone, at least `calls` hook calls: none fell back to the
    in-process hook."""
    workspaces = json.loads(status)["workspaces"]
    assert [w["root"] for w in workspaces] == [str(workspace.resolve())] and workspaces[0]["calls"] >= calls, workspaces
