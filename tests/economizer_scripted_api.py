"""A scripted model API on 127.0.0.1 in both wire formats, for the economizer's model calls.

One server answers `POST /v1/messages` (Anthropic Messages) and `POST /v1/chat/completions`
(OpenAI chat completions), streaming (server-sent events) or not, as the request asks. Each
request takes the next scripted `Action`: an answer (text, stop reason, token counts), an
HTTP error (status, headers), a hang longer than the client's timeout before the headers, an
answer cut off mid-body, an answer that stalls mid-body after its headers, an error event in
the middle of a stream, or a 200 whose body breaks the wire format. Every request body is
kept, so a test can see what the client really sent. It listens on 127.0.0.1 only, and every
wait ends when the server closes, so no handler thread outlives a test by more than its sleep.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import attrs

from ledger_impl.service.server import HangUpsUnreported


@attrs.frozen
class Answer:
    text: str
    truncated: bool = False
    """Stopped at the token limit (Anthropic max_tokens, OpenAI length)."""
    usage: tuple[int, int, int, int] = (100, 20, 5, 30)
    """(uncached input, cache read, cache write, output). OpenAI has no cache-write count."""


@attrs.frozen
class Status:
    code: int
    headers: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class Hang:
    seconds: float


@attrs.frozen
class Cut:
    """Headers and the start of the body, then the connection closes."""

    text: str


@attrs.frozen
class Stall:
    """Headers and the first half of the body (or of the stream's events), then silence for
    `seconds` (longer than the client's timeout), then the connection closes."""

    text: str
    seconds: float


@attrs.frozen
class ErrorEvent:
    """Streaming: the first half of the events, then the provider's error event of `kind`
    (Anthropic `event: error`, OpenAI a `data:` line with an `error` object). Not streaming:
    the HTTP status that error comes with."""

    text: str
    kind: str = "overloaded_error"


ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                         404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}
OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error", 429: "requests"}
"""The error object's type each provider sends with a status (5xx: api_error, server_error)."""
ERROR_STATUS = {"overloaded_error": 529, "api_error": 500, "invalid_request_error": 400, "server_error": 503}


@attrs.frozen
class Malformed:
    """A 200 whose JSON breaks the wire format: at `path` in the message (streaming: at
    `stream_path` in the first event or chunk where that path exists) the value is set to
    null, or deleted with `delete`. `path=None`: the body (or the first event's data) is not JSON."""

    text: str
    path: tuple[str | int, ...] | None
    stream_path: tuple[str | int, ...] = ()
    delete: bool = False


Action = Answer | Status | Hang | Cut | Stall | ErrorEvent | Malformed


def _break(value: Any, path: tuple[str | int, ...], delete: bool) -> bool:
    """Set `value` at `path` to null (or delete it); False when the path is not there."""
    *parents, last = path
    for key in parents:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            return False
    if not isinstance(value, (dict, list)) or (isinstance(value, dict) and last not in value) or (isinstance(value, list) and not isinstance(last, int)):
        return False
    if delete:
        del value[last]
    else:
        value[last] = None
    return True


NOT_JSON = "<html><body>502 Bad Gateway</body></html>"


def _anthropic_message(model: str, answer: Answer, with_text: bool = True) -> dict[str, Any]:
    uncached, read, write, out = answer.usage
    return {
        "id": "msg_scripted", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": answer.text}] if with_text else [],
        "stop_reason": ("max_tokens" if answer.truncated else "end_turn") if with_text else None, "stop_sequence": None,
        "usage": {"input_tokens": uncached, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
                  "output_tokens": out if with_text else 0},
    }


def _anthropic_events(model: str, answer: Answer) -> list[tuple[str, dict[str, Any]]]:
    half = len(answer.text) // 2
    return [
        ("message_start", {"type": "message_start", "message": _anthropic_message(model, answer, with_text=False)}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": answer.text[:half]}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": answer.text[half:]}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "max_tokens" if answer.truncated else "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": answer.usage[3]}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def _openai_usage(answer: Answer) -> dict[str, Any]:
    uncached, read, _, out = answer.usage
    return {"prompt_tokens": uncached + read, "completion_tokens": out, "total_tokens": uncached + read + out,
            "prompt_tokens_details": {"cached_tokens": read}}


def _openai_completion(model: str, answer: Answer) -> dict[str, Any]:
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.text},
                         "finish_reason": "length" if answer.truncated else "stop"}],
            "usage": _openai_usage(answer)}


