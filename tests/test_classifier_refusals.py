"""One row per read-only rule the classifier must not widen, and per view it must keep apart.

Each row of `NOT_REUSABLE` is a command that looks like a read but writes, follows a link out
of the root, reads the clock or runs a program: it must not be reusable. Each row of
`OWN_VIEWS` is a pair of spellings of one file whose outputs differ: they must not share a
view (or one would be served the other's bytes); the outputs are checked with bash on a real
file, so a row cannot claim a difference that is not there. Written for issue 23's semantic
mutants: each row kills at least one of them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ledger_impl.classifier import classify
from ledger_impl.execution import command_environment
from ledger_spec import LineRange

NOT_REUSABLE = {
    "git describe --broken": "refreshes and writes .git/index",
    "git show 'HEAD@{5 minutes ago}'": "picks a commit by the clock",
    "find . -cmin -5": "changes answer as time passes",
    "ls -lp": "appends the type of what a link points to",
    "git ls-files --exclude-from=../outside": "reads a file outside the root",
    "git fetch": "writes refs and talks to a remote",
    "git branch -D side": "deletes a branch",
    "git branch --unset-upstream": "writes the repository's config",
    "git diff --output=patch.txt": "writes a file",
    "git log -o patch.txt": "writes a file",
    "git show -o patch.txt": "writes a file",
    "find . -delete": "deletes the tree",
    "find . -printf '%a %p\\n'": "prints access times, which every read moves",
    "grep -R line .": "follows links out of the root",
}


@pytest.fixture
def repository(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A git repository with a home of its own, and the environment commands run with there:
    git reads are reusable in it, so a row is refused for its own reason, not the setting's."""
    home, root = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    root.mkdir()
    environment = command_environment({**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                                       "GIT_CONFIG_NOSYSTEM": "1"})
    subprocess.run(["git", "init", "-q"], cwd=root, env=environment, check=True)
    return root, environment


REUSABLE = ["git describe", "git show HEAD", "git ls-files", "git diff", "git log", "git branch --list", "find . -name x",
            "ls -l", "grep -r line ."]


@pytest.mark.parametrize("command", REUSABLE)
def test_the_reads_the_refusals_are_told_from_are_reusable(repository: tuple[Path, dict[str, str]], command: str) -> None:
    root, environment = repository
    classified = classify(command, cwd=".", root=root, environment=environment)
    assert classified.read_only and classified.target is not None


@pytest.mark.parametrize("command", sorted(NOT_REUSABLE))
def test_a_command_that_only_looks_like_a_read_is_not_reusable(repository: tuple[Path, dict[str, str]], command: str) -> None:
    root, environment = repository
    classified = classify(command, cwd=".", root=root, environment=environment)
    assert not classified.read_only or classified.target is None, NOT_REUSABLE[command]


_FILE = "a\tb\n\n\n\nline five\n" + "".join(f"line {n}\n" for n in range(6, 21))
OWN_VIEWS = [
    ("cat -n f", "cat -nE f"),
    ("cat -n f", "cat -ns f"),
    ("cat -n f", "cat -nT f"),
    ("cat -n f", "cat -nA f"),
    ("nl -b a f", "nl -b t f"),
    ("wc -l f", "wc -c f"),
]


@pytest.mark.parametrize("first,second", OWN_VIEWS)
def test_spellings_with_different_outputs_do_not_share_a_view(tmp_path: Path, first: str, second: str) -> None:
    (tmp_path / "f").write_text(_FILE)
    outputs = [subprocess.run(["bash", "-c", c], cwd=tmp_path, capture_output=True, text=True).stdout for c in (first, second)]
    assert outputs[0] != outputs[1]
    one, other = (classify(c, cwd=".", root=tmp_path) for c in (first, second))
    if one.read_only and other.read_only and one.target is not None and other.target is not None:
        assert one.target.view != other.target.view or one.target.lines != other.target.lines


@pytest.mark.parametrize(
    "command,lines",
    [("head -n 3 f", LineRange(1, 3)), ("head -1 f", LineRange(1, 1)), ("tail -n +4 f", LineRange(4, None)),
     ("tail -n +1 f", LineRange(1, None))],
)
def test_a_line_range_is_the_lines_the_tool_prints(tmp_path: Path, command: str, lines: LineRange) -> None:
    (tmp_path / "f").write_text(_FILE)
    printed = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    every = _FILE.splitlines(keepends=True)
    assert printed == "".join(every[lines.start - 1 : lines.end])
    assert classify(command, cwd=".", root=tmp_path).target.lines == lines


def test_head_verbose_is_not_path_free(tmp_path: Path) -> None:
    # `==> f <==` names the file as typed: `head -v f` and `head -v ./f` print different bytes.
    (tmp_path / "f").write_text(_FILE)
    one, other = (classify(c, cwd=".", root=tmp_path) for c in ("head -v -n 3 f", "head -v -n 3 ./f"))
    assert one.normalized != other.normalized
