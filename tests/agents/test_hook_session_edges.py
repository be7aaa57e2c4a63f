"""The hook answers every agent plugin shares (`ledger_impl/agents/hook_session.py`), asked
directly where operator mutation of the module found no test asking: the command a malformed
payload names, the reuse header with and without its step and status, and a message added to a
reply that has none or has one. `docs/mutation/survivors.md` lists the mutants."""

from __future__ import annotations

from typing import Any

import pytest

from ledger_impl.agents import claude, hook_session
from ledger_impl.session import Decision


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [("Read", {}), ("Bash", None), ("Read", {"file_path": "/w/a.py", "offset": "ten"})],
    ids=["missing-field", "input-not-a-mapping", "offset-not-a-number"],
)
def test_a_payload_that_names_no_command_names_the_empty_one(tool: str, tool_input: Any) -> None:
    """"" matches no decided command, so the record keeps nothing."""
    assert hook_session.command_named(claude.command_for, tool, tool_input) == ""


def test_the_reuse_header_names_the_step_when_known_and_the_status_when_asked() -> None:
    assert "result of step 3 (" in hook_session.reuse_header(2)
    assert "result of an earlier step (" in hook_session.reuse_header(None)
    served = Decision("reuse", "out", 2, None, 2)
    assert hook_session.reuse_text(served) == f"{hook_session.reuse_header(2)}\nout"
    assert ", exit status 2 " in hook_session.reuse_text(served, with_status=True)


def test_a_message_is_added_to_a_reply_after_any_earlier_one() -> None:
    assert hook_session.with_system_message(None, "note") == {"systemMessage": "note"}
    assert hook_session.with_system_message({"continue": True}, "note") == {"continue": True, "systemMessage": "note"}
    earlier = {"continue": True, "systemMessage": "first"}
    assert hook_session.with_system_message(earlier, "second") == {"continue": True, "systemMessage": "first\nsecond"}
