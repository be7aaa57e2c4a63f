"""End to end with the real Codex CLI: `ledger hook codex --economize` stops a failure loop.

The same loop as the Claude Code test (test_claude_code_economize_e2e.py): B = 3 from the fed
history, so the guard redirects at turn 8 and stops at turn 13; each call turns one more `a`
of a.py into `b`, so the file counts the calls Codex made. The exit status of each call comes
from Codex's transcript, as for Ledger.

What it showed (Codex 0.171): PostToolUse's `continue: false` is logged as "Stopped" but the
next call is still requested, and a PreToolUse answer with `continue: false` fails the hook (the
call then runs). So after a stop the hook denies every later call with the stop's reason: the
scripted model keeps asking, and each of its 7 later calls is refused, none runs.
"""

from __future__ import annotations

import json
import pathlib

from scripted_models import ScriptedResponses
from test_codex_e2e import BLOCKED, codex, exec_command, run_codex, with_ledger_hooks  # noqa: F401 - `codex` is the module's fixture
from test_economize_hook import E2E_LOOP, economize_installed_hooks, loop_workspace


def test_codex_stops_when_the_guard_says_stop(codex: pathlib.Path, tmp_path: pathlib.Path) -> None:
    workspace, home, state = loop_workspace(tmp_path, "codex-home")
    env = with_ledger_hooks(tmp_path, home, state)
    economize_installed_hooks(home / "hooks.json")

    model = ScriptedResponses([(exec_command(f"c{n}", E2E_LOOP),) for n in range(1, 21)] + ["done"])
    run = run_codex(codex, model, home, workspace, env, "Fix a.py.")
    ran = (workspace / "a.py").read_text().count("b")
    notes = [i for i, request in enumerate(model.requests) if "[ledger economize]" in json.dumps(request)]
    print("\n" + json.dumps({"returncode": run.returncode, "calls_run": ran, "results_seen": sorted(model.results),
                             "first_request_with_redirect": notes[:1], "stderr": run.stderr[-600:]}))
    assert model.errors == []
    assert ran == 13  # the stop came at the 13th call, and no later call ran
    assert notes and notes[0] == 8  # the redirect (turn 8) reached the model with the 8th result
    refused = {use_id for use_id, result in model.results.items()
               if result.content.startswith(BLOCKED) and "stopped this task at turn 13" in result.content}
    assert refused == {f"c{n}" for n in range(14, 21)}  # each later call was refused with the reason
