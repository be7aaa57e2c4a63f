"""Hook composition with the real Claude Code CLI: Ledger's hooks beside another PreToolUse hook
that rewrites the command (`updatedInput`), driven by a scripted model (issue 19, item 3).

The other hook rewrites `cat a.txt` to `cat b.txt` the first time only. Claude then runs
`cat b.txt` where Ledger decided `cat a.txt`; stored under the decided command, b's output
would be served for the next, unrewritten `cat a.txt`. The oracle is what Claude actually runs:
each `cat a.txt` the model gets after the first must be a.txt as it is then.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import pytest

from probes_settled import settle
from scripted_models import ScriptedModel, ScriptedServer, ToolResult
from test_claude_code_e2e import DENIED, bash, claude, rendered, run_claude, unwrapped, with_ledger_hooks  # noqa: F401 (fixture)

READ, REWRITTEN = "cat a.txt", "cat b.txt"

# The other hook: the first `cat a.txt` becomes `cat b.txt` (the marker file, outside the
# workspace, says it has rewritten once); everything else passes through untouched.
REWRITER = """\
import json, os, sys
call = json.load(sys.stdin)
marker = sys.argv[1]
if call.get("tool_input", {{}}).get("command") == {read!r} and not os.path.exists(marker):
    open(marker, "w").close()
    print(json.dumps({{"hookSpecificOutput": {{
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": {{**call["tool_input"], "command": {rewritten!r}}},
    }}}}))
"""


def add_rewriting_hook(home: pathlib.Path, script: pathlib.Path, marker: pathlib.Path, probe: bool) -> None:
    """A second PreToolUse command hook for Bash, after Ledger's, in the user's settings;
    without `probe`, Ledger's hooks are told `--no-probe`."""
    script.write_text(REWRITER.format(read=READ, rewritten=REWRITTEN))
    settings_path = home / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    for entries in settings["hooks"].values():
        for hook in (hook for entry in entries for hook in entry["hooks"]):
            if not probe:
                assert " hook claude" in hook["command"], hook
                hook["command"] += " --no-probe"
    command = f"{sys.executable} {script} {marker}"
    settings["hooks"]["PreToolUse"].append({"matcher": "Bash", "hooks": [{"type": "command", "command": command}]})
    settings_path.write_text(json.dumps(settings, indent=2))


# Without the probe, only the session's check that PostToolUse ran the command PreToolUse
# decided stands between b's output and the next `cat a.txt`; with it, the probe too.
@pytest.mark.parametrize("probe", [True, False], ids=["probe", "no-probe"])
def test_a_command_another_hook_rewrote_is_never_served_for_the_original(
    claude: pathlib.Path, tmp_path: pathlib.Path, probe: bool  # noqa: F811 (fixture)
) -> None:
    workspace, home, state = tmp_path / "ws", tmp_path / "home", tmp_path / "state"
    for directory in (workspace, home, state):
        directory.mkdir(parents=True)
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    env = with_ledger_hooks(home, state)
    marker = tmp_path / "rewritten-once"
    add_rewriting_hook(home, tmp_path / "rewriter.py", marker, probe)

    turns = [(bash("r1", READ),), (bash("r2", READ),), (bash("r3", READ),), "done"]
    oracle: list[tuple[str, str, str]] = []  # (id, what the model got, what `cat a.txt` shows now)

    def check(results: list[ToolResult]) -> None:
        for result in results:
            oracle.append((result.tool_use_id, unwrapped(result.content), rendered(READ, workspace)))
        settle(workspace, state)  # the next turn comes after the probes of these results

    model = ScriptedModel(turns, on_results=check)
    started = time.monotonic()
    with ScriptedServer(model) as url:
        run = run_claude(claude, workspace, {**env, "ANTHROPIC_BASE_URL": url}, "Read a.txt.", "Bash")
    seconds = time.monotonic() - started
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    assert model.errors == []
    results = model.results
    assert set(results) == {"r1", "r2", "r3"}, results

    # The rewrite took effect: Claude ran `cat b.txt` for r1 (else this test proves nothing).
    assert marker.exists() and results["r1"].content == "beta", results["r1"].content
    # r2 is the first `cat a.txt` Claude really ran: never answered with what r1's command printed.
    assert not results["r2"].content.startswith(DENIED), results["r2"].content
    # r3 repeats r2, which ran as decided: Ledger answers it, with a.txt's content.
    assert results["r3"].content.startswith(DENIED), results["r3"].content
    assert [(use_id, got) for use_id, got, now in oracle if use_id != "r1" and got != now] == []
    assert {use_id for use_id, _, _ in oracle} == {"r1", "r2", "r3"}
    print("\n" + json.dumps({"tool_results": len(results), "wall_seconds": round(seconds, 1)}))
