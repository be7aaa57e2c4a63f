"""The service's `answer` and its two transports, run in this process.

`tests/test_service.py` drives a real `ledger serve` process the ways agents call it; this file
starts the same `Service` in the test process (its transports on their own threads) and calls it
over the same socket and HTTP port, for what those tests cannot see from outside: which root a
call is served in, what is refused and counted, each malformed request's answer, the lock, the
socket's mode and the idle exit. Running in-process also lets the mutation run (`scripts/
mutation.py`) see which test executes each line of `server.py`.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from ledger_client import thin
from ledger_impl.service import server
from ledger_impl.service.server import AlreadyRunning, Service
from service_calls import by_socket, http_post, post, pre, settled, workspace


@pytest.fixture
def service(tmp_path: pathlib.Path) -> Iterator[Service]:
    running = Service(tmp_path / "state")
    running.start()
    yield running
    running.stop()
    running.close()


@pytest.fixture
def ws(tmp_path: pathlib.Path) -> pathlib.Path:
    return workspace(tmp_path / "ws")


def _socket(service: Service, message: dict[str, Any] | bytes) -> Any:
    """The socket transport's answer to one request line (a dict is sent as JSON)."""
    data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
    return json.loads(thin.exchange(str(service.layout.socket_path), data, 30.0))


def _hook(service: Service, payload: Any, **fields: Any) -> dict[str, Any]:
    return _socket(service, {"op": "hook", "agent": "claude", "payload": payload, **fields})


def _roots(service: Service) -> list[str]:
    return sorted(entry["root"] for entry in service.status()["workspaces"])


def test_status_names_the_process_its_transports_and_its_workspaces(service: Service, ws: pathlib.Path) -> None:
    assert _hook(service, pre("t1", "cat a.txt", ws), env=dict(os.environ))["status"] == 200
    status = _socket(service, {"op": "status"})
    assert status["ok"] is True and status["status"] == 200
    reply = status["reply"]
    assert reply["pid"] == os.getpid() and reply["state_dir"] == str(service.layout.state_dir)
    assert reply["idle_timeout_s"] == 1800.0  # the default docs/agents/service.md gives
    assert reply["http"] == f"127.0.0.1:{service.layout.port()}" and reply["socket"] == str(service.layout.socket_path)
    assert reply["refused"] == 0 and reply["notes"] == []
    assert [entry["root"] for entry in reply["workspaces"]] == [str(ws)]


@pytest.mark.parametrize("agent, fields, status, error", [
    ("nobody", {}, 404, "no agent 'nobody'"),
    ("claude", {"reuse_answer": "sideways"}, 400, "reuse_answer is one of"),
])
def test_a_call_to_no_agent_or_with_an_unknown_reuse_answer_is_refused(
        service: Service, ws: pathlib.Path, agent: str, fields: dict[str, str], status: int, error: str) -> None:
    answer = _socket(service, {"op": "hook", "agent": agent, "payload": pre("t1", "ls", ws), "env": {}, **fields})
    assert (answer["ok"], answer["status"]) == (False, status)
    assert error in answer["reply"]["error"]
    assert _roots(service) == []  # refused before any workspace was opened


@pytest.mark.parametrize("cwd", ["", 5])
def test_a_root_that_is_empty_or_not_text_is_no_root(service: Service, cwd: object) -> None:
    """Not the service's own working directory (what an empty path resolves to), not an error."""
    answer = _hook(service, {"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": cwd}, env={})
    assert answer["status"] == 400 and "no workspace root" in answer["reply"]["error"]
    assert _roots(service) == []


def test_a_payload_that_is_not_an_object_or_has_no_root_is_refused(service: Service) -> None:
    answer = _hook(service, ["PreToolUse"])
    assert (answer["status"], answer["reply"]) == (400, {"error": "the hook payload is a JSON object"})
    answer = _hook(service, {"hook_event_name": "PreToolUse", "session_id": "s1"}, env={})
    assert answer["status"] == 400 and "no workspace root" in answer["reply"]["error"]


