"""End to end with the real Qwen Code: Ledger's hooks installed, a scripted OpenAI-compatible
Chat Completions endpoint.

Qwen Code 0.24.4 (pinned in `agent_cli.py`) talks to `OPENAI_BASE_URL`, a scripted
`/chat/completions` server on 127.0.0.1, with `OPENAI_API_KEY=dummy` and the auth type
`openai` in its settings; it really runs `run_shell_command` and `edit` and really calls
Ledger's hooks from `~/.qwen/settings.json`. The test checks each `tool` message the model
received; an oracle re-runs every read when its result reaches the server and compares output
and exit status. `--yolo` approves each tool call.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import warnings

import attrs
import pytest

import agent_cli
from ledger_service import assert_served_only, run_then_stop
from probes_settled import verdicts
from reuse_scenario import assert_scenario, oracle_hook, shell_commands, turns, workspace_with_app
from scripted_models import ScriptedChat, ScriptedServer, ToolResult, ToolUse

HEADER = re.compile(r"\[ledger\] Not run again: this is the unchanged result of step \d+, exit status (\d+) [^\n]*\n")
FRESH = re.compile(r"\ACommand: [^\n]*\nDirectory: [^\n]*\nOutput: (?P<output>.*)\nError: \(none\)\n"
                   r"Exit Code: (?P<status>\d+)\nSignal: \(none\)\nProcess Group PGID: [^\n]*\Z", re.S)


@pytest.fixture(scope="module")
def qwen() -> pathlib.Path:
    path, why = agent_cli.ensure("qwen")
    if path is None:
        pytest.skip(f"real Qwen Code end-to-end test skipped: {why}")
    return path


def seen(result: ToolResult) -> tuple[int, str]:
    """(exit status, output) as the model got them, reused or fresh."""
    text = result.content
    header = HEADER.match(text)  # the reason is the whole result, nothing before it
    if header is not None:
        return int(header.group(1)), text[header.end():]
    fresh = FRESH.match(text)
    assert fresh is not None, text[:300]
    return int(fresh["status"]), fresh["output"]


def run_qwen(qwen: pathlib.Path, model: ScriptedChat, workspace: pathlib.Path, env: dict[str, str],
             prompt: str) -> subprocess.CompletedProcess[str]:
    """`qwen -p PROMPT` against the scripted endpoint, every tool call approved."""
    with ScriptedServer(model) as url:
        return subprocess.run([str(qwen), "-p", prompt, "--yolo"], cwd=workspace,
                              env={**env, "OPENAI_BASE_URL": f"{url}/v1"}, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)


def shell(use_id: str, command: str) -> ToolUse:
    return ToolUse(use_id, "run_shell_command", {"command": command})


#: Qwen Code 0.24.4 now and then shows `(empty)` for a command that printed lines: the model and
#: the PostToolUse hook both get it (seen in CI: `grep -n x src/app.py` once, `cat -n src/app.py`
#: once, about one run in ten here under load). Ledger's probe rightly refuses to store that output,
#: so the repeat is not served and the scenario's checks fail on the agent's fault. Such a run
#: says nothing about Ledger and is run again, with a warning, at most this many times in all.
ATTEMPTS = 3


@attrs.frozen
class Attempt:
    workspace: pathlib.Path
    state: pathlib.Path
    app: pathlib.Path
    run: subprocess.CompletedProcess[str]
    served: str
    model: ScriptedChat
    commands: dict[str, str]
    oracle: list[tuple[str, tuple[int, str], tuple[int, str]]]

    def lost_by_qwen(self) -> list[str]:
        """Calls Qwen ran itself (no Ledger header) and showed as `(empty)` though the read,
        run again as the result arrived, printed lines."""
        return [use_id for use_id, got, now in self.oracle
                if got == (0, "(empty)") and now[1] and not HEADER.match(self.model.results[use_id].content)]


def _attempt(qwen: pathlib.Path, base: pathlib.Path, transport: str) -> Attempt:
    workspace, home, state = base / "ws", base / "home", base / "state"
    app = workspace_with_app(workspace)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "OPENAI_API_KEY": "dummy",
           "OPENAI_MODEL": "scripted", "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}
    # Qwen's own setting (the OpenAI-compatible auth) must survive Ledger's install next to it.
    settings = home / ".qwen" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "openai"}}}))
    install = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hooks", "install", "qwen", "--user",
                              "--state-dir", str(state), "--transport", transport], env=env, capture_output=True,
                             text=True)
    assert install.returncode == 0, install.stderr

    # Qwen's own edit tool, which edits only a file read in the session.
    edit = ((ToolUse("r3", "read_file", {"file_path": str(app)}),),
            (ToolUse("c3", "edit", {"file_path": str(app), "old_string": "x = 1", "new_string": "x = 2"}),))
    script = turns(shell, edit)
    commands, oracle = shell_commands(script), []
    model = ScriptedChat(script, on_results=oracle_hook(workspace, commands, seen, oracle, state))
    run, served = run_then_stop(lambda: run_qwen(qwen, model, workspace, env, "Work on src/app.py."), state)
    return Attempt(workspace, state, app, run, served, model, commands, oracle)


@pytest.mark.parametrize("transport", ["service", "command"])
def test_qwen_code_with_ledger_hooks(qwen: pathlib.Path, tmp_path: pathlib.Path, transport: str) -> None:
    for number in range(1, ATTEMPTS + 1):
        attempt = _attempt(qwen, tmp_path / f"attempt-{number}", transport)
        lost = attempt.lost_by_qwen()
        if not lost:
            break
        warnings.warn(f"attempt {number}: Qwen Code showed (empty) for {lost}, which print lines; run again")
    else:
        pytest.fail(f"Qwen Code lost a command's output in all {ATTEMPTS} attempts (last: {lost})")
    if transport == "service":
        assert_served_only(attempt.served, attempt.workspace, calls=12)
    assert attempt.run.returncode == 0, (attempt.run.stdout[-2000:], attempt.run.stderr[-3000:])
    assert attempt.model.errors == [], verdicts(attempt.workspace, attempt.state)
    reused = {use_id for use_id, result in attempt.model.results.items() if HEADER.match(result.content)}
    assert_scenario(attempt.model.results, attempt.commands, attempt.app, seen, reused, attempt.oracle)
