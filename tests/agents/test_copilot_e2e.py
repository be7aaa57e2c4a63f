"""End to end with the real GitHub Copilot CLI: Ledger's hooks installed, a scripted model.

Copilot CLI runs offline against a custom provider (`COPILOT_OFFLINE=true`,
`COPILOT_PROVIDER_BASE_URL`, `COPILOT_PROVIDER_TYPE=anthropic`: no GitHub sign-in, no
telemetry, no update check); the provider is the scripted Anthropic Messages server on
127.0.0.1. Copilot really runs its `bash`, `view` and `edit` tools and really calls `ledger hook
copilot`. The test checks each tool result the model received; an oracle re-runs every shell
read when its result reaches the server and compares output and exit status with what the
model got, reused or fresh. A project install is trusted for this one run (`--trust-folder`).
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
from probes_settled import settle
from scripted_models import ScriptedModel, ScriptedServer, ToolResult, ToolUse

DENIED = "Denied by preToolUse hook: "
HEADER = re.compile(r"\[ledger\] Not run again: this is the unchanged result of step \d+, exit status (\d+) [^\n]*\n")
FRESH = re.compile(r"<shellId: [^\n>]+ completed with exit code (\d+)>\Z")
NUDGED = "Additional context from preToolUse hook:\n[ledger] Unchanged since step"
READ, GREP, MISSING = "cat src/app.py", "grep -n x src/app.py", "ls nothere"


@pytest.fixture(scope="module")
def copilot() -> pathlib.Path:
    path, why = agent_cli.ensure("copilot")
    if path is None:
        pytest.skip(f"real Copilot CLI end-to-end test skipped: {why}")
    return path


def seen(result: ToolResult) -> tuple[int, str]:
    """(exit status, output) as the model got them, reused or fresh."""
    text = result.content
    if text.startswith(DENIED):
        header = HEADER.match(text, len(DENIED))
        assert header is not None, text[:300]
        return int(header.group(1)), text[header.end():]
    fresh = FRESH.search(text)
    assert fresh is not None, text[:300]
    return int(fresh.group(1)), text[:fresh.start()]


def rendered(output: str) -> str:
    """A command's output as Copilot's shell tool shows it: trailing whitespace cut, one newline."""
    return output.rstrip() + "\n"


def bash(use_id: str, command: str) -> ToolUse:
    return ToolUse(use_id, "bash", {"command": command, "description": "step"})


def run_copilot(copilot: pathlib.Path, model: ScriptedModel, tmp_path: pathlib.Path, workspace: pathlib.Path,
                scope: str, transport: str) -> subprocess.CompletedProcess[str]:
    """Install Ledger's hooks (`scope`, `transport`), then one prompt-mode run against `model`."""
    state = tmp_path / "state"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "COPILOT_HOME": str(tmp_path / "copilot-home"), "XDG_CACHE_HOME": str(agent_cli.unpack_cache("copilot"))}
    where = ["--user"] if scope == "user" else ["--root", str(workspace)]
    install = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hooks", "install", "copilot", *where,
                              "--state-dir", str(state), "--transport", transport], env=env, capture_output=True,
                             text=True, timeout=60)
    assert install.returncode == 0, install.stderr
    trust = ["--trust-folder"] if scope == "project" else []
    with ScriptedServer(model) as url:
        env.update({"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": url, "COPILOT_PROVIDER_TYPE": "anthropic",
                    "COPILOT_PROVIDER_API_KEY": "not-a-key", "COPILOT_MODEL": "claude-sonnet-4.5",
                    "COPILOT_AUTO_UPDATE": "false"})
        try:
            return subprocess.run([str(copilot), "-p", "Work on src/app.py.", "--allow-all-tools", "--no-auto-update",
                                   *trust], cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
                                  stdin=subprocess.DEVNULL)
        finally:
            subprocess.run([sys.executable, "-m", "ledger_cli.main", "serve", "stop", "--state-dir", str(state)],
                           capture_output=True, timeout=60)


@pytest.mark.parametrize(("scope", "transport"), [("user", "command"), ("user", "service"), ("project", "command")])
def test_copilot_with_ledger_hooks(copilot: pathlib.Path, tmp_path: pathlib.Path, scope: str, transport: str) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    app = workspace / "src" / "app.py"
    app.write_text("x = 1\ny = x + 1\n\n\n")  # trailing blank lines: Copilot shows them cut
    turns = [
        (bash("c1", READ),),
        (bash("c2", READ),),                                                    # answered by Ledger
        (ToolUse("c3", "edit", {"path": str(app), "old_str": "x = 1", "new_str": "x = 2"}),),  # an edit
        (bash("c4", READ),),                                                    # fresh
        (bash("c5", READ), bash("c6", GREP)),                                   # parallel
        (bash("c7", MISSING),),
        (bash("c8", MISSING),),                                                 # its failure, answered by Ledger
        (ToolUse("c9", "view", {"path": str(app)}),),
        (ToolUse("c10", "view", {"path": str(app)}),),                          # nudged, never denied
        (bash("c11", READ), bash("c12", READ)),     # identical, in parallel: one call id (see copilot.py)
        "done",
    ]
    commands = {use.id: use.input["command"] for turn in turns if not isinstance(turn, str) for use in turn
                if use.name == "bash"}
    oracle: list[tuple[str, tuple[int, str], tuple[int, str]]] = []

    def check(results: list[ToolResult]) -> None:
        for result in results:
            if result.tool_use_id in commands:
                now = subprocess.run(["bash", "-c", commands[result.tool_use_id]], cwd=workspace,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
                oracle.append((result.tool_use_id, seen(result), (now.returncode, rendered(now.stdout))))
        settle(workspace, tmp_path / "state")  # the next turn comes after the probes of these results

    model = ScriptedModel(turns, on_results=check)
    run = run_copilot(copilot, model, tmp_path, workspace, scope, transport)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-3000:])
    assert model.errors == []
    results = model.results
    assert set(results) == {use.id for turn in turns if not isinstance(turn, str) for use in turn}
    denied = {use_id for use_id, result in results.items() if result.content.startswith(DENIED)}
    assert denied - {"c11", "c12"} == {"c2", "c5", "c8"}, {k: v.content[:150] for k, v in results.items()}
    for use_id, served_from in (("c2", "c1"), ("c5", "c4"), ("c8", "c7")):
        assert seen(results[use_id]) == seen(results[served_from])
    assert "x = 2" in results["c4"].content and "x = 1" in results["c1"].content
    assert seen(results["c7"])[0] == 2
    assert [(use_id, got, now) for use_id, got, now in oracle if got != now] == []
    assert {use_id for use_id, _, _ in oracle} == set(commands)
    # The repeated view runs (a denied view would break Copilot's edits) with a note after it.
    assert results["c10"].content == app.read_text()
    model_saw = json.dumps(model.requests[-1]["messages"])
    assert json.dumps(NUDGED)[1:-1] in model_saw
