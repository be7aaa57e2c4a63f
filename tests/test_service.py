"""`ledger serve`: a real service process, called the ways agents call it.

What is checked: a repeat is reused and an edit is seen (by the resident detector, no scan);
the answers are the same over the socket, the thin client, HTTP and today's in-process hook;
after `kill -9` a change made while the service was down is never missed (the first step is
unknown scope); the thin client falls back to the in-process hook when no service can start;
it imports nothing of Ledger; the service exits when idle, never writes into a workspace, and
shows a degraded detector.
"""

from __future__ import annotations

import fcntl
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

from ledger_impl.detectors import SESSION_DETECTOR_VARIABLE
from ledger_impl.service.server import Service
from ledger_spec.degraded import Cause, Degraded
from service_calls import (READ, THIN, Served, by_client, by_http, by_socket, http_post, in_process, post, pre, settled,
                           workspace)


@pytest.fixture
def ws(tmp_path: pathlib.Path) -> pathlib.Path:
    return workspace(tmp_path / "ws")


@pytest.fixture
def served(tmp_path: pathlib.Path):
    service = Served(tmp_path / "state")
    yield service
    service.stop()


def reused(reply: dict | None) -> str | None:
    """The output a reply serves instead of running the command, or None if it lets it run."""
    output = (reply or {}).get("hookSpecificOutput", {})
    if output.get("permissionDecision") != "deny":
        return None
    return output["permissionDecisionReason"].split("\n", 1)[1]


def observe(state: pathlib.Path, root: pathlib.Path, call_id: str, output: str, call=by_http) -> dict | None:
    """One read through the service: decided, then recorded with `output`; the decision's reply."""
    reply = call(state, pre(call_id, READ, root))
    if reused(reply) is None:
        call(state, post(call_id, READ, output, root))
        settled(state, root)
    return reply


def test_a_repeat_is_reused_and_an_edit_is_seen(served: Served, ws: pathlib.Path) -> None:
    assert reused(observe(served.state, ws, "t1", "one")) is None
    assert reused(by_http(served.state, pre("t2", READ, ws))) == "one"
    (ws / "a.txt").write_text("two\n")  # an edit no hook saw: the resident detector must
    assert reused(observe(served.state, ws, "t3", "two")) is None
    assert reused(by_http(served.state, pre("t4", READ, ws))) == "two"
    (workspace,) = served.status()["workspaces"]
    assert workspace["root"] == str(ws.resolve()) and workspace["detector"] == "resident-inotify"
    assert workspace["degraded"] is None
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt", "b.txt"]  # nothing written into the workspace


