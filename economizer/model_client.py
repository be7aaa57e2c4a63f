"""One model call through a provider's official SDK: timeout, bounded retries, usage.

`--model PROVIDER:NAME` names the endpoint: `anthropic:NAME` (the Anthropic Messages API,
key from ANTHROPIC_API_KEY, base URL from ANTHROPIC_BASE_URL if set) or `openai:NAME` (any
OpenAI-compatible chat completions endpoint, key from OPENAI_API_KEY, base URL from
OPENAI_BASE_URL). The SDK's own retries are off (`max_retries=0`) so that this module owns
the policy: a rate limit (429), an overload or server error (5xx, 408, 409), a timeout or a
dropped connection is retried up to `retries` times with exponential backoff (honouring a
`retry-after` header up to `max_backoff_s`); anything else (a bad key, a bad request) fails
at once. A call that still fails is a `Reply` with `text=None` and the error: the caller
treats it as the failed call its rule defines, and nothing raises into the controller.

A reply cut at the token limit (`stop_reason` max_tokens, `finish_reason` length) is a
failed call too, whatever it contains: a truncated judgement is not a judgement. So is a 200
whose body does not have the wire format's shape (not JSON, `choices` or `content` null, no
`usage`): the answer is read in one narrow function per wire format, and a TypeError or
AttributeError raised while reading it is the answer's fault, not ours, so it becomes a
`MalformedAnswer` there; the same errors anywhere else (a wrong argument to the SDK) still
raise. A malformed answer is not retried (the server answered; asking again is not known to
help) and charges no tokens (its usage cannot be trusted).

An error event in the middle of a stream (Anthropic's `event: error`, an OpenAI-compatible
`data: {"error": ...}`) is retried when its type is a transient one (overloaded, an internal
error, a rate limit), exactly as the HTTP status of that error would be.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Literal, Protocol, TypeVar

import attrs

from economizer_spec.cost import CallKind, NO_USAGE, Usage
from ledger_spec.errors import DetectorFailure, UsageError

Provider = Literal["anthropic", "openai"]
KEY_VARIABLES: dict[Provider, str] = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


class ModelSetupError(UsageError, ValueError):
    """A `--model` setting that cannot be used (unknown provider, no key)."""


@attrs.frozen
class ModelSpec:
    provider: Provider
    name: str

    @classmethod
    def parse(cls, text: str) -> "ModelSpec":
        provider, _, name = text.partition(":")
        if provider not in KEY_VARIABLES or not name:
            raise ModelSetupError(f"--model must be anthropic:NAME or openai:NAME, got {text!r}")
        return cls(provider, name)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


@attrs.frozen
class Request:
    kind: CallKind
    system: str
    user: str
    max_tokens: int


@attrs.frozen
class Reply:
    text: str | None
    """The answer's text, or None when the call failed."""
    usage: Usage = NO_USAGE
    error: str = ""
    attempts: int = 1


class ModelClient(Protocol):
    model: str

    def complete(self, request: Request) -> Reply: ...

    def close(self) -> None:
        """The run is over: release what the client holds (the SDK's HTTP connections, a
        recording's file); a replay also checks that every recorded call was asked."""


class Truncated(DetectorFailure):
    """The answer stopped at the token limit."""


class MalformedAnswer(DetectorFailure):
    """A 200 whose body does not have the provider's wire format."""


T = TypeVar("T")


def read_answer(read: Callable[[], T]) -> T:
    """`read()`, which only reads a received answer (or the stream delivering it): a TypeError,
    AttributeError, KeyError or IndexError there is a field of the wrong shape in the answer."""
    try:
        return read()
    except (TypeError, AttributeError, KeyError, IndexError) as error:
        raise MalformedAnswer(f"{type(error).__name__}: {error}") from error


@attrs.frozen
class RetryPolicy:
    retries: int = 3
    base_backoff_s: float = 1.0
    max_backoff_s: float = 20.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        wanted = retry_after if retry_after is not None else self.base_backoff_s * 2 ** (attempt - 1)
        return max(0.0, min(wanted, self.max_backoff_s))


def _retry_after(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


TRANSIENT_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "server_error", "rate_limit_exceeded"})
"""Error types (Anthropic's, then OpenAI's) whose HTTP statuses (529, 500, 429, 5xx) are retried."""


