"""End to end with the real Claude Code CLI: Ledger's hooks installed, a scripted model.

The model server (127.0.0.1 only) scripts the tool calls; Claude Code really runs Bash, Read
and Edit and really calls `ledger hook claude`. The test checks what came back to the model in
each `tool_result`. An oracle re-runs every read when its result reaches the server (Claude is
waiting then, so the workspace is as the tools left it) and compares it with what the model
got, reused or fresh, under a model of how Claude renders a Bash result; the model itself is
checked against the fresh results.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import agent_cli
from probes_settled import settle
from scripted_models import ScriptedModel, ScriptedServer, ToolResult, ToolUse

DENIED = "PreToolUse:Bash hook error: "
HEADER = re.compile(r"\[ledger\] Not run again: this is the unchanged result of step \d+[^\n]*\n")
READ = "cat -n src/app.py"
MISSING = "ls nothere"
GREP = "grep -n x src/app.py"


@pytest.fixture(scope="module")
def claude() -> pathlib.Path:
    path, why = agent_cli.ensure("claude")
    if path is None:
        pytest.skip(f"real Claude Code end-to-end test skipped: {why}")
    return path


def rendered(command: str, cwd: pathlib.Path) -> str:
    """What Claude Code 2.1's Bash tool shows the model for `command` run now: stdout and stderr
    merged, leading blank lines and trailing whitespace dropped, a placeholder when empty, and
    "Exit code N" first on failure."""
    done = subprocess.run(["bash", "-c", command], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=30)
    text = re.sub(r"\A(?:[ \t]*\n)+", "", done.stdout).rstrip()
    if done.returncode != 0:
        return f"Exit code {done.returncode}" + (f"\n{text}" if text else "")
    return text or "(Bash completed with no output)"


def unwrapped(content: str) -> str:
    """A tool result's output: a Reuse's deny prefix and Ledger's header taken off."""
    if content.startswith(DENIED):
        return HEADER.sub("", content[len(DENIED):], count=1)
    return content


def with_ledger_hooks(home: pathlib.Path, state: pathlib.Path, transport: str = "command", *options: str) -> dict[str, str]:
    """An environment with its own HOME, no telemetry, and Ledger's hooks installed for the user
    over `transport` (`service`: HTTP hooks to `ledger serve`, which the thin client starts),
    with `options` for the install (`--reuse-answer reference`)."""
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
        "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
        "LANG": "C.UTF-8",
    }
    install = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hooks", "install", "claude", "--user",
                              "--state-dir", str(state), "--transport", transport, *options], env=env, capture_output=True, text=True,
                             timeout=120)
    assert install.returncode == 0, install.stderr
    return env


def bash(use_id: str, command: str) -> ToolUse:
    return ToolUse(use_id, "Bash", {"command": command, "description": "step"})


def run_claude(claude: pathlib.Path, workspace: pathlib.Path, env: dict[str, str], prompt: str,
               tools: str) -> subprocess.CompletedProcess[str]:
    """`claude -p prompt` in `workspace`, allowed `tools` without asking, its answer as JSON."""
    return subprocess.run(
        [str(claude), "-p", prompt, "--allowedTools", tools, "--output-format", "json"],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL,  # `claude -p` also reads a piped stdin, waiting for its end
    )


def stop_service(state: pathlib.Path) -> None:
    subprocess.run([sys.executable, "-m", "ledger_cli.main", "serve", "stop", "--state-dir", str(state)],
                   capture_output=True, timeout=60)


