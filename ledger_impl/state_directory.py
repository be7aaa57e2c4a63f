"""Where Ledger keeps its state: one directory per user, outside every workspace it watches.

The default is `$XDG_STATE_HOME/ledger`, and `~/.local/state/ledger` when XDG_STATE_HOME is
unset or empty. Under it: `sessions/` (the session databases, `ledger_impl.store`), `service/`
(the resident service's socket, secret and port, `ledger_impl.service.layout`), Watchman's
files, and what the CLI and the economizer keep.

`ledger_client/thin.py` computes the same default without importing Ledger (it starts at every
tool call); tests/test_state_directory.py checks that the two rules agree.
"""

from __future__ import annotations

import os
import pathlib


def default() -> pathlib.Path:
    """`$XDG_STATE_HOME/ledger`, else `~/.local/state/ledger`, from this process's environment."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return pathlib.Path(base) / "ledger"


def resolve(explicit: os.PathLike[str] | str | None) -> pathlib.Path:
    """The state directory a caller named, else the default."""
    return pathlib.Path(explicit) if explicit is not None else default()


def check_outside(root: os.PathLike[str] | str, state_dir: os.PathLike[str] | str) -> None:
    """Raise ValueError if `state_dir` is `root` or below it: Ledger never writes into the tree it
    watches (its own writes would be reported as the agent's changes, or hide them)."""
    root_r = os.path.realpath(root)
    state_r = os.path.realpath(state_dir)
    if state_r == root_r or state_r.startswith(root_r.rstrip("/") + "/"):
        raise ValueError(f"the state directory {os.fspath(state_dir)!r} is inside the workspace {os.fspath(root)!r}")
