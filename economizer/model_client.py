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
failed call too, whatever it contains: a truncated judgement is not a judgement.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Literal, Protocol

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


def _retryable(error: Exception) -> bool:
    status = getattr(error, "status_code", None)
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    return type(error).__name__ in ("APIConnectionError", "APITimeoutError") or isinstance(error, (TimeoutError, ConnectionError))


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
                message = events.get_final_message()
        else:
            message = self.client.messages.create(**arguments)
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
            parts, finish, raw = [], None, None
            for chunk in self.client.chat.completions.create(**arguments, stream=True, stream_options={"include_usage": True}):
                raw = chunk.usage or raw
                for choice in chunk.choices:
                    parts.append(choice.delta.content or "")
                    finish = choice.finish_reason or finish
            text = "".join(parts)
        else:
            response = self.client.chat.completions.create(**arguments)
            text, finish, raw = response.choices[0].message.content or "", response.choices[0].finish_reason, response.usage
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
