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

Not covered here, only by payload tests (tests/agents/test_claude_reference.py): `/clear`
(an interactive command) and `--resume`. A resumed conversation is a new Claude process, whose
environment (CLAUDE_PID, CLAUDE_CODE_MESSAGING_SOCKET, ...) is part of every read's
fingerprint, so no result of the earlier process is reused at all: there is no Reuse to
answer either way.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from probes_settled import settle
from scripted_models import ScriptedModel, ScriptedServer, Turn
import pytest
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
