"""Every model call of a run recorded, and the run replayed offline with identical decisions."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from economizer.codec import record_to_json
from economizer.controller import Controller, to_json
from economizer.model_calls import ModelCalls
from economizer.model_recording import Recorder, Replayer, ReplayDiverged
from economizer_spec.cost import Prices
from economizer_spec.trajectory import Step, Trajectory
from tests.economizer_scripted_api import Answer, Malformed, ScriptedApi, Status
from tests.test_economizer_models import WIRES, client_for

pytest.importorskip("anthropic")
pytest.importorskip("openai")

PASSING = (Step("python -m pytest tests", "3 passed", 0), Step("ls", "", 0))
LOOP = Step("sed -i 's/x/y/' a.py && python -m pytest tests/test_a.py", "FAILED tests/test_a.py::t - AssertionError: 1 != 2", 1)


def stream() -> list[Trajectory]:
    return [Trajectory(f"o__r-{i}", PASSING, True) for i in range(1, 5)] + [Trajectory(f"o__r-{i}", (LOOP,) * 20, False) for i in (5, 6)]


def answer(body: dict[str, Any]) -> Answer:
    """What the scripted model says, by the call its system prompt asks for."""
    system = json.dumps(body)
    if "micro-skill" in system:
        skill = {"id": "pytest", "claim": "pytest runs the tests", "injection": "Run the tests with `python -m pytest`.",
                 "detector": {"scope": "ran_tests", "confirm": {"command": "python -m pytest", "exit_zero": True}},
                 "cite": ["o__r-1", "o__r-2", "o__r-3", "owner__repo-1", "owner__repo-2"]}  # the in-process and the CLI streams
        return Answer(json.dumps({"skills": [skill]}), usage=(900, 0, 0, 200))
    if "unproductive loop" in system:
        return Answer(json.dumps({"stuck": True, "confidence": 0.9, "reason": "the same assertion fails after each edit"}))
    return Answer(json.dumps({"redirect": "You edit a.py and rerun the same failing test each turn. Print both sides of the assertion first."}))


def run(client: Any) -> Controller:
    controller = Controller("o/r")
    controllers = ModelCalls(client).controllers(tool_judge=False)
    for trajectory in stream():
        controller.feed(trajectory, controllers)
    return controller


@pytest.mark.parametrize("provider, stream_answers", WIRES)
def test_a_recorded_run_replays_offline_with_identical_decisions(tmp_path: pathlib.Path, provider: str, stream_answers: bool) -> None:
    recording = tmp_path / "calls.jsonl"
    with ScriptedApi(responder=answer) as api:
        recorder = Recorder(client_for(api, provider, stream_answers), recording, Prices(3, "0.3", "3.75", 15))
        live = run(recorder)
        recorder.close()
        served = len(api.requests)
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    kinds = [line["request"]["kind"] for line in lines]
    assert len(lines) == served and kinds[0] == "proposer" and {"trace_judge", "redirect_writer"} <= set(kinds)
    assert lines[0]["usage"]["uncached_input"] == 900 and lines[0]["cost_usd"] == pytest.approx((900 * 3 + 200 * 15) / 1e6)
    decisions = [d.action for r in live.records for d in r.decisions]
    assert "redirect" in decisions and "stop" in decisions and live.skills  # the model's answers acted
    replayer = Replayer(recording)  # the server is gone: nothing can reach a model now
    replayed = run(replayer)
    replayer.close()
    assert [record_to_json(r) for r in replayed.records] == [record_to_json(r) for r in live.records]
    assert to_json(replayed) == to_json(live)


def test_a_replay_that_asks_something_else_is_refused(tmp_path: pathlib.Path) -> None:
    recording = tmp_path / "calls.jsonl"
    with ScriptedApi(responder=answer) as api:
        recorder = Recorder(client_for(api, "openai", False), recording)
        run(recorder)
        recorder.close()
    lines = recording.read_text().splitlines()
    changed = json.loads(lines[1])
    changed["request"]["user"] = changed["request"]["user"].replace("a.py", "b.py")
    (tmp_path / "edited.jsonl").write_text("\n".join([lines[0], json.dumps(changed), *lines[2:]]) + "\n")
    with pytest.raises(ReplayDiverged, match="call 2"):
        run(Replayer(tmp_path / "edited.jsonl"))
    (tmp_path / "short.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(ReplayDiverged, match="more calls"):
        run(Replayer(tmp_path / "short.jsonl"))
    replayer = Replayer(recording)
    replayer.complete  # noqa: B018
    with pytest.raises(ReplayDiverged, match="0 of"):
        replayer.close()  # a replay that stops early is not the recorded run either


# --- the command line --------------------------------------------------------------------------


def _rows() -> list[dict]:
    from tests.test_economizer_cli import row

    passing = [(s.command, s.output, s.returncode) for s in PASSING]
    loop = [(LOOP.command, LOOP.output, LOOP.returncode)] * 20
    return [row(f"owner__repo-{i}", passing) for i in range(1, 5)] + [row("owner__repo-5", loop, resolved=False)]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_feed_with_a_model_records_and_replays(tmp_path: pathlib.Path, monkeypatch, capsys, provider: str) -> None:
    from ledger_cli.main import main
    from tests.test_economizer_cli import snapshot, write

    runs = write(tmp_path / "runs.jsonl", _rows())
    recording = tmp_path / "calls.jsonl"
    variable = "ANTHROPIC" if provider == "anthropic" else "OPENAI"
    monkeypatch.delenv(f"{variable}_API_KEY", raising=False)
    assert main(["economize", "feed", str(runs), "--state-dir", str(tmp_path / "s0"), "--model", f"{provider}:scripted"]) == 2
    assert f"${variable}_API_KEY" in capsys.readouterr().err and snapshot(tmp_path / "s0") == {}
    with ScriptedApi(responder=answer) as api:
        monkeypatch.setenv(f"{variable}_API_KEY", "test-key")
        monkeypatch.setenv(f"{variable}_BASE_URL", api.base_url + ("" if provider == "anthropic" else "/v1"))
        assert main(["economize", "feed", str(runs), "--state-dir", str(tmp_path / "s1"), "--json",
                     "--model", f"{provider}:scripted", "--record", str(recording), "--stream"]) == 0
        live = json.loads(capsys.readouterr().out)
        assert api.requests
    monkeypatch.delenv(f"{variable}_API_KEY")
    assert main(["economize", "feed", str(runs), "--state-dir", str(tmp_path / "s2"), "--json", "--replay", str(recording)]) == 0
    assert json.loads(capsys.readouterr().out) == live
    assert any(d["action"] == "redirect" for item in live for d in item["decisions"])
    assert any(call["kind"] == "proposer" and call["uncached_input"] == 900 for item in live for call in item["calls"])
    other = write(tmp_path / "other.jsonl", _rows()[:4])  # stops before the judged task: calls left over
    assert main(["economize", "feed", str(other), "--state-dir", str(tmp_path / "s3"), "--replay", str(recording)]) == 2
    assert "recorded calls" in capsys.readouterr().err and snapshot(tmp_path / "s3") in ({}, {"owner__repo.sqlite3": ([], [])})


def test_guard_with_a_model_redirects_in_its_words_and_replays(tmp_path: pathlib.Path, monkeypatch, capsys) -> None:
    from ledger_cli.main import main
    from tests.test_economizer_cli import row, write

    state = tmp_path / "state"
    assert main(["economize", "feed", str(write(tmp_path / "runs.jsonl", _rows()[:4])), "--state-dir", str(state)]) == 0
    partial = write(tmp_path / "partial.jsonl", [row("owner__repo-9", [(LOOP.command, LOOP.output, 1)] * 3, resolved=False)])
    recording = tmp_path / "guard.jsonl"
    capsys.readouterr()
    with ScriptedApi(responder=answer) as api:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url + "/v1")
        assert main(["economize", "guard", "owner/repo", str(partial), "--state-dir", str(state),
                     "--model", "openai:scripted", "--record", str(recording)]) == 0
        live = json.loads(capsys.readouterr().out)
        assert [json.loads(line)["request"]["kind"] for line in recording.read_text().splitlines()] == ["trace_judge", "redirect_writer"]
    assert live["action"] == "redirect" and "Print both sides of the assertion" in live["nudge"]
    assert main(["economize", "guard", "owner/repo", str(partial), "--state-dir", str(state), "--replay", str(recording)]) == 0
    assert json.loads(capsys.readouterr().out) == live
    assert main(["economize", "guard", "owner/repo", str(partial), "--state-dir", str(state), "--replay", str(recording),
                 "--model", "anthropic:scripted"]) == 2  # the recording is of another model


def _serve_provider(monkeypatch, api: ScriptedApi, provider: str) -> None:
    variable = "ANTHROPIC" if provider == "anthropic" else "OPENAI"
    monkeypatch.setenv(f"{variable}_API_KEY", "test-key")
    monkeypatch.setenv(f"{variable}_BASE_URL", api.base_url + ("" if provider == "anthropic" else "/v1"))


@pytest.mark.parametrize("stream_answers", [False, True])
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_feed_with_a_model_and_no_recording_stores_the_models_skills(tmp_path: pathlib.Path, monkeypatch, capsys, provider: str, stream_answers: bool) -> None:
    """The plain SDK client (neither --record nor --replay) through a whole feed: the model's
    skill is admitted, its judge redirects, and the state is stored."""
    from ledger_cli.main import main
    from tests.test_economizer_cli import snapshot, write

    runs = write(tmp_path / "runs.jsonl", _rows())
    state = tmp_path / "state"
    with ScriptedApi(responder=answer) as api:
        _serve_provider(monkeypatch, api, provider)
        assert main(["economize", "feed", str(runs), "--state-dir", str(state), "--json", "--model", f"{provider}:scripted"]
                    + (["--stream"] if stream_answers else [])) == 0
        served = [json.dumps(body) for _, body in api.requests]
    out = json.loads(capsys.readouterr().out)
    assert any("micro-skill" in body for body in served) and any("unproductive loop" in body for body in served)
    assert any(d["action"] == "redirect" for item in out for d in item["decisions"])
    assert any(call["kind"] == "proposer" and call["uncached_input"] == 900 for item in out for call in item["calls"])
    stored = snapshot(state)
    assert len(stored["owner__repo.sqlite3"][1]) == 5  # every task's row committed
    assert main(["economize", "show", "owner/repo", "--state-dir", str(state), "--json"]) == 0
    assert "pytest" in json.loads(capsys.readouterr().out)["skills"]  # the model's proposed skill, admitted


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_guard_with_a_model_and_no_recording_redirects_in_its_words(tmp_path: pathlib.Path, monkeypatch, capsys, provider: str) -> None:
    from ledger_cli.main import main
    from tests.test_economizer_cli import row, snapshot, write

    state = tmp_path / "state"
    assert main(["economize", "feed", str(write(tmp_path / "runs.jsonl", _rows()[:4])), "--state-dir", str(state)]) == 0
    before = snapshot(state)
    partial = write(tmp_path / "partial.jsonl", [row("owner__repo-9", [(LOOP.command, LOOP.output, 1)] * 3, resolved=False)])
    capsys.readouterr()
    with ScriptedApi(responder=answer) as api:
        _serve_provider(monkeypatch, api, provider)
        assert main(["economize", "guard", "owner/repo", str(partial), "--state-dir", str(state), "--model", f"{provider}:scripted"]) == 0
        assert len(api.requests) == 2  # the trace judge, then the redirect writer
    signal = json.loads(capsys.readouterr().out)
    assert signal["action"] == "redirect" and "Print both sides of the assertion" in signal["nudge"]
    assert snapshot(state) == before  # the guard reads the state, never writes it


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_closing_a_client_or_its_recorder_closes_the_sdks_connections(tmp_path: pathlib.Path, provider: str) -> None:
    with ScriptedApi(responder=answer) as api:
        plain, recorded = client_for(api, provider, False), client_for(api, provider, False)
        recorder = Recorder(recorded, tmp_path / "calls.jsonl")
        assert not plain.client.is_closed() and not recorded.client.is_closed()
        plain.close()
        recorder.close()
        assert plain.client.is_closed() and recorded.client.is_closed()


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "warning" in line]


@pytest.mark.parametrize("provider, refusal", [
    ("openai", Status(400)),  # a model that refuses temperature or max_tokens: every request is a bad request
    ("openai", Malformed("{}", ("choices",), ("choices",))),  # "choices": null in every 200
    ("anthropic", Malformed("{}", ("content",), ("message", "content"))),
])
def test_feed_whose_model_calls_all_fail_says_so_in_one_line(tmp_path: pathlib.Path, monkeypatch, capsys, provider: str, refusal) -> None:
    """The feed completes as the failed-call rules say (stored, exit 0), and stderr says that
    every model call failed, how many, and the first error."""
    from ledger_cli.main import main
    from tests.test_economizer_cli import snapshot, write

    runs = write(tmp_path / "runs.jsonl", _rows())
    with ScriptedApi(responder=lambda body: refusal) as api:
        _serve_provider(monkeypatch, api, provider)
        assert main(["economize", "feed", str(runs), "--state-dir", str(tmp_path / "state"), "--model", f"{provider}:scripted",
                     "--model-retries", "0"]) == 0
        asked = len(api.requests)
    warnings = _warnings(capsys.readouterr().err)
    assert asked >= 2 and len(warnings) == 1, warnings
    expected = "BadRequestError" if isinstance(refusal, Status) else "malformed answer"
    assert f"all {asked} model calls to {provider}:scripted failed" in warnings[0] and expected in warnings[0]
    assert len(snapshot(tmp_path / "state")["owner__repo.sqlite3"][1]) == 5


def test_feed_and_guard_whose_model_calls_succeed_warn_of_nothing_and_a_partial_failure_counts(tmp_path: pathlib.Path, monkeypatch, capsys) -> None:
    from ledger_cli.main import main
    from tests.test_economizer_cli import row, write

    runs = write(tmp_path / "runs.jsonl", _rows())
    state = tmp_path / "state"
    with ScriptedApi(responder=answer) as api:
        _serve_provider(monkeypatch, api, "openai")
        assert main(["economize", "feed", str(runs), "--state-dir", str(state), "--model", "openai:scripted"]) == 0
    assert _warnings(capsys.readouterr().err) == []
    partial = write(tmp_path / "partial.jsonl", [row("owner__repo-9", [(LOOP.command, LOOP.output, 1)] * 3, resolved=False)])
    with ScriptedApi([Answer(json.dumps({"stuck": True, "confidence": 0.9, "reason": "loop"})), Answer("not a redirect")]) as api:
        _serve_provider(monkeypatch, api, "openai")
        assert main(["economize", "guard", "owner/repo", str(partial), "--state-dir", str(state), "--model", "openai:scripted"]) == 0
    warnings = _warnings(capsys.readouterr().err)
    assert len(warnings) == 1 and "1 of 2 model calls to openai:scripted failed" in warnings[0] and "not JSON" in warnings[0], warnings


def test_a_recorded_failed_call_replays_as_the_same_failure(tmp_path: pathlib.Path) -> None:
    """A call that failed live (here every trace judge call: a 500, then a 200 with a null
    content list) is recorded with its error and fails the same way in the replay."""
    failures = iter([Status(500), Malformed("{}", ("content",), ("message", "content"))] * 10)
    served = lambda body: next(failures) if "unproductive loop" in json.dumps(body) else answer(body)
    recording = tmp_path / "calls.jsonl"
    with ScriptedApi(responder=served) as api:
        recorder = Recorder(client_for(api, "anthropic", False), recording)
        live = run(recorder)
        recorder.close()
    errors = [json.loads(line)["reply"]["error"] for line in recording.read_text().splitlines()]
    assert any("InternalServerError" in e for e in errors) and any("malformed" in e for e in errors)
    replayer = Replayer(recording)
    replayed = run(replayer)
    replayer.close()
    assert [record_to_json(r) for r in replayed.records] == [record_to_json(r) for r in live.records]
    assert to_json(replayed) == to_json(live)


def test_a_refused_feed_with_a_model_still_closes_its_client(tmp_path: pathlib.Path, monkeypatch, capsys) -> None:
    """Bad input found after the client was made (here: tasks already fed) exits 2 and still
    releases the SDK's connections."""
    from economizer.model_client import SdkClient
    from ledger_cli.main import main
    from tests.test_economizer_cli import write

    runs = write(tmp_path / "runs.jsonl", _rows()[:2])
    state = tmp_path / "state"
    assert main(["economize", "feed", str(runs), "--state-dir", str(state)]) == 0
    closed: list[SdkClient] = []
    real_close = SdkClient.close
    monkeypatch.setattr(SdkClient, "close", lambda self: (closed.append(self), real_close(self)))
    with ScriptedApi(responder=answer) as api:
        _serve_provider(monkeypatch, api, "openai")
        assert main(["economize", "feed", str(runs), "--state-dir", str(state), "--model", "openai:scripted"]) == 2
    assert "already fed" in capsys.readouterr().err
    assert len(closed) == 1 and closed[0].client.is_closed()
