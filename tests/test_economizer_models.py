"""The four model calls through the real SDKs against scripted servers on 127.0.0.1, in both
wire formats, streaming and not: answers, every failure mode, and the state after each."""

from __future__ import annotations

import json
from fractions import Fraction

import attrs
import pytest

from economizer.codec import record_to_json
from economizer.controller import Controller, to_json
from economizer.model_calls import ModelCalls
from economizer.model_client import AnthropicClient, ModelSpec, OpenAIClient, Request, RetryPolicy
from economizer.protocols import template_redirect
from economizer_spec.cost import Usage
from economizer_spec.guard import Counters, GuardDigest
from economizer_spec.trajectory import Step, Trajectory
from tests.economizer_scripted_api import Action, Answer, Cut, ErrorEvent, Hang, Malformed, ScriptedApi, Stall, Status

pytest.importorskip("anthropic")
pytest.importorskip("openai")

WIRES = [("anthropic", False), ("anthropic", True), ("openai", False), ("openai", True)]
USAGE = Usage(100, 20, 5, 30)


def usage_of(provider: str) -> Usage:
    return USAGE if provider == "anthropic" else Usage(100, 20, 0, 30)  # chat completions report no cache writes


def client_for(api: ScriptedApi, provider: str, stream: bool, retries: int = 0, timeout_s: float = 5.0, sleeps: list | None = None):
    policy = RetryPolicy(retries=retries, base_backoff_s=0.01, max_backoff_s=0.05)
    sleep = (sleeps.append if sleeps is not None else (lambda s: None))
    if provider == "anthropic":
        client = AnthropicClient(ModelSpec("anthropic", "scripted-model"), "test-key", timeout_s, policy, stream, sleep)
        client.client = client.client.with_options(base_url=api.base_url)
    else:
        client = OpenAIClient(ModelSpec("openai", "scripted-model"), "test-key", timeout_s, policy, stream, sleep)
        client.client = client.client.with_options(base_url=api.base_url + "/v1")
    return client


DIGEST = GuardDigest(Counters(turns=12, error_outputs=7, repeated_failures=3, edits=(("a.py", 5),)), 20, ("sed -i s/a/b/ a.py", "pytest"))


@pytest.mark.parametrize("provider, stream", WIRES)
def test_each_call_answers_through_the_sdk(provider: str, stream: bool) -> None:
    script = [
        Answer(json.dumps({"stuck": True, "confidence": 0.85, "reason": "the same assertion after each edit"})),
        Answer("```json\n" + json.dumps({"redirect": "You keep editing a.py and rerunning the same failing test. Print the value the assertion compares before the next edit."}) + "\n```"),
        Answer(json.dumps({"load": ["search"], "drop": ["browser", "search"]})),
    ]
    with ScriptedApi(script) as api:
        calls = ModelCalls(client_for(api, provider, stream))
        verdict = calls.judge_trace(DIGEST)
        assert (verdict.stuck, verdict.confidence, verdict.usage) == (True, Fraction(17, 20), usage_of(provider))
        redirect = calls.write_redirect(DIGEST)
        assert redirect.text.startswith("You keep editing a.py") and redirect.usage == usage_of(provider)
        tools = calls.judge_tools("Fix the parser", ("browser", "search", "notebook"))
        assert tools.answer == {"browser": False, "search": True, "notebook": True}  # named both ways, or not at all: loaded
        path, body = api.requests[0]
        assert path.endswith("/messages" if provider == "anthropic" else "/chat/completions")
        assert bool(body.get("stream")) is stream and body["model"] == "scripted-model"
        sent = json.dumps(body)
        assert '\\"stuck\\"' in sent and "a.py" in sent  # the schema and the digest were sent


@attrs.frozen
class Failure:
    """A way for one call to fail: `script` is served, in a cycle, to every request of that call."""

    name: str
    script: tuple[Action, ...]
    retries: int = 0
    fragment: str = ""
    """In the failed call's error text."""
    charged: bool = False
    """The failed answer's tokens are charged (the model answered, the answer was refused)."""