def _openai_chunks(model: str, answer: Answer) -> list[dict[str, Any]]:
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": model}
    half = len(answer.text) // 2
    return [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": answer.text[:half]}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {"content": answer.text[half:]}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length" if answer.truncated else "stop"}]},
        {**base, "choices": [], "usage": _openai_usage(answer)},
    ]


class _Server(HangUpsUnreported, ThreadingHTTPServer):
    """A client that timed out hangs up before a Hang or Stall answers: the scenario, not a fault."""


class ScriptedApi:
    def __init__(self, script: list[Action] | None = None, responder: Callable[[dict[str, Any]], Action] | None = None) -> None:
        self.script: list[Action] = list(script or [])
        self.responder = responder
        """Answers each request once the script is used up (else: a 500)."""
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with api._lock:
                    api.requests.append((self.path, body))
                    action = api.script.pop(0) if api.script else api.responder(body) if api.responder else Status(500)
                api._serve(self, body, action)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._closing.set()  # ends every Hang and Stall now
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "ScriptedApi":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], action: Action) -> None:
        anthropic = handler.path.endswith("/messages")
        model = body.get("model", "scripted")
        if isinstance(action, Hang):
            self._closing.wait(action.seconds)
            action = Status(500)
        if isinstance(action, ErrorEvent) and not body.get("stream"):
            action = Status(ERROR_STATUS[action.kind])
        if isinstance(action, Status):
            kind = (ANTHROPIC_ERROR_TYPES if anthropic else OPENAI_ERROR_TYPES).get(action.code, "api_error" if anthropic else "server_error")
            error = ({"type": "error", "error": {"type": kind, "message": f"scripted {action.code}"}} if anthropic
                     else {"error": {"message": f"scripted {action.code}", "type": kind}})
            self._send(handler, action.code, json.dumps(error).encode(), "application/json", dict(action.headers))
            return
        answer = action if isinstance(action, Answer) else Answer(action.text)
        if body.get("stream"):
            data: list[tuple[str | None, Any]] = (list(_anthropic_events(model, answer)) if anthropic
                                                  else [(None, chunk) for chunk in _openai_chunks(model, answer)])
            if isinstance(action, Malformed):
                self._break_stream(data, action)
            events = [(f"event: {name}\n" if name else "") + f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n" for name, event in data]
            events += [] if anthropic else ["data: [DONE]\n\n"]
            whole = len("".join(events).encode())
            if isinstance(action, (Cut, Stall, ErrorEvent)):
                events = events[: len(events) // 2]  # before the finish
            if isinstance(action, ErrorEvent):
                error = {"type": "error", "error": {"type": action.kind, "message": f"scripted {action.kind}"}}
                events.append(f"event: error\ndata: {json.dumps(error)}\n\n" if anthropic else f"data: {json.dumps({'error': error['error']})}\n\n")
            payload = "".join(events).encode()
            if isinstance(action, Stall):
                self._stall(handler, payload, "text/event-stream", {"content-length": str(whole)}, action.seconds)
                return
            self._send(handler, 200, payload, "text/event-stream", {}, close=isinstance(action, (Cut, ErrorEvent)))
            return
        message = _anthropic_message(model, answer) if anthropic else _openai_completion(model, answer)
        if isinstance(action, Malformed):
            if action.path is None:
                self._send(handler, 200, NOT_JSON.encode(), "application/json", {})
                return
            assert _break(message, action.path, action.delete), action
        payload = json.dumps(message).encode()
        if isinstance(action, Stall):
            self._stall(handler, payload[: len(payload) // 2], "application/json", {"content-length": str(len(payload))}, action.seconds)
            return
        if isinstance(action, Cut):
            self._send(handler, 200, payload[: len(payload) // 2], "application/json", {"content-length": str(len(payload))}, close=True)
            return
        self._send(handler, 200, payload, "application/json", {})

    @staticmethod
    def _break_stream(data: list[tuple[str | None, Any]], action: Malformed) -> None:
        if action.path is None:
            data[0] = (data[0][0], NOT_JSON)
            return
        assert any(_break(event, action.stream_path, action.delete) for _, event in data), action  # the first that has it

    def _stall(self, handler: BaseHTTPRequestHandler, payload: bytes, kind: str, headers: dict[str, str], seconds: float) -> None:
        self._send(handler, 200, payload, kind, headers)
        self._closing.wait(seconds)
        handler.close_connection = True

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, code: int, payload: bytes, kind: str, headers: dict[str, str], close: bool = False) -> None:
        handler.send_response(code)
        handler.send_header("content-type", kind)
        if "content-length" not in headers:
            handler.send_header("content-length", str(len(payload)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()
        if close:
            handler.close_connection = True
