"""The oracle of the session tests: what a command prints when it runs now, outside any ledger,
to compare byte for byte with what a Reuse served."""

from __future__ import annotations

from pathlib import Path

from ledger_impl.execution import run_command


def fresh(root: Path, command: str) -> tuple[str, int]:
    """`command` run in `root` now: its output and exit status."""
    completed = run_command(command, root, 30, 1 << 20)
    return completed.output, completed.exit_code
