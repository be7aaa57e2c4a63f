"""`ledger sessions list|show|prune` on real session databases in a temporary state directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ledger_cli.main import main
from ledger_impl import DurableSession
from ledger_impl.store import database_path


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


def make_session(root: Path, state_dir: Path) -> None:
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    with DurableSession.open(root, state_dir=state_dir) as session:
        session.decide("cat a.txt", call_id="one")
        session.record("one", "hello\n", 0)


def test_list_and_show_describe_each_workspace(tmp_path: Path, state_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_session(tmp_path / "repo", state_dir)
    assert main(["sessions", "--state-dir", str(state_dir), "list"]) == 0
    listing = capsys.readouterr().out
    assert "steps 1" in listing and str(tmp_path / "repo") in listing
    ident = listing.split()[0]
    assert main(["sessions", "--state-dir", str(state_dir), "show", ident]) == 0
    shown = capsys.readouterr().out
    assert "@1 cat a.txt [current]" in shown
    assert main(["sessions", "--state-dir", str(state_dir), "show", str(tmp_path / "repo")]) == 0
    assert capsys.readouterr().out == shown


def test_show_of_an_unknown_session_is_a_usage_error(state_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "--state-dir", str(state_dir), "show", "nothing"]) == 2
    assert "no single session" in capsys.readouterr().err


def test_prune_deletes_only_sessions_of_gone_workspaces(tmp_path: Path, state_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_session(tmp_path / "kept", state_dir)
    make_session(tmp_path / "gone", state_dir)
    gone_db = database_path(tmp_path / "gone", state_dir)
    shutil.rmtree(tmp_path / "gone")
    assert main(["sessions", "--state-dir", str(state_dir), "prune", "--dry-run"]) == 0
    assert gone_db.exists()
    assert main(["sessions", "--state-dir", str(state_dir), "prune"]) == 0
    assert not gone_db.exists() and not Path(str(gone_db) + "-wal").exists()
    assert database_path(tmp_path / "kept", state_dir).exists()
    assert main(["sessions", "--state-dir", str(state_dir), "prune", "--older-than", "0"]) == 0
    assert not database_path(tmp_path / "kept", state_dir).exists()
    capsys.readouterr()


def test_a_negative_age_is_a_usage_error(state_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions", "--state-dir", str(state_dir), "prune", "--older-than", "-1"]) == 2
    assert "at least 0" in capsys.readouterr().err
