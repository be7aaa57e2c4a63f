"""End to end with the real Codex CLI: Ledger's hooks installed, a scripted Responses API.

The provider is a scripted server on 127.0.0.1; Codex really runs `exec_command` and really
calls `ledger hook codex`, whose PostToolUse reads the exit status from Codex's transcript. The
test checks each `function_call_output` the model received; an oracle re-runs every read when
its result reaches the server and compares output and exit status. Codex's networked features
(plugins, apps, updates) are switched off; hooks run without Codex's interactive trust step
(`--dangerously-bypass-hook-trust`: the test wrote them).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

import agent_cli
from probes_settled import settle
from ledger_service import assert_served_only, run_then_stop
from scripted_models import ScriptedResponses, ScriptedServer, ToolResult, ToolUse

BLOCKED = "Command blocked by PreToolUse hook: "
HEADER = re.compile(r"\[ledger\] Not run again: this is the unchanged result of step \d+, exit status (\d+) [^\n]*\n")
FRESH = re.compile(r"\AChunk ID: \w+\nWall time: [^\n]*\nProcess exited with code (\d+)\n(?:[^\n]*\n)*?Output:\n", re.M)
READ, GREP, MISSING = "cat -n src/app.py", "grep -n x src/app.py", "ls nothere"
CONFIG = """
model = "gpt-5.1-codex"
model_provider = "scripted"
[model_providers.scripted]
name = "scripted"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0
[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
in_app_updates = false
"""


@pytest.fixture(scope="module")
def codex() -> pathlib.Path:
    path, why = agent_cli.ensure("codex")
    if path is None:
        pytest.skip(f"real Codex end-to-end test skipped: {why}")
    return path


def seen(result: ToolResult, command: str) -> tuple[int, str]:
    """(exit status, output) as the model got them, reused or fresh."""
    text = result.content
    if text.startswith(BLOCKED):
        header = HEADER.match(text, len(BLOCKED))
        suffix = f". Command: {command}"
        assert header is not None and text.endswith(suffix), text[:300]
        return int(header.group(1)), text[header.end():-len(suffix)]
    fresh = FRESH.match(text)
    assert fresh is not None, text[:300]
    return int(fresh.group(1)), text[fresh.end():]


def with_ledger_hooks(tmp_path: pathlib.Path, home: pathlib.Path, state: pathlib.Path,
                      transport: str = "command") -> dict[str, str]:
    """An environment with its own CODEX_HOME and Ledger's hooks installed there over `transport`
    (`service`: the thin client, which starts `ledger serve`)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "CODEX_HOME": str(home), "LANG": "C.UTF-8",
           "SCRIPTED_API_KEY": "not-a-key"}
    install = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hooks", "install", "codex", "--user",
                              "--state-dir", str(state), "--transport", transport], env=env, capture_output=True,
                             text=True)
    assert install.returncode == 0, install.stderr
    return env


def run_codex(codex: pathlib.Path, model: ScriptedResponses, home: pathlib.Path, workspace: pathlib.Path,
              env: dict[str, str], prompt: str) -> subprocess.CompletedProcess[str]:
    """`codex exec` against the scripted provider, hooks trusted, no sandbox."""
    with ScriptedServer(model) as url:
        (home / "config.toml").write_text(CONFIG.format(url=url))
        return subprocess.run(
            [str(codex), "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
             "-s", "danger-full-access", prompt],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        )


def exec_command(use_id: str, command: str) -> ToolUse:
    return ToolUse(use_id, "exec_command", {"cmd": command})


@pytest.mark.parametrize("transport", ["service", "command"])
def test_codex_with_ledger_hooks(codex: pathlib.Path, tmp_path: pathlib.Path, transport: str) -> None:
    workspace, home, state = tmp_path / "ws", tmp_path / "codex-home", tmp_path / "state"
    for directory in (workspace / "src", home, state):
        directory.mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("x = 1\ny = x + 1\n")
    env = with_ledger_hooks(tmp_path, home, state, transport)

    turns = [
        (exec_command("c1", READ),),
        (exec_command("c2", READ),),                                   # answered by Ledger
        (exec_command("c3", "sed -i 's/x = 1/x = 2/' src/app.py"),),  # an edit
        (exec_command("c4", READ),),                                   # fresh
        (exec_command("c5", READ), exec_command("c6", GREP)),          # parallel
        (exec_command("c7", MISSING),),
        (exec_command("c8", MISSING),),                                # its failure, answered by Ledger
        "done",
    ]
    commands = {use.id: use.input["cmd"] for turn in turns if not isinstance(turn, str) for use in turn}
    oracle: list[tuple[str, tuple[int, str], tuple[int, str]]] = []

    def check(results: list[ToolResult]) -> None:
        for result in results:
            command = commands[result.tool_use_id]
            if command in (READ, GREP, MISSING):
                now = subprocess.run(["bash", "-c", command], cwd=workspace, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, timeout=30)
                status, output = seen(result, command)
                # Codex trims the surrounding whitespace of a deny reason.
                expected = now.stdout.rstrip() if result.content.startswith(BLOCKED) else now.stdout
                oracle.append((result.tool_use_id, (status, output), (now.returncode, expected)))
        settle(workspace, state)  # the next turn comes after the probes of these results

    model = ScriptedResponses(turns, on_results=check)
    run, served = run_then_stop(lambda: run_codex(codex, model, home, workspace, env, "Work on src/app.py."), state)
    if transport == "service":
        assert_served_only(served, workspace, calls=12)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert model.errors == []
    results = model.results
    assert set(results) == set(commands), f"missing: {set(commands) - set(results)}"
    blocked = {use_id for use_id, result in results.items() if result.content.startswith(BLOCKED)}
    assert blocked == {"c2", "c5", "c8"}, {k: v.content[:150] for k, v in results.items()}
    for use_id, served_from in (("c2", "c1"), ("c5", "c4"), ("c8", "c7")):
        status, output = seen(results[use_id], commands[use_id])
        fresh_status, fresh_output = seen(results[served_from], commands[served_from])
        assert (status, output) == (fresh_status, fresh_output.rstrip())
    assert "x = 2" in results["c4"].content and "x = 1" in results["c1"].content
    assert {use_id for use_id, _, _ in oracle} == {"c1", "c2", "c4", "c5", "c6", "c7", "c8"}
    assert [(use_id, got, now) for use_id, got, now in oracle if got != now] == []
