"""Every command line in the README and the documentation runs, from a fresh copy of the project.

A command line is a line of a fenced block with no info string (```` ``` ````) or a shell one
(```` ```sh ````, `bash`, `shell`; in a ```` ```console ```` block only the lines after a `$ `
prompt, which is stripped). Comment lines (`# ...`) are not commands. Output, synopses and
diagrams are fenced as ```` ```text ```` and are not run; a ```` ```python ```` block is run
(with `python -c`) when the line before its fence is `<!-- run: NAME -->`. Each block runs in
order, in one copy of the project made like a fresh clone (the files git would commit,
committed anew, so `--base-commit HEAD` exists), with the test's `ledger` first on PATH. Two
substitutions keep a run inside its temporary directory: `/path/to/project` becomes a fresh
project directory, and `/tmp/` the test's own temporary directory.

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
    (r"tcp://head:8786|^ledger \w[\w-]* .*/shared/",
     "needs the Dask cluster started above (tcp://head:8786) and its shared storage; tests/test_dask_hunt.py runs "
     "check-detector, verify and audit with --scheduler on a distributed.LocalCluster"),
    (r"^export (ANTHROPIC|OPENAI)_API_KEY=\.\.\.",
     "a placeholder for a real API key; tests/test_economizer_models.py runs the model clients against a scripted server on loopback"),
    (r"^ledger economize (feed|guard) .*--model (anthropic|openai):",
     "calls a hosted model (a key and the network); tests/test_economizer_models.py runs feed and guard against a scripted server on loopback"),
    (r"^ledger economize show owner/repo",
     "shows the skills the model-backed feed above stored for a repository, which this test cannot run"),
    (r"^python -m ledger_properties\.semantic_mutants( --only \d+)?\s*(#|$)",
     "runs mutants' named tests on a patched copy (all 77: about an hour; one: a minute or more); "
     "tests/test_semantic_mutants.py checks every patch applies and the recorded result matches the catalog"),
    (r"^python -m ledger_properties\.semantic_mutants --docs",
     "rewrites the table on the mutation page from the recorded run; tests/test_semantic_mutants.py checks that table is current"),
)
NEEDS_BWRAP = re.compile(r"^ledger audit\b")


SHELL_FENCES = {"", "sh", "bash", "shell"}
RUN_MARKER = re.compile(r"^<!-- run: [\w-]+ -->$")


def _commands_of(info: str, lines: list[str]) -> list[str]:
    """The command lines of a fenced block's lines, given its info string."""
    if info == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    elif info not in SHELL_FENCES:
        return []
    return [line for line in lines if not line.lstrip().startswith("#")]


def _fenced_blocks(page: Path) -> list[tuple[int, str, bool, list[str]]]:
    """(line of the fence, info string, marked to run, the non-blank lines) of each fenced block."""
    blocks = []
    fence, info, start, marked, lines, previous = None, "", 0, False, [], ""
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence, info, start, lines = match[1], match[2].strip(), number, []
            marked = bool(RUN_MARKER.match(previous))
        elif fence is not None and line.strip() == fence:
            blocks.append((start, info, marked, lines))
            fence = None
        elif fence is not None and line.strip():
            lines.append(line)
        previous = line
    return blocks


def command_blocks() -> list[tuple[str, list[str]]]:
    """(page:line, the block's command lines) for every shell block."""
    return [(f"{page.relative_to(ROOT)}:{start}", commands) for page in PAGES
            for start, info, _marked, lines in _fenced_blocks(page) if (commands := _commands_of(info, lines))]


def python_snippets() -> list[tuple[str, str]]:
    """(page:line, source) of every Python block marked `<!-- run: NAME -->`."""
    return [(f"{page.relative_to(ROOT)}:{start}", "\n".join(lines)) for page in PAGES
            for start, info, marked, lines in _fenced_blocks(page) if marked and info == "python"]


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


def test_every_exclusion_still_matches_a_line() -> None:
    """An entry of NOT_RUN whose command left the docs would excuse the next one that matches."""
    lines = [line for _, block in BLOCKS for line in block]
    assert [pattern for pattern, _ in NOT_RUN if not any(re.search(pattern, line) for line in lines)] == []


def test_the_shell_fences_are_read_as_command_blocks() -> None:
    assert _commands_of("console", ["$ ledger hooks install claude --user", "installed"]) == ["ledger hooks install claude --user"]
    assert _commands_of("sh", ["# head node", "dask scheduler --port 8786"]) == ["dask scheduler --port 8786"]
    assert _commands_of("text", ["ledger verify"]) == [] and _commands_of("python", ["import json"]) == []


SNIPPETS = python_snippets()


@pytest.mark.parametrize("where, source", SNIPPETS, ids=[where for where, _ in SNIPPETS])
def test_the_marked_python_snippet_runs(where: str, source: str, fresh_clone: Path, tmp_path: Path) -> None:
    if "ledger_properties.audit" in source and shutil.which("bwrap") is None:
        pytest.skip("the audit runs trajectories under bubblewrap, which is not installed (.ci/run installs it)")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", source.replace("/tmp/", f"{scratch}/")], cwd=fresh_clone,
        env={**os.environ, "HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state")},
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, f"{where}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"


def test_the_audit_snippet_is_marked_to_run() -> None:
    assert any(where.startswith("docs/audit/index.md") and "report_html.render" in source for where, source in SNIPPETS)


def test_a_command_on_the_shared_corpus_says_it_is_not_shipped() -> None:
    """Inline commands may name the project's shared corpus (`../shared/...`), which a fresh
    clone lacks; the line naming it must say so (the shipped sample runs in a block instead)."""
    unmarked = [f"{page.relative_to(ROOT)}:{number}" for page in PAGES
                for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
                if "../shared/" in line and "not shipped" not in line]
    assert unmarked == [], "say 'not shipped' where ../shared/ is named, or use the files in examples/"
