"""The service process: two transports in front of one `answer` for every hook call.

- HTTP (`ThreadingHTTPServer` on 127.0.0.1, the port fixed in `layout.port()`): `POST
  /ledger/v1/hook/<agent>` with the hook's JSON as body; the answer is the hook's JSON reply
  (`{}` for no opinion). What Claude Code does with anything but a 2xx (it runs the tool) is
  established by the real-CLI test.
- Unix socket: one request per connection. The thin client's hook call is a binary frame
  (`frame`: no JSON on its side, which would cost it as much as its own start); otherwise one
  JSON request, one JSON answer back, `op` being `status`, `stop` or `hook` (agent, payload,
  the agent's environment and cwd: for tests and tools).

A hook call's root is the one `ledger hook` would use: `--root` (sent by the thin client),
else the agent's project-directory variable in its environment (`$CLAUDE_PROJECT_DIR` for
Claude), else the payload's `cwd`. Agents are dispatched by name through the plugin registry
(`ledger_impl.agents.HOOKED`).
HTTP calls carry no environment: the thin client's SessionStart registers the session's
environment and root under its `session_id`, and HTTP calls of that session use them; a
session never registered is served with the payload's `cwd` and the service's environment.

The process holds `layout.lock_file` for its lifetime (one service per state directory) and
exits after `idle_timeout` seconds without a call.
"""

from __future__ import annotations

import fcntl
import json
import os
import socketserver
import sys
import threading
import time
import urllib.parse
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ledger_impl.agents import HOOKED
from ledger_impl.agents.hook_session import REUSE_ANSWERS, with_system_message
from ledger_impl.session import DurableSession
from ledger_spec.errors import Unavailable

from . import frame, gate
from .layout import HOOK_PATH, Layout
from .workspaces import Workspaces

DEFAULT_IDLE_TIMEOUT_S = 30 * 60.0
MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_REGISTERED_SESSIONS = 4096


class AlreadyRunning(Unavailable):
    """Another service holds this state directory's lock."""