def _error_kinds(error: Exception) -> set[str]:
    """The `type` and `code` of the error object in an SDK error's body, if it has one."""
    body = getattr(error, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    return {v for v in (inner.get("type"), inner.get("code")) if isinstance(v, str)} if isinstance(inner, dict) else set()


def _transport(error: Exception) -> bool:
    """A timeout or a broken connection while a stream is read: the SDKs wrap the request's
    own transport errors (APIConnectionError, APITimeoutError) but not those raised later by
    their HTTP library (httpx, or httpx2 in newer SDKs), so these are recognised by class."""
    return any(k.__name__ == "TransportError" and k.__module__.split(".")[0] in ("httpx", "httpx2") for k in type(error).__mro__)


def _retryable(error: Exception) -> bool:
    status = getattr(error, "status_code", None)
    if status is not None and status != 200:
        return status in (408, 409, 429) or status >= 500
    if _error_kinds(error) & TRANSIENT_ERROR_TYPES:  # an error event mid-stream: the stream's own status was 200
        return True
    return (type(error).__name__ in ("APIConnectionError", "APITimeoutError") or _transport(error)
            or isinstance(error, (TimeoutError, ConnectionError)))


class SdkClient:
    """The shared retry loop around one provider's `_send`."""

    def __init__(self, spec: ModelSpec, api_key: str, timeout_s: float, policy: RetryPolicy, stream: bool = False,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.model = str(spec)
        self.spec = spec
        self.policy = policy
        self.stream = stream
        self.sleep = sleep
        self.client = self._sdk(api_key, timeout_s)

    def _sdk(self, api_key: str, timeout_s: float) -> Any:
        """The provider's SDK client, its own retries off (this class retries)."""
        raise NotImplementedError

    def _send(self, request: Request) -> tuple[str, Usage]:
        raise NotImplementedError

    def complete(self, request: Request) -> Reply:
        attempt = 0
        while True:
            attempt += 1
            try:
                text, usage = self._send(request)
                return Reply(text, usage, attempts=attempt)
            except Truncated as cut:
                return Reply(None, cut.args[0], "truncated at the token limit", attempt)
            except (MalformedAnswer, json.JSONDecodeError) as bad:  # the SDK decodes a non-streamed body itself
                return Reply(None, NO_USAGE, f"malformed answer: {type(bad).__name__}: {str(bad)[:300]}", attempt)
            except (TypeError, AttributeError, NameError):
                raise  # our own bug (a wrong argument to the SDK), not a failed call
            except Exception as error:  # any SDK or transport failure is a failed call, never a crash
                if attempt > self.policy.retries or not _retryable(error):
                    return Reply(None, NO_USAGE, f"{type(error).__name__}: {str(error)[:300]}", attempt)
                self.sleep(self.policy.delay(attempt, _retry_after(error)))

    def close(self) -> None:
        """Closes the SDK's HTTP client (its pooled connections); the client is unusable after."""
        self.client.close()


class AnthropicClient(SdkClient):
    def _sdk(self, api_key: str, timeout_s: float) -> Any:
        import anthropic

        return anthropic.Anthropic(api_key=api_key, timeout=timeout_s, max_retries=0)

    def _send(self, request: Request) -> tuple[str, Usage]:
        arguments: dict[str, Any] = dict(
            model=self.spec.name, max_tokens=request.max_tokens, system=request.system,
            messages=[{"role": "user", "content": request.user}],
        )  # no temperature: this SDK's Messages API no longer takes one
        if self.stream:
            with self.client.messages.stream(**arguments) as events:
                return read_answer(lambda: _anthropic_answer(events.get_final_message()))
        message = self.client.messages.create(**arguments)
        return read_answer(lambda: _anthropic_answer(message))


def _anthropic_answer(message: Any) -> tuple[str, Usage]:
    u = message.usage
    usage = Usage(u.input_tokens or 0, getattr(u, "cache_read_input_tokens", 0) or 0,
                  getattr(u, "cache_creation_input_tokens", 0) or 0, u.output_tokens or 0)
    if message.stop_reason == "max_tokens":
        raise Truncated(usage)
    if message.stop_reason is None:
        raise ConnectionError("the answer ended before the model finished it")
    return "".join(block.text for block in message.content if getattr(block, "type", "") == "text"), usage


class OpenAIClient(SdkClient):
    def _sdk(self, api_key: str, timeout_s: float) -> Any:
        import openai

        return openai.OpenAI(api_key=api_key, timeout=timeout_s, max_retries=0)

    def _send(self, request: Request) -> tuple[str, Usage]:
        arguments: dict[str, Any] = dict(
            model=self.spec.name, max_tokens=request.max_tokens, temperature=0,
            messages=[{"role": "system", "content": request.system}, {"role": "user", "content": request.user}],
        )
        if self.stream:
            chunks = self.client.chat.completions.create(**arguments, stream=True, stream_options={"include_usage": True})
            return read_answer(lambda: _openai_answer(*_openai_streamed(chunks)))
        response = self.client.chat.completions.create(**arguments)
        return read_answer(lambda: _openai_answer(response.choices[0].message.content or "", response.choices[0].finish_reason, response.usage))


def _openai_streamed(chunks: Any) -> tuple[str, str | None, Any]:
    parts, finish, raw = [], None, None
    for chunk in chunks:
        raw = chunk.usage or raw
        for choice in chunk.choices:
            parts.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    return "".join(parts), finish, raw


def _openai_answer(text: str, finish: str | None, raw: Any) -> tuple[str, Usage]:
    if finish is None:
        raise ConnectionError("the stream ended before the answer finished")
    usage = _openai_usage(raw)
    if finish == "length":
        raise Truncated(usage)
    return text, usage


def _openai_usage(raw: Any) -> Usage:
    if raw is None:
        return NO_USAGE
    details = getattr(raw, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return Usage(max(0, (raw.prompt_tokens or 0) - cached), cached, 0, raw.completion_tokens or 0)


def connect(spec: ModelSpec, timeout_s: float = 60.0, policy: RetryPolicy = RetryPolicy(), stream: bool = False,
            environ: Any = os.environ) -> SdkClient:
    """A client for `spec`, its key read from the provider's usual environment variable."""
    variable = KEY_VARIABLES[spec.provider]
    key = environ.get(variable)
    if not key:
        raise ModelSetupError(f"--model {spec} needs the key in ${variable}")
    kind = AnthropicClient if spec.provider == "anthropic" else OpenAIClient
    return kind(spec, key, timeout_s, policy, stream)
