"""The probe and sockets: a probe never makes a host server act, and a read that talked to a
socket is never served (issue 19's audit: a probe's connect reached a host Unix socket through
the read-only bind, and the socket-backed output was judged servable).

The servers are real: Unix sockets under /var/tmp (the probe's /tmp is private, so a socket
there would be out of its reach anyway) or in the abstract namespace, each writing a marker
file when a request reaches it.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from probe_workspace import outside, root  # noqa: F401 (fixtures)

from ledger_impl.execution import command_environment, run_command
from ledger_impl.probe import confine, dependencies, probe, trace, unavailable

MISSING = unavailable()
needs_probe = pytest.mark.skipif(MISSING is not None, reason=f"{MISSING} (.ci/run installs them)")


class MarkingServer:
    """A Unix socket server that writes `marker` for every request it receives."""

    def __init__(self, address: str, kind: int, marker: Path) -> None:
        self.address, self.kind, self.marker = address, kind, marker
        self.listener = socket.socket(socket.AF_UNIX, kind)
        self.listener.bind(address)
        if kind == socket.SOCK_STREAM:
            self.listener.listen(4)
        self.listener.settimeout(0.1)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                if self.kind == socket.SOCK_DGRAM:
                    self.listener.recv(64)
                    self.marker.write_text("reached\n")
                    continue
                connection, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            with connection:
                connection.settimeout(2)
                try:
                    connection.recv(64)
                    self.marker.write_text("reached\n")
                    connection.sendall(b"ok")
                except OSError:
                    pass

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
        self.listener.close()


def _client(address: str, kind: int) -> str:
    """A read that asks the server: prints its answer (stream) or that it sent (datagram)."""
    if kind == socket.SOCK_DGRAM:
        body = f"s=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM); s.sendto(b'go',{address!r}); print('sent')"
    else:
        body = f"s=socket.socket(socket.AF_UNIX); s.connect({address!r}); s.sendall(b'go'); print(s.recv(8).decode())"
    return f'python3 -c "import socket; {body}"'


@pytest.fixture(params=["stream", "datagram", "abstract"])
def server(request: pytest.FixtureRequest, outside: Path) -> Iterator[MarkingServer]:  # noqa: F811
    kind = socket.SOCK_DGRAM if request.param == "datagram" else socket.SOCK_STREAM
    if request.param == "abstract":
        address = f"\0ledger-probe-test-{os.getpid()}-{time.monotonic_ns()}"
    else:
        address = os.fspath(outside / "server.sock")
    running = MarkingServer(address, kind, outside / "marker")
    yield running
    running.stop()


@needs_probe
def test_a_probe_cannot_make_a_host_socket_server_act(root: Path, server: MarkingServer) -> None:  # noqa: F811
    command = _client(server.address, server.kind)
    env = command_environment()
    started = time.time_ns()
    agent_run = run_command(command, root, 30, 1 << 20, env)
    # The agent's own run does reach it. A datagram's sender exits before the server thread has
    # read it, so the marker may come a little after the run: waited for, within a bound.
    deadline = time.monotonic() + 10
    while not server.marker.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.marker.read_text() == "reached\n"
    server.marker.unlink()
    result = probe(root, command, env, agent_run.output, agent_run.exit_code, started_ns=started)
    time.sleep(0.3)  # the server polls every 0.1 s: a request that got through is marked by now
    assert not server.marker.exists(), "the probe reached a server outside its sandbox"
    assert not result.servable and "socket" in str(result.reason), result.reason


def _connect_line(address: str, pid: int = 7) -> str:
    hexed = "".join(f"\\x{byte:02x}" for byte in address.encode())
    return (
        f"{pid} connect(3<\\x73\\x6f\\x63\\x6b>, {{sa_family=AF_UNIX, sun_path=\"{hexed}\"}}, 110)"
        " = -1 ENOENT (No such file or directory) (INJECTED)"
    )


def test_a_connect_to_a_socket_that_exists_is_never_reusable(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = os.fspath(tmp_path / "daemon.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    try:
        traced = trace.parse(_connect_line(path), os.fspath(workspace))
        found = dependencies.collect(traced.accesses, os.fspath(workspace), time.time_ns() + 10**9)
    finally:
        listener.close()
    assert found.never is not None and "socket" in found.never and path in found.never


def test_a_connect_to_an_absent_socket_is_a_failed_lookup_revalidated_at_reuse(tmp_path: Path) -> None:
    """glibc asks nscd's socket before every user or group lookup (`ls -l`): where there is
    none, the read depends on its absence, as on any failed lookup."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    path = os.fspath(tmp_path / "nscd.sock")
    traced = trace.parse(_connect_line(path), os.fspath(workspace))
    found = dependencies.collect(traced.accesses, os.fspath(workspace), time.time_ns() + 10**9)
    assert found.never is None and dependencies.first_changed(found) is None
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    try:
        assert dependencies.first_changed(found) is not None
    finally:
        listener.close()


