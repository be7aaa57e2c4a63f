"""The thin client's hook frame (`ledger_client/thin.py` writes it, `ledger_impl.service.frame`
reads it): what the service reads is what the client process had, bytes that are not a frame
are refused, and a refused call falls back at once rather than waiting for a service start."""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from ledger_client import thin
from ledger_impl.service import frame
from service_calls import THIN, Served, workspace


def read(data: bytes, limit: int = 1 << 20) -> frame.HookCall:
    stream = io.BytesIO(data)
    assert stream.readline() == frame.HOOK_FRAME
    return frame.read_hook_call(stream, limit)


def test_the_service_reads_what_the_client_process_had(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_TEST_UNDECODABLE", "caf\udce9")  # b"caf\xe9": not UTF-8
    monkeypatch.setenv("LEDGER_TEST_EQUALS", "a=b=c\nd")
    payload = {"hook_event_name": "PreToolUse", "tool_input": {"command": "cat é"}}
    call = read(thin.hook_frame("codex", json.dumps(payload).encode(), "/the/root"))
    assert call == frame.HookCall("codex", payload, dict(os.environ), "/the/root", os.getcwd(), "verbatim")
    assert read(thin.hook_frame("claude", b"", None, "reference")).reuse_answer == "reference"
    assert read(thin.hook_frame("claude", b"", None)).root is None
    assert read(thin.hook_frame("claude", b"", None)).payload == {}


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda data: data[:-3], "cut short"),
        (lambda data: data.replace(b"\nclaude", b"x\nclaude", 1), "without its length"),
        (lambda data: data[: data.rindex(b"\n") + 1] + b"not json", "not JSON"),
    ],
)
def test_what_is_not_a_frame_is_refused(damage, message: str) -> None:
    with pytest.raises(frame.FrameError, match=message):
        read(damage(thin.hook_frame("claude", b'{"a": 1}', None)))


def test_a_frame_over_the_limit_is_refused() -> None:
    data = thin.hook_frame("claude", b'{"a": "' + b"x" * 1000 + b'"}', None)
    with pytest.raises(frame.FrameError, match="too large"):
        read(data, limit=len(data) - 500)


def test_the_answer_is_printed_as_the_service_serialized_it() -> None:
    reply = {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "é"}}
    assert thin.answered(frame.answer_frame(200, reply)) == json.dumps(reply).encode()
    assert thin.answered(frame.answer_frame(200, None)) == b""
    with pytest.raises(thin.Refused, match="not your workspace"):
        thin.answered(frame.answer_frame(403, {"error": "not your workspace"}))
    with pytest.raises(thin.Refused):
        thin.answered(frame.answer_frame(200, reply)[:-2])  # cut short: not the reply


def test_a_refused_call_falls_back_at_once(tmp_path: pathlib.Path) -> None:
    root = workspace(tmp_path / "ws")
    service = Served(tmp_path / "state")
    try:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-S", str(THIN), "claude", "--state-dir", str(service.state), "--root", str(root)],
            input=b"not json", capture_output=True, timeout=120,
            env={**os.environ, "LEDGER_HOOK_START_WAIT_S": "30"},
        )
        assert done.returncode == 0 and b"not JSON" in done.stderr and b"answered in process" in done.stderr
        assert time.monotonic() - started < 20, "waited for a service start it did not need"
        assert not (service.state / "service" / "service.log").exists(), "started a second service"
    finally:
        service.stop()


def _frame_with_lengths(digits: int, fields: list[bytes]) -> bytes:
    return frame.HOOK_FRAME + b"".join(b"%0*d\n" % (digits, len(field)) + field for field in fields)


def test_a_length_of_up_to_twelve_digits_is_read_and_a_longer_one_refused() -> None:
    """Zero-padded lengths are lengths; the header line is read with a bound, so a client can
    never make the service read an endless line."""
    fields = [b"claude", b"", b"/cwd", b"", b"verbatim", b"{}"]
    assert read(_frame_with_lengths(frame.MAX_LENGTH_DIGITS, fields)).cwd == "/cwd"
    with pytest.raises(frame.FrameError, match="without its length"):
        read(_frame_with_lengths(frame.MAX_LENGTH_DIGITS + 1, fields))


def test_a_frame_exactly_at_the_limit_is_read() -> None:
    fields = [b"claude", b"", b"/cwd", b"", b"verbatim", b'{"a": 1}']
    assert read(_frame_with_lengths(1, fields), limit=sum(map(len, fields))).payload == {"a": 1}


def test_a_refusal_s_body_is_its_reason_not_json() -> None:
    assert frame.answer_frame(403, {"error": "not your workspace"}) == b"403 18\nnot your workspace"
