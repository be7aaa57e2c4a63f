"""The state after a failed model call: for every failure mode, in both wire formats, streaming
and not, the controller ends exactly where the failed call's rule puts it, that is where a
controller without that model call (the no-model reference) ends, but for the tokens charged.

Each failing call is served a valid answer wherever the wire carries text (`transport_failures`),
and a control test shows that answer changes the state when it arrives whole: so only the
failure can be what leaves the state unchanged."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from typing import Any

import pytest

from economizer.codec import record_to_json
from economizer.controller import Controller, to_json
from economizer.model_calls import ModelCalls
from economizer.protocols import not_stuck, template_redirect
from economizer_spec.cost import Usage
from economizer_spec.guard import RedirectText, Verdict
from economizer_spec.stream import Controllers, ProposerAnswer
from economizer_spec.trajectory import Step, Trajectory
from tests.economizer_scripted_api import Action, Answer, ScriptedApi
from tests.test_economizer_models import (DIGEST, STUCK, WIRES, Failure, client_for, content_failures, failure, failure_names,
                                          scripted, trace_judge_failures, transport_failures)

pytest.importorskip("anthropic")
pytest.importorskip("openai")

PASSING = (Step("python -m pytest tests", "3 passed", 0), Step("ls", "", 0))
LOOP = Step("sed -i 's/x/y/' a.py && python -m pytest tests/test_a.py", "FAILED tests/test_a.py::t - AssertionError: 1 != 2", 1)
PASSED = [Trajectory(f"o__r-{i}", PASSING, True) for i in range(1, 5)]
LOOPING = PASSED + [Trajectory(f"o__r-{i}", (LOOP,) * 20, False) for i in (5, 6)]

# The system prompts' openings, by call (model_calls' prompts).
MARKERS = {"proposer": "You watch a coding agent", "trace_judge": "You judge whether a coding agent is stuck",
           "redirect_writer": "A coding agent is looping", "tool_judge": "You decide which optional tools"}
PROPOSAL = json.dumps({"skills": [{
    "id": "pytest-runs", "claim": "pytest runs the tests", "injection": "Run the tests with `python -m pytest`.",
    "detector": {"scope": "ran_tests", "confirm": {"command": "python -m pytest", "exit_zero": True}},
    "cite": ["o__r-1", "o__r-2", "o__r-3"]}]})
NOTHING = json.dumps({"skills": []})
REDIRECT = "You edit a.py and rerun the same failing test each turn. Print both sides of the assertion first."
TOOLS = json.dumps({"load": ["search"], "drop": ["browser"]})


class Serve:
    """Answers each call by its system prompt: the failing call from its failure's script, in a
    cycle (a call and its retries take the script in turn), every other call validly."""

    def __init__(self, failing: str, broken: Failure, answers: dict[str, str]) -> None:
        self.failing = MARKERS[failing]
        self.script = itertools.cycle(broken.script)
        self.answers = {MARKERS[kind]: text for kind, text in answers.items()}

    def __call__(self, body: dict[str, Any]) -> Action:
        sent = json.dumps(body)
        if self.failing in sent:
            return next(self.script)
        return next(Answer(text) for marker, text in self.answers.items() if marker in sent)


def feed(api: ScriptedApi, provider: str, stream: bool, retries: int, trajectories: list[Trajectory]) -> Controller:
    controller = Controller("o/r")
    calls = ModelCalls(client_for(api, provider, stream, retries, timeout_s=0.3)).controllers(tool_judge=False)
    for trajectory in trajectories:
        controller.feed(trajectory, calls)
    return controller


def feed_reference(controllers: Controllers, trajectories: list[Trajectory]) -> Controller:
    controller = Controller("o/r")
    for trajectory in trajectories:
        controller.feed(trajectory, controllers)
    return controller


def assert_same_state(ours: Controller, reference: Controller) -> None:
    """Equal state and records, calls compared by kind (a refused answer's tokens are charged)."""
    assert to_json(ours) == to_json(reference)
    strip = lambda records: [{**record_to_json(r), "calls": [c["kind"] for c in record_to_json(r)["calls"]]} for r in records]
    assert strip(ours.records) == strip(reference.records)


def charged(controller: Controller, kind: str) -> bool:
    return any(c.usage != Usage() for r in controller.records for c in r.calls if c.kind == kind)


nothing_proposed = lambda repository, ids, digests: ProposerAnswer(())


# --- the proposer ---------------------------------------------------------------------------------

PROPOSER_CONTENT = {
    "not JSON": ("here are my skills", "not JSON"),
    "wrong skill shape": (json.dumps({"skills": [{"id": "x", "injection": "y", "detector": {"scope": "ran_tests"}, "cite": []}]}), "confirm"),
}


def proposer_failures(provider: str) -> list[Failure]:
    return transport_failures(provider, PROPOSAL) + content_failures(PROPOSER_CONTENT)


@pytest.mark.parametrize("provider, stream", WIRES)
def test_the_proposal_the_failures_carry_is_admitted_when_it_arrives(provider: str, stream: bool) -> None:
    with ScriptedApi(responder=lambda body: Answer(PROPOSAL)) as api:
        assert list(feed(api, provider, stream, 0, PASSED).skills) == ["pytest-runs"]


@pytest.mark.parametrize("provider, stream", WIRES)
@pytest.mark.parametrize("name", failure_names(proposer_failures))
def test_a_failed_proposer_leaves_the_state_as_no_proposal_would(provider: str, stream: bool, name: str) -> None:
    """Task 4 is the proposer's only call: it fails, and the state is exactly that of a
    controller whose proposer proposed nothing, but for the tokens charged to task 4."""
    broken = failure(proposer_failures, provider, name)
    with ScriptedApi(responder=Serve("proposer", broken, {})) as api:
        controller = feed(api, provider, stream, broken.retries, PASSED)
        assert len(api.requests) == (1 if name == "bad key, not retried" else broken.retries + 1)
    reference = feed_reference(Controllers(nothing_proposed, not_stuck, template_redirect, None), PASSED)
    assert [c.kind for c in controller.records[-1].calls] == ["proposer"] and controller.skills == {}
    assert charged(controller, "proposer") == broken.charged
    assert_same_state(controller, reference)


# --- the trace judge and the redirect writer, through the controller's guard ----------------------


@pytest.mark.parametrize("provider, stream", WIRES)
def test_the_verdict_the_failures_carry_redirects_when_it_arrives(provider: str, stream: bool) -> None:
    answers = {"proposer": NOTHING, "trace_judge": STUCK, "redirect_writer": json.dumps({"redirect": REDIRECT})}
    with ScriptedApi(responder=lambda body: next(Answer(t) for k, t in answers.items() if MARKERS[k] in json.dumps(body))) as api:
        controller = feed(api, provider, stream, 0, LOOPING)
    judged = [d for r in controller.records for d in r.decisions if d.action == "redirect" and not d.forced]
    assert judged and judged[0].text == REDIRECT  # the judge's verdict acted, in the writer's words


@pytest.mark.parametrize("provider, stream", WIRES)
@pytest.mark.parametrize("name", failure_names(trace_judge_failures))
def test_a_failed_trace_judge_leaves_the_state_as_the_no_model_judge(provider: str, stream: bool, name: str) -> None:
    """Every trace judge call fails: only the forced rule acts, as with the never-stuck judge."""
    broken = failure(trace_judge_failures, provider, name)
    answers = {"proposer": NOTHING, "redirect_writer": json.dumps({"redirect": REDIRECT})}
    with ScriptedApi(responder=Serve("trace_judge", broken, answers)) as api:
        controller = feed(api, provider, stream, broken.retries, LOOPING)
    writer = lambda digest: RedirectText(REDIRECT)
    reference = feed_reference(Controllers(nothing_proposed, not_stuck, writer, None), LOOPING)
    assert any(r.decisions for r in controller.records)  # the forced rule still acted
    assert charged(controller, "trace_judge") == broken.charged
    assert_same_state(controller, reference)


REDIRECT_CONTENT = {
    "not JSON": ("Try printing the values.", "not JSON"),
    "too short": (json.dumps({"redirect": "Try again."}), "shorter"),
}


def redirect_failures(provider: str) -> list[Failure]:
    return transport_failures(provider, json.dumps({"redirect": REDIRECT})) + content_failures(REDIRECT_CONTENT)


@pytest.mark.parametrize("provider, stream", WIRES)
@pytest.mark.parametrize("name", failure_names(redirect_failures))
def test_a_failed_redirect_writer_leaves_the_state_as_the_template_writer(provider: str, stream: bool, name: str) -> None:
    broken = failure(redirect_failures, provider, name)
    verdict = json.loads(STUCK)
    with ScriptedApi(responder=Serve("redirect_writer", broken, {"proposer": NOTHING, "trace_judge": STUCK})) as api:
        controller = feed(api, provider, stream, broken.retries, LOOPING)
    judge = lambda digest: Verdict(True, Fraction(9, 10), verdict["reason"])
    reference = feed_reference(Controllers(nothing_proposed, judge, template_redirect, None), LOOPING)
    redirects = [d for r in controller.records for d in r.decisions if d.action == "redirect"]
    assert redirects and all(d.text != REDIRECT for d in redirects)
    assert charged(controller, "redirect_writer") == broken.charged
    assert_same_state(controller, reference)


# --- the two calls on their own, over every wire variant -----------------------------------------


@pytest.mark.parametrize("provider, stream", WIRES)
@pytest.mark.parametrize("name", failure_names(redirect_failures))
def test_a_failed_redirect_writer_falls_back_to_the_template(provider: str, stream: bool, name: str) -> None:
    broken = failure(redirect_failures, provider, name)
    with ScriptedApi(scripted(broken)) as api:
        written = ModelCalls(client_for(api, provider, stream, broken.retries, timeout_s=0.3)).write_redirect(DIGEST)
    assert written.text == template_redirect(DIGEST).text
    assert (written.usage != Usage()) == broken.charged


TOOL_JUDGE_CONTENT = {
    "not JSON": ("load everything", "not JSON"),
    "missing a field": (json.dumps({"load": []}), "drop"),
}


def tool_judge_failures(provider: str) -> list[Failure]:
    return transport_failures(provider, TOOLS) + content_failures(TOOL_JUDGE_CONTENT)


@pytest.mark.parametrize("provider, stream", WIRES)
@pytest.mark.parametrize("name", failure_names(tool_judge_failures))
def test_a_failed_tool_judge_loads_every_candidate(provider: str, stream: bool, name: str) -> None:
    broken = failure(tool_judge_failures, provider, name)
    with ScriptedApi(scripted(broken)) as api:
        judged = ModelCalls(client_for(api, provider, stream, broken.retries, timeout_s=0.3)).judge_tools("task", ("browser", "search"))
    assert judged.answer is None
    assert (judged.usage != Usage()) == broken.charged
    with ScriptedApi([Answer(TOOLS)]) as api:  # the same answer, arriving whole, drops a tool
        assert ModelCalls(client_for(api, provider, stream)).judge_tools("task", ("browser", "search")).answer == {"browser": False, "search": True}
