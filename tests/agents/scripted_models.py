"""Scripted model servers on 127.0.0.1 for driving real agent CLIs: the Anthropic Messages API
(Claude Code), the OpenAI Responses API (Codex), the Gemini API (Gemini CLI) and OpenAI Chat
Completions (Qwen Code).

Claude Code talks to `ANTHROPIC_BASE_URL` with streaming requests (`POST /v1/messages`). This
server answers each main-loop request with the next scripted assistant turn (text or
`tool_use` blocks, streamed as server-sent events), so the CLI really runs its tools and really
calls its hooks. It keeps what the CLI sent back: every `tool_result`, once, by `tool_use_id`.

How a turn is found: Claude Code's main-loop requests are not one growing chat (side requests
carry no tools; `system` notes are inserted between turns; consecutive tool results are merged),
so the turn index is the number of this script's `tool_use` ids already present in the
request's assistant messages. A request that carries no tools gets a short text answer.

Codex talks to a configured provider's `/v1/responses` with streaming requests whose `input`
holds the whole conversation: `function_call` items (the script's, by `call_id`) and their
`function_call_output` items. `ScriptedResponses` answers with the next turn's
`function_call` items, or a final assistant message.

Gemini CLI talks to `GOOGLE_GEMINI_BASE_URL`'s `/v1beta/models/M:streamGenerateContent?alt=sse`
with the whole conversation in `contents`: the script's `functionCall` parts (by `id`) and their
`functionResponse` parts (`response.output`, or `response.error` for a blocked or failed call).
`ScriptedGemini` streams the next turn's `functionCall` parts, or a final text. Its side requests
(`:generateContent`, `:countTokens`) get a short text and a token count.

Qwen Code talks to `OPENAI_BASE_URL`'s `/chat/completions`, streamed, with the conversation in
`messages`: assistant `tool_calls` (the script's, by `id`) and `tool` messages answering them
(`tool_call_id`, `content`). `ScriptedChat` streams the next turn's `tool_calls`, or a text.

`on_results(results)` is called with the tool results of a turn before the next turn is
served: the CLI is waiting, so the workspace is exactly as those tools left it (an oracle
re-runs commands there).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import attrs


@attrs.frozen
class ToolUse:
    """One scripted `tool_use` block; `id` is unique across the script."""

    id: str
    name: str
    input: dict[str, Any]


@attrs.frozen
class ToolResult:
    """What the CLI sent back for one `tool_use`: its text content and error flag."""

    tool_use_id: str
    content: str
    is_error: bool


Turn = tuple[ToolUse, ...] | str  # tool calls, or a final text answer (ends the run)
ResultsHook = Callable[[list[ToolResult]], None]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class ScriptedModel:
    """The script and everything received; shared by the server's handler threads."""

    def __init__(self, turns: list[Turn], on_results: ResultsHook | None = None) -> None:
        self.turns = turns
        self.on_results = on_results
        self.results: dict[str, ToolResult] = {}
        self.requests: list[dict[str, Any]] = []
        self.errors: list[str] = []  # failures inside the server (e.g. the oracle), surfaced by the test
        self._ids = {use.id for turn in turns if not isinstance(turn, str) for use in turn}
        self._lock = threading.Lock()
        # The `input_tokens` each answer reports; a test raises it to make Claude compact.
        self.reported_input_tokens = 1

    def respond(self, request: dict[str, Any]) -> list[bytes]:
        with self._lock:
            self.requests.append(request)
            if not request.get("tools"):
                return self._stream_text("ok", len(self.requests))
            seen: set[str] = set()
            fresh: list[ToolResult] = []
            for message in request.get("messages", []):
                content = message.get("content")
                if not isinstance(content, list):
                    continue
                for block in content:
                    if not isinstance(block, dict):
                        continue
                    if message.get("role") == "assistant" and block.get("type") == "tool_use":
                        if block.get("id") in self._ids:
                            seen.add(block["id"])
                    elif block.get("type") == "tool_result":
                        use_id = block.get("tool_use_id", "")
                        if use_id in self._ids and use_id not in self.results:
                            result = ToolResult(use_id, _text_of(block.get("content")), bool(block.get("is_error")))
                            self.results[use_id] = result
                            fresh.append(result)
            turn = self._next_turn(seen, fresh)
            if isinstance(turn, str):
                return self._stream_text(turn, len(self.requests))
            return self._stream_tools(turn, len(self.requests))

    def turn_index(self, seen: set[str]) -> int:
        """The next turn: how many turns' tool calls the request's assistant messages hold."""
        return sum(1 for turn in self.turns if not isinstance(turn, str) and all(u.id in seen for u in turn))

    def _next_turn(self, seen: set[str], fresh: list[ToolResult]) -> Turn:
        """Hand the new results to `on_results`, then the first turn whose calls the request
        does not all carry yet (`turn_index`; "done" after the script)."""
        if fresh and self.on_results is not None:
            try:
                self.on_results(fresh)
            except Exception as error:  # reported by the test, never a hung CLI
                self.errors.append(f"on_results: {error!r}")
        index = self.turn_index(seen)
        return self.turns[index] if index < len(self.turns) else "done"

    def _stream_text(self, text: str, number: int) -> list[bytes]:
        return [
            self._start(number),
            _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": text}}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            *self._stop("end_turn"),
        ]

    def _stream_tools(self, uses: tuple[ToolUse, ...], number: int) -> list[bytes]:
        events = [self._start(number)]
        for index, use in enumerate(uses):
            events += [
                _sse("content_block_start", {"type": "content_block_start", "index": index,
                                             "content_block": {"type": "tool_use", "id": use.id, "name": use.name, "input": {}}}),
                _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                             "delta": {"type": "input_json_delta", "partial_json": json.dumps(use.input)}}),
                _sse("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
        return events + self._stop("tool_use")

    def _start(self, number: int) -> bytes:
        return _sse("message_start", {"type": "message_start", "message": {
            "id": f"msg_scripted_{number}", "type": "message", "role": "assistant", "model": "claude-scripted",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": self.reported_input_tokens, "output_tokens": 1}}})

    @staticmethod
    def _stop(reason: str) -> list[bytes]:
        return [
            _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
                                   "usage": {"output_tokens": 1}}),
            _sse("message_stop", {"type": "message_stop"}),
        ]


class ScriptedResponses(ScriptedModel):
    """The same script, served as the OpenAI Responses API (tool calls are `function_call`s)."""

    def respond(self, request: dict[str, Any]) -> list[bytes]:
        with self._lock:
            self.requests.append(request)
            seen: set[str] = set()
            fresh: list[ToolResult] = []
            items = request.get("input")
            for item in items if isinstance(items, list) else []:
                if not isinstance(item, dict) or item.get("call_id") not in self._ids:
                    continue
                if item.get("type") == "function_call":
                    seen.add(item["call_id"])
                elif item.get("type") == "function_call_output" and item["call_id"] not in self.results:
                    output = item.get("output")
                    result = ToolResult(item["call_id"], output if isinstance(output, str) else _text_of(output), False)
                    self.results[item["call_id"]] = result
                    fresh.append(result)
            turn = self._next_turn(seen, fresh)
            response_id = f"resp_scripted_{len(self.requests)}"
            events = [_sse("response.created", {"type": "response.created", "response": {"id": response_id}})]
            if isinstance(turn, str):
                outputs: list[dict[str, Any]] = [{"type": "message", "role": "assistant", "id": f"msg_{response_id}",
                                                  "content": [{"type": "output_text", "text": turn}]}]
            else:
                outputs = [{"type": "function_call", "id": f"fc_{use.id}", "call_id": use.id, "name": use.name,
                            "arguments": json.dumps(use.input)} for use in turn]
            events += [_sse("response.output_item.done", {"type": "response.output_item.done", "item": item})
                       for item in outputs]
            usage = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1,
                     "output_tokens_details": None, "total_tokens": 2}
            events.append(_sse("response.completed", {"type": "response.completed",
                                                      "response": {"id": response_id, "usage": usage}}))
            return events


class ScriptedGemini(ScriptedModel):
    """The same script, served as the Gemini API's `streamGenerateContent` (server-sent events)."""

    def respond(self, request: dict[str, Any]) -> list[bytes]:
        with self._lock:
            self.requests.append(request)
            seen: set[str] = set()
            fresh: list[ToolResult] = []
            for content in request.get("contents") or []:
                for part in content.get("parts") or [] if isinstance(content, dict) else []:
                    call = part.get("functionCall") if isinstance(part, dict) else None
                    answer = part.get("functionResponse") if isinstance(part, dict) else None
                    if isinstance(call, dict) and call.get("id") in self._ids:
                        seen.add(call["id"])
                    elif isinstance(answer, dict) and answer.get("id") in self._ids and answer["id"] not in self.results:
                        response = answer.get("response") or {}
                        failed = "error" in response
                        text = response.get("error" if failed else "output")
                        result = ToolResult(answer["id"], text if isinstance(text, str) else json.dumps(text), failed)
                        self.results[answer["id"]] = result
                        fresh.append(result)
            turn = self._next_turn(seen, fresh)
            if isinstance(turn, str):
                parts: list[dict[str, Any]] = [{"text": turn}]
            else:
                parts = [{"functionCall": {"id": use.id, "name": use.name, "args": use.input}} for use in turn]
            return [f"data: {json.dumps(gemini_answer(parts))}\n\n".encode()]


class ScriptedChat(ScriptedModel):
    """The same script, served as OpenAI Chat Completions (streamed chunks, then `[DONE]`)."""

    def respond(self, request: dict[str, Any]) -> list[bytes]:
        with self._lock:
            self.requests.append(request)
            seen: set[str] = set()
            fresh: list[ToolResult] = []
            for message in request.get("messages") or []:
                if not isinstance(message, dict):
                    continue
                for call in message.get("tool_calls") or [] if message.get("role") == "assistant" else []:
                    if isinstance(call, dict) and call.get("id") in self._ids:
                        seen.add(call["id"])
                answered = message.get("tool_call_id")
                if message.get("role") == "tool" and answered in self._ids and answered not in self.results:
                    result = ToolResult(answered, _text_of(message.get("content")), False)
                    self.results[answered] = result
                    fresh.append(result)
            turn = self._next_turn(seen, fresh)
            number = len(self.requests)
            if isinstance(turn, str):
                delta: dict[str, Any] = {"role": "assistant", "content": turn}
                finish = "stop"
            else:
                delta = {"role": "assistant", "tool_calls": [
                    {"index": index, "id": use.id, "type": "function",
                     "function": {"name": use.name, "arguments": json.dumps(use.input)}}
                    for index, use in enumerate(turn)]}
                finish = "tool_calls"
            chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}]
            header = {"id": f"chat_{number}", "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
            return [f"data: {json.dumps({**header, **chunk})}\n\n".encode() for chunk in chunks] + [b"data: [DONE]\n\n"]


def gemini_answer(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One complete `GenerateContentResponse` carrying `parts`."""
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}}


class _Handler(BaseHTTPRequestHandler):
    model: ScriptedModel  # set on a subclass per server
    # A client that keeps a connection open without sending (a CLI killed mid-request, a child
    # it left behind) ends its handler thread after this many seconds instead of never.
    timeout = 60

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            request = {}
        streamed = (self.path.startswith(("/v1/messages", "/v1/responses")) or ":streamGenerateContent" in self.path
                    or self.path.endswith("/chat/completions"))
        if not streamed or self.path.startswith("/v1/messages/count_tokens"):
            side = gemini_answer([{"text": "ok"}]) if ":generateContent" in self.path else {"input_tokens": 1, "totalTokens": 1}
            body = json.dumps(side).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        events = self.model.respond(request)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for event in events:
            self.wfile.write(event)
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


class ScriptedServer:
    """`with ScriptedServer(model) as url:` serves `model` on 127.0.0.1 at a free port."""

    def __init__(self, model: ScriptedModel) -> None:
        handler = type("ScriptedHandler", (_Handler,), {"model": model})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        # Closing does not wait for handler threads (daemons): a stuck connection cannot hang
        # the test after the CLI has finished or been killed.
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