def transport_failures(provider: str, valid: str) -> list[Failure]:
    """Every way the exchange itself fails, each carrying `valid` (an answer the call would
    accept) wherever the wire shows text: only the failure can make the call fail."""
    anthropic = provider == "anthropic"
    null_list = Malformed(valid, ("content",), ("message", "content")) if anthropic else Malformed(valid, ("choices",), ("choices",))
    missing = (Malformed(valid, ("usage",), ("message", "usage"), delete=True) if anthropic
               else Malformed(valid, ("choices", 0, "message"), ("choices", 0, "delta"), delete=True))
    return [
        Failure("rate limited past the retries", (Status(429, (("retry-after", "0"),)),), 2, "RateLimitError"),
        Failure("server error", (Status(500),), 0, "InternalServerError"),
        Failure("bad key, not retried", (Status(401),), 3, "AuthenticationError"),
        Failure("timeout before the headers", (Hang(0.8),), 0, "Timeout"),
        Failure("connection dropped mid-answer", (Cut(valid),), 0),
        Failure("stall mid-answer after the headers", (Stall(valid, 0.8),), 0, "Timeout"),
        Failure("error event mid-stream", (ErrorEvent(valid, "overloaded_error" if anthropic else "server_error"),), 0, "scripted"),
        Failure("200 body with a null answer list", (null_list,), 0, "malformed"),
        Failure("200 body missing a required field", (missing,), 0, "malformed"),
        Failure("200 body that is not JSON", (Malformed(valid, None),), 0, "malformed"),
        Failure("cut at the token limit", (Answer(valid, truncated=True),), 0, "truncated", charged=True),
    ]


def content_failures(answers: dict[str, str]) -> list[Failure]:
    """Answers that arrive whole but are not an answer the call accepts: `answers` by name."""
    return [Failure(name, (Answer(text),), 0, fragment, charged=True) for name, (text, fragment) in answers.items()]


STUCK = json.dumps({"stuck": True, "confidence": 0.9, "reason": "the same assertion fails after each edit"})
TRACE_JUDGE_CONTENT = {
    "not JSON": ("I think it is stuck.", "not JSON"),
    "wrong shape": (json.dumps({"stuck": "yes", "confidence": 0.9, "reason": ""}), "expected boolean"),
    "out of range": (json.dumps({"stuck": True, "confidence": 1.5, "reason": "r"}), "> 1"),
}


def trace_judge_failures(provider: str) -> list[Failure]:
    return transport_failures(provider, STUCK) + content_failures(TRACE_JUDGE_CONTENT)


def failure_names(table) -> list[str]:
    return [f.name for f in table("anthropic")]


def failure(table, provider: str, name: str) -> Failure:
    return next(f for f in table(provider) if f.name == name)


def scripted(failure: Failure) -> list[Action]:
    """Enough of the failure's script for one call and all its retries."""
    return list(failure.script) * (failure.retries + 1)


@pytest.mark.parametrize("provider, stream", WIRES)
@pytest.mark.parametrize("name", failure_names(trace_judge_failures))
def test_a_failed_trace_judge_is_not_stuck(provider: str, stream: bool, name: str) -> None:
    broken = failure(trace_judge_failures, provider, name)
    sleeps: list[float] = []
    with ScriptedApi(scripted(broken)) as api:
        verdict = ModelCalls(client_for(api, provider, stream, broken.retries, timeout_s=0.3, sleeps=sleeps)).judge_trace(DIGEST)
        assert not verdict.stuck and verdict.confidence == 0, name
        assert verdict.reason.startswith("judge call failed") and broken.fragment in verdict.reason, verdict.reason
        if name == "rate limited past the retries":
            assert len(api.requests) == 3 and sleeps == [0.0, 0.0]  # retry-after honoured, bounded
        if name == "bad key, not retried":
            assert len(api.requests) == 1
        assert (verdict.usage != Usage()) == broken.charged, verdict.usage


