"""Claude Code's side of its hook calls, for the payload tests: the payloads shaped as the real
CLI (2.1.328, captured) sends them, and each Bash command run for real in the workspace."""

from __future__ import annotations

import pathlib
import subprocess
from typing import Any

from ledger_impl.agents import claude
from ledger_impl.session import DurableSession

DENY = "deny"


class ClaudeCode:
    """Plays Claude Code: hook payloads to `claude.handle`, tools run for real in the workspace
    (or in `cwd`, a directory below it, as the call's working directory)."""

    def __init__(self, root: pathlib.Path, session: DurableSession) -> None:
        self.root, self.session, self.calls = root, session, 0

    def _payload(self, event: str, tool: str, tool_input: dict[str, Any], call_id: str,
                 cwd: pathlib.Path | None, **fields: Any) -> dict[str, Any]:
        return {"session_id": "s", "cwd": str(cwd or self.root), "hook_event_name": event, "tool_name": tool,
                "tool_input": tool_input, "tool_use_id": call_id, **fields}

    def pre(self, tool: str, tool_input: dict[str, Any], cwd: pathlib.Path | None = None) -> tuple[str, dict[str, Any] | None]:
        self.calls += 1
        call_id = f"toolu_{self.calls:02d}"
        return call_id, claude.handle(self._payload("PreToolUse", tool, tool_input, call_id, cwd), self.session)

    def post(self, call_id: str, tool: str, tool_input: dict[str, Any], response: dict[str, Any],
             cwd: pathlib.Path | None = None) -> None:
        payload = self._payload("PostToolUse", tool, tool_input, call_id, cwd, tool_response=response)
        assert claude.handle(payload, self.session) is None
        self.session.run_queued_probes()  # what the detached probe process does after the answer

    def fail(self, call_id: str, tool_input: dict[str, Any], error: str, interrupt: bool = False,
             cwd: pathlib.Path | None = None) -> None:
        payload = self._payload("PostToolUseFailure", "Bash", tool_input, call_id, cwd, error=error, is_interrupt=interrupt)
        assert claude.handle(payload, self.session) is None
        self.session.run_queued_probes()

    def bash(self, command: str, cwd: pathlib.Path | None = None, **extra: Any) -> dict[str, Any] | None:
        """One Bash call through the hooks: denied (the reply), or run for real and recorded
        (the reply, if any: a Nudge's context)."""
        tool_input = {"command": command, "description": "d", **extra}
        call_id, reply = self.pre("Bash", tool_input, cwd)
        if (reply or {}).get("hookSpecificOutput", {}).get("permissionDecision") == DENY:
            return reply
        done = subprocess.run(["bash", "-c", command], cwd=cwd or self.root, capture_output=True, text=True)
        text = (done.stdout + done.stderr).rstrip()
        if done.returncode:
            self.fail(call_id, tool_input, f"Exit code {done.returncode}" + (f"\n{text}" if text else ""), cwd=cwd)
        else:
            self.post(call_id, "Bash", tool_input, {"stdout": text, "stderr": "", "interrupted": False,
                                                     "isImage": False, "noOutputExpected": False}, cwd)
        return reply


def denied_text(reply: dict[str, Any] | None) -> str | None:
    """The reason a PreToolUse reply denies the call with (Ledger's answer), or None."""
    output = (reply or {}).get("hookSpecificOutput", {})
    return output.get("permissionDecisionReason") if output.get("permissionDecision") == DENY else None
