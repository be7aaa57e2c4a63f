"""Who may talk to the service: the user who runs it, and nobody else, over either transport.

- Unix socket: the kernel names the peer (`SO_PEERCRED`); another uid is refused. The socket
  file is 0600 in a 0700 directory besides.
- HTTP on 127.0.0.1: a browser page can reach a loopback port, and any local user can connect
  to it. A request is refused unless it carries the user's secret (a header, compared in
  constant time), has no `Origin` header (browsers always send one on a cross-site POST), names
  the loopback address as its `Host` (a DNS-rebinding page names its own host), and comes from
  a TCP connection that `/proc/net/tcp` shows to be owned by the service's uid. The uid check
  means a secret leaked to another local user (for instance to a program that bound the port
  while the service was down) still does not let that user in.
- A workspace is served only if the service's user owns its root directory.
Every refusal happens before any session is opened: a refused call changes nothing.
"""

from __future__ import annotations

import hmac
import os
import socket
import struct

import attrs


@attrs.frozen
class Refusal:
    status: int  # the HTTP status it maps to
    reason: str


def unix_peer_uid(connection: socket.socket) -> int:
    """The uid of the process on the other end of a Unix stream socket."""
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return uid


def tcp_peer_uid(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The uid owning the loopback TCP socket `client` connected to `server`, from
    /proc/net/tcp; None if it is not listed (then the caller refuses)."""
    def hex_address(address: tuple[str, int]) -> str:
        packed = socket.inet_aton(address[0])
        return f"{struct.unpack('<I', packed)[0]:08X}:{address[1]:04X}"

    local, remote = hex_address(client), hex_address(server)
    try:
        with open("/proc/net/tcp", encoding="ascii") as table:
            next(table)
            for line in table:
                fields = line.split()
                if fields[1] == local and fields[2] == remote:
                    return int(fields[7])
    except (OSError, StopIteration, IndexError, ValueError):
        return None
    return None


def http_refusal(headers: dict[str, str], secret: str, port: int, peer_uid: int | None) -> Refusal | None:
    """Why an HTTP hook request must be refused (None: it may proceed). Header names lowercased."""
    if "origin" in headers:
        return Refusal(403, "a request with an Origin header (a browser) is refused")
    if headers.get("host") not in (f"127.0.0.1:{port}", f"localhost:{port}"):
        return Refusal(403, "the Host header does not name this service")
    if not hmac.compare_digest(headers.get("x-ledger-secret", "").encode(), secret.encode()):
        return Refusal(401, "missing or wrong secret")
    if peer_uid != os.getuid():
        return Refusal(403, "the connection does not come from this service's user")
    return None


def workspace_refusal(root: str) -> Refusal | None:
    """Why the service must not serve `root` (None: it may). Only the user's own directories."""
    try:
        owner = os.stat(root).st_uid
    except OSError as error:
        return Refusal(400, f"workspace root {root!r} cannot be read ({error.strerror})")
    if owner != os.getuid():
        return Refusal(403, f"workspace root {root!r} belongs to another user")
    return None