class Service:
    """One user's resident Ledger over one state directory."""

    def __init__(self, state_dir: str | os.PathLike[str] | None, *, idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S) -> None:
        self.layout = Layout.of(state_dir)
        self.idle_timeout = idle_timeout
        self.workspaces = Workspaces(str(self.layout.state_dir))
        self.started_at = time.time()
        self.last_call = time.monotonic()
        self.refused = 0
        self.notes: list[str] = []  # visible in status: a transport that could not start
        self._sessions: dict[str, tuple[str, Mapping[str, str]]] = {}  # session_id -> (root, env)
        self._stopping = threading.Event()
        self._lock_handle: Any = None
        self._closed = False
        self._http: ThreadingHTTPServer | None = None
        self._unix: socketserver.ThreadingUnixStreamServer | None = None

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Take the lock and bind both transports; AlreadyRunning if another service serves."""
        self.layout.prepare()
        self._lock_handle = open(self.layout.lock_file, "a+")
        try:
            fcntl.flock(self._lock_handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_handle.close()
            raise AlreadyRunning(f"a service already serves {self.layout.state_dir}") from None
        self._secret = self.layout.secret()
        self._port = self.layout.port()
        socket_path = str(self.layout.socket_path)
        if os.path.exists(socket_path):
            os.unlink(socket_path)  # left by a killed service: we hold the lock, so it is ours
        old_mask = os.umask(0o177)  # the socket is created 0600, never briefly wider
        try:
            self._unix = _UnixServer(socket_path, _unix_handler(self))
        finally:
            os.umask(old_mask)
        try:
            self._http = _HTTPServer(("127.0.0.1", self._port), _http_handler(self))
        except OSError as error:
            self._http = None
            self.notes.append(f"HTTP transport not started: 127.0.0.1:{self._port} {error.strerror}")
        for server in (self._unix, self._http):
            if server is not None:
                threading.Thread(target=server.serve_forever, args=(0.2,), daemon=True).start()
        threading.Thread(target=self._housekeeping, daemon=True).start()

    def wait(self) -> None:
        self._stopping.wait()
        self.close()

    def stop(self) -> None:
        self._stopping.set()

    def close(self) -> None:
        """Release the transports, the workspaces, the socket and the lock; once (a second call
        would close closed workspaces, and unlink the socket of a service started since)."""
        if self._closed:
            return
        self._closed = True
        for server in (self._http, self._unix):
            if server is not None:
                server.shutdown()
                server.server_close()
        self.workspaces.close()
        if os.path.exists(self.layout.socket_path):
            os.unlink(self.layout.socket_path)
        if self._lock_handle is not None:
            self._lock_handle.close()

    def _housekeeping(self) -> None:
        while not self._stopping.wait(1.0):
            if time.monotonic() - self.last_call > self.idle_timeout:
                self.stop()
                return
            for workspace in self.workspaces.all():
                workspace.drain()

    # --- answers ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(), "state_dir": str(self.layout.state_dir), "started_at": self.started_at,
            "idle_timeout_s": self.idle_timeout, "http": f"127.0.0.1:{self._port}" if self._http else None,
            "socket": str(self.layout.socket_path), "refused": self.refused, "notes": self.notes,
            "workspaces": self.workspaces.summary(),
        }

    def answer(self, agent: str, payload: Any, environ: Mapping[str, str] | None,
               root: str | None = None, cwd: str | None = None,
               reuse_answer: Any = "verbatim") -> tuple[int, dict[str, Any] | None]:
        """(HTTP-like status, the hook's reply) for one call; the caller is already authenticated.
        `reuse_answer`: how the installed hook asked for a Reuse to be answered."""
        self.last_call = time.monotonic()
        hooks = HOOKED.get(agent)
        if hooks is None:
            return 404, {"error": f"no agent {agent!r}"}
        if reuse_answer not in REUSE_ANSWERS:
            return 400, {"error": f"reuse_answer is one of {', '.join(REUSE_ANSWERS)}, got {reuse_answer!r}"}
        if not isinstance(payload, dict):
            return 400, {"error": "the hook payload is a JSON object"}
        session_id = payload.get("session_id")
        registered = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if environ is None and registered is not None:
            root = root or registered[0]
            environ = registered[1]
        if root is None:
            variable = hooks.project_dir_variable
            project = (environ or {}).get(variable) if variable is not None else None
            root = project or payload.get("cwd") or cwd
        if not isinstance(root, str) or not root:
            return 400, {"error": "no workspace root: the payload has no cwd"}
        root = os.path.realpath(root)
        refusal = gate.workspace_refusal(root)
        if refusal is not None:
            self.refused += 1
            return refusal.status, {"error": refusal.reason}
        if environ is not None and isinstance(session_id, str) and len(self._sessions) < MAX_REGISTERED_SESSIONS:
            self._sessions[session_id] = (root, dict(environ))
        workspace, handle = self.workspaces.get(root), hooks.handle
        # An answer the plugin cannot give: verbatim, and the user is told before each tool call.
        answer, unavailable = hooks.reuse_answer(reuse_answer)

        def job(session: DurableSession) -> dict[str, Any] | None:
            session.reuse_answer = answer  # this call's setting: installs may differ per agent
            reply = handle(payload, session)
            if unavailable is not None and payload.get("hook_event_name") == hooks.before_tool:
                return with_system_message(reply, unavailable)
            return reply

        try:
            reply = workspace.call(job, environ or os.environ)
        except Exception as error:  # noqa: BLE001 - a hook never blocks the agent
            note = f"ledger serve: internal error, the tool call goes ahead unchanged: {error!r}"
            print(note, file=sys.stderr)
            return 200, {"systemMessage": note}
        degraded = workspace.degraded
        if degraded != workspace.last_degraded:
            workspace.last_degraded = degraded
            if degraded is not None:
                reply = with_system_message(reply, f"ledger: detector degraded: {degraded.text()}")
        return 200, reply


def _http_handler(service: Service) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            headers = {name.lower(): value for name, value in self.headers.items()}
            peer = gate.tcp_peer_uid(self.client_address[:2], self.server.server_address[:2])
            refusal = gate.http_refusal(headers, service._secret, service._port, peer)
            length = int(headers.get("content-length") or 0)
            if refusal is None and not self.path.startswith(HOOK_PATH):
                refusal = gate.Refusal(404, "no such path")
            if refusal is None and not 0 <= length <= MAX_REQUEST_BYTES:
                refusal = gate.Refusal(413, "request too large")
            if refusal is not None:
                service.refused += 1
                self.close_connection = True  # the body was not read: the connection cannot go on
                self._send(refusal.status, {"error": refusal.reason})
                return
            try:
                payload = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": "the body is not JSON"})
                return
            route = urllib.parse.urlsplit(self.path[len(HOOK_PATH):])
            reuse_answer = urllib.parse.parse_qs(route.query).get("reuse_answer", ["verbatim"])[-1]
            status, reply = service.answer(route.path, payload, None, reuse_answer=reuse_answer)
            self._send(status, reply or {})

        def _refuse_method(self) -> None:
            service.refused += 1
            self.close_connection = True
            self._send(405, {"error": "only POST"})

        do_GET = do_PUT = do_DELETE = do_OPTIONS = do_PATCH = _refuse_method  # noqa: N815

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:  # quiet: the agent owns the terminal
            pass

    return Handler


class HangUpsUnreported:
    """A socketserver mixin: a client that hangs up before its answer is written (a hook killed
    by its agent's timeout, a probe of the port) is nothing to report; anything else a handler
    raises is still printed, as socketserver does. Handlers run on daemon threads."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[misc]


class _UnixServer(HangUpsUnreported, socketserver.ThreadingUnixStreamServer):
    pass


class _HTTPServer(HangUpsUnreported, ThreadingHTTPServer):
    pass


def _unix_handler(service: Service) -> type[socketserver.StreamRequestHandler]:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            if gate.unix_peer_uid(self.connection) != os.getuid():
                service.refused += 1
                self._send({"ok": False, "status": 403, "error": "another user's connection is refused"})
                return
            line = self.rfile.readline(MAX_REQUEST_BYTES)
            if line == frame.HOOK_FRAME:
                self._framed_hook()
                return
            try:
                request = json.loads(line)
                op = request.get("op")
            except (ValueError, AttributeError):
                self._send({"ok": False, "status": 400, "error": "one JSON object per line"})
                return
            if op == "status":
                self._send({"ok": True, "status": 200, "reply": service.status()})
            elif op == "stop":
                self._send({"ok": True, "status": 200, "reply": {"stopping": os.getpid()}})
                service.stop()
            elif op == "hook":
                environ = request.get("env")
                status, reply = service.answer(
                    str(request.get("agent")), request.get("payload"),
                    {str(k): str(v) for k, v in environ.items()} if isinstance(environ, dict) else None,
                    request.get("root") if isinstance(request.get("root"), str) else None,
                    request.get("cwd") if isinstance(request.get("cwd"), str) else None,
                    request.get("reuse_answer", "verbatim"),
                )
                self._send({"ok": status == 200, "status": status, "reply": reply})
            else:
                self._send({"ok": False, "status": 400, "error": f"unknown op {op!r}"})

        def _framed_hook(self) -> None:
            try:
                call = frame.read_hook_call(self.rfile, MAX_REQUEST_BYTES)
            except frame.FrameError as error:
                self.wfile.write(frame.answer_frame(400, {"error": str(error)}))
                return
            status, reply = service.answer(call.agent, call.payload, call.environ, call.root, call.cwd,
                                           call.reuse_answer)
            self.wfile.write(frame.answer_frame(status, reply))

        def _send(self, answer: dict[str, Any]) -> None:
            self.wfile.write(json.dumps(answer).encode() + b"\n")

    return Handler
