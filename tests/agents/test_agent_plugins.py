"""Every registered agent plugin works through the generic callers, read from its record alone.

A new agent module gets these checks for nothing: `ledger hooks install|uninstall` puts its
events and matchers into the settings file its record names, for each scope and transport, and
takes exactly them out again; `ledger hook` answers its calls; the registry refuses a module
whose record is not named after it.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

import ledger_impl.agents
from ledger_impl.agents import AGENTS, HOOKED, discover
from ledger_impl.agents.spec import Agent


def ledger(*args: str, home: pathlib.Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ledger_cli.main", *args], capture_output=True, text=True,
                          input=stdin, timeout=60, env={"HOME": str(home), "PATH": "/usr/bin:/bin",
                                                        "CODEX_HOME": str(home / "codex-home")})


def expected_groups(name: str, entry_type: str) -> dict[str, list[str | int | None]]:
    """Per event, the matcher, entry type and timeout of Ledger's group, as the record asks."""
    hooks = HOOKED[name]
    return {event: [matcher, "http" if entry_type == "service" and event in hooks.http_events else "command",
                    hooks.timeout_s] for event, matcher in hooks.events.items()}


def installed_groups(path: pathlib.Path) -> dict[str, list[str | int | None]]:
    settings = json.loads(path.read_text())["hooks"]
    found = {}
    for event, groups in settings.items():
        (group,) = groups
        (entry,) = group["hooks"]
        found[event] = [group.get("matcher"), entry["type"], entry.get("timeout")]
    return found


@pytest.mark.parametrize("transport", ["command", "service"])
@pytest.mark.parametrize("scope", ["project", "user"])
@pytest.mark.parametrize("name", sorted(HOOKED))
def test_install_writes_the_records_events_where_the_record_says(
        name: str, scope: str, transport: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))  # what the record's `user()` reads, as the child does
    monkeypatch.setenv("CODEX_HOME", str(home / "codex-home"))
    local = transport == "service" and HOOKED[name].http_events
    path = HOOKED[name].settings.path("user" if scope == "user" else "local" if local else "project", project)
    where = ["--user"] if scope == "user" else ["--root", str(project)]
    state = ["--state-dir", str(tmp_path / "state")]
    done = ledger("hooks", "install", name, *where, *state, "--transport", transport, home=home)
    assert done.returncode == 0, done.stderr
    assert installed_groups(path) == expected_groups(name, transport)
    assert ledger("hooks", "uninstall", name, *where, home=home).returncode == 0
    assert not path.exists()