def test_a_root_that_cannot_be_read_or_is_another_user_s_is_refused_and_counted(
        service: Service, tmp_path: pathlib.Path) -> None:
    answer = _hook(service, pre("t1", "ls", tmp_path / "absent"), env={})
    assert answer["status"] == 400 and "cannot be read" in answer["reply"]["error"]
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    try:
        os.chown(theirs, os.getuid() + 1, -1)
    except PermissionError:
        pytest.skip("chown needs root; the other refusal is checked above")
    answer = _hook(service, pre("t2", "ls", theirs), env={})
    assert answer["status"] == 403 and "belongs to another user" in answer["reply"]["error"]
    assert service.status()["refused"] == 2 and _roots(service) == []


def test_the_root_is_the_agent_s_project_directory_then_the_payload_s_cwd(service: Service, ws: pathlib.Path) -> None:
    (ws / "sub").mkdir()
    _hook(service, pre("t1", "ls", ws / "sub", session="a"), env={"CLAUDE_PROJECT_DIR": str(ws)})
    assert _roots(service) == [str(ws)]
    _hook(service, pre("t2", "ls", ws / "sub", session="b"), env={})
    assert _roots(service) == [str(ws), str(ws / "sub")]


def test_a_socket_request_s_cwd_is_the_root_when_the_payload_names_none(service: Service, ws: pathlib.Path) -> None:
    payload = {k: v for k, v in pre("t1", "ls", ws).items() if k != "cwd"}
    assert _hook(service, payload, env={}, cwd=str(ws))["status"] == 200
    assert _roots(service) == [str(ws)]


