"""End to end with the real Claude Code CLI, `--reuse-answer reference`: what the model gets.

Claude Code 2.1.328 runs Bash and calls Ledger's hooks, installed with `ledger hooks install
claude --reuse-answer reference`, as command hooks and over the service (HTTP hooks whose URL
carries `?reuse_answer=reference`, the thin client for SessionStart and PreCompact). A scripted
model on 127.0.0.1 makes the tool calls (`scripted_models`) and, once, reports a nearly full
context so that Claude compacts the conversation for real (PreCompact, the summary request,
SessionStart "compact"). In one `claude -p` run: a read; the same read, answered by
reference; after the compaction, the same read answered verbatim (with the service: run fresh,
see the test); again, by reference (that answer delivered it in full); an edit through Bash;
the read, run fresh. Which hooks Claude called is read from a log hook installed next to
Ledger's.

`/clear` and `--resume`, with command hooks. `claude -p --input-format stream-json` takes the
user's messages one at a time on stdin, slash commands included (`converse`): a read, its
repeat (by reference), `/clear` (Claude fires SessionStart with source `clear` in the same
process, under a new session id), then the read again. And a first `claude -p` run (a read,
its repeat by reference), then `claude -p --resume <session id>` (SessionStart `resume`) and
the read again. Neither last read is ever answered by reference. As installed, both run fresh:
Claude's environment, part of every read's fingerprint, changes at a clear (a new
CLAUDE_CODE_SESSION_ID) and at a resume (a new process), so nothing is reused at all. With the
hooks' environment fixed (`env -i`), the fingerprint stays and the read is a Reuse, which the
context rule answers verbatim; a rule that ignored epochs and owners sends a reference there
(checked by hand against such a broken `ledger_spec/context.py`). The next prompt's
UserPromptSubmit and the new session id (after `/clear`) start a new epoch too, so which event
did it is pinned by the payload tests (tests/agents/test_claude_reference.py), not here.
"""

from __future__ import annotations

import itertools
import json
import pathlib
import shlex
import subprocess
import sys
import threading

from probes_settled import settle
from scripted_models import ScriptedModel, ScriptedServer, Turn
import pytest

from ledger_cli.commands.hooks import is_ledger_hook
from test_claude_code_e2e import DENIED, READ, bash, claude, stop_service, with_ledger_hooks  # noqa: F401 (claude: a fixture)

REFERENCE = "Its output is the result you received for step"
VERBATIM = "Output, verbatim:\n"


def installed(home: pathlib.Path, state: pathlib.Path, events_log: pathlib.Path, transport: str) -> dict[str, str]:
    """Ledger's hooks installed by reference over `transport`, and a hook that logs each
    SessionStart (with its source) and PreCompact Claude sends to `events_log`."""
    env = with_ledger_hooks(home, state, transport, "--reuse-answer", "reference")
    settings_file = home / ".claude" / "settings.json"
    settings = json.loads(settings_file.read_text())
    logger = (f"{sys.executable} -c \"import json,sys; p=json.load(sys.stdin); "
              f"open({str(events_log)!r},'a').write(p['hook_event_name']+':'+str(p.get('source',''))+'\\n')\"")
    for event in ("SessionStart", "PreCompact"):
        settings["hooks"][event].append({"hooks": [{"type": "command", "command": logger}]})
    settings_file.write_text(json.dumps(settings))
    return env


class CompactingModel(ScriptedModel):
    """The script, served in order of the results received rather than of the tool calls the
    request still holds (a compaction drops them). Once `after`'s result is in, the next answer
    reports a nearly full context, so Claude compacts automatically after running its tool
    call; the compaction request (it asks for an <analysis> and a <summary>) gets a summary."""

    def __init__(self, turns: list[Turn], after: str, workspace: pathlib.Path, state: pathlib.Path) -> None:
        super().__init__(turns, on_results=self._full_once)
        self._after, self._workspace, self._state = after, workspace, state

    def _full_once(self, results: list) -> None:
        self.reported_input_tokens = 150_000 if any(result.tool_use_id == self._after for result in results) else 1
        settle(self._workspace, self._state)  # the next turn comes after the probes of these results

    def respond(self, request: dict) -> list[bytes]:
        if "<summary> block" in str((request.get("messages") or [{}])[-1].get("content")):
            with self._lock:
                self.requests.append(request)
                self.reported_input_tokens = 1
                return self._stream_text("<analysis>a read</analysis>\n<summary>src/app.py was read.</summary>", 0)
        return super().respond(request)

    def turn_index(self, seen: set[str]) -> int:
        return sum(1 for turn in self.turns if not isinstance(turn, str) and all(u.id in self.results for u in turn))


