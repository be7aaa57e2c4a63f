"""The thin client's hook frame: one hook call over the Unix socket with no JSON on its side.

The client (`ledger_client/thin.py`) starts at every tool call, and `json` alone costs it
about as much as the interpreter's start. So it sends the hook's stdin as it came and its
environment as raw bytes, in length-prefixed fields after the line `hook/3`:

    hook/3\n
    LENGTH\nAGENT  LENGTH\nROOT (empty: none)  LENGTH\nCWD  LENGTH\nENV  LENGTH\nREUSE_ANSWER  LENGTH\nPAYLOAD

REUSE_ANSWER is how the installed hook asks a Reuse to be answered (`verbatim`, `reference`;
the service refuses any other value).
ENV is the client's `KEY=VALUE` pairs joined by NUL (no name or value holds one). Names and
values are decoded as `os.environ` decodes them (the file system encoding, surrogateescape),
so the service sees the strings the client process saw. The answer is `STATUS LENGTH\n` and
the body: for 200 the reply to print (empty: no opinion), serialized here, else the reason.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any

import attrs

from ledger_spec.errors import InvalidInput

HOOK_FRAME = b"hook/3\n"
FIELDS = 6
MAX_LENGTH_DIGITS = 12


class FrameError(InvalidInput, ValueError):
    """The bytes are not a hook frame."""


@attrs.frozen
class HookCall:
    """One framed hook call: everything `Service.answer` takes."""

    agent: str
    payload: Any
    environ: dict[str, str]
    root: str | None
    cwd: str
    reuse_answer: str


def read_hook_call(stream: IO[bytes], limit: int) -> HookCall:
    """The call after the `hook/3` line, its fields at most `limit` bytes in all; FrameError
    if it is not one (the payload's JSON included)."""
    fields: list[bytes] = []
    budget = limit
    for _ in range(FIELDS):
        header = stream.readline(MAX_LENGTH_DIGITS + 1)
        if not header.endswith(b"\n") or not header[:-1].isdigit():
            raise FrameError("a field without its length")
        length = int(header)
        if length > budget:
            raise FrameError("request too large")
        budget -= length
        field = stream.read(length)
        if len(field) != length:
            raise FrameError("a field cut short")
        fields.append(field)
    agent, root, cwd, environment, reuse_answer, payload = fields
    environ: dict[str, str] = {}
    for pair in environment.split(b"\0") if environment else ():
        name, equals, value = pair.partition(b"=")
        if not equals:
            raise FrameError("an environment entry without '='")
        environ[os.fsdecode(name)] = os.fsdecode(value)
    try:
        parsed = json.loads(payload or b"{}")
    except ValueError:
        raise FrameError("the hook payload is not JSON") from None
    return HookCall(os.fsdecode(agent), parsed, environ, os.fsdecode(root) or None, os.fsdecode(cwd),
                    reuse_answer.decode("utf-8", "replace"))


def answer_frame(status: int, reply: dict[str, Any] | None) -> bytes:
    """The answer to a framed call: the reply as the client prints it, or the reason refused."""
    if status == 200:
        body = json.dumps(reply).encode() if reply else b""
    else:
        body = str((reply or {}).get("error", "refused")).encode("utf-8", "replace")
    return b"%d %d\n" % (status, len(body)) + body
