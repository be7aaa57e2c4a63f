"""Helpers for the service tests: a real `ledger serve` process and the four ways to call it.

Every way sends the same hook payload and returns the agent's reply (None: no opinion): the
Unix socket as the thin client speaks it, the thin client process itself, HTTP as Claude Code's
`type: "http"` hooks post it, and today's in-process `ledger hook` (the reference).
"""

from __future__ import annotations

import http.client
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

from ledger_client import thin

THIN = pathlib.Path(thin.__file__)
READ = "cat a.txt"  # the read the tests repeat


def workspace(root: pathlib.Path) -> pathlib.Path:
    """A small workspace at `root`: `a.txt` (read by READ) and `b.txt`."""
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / "b.txt").write_text("bee\n")
    return root


def pre(call_id: str, command: str, root: pathlib.Path, session: str = "s1") -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_use_id": call_id, "cwd": str(root), "session_id": session}


def post(call_id: str, command: str, stdout: str, root: pathlib.Path, session: str = "s1") -> dict[str, Any]:
    return {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": command},
            "tool_use_id": call_id, "cwd": str(root), "session_id": session,
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}}


def settled(state: pathlib.Path, root: pathlib.Path) -> None:
    """Wait until the probes the service runs after its answers have stored their verdicts."""
    from ledger_impl.session import DurableSession  # the test's side only: the client imports nothing of Ledger

    with DurableSession.open(root, state_dir=state) as session:
        assert session.wait_for_probes(60), "the service's probes never stored a verdict"


class Served:
    """A `ledger serve` process over `state` (started on construction, stopped by `stop`)."""

    def __init__(self, state: pathlib.Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.state = state
        self.process = subprocess.Popen([sys.executable, "-m", "ledger_cli.main", "serve", "--state-dir", str(state), *extra],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        deadline = time.monotonic() + 30
        while not self.up():
            assert self.process.poll() is None, self.process.stdout.read() if self.process.stdout else ""
            assert time.monotonic() < deadline, "ledger serve did not come up"
            time.sleep(0.05)

    def up(self) -> bool:
        try:
            thin.request(thin.socket_path(str(self.state)), {"op": "status"}, 2.0)
        except thin.Unreachable:
            return False
        return True

    def status(self) -> dict[str, Any]:
        return thin.request(thin.socket_path(str(self.state)), {"op": "status"}, 10.0)["reply"]

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                thin.request(thin.socket_path(str(self.state)), {"op": "stop"}, 10.0)
                self.process.wait(30)
            except (thin.Unreachable, subprocess.TimeoutExpired):
                self.kill()


def by_socket(state: pathlib.Path, payload: dict[str, Any], agent: str = "claude") -> dict[str, Any]:
    """The raw answer of the socket transport (ok, status, reply)."""
    message = {"op": "hook", "agent": agent, "payload": payload, "env": dict(os.environ), "cwd": os.getcwd()}
    return thin.request(thin.socket_path(str(state)), message, 30.0)


def http_post(state: pathlib.Path, payload: dict[str, Any], *, agent: str = "claude",
              headers: dict[str, str] | None = None, method: str = "POST", query: str = "") -> tuple[int, dict[str, Any]]:
    """(status, body) of one HTTP hook call, with the real secret and Host unless `headers` override;
    `query`: the URL's query as an install writes it (`?reuse_answer=reference`)."""
    service = state / "service"
    port = int((service / "port").read_text())
    sent = {"X-Ledger-Secret": (service / "secret").read_text(), "Content-Type": "application/json",
            "Host": f"127.0.0.1:{port}"}
    sent.update(headers or {})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, f"/ledger/v1/hook/{agent}{query}", skip_host=True)
        body = json.dumps(payload).encode()
        for name, value in {**sent, "Content-Length": str(len(body))}.items():
            if value is not None:
                connection.putheader(name, value)
        connection.endheaders(body)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"{}")
    finally:
        connection.close()


def by_http(state: pathlib.Path, payload: dict[str, Any], agent: str = "claude") -> dict[str, Any] | None:
    status, body = http_post(state, payload, agent=agent)
    assert status == 200, body
    return body or None


def by_client(state: pathlib.Path, payload: dict[str, Any], agent: str = "claude",
              env: dict[str, str] | None = None, options: tuple[str, ...] = ()) -> tuple[dict[str, Any] | None, str]:
    """(reply, stderr) of the thin client process, run as `ledger hooks install` writes it."""
    done = subprocess.run([sys.executable, "-S", str(THIN), agent, "--state-dir", str(state), *options],
                          input=json.dumps(payload),
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return (json.loads(done.stdout) if done.stdout else None), done.stderr


def in_process(state: pathlib.Path, payload: dict[str, Any], agent: str = "claude") -> dict[str, Any] | None:
    done = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hook", agent, "--state-dir", str(state)],
                          input=json.dumps(payload), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout else None
