"""`ledger check-detector` and `ledger replay`: exit codes 0/1/2 and what they print."""

from __future__ import annotations

import json
import pathlib
import textwrap

import pytest

from ledger_cli.main import main

REPO = pathlib.Path(__file__).parent.parent


@pytest.fixture
def user_module(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A directory with user detector modules, importable through --path."""
    (tmp_path / "user_detectors.py").write_text(textwrap.dedent('''
        from ledger_impl.detectors import default_detector
        def good():
            return default_detector()
        def raises():
            raise RuntimeError("no inotify for you")
        def not_a_detector():
            return 42
        NOT_CALLABLE = 7
    '''))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _check(*args: str) -> int:
    return main(["check-detector", *args])


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_such_module_xyz:make", "not found"),
        ("user_detectors:raises", "raised RuntimeError: no inotify for you"),
        ("user_detectors:not_a_detector", "not a detector"),
        ("user_detectors:NOT_CALLABLE", "not callable"),
        ("user_detectors:missing", "no attribute"),
        ("user_detectors", "expected MODULE:FACTORY"),
    ],
)
def test_check_detector_usage_errors_exit_2_with_one_line(
    user_module: pathlib.Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    assert _check(spec, "--path", str(user_module)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err, err


def test_check_detector_unknown_profile_exits_2(user_module: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _check("user_detectors:good", "--profile", "nope") == 2
    assert "unknown profile" in capsys.readouterr().err


def test_check_detector_passes_a_sound_detector(user_module: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = user_module / "out"
    code = _check("user_detectors:good", "--max-examples", "3", "--seed", "5", "--out", str(out), "--json")
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary
    assert summary["violations"] == [] and summary["steps"] > 0
    assert not out.exists() or not list(out.iterdir())


def test_check_detector_catches_the_append_blind_example_and_replay_shows_the_stale_read(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)  # where a user runs it: examples/ is importable from here
    out = tmp_path / "found"
    code = _check("examples.append_blind_detector:make", "--seed", "2", "--out", str(out), "--json")
    summary = json.loads(capsys.readouterr().out)
    print(f"\ncheck-detector append-blind: {summary['seconds']} s, {summary['steps_per_second']} steps/s")
    assert code == 1
    stale = [v for v in summary["violations"] if v["property"] == "reuse-is-fresh"]
    assert stale, summary
    path = pathlib.Path(stale[0]["file"])
    assert json.loads(path.read_text())["detector"] == "examples.append_blind_detector:make"

    assert main(["replay", str(path)]) == 1
    shown = capsys.readouterr().out
    assert "reuse" in shown and "--- stale (reused)" in shown and "+++ fresh (run now)" in shown
    assert main(["replay", str(path), "--detector", "ledger_impl.detectors:default_detector"]) == 0
    assert "not reproduced" in capsys.readouterr().out


def test_replay_of_a_missing_or_malformed_file_exits_2(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "absent.json")]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema": "something-else"}))
    assert main(["replay", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "schema" in err


def test_check_detector_workers_below_one_exits_2_before_hunting(user_module: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _check("user_detectors:good", "--workers", "0") == 2
    assert "--workers must be at least 1" in capsys.readouterr().err
