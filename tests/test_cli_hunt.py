"""`ledger check-detector` and `ledger replay`: exit codes 0/1/2 and what they print."""

from __future__ import annotations

import json
import pathlib
import textwrap

import pytest

from rich.console import Console

from ledger_cli.commands.check_detector import print_summary
from ledger_cli.main import main

from ledger_properties import sandbox

REPO = pathlib.Path(__file__).parent.parent
# Replays run sandboxed where bubblewrap works (tests/test_replay_safety.py covers the sandbox).
UNSANDBOXED: tuple[str, ...] = () if sandbox.available() else ("--unsandboxed",)


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
    assert out.is_dir() and path.parent == out  # --out names a directory, created since it was missing
    document = json.loads(path.read_text())
    assert document["detector"] == "examples.append_blind_detector:make"
    # One numbering, from 1: the summary, the file and the replay name the same step.
    step = stale[0]["step"]
    assert document["violation"]["step"] == step and document["steps"][step - 1]["command"] == document["violation"]["command"]
    # The finding says which read went stale: the command, its step, the file it reads.
    read = stale[0]["stale_read"]
    assert read["step"] == step and read["command"] == document["violation"]["command"]
    assert read["served"] is True and read["sentence"].startswith(f"step {step} `{read['command']}` was served a stale")
    assert read["file"] == (document["violation"]["command"].split()[-1].removeprefix("./") if not read["tree"] else ".")
    # The human summary's hint names the files to replay.
    console = Console(record=True, width=200)
    print_summary(summary, console)
    assert f"ledger replay {path}" in console.export_text()

    assert main(["replay", str(path)]) == 2  # a detector that does not ship with Ledger is code
    assert "--trust-detector" in capsys.readouterr().err
    assert main(["replay", str(path), "--trust-detector", "--path", str(REPO), *UNSANDBOXED]) == 1
    shown = capsys.readouterr().out
    assert f"violation at step {step}" in shown
    assert "reuse" in shown and "--- stale (reused)" in shown and "+++ fresh (run now)" in shown
    assert main(["replay", str(path), "--detector", "ledger_impl.detectors:default_detector", *UNSANDBOXED]) == 0
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


# --- failing early, and blaming the right party ----------------------------------------------


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--seed", "-1"), "--seed must be between"),
        (("--seed", str(2**40)), "--seed must be between"),
        (("--max-examples", "0"), "--max-examples must be at least 1"),
        (("--path", "/no/such/dir"), "is not a directory"),
    ],
)
def test_check_detector_bad_arguments_exit_2_before_any_work(
    user_module: pathlib.Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], message: str
) -> None:
    assert _check("user_detectors:good", *extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err, err


def test_check_detector_refuses_an_existing_file_at_out_at_once(
    user_module: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found in review: it hunted for minutes, then blamed the detector for a FileExistsError."""
    import ledger_properties.hunt

    monkeypatch.setattr(ledger_properties.hunt, "run_hunt", lambda *a, **k: pytest.fail("the hunt started"))
    taken = user_module / "taken"
    taken.write_text("a user's file\n")
    for out in (taken, taken / "below"):
        assert _check("user_detectors:good", "--out", str(out)) == 2
        err = capsys.readouterr().err.strip()
        assert "--out" in err and "not a directory" in err and "\n" not in err, err
    assert taken.read_text() == "a user's file\n"


def test_a_crash_of_the_harness_is_not_blamed_on_the_detector(
    user_module: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger_properties import oracle

    def broken(self: object, template: str) -> object:
        raise KeyError("an oracle bug")

    monkeypatch.setattr(oracle.CheckedSession, "step", broken)  # in this process: one worker
    code = _check("user_detectors:good", "--max-examples", "2", "--seed", "1", "--out", str(user_module / "o"), "--workers", "1")
    assert code == 3
    err = capsys.readouterr().err.strip()
    assert "internal error in the hunt harness (not your detector)" in err and "an oracle bug" in err, err


def test_a_detector_factory_failing_mid_hunt_is_the_detectors_fault(
    user_module: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (user_module / "flaky_factory.py").write_text(textwrap.dedent('''
        from ledger_impl.detectors import default_detector
        calls = []
        def make():
            calls.append(1)
            if len(calls) > 1:  # the first call is load_factory's check
                raise OSError("out of inotify watches")
            return default_detector()
    '''))
    # One worker: the factory counts its calls per process, and spawned workers start at zero.
    code = _check("flaky_factory:make", "--max-examples", "2", "--seed", "1", "--out", str(user_module / "o"), "--workers", "1")
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "the detector factory raised OSError: out of inotify watches" in err and "harness" not in err, err


def test_detector_errors_are_surfaced_in_the_hunt_report(
    user_module: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (user_module / "crashy.py").write_text(textwrap.dedent('''
        from ledger_impl.detectors import default_detector
        class Crashy:
            def __init__(self):
                self.inner = default_detector()
            def before(self, root, command):
                return self.inner.before(root, command)
            def after(self, root, command, exit_code):
                raise RuntimeError("cannot read the event queue")
            def close(self):
                self.inner.close()
        def make():
            return Crashy()
    '''))
    code = _check("crashy:make", "--max-examples", "3", "--seed", "4", "--out", str(user_module / "o"), "--json")
    summary = json.loads(capsys.readouterr().out)
    assert code == 0, summary  # an error costs reuse (unknown), never safety
    assert any("cannot read the event queue" in message for message in summary["detector_errors"]), summary
