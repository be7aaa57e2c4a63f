"""The real Claude Code CLI when its HTTP hooks cannot reach `ledger serve`: every command runs.

Issue 20 asks that the HTTP hooks fail open. The hooks are installed as `ledger hooks install
claude --user` writes them; then their URL is pointed at a loopback port where nothing listens
(a service that died and has not come back). Claude Code must run every tool call itself: the
repeated read runs again (with the service up it would be answered by Ledger), and the edit
takes effect.
"""

from __future__ import annotations

import pathlib
import re
import socket

from probes_settled import settle
from scripted_models import ScriptedModel, ScriptedServer
from test_claude_code_e2e import DENIED, READ, bash, claude, rendered, run_claude, stop_service, with_ledger_hooks

__all__ = ["claude"]  # the fixture, imported for the test below


def closed_loopback_port() -> int:
    """A loopback port nothing listens on (bound for a moment, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_claude_code_runs_every_command_when_the_service_cannot_be_reached(
    claude: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    workspace, home, state = tmp_path / "ws", tmp_path / "home", tmp_path / "state"
    for directory in (workspace / "src", home, state):
        directory.mkdir(parents=True)
    app = workspace / "src" / "app.py"
    app.write_text("x = 1\ny = x + 1\n")
    env = with_ledger_hooks(home, state, "service")
    settings = home / ".claude" / "settings.json"
    installed = settings.read_text()
    unreachable = re.sub(r"http://127\.0\.0\.1:\d+/", f"http://127.0.0.1:{closed_loopback_port()}/", installed)
    assert unreachable != installed and '"type": "http"' in unreachable, "the install wrote HTTP hooks"
    settings.write_text(unreachable)

    turns = [
        (bash("r1", READ),),
        (bash("r2", READ),),  # the repeat Ledger would answer, were it reachable
        (bash("e1", "sed -i 's/x = 1/x = 2/' src/app.py"),),
        (bash("r3", READ),),
        "done",
    ]
    fresh: dict[str, str] = {}

    def check(results: list) -> None:
        for result in results:
            if result.tool_use_id != "e1":
                fresh[result.tool_use_id] = rendered(READ, workspace)
        settle(workspace, state)  # as in the other end-to-end tests: a reachable service would answer r2

    model = ScriptedModel(turns, on_results=check)
    try:
        with ScriptedServer(model) as url:
            run = run_claude(claude, workspace, {**env, "ANTHROPIC_BASE_URL": url}, "Work on src/app.py.", "Bash")
    finally:
        stop_service(state)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    assert model.errors == []
    results = model.results
    assert set(results) == {"r1", "r2", "e1", "r3"}, results
    assert [use_id for use_id, result in results.items() if result.content.startswith(DENIED)] == []
    assert not any(result.is_error for result in results.values()), {k: r.content[:200] for k, r in results.items()}
    assert {use_id: results[use_id].content for use_id in fresh} == fresh, "each read is what running it showed"
    assert "x = 1" in results["r2"].content and "x = 2" in results["r3"].content
    assert app.read_text() == "x = 2\ny = x + 1\n"
