"""The end-to-end scenario an agent with a shell tool is driven through (Gemini CLI, Qwen Code):
a read, the same read (answered by Ledger), the agent's own edit, the read again (fresh), two
calls in one turn (one answered), a failing read and that failure answered, and a test run
twice with nothing changed (the second nudged, its note after the result); an oracle re-runs
every read when its result reaches the model server, and the checks on what the model got."""

from __future__ import annotations

import pathlib
import subprocess
from typing import Callable

from probes_settled import settle
from scripted_models import ResultsHook, ToolResult, ToolUse, Turn

READ, GREP, MISSING = "cat -n src/app.py", "grep -n x src/app.py", "ls nothere"
#: A test run (no Makefile: it fails at once); run again with nothing changed, it is nudged.
TESTS = "make test"
NUDGE = "this command already ran at step"
#: The calls Ledger answers, each with the earlier call it is the result of.
SERVED_FROM = {"c2": "c1", "c5": "c4", "c8": "c7"}
Seen = Callable[[ToolResult], tuple[int, str]]  # (exit status, output) as the model got them
Oracle = list[tuple[str, tuple[int, str], tuple[int, str]]]


def workspace_with_app(root: pathlib.Path) -> pathlib.Path:
    """`root/src/app.py`, the file the scenario reads and edits."""
    (root / "src").mkdir(parents=True)
    app = root / "src" / "app.py"
    app.write_text("x = 1\ny = x + 1\n")
    return app


def turns(shell: Callable[[str, str], ToolUse], edit: tuple[Turn, ...]) -> list[Turn]:
    """The script; `shell(id, command)` is the agent's shell call, `edit` its turns that change
    `x = 1` to `x = 2` in src/app.py (call ids other than c1..c8)."""
    return [
        (shell("c1", READ),),
        (shell("c2", READ),),
        *edit,
        (shell("c4", READ),),
        (shell("c5", READ), shell("c6", GREP)),
        (shell("c7", MISSING),),
        (shell("c8", MISSING),),
        (shell("n1", TESTS),),
        (shell("n2", TESTS),),
        "done",
    ]


def shell_commands(script: list[Turn]) -> dict[str, str]:
    return {use.id: use.input["command"] for turn in script if not isinstance(turn, str) for use in turn
            if "command" in use.input}


def oracle_hook(workspace: pathlib.Path, commands: dict[str, str], seen: Seen, oracle: Oracle,
                state: pathlib.Path) -> ResultsHook:
    """Re-run each read as its result arrives (the agent is waiting, so the workspace is as the
    call left it); the agent shows the output with its surrounding whitespace trimmed. The next
    turn comes after the probes of these results (`state`: the session's state directory)."""
    def check(results: list[ToolResult]) -> None:
        for result in results:
            command = commands.get(result.tool_use_id)
            if command in (READ, GREP, MISSING):
                now = subprocess.run(["bash", "-c", command], cwd=workspace, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, timeout=30)
                oracle.append((result.tool_use_id, seen(result), (now.returncode, now.stdout.strip())))
        settle(workspace, state)
    return check


def assert_scenario(results: dict[str, ToolResult], commands: dict[str, str], app: pathlib.Path, seen: Seen,
                    reused: set[str], oracle: Oracle) -> None:
    """Ledger answered exactly the repeated reads, each with its earlier result, the read after
    the edit ran fresh, and every read the model got is what running it then printed."""
    assert set(commands) <= set(results), f"missing: {set(commands) - set(results)}"
    assert "x = 2" in app.read_text()
    assert reused == set(SERVED_FROM), {k: v.content[:150] for k, v in results.items()}
    for use_id, served_from in SERVED_FROM.items():
        assert seen(results[use_id]) == seen(results[served_from])
    assert "x = 2" in results["c4"].content and "x = 1" in results["c1"].content
    assert {use_id for use_id, _, _ in oracle} == {"c1", "c2", "c4", "c5", "c6", "c7", "c8"}
    stale = [(use_id, got, now) for use_id, got, now in oracle if got != now]
    assert stale == [], stale
    assert NUDGE not in results["n1"].content and NUDGE in results["n2"].content, results["n2"].content
