"""The state directory: one rule for Ledger (`ledger_impl.state_directory`), and the thin
client's own copy of it (`ledger_client.thin` imports nothing of Ledger), which must name the
same directory, hence the same service socket, in every environment."""

from __future__ import annotations

import os
import pathlib

import pytest

from ledger_client import thin
from ledger_impl import state_directory
from ledger_impl.service.layout import Layout

# (XDG_STATE_HOME, HOME): None leaves the variable unset.
ENVIRONMENTS = {
    "xdg-set": ("{tmp}/xdg", "{tmp}/home"),
    "xdg-set-with-a-trailing-slash": ("{tmp}/xdg/", "{tmp}/home"),
    "xdg-unset": (None, "{tmp}/home"),
    "xdg-empty": ("", "{tmp}/home"),
    "xdg-relative": ("relative/xdg", "{tmp}/home"),
    "xdg-and-home-unset": (None, None),  # expanduser falls back to the password database
    "home-only-slash": (None, "/"),
}


def set_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, case: str) -> None:
    for name, value in zip(("XDG_STATE_HOME", "HOME"), ENVIRONMENTS[case]):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value.format(tmp=tmp_path))


@pytest.mark.parametrize("case", sorted(ENVIRONMENTS))
def test_the_thin_client_s_copy_of_the_default_agrees_with_ledger_s(
    case: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_environment(monkeypatch, tmp_path, case)
    monkeypatch.chdir(tmp_path)  # a relative XDG_STATE_HOME resolves against the cwd on both sides
    ours = state_directory.default()
    assert os.path.abspath(thin.state_dir(None)) == os.path.abspath(ours)
    # What matters: the client connects where a service started with no --state-dir listens.
    assert os.path.abspath(thin.socket_path(thin.state_dir(None))) == os.fspath(Layout.of(None).socket_path)


@pytest.mark.parametrize(
    ("xdg", "expected"), [("{tmp}/xdg", "{tmp}/xdg/ledger"), ("", "{tmp}/home/.local/state/ledger")]
)
def test_the_default_follows_xdg_state_home_else_home(
    xdg: str, expected: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", xdg.format(tmp=tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert state_directory.default() == pathlib.Path(expected.format(tmp=tmp_path))


def test_a_named_state_directory_wins_over_the_default(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state_directory.resolve(tmp_path / "mine") == tmp_path / "mine"
    assert state_directory.resolve(None) == tmp_path / "xdg" / "ledger"


def test_a_state_dir_beside_the_root_is_allowed(tmp_path: pathlib.Path) -> None:
    # Only the root and what is below it are refused, whatever sorts before or after it.
    root = tmp_path / "m-root"
    root.mkdir()
    for name in ("a-state", "z-state", "m-root2"):
        state_directory.check_outside(root, tmp_path / name)
    for inside in (root, root / "state"):
        with pytest.raises(ValueError, match="inside the workspace"):
            state_directory.check_outside(root, inside)
