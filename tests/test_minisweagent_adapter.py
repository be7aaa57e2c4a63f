"""mini-swe-agent end to end: DefaultAgent and DeterministicModel drive a LedgerEnvironment over a
real local workspace; the saved trajectory shows reuse, a fresh run after a script's edit, and
the submission. An oracle re-runs every Reuse at the moment it is served."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

minisweagent = pytest.importorskip("minisweagent", reason="the optional extra: pip install -e '.[mini]'")

from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.environments.local import LocalEnvironment  # noqa: E402
from minisweagent.models.test_models import DeterministicModel, make_output  # noqa: E402

from ledger_impl.adapters.minisweagent import LedgerEnvironment  # noqa: E402
from ledger_impl.execution import run_command  # noqa: E402

EDIT_SCRIPT = "cat > edit.py <<'EOF'\nimport pathlib\np = pathlib.Path('app.py')\np.write_text(p.read_text().replace('1', '2'))\nEOF"
COMMANDS = [
    "cat app.py",  # allow
    "cat app.py",  # reuse
    EDIT_SCRIPT,  # a script, written now and run later
    "cat app.py",  # reuse: the script does not touch app.py yet
    "python3 edit.py",  # the edit
    "cat app.py",  # fresh: the edit was detected
    "cat app.py",  # reuse of the new content
    "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
]
EXPECTED = ["allow", "reuse", "allow", "reuse", "allow", "allow", "reuse"]


class CheckedEnvironment(LedgerEnvironment):
    """Re-runs every Reuse right away and records whether it matched."""

    checks: list[bool]

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
        result = super().execute(action, cwd, timeout=timeout)
        if result.get("ledger_verdict") == "reuse":
            fresh = run_command(action["command"], Path(self.workspace), 30, 1 << 20)
            raw = result["extra"]["ledger"]["raw_output"]
            self.checks.append((fresh.output, fresh.exit_code) == (raw, result["returncode"]))
        return result


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("x = 1\ny = 11\n")
    subprocess.run(
        "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init", shell=True, cwd=root, check=True
    )
    return root


def test_a_scripted_run_reuses_rereads_after_an_edit_and_submits(repo: Path, tmp_path: Path) -> None:
    model = DeterministicModel(
        outputs=[make_output(f"step {i}", [{"command": command}]) for i, command in enumerate(COMMANDS)],
        observation_template=(
            "<verdict>{{output.ledger_verdict}}</verdict>{{output.ledger_note}}\n{{output.output}}\n{{ledger_view}}"
        ),
    )
    env = CheckedEnvironment(inner_environment_class="local", cwd=str(repo), timeout=30)
    env.checks = []
    trajectory = tmp_path / "run.traj.json"
    agent = DefaultAgent(
        model,
        env,
        system_template="You are an agent.\n{{ledger_view}}",
        instance_template="Task: {{task}}",
        output_path=trajectory,
        cost_limit=0,  # the scripted model bills 1.0 per call; no limit
    )
    result = agent.run("change 1 to 2")
    env.close()
    assert result["exit_status"] == "Submitted"
    saved = json.loads(trajectory.read_text())
    observations = [m for m in saved["messages"] if m.get("role") == "user" and "ledger" in m.get("extra", {})]
    assert [m["extra"]["ledger"]["verdict"] for m in observations] == EXPECTED
    assert [f"<verdict>{v}</verdict>" in m["content"] for m, v in zip(observations, EXPECTED)] == [True] * len(EXPECTED)
    assert observations[5]["extra"]["raw_output"].endswith("x = 2\ny = 22\n")
    assert "reused from step" in observations[1]["content"]
    assert env.checks == [True, True, True]  # every Reuse equalled a fresh run
    assert "@6 cat app.py [current]" in observations[5]["content"]  # the view after that step (the 6th)
    assert saved["messages"][0]["content"].startswith("You are an agent.\n[ledger] step 1")
    assert saved["info"]["config"]["inner_environment_type"] == "local"


def test_the_example_config_builds_a_ledger_environment(repo: Path) -> None:
    import yaml
    from minisweagent.environments import get_environment

    config = yaml.safe_load((Path(__file__).parent.parent / "examples" / "mini_ledger.yaml").read_text())
    env = get_environment(config["environment"] | {"cwd": str(repo)})
    try:
        assert isinstance(env, LedgerEnvironment)
        first = env.execute({"command": "cat app.py"})
        again = env.execute({"command": "cat app.py"})
        assert (first["ledger_verdict"], again["ledger_verdict"]) == ("allow", "reuse")
        assert again["extra"]["ledger"]["raw_output"] == first["output"] == "x = 1\ny = 11\n"
    finally:
        env.close()


class RemoteShell(LocalEnvironment):
    """Stands for a container: not the local class, so commands go through its `execute`."""

    calls: list[str] = []

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
        RemoteShell.calls.append(action["command"])
        return super().execute(action, cwd, timeout=timeout)


def test_a_non_local_environment_runs_every_command_and_is_watched_through_its_channel(repo: Path) -> None:
    from minisweagent.exceptions import Submitted

    RemoteShell.calls = []
    env = LedgerEnvironment(inner_environment_class=RemoteShell, cwd=str(repo), timeout=30)
    try:
        verdicts = [env.execute({"command": command})["ledger_verdict"] for command in COMMANDS[:7]]
        assert verdicts == EXPECTED
        assert "python3 edit.py" in RemoteShell.calls and any("find . -printf" in c for c in RemoteShell.calls)
        assert RemoteShell.calls.count("cat app.py") == 2  # the other three were reused
        os.symlink("app.py", repo / "alias.py")
        env.execute({"command": "ls"})  # the listing after it shows the link
        assert env.execute({"command": "cat app.py"})["ledger_verdict"] != "reuse"
        assert env.execute({"command": "cat app.py"})["ledger_verdict"] != "reuse"
        with pytest.raises(Submitted):
            env.execute({"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})
    finally:
        env.close()
