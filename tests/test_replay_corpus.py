"""The corpus replay's loop and oracle on tiny synthetic trajectories (no network, no sdist).

Commands run for real, only inside pytest's tmp_path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from ledger_impl.detectors.unsound import optimistic_rules

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "replay_corpus.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("replay_corpus", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("replay_corpus", module)
    spec.loader.exec_module(module)
    return module


replay_corpus = _load_script()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "testbed"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("".join(f"line {i}\n" for i in range(1, 41)))
    (root / "notes.txt").write_text("before\n")
    return root


# The agent reads a file, a script (opaque to the command text) rewrites it, the agent reads
# it again. Only a detector that sees the script's write keeps the second read from being reused.
SCRIPT_EDIT_TRAJECTORY = [
    "cat /testbed/notes.txt",
    "cd /testbed && python3 -c \"open('notes.txt', 'w').write('after\\n')\"",
    "cat /testbed/notes.txt",
]


def test_blind_detector_reuse_is_caught_as_stale(workspace: Path) -> None:
    result = replay_corpus.replay(SCRIPT_EDIT_TRAJECTORY, workspace, instance_id="synthetic", detector=optimistic_rules())
    assert result.counts["reuse"] == 1
    assert len(result.stale) == 1
    stale = result.stale[0]
    assert stale["step"] == 2 and stale["instance_id"] == "synthetic"
    assert "-before" in stale["diff"] and "+after" in stale["diff"]
    # A stale reuse is not something a perfect ledger would have done.
    assert result.counts["perfect reusable"] == 0


def test_default_detector_reuses_nothing_stale(workspace: Path) -> None:
    result = replay_corpus.replay(SCRIPT_EDIT_TRAJECTORY, workspace, instance_id="synthetic")
    assert result.counts["reuse"] == 0
    assert result.stale == [] and result.violations == []


def test_unchanged_rereads_are_reused_and_counted_by_the_perfect_ledger(workspace: Path) -> None:
    commands = [
        "cat -n pkg/mod.py",
        "sed -n '5,9p' /testbed/pkg/mod.py",
        "cat -n /testbed/pkg/mod.py",  # same file, same view, nothing changed: reusable
        "echo note >> notes.txt",  # changes another file only
        "cat -n pkg/mod.py",  # still reusable: its file is unchanged
        "sed -n '10,12p' pkg/mod.py",  # inside no earlier plain range: not reusable
        "grep -rn 'line 3' pkg",  # first search
        "grep -rn 'line 3' pkg",  # nothing changed since: reusable
    ]
    result = replay_corpus.replay(commands, workspace, instance_id="rereads")
    assert result.stale == [] and result.violations == []
    assert result.counts["commands"] == len(commands)
    assert result.counts["perfect reusable"] == 3
    assert result.counts["reuse"] + sum(result.missed.values()) == 3


def test_perfect_ledger_sees_a_change_the_command_text_hides(workspace: Path) -> None:
    commands = [
        "grep -rn before .",
        "python3 -c \"open('notes.txt', 'a').write('x\\n')\"",
        "grep -rn before .",
    ]
    result = replay_corpus.replay(commands, workspace)
    assert result.counts["perfect reusable"] == 0
    assert result.counts["reuse"] == 0


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("cd /testbed && pip install -e .", "package install"),
        ("python -m pip install pytest -q", "package install"),
        ("python setup.py develop", "package install"),
        ("apt-get install -y vim", "package install"),
        ("curl -s https://example.com > page.html", "network"),
        ("git fetch origin", "network"),
        ("pkill -f python", "process control"),
        ("echo x > /etc/motd", "may write outside workspace"),
        ("python3 -c \"open('/root/x', 'w')\"", "may write outside workspace"),
        ("cd ../../.. && touch x", "may write outside workspace"),
        ("rm -rf /", "may write outside workspace"),
    ],
)
def test_skip_reasons(workspace: Path, command: str, reason: str) -> None:
    assert replay_corpus.skip_reason(replay_corpus.rewrite_command(command, workspace), workspace) == reason


@pytest.mark.parametrize(
    "command",
    [
        "cat /testbed/pkg/mod.py",
        "cat /usr/lib/os-release",  # read-only: reading outside is harmless
        "sed -i 's/line 1/LINE 1/' /testbed/pkg/mod.py",
        "cat > /testbed/fix.py << 'EOF'\n#!/usr/bin/env python3\nprint(1)\nEOF",
        "python3 /tmp/script.py",
        "cd /testbed && python reproduce.py",
    ],
)
def test_commands_inside_the_workspace_are_replayed(workspace: Path, command: str) -> None:
    assert replay_corpus.skip_reason(replay_corpus.rewrite_command(command, workspace), workspace) is None


def test_testbed_is_rewritten_to_the_workspace(workspace: Path) -> None:
    rewritten = replay_corpus.rewrite_command("cd /testbed && grep -n x /testbed/a.py", workspace)
    assert rewritten == f"cd {workspace} && grep -n x {workspace}/a.py"


def test_skipped_commands_are_counted_not_run(workspace: Path) -> None:
    result = replay_corpus.replay(["pip install nothing-at-all", "cat notes.txt"], workspace)
    assert result.skipped == {"package install": 1}
    assert result.counts["commands"] == 1


def test_materialize_makes_a_git_workspace_from_an_sdist(tmp_path: Path) -> None:
    import tarfile

    source = tmp_path / "src" / "demo-1.0"
    source.mkdir(parents=True)
    (source / "setup.py").write_text("print('demo')\n")
    sdist = tmp_path / "demo-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        archive.add(source, arcname="demo-1.0")
    parent = tmp_path / "replay"
    parent.mkdir()
    workspace = replay_corpus.materialize(sdist, parent)
    assert (workspace / "setup.py").read_text() == "print('demo')\n"
    assert (workspace / ".git").is_dir()
    assert replay_corpus._find_sdist(tmp_path, "demo", "1.0") == sdist


@pytest.mark.parametrize("filters", [True, False], ids=["python-3.11.4+", "older-3.11"])
def test_sdist_extraction_keeps_to_the_tree_with_and_without_tarfile_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filters: bool
) -> None:
    """Python before 3.11.4 has no extraction filters; the hand-made check refuses the same."""
    import io
    import tarfile

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
    replay_corpus.extract_data(archive(file("pkg/a.py"), link("pkg/b.py", "a.py")), good)
    assert (good / "pkg" / "a.py").read_bytes() == b"x" and (good / "pkg" / "b.py").resolve() == good / "pkg" / "a.py"
    assert (good / "pkg" / "a.py").stat().st_uid == __import__("os").getuid()
    for index, hostile in enumerate((file("../escape.txt"), file(str(tmp_path / "abs-escape.txt")), link("out", "../../etc"), link("abs", "/etc/passwd"))):
        target = tmp_path / f"bad-{index}"
        target.mkdir()
        try:  # refused, or (the data filter, for a leading "/") kept inside the tree
            replay_corpus.extract_data(archive(hostile), target)
        except tarfile.TarError:
            pass
        for path in target.rglob("*"):
            assert path.resolve().is_relative_to(target.resolve()), path
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "abs-escape.txt").exists()