@pytest.mark.parametrize("transport", ["service", "command"])
def test_claude_code_with_ledger_hooks(claude: pathlib.Path, tmp_path: pathlib.Path, transport: str) -> None:
    workspace, home, state = tmp_path / "ws", tmp_path / "home", tmp_path / "state"
    for directory in (workspace / "src", home, state):
        directory.mkdir(parents=True)
    app = workspace / "src" / "app.py"
    app.write_text("x = 1\ny = x + 1\n")
    env = with_ledger_hooks(home, state, transport)

    turns = [
        (bash("r1", READ),),                       # a read
        (bash("r2", READ),),                       # the same read: answered by Ledger
        (bash("e1", "sed -i 's/x = 1/x = 2/' src/app.py"),),  # an edit through Bash
        (bash("r3", READ),),                       # runs fresh
        (ToolUse("rd", "Read", {"file_path": str(app)}),),  # Claude's Edit needs a Read first
        (ToolUse("ed", "Edit", {"file_path": str(app), "old_string": "x = 2", "new_string": "x = 3"}),),
        (bash("r4", READ),),                       # runs fresh after Claude's own Edit
        (bash("p1", READ), bash("p2", GREP)),      # two parallel calls in one message
        (bash("f1", MISSING),),                    # a failing read
        (bash("f2", MISSING),),                    # the same, answered by Ledger with its failure
        # A read, a write and a read in one message: Claude runs the write alone, in order, so
        # the first read is still the unchanged result and the second must run.
        (bash("p3", READ), bash("w2", "sed -i 's/y = x + 1/y = 7/' src/app.py"), bash("p4", READ)),
        (bash("r6", READ),),                       # served from p4, which ran after the write
        "done",
    ]
    commands = {use.id: use.input.get("command") for turn in turns if not isinstance(turn, str) for use in turn}
    reads = {READ, MISSING, GREP}
    oracle: list[tuple[str, str, str]] = []  # (id, what the model got, what running it now shows)

    def check(results: list[ToolResult]) -> None:
        for result in results:
            command = commands.get(result.tool_use_id)
            # p3 ran before the write of its own message: checked below against r4 instead.
            if command not in reads or result.tool_use_id == "p3":
                continue
            oracle.append((result.tool_use_id, unwrapped(result.content), rendered(command, workspace)))
        settle(workspace, state)  # the next turn comes after the probes of these results

    model = ScriptedModel(turns, on_results=check)
    try:
        with ScriptedServer(model) as url:
            run = run_claude(claude, workspace, {**env, "ANTHROPIC_BASE_URL": url}, "Work on src/app.py.", "Bash Read Edit")
        served = subprocess.run([sys.executable, "-m", "ledger_cli.main", "serve", "status", "--state-dir", str(state)],
                                capture_output=True, text=True, timeout=60)
    finally:
        stop_service(state)
    if transport == "service":  # the calls really went to the service, over HTTP and the socket
        workspaces = json.loads(served.stdout)["workspaces"]
        assert [w["root"] for w in workspaces] == [str(workspace.resolve())] and workspaces[0]["calls"] >= 20, workspaces
        # The same choice as the hooks': Watchman where it is installed, else resident inotify.
        assert workspaces[0]["detector"] == ("resident-watchman" if shutil.which("watchman") else "resident-inotify")
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    assert model.errors == []
    results = model.results
    assert set(results) == set(commands), f"missing results: {set(commands) - set(results)}"
    denied = {use_id for use_id, result in results.items() if result.content.startswith(DENIED)}

    # Ledger answered exactly the repeats whose inputs had not changed.
    assert denied == {"r2", "p1", "f2", "p3", "r6"}, {k: results[k].content[:120] for k in results}
    for use_id, served_from in (("r2", "r1"), ("p1", "r4"), ("f2", "f1"), ("p3", "r4"), ("r6", "p4")):
        body = results[use_id].content[len(DENIED):]
        assert HEADER.match(body), body[:200]
        assert HEADER.sub("", body, count=1) == results[served_from].content  # verbatim, as the model saw it
        assert results[use_id].is_error
    assert "x = 1" in results["r1"].content
    assert "x = 2" in results["r3"].content  # fresh after the Bash edit
    assert not results["ed"].is_error and app.read_text() == "x = 3\ny = 7\n"
    assert "x = 3" in results["r4"].content  # fresh after Claude's own Edit
    assert not results["rd"].is_error and not results["p2"].is_error
    assert results["f1"].content.startswith("Exit code ")
    assert "y = 7" in results["p4"].content and "y = 7" not in results["p3"].content

    # The oracle: every read, reused or fresh, equals what running it at that moment shows.
    assert {use_id for use_id, _, _ in oracle} == {"r1", "r2", "r3", "r4", "p1", "p2", "f1", "f2", "p4", "r6"}
    assert [(use_id, got) for use_id, got, now in oracle if got != now] == []
    print("\n" + json.dumps({"tool_results": len(results), "reused": sorted(denied), "oracle_checks": len(oracle)}))
