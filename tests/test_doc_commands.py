"""Every command line in the README and the documentation runs, from a fresh copy of the project.

A command line is a line of a fenced block with no info string (```` ``` ````); output, synopses
and diagrams are fenced as ```` ```text ````, and Python sketches as ```` ```python ````, and are not
run. Each block runs in order, in one copy of the project made like a fresh clone (the files git
would commit, committed anew, so `--base-commit HEAD` exists), with the test's `ledger` first on
PATH. Two substitutions keep a run inside its temporary directory: `/path/to/project` becomes a
fresh project directory, and `/tmp/` the test's own temporary directory.

Every line is either run (and must exit 0) or matched by an entry of `NOT_RUN` with its reason;
a new command in the docs fails `test_every_command_line_is_run_or_excluded_with_a_reason`
until it is one or the other.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ledger_impl.agents import HOOKED

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(`{3,})(.*)$")

NOT_RUN: tuple[tuple[str, str], ...] = (
    (r"^python3 -m venv \.venv && \.venv/bin/pip install",
     "makes a new virtual environment and installs into it (minutes); .ci/run does exactly this, then runs the Quick start's test line"),
    (r"^\.venv/bin/pip install", "installs packages from the network (the mini extra)"),
    (r"^pip install", "installs into the environment that runs the tests (it would repoint its editable install at the copy)"),
    (r"^dask (scheduler|worker)\b", "starts a long-running cluster process; tests/test_dask_hunt.py runs the hunts on a distributed.LocalCluster"),
    # Each hooked agent's CLI is named as its plugin is (`ledger_impl.agents`).
    (rf"^({'|'.join(map(re.escape, HOOKED))})\b",
     "starts the real agent CLI, interactive and needing a model; tests/agents/ run each end to end against a scripted model server"),
    (r"^mini\b", "starts mini-swe-agent with a model; tests/test_minisweagent_adapter.py runs it with a scripted model"),
    (r"^ledger check-detector examples\.append_blind_detector:make",
     "a hunt (20-40 s on 2 cores); tests/test_cli_hunt.py runs this command and replays what it writes"),
    (r"^ledger replay /tmp/ledger-ab/",
     "replays the file the check-detector run above writes (its name carries a hash of that run); tests/test_cli_hunt.py does"),
    (r"^nice -n 5 ledger audit OUT/", "needs OUT from scripts/corpus_workspaces.py, which downloads sdists from PyPI (the network) and audits 35 trajectories (25 min)"),
    (r"^\s+--results OUT/", "the continuation of the corpus audit above"),
)
NEEDS_BWRAP = re.compile(r"^ledger audit\b")


def command_blocks() -> list[tuple[str, list[str]]]:
    """(page:line, the block's command lines) for every fenced block without an info string."""
    blocks = []
    for page in PAGES:
        fence, info, start, lines = None, "", 0, []
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            match = FENCE.match(line)
            if fence is None and match:
                fence, info, start, lines = match[1], match[2].strip(), number, []
            elif fence is not None and line.strip() == fence:
                if not info and lines:
                    blocks.append((f"{page.relative_to(ROOT)}:{start}", lines))
                fence = None
            elif fence is not None and line.strip():
                lines.append(line)
    return blocks


BLOCKS = command_blocks()
# A command that already ran in this process (the same command on two pages, whatever its
# trailing comment) is not run again.
_PASSED: set[str] = set()


def _command(line: str) -> str:
    return re.sub(r"\s+#\s.*$", "", line)


def reason_not_run(line: str) -> str | None:
    return next((reason for pattern, reason in NOT_RUN if re.search(pattern, line)), None)


def test_every_command_line_is_run_or_excluded_with_a_reason() -> None:
    assert len(BLOCKS) >= 10, "the extraction found too few command blocks"
    runnable = [line for _, lines in BLOCKS for line in lines if reason_not_run(line) is None]
    assert runnable, "every command is excluded"
    # Synopses are not commands: they belong in ```text blocks, where they are not run.
    synopses = [line for line in runnable if re.search(r"\[--|\bMODULE:FACTORY\b|\.\.\.", line)]
    assert synopses == [], "a synopsis in a command block; fence it as ```text"


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project as a fresh clone would have it: the files git would commit, committed anew."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    copy = tmp_path_factory.mktemp("clone") / "ledger"
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.invalid"]
    subprocess.run(["git", "init", "-q"], cwd=copy, check=True)
    subprocess.run(["git", "add", "-A"], cwd=copy, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "fresh clone"], cwd=copy, check=True)
    return copy


RUNNABLE = [(where, [line for line in lines if reason_not_run(line) is None]) for where, lines in BLOCKS]
RUNNABLE = [(where, lines) for where, lines in RUNNABLE if lines]


@pytest.mark.parametrize("where, runnable", RUNNABLE, ids=[where for where, _ in RUNNABLE])
def test_the_command_block_runs(where: str, runnable: list[str], fresh_clone: Path, tmp_path: Path) -> None:
    if any(NEEDS_BWRAP.search(line) for line in runnable) and shutil.which("bwrap") is None:
        pytest.skip("ledger audit runs trajectories under bubblewrap, which is not installed (.ci/run installs it)")
    project = tmp_path / "project"
    project.mkdir()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    environment = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path / "home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "CODEX_HOME": str(tmp_path / "codex-home"),
        "COLUMNS": "100",
    }
    for line in runnable:
        if _command(line) in _PASSED:
            continue  # it ran, and passed, in an earlier block
        command = line.replace("/path/to/project", str(project)).replace("/tmp/", f"{scratch}/")
        result = subprocess.run(
            ["bash", "-c", command], cwd=fresh_clone, env=environment, capture_output=True, text=True, timeout=300,
        )
        assert result.returncode == 0, f"{where}: {line}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        _PASSED.add(_command(line))