@pytest.mark.parametrize(
    "line",
    [
        '7 connect(3<\\x73>, {sa_family=AF_UNIX, sun_path=@"\\x61\\x62"}, 5) = -1 ENOENT (No such file or directory) (INJECTED)',
        '7 connect(3<\\x73>, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("\\x31\\x32\\x37\\x2e\\x30\\x2e\\x30\\x2e\\x31")}, 16) = 0',
        '7 sendto(4<\\x73>, "\\x78", 1, 0, {sa_family=AF_UNIX, sun_path="\\x2f\\x6c\\x6f\\x67"}, 8) = -1 ENOENT (No such file or directory) (INJECTED)',
        '7 sendmsg(4<\\x73>, {msg_name=NULL, msg_namelen=0, msg_iov=[]}, 0) = 0',
        '7 recvfrom(4<\\x73>, "\\x78", 1, 0, NULL, NULL) = 1',
        '7 bind(3<\\x73>, {sa_family=AF_UNIX, sun_path="\\x2f\\x6c\\x6f\\x67"}, 8) = 0',
    ],
    ids=["abstract", "inet", "sendto", "sendmsg", "recvfrom", "bind"],
)
def test_any_other_conversation_over_a_socket_is_never_reusable(tmp_path: Path, line: str) -> None:
    traced = trace.parse(line, os.fspath(tmp_path))
    found = dependencies.collect(traced.accesses, os.fspath(tmp_path), time.time_ns() + 10**9)
    assert found.never is not None and "socket" in found.never


def test_making_a_socket_is_not_talking_over_one(tmp_path: Path) -> None:
    line = "7 socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0) = 3<\\x73>"
    traced = trace.parse(line, os.fspath(tmp_path))
    assert dependencies.collect(traced.accesses, os.fspath(tmp_path), time.time_ns()).never is None


def _read_once(fifo: Path, received: list[bytes]) -> threading.Thread:
    """A reader on the host, for one writer (opening a FIFO for writing waits for a reader)."""
    def read() -> None:
        with open(fifo, "rb") as reader:
            received.append(reader.read())
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@needs_probe
def test_a_read_that_writes_into_a_host_fifo_is_never_served(root: Path, outside: Path) -> None:  # noqa: F811
    """A FIFO is no regular file: a read-only bind does not stop opening it for writing. The
    probe's Landlock rules do (`ledger_impl.probe.confine`): the host's reader receives nothing
    from it, and the read, which printed an error there, is never served."""
    fifo = outside / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    command = f"echo request > {fifo}; cat a.txt"
    env = command_environment()
    started = time.time_ns()
    reader = _read_once(fifo, received)
    agent_run = run_command(command, root, 30, 1 << 20, env)
    reader.join(10)
    reader = _read_once(fifo, received)
    result = probe(root, command, env, agent_run.output, agent_run.exit_code, started_ns=started)
    reader.join(0.5)  # the probe has ended: what it wrote, the reader has
    assert agent_run.output == "alpha\n" and received[0] == b"request\n"  # the agent's run reached it
    if not confine.available():
        pytest.skip("no Landlock on this kernel: the dependency rule alone refuses the read")
    if reader.is_alive():  # the probe never opened the FIFO: release the waiting reader
        with open(fifo, "wb"):
            pass
        reader.join(10)
    assert received[1:] in ([], [b""]), "the probe wrote into a FIFO outside its sandbox"
    assert not result.servable
