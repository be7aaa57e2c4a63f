"""End to end with the real Claude Code CLI: `ledger hook claude --economize` stops a failure loop.

The scripted model (127.0.0.1 only) repeats one failing edit-and-test Bash call. The
repository's history (8 passed tasks of 2 turns) gives B = 3, so the guard redirects at turn
8 and stops at turn 13 (see test_economize_hook.py). Each call really runs: it turns one more
`a` of a.py into `b`, so the file counts the calls Claude Code made.

What it showed (Claude Code 2.1): the documented `{"continue": false, "stopReason": ...}`
answered to the 13th call's PostToolUseFailure is ignored (the model gets the result and asks
for a 14th call); the same answer with a deny at the 14th call's PreToolUse ends the run: the
14th call never runs and its refusal never reaches the model. Hence the hook does both.
"""

from __future__ import annotations

import json
import pathlib
import subprocess

from scripted_models import ScriptedModel, ScriptedServer, ToolUse
from test_claude_code_e2e import claude, with_ledger_hooks  # noqa: F401 - `claude` is the module's fixture
from test_economize_hook import E2E_LOOP, economize_installed_hooks, loop_workspace


def test_claude_code_stops_when_the_guard_says_stop(claude: pathlib.Path, tmp_path: pathlib.Path) -> None:
    workspace, home, state = loop_workspace(tmp_path, "home")
    env = with_ledger_hooks(home, state)
    economize_installed_hooks(home / ".claude" / "settings.json")

    turns = [(ToolUse(f"b{n}", "Bash", {"command": E2E_LOOP, "description": "try"}),) for n in range(1, 21)] + ["done"]
    model = ScriptedModel(turns)
    with ScriptedServer(model) as url:
        run = subprocess.run(
            [str(claude), "-p", "Fix a.py.", "--allowedTools", "Bash", "--output-format", "json"],
            cwd=workspace, env={**env, "ANTHROPIC_BASE_URL": url}, capture_output=True, text=True, timeout=300,
            stdin=subprocess.DEVNULL,
        )
    assert model.errors == []
    ran = (workspace / "a.py").read_text().count("b")
    notes = [i for i, request in enumerate(model.requests) if "[ledger economize]" in json.dumps(request)]
    print("\n" + json.dumps({"returncode": run.returncode, "calls_run": ran, "results_seen": len(model.results),
                             "first_request_with_redirect": notes[:1], "stdout": run.stdout[-300:]}))
    assert ran == 13  # the stop came at the 13th call, and no 14th call ran
    assert set(model.results) == {f"b{n}" for n in range(1, 14)}  # the run ended at the refused 14th
    assert json.loads(run.stdout)["result"] != "done"  # the model's scripted end was never reached
    assert notes and notes[0] == 8  # the redirect (turn 8) reached the model with the 8th result
