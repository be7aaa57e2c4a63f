"""What the adapters' edge tests share: an exact observation recorded as a harness records it,
and a subdirectory holding a file of the same name as one at the root."""

from __future__ import annotations

import pathlib

from ledger_impl.session import DurableSession

READ = "cat notes.txt"


def harness_read(session: DurableSession, output: str) -> None:
    """An exact observation of READ (step 1 on a fresh session), as a harness that knows the
    exit status records it."""
    session.decide(READ, call_id="harness-1")
    session.record("harness-1", output, 0)


def subdirectory_with_other_notes(workspace: pathlib.Path) -> pathlib.Path:
    """`sub/`, holding a `notes.txt` unlike the root's: a read decided in the wrong directory
    would be served the root's."""
    (workspace / "sub").mkdir()
    (workspace / "sub" / "notes.txt").write_text("the other file\n")
    return workspace / "sub"


class EmptySession:
    """A session with nothing to show: the hook protocol allows an empty view."""

    def view(self) -> str:
        return ""
