"""Who may talk to `ledger serve`: a forged or unauthenticated call is refused and changes nothing.

HTTP calls without the secret, with a wrong one, with a browser's `Origin`, with a foreign
`Host`, or not a POST, are refused before any state is read: the session database is the same
byte for byte, and a PostToolUse forged that way cannot plant the output a later Reuse serves.
As a second uid (root only: `setpriv` to an unused uid): the secret and the socket cannot be
opened, the HTTP port refuses the right secret from the wrong user, the socket refuses the
wrong user even when its file is opened up on purpose, and a workspace of another user is not
served.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

from ledger_impl.store import list_sessions
from service_calls import READ, Served, by_http, by_socket, http_post, post, pre, settled, workspace


@pytest.fixture
def ws(tmp_path: pathlib.Path) -> pathlib.Path:
    return workspace(tmp_path / "ws")


def database_digest(state: pathlib.Path) -> list[tuple[str, int, int, str]]:
    """(root, steps, pending, digest of the database and its WAL) of every session under `state`."""
    result = []
    for summary in list_sessions(state):
        digest = hashlib.sha256()
        for part in (summary.path, pathlib.Path(str(summary.path) + "-wal")):
            if part.exists():
                digest.update(part.read_bytes())
        result.append((str(summary.root), summary.steps, summary.pending, digest.hexdigest()))
    return result


FORGERIES = {
    "no secret": {"X-Ledger-Secret": None},
    "wrong secret": {"X-Ledger-Secret": "0" * 64},
    "browser origin": {"Origin": "http://evil.example"},
    "foreign host": {"Host": "evil.example:80"},
}


def test_forged_calls_are_refused_and_change_nothing(tmp_path: pathlib.Path, ws: pathlib.Path) -> None:
    state = tmp_path / "state"
    service = Served(state)
    try:
        assert by_http(state, pre("t1", READ, ws)) is None  # decided: a record is pending
        before = database_digest(state)
        assert before and before[0][2] == 1
        for name, headers in FORGERIES.items():
            for payload in (post("t1", READ, "FORGED", ws), pre("t9", READ, ws)):
                status, body = http_post(state, payload, headers=headers)
                assert status in (401, 403) and "error" in body, name
        assert http_post(state, pre("t9", READ, ws), method="GET")[0] == 405
        assert database_digest(state) == before
        assert service.status()["refused"] == 2 * len(FORGERIES) + 1
        by_http(state, post("t1", READ, "one", ws))  # the real record
        settled(state, ws)
        served = by_http(state, pre("t2", READ, ws))
        assert served["hookSpecificOutput"]["permissionDecisionReason"].endswith("\none")
    finally:
        service.stop()


AS_OTHER = r"""
import http.client, json, socket, sys
state, secret, port, root, payload = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
result = {}
try:
    open(state + "/service/secret").read()
    result["secret"] = "read"
except PermissionError:
    result["secret"] = "denied"
try:
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(state + "/service/socket")
    try:
        s.sendall(json.dumps({"op": "status"}).encode() + b"\n")
    except BrokenPipeError:
        pass  # the service may refuse and close before reading; its answer is still there
    result["socket"] = json.loads(s.makefile().readline())
except PermissionError:
    result["socket"] = "denied"
try:  # the thin client's framed hook call (ledger_impl.service.frame): the same socket, another route
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(state + "/service/socket")
    fields = [b"claude", root.encode(), root.encode(), b"", b"verbatim", payload.encode()]
    try:
        s.sendall(b"hook/3\n" + b"".join(b"%d\n" % len(field) + field for field in fields))
    except BrokenPipeError:
        pass
    result["framed"] = s.makefile("rb").readline().decode("utf-8", "replace")
except PermissionError:
    result["framed"] = "denied"
c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
c.request("POST", "/ledger/v1/hook/claude", body=json.dumps({"hook_event_name": "PreToolUse"}),
          headers={"X-Ledger-Secret": secret, "Content-Type": "application/json"})
result["http"] = c.getresponse().status
print(json.dumps(result))
"""


@pytest.mark.skipif(os.getuid() != 0, reason="a second uid needs root (setpriv to an unused uid)")
def test_another_user_gets_nothing(ws: pathlib.Path) -> None:
    other = 64000 + os.getpid() % 1000
    # Under /tmp and traversable, so that only the service's own modes keep the other user out.
    base = pathlib.Path(tempfile.mkdtemp(prefix="ledger-uid-", dir="/tmp"))
    os.chmod(base, 0o755)
    state = base / "state"
    service = Served(state)
    try:
        secret = (state / "service" / "secret").read_text()
        port = (state / "service" / "port").read_text()

        def as_other() -> dict:
            done = subprocess.run(["setpriv", f"--reuid={other}", f"--regid={other}", "--clear-groups",
                                   "/usr/bin/python3", "-S", "-c", AS_OTHER, str(state), secret, port,
                                   str(ws), json.dumps(pre("o1", READ, ws))],
                                  capture_output=True, text=True, timeout=60, cwd="/")
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout)

        assert as_other() == {"secret": "denied", "socket": "denied", "framed": "denied", "http": 403}
        # Opened up on purpose: the file modes no longer stop the other user, the service still does.
        os.chmod(state / "service", 0o755)
        os.chmod(state / "service" / "socket", 0o666)
        seen = as_other()
        assert seen["secret"] == "denied" and seen["http"] == 403
        assert seen["socket"]["ok"] is False and seen["socket"]["status"] == 403
        assert seen["framed"].startswith("{") and json.loads(seen["framed"])["status"] == 403, seen["framed"]
        assert service.status()["refused"] == 4
        assert list_sessions(state) == [], "a refused call opened a session"

        # A workspace that belongs to someone else is not served, and no session is opened for it.
        foreign = base / "theirs"
        foreign.mkdir()
        os.chown(foreign, other, other)
        answer = by_socket(state, pre("t1", "ls", foreign))
        assert answer["ok"] is False and answer["status"] == 403
        assert [summary.root for summary in list_sessions(state)] == []
    finally:
        service.stop()
        shutil.rmtree(base, ignore_errors=True)