@pytest.mark.parametrize("name", sorted(HOOKED))
def test_the_hook_answers_each_agent_and_ignores_what_it_does_not_govern(name: str, tmp_path: pathlib.Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    before_tool = HOOKED[name].before_tool
    call = {"hook_event_name": before_tool, "tool_name": "NotAGovernedTool", "tool_input": {"command": "cat a.txt"},
            "tool_use_id": "t1", "cwd": str(root), "session_id": "s"}
    state = ["--state-dir", str(tmp_path / "state")]
    ignored = ledger("hook", name, *state, home=tmp_path, stdin=json.dumps(call))
    assert (ignored.returncode, ignored.stdout, ignored.stderr) == (0, "", "")
    shell = HOOKED[name].tools.shell[0]
    governed = ledger("hook", name, *state, home=tmp_path, stdin=json.dumps({**call, "tool_name": shell}))
    assert governed.returncode == 0 and "internal error" not in governed.stderr, governed.stderr
    assert (tmp_path / "state").exists()  # the governed call opened the session


def test_every_agent_module_is_registered_under_its_name() -> None:
    package = pathlib.Path(ledger_impl.agents.__file__).parent
    defining = set()
    for path in package.glob("[!_]*.py"):
        module = __import__(f"ledger_impl.agents.{path.stem}", fromlist=["AGENT"])
        if isinstance(getattr(module, "AGENT", None), Agent):
            defining.add(path.stem)
    assert defining == set(AGENTS) and all(AGENTS[name].name == name for name in AGENTS)
    assert set(HOOKED) == {name for name, agent in AGENTS.items() if agent.hooks is not None}


def test_discovery_registers_records_by_module_name_and_refuses_a_misnamed_one(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "fake_agents"
    package.mkdir()
    (package / "__init__.py").write_text("")
    record = "from ledger_impl.agents.spec import Agent\nAGENT = Agent(name={!r}, tool_mask=lambda names: '')\n"
    (package / "zeta.py").write_text(record.format("zeta"))
    (package / "alpha.py").write_text(record.format("alpha"))
    (package / "helpers.py").write_text("VALUE = 1\n")  # not an agent: no AGENT
    monkeypatch.syspath_prepend(str(tmp_path))
    assert list(discover("fake_agents", package)) == ["alpha", "zeta"]
    (package / "misnamed.py").write_text(record.format("other"))
    with pytest.raises(TypeError, match="misnamed"):
        discover("fake_agents", package)


@pytest.mark.parametrize("name", sorted(HOOKED))
def test_install_keeps_the_user_s_settings_and_hooks_and_uninstall_takes_out_exactly_ledger_s(
        name: str, tmp_path: pathlib.Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    path = HOOKED[name].settings.path("project", project)
    path.parent.mkdir(parents=True)
    before_tool = HOOKED[name].before_tool
    own = {"type": "command", "command": "/usr/local/bin/audit-hook"}
    settings = {"model": {"name": "theirs"}, "hooks": {before_tool: [{"matcher": ".*", "hooks": [own]}]}}
    path.write_text(json.dumps(settings))
    where = ["--root", str(project), "--state-dir", str(tmp_path / "state"), "--transport", "command"]
    for _ in range(2):  # twice is once
        assert ledger("hooks", "install", name, *where, home=home).returncode == 0
    installed = json.loads(path.read_text())
    assert installed["model"] == {"name": "theirs"}
    assert installed["hooks"][before_tool][0] == {"matcher": ".*", "hooks": [own]}
    assert installed_groups_count(installed) == len(HOOKED[name].events) + 1
    installed["hooks"]["SessionEnd"] = [{"hooks": [own]}]  # the user edits the file meanwhile
    path.write_text(json.dumps(installed))
    assert ledger("hooks", "uninstall", name, "--root", str(project), home=home).returncode == 0
    assert json.loads(path.read_text()) == {**settings, "hooks": {**settings["hooks"], "SessionEnd": [{"hooks": [own]}]}}


def installed_groups_count(settings: dict[str, Any]) -> int:
    return sum(len(groups) for groups in settings["hooks"].values())


@pytest.mark.parametrize("name", ["codex", "copilot", "gemini", "qwen"])
def test_a_hook_asked_for_references_it_cannot_give_answers_and_says_so(name: str, tmp_path: pathlib.Path) -> None:
    """`ledger hook NAME --reuse-answer reference` for an agent whose plugin tracks no model
    context (hand-written settings: install refuses it) never fails the call: it answers as
    with verbatim answers, and the user is told on the call before a tool runs."""
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    hooks = HOOKED[name]
    call = {"hook_event_name": hooks.before_tool, "tool_name": hooks.tools.shell[0], "tool_input": {"command": "cat a.txt"},
            "tool_use_id": "t1", "cwd": str(root), "session_id": "s"}
    verbatim = ledger("hook", name, "--state-dir", str(tmp_path / "a"), home=tmp_path, stdin=json.dumps(call))
    asked = ledger("hook", name, "--state-dir", str(tmp_path / "b"), "--reuse-answer", "reference", home=tmp_path,
                   stdin=json.dumps(call))
    assert (verbatim.returncode, asked.returncode) == (0, 0) and "internal error" not in asked.stderr, asked.stderr
    reply = json.loads(asked.stdout)
    note = reply.pop("systemMessage")
    assert "--reuse-answer reference" in note and "verbatim" in note, note
    assert reply == json.loads(verbatim.stdout or "{}"), "otherwise the answer a verbatim hook gives"