def script(root: pathlib.Path) -> list[tuple[str, dict]]:
    """Hook calls with the workspace edits between them (`write` steps), as one agent session
    (a session id of its own: a service routes a registered session's calls to its root)."""
    session = f"session-{root.name}"
    grep = "grep -n e b.txt"
    return [
        ("call", {"hook_event_name": "SessionStart", "session_id": session, "cwd": str(root)}),
        ("call", pre("t1", READ, root, session)), ("call", post("t1", READ, "one", root, session)),
        ("call", pre("t2", READ, root, session)),
        ("write", {"a.txt": "two\n"}),
        ("call", pre("t3", READ, root, session)), ("call", post("t3", READ, "two", root, session)),
        ("call", pre("t4", grep, root, session)), ("call", post("t4", grep, "1:bee", root, session)),
        ("call", pre("t5", READ, root, session)),
        ("call", {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": str(root), "prompt": "go on"}),
    ]


def test_answers_are_identical_across_transports(tmp_path: pathlib.Path) -> None:
    """The same session, replayed on identical workspaces: once through today's in-process hook
    (the reference), once per transport of one service."""
    def replies(call, state: pathlib.Path, root: pathlib.Path) -> list:
        workspace(root)
        answers = []
        for kind, step in script(root):
            if kind == "write":
                for name, text in step.items():
                    (root / name).write_text(text)
            else:
                answers.append(call(state, step))
                if step["hook_event_name"] == "PostToolUse":
                    settled(state, root)  # the probe that runs after the answer has confirmed it
        return answers

    expected = replies(in_process, tmp_path / "reference", tmp_path / "ref")
    assert reused(expected[3]) == "one" and reused(expected[-2]) == "two"  # the script exercises Reuse
    service = Served(tmp_path / "state")
    try:
        calls = {"socket": lambda s, p: by_socket(s, p)["reply"], "client": lambda s, p: by_client(s, p)[0],
                 "http": by_http}
        got = {name: replies(call, service.state, tmp_path / name) for name, call in calls.items()}
    finally:
        service.stop()
    assert got == {name: expected for name in calls}


def test_after_kill_9_a_change_made_while_down_is_never_missed(tmp_path: pathlib.Path, ws: pathlib.Path) -> None:
    """A listing's fingerprint does not cover the files in it: only the first step after the
    restart being unknown scope keeps the old listing from being served (seen failing with the
    restart reported as "no change")."""
    state, listing = tmp_path / "state", "ls"
    service = Served(state)
    by_http(state, pre("t1", listing, ws))
    by_http(state, post("t1", listing, "a.txt\nb.txt", ws))
    settled(state, ws)
    assert reused(by_http(state, pre("t2", listing, ws))) == "a.txt\nb.txt"
    service.kill()
    (ws / "c.txt").write_text("made while the service was down\n")
    service = Served(state)
    try:
        assert reused(by_http(state, pre("t3", listing, ws))) is None
        by_http(state, post("t3", listing, "a.txt\nb.txt\nc.txt", ws))
        settled(state, ws)
        assert reused(by_http(state, pre("t4", listing, ws))) == "a.txt\nb.txt\nc.txt"
    finally:
        service.stop()


@pytest.mark.skipif(shutil.which("watchman") is None, reason="no watchman binary on PATH (.ci/run installs it)")
def test_with_watchman_an_edit_a_listing_change_and_a_restart_are_seen(
    tmp_path: pathlib.Path, ws: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service's Watchman detector keeps its baseline in memory and looks only at the
    directories inotify names: an edit, a name made and removed between two calls, and a
    change made while the service was down must each cost the Reuse."""
    monkeypatch.setenv(SESSION_DETECTOR_VARIABLE, "watchman")
    state, listing = tmp_path / "state", "ls"
    (ws / "sub").mkdir()
    service = Served(state)
    try:
        assert reused(observe(state, ws, "t1", "one")) is None
        assert reused(by_http(state, pre("t2", READ, ws))) == "one"
        (ws / "a.txt").write_text("two\n")
        assert reused(observe(state, ws, "t3", "two")) is None
        by_http(state, pre("t4", listing, ws))
        by_http(state, post("t4", listing, "a.txt\nb.txt\nsub", ws))
        settled(state, ws)
        assert reused(by_http(state, pre("t5", listing, ws))) == "a.txt\nb.txt\nsub"
        (workspace,) = service.status()["workspaces"]
        assert workspace["detector"] == "resident-watchman"
        service.kill()
        (ws / "c.txt").write_text("made while the service was down\n")
        service = Served(state)
        assert reused(by_http(state, pre("t6", listing, ws))) is None
        by_http(state, post("t6", listing, "a.txt\nb.txt\nc.txt\nsub", ws))
        settled(state, ws)
        assert reused(by_http(state, pre("t7", listing, ws))) == "a.txt\nb.txt\nc.txt\nsub"
    finally:
        service.stop()


def test_the_thin_client_starts_the_service_and_falls_back_when_it_cannot(tmp_path: pathlib.Path, ws: pathlib.Path) -> None:
    state = tmp_path / "state"
    env = {**os.environ, "LEDGER_HOOK_START_WAIT_S": "0.5"}
    (state / "service").mkdir(parents=True)
    with open(state / "service" / "lock", "a+") as lock:  # a service that never answers holds the lock
        fcntl.flock(lock, fcntl.LOCK_EX)
        reply, stderr = by_client(state, pre("t1", READ, ws), env=env)
        assert reply is None and "answered in process" in stderr
        by_client(state, post("t1", READ, "one", ws), env=env)
        reply, stderr = by_client(state, pre("t2", READ, ws), env=env)
        assert reused(reply) == "one" and "answered in process" in stderr  # the fallback keeps the session
    # No lock held now: the client starts the service itself and is answered by it.
    try:
        reply, stderr = by_client(state, pre("t3", READ, ws), env={**os.environ, "LEDGER_HOOK_START_WAIT_S": "30"})
        assert stderr == "" and reused(reply) is None  # its first step: unknown scope after the fallback's writes
        status = json.loads(subprocess.run([sys.executable, "-m", "ledger_cli.main", "serve", "status", "--state-dir",
                                            str(state)], capture_output=True, text=True, timeout=60).stdout)
        assert status["workspaces"][0]["calls"] == 1
    finally:
        subprocess.run([sys.executable, "-m", "ledger_cli.main", "serve", "stop", "--state-dir", str(state)],
                       capture_output=True, timeout=60)


def test_the_thin_client_imports_only_the_standard_library_and_little_of_it(served: Served, ws: pathlib.Path) -> None:
    observe(served.state, ws, "t1", "one", call=lambda s, p: by_client(s, p)[0])
    done = subprocess.run([sys.executable, "-S", "-X", "importtime", str(THIN), "claude", "--state-dir", str(served.state)],
                          input=json.dumps(pre("t2", READ, ws)), capture_output=True, text=True, timeout=60)
    assert reused(json.loads(done.stdout)) == "one"  # answered by the service, not the fallback
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "_socket" in modules  # the list is real
    ours = sorted(m for m in modules if m.split(".")[0] in ("ledger_impl", "ledger_spec", "ledger_cli", "attrs", "economizer"))
    assert ours == []
    # Each of these costs about a bare interpreter's start; a call served needs none of them.
    assert not modules & {"json", "socket", "subprocess", "re", "enum"}, sorted(modules)


def test_serve_status_stop_and_a_second_instance(served: Served, tmp_path: pathlib.Path) -> None:
    second = subprocess.run([sys.executable, "-m", "ledger_cli.main", "serve", "--state-dir", str(served.state)],
                            capture_output=True, text=True, timeout=60)
    assert second.returncode == 0 and "already serves" in second.stdout
    assert served.status()["pid"] == served.process.pid
    stop = subprocess.run([sys.executable, "-m", "ledger_cli.main", "serve", "stop", "--state-dir", str(served.state)],
                          capture_output=True, text=True, timeout=60)
    assert stop.returncode == 0 and served.process.wait(30) == 0
    assert not (served.state / "service" / "socket").exists()
    status = subprocess.run([sys.executable, "-m", "ledger_cli.main", "serve", "status", "--state-dir", str(served.state)],
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 1 and "no service runs" in status.stderr


def test_an_idle_service_exits(tmp_path: pathlib.Path, ws: pathlib.Path) -> None:
    service = Served(tmp_path / "state", "--idle-timeout", "1")
    try:
        assert service.process.wait(20) == 0
    finally:
        service.stop()


def test_a_degraded_detector_is_shown(tmp_path: pathlib.Path, ws: pathlib.Path) -> None:
    service = Service(tmp_path / "state")
    service.start()
    try:
        assert "systemMessage" not in (by_socket(service.layout.state_dir, pre("t1", READ, ws))["reply"] or {})
        (workspace,) = service.workspaces.all()
        reason = Degraded(Cause.DIRECTORY_UNWATCHABLE, ("src", "watch limit reached (test)"))
        workspace.call(lambda _: workspace.detector._events._degrade(reason), os.environ)
        reply = by_socket(service.layout.state_dir, pre("t2", "ls", ws))["reply"]
        assert f"detector degraded: {reason.text()}" in reply["systemMessage"]
        assert service.status()["workspaces"][0]["degraded"] == reason.text()
    finally:
        service.stop()
        service.close()


def test_the_service_answers_a_reuse_as_each_installed_hook_asks(served: Served, ws: pathlib.Path) -> None:
    """`?reuse_answer=reference` on the HTTP hook's URL and `--reuse-answer reference` on the thin
    client reach the session; a hook installed without them still gets the output verbatim."""

    def by_reference(state: pathlib.Path, payload: dict) -> dict | None:
        status, body = http_post(state, payload, query="?reuse_answer=reference")
        assert status == 200, body
        return body or None

    def answer(reply: dict | None) -> str:
        return reply["hookSpecificOutput"]["permissionDecisionReason"]  # type: ignore[index]

    reference = ("--reuse-answer", "reference")
    text = "one, " * 39 + "one."  # longer than the note, so that a reference is worth sending
    (ws / "a.txt").write_text(text + "\n")
    # The thin client first: it registers the session's environment, which its later HTTP calls use.
    assert by_client(served.state, pre("t1", READ, ws), options=reference)[0] is None
    by_client(served.state, post("t1", READ, text, ws), options=reference)  # the delivery, recorded
    settled(served.state, ws)  # the probe confirms it (as Claude shows it: stripped)
    assert "the result you received for step 1" in answer(by_reference(served.state, pre("t2", READ, ws)))
    assert reused(by_http(served.state, pre("t3", READ, ws))) == text, "an install without the setting"
    compaction = {"hook_event_name": "PreCompact", "session_id": "s1", "cwd": str(ws), "trigger": "auto"}
    assert by_client(served.state, compaction, options=reference)[0] is None
    assert reused(by_reference(served.state, pre("t5", READ, ws))) == text, "after a compaction: verbatim"
    assert http_post(served.state, pre("t6", READ, ws), query="?reuse_answer=sometimes")[0] == 400


def test_the_service_answers_verbatim_and_says_so_when_a_plugin_cannot_reference(served: Served, ws: pathlib.Path) -> None:
    """Codex's thin client with `--reuse-answer reference` (hand-written: install refuses it): the
    service does not fail the call, the Reuse is the stored output, and the user is told."""
    reference = ("--reuse-answer", "reference")
    first, _ = by_client(served.state, pre("t1", READ, ws), agent="codex", options=reference)
    assert "--reuse-answer reference is not available" in first["systemMessage"], first  # type: ignore[index]
    finished = {**pre("t1", READ, ws), "hook_event_name": "PostToolUse", "tool_response": {"output": "one\n", "exit_code": 0}}
    by_client(served.state, finished, agent="codex", options=reference)
    settled(served.state, ws)
    second, _ = by_client(served.state, pre("t2", READ, ws), agent="codex", options=reference)
    assert reused(second) == "one\n" and "not available" in second["systemMessage"], second  # type: ignore[index]
