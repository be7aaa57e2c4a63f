"""The plugin protocol's own logic (`ledger_impl/agents/spec.py`): which settings file each scope
names, and the call id most agents send. The plugins' tests reach these only through their
agents' settings, where the user's file and the project's are all most of them have."""

from __future__ import annotations

import pathlib

import pytest

from ledger_impl.agents.spec import SettingsFiles, tool_use_id


def _files(local: str | None) -> SettingsFiles:
    return SettingsFiles(project=".agent/settings.json", user=lambda: pathlib.Path("/home/u/.agent/settings.json"),
                         user_shown="~/.agent/settings.json", local=local)


@pytest.mark.parametrize("local, scope, expected", [
    (".agent/settings.local.json", "user", "/home/u/.agent/settings.json"),
    (".agent/settings.local.json", "project", "/ws/.agent/settings.json"),
    (".agent/settings.local.json", "local", "/ws/.agent/settings.local.json"),
    (None, "project", "/ws/.agent/settings.json"),
    (None, "local", "/ws/.agent/settings.json"),  # no per-user file: the project's holds it
])
def test_each_scope_names_its_settings_file(local: str | None, scope: str, expected: str) -> None:
    assert _files(local).path(scope, "/ws") == pathlib.Path(expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("payload, expected", [
    ({"tool_use_id": "toolu_01"}, "toolu_01"), ({"tool_use_id": 7}, None), ({"tool_use_id": None}, None), ({}, None),
])
def test_a_call_id_is_the_payload_s_tool_use_id_when_it_is_text(payload: dict, expected: str | None) -> None:
    assert tool_use_id(payload) == expected
