"""`ledger hooks install|uninstall claude`: merged idempotently, removed exactly."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from ledger_cli.errors import EXIT_USAGE
from ledger_cli.commands.hooks import installed, is_ledger_hook, uninstalled
from ledger_impl.agents.claude import EVENTS as CLAUDE_EVENTS

USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}],
    },
}


def ledger(*args: str, home: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ledger_cli.main", *args], capture_output=True, text=True,
                          env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, timeout=60)


def test_install_keeps_everything_else_and_is_idempotent() -> None:
    once = installed(USER_SETTINGS, "ledger-cmd ledger_cli.main hook claude")
    assert installed(once, "ledger-cmd ledger_cli.main hook claude") == once
    assert once["model"] == "opus" and once["permissions"] == USER_SETTINGS["permissions"]
    assert once["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"]
    assert once["hooks"]["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    for event in CLAUDE_EVENTS:
        ours = [e for group in once["hooks"][event] for e in group["hooks"] if is_ledger_hook(e)]
        assert len(ours) == 1, event


def test_uninstall_removes_exactly_ledgers_entries() -> None:
    assert uninstalled(installed(USER_SETTINGS, "py -m ledger_cli.main hook claude")) == USER_SETTINGS
    assert uninstalled(installed({}, "py -m ledger_cli.main hook claude")) == {}
    # A group the user shares with Ledger's entry keeps the user's hook.
    shared = {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "mine.sh"}, {"type": "command", "command": "py -m ledger_cli.main hook claude"}]}]}}
    assert uninstalled(shared) == {"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "mine.sh"}]}]}}


def test_the_command_installs_into_user_and_project_settings(tmp_path: pathlib.Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".claude").mkdir(parents=True)
    project.mkdir()
    (home / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS))
    assert ledger("hooks", "install", "claude", "--user", "--transport", "command", home=home).returncode == 0
    assert ledger("hooks", "install", "claude", "--user", "--transport", "command", home=home).returncode == 0
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command == f"{sys.executable} -m ledger_cli.main hook claude"
    assert ledger("hooks", "uninstall", "claude", "--user", home=home).returncode == 0
    assert json.loads((home / ".claude" / "settings.json").read_text()) == USER_SETTINGS

    assert ledger("hooks", "install", "claude", "--project", "--root", str(project), "--transport", "command",
                  home=home).returncode == 0
    assert set(json.loads((project / ".claude" / "settings.json").read_text())["hooks"]) == set(CLAUDE_EVENTS)


def test_unreadable_settings_are_refused_and_left_intact(tmp_path: pathlib.Path) -> None:
    (tmp_path / ".claude").mkdir()
    settings = tmp_path / ".claude" / "settings.json"
    for text in ("{broken", '{"hooks": []}'):
        settings.write_text(text)
        done = ledger("hooks", "install", "claude", "--user", home=tmp_path)
        assert done.returncode == 2 and done.stderr.startswith("ledger hooks: ") and "Traceback" not in done.stderr
        assert settings.read_text() == text


def test_codex_hooks_go_to_its_hooks_json(tmp_path: pathlib.Path) -> None:
    codex_home, project = tmp_path / "codex-home", tmp_path / "project"
    project.mkdir()
    done = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hooks", "install", "codex", "--user",
                           "--transport", "command"],
                          capture_output=True, text=True, timeout=60,
                          env={"HOME": str(tmp_path), "CODEX_HOME": str(codex_home), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit"}
    assert hooks["PreToolUse"] == [{"hooks": [{"type": "command",
                                               "command": f"{sys.executable} -m ledger_cli.main hook codex"}]}]
    assert ledger("hooks", "install", "codex", "--root", str(project), home=tmp_path).returncode == 0
    assert (project / ".codex" / "hooks.json").is_file()
    assert ledger("hooks", "uninstall", "codex", "--root", str(project), home=tmp_path).returncode == 0
    assert not (project / ".codex").exists()  # install created it: uninstall removes it


def test_uninstall_removes_the_settings_file_install_created(tmp_path: pathlib.Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    assert ledger("hooks", "install", "claude", "--root", str(project), "--transport", "command", home=home).returncode == 0
    assert (project / ".claude" / "settings.json").is_file()
    done = ledger("hooks", "uninstall", "claude", "--root", str(project), home=home)
    assert done.returncode == 0, done.stderr
    assert not (project / ".claude").exists(), list(project.rglob("*"))


def test_uninstall_gives_back_a_file_with_other_content_byte_for_byte(tmp_path: pathlib.Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    for text in ('{"model":"opus",  "hooks": {}}', "{}"):  # compact, unusual spacing, or empty: as written
        settings.write_text(text)
        assert ledger("hooks", "install", "claude", "--root", str(project), "--transport", "command", home=home).returncode == 0
        assert settings.read_text() != text
        assert ledger("hooks", "uninstall", "claude", "--root", str(project), home=home).returncode == 0
        assert settings.read_text() == text


def test_settings_edited_after_install_keep_the_edit_at_uninstall(tmp_path: pathlib.Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    settings = project / ".claude" / "settings.json"
    assert ledger("hooks", "install", "claude", "--root", str(project), "--transport", "command", home=home).returncode == 0
    edited = {**json.loads(settings.read_text()), "model": "opus"}
    settings.write_text(json.dumps(edited))
    assert ledger("hooks", "uninstall", "claude", "--root", str(project), home=home).returncode == 0
    assert json.loads(settings.read_text()) == {"model": "opus"}


def test_service_transport_posts_tool_events_and_keeps_the_secret_private(tmp_path: pathlib.Path) -> None:
    """Claude's tool events POST to the service with the user's secret; SessionStart runs the thin
    client (it starts the service); the file holding the secret is 0600; uninstall restores it."""
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".claude").mkdir(parents=True)
    project.mkdir()
    settings_file = home / ".claude" / "settings.json"
    settings_file.write_text(json.dumps(USER_SETTINGS))
    for _ in range(2):  # idempotent
        done = ledger("hooks", "install", "claude", "--user", home=home)
        assert done.returncode == 0, done.stderr
    settings = json.loads(settings_file.read_text())
    service = home / ".local" / "state" / "ledger" / "service"
    secret, port = (service / "secret").read_text(), (service / "port").read_text()
    for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        ours = [e for group in settings["hooks"][event] for e in group["hooks"] if is_ledger_hook(e)]
        assert ours == [{"type": "http", "url": f"http://127.0.0.1:{port}/ledger/v1/hook/claude",
                         "headers": {"X-Ledger-Secret": secret}, "timeout": 60}], event
    start = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert start.startswith(f"{sys.executable} -S ") and start.endswith("ledger_client/thin.py claude")
    assert settings_file.stat().st_mode & 0o777 == 0o600
    assert (service / "secret").stat().st_mode & 0o777 == 0o600 and service.stat().st_mode & 0o777 == 0o700
    assert ledger("hooks", "uninstall", "claude", "--user", home=home).returncode == 0
    assert json.loads(settings_file.read_text()) == USER_SETTINGS

    # A project install never puts the secret in the shared settings.json.
    assert ledger("hooks", "install", "claude", "--project", "--root", str(project), home=home).returncode == 0
    assert not (project / ".claude" / "settings.json").exists()
    local = project / ".claude" / "settings.local.json"
    assert secret in local.read_text() and local.stat().st_mode & 0o777 == 0o600
    assert ledger("hooks", "uninstall", "claude", "--project", "--root", str(project), home=home).returncode == 0
    assert not local.exists(), "install created it: uninstall removes it"


def test_codex_service_transport_runs_the_thin_client(tmp_path: pathlib.Path) -> None:
    codex_home = tmp_path / "codex-home"
    done = subprocess.run([sys.executable, "-m", "ledger_cli.main", "hooks", "install", "codex", "--user"],
                          capture_output=True, text=True, timeout=60,
                          env={"HOME": str(tmp_path), "CODEX_HOME": str(codex_home), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    commands = {group["hooks"][0]["command"] for groups in hooks.values() for group in groups}
    assert len(commands) == 1 and commands.pop().endswith("ledger_client/thin.py codex")


def test_reuse_answer_is_carried_into_every_installed_hook(tmp_path: pathlib.Path) -> None:
    """`--reuse-answer reference` reaches each entry: the command hooks' option, the HTTP hooks'
    URL; the compaction hook is installed; uninstall removes them all; the default writes none."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    settings_file = home / ".claude" / "settings.json"
    for transport in ("service", "command"):
        done = ledger("hooks", "install", "claude", "--user", "--transport", transport, "--reuse-answer", "reference",
                      home=home)
        assert done.returncode == 0, done.stderr
        hooks = json.loads(settings_file.read_text())["hooks"]
        assert "PreCompact" in hooks
        for event, groups in hooks.items():
            [entry] = [e for group in groups for e in group["hooks"] if is_ledger_hook(e)]
            where = entry["url"] if entry["type"] == "http" else entry["command"]
            assert where.endswith("?reuse_answer=reference" if entry["type"] == "http" else " --reuse-answer reference"), (
                transport, event, where)
        assert ledger("hooks", "uninstall", "claude", "--user", home=home).returncode == 0
        assert not settings_file.exists() or "reuse" not in settings_file.read_text()
    assert ledger("hooks", "install", "claude", "--user", "--transport", "command", home=home).returncode == 0
    assert "reuse" not in settings_file.read_text(), "the default adds nothing: earlier installs stay byte-identical"


#: The agents whose plugins track no model context: a Reuse can only be answered verbatim.
WITHOUT_CONTEXT = ("codex", "copilot", "gemini", "qwen")


@pytest.mark.parametrize("agent", WITHOUT_CONTEXT)
@pytest.mark.parametrize("transport", ["service", "command"])
def test_reuse_by_reference_is_refused_for_an_agent_without_context_tracking(
        agent: str, transport: str, tmp_path: pathlib.Path) -> None:
    """Accepting it would install hooks that silently answer verbatim: a usage error instead,
    one line naming the agents that can, and no settings file written."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    done = ledger("hooks", "install", agent, "--root", str(project), "--transport", transport,
                  "--reuse-answer", "reference", home=home)
    assert done.returncode == EXIT_USAGE, (done.stdout, done.stderr)
    assert done.stderr.startswith("ledger hooks: ") and len(done.stderr.splitlines()) == 1, done.stderr
    assert "--reuse-answer reference" in done.stderr and "claude" in done.stderr and agent in done.stderr
    assert sorted(p.name for p in project.rglob("*")) == [] and not home.exists()
    # The same install with the default answer goes through.
    assert ledger("hooks", "install", agent, "--root", str(project), "--transport", transport, home=home).returncode == 0