@pytest.mark.parametrize("provider, stream", WIRES)
def test_a_rate_limit_then_an_answer_is_retried_with_backoff(provider: str, stream: bool) -> None:
    sleeps: list[float] = []
    script = [Status(429), Status(503), Answer(json.dumps({"stuck": False, "confidence": 0.9, "reason": "exploring"}))]
    with ScriptedApi(script) as api:
        client = client_for(api, provider, stream, retries=3, sleeps=sleeps)
        reply = client.complete(Request("trace_judge", "s", "u", 100))
        assert reply.text is not None and reply.attempts == 3 and sleeps == [0.01, 0.02]


TRANSIENT = ["timeout before the headers", "stall mid-answer after the headers", "connection dropped mid-answer", "error event mid-stream"]


@pytest.mark.parametrize("provider, stream", WIRES)
@pytest.mark.parametrize("name", TRANSIENT)
def test_a_transient_failure_then_an_answer_is_retried(provider: str, stream: bool, name: str) -> None:
    """A timeout (before or after the headers), a dropped connection and a provider's overload
    reported mid-stream are transient: the next attempt answers."""
    broken = failure(trace_judge_failures, provider, name)
    sleeps: list[float] = []
    with ScriptedApi([*broken.script, Answer(STUCK)]) as api:
        verdict = ModelCalls(client_for(api, provider, stream, retries=1, timeout_s=0.3, sleeps=sleeps)).judge_trace(DIGEST)
        assert verdict.stuck and verdict.usage == usage_of(provider), verdict.reason
        assert len(api.requests) == 2 and sleeps == [0.01]


@pytest.mark.parametrize("provider, stream", WIRES)
def test_an_invalid_request_error_mid_stream_is_not_retried(provider: str, stream: bool) -> None:
    with ScriptedApi([ErrorEvent(STUCK, "invalid_request_error"), Answer(STUCK)]) as api:
        verdict = ModelCalls(client_for(api, provider, stream, retries=3)).judge_trace(DIGEST)
        assert not verdict.stuck and len(api.requests) == 1, verdict.reason


PASSING = (Step("python -m pytest tests", "3 passed", 0), Step("ls", "", 0))


def _stream() -> list[Trajectory]:
    return [Trajectory(f"o__r-{i}", PASSING, True) for i in range(1, 5)]


@pytest.mark.parametrize("provider, stream", WIRES)
def test_a_proposed_skill_is_admitted_through_the_controller(provider: str, stream: bool) -> None:
    skill = {"id": "pytest-runs", "claim": "pytest runs the tests", "injection": "Run the tests with `python -m pytest`.",
             "detector": {"scope": "ran_tests", "confirm": {"command": "python -m pytest", "exit_zero": True},
                          "contradict": {"regex": "(a+)+b"}}, "high_stakes": False, "cite": ["o__r-1", "o__r-3", "o__r-9"]}
    with ScriptedApi([Answer(json.dumps({"skills": [skill]}))]) as api:
        controller = Controller("o/r")
        calls = ModelCalls(client_for(api, provider, stream))
        for trajectory in _stream():
            record = controller.feed(trajectory, calls.controllers(tool_judge=False))
    assert list(controller.skills) == [] and record.rejections  # an inadmissible contradict regex: rejected, with its reason
    assert "contradict" in record.rejections[0].reason or "regex" in record.rejections[0].reason


@pytest.mark.parametrize("provider, stream", WIRES)
def test_a_wrong_argument_to_the_sdk_still_raises(provider: str, stream: bool, monkeypatch) -> None:
    """A TypeError while reading an answer is the answer's fault (a failed call); the same error
    from our own call into the SDK is our bug, and must not pass for a failed call."""
    with ScriptedApi([Answer(STUCK)]) as api:
        client = client_for(api, provider, stream)
        resource = client.client.messages if provider == "anthropic" else client.client.chat.completions
        method = "stream" if provider == "anthropic" and stream else "create"
        real = getattr(resource, method)
        monkeypatch.setattr(resource, method, lambda **arguments: real(**arguments, temprature=0))  # a misspelt argument
        with pytest.raises(TypeError, match="temprature"):
            client.complete(Request("trace_judge", "s", "u", 100))
        assert api.requests == []