def test_an_explicit_root_wins_and_a_linked_root_is_served_where_it_leads(
        service: Service, ws: pathlib.Path, tmp_path: pathlib.Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(ws)
    (ws / "sub").mkdir()
    _hook(service, pre("t1", "ls", ws / "sub"), env={"CLAUDE_PROJECT_DIR": str(ws / "sub")}, root=str(link))
    assert _roots(service) == [str(ws)]


def test_an_http_call_is_served_with_its_session_s_registered_root(service: Service, ws: pathlib.Path,
                                                                   tmp_path: pathlib.Path) -> None:
    """HTTP carries no environment: a session the socket registered (root and environment)
    is served in that root, whatever cwd the HTTP payload names; another session in its cwd."""
    elsewhere = workspace(tmp_path / "elsewhere")
    _hook(service, pre("t1", "ls", ws, session="known"), env={"CLAUDE_PROJECT_DIR": str(ws)})
    status, _ = http_post(service.layout.state_dir, pre("t2", "ls", elsewhere, session="known"))
    assert status == 200 and _roots(service) == [str(ws)]
    status, _ = http_post(service.layout.state_dir, pre("t3", "ls", elsewhere, session="unknown"))
    assert status == 200 and _roots(service) == sorted([str(ws), str(elsewhere)])


def test_sessions_past_the_registration_limit_are_served_but_not_registered(
        service: Service, ws: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "MAX_REGISTERED_SESSIONS", 1)
    elsewhere, third = workspace(tmp_path / "elsewhere"), workspace(tmp_path / "third")
    for session in ("first", "second"):
        assert _hook(service, pre(f"{session}-1", "ls", ws, session=session), env={})["status"] == 200
    http_post(service.layout.state_dir, pre("first-2", "ls", third, session="first"))
    assert _roots(service) == [str(ws)]  # registered: served in its root
    http_post(service.layout.state_dir, pre("second-2", "ls", elsewhere, session="second"))
    assert _roots(service) == sorted([str(ws), str(elsewhere)])  # past the limit: in its cwd


def test_a_repeat_is_reused_in_process_as_over_a_real_service(service: Service, ws: pathlib.Path) -> None:
    environ = dict(os.environ)
    assert _hook(service, pre("t1", "cat a.txt", ws), env=environ)["reply"] is None
    _hook(service, post("t1", "cat a.txt", "one", ws), env=environ)
    settled(service.layout.state_dir, ws)
    reply = _hook(service, pre("t2", "cat a.txt", ws), env=environ)["reply"]
    assert reply["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert reply["hookSpecificOutput"]["permissionDecisionReason"].endswith("\none")


def test_a_reuse_answer_the_agent_cannot_give_is_said_before_each_tool_call(service: Service, ws: pathlib.Path) -> None:
    before = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1",
              "cwd": str(ws), "session_id": "s1", "turn_id": "u1", "transcript_path": None, "model": "m",
              "permission_mode": "default"}
    answer = _socket(service, {"op": "hook", "agent": "codex", "payload": before, "env": {}, "reuse_answer": "reference"})
    assert answer["status"] == 200 and "--reuse-answer reference is not available" in answer["reply"]["systemMessage"]
    after = {**before, "hook_event_name": "PostToolUse", "tool_response": "x\n"}
    answer = _socket(service, {"op": "hook", "agent": "codex", "payload": after, "env": {}, "reuse_answer": "reference"})
    assert "not available" not in json.dumps(answer["reply"])
    answer = _socket(service, {"op": "hook", "agent": "claude", "payload": pre("t2", "ls", ws), "env": {},
                               "reuse_answer": "reference"})
    assert "not available" not in json.dumps(answer["reply"])


def test_the_note_on_an_unavailable_reuse_answer_comes_before_tool_calls_only(service: Service, ws: pathlib.Path) -> None:
    """Not on the session's other events (SessionStart, UserPromptSubmit, Stop), which sort
    after PreToolUse and would each repeat it."""
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        payload = {"hook_event_name": event, "cwd": str(ws), "session_id": "s1", "turn_id": "u1",
                   "transcript_path": None, "model": "m", "permission_mode": "default", "source": "startup", "prompt": "go"}
        answer = _socket(service, {"op": "hook", "agent": "codex", "payload": payload, "env": {},
                                   "reuse_answer": "reference"})
        assert answer["status"] == 200 and "not available" not in json.dumps(answer["reply"]), event


def test_an_http_body_of_the_documented_limit_is_read(service: Service, ws: pathlib.Path) -> None:
    """docs/agents/service.md: bodies up to 16 MiB (one byte more is refused, above)."""
    payload = pre("t1", "ls", ws)
    payload["padding"] = ""
    payload["padding"] = "x" * (16 * 1024 * 1024 - len(json.dumps(payload).encode()))
    body = json.dumps(payload).encode()
    assert len(body) == 16 * 1024 * 1024
    got, reply = _raw_http(service, "POST", "/ledger/v1/hook/claude", body, {})
    assert got == 200 and "error" not in reply and _roots(service) == [str(ws)]


def test_each_call_is_decided_in_the_agent_s_environment(service: Service, ws: pathlib.Path) -> None:
    """ledger_impl/service/server.py line 185: the environment a call carries, not the
    service's; decided in the service's own, an `ls -l` read with one TZ was served to a call
    made with another, whose times it prints differently."""
    utc, tokyo = {**os.environ, "TZ": "UTC"}, {**os.environ, "TZ": "Asia/Tokyo"}
    listing = "ls -l --time-style=+%H a.txt"
    shown = subprocess.run(listing, shell=True, cwd=ws, env=utc, capture_output=True, text=True, check=True).stdout
    assert _hook(service, pre("t1", listing, ws), env=utc)["reply"] is None
    _hook(service, post("t1", listing, shown.rstrip("\n"), ws), env=utc)
    settled(service.layout.state_dir, ws)
    served = _hook(service, pre("t2", listing, ws), env=utc)["reply"]
    assert served["hookSpecificOutput"]["permissionDecision"] == "deny"  # the same environment: served
    assert "permissionDecision" not in json.dumps(_hook(service, pre("t3", listing, ws), env=tokyo)["reply"])


def test_an_internal_error_lets_the_tool_call_go_ahead_and_says_so(
        service: Service, ws: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def call(self, job: Any, environ: Any) -> Any:
            raise RuntimeError("the store is gone")

    monkeypatch.setattr(service.workspaces, "get", lambda root: Broken())
    answer = _hook(service, pre("t1", "ls", ws), env={})
    assert (answer["ok"], answer["status"]) == (True, 200)
    assert answer["reply"]["systemMessage"].startswith("ledger serve: internal error, the tool call goes ahead unchanged")
    assert "the store is gone" in answer["reply"]["systemMessage"]


@pytest.mark.parametrize("line, error", [
    (b"not json\n", "one JSON object per line"),
    (b"[1, 2]\n", "one JSON object per line"),
    (b'{"op": "dance"}\n', "unknown op 'dance'"),
    (b'{"op": "zap"}\n', "unknown op 'zap'"),  # sorting after "hook", as "status" and "stop" do
])
def test_a_socket_request_that_is_not_one_known_op_is_refused(service: Service, line: bytes, error: str) -> None:
    assert _socket(service, line) == {"ok": False, "status": 400, "error": error}


def test_a_framed_call_is_answered_and_a_broken_frame_refused(service: Service, ws: pathlib.Path) -> None:
    path = str(service.layout.socket_path)
    data = thin.hook_frame("claude", json.dumps(pre("t1", "cat a.txt", ws)).encode(), str(ws))
    assert thin.answered(thin.exchange(path, data, 30.0)) == b""  # a first read: no opinion
    assert _roots(service) == [str(ws)]
    broken = thin.exchange(path, thin.HOOK_FRAME + b"x\n", 30.0)
    assert broken == b"400 26\na field without its length"
    with pytest.raises(thin.Refused):
        thin.answered(broken)


def test_stop_answers_then_stops(service: Service) -> None:
    assert _socket(service, {"op": "stop"}) == {"ok": True, "status": 200, "reply": {"stopping": os.getpid()}}
    stopped = threading.Thread(target=service.wait)
    stopped.start()
    stopped.join(30)
    assert not stopped.is_alive() and not service.layout.socket_path.exists()


@pytest.mark.parametrize("headers, path, status, error", [
    ({"X-Ledger-Secret": "wrong"}, "/ledger/v1/hook/claude", 401, "missing or wrong secret"),
    ({}, "/ledger/v1/other/claude", 404, "no such path"),
    ({"Content-Length": str(16 * 1024 * 1024 + 1)}, "/ledger/v1/hook/claude", 413, "request too large"),
])
def test_an_http_call_refused_is_counted_and_closes_its_connection(
        service: Service, ws: pathlib.Path, headers: dict[str, str], path: str, status: int, error: str) -> None:
    got, body = _raw_http(service, "POST", path, json.dumps(pre("t1", "ls", ws)).encode(), headers)
    assert (got, body) == (status, {"error": error})
    assert service.status()["refused"] == 1 and _roots(service) == []


def test_an_http_body_that_is_not_json_is_400_and_not_a_refusal(service: Service) -> None:
    got, body = _raw_http(service, "POST", "/ledger/v1/hook/claude", b"{not json", {})
    assert (got, body) == (400, {"error": "the body is not JSON"}) and service.status()["refused"] == 0


@pytest.mark.parametrize("length, status, error", [
    ("0", 400, "no workspace root: the payload has no cwd"),  # an empty body is the empty object
    ("-1", 413, "request too large"),  # a negative length would read to the end of the stream
    (None, 400, "no workspace root: the payload has no cwd"),  # no Content-Length: no body
])
def test_an_http_body_length_outside_what_can_be_read_is_refused_and_none_is_an_empty_object(
        service: Service, length: str | None, status: int, error: str) -> None:
    got, body = _raw_http(service, "POST", "/ledger/v1/hook/claude", b"", {"Content-Length": length}, timeout=5)
    assert (got, body) == (status, {"error": error})
    assert service.status()["refused"] == (status == 413)


def _closes_while(service: Service) -> None:
    """Stop and close `service` on a thread, and fail if that is still waiting after 15 s."""
    closed = threading.Thread(target=lambda: (service.stop(), service.close()))
    closed.start()
    closed.join(15)
    assert not closed.is_alive(), "close() waited for a client"


def test_a_client_keeping_its_connection_open_does_not_hold_the_service_up(service: Service, ws: pathlib.Path) -> None:
    """HTTP/1.1 keeps a connection open for the next request; a stop must not wait for the
    client to close it (Claude Code keeps its hook connections alive)."""
    port = service.layout.port()
    body = json.dumps(pre("t1", "ls", ws)).encode()
    request = (f"POST /ledger/v1/hook/claude HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
               f"X-Ledger-Secret: {service.layout.secret()}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", port), timeout=30) as idle:
        idle.sendall(request)
        assert idle.recv(65536).startswith(b"HTTP/1.1 200 ")  # answered; the connection stays open
        _closes_while(service)


def test_a_socket_client_that_sends_nothing_does_not_hold_the_service_up(service: Service) -> None:
    with socket.socket(socket.AF_UNIX) as silent:
        silent.connect(str(service.layout.socket_path))
        _closes_while(service)


def test_a_service_closed_twice_leaves_a_later_service_s_socket_alone(service: Service, tmp_path: pathlib.Path) -> None:
    service.stop()
    service.close()
    later = Service(service.layout.state_dir)
    later.start()
    try:
        service.close()
        assert later.layout.socket_path.exists() and _socket(later, {"op": "status"})["ok"] is True
    finally:
        later.stop()
        later.close()


@pytest.mark.parametrize("method, headers", [("POST", {"X-Ledger-Secret": "wrong"}), ("GET", {})])
def test_a_refused_http_request_ends_its_connection(service: Service, method: str, headers: dict[str, str]) -> None:
    """Its body was not read: kept open, the connection would read that body as the next
    request (and answer it)."""
    port = service.layout.port()
    body = b'{"hook_event_name": "PreToolUse"}'
    sent = {"Host": f"127.0.0.1:{port}", "X-Ledger-Secret": service.layout.secret(), "Content-Length": str(len(body)),
            **headers}
    request = f"{method} /ledger/v1/hook/claude HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request.encode() + body)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    assert received.count(b"HTTP/1.1 ") == 1 and received.split(b" ", 2)[1] in (b"401", b"405")


def _cpu_seconds(threads: list[threading.Thread]) -> float:
    """User and system CPU time the kernel counted for `threads` (utime and stime of each)."""
    ticks = 0
    for thread in threads:
        fields = pathlib.Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def test_an_idle_service_does_not_spin(tmp_path: pathlib.Path) -> None:
    """The transports wait for requests in `select` with a timeout; a zero or negative one
    would turn each into a loop that burns a core while nothing happens. Counted for the
    service's own threads, so no other thread of the test process weighs in."""
    before = {thread.ident for thread in threading.enumerate()}
    service = Service(tmp_path / "state")
    service.start()
    try:
        own = [thread for thread in threading.enumerate() if thread.ident not in before]
        assert own, "the service started no thread"
        spent = _cpu_seconds(own)
        time.sleep(1.0)
        assert _cpu_seconds(own) - spent < 0.5
    finally:
        service.stop()
        service.close()


def test_an_http_method_other_than_post_is_refused(service: Service) -> None:
    got, body = _raw_http(service, "GET", "/ledger/v1/hook/claude", b"", {})
    assert (got, body) == (405, {"error": "only POST"}) and service.status()["refused"] == 1


def test_an_http_call_s_reuse_answer_comes_from_its_query(service: Service, ws: pathlib.Path) -> None:
    status, body = http_post(service.layout.state_dir, pre("t1", "ls", ws), query="?reuse_answer=sideways")
    assert status == 400 and "reuse_answer is one of" in body["error"]
    status, body = http_post(service.layout.state_dir, pre("t2", "ls", ws), query="?reuse_answer=verbatim&reuse_answer=reference")
    assert status == 200  # the last value counts, as the install writes one
    status, body = http_post(service.layout.state_dir, pre("t3", "ls", ws), query="?reuse_answer=reference&reuse_answer=sideways")
    assert status == 400 and "reuse_answer is one of" in body["error"]


def _raw_http(service: Service, method: str, path: str, body: bytes, headers: dict[str, str | None],
              timeout: float = 30) -> tuple[int, dict[str, Any]]:
    """One request with the real secret and Host unless `headers` override them (None: not
    sent); a Content-Length header here is sent as is, with the body unchanged."""
    port = service.layout.port()
    sent = {"Host": f"127.0.0.1:{port}", "X-Ledger-Secret": service.layout.secret(), "Content-Type": "application/json",
            "Content-Length": str(len(body)), **headers}
    request = (f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items() if v is not None)
               + "\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as connection:
        connection.sendall(request.encode() + body)
        answer = connection.makefile("rb")
        status = int(answer.readline().split()[1])
        length = 0
        while (line := answer.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return status, json.loads(answer.read(length) or b"{}")


@pytest.mark.parametrize("offset", [1, -1])
def test_a_connection_from_another_user_is_refused_whichever_uid_it_has(
        service: Service, monkeypatch: pytest.MonkeyPatch, offset: int) -> None:
    """The socket is 0600, which root passes: the service also compares the peer's uid with its
    own, so a user's service answers no other user, root (uid 0, below every user's) included.
    The peer's uid is what the kernel reports for the connection (SO_PEERCRED), stood in for
    here: a test cannot connect as another user without running as two."""
    monkeypatch.setattr(server.gate, "unix_peer_uid", lambda connection: os.getuid() + offset)
    try:
        answer = _socket(service, {"op": "status"})
    except thin.Unreachable:  # answered before the request was read: the close may reset it
        answer = None
    assert answer in (None, {"ok": False, "status": 403, "error": "another user's connection is refused"})
    monkeypatch.undo()
    assert service.status()["refused"] == 1


def test_a_second_service_on_the_same_state_directory_is_refused(service: Service) -> None:
    with pytest.raises(AlreadyRunning, match="already serves"):
        Service(service.layout.state_dir).start()
    assert _socket(service, {"op": "status"})["ok"] is True  # the first still serves


def test_the_socket_is_the_user_s_alone_and_a_killed_service_s_is_replaced(tmp_path: pathlib.Path) -> None:
    first = Service(tmp_path / "state")
    first.layout.prepare()
    first.layout.socket_path.write_text("left by a killed service")
    first.start()
    try:
        mode = os.stat(first.layout.socket_path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        assert _socket(first, {"op": "status"})["ok"] is True
    finally:
        first.stop()
        first.close()
    assert not first.layout.socket_path.exists()
    second = Service(tmp_path / "state")  # the lock, the socket and the HTTP port were released with the first
    second.start()
    try:
        assert second.status()["http"] is not None and second.status()["notes"] == []
    finally:
        second.stop()
        second.close()


def test_a_busy_http_port_leaves_the_socket_serving_and_is_noted(tmp_path: pathlib.Path) -> None:
    service = Service(tmp_path / "state")
    service.layout.prepare()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", service.layout.port()))
        taken.listen()
        service.start()
        try:
            status = _socket(service, {"op": "status"})["reply"]
            assert status["http"] is None
            assert status["notes"] and status["notes"][0].startswith(f"HTTP transport not started: 127.0.0.1:{service.layout.port()}")
        finally:
            service.stop()
            service.close()


def test_an_idle_service_stops_itself_and_a_call_keeps_it_up(tmp_path: pathlib.Path, ws: pathlib.Path) -> None:
    service = Service(tmp_path / "state", idle_timeout=2.5)
    service.start()
    stopped = threading.Thread(target=service.wait)
    stopped.start()
    try:
        for call in range(4):  # over 3.2 s, never idle for 2.5 s (`true`: no read to probe, a quick answer)
            time.sleep(0.8)
            assert _hook(service, pre(f"t{call}", "true", ws), env={})["status"] == 200
        assert stopped.is_alive()
        stopped.join(10)  # idle now: the housekeeping looks once a second
        assert not stopped.is_alive()
    finally:
        service.stop()
        stopped.join(10)


@pytest.mark.parametrize("transport", ["_unix", "_http"])
def test_a_client_that_hung_up_is_not_reported_and_any_other_error_is(
    service: Service, transport: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hook killed by its agent's timeout leaves its answer to a closed socket: socketserver
    would print that BrokenPipeError's traceback into the service's log on every such call."""
    listening = getattr(service, transport)
    for error in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset"), ValueError("a bug")):
        try:
            raise error
        except Exception:
            listening.handle_error(None, ("peer", 0))
    printed = capsys.readouterr().err
    assert "ValueError: a bug" in printed
    assert "BrokenPipeError" not in printed and "ConnectionResetError" not in printed
