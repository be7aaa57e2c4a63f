"""`ledger audit` end to end: findings, bad input, the user's checkout, parallel and resumed runs.

Commands run for real, only in throwaway copies under pytest's tmp_path (inside bubblewrap
when it works here).
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from ledger_cli.main import main
from ledger_properties import sandbox
from ledger_properties.audit import engine, formats, report_json, runner
from ledger_properties.audit.workspace import Base, extract_data, materialize, repo_from_sdist, resolve
from ledger_properties.ground_truth import look

SANDBOX_FLAGS = [] if sandbox.available() else ["--no-sandbox"]
UNSOUND = "ledger_impl.detectors.unsound:optimistic_rules"


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout.strip()


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    """The user's repository: two commits, so that the base is not HEAD."""
    repo = tmp_path / "project"
    (repo / "pkg").mkdir(parents=True)
    (repo / "notes.txt").write_text("before\n")
    (repo / "pkg" / "mod.py").write_text("".join(f"line {i}\n" for i in range(1, 41)))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD")
    (repo / "later.txt").write_text("a later commit\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "later")
    return repo, base


def _commands(path: Path, commands: list[str]) -> Path:
    path.write_text("".join(json.dumps({"command": c}) + "\n" for c in commands))
    return path


# The three findings of the issue (steps counted from 1): step 2 re-reads unchanged content;
# step 4 writes a script that step 6 runs to edit notes.txt (the command text does not show the
# edit); step 7 repeats the search of step 5, which a detector blind to the script serves stale. The trap is a tree
# read on purpose: a file read would be refused by the observation fingerprint (the file's own
# lstat identity changed), whatever the detector says.
THREE_FINDINGS = [
    "cat /testbed/notes.txt",
    "cat notes.txt",
    "cat -n pkg/mod.py",
    "printf 'open(\"notes.txt\", \"w\").write(\"after\\\\n\")\\n' > fix.py",
    "grep -rn before --include=*.txt .",
    "python3 fix.py",
    "grep -rn before --include=*.txt .",
]


def _audit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["audit", *argv, *SANDBOX_FLAGS])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_redundant_read_script_edit_and_stale_trap_are_all_reported(
    tmp_path: Path, project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = project
    checkout = look(repo)
    trajectory = _commands(tmp_path / "three.jsonl", THREE_FINDINGS)
    report = tmp_path / "report.json"
    # The probe off: its lstat check of notes.txt would refuse the trap's Reuse (tested below).
    code, out, _ = _audit(
        [str(trajectory), "--repo", str(repo), "--base-commit", base, "--detector", UNSOUND, "--no-probe", "--json", str(report)], capsys
    )
    assert code == 1
    doc = json.loads(report.read_text())
    assert doc["schema"] == report_json.SCHEMA
    [result] = doc["trajectories"]
    assert result["status"] == "done" and result["replayed"] == len(THREE_FINDINGS)
    by_step = {record["step"]: record for record in result["timeline"]}
    assert by_step[2]["redundant"] == "verbatim"  # the re-read of unchanged content (steps count from 1)
    assert result["misses"][UNSOUND] == [{"step": 6, "command": "python3 fix.py", "missing": ["notes.txt"]}]
    assert result["misses"]["default"] == [] and result["misses"]["rules"] == []  # rules says "unknown" instead
    assert by_step[6]["unknown"] == ["rules"] and result["unknown"] == {UNSOUND: 0, "default": 0, "rules": 1}
    assert doc["totals"]["unknown"] == result["unknown"]
    [stale] = result["stale"]
    assert stale["step"] == 7 and "-./notes.txt:1:before" in stale["diff"]
    assert by_step[7]["redundant"] is None  # the content did change: a perfect ledger re-reads
    assert "STALE" in out
    assert look(repo) == checkout  # the user's checkout was only read


def test_with_the_probe_the_blind_detector_s_trap_is_not_served_stale(
    tmp_path: Path, project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = project
    trajectory = _commands(tmp_path / "three.jsonl", THREE_FINDINGS)
    report = tmp_path / "report.json"
    _audit([str(trajectory), "--repo", str(repo), "--base-commit", base, "--detector", UNSOUND, "--json", str(report)], capsys)
    [result] = json.loads(report.read_text())["trajectories"]
    assert result["stale"] == [] and result["misses"][UNSOUND]  # the miss is still reported
    assert {record["step"]: record for record in result["timeline"]}[6]["verdict"] != "reuse"


def test_the_default_detector_serves_nothing_stale(tmp_path: Path, project: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    repo, base = project
    trajectory = _commands(tmp_path / "three.jsonl", THREE_FINDINGS)
    report = tmp_path / "report.json"
    code, _, _ = _audit([str(trajectory), "--repo", str(repo), "--base-commit", base, "--json", str(report)], capsys)
    assert code == 0
    totals = json.loads(report.read_text())["totals"]
    assert (totals["stale"], totals["violations"], totals["misses"]) == (0, 0, {"default": 0, "rules": 0})
    assert totals["verdicts"]["reuse"] == 1 and totals["perfect"] == 1 and totals["perfect_share"] == 1.0
    assert totals["reused"]["bytes"] == len("before\n")


def test_the_copy_is_at_the_base_commit(tmp_path: Path, project: tuple[Path, str]) -> None:
    repo, base = project
    parent = tmp_path / "copy"
    parent.mkdir()
    workspace = materialize(resolve(Base(str(repo), base[:10])), parent)
    assert (workspace / "notes.txt").exists() and not (workspace / "later.txt").exists()
    assert _git(workspace, "rev-parse", "HEAD") == base


def test_rereads_verbatim_and_sub_range_by_ground_truth(tmp_path: Path) -> None:
    workspace = tmp_path / "testbed"
    (workspace / "pkg").mkdir(parents=True)
    (workspace / "pkg" / "mod.py").write_text("".join(f"line {i}\n" for i in range(1, 41)))
    (workspace / "notes.txt").write_text("before\n")
    commands = [
        "cat -n pkg/mod.py",
        "sed -n '1,20p' /testbed/pkg/mod.py",
        "cat -n /testbed/pkg/mod.py",  # verbatim: same file, view, nothing changed
        "sed -n '5,9p' pkg/mod.py",  # sub-range of step 2
        "echo note >> notes.txt",  # another file changes
        "cat -n pkg/mod.py",  # still verbatim: its file is unchanged
        "grep -rn 'line 3' pkg",
        "python3 -c \"open('notes.txt', 'a').write('x')\"",  # the tree changes, unseen in the text
        "grep -rn 'line 3' pkg",  # not redundant: a tree read after a change
        "sed -n '30,35p' pkg/mod.py",  # outside every earlier range
        "echo 'line 41' >> pkg/mod.py",
        "sed -n '2,4p' pkg/mod.py",  # inside 1-20, but the file changed since (same lines, though)
    ]
    trajectory = formats.load(_commands(tmp_path / "rereads.jsonl", commands))[0]
    result = engine.replay(trajectory, workspace, engine.Settings())
    marks = {r["step"]: r["redundant"] for r in result["timeline"]}
    assert marks == {1: None, 2: None, 3: "verbatim", 4: "sub-range", 5: None, 6: "verbatim", 7: None, 8: None, 9: None, 10: None,
                     11: None, 12: None}
    assert result["stale"] == [] and result["violations"] == [] and result["misses"]["default"] == []
    assert result["reused"]["count"] <= result["perfect"] == 3


def test_claude_code_file_tools_are_replayed_as_file_operations(tmp_path: Path) -> None:
    workspace = tmp_path / "proj"
    workspace.mkdir()
    (workspace / "a.py").write_text("x = 1\n")

    def tool(name: str, given: dict[str, Any]) -> str:
        return json.dumps({"type": "assistant", "cwd": "/home/me/proj", "sessionId": "s",
                           "message": {"role": "assistant", "content": [{"type": "tool_use", "id": name, "name": name, "input": given}]}})

    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join([
        tool("Read", {"file_path": "/home/me/proj/a.py"}),
        tool("Edit", {"file_path": "/home/me/proj/a.py", "old_string": "x = 1", "new_string": "x = 2"}),
        tool("Read", {"file_path": "/home/me/proj/a.py"}),
        tool("Read", {"file_path": "/home/me/proj/a.py"}),
        tool("Write", {"file_path": "/home/me/proj/b.py", "content": "y = 3\n"}),
        tool("Bash", {"command": "cat b.py"}),
    ]) + "\n")
    [trajectory] = formats.load(transcript)
    result = engine.replay(trajectory, workspace, engine.Settings())
    assert (workspace / "a.py").read_text() == "x = 2\n" and (workspace / "b.py").read_text() == "y = 3\n"
    assert [r["redundant"] for r in result["timeline"]] == [None, None, None, "verbatim", None, None]
    assert [r["verdict"] for r in result["timeline"]] == ["allow", "allow", "allow", "reuse", "allow", "allow"]
    assert result["stale"] == [] and all(m == [] for m in result["misses"].values())


def test_command_and_trajectory_time_limits(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    trajectory = formats.load(_commands(tmp_path / "slow.jsonl", ["sleep 5", "ls", "ls"]))[0]
    result = engine.replay(trajectory, workspace, engine.Settings(command_timeout=0.5, trajectory_timeout=0.3))
    assert result["status"] == "timed out"
    assert result["replayed"] == 1 and result["skipped"] == {engine.TIME_LIMIT: 2}
    assert result["timeline"][0]["bytes"] > 0  # the Runtime's timeout note


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("truncated", "truncated or invalid JSON"),
        ("unknown", "unknown format"),
        ("missing-commit", "is not in"),
        ("outside", "outside the workspace"),
        ("no-base", "say where to replay"),
        ("bad-detector", "not found"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_leaves_the_checkout_alone(
    tmp_path: Path, project: tuple[Path, str], capsys: pytest.CaptureFixture[str], case: str, message: str
) -> None:
    repo, base = project
    checkout = look(repo)
    good = _commands(tmp_path / "good.jsonl", ["ls"])
    inputs = {
        "truncated": (tmp_path / "t.jsonl", '{"command": "ls"}\n{"command": "cat no'),
        "unknown": (tmp_path / "u.json", '{"steps": []}'),
        "outside": (tmp_path / "o.jsonl", json.dumps({"command": f"echo owned > {repo}/notes.txt"}) + "\n"),
    }
    trajectory = good
    if case in inputs:
        trajectory, text = inputs[case]
        trajectory.write_text(text)
    argv = [str(trajectory)]
    if case != "no-base":
        argv += ["--repo", str(repo), "--base-commit", "0" * 40 if case == "missing-commit" else base]
    if case == "bad-detector":
        argv += ["--detector", "no_such_module:make"]
    code, out, err = _audit(argv, capsys)
    assert code == 2
    assert err.startswith("ledger audit: ") and message in err and err.count("\n") == 1
    assert "Traceback" not in err + out
    assert look(repo) == checkout
    assert (repo / "notes.txt").read_text() == "before\n"


def _totals_without_time(path: Path) -> dict[str, Any]:
    totals = json.loads(path.read_text())["totals"]
    totals.pop("seconds")
    return totals


def test_parallel_resumed_and_executor_runs_give_the_same_totals(
    tmp_path: Path, project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = project
    files = [
        _commands(tmp_path / "a.jsonl", ["cat notes.txt", "cat notes.txt", "grep -rn line pkg | head -3"]),
        _commands(tmp_path / "b.jsonl", ["echo more >> notes.txt", "cat notes.txt", "cat notes.txt", "pip install x"]),
        _commands(tmp_path / "c.jsonl", ["sed -n '1,10p' pkg/mod.py", "sed -n '2,4p' pkg/mod.py", "ls pkg"]),
    ]
    results = tmp_path / "results"
    common = [*map(str, files), "--repo", str(repo), "--base-commit", base]
    assert _audit([*common, "-j", "2", "--results", str(results), "--json", str(tmp_path / "j2.json")], capsys)[0] == 0
    assert _audit([*common, "-j", "1", "--json", str(tmp_path / "j1.json")], capsys)[0] == 0
    saved = sorted(results.iterdir())
    assert len(saved) == 3
    stamps = [p.stat().st_mtime_ns for p in saved]
    assert _audit([*common, "-j", "2", "--results", str(results), "--json", str(tmp_path / "again.json")], capsys)[0] == 0
    assert [p.stat().st_mtime_ns for p in saved] == stamps  # resumed: nothing recomputed
    expected = _totals_without_time(tmp_path / "j1.json")
    assert expected["replayed"] == 9 and expected["skipped"] == {"package install": 1}
    assert expected["redundant"] == {"verbatim": 2, "sub-range": 1, "bytes": expected["redundant"]["bytes"], "tokens": expected["redundant"]["tokens"]}
    assert _totals_without_time(tmp_path / "j2.json") == expected
    assert _totals_without_time(tmp_path / "again.json") == expected

    # From Python, with any concurrent.futures executor (here the local process pool).
    jobs = runner.plan(files, repo=str(repo), commit=base, sandbox=bool(not SANDBOX_FLAGS))
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        direct = runner.run(jobs, pool, in_flight=2)
    assert [r["name"] for r in direct] == ["a.jsonl", "b.jsonl", "c.jsonl"]
    from_python = report_json.totals(direct)
    from_python.pop("seconds")
    assert from_python == expected


def test_a_failing_trajectory_fails_alone(tmp_path: Path, project: tuple[Path, str]) -> None:
    repo, base = project
    files = [_commands(tmp_path / "ok.jsonl", ["ls"]), _commands(tmp_path / "gone.jsonl", ["ls"])]
    jobs = runner.plan(files, repo=str(repo), commit=base, sandbox=bool(not SANDBOX_FLAGS))
    (tmp_path / "gone.jsonl").unlink()  # the file vanished between planning and running
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = runner.run(jobs, pool, in_flight=2)
    assert [(r["name"], r["status"]) for r in results] == [("gone.jsonl", "failed"), ("ok.jsonl", "done")]
    assert report_json.totals(results)["failed"] == 1


def test_an_sdist_becomes_a_repository_to_audit(tmp_path: Path) -> None:
    source = tmp_path / "src" / "demo-1.0"
    source.mkdir(parents=True)
    (source / "setup.py").write_text("print('demo')\n")
    sdist = tmp_path / "demo-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(source, arcname="demo-1.0")
    base = repo_from_sdist(sdist, tmp_path / "repos" / "demo")
    assert (Path(base.repo) / "setup.py").read_text() == "print('demo')\n"
    assert len(base.commit) == 40


def test_the_worker_runs_as_a_module() -> None:
    done = subprocess.run([sys.executable, "-c", "import ledger_properties.audit.worker"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_runtime_says_when_an_output_is_incomplete_and_which_jobs_live(tmp_path: Path) -> None:
    from ledger_impl import Runtime

    with Runtime(tmp_path, timeout=0.5) as runtime:
        assert runtime.step("echo done").complete
        assert not runtime.step("sleep 3").complete  # timed out
        step = runtime.step("sleep 30 & echo started")
        assert not step.complete and len(runtime.background_jobs) == 1
        runtime.stop_background()
        assert runtime.background_jobs == frozenset()


def test_a_witness_detectors_misses_are_counted_apart_from_the_deciders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ledger_impl import default_detector
    from ledger_impl.detectors.unsound import optimistic_rules

    monkeypatch.setattr(engine, "detectors_for", lambda settings: (("default", default_detector()), [("blind", optimistic_rules())]))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("before\n")
    trajectory = formats.load(_commands(tmp_path / "t.jsonl", THREE_FINDINGS[1:]))[0]
    result = engine.replay(trajectory, workspace, engine.Settings())
    assert result["detectors"] == ["default", "blind"]
    assert result["misses"] == {"default": [], "blind": [{"step": 5, "command": "python3 fix.py", "missing": ["notes.txt"]}]}
    assert result["stale"] == []  # the sound detector decided


def test_without_bubblewrap_audit_runs_only_when_told(
    tmp_path: Path, project: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base = project
    monkeypatch.setattr(sandbox, "available", lambda: False)
    trajectory = _commands(tmp_path / "t.jsonl", ["ls"])
    code = main(["audit", str(trajectory), "--repo", str(repo), "--base-commit", base])
    err = capsys.readouterr().err
    assert code == 2 and "--no-sandbox" in err and err.count("\n") == 1
    assert main(["audit", str(trajectory), "--repo", str(repo), "--base-commit", base, "--no-sandbox"]) == 0


@pytest.mark.parametrize("filters", [True, False], ids=["python-3.11.4+", "older-3.11"])
def test_sdist_extraction_keeps_to_the_tree_with_and_without_tarfile_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filters: bool
) -> None:
    """Python before 3.11.4 has no extraction filters; the hand-made check refuses the same."""
    import io
    import os

    if not filters:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)

    def archive(*members: tarfile.TarInfo) -> tarfile.TarFile:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as out:
            for member in members:
                out.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
        buffer.seek(0)
        return tarfile.open(fileobj=buffer)

    def file(name: str) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.size, info.uid, info.gid = 1, 4242, 4242
        return info

    def link(name: str, target: str) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = tarfile.SYMTYPE, target
        return info

    good = tmp_path / "good"
    good.mkdir()
    extract_data(archive(file("pkg/a.py"), link("pkg/b.py", "a.py")), good)
    assert (good / "pkg" / "a.py").read_bytes() == b"x" and (good / "pkg" / "b.py").resolve() == good / "pkg" / "a.py"
    assert (good / "pkg" / "a.py").stat().st_uid == os.getuid()
    for index, hostile in enumerate((file("../escape.txt"), file(str(tmp_path / "abs-escape.txt")), link("out", "../../etc"), link("abs", "/etc/passwd"))):
        target = tmp_path / f"bad-{index}"
        target.mkdir()
        try:  # refused, or (the data filter, for a leading "/") kept inside the tree
            extract_data(archive(hostile), target)
        except tarfile.TarError:
            pass
        for path in target.rglob("*"):
            assert path.resolve().is_relative_to(target.resolve()), path
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "abs-escape.txt").exists()


def test_a_users_detector_module_is_imported_from_their_directory(
    tmp_path: Path, project: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = project
    home = tmp_path / "mine"  # under /tmp: the sandbox must bind it back to import from it
    home.mkdir()
    (home / "my_detector.py").write_text(
        "from ledger_impl.detectors.unsound import optimistic_rules\n\ndef make():\n    return optimistic_rules()\n"
    )
    trajectory = _commands(tmp_path / "three.jsonl", THREE_FINDINGS)
    report = tmp_path / "report.json"
    code, _, err = _audit([str(trajectory), "--repo", str(repo), "--base-commit", base, "--detector", "my_detector:make",
                           "--path", str(home), "--no-probe", "--json", str(report)], capsys)
    assert code == 1, err
    [result] = json.loads(report.read_text())["trajectories"]
    assert result["status"] == "done" and [s["step"] for s in result["stale"]] == [7]
    assert result["misses"]["my_detector:make"][0]["step"] == 6


def test_a_bare_repository_is_audited_and_the_table_fits_80_columns(
    tmp_path: Path, project: tuple[Path, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base = project
    bare = tmp_path / "project.git"
    _git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert resolve(Base(str(bare), base[:10])) == Base(str(bare.resolve()), base)
    monkeypatch.setenv("COLUMNS", "80")
    trajectory = _commands(tmp_path / "a-long-trajectory-name-that-would-be-cut.jsonl", THREE_FINDINGS)
    code, out, err = _audit([str(trajectory), "--repo", str(bare), "--base-commit", base, "--detector", UNSOUND, "--no-probe"], capsys)
    assert code == 1, err  # the stale trap, found from the bare repository as from the checkout
    assert "STALE" in out
    table = out.split("STALE")[0]
    assert "…" not in table and max(map(len, table.splitlines())) <= 80, table
    boxed = [line for line in table.split("totals")[0].splitlines() if line[:1] in "┏┃┡│└"]
    assert boxed and all(line.rstrip()[-1] in "┓┃┩│┘" for line in boxed), table  # no row cut at the edge
    first_column = "".join(line.split("│")[1].strip() for line in table.split("totals")[0].splitlines() if line.startswith("│"))
    assert first_column.startswith("a-long-trajectory-name-that-would-be-cut"), first_column  # wrapped, whole
