"""The four model calls through the real SDKs against scripted servers on 127.0.0.1, in both
wire formats, streaming and not: answers, every failure mode, and the state after each."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from economizer.codec import record_to_json
from economizer.controller import Controller, to_json
from economizer.model_calls import ModelCalls
from economizer.model_client import AnthropicClient, ModelSpec, OpenAIClient, Request, RetryPolicy
from economizer.protocols import template_redirect
from economizer_spec.cost import Usage
from economizer_spec.guard import Counters, GuardDigest
from economizer_spec.trajectory import Step, Trajectory
from tests.economizer_scripted_api import Answer, Cut, Hang, ScriptedApi, Status

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


def _failures(provider: str) -> list[tuple[str, list, int, str]]:
    """(name, script, retries, expected error fragment): each ends in a failed call."""
    return [
        ("rate limited past the retries", [Status(429, (("retry-after", "0"),))] * 3, 2, "RateLimitError"),
        ("server error", [Status(500)], 0, "InternalServerError"),
        ("bad key, not retried", [Status(401), Answer("{}")], 3, "AuthenticationError"),
        ("timeout", [Hang(0.8)], 0, "Timeout"),
        ("not JSON", [Answer("I think it is stuck.")], 0, "not JSON"),
        ("wrong shape", [Answer(json.dumps({"stuck": "yes", "confidence": 0.9, "reason": ""}))], 0, "expected boolean"),
        ("out of range", [Answer(json.dumps({"stuck": True, "confidence": 1.5, "reason": "r"}))], 0, "> 1"),
        ("cut at the token limit", [Answer(json.dumps({"stuck": True, "confidence": 0.9, "reason": "r"}), truncated=True)], 0, "truncated"),
        ("connection dropped mid-answer", [Cut(json.dumps({"stuck": True, "confidence": 0.9, "reason": "loop"}))], 0, ""),
    ]


FAILURE_NAMES = [name for name, *_ in _failures("anthropic")]


@pytest.mark.parametrize("provider, stream", WIRES)
@pytest.mark.parametrize("failure", FAILURE_NAMES)
def test_a_failed_trace_judge_is_not_stuck(provider: str, stream: bool, failure: str) -> None:
    name, script, retries, fragment = next(f for f in _failures(provider) if f[0] == failure)
    sleeps: list[float] = []
    with ScriptedApi(script) as api:
        verdict = ModelCalls(client_for(api, provider, stream, retries, timeout_s=0.3, sleeps=sleeps)).judge_trace(DIGEST)
        assert not verdict.stuck and verdict.confidence == 0, name
        assert verdict.reason.startswith("judge call failed") and fragment in verdict.reason, verdict.reason
        if failure == "rate limited past the retries":
            assert len(api.requests) == 3 and sleeps == [0.0, 0.0]  # retry-after honoured, bounded
        if failure == "bad key, not retried":
            assert len(api.requests) == 1
        charged = verdict.usage != Usage()
        assert charged == (failure in ("not JSON", "wrong shape", "out of range", "cut at the token limit")), verdict.usage


@pytest.mark.parametrize("provider, stream", WIRES)
def test_a_rate_limit_then_an_answer_is_retried_with_backoff(provider: str, stream: bool) -> None:
    sleeps: list[float] = []
    script = [Status(429), Status(503), Answer(json.dumps({"stuck": False, "confidence": 0.9, "reason": "exploring"}))]
    with ScriptedApi(script) as api:
        client = client_for(api, provider, stream, retries=3, sleeps=sleeps)
        reply = client.complete(Request("trace_judge", "s", "u", 100))
        assert reply.text is not None and reply.attempts == 3 and sleeps == [0.01, 0.02]


# --- the state after a failed call -------------------------------------------------------------

PASSING = (Step("python -m pytest tests", "3 passed", 0), Step("ls", "", 0))


def _stream() -> list[Trajectory]:
    return [Trajectory(f"o__r-{i}", PASSING, True) for i in range(1, 5)]


@pytest.mark.parametrize("provider, stream", WIRES)
@pytest.mark.parametrize("failure", ["server error", "not JSON", "cut at the token limit", "wrong skill shape"])
def test_a_failed_proposer_leaves_the_state_as_no_proposal_would(provider: str, stream: bool, failure: str) -> None:
    """Task 4 is the proposer's first call: it fails, and the controller's state is exactly that
    of a controller whose proposer proposed nothing, but for the tokens charged to task 4."""
    bad_skill = {"skills": [{"id": "x", "injection": "y", "detector": {"scope": "ran_tests"}, "cite": []}]}  # no confirm
    action = {"server error": Status(500), "not JSON": Answer("here are my skills"),
              "cut at the token limit": Answer(json.dumps({"skills": []}), truncated=True),
              "wrong skill shape": Answer(json.dumps(bad_skill))}[failure]
    with ScriptedApi([action]) as api:
        calls = ModelCalls(client_for(api, provider, stream))
        controller = Controller("o/r")
        for trajectory in _stream():
            controller.feed(trajectory, calls.controllers(tool_judge=False))
        assert len(api.requests) == 1
    reference = Controller("o/r")
    silent = calls.controllers(tool_judge=False)
    from economizer_spec.stream import Controllers, ProposerAnswer

    for trajectory in _stream():
        reference.feed(trajectory, Controllers(lambda r, i, d: ProposerAnswer(()), silent.trace_judge, silent.redirect_writer, None))
    ours, theirs = to_json(controller), to_json(reference)
    assert [c.kind for c in controller.records[-1].calls] == ["proposer"]
    charged = controller.records[-1].calls[0].usage
    assert (charged != Usage()) == (failure != "server error")
    assert ours == theirs and controller.skills == {}
    strip = lambda records: [{**record_to_json(r), "calls": [c["kind"] for c in record_to_json(r)["calls"]]} for r in records]
    assert strip(controller.records) == strip(reference.records)


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


def test_a_failed_redirect_writer_falls_back_to_the_template() -> None:
    with ScriptedApi([Status(500)]) as api:
        written = ModelCalls(client_for(api, "anthropic", False)).write_redirect(DIGEST)
    assert written.text == template_redirect(DIGEST).text


def test_a_failed_tool_judge_loads_every_candidate() -> None:
    with ScriptedApi([Answer("{\"load\": []}")]) as api:
        assert ModelCalls(client_for(api, "openai", True)).judge_tools("task", ("a", "b")).answer is None
