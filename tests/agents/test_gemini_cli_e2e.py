"""End to end with the real Gemini CLI: Ledger's hooks installed, a scripted Gemini API.

Gemini CLI 0.61 (pinned in `agent_cli.py`) talks to `GOOGLE_GEMINI_BASE_URL`, a scripted
`streamGenerateContent` server on 127.0.0.1, with the API key `dummy`; it really runs
`run_shell_command` and `replace` and really calls Ledger's hooks from `~/.gemini/settings.json`.
The test checks each `functionResponse` the model received; an oracle re-runs every read when its
result reaches the server and compares output and exit status. `-m` names the model, so the CLI
skips its classifier request; `GEMINI_CLI_TRUST_WORKSPACE` stands in for the interactive folder
trust step (the test wrote the workspace), and `--yolo` approves each tool call.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import agent_cli
from ledger_service import assert_served_only, run_then_stop
from probes_settled import verdicts
from reuse_scenario import assert_scenario, oracle_hook, shell_commands, turns, workspace_with_app
from scripted_models import ScriptedGemini, ScriptedServer, ToolResult, ToolUse

BLOCKED = "Tool execution blocked: "
HEADER = re.compile(r"\[ledger\] Not run again: this is the unchanged result of step \d+, exit status (\d+) [^\n]*\n")
FRESH = re.compile(r"\A<untrusted_context>\nOutput: (?P<output>.*?)(?:\nExit Code: (?P<status>\d+))?"
                   r"\nProcess Group PGID: \d+\n</untrusted_context>\Z", re.S)


@pytest.fixture(scope="module")
def gemini() -> pathlib.Path:
    path, why = agent_cli.ensure("gemini")
    if path is None:
        pytest.skip(f"real Gemini CLI end-to-end test skipped: {why}")
    return path


def seen(result: ToolResult) -> tuple[int, str]:
    """(exit status, output) as the model got them, reused or fresh."""
    text = result.content
    if text.startswith(BLOCKED):
        header = HEADER.match(text, len(BLOCKED))
        assert result.is_error and header is not None, text[:300]
        return int(header.group(1)), text[header.end():]
    fresh = FRESH.match(text)
    assert not result.is_error and fresh is not None, text[:300]
    return int(fresh["status"] or 0), fresh["output"]


def run_gemini(gemini: pathlib.Path, model: ScriptedGemini, workspace: pathlib.Path, env: dict[str, str],
               prompt: str) -> subprocess.CompletedProcess[str]:
    """`gemini -p PROMPT` against the scripted Gemini API, every tool call approved."""
    with ScriptedServer(model) as url:
        return subprocess.run([str(gemini), "-p", prompt, "--yolo", "-m", "gemini-2.5-flash"], cwd=workspace,
                              env={**env, "GOOGLE_GEMINI_BASE_URL": url}, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)


def shell(use_id: str, command: str) -> ToolUse:
    return ToolUse(use_id, "run_shell_command", {"command": command})


@pytest.mark.parametrize("transport", ["service", "command"])
def test_gemini_cli_with_ledger_hooks(gemini: pathlib.Path, tmp_path: pathlib.Path, transport: str) -> None:
    workspace, home, state = tmp_path / "ws", tmp_path / "home", tmp_path / "state"
    app = workspace_with_app(workspace)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "GEMINI_API_KEY": "dummy",
           "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    # Gemini's own setting (API-key auth) must survive Ledger's install next to it.
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    install = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hooks", "install", "gemini", "--user",
                              "--state-dir", str(state), "--transport", transport], env=env, capture_output=True,
                             text=True)
    assert install.returncode == 0, install.stderr

    # Gemini's own edit tool.
    edit = ToolUse("c3", "replace", {"file_path": str(app), "old_string": "x = 1", "new_string": "x = 2",
                                     "instruction": "Set x to 2."})
    script = turns(shell, ((edit,),))
    commands, oracle = shell_commands(script), []
    model = ScriptedGemini(script, on_results=oracle_hook(workspace, commands, seen, oracle, state))
    run, served = run_then_stop(lambda: run_gemini(gemini, model, workspace, env, "Work on src/app.py."), state)
    if transport == "service":
        assert_served_only(served, workspace, calls=12)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert model.errors == [], verdicts(workspace, state)
    reused = {use_id for use_id, result in model.results.items() if result.content.startswith(BLOCKED)}
    assert_scenario(model.results, commands, app, seen, reused, oracle)