def answer(model: ScriptedModel, use_id: str) -> str:
    return model.results[use_id].content


@pytest.mark.parametrize("transport", ["command", "service"])
def test_a_reference_until_claude_compacts_then_verbatim_then_fresh_after_an_edit(
    claude: pathlib.Path, tmp_path: pathlib.Path, transport: str
) -> None:
    workspace, home, state = tmp_path / "ws", tmp_path / "home", tmp_path / "state"
    for directory in (workspace / "src", home, state):
        directory.mkdir(parents=True)
    # Long enough that a reference is shorter than the verbatim answer.
    (workspace / "src" / "app.py").write_text("x = 1\ny = x + 1\n" + "".join(f"z{n} = y + {n}\n" for n in range(8)))
    events_log = tmp_path / "events.log"
    # The window and threshold Claude compacts at, so that the usage the model reports reaches it.
    env = {**installed(home, state, events_log, transport), "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50",
           "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}
    turns: list[Turn] = [
        (bash("r1", READ),),  # runs: its result reaches the model in full
        (bash("r2", READ),),  # answered by reference, reported with a nearly full context: Claude compacts
        (bash("r3", READ),),  # after the compaction: verbatim
        (bash("r4", READ),),  # by reference again: r3's verbatim answer delivered it in full
        (bash("e1", "sed -i 's/x = 1/x = 2/' src/app.py"),),
        (bash("r5", READ),),  # runs fresh after the edit
        "done",
    ]
    model = CompactingModel(turns, after="r1", workspace=workspace, state=state)
    try:
        with ScriptedServer(model) as url:
            done = subprocess.run([str(claude), "-p", "Read src/app.py.", "--allowedTools", "Bash", "--output-format",
                                   "json"], cwd=workspace, env={**env, "ANTHROPIC_BASE_URL": url}, capture_output=True,
                                  text=True, timeout=300, stdin=subprocess.DEVNULL)
    finally:
        stop_service(state)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert model.errors == []
    events = events_log.read_text().split()
    assert "PreCompact:" in events and "SessionStart:compact" in events, events
    shown = answer(model, "r1")
    assert "x = 1" in shown and not shown.startswith(DENIED)
    assert answer(model, "r2").startswith(DENIED) and REFERENCE in answer(model, "r2"), answer(model, "r2")
    assert "x = 1" not in answer(model, "r2"), "a reference carries no output"
    after_compaction = answer(model, "r3")
    assert REFERENCE not in after_compaction, "never a reference after a compaction"
    if transport == "command":
        assert after_compaction.startswith(DENIED) and VERBATIM in after_compaction, after_compaction
        assert after_compaction.endswith("\n" + shown), "verbatim: the output the model saw at r1"
    else:
        # The thin client's SessionStart "compact" registers the environment Claude gives that
        # hook (its CLAUDE_ENV_FILE differs), which the service's later calls of the session
        # use: the read's fingerprint moved, so it runs fresh instead of being reused.
        assert after_compaction == shown, after_compaction
    assert answer(model, "r4").startswith(DENIED) and REFERENCE in answer(model, "r4"), answer(model, "r4")
    assert not answer(model, "r5").startswith(DENIED) and "x = 2" in answer(model, "r5"), "fresh after the edit"
    print("\n" + json.dumps({"events": events, "r2": answer(model, "r2"), "r3": answer(model, "r3")[:120]}))


class PromptedModel(ScriptedModel):
    """The script in phases of tool calls, one per user prompt that starts with a marker
    (`PHASE2`, ...): a request belongs to the newest phase whose marker its messages hold (phase
    1: none). Within a phase, the next turn is the first whose results have not all arrived, so
    a cleared or resumed conversation, which drops or replays earlier calls, does not move the
    script; once they all have, "done" ends the prompt's turn."""

    def __init__(self, phases: list[list[Turn]], workspace: pathlib.Path, state: pathlib.Path) -> None:
        super().__init__([turn for phase in phases for turn in phase],
                         on_results=lambda _results: settle(workspace, state))
        self.phases = phases
        self._request = threading.local()  # each request is served on a thread of its own

    def respond(self, request: dict) -> list[bytes]:
        messages = json.dumps(request.get("messages"))
        self._request.phase = max([1, *(n for n in range(2, len(self.phases) + 1) if f"PHASE{n}" in messages)])
        return super().respond(request)

    def turn_index(self, seen: set[str]) -> int:
        phase = self.phases[self._request.phase - 1]
        start = sum(len(earlier) for earlier in self.phases[:self._request.phase - 1])
        done = sum(1 for turn in phase if not isinstance(turn, str) and all(u.id in self.results for u in turn))
        return start + done if done < len(phase) else len(self.turns)  # past the end: "done", the prompt's end


def converse(claude: pathlib.Path, workspace: pathlib.Path, env: dict[str, str], prompts: list[str]) -> list[dict]:
    """One `claude -p` process taking `prompts` as user messages on stdin (stream-json), each sent
    once the previous one's `result` came; its stream of events. Killed after 300 s."""
    process = subprocess.Popen(
        [str(claude), "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
         "--allowedTools", "Bash"], cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(300, process.kill)
    watchdog.start()
    pending, events = list(prompts), []
    try:
        assert process.stdin is not None and process.stdout is not None
        for line in itertools.chain([None], process.stdout):  # None: send the first prompt
            event = json.loads(line) if line is not None else {"type": "result"}
            events += [] if line is None else [event]
            if event.get("type") != "result":
                continue
            if pending:
                message = {"type": "user", "message": {"role": "user", "content": pending.pop(0)}}
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()
            else:
                process.stdin.close()
        assert process.wait(60) == 0, process.stderr.read()[-2000:] if process.stderr else ""
    finally:
        watchdog.cancel()
        process.kill()
    assert not pending, f"prompts never sent: {pending}"
    return events


#: How Ledger's hooks see Claude's environment, which is part of every read's fingerprint.
#: "as installed": as Claude passes it. "fixed": the hook commands run under `env -i` with a
#: fixed PATH, HOME and LANG, so that nothing Claude changes at a clear or resume (its session
#: id, its process's variables) moves the fingerprint: the repeated read is then a Reuse, and
#: only the context rule stands between it and a reference.
HOOK_ENVIRONMENTS = ("as installed", "fixed")


def reference_workspace(tmp_path: pathlib.Path, hook_environment: str) -> tuple[
        pathlib.Path, pathlib.Path, pathlib.Path, dict[str, str]]:
    """(workspace, state, events log, environment) with Ledger's command hooks answering by
    reference and the event logger installed, and a file long enough for a reference."""
    workspace, home, state = tmp_path / "ws", tmp_path / "home", tmp_path / "state"
    for directory in (workspace / "src", home, state):
        directory.mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("x = 1\ny = x + 1\n" + "".join(f"z{n} = y + {n}\n" for n in range(8)))
    events_log = tmp_path / "events.log"
    env = installed(home, state, events_log, "command")
    if hook_environment == "fixed":
        settings_file = home / ".claude" / "settings.json"
        fixed = shlex.join(["env", "-i", f"PATH={env['PATH']}", f"HOME={home}", "LANG=C.UTF-8"])
        settings = json.loads(settings_file.read_text())
        for groups in settings["hooks"].values():
            for entry in (entry for group in groups for entry in group["hooks"] if is_ledger_hook(entry)):
                entry["command"] = f"{fixed} {entry['command']}"
        settings_file.write_text(json.dumps(settings))
    return workspace, state, events_log, env


def assert_never_a_reference(model: ScriptedModel, use_id: str, shown: str, hook_environment: str) -> None:
    """`use_id` got the read's output, never a reference: run fresh when Claude's environment
    moved its fingerprint, else served verbatim (the context was replaced since)."""
    got = answer(model, use_id)
    assert REFERENCE not in got, f"{use_id}: a reference after the context was replaced: {got}"
    if hook_environment == "fixed":
        assert got.startswith(DENIED) and VERBATIM in got and got.endswith("\n" + shown), got
    else:
        assert got == shown, f"{use_id}: expected a fresh run, got {got}"


def assert_first_read_then_a_reference(model: ScriptedModel) -> str:
    """r1 ran, r2 was answered by reference; what r1 showed the model."""
    shown = answer(model, "r1")
    assert "x = 1" in shown and not shown.startswith(DENIED)
    assert answer(model, "r2").startswith(DENIED) and REFERENCE in answer(model, "r2"), answer(model, "r2")
    return shown


@pytest.mark.parametrize("hook_environment", HOOK_ENVIRONMENTS)
def test_after_clear_a_repeated_read_is_never_answered_by_reference(
        claude: pathlib.Path, tmp_path: pathlib.Path, hook_environment: str) -> None:
    """As installed, the read after `/clear` runs fresh: Claude gives its tools and hooks a new
    CLAUDE_CODE_SESSION_ID (and CLAUDE_CODE_CHILD_NOTES_DIR), which moves the fingerprint."""
    workspace, state, events_log, env = reference_workspace(tmp_path, hook_environment)
    phases: list[list[Turn]] = [[(bash("r1", READ),), (bash("r2", READ),)],  # runs; by reference
                                [(bash("r3", READ),)]]  # after /clear
    model = PromptedModel(phases, workspace, state)
    with ScriptedServer(model) as url:
        stream = converse(claude, workspace, {**env, "ANTHROPIC_BASE_URL": url},
                          ["Read src/app.py.", "/clear", "PHASE2 Read src/app.py again."])
    assert model.errors == []
    events = events_log.read_text().split()
    assert events.count("SessionStart:clear") == 1, events  # in the same process
    assert any(event.get("type") == "conversation_reset" for event in stream)
    assert_never_a_reference(model, "r3", assert_first_read_then_a_reference(model), hook_environment)


@pytest.mark.parametrize("hook_environment", HOOK_ENVIRONMENTS)
def test_after_resume_a_repeated_read_is_never_answered_by_reference(
        claude: pathlib.Path, tmp_path: pathlib.Path, hook_environment: str) -> None:
    """As installed, the read in the resumed conversation runs fresh: a new Claude process,
    whose variables (CLAUDE_PID, CLAUDE_CODE_MESSAGING_SOCKET, ...) move the fingerprint. The
    resumed request replays r1 and r2, but the hook cannot know what a resume restored."""
    workspace, state, events_log, env = reference_workspace(tmp_path, hook_environment)
    phases: list[list[Turn]] = [[(bash("r1", READ),), (bash("r2", READ),)],  # runs; by reference
                                [(bash("r3", READ),)]]  # in the resumed conversation
    model = PromptedModel(phases, workspace, state)
    runs: list[subprocess.CompletedProcess[str]] = []
    with ScriptedServer(model) as url:
        for prompt in ("Read src/app.py.", "PHASE2 Read src/app.py again."):
            resume = ["--resume", json.loads(runs[0].stdout)["session_id"]] if runs else []
            runs.append(subprocess.run([str(claude), "-p", prompt, *resume, "--allowedTools", "Bash", "--output-format",
                                        "json"], cwd=workspace, env={**env, "ANTHROPIC_BASE_URL": url},
                                       capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL))
            assert runs[-1].returncode == 0, (runs[-1].stdout[-2000:], runs[-1].stderr[-2000:])
    assert model.errors == []
    assert json.loads(runs[1].stdout)["session_id"] == json.loads(runs[0].stdout)["session_id"], "one conversation"
    events = events_log.read_text().split()
    assert events.count("SessionStart:resume") == 1, events
    assert_never_a_reference(model, "r3", assert_first_read_then_a_reference(model), hook_environment)
