"""Waiting for the probes Ledger runs after its PostToolUse answers (`ledger_impl.session_probe`).

A scripted model answers at once, faster than any agent's next turn: a repeat would then come
before its read's probe has confirmed it and run again, which is safe but makes which calls are
answered depend on timing. The end-to-end tests call `settle` before each next turn.
"""

from __future__ import annotations

import pathlib

from ledger_impl.session import DurableSession


def settle(workspace: pathlib.Path, state: pathlib.Path) -> None:
    """Until every probe of `workspace`'s session has stored its verdict."""
    with DurableSession.open(workspace, state_dir=state) as session:
        assert session.wait_for_probes(60), "a probe never stored its verdict"
