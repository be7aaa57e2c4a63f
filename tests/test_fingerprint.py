"""The observation fingerprint on real directories: each change the counters cannot see moves
it, each spelling one observation serves leaves it alone, and a Runtime whose detector reports
nothing at all still never serves a stale read because of it.

Every scenario runs twice: with the fingerprint on (no stale Reuse) and off (the stale Reuse
happens), so each test shows the fingerprint is what prevents it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ledger_impl import Runtime
from ledger_impl.classifier import classify
from ledger_impl.detectors.unsound import blind
from ledger_impl.execution import command_environment, run_command
from ledger_impl.fingerprint import take


def fresh(root: Path, command: str, env: dict[str, str]) -> str:
    return run_command(command, root, 30, 1 << 20, command_environment(env)).output


def fingerprint(root: Path, command: str, env: dict[str, str]) -> object:
    return take(root, classify(command, cwd=".", root=root), command_environment(env))


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    return workspace


def _served_stale(root: Path, env: dict[str, str], read: str, change, *, fingerprint_on: bool) -> bool:
    """Read, change something behind a blind detector, read again: was a stale result served?
    The fingerprint is judged alone: the probe, a line of its own, is off."""
    runtime = Runtime(root, blind(), environment=env, fingerprint=fingerprint_on, probe=False)
    try:
        runtime.step(read)
        change()
        again = runtime.step(read)
        return again.verdict == "reuse" and again.output != fresh(root, read, env)
    finally:
        runtime.close()


def _git(root: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def _init_repository(root: Path, env: dict[str, str]) -> None:
    _git(root, env, "init", "-q", "-b", "main")
    _git(root, env, "add", "-A")
    _git(root, env, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one")


def test_a_program_shadowed_on_path_moves_the_fingerprint(root: Path, env: dict[str, str], tmp_path: Path) -> None:
    shadow = tmp_path / "shadow-bin"
    shadow.mkdir()
    env["PATH"] = f"{shadow}:{env['PATH']}"

    def shadow_head() -> None:
        (shadow / "head").write_text("#!/bin/sh\necho shadowed\n")
        (shadow / "head").chmod(0o755)

    assert _served_stale(root, env, "head -3 src/app.py", shadow_head, fingerprint_on=False)
    (shadow / "head").unlink()
    assert not _served_stale(root, env, "head -3 src/app.py", shadow_head, fingerprint_on=True)


def test_a_file_written_through_a_hard_link_from_outside_moves_the_fingerprint(
    root: Path, env: dict[str, str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside-link"

    def write_through_outside_link() -> None:
        if not outside.exists():
            os.link(root / "src" / "app.py", outside)
        with open(outside, "a") as handle:
            handle.write("appended from outside\n")

    assert _served_stale(root, env, "cat src/app.py", write_through_outside_link, fingerprint_on=False)
    assert not _served_stale(root, env, "cat src/app.py", write_through_outside_link, fingerprint_on=True)


def test_the_root_removed_and_recreated_moves_the_fingerprint(root: Path, env: dict[str, str]) -> None:
    def recreate() -> None:
        text = (root / "src" / "app.py").read_text()
        shutil.rmtree(root)
        (root / "src").mkdir(parents=True)
        (root / "src" / "app.py").write_text(text.replace("line 2\n", "LINE 2\n"))

    assert _served_stale(root, env, "sed -n '1,3p' src/app.py", recreate, fingerprint_on=False)
    assert not _served_stale(root, env, "sed -n '1,3p' src/app.py", recreate, fingerprint_on=True)


def test_an_environment_change_moves_the_fingerprint(root: Path, env: dict[str, str]) -> None:
    before = fingerprint(root, "cat src/app.py", env)
    assert before is not None
    assert fingerprint(root, "cat src/app.py", env) == before
    assert fingerprint(root, "cat src/app.py", {**env, "LC_ALL": "C"}) != before


def test_every_spelling_one_observation_serves_has_one_fingerprint(root: Path, env: dict[str, str]) -> None:
    spellings = ["cat src/app.py", "cat ./src/app.py", "sed -n '2,5p' src/app.py", "head -3 src/app.py", "cd src && cat app.py"]
    found = {spelling: fingerprint(root, spelling, env) for spelling in spellings}
    assert None not in found.values()
    assert len(set(found.values())) == 1, found


def test_a_line_tool_shadowed_before_the_read_allows_only_verbatim_repeats(
    root: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """Shadowed before the read is recorded, `head` resolves the same at both fingerprints; range
    reuse would still answer `cat ... | head` with the real head's slice of the stored output."""
    shadow = tmp_path / "shadow-bin"
    shadow.mkdir()
    (shadow / "head").write_text("#!/bin/sh\necho shadowed head\n")
    (shadow / "head").chmod(0o755)
    env["PATH"] = f"{shadow}:{env['PATH']}"
    runtime = Runtime(root, blind(), environment=env)
    try:
        runtime.step("cat src/app.py")
        sliced = runtime.step("cat src/app.py | head -n 3")
        assert sliced.verdict != "reuse" and sliced.output == "shadowed head\n"
        assert runtime.step("cat src/app.py").verdict == "reuse", "a verbatim repeat runs the same program"
    finally:
        runtime.close()
    spellings = ["cat src/app.py", "cat ./src/app.py", "head -3 src/app.py"]
    assert len({fingerprint(root, spelling, env) for spelling in spellings}) == len(spellings)


def test_a_git_config_edit_in_home_moves_a_git_read_s_fingerprint(root: Path, env: dict[str, str]) -> None:
    _init_repository(root, env)
    (root / "notes.log").write_text("x\n")

    def ignore_logs_globally() -> None:
        excludes = Path(env["HOME"]) / "ignore-logs"
        excludes.write_text("*.log\n")
        (Path(env["HOME"]) / ".gitconfig").write_text(f"[core]\n\texcludesFile = {excludes}\n")

    assert _served_stale(root, env, "git status --porcelain", ignore_logs_globally, fingerprint_on=False)
    (Path(env["HOME"]) / ".gitconfig").unlink()
    assert not _served_stale(root, env, "git status --porcelain", ignore_logs_globally, fingerprint_on=True)


def test_an_included_config_file_is_followed(root: Path, env: dict[str, str]) -> None:
    _init_repository(root, env)
    included = Path(env["HOME"]) / "more.gitconfig"
    included.write_text("[core]\n\tquotePath = false\n")
    (Path(env["HOME"]) / ".gitconfig").write_text("[include]\n\tpath = ~/more.gitconfig\n")
    before = fingerprint(root, "git status --porcelain", env)
    included.write_text("[core]\n\tquotePath = true\n")
    assert fingerprint(root, "git status --porcelain", env) != before


@pytest.mark.parametrize(
    "config",
    [
        "[diff]\n\texternal = /bin/true\n",
        '[diff "py"]\n\ttextconv = cat\n',
        "[core]\n\tfsmonitor = true\n",
        '[filter "x"]\n\tclean = cat\n',
        "[log]\n\tshowSignature = true\n",
    ],
)
def test_a_git_read_that_may_run_a_configured_program_is_never_fingerprinted(
    root: Path, env: dict[str, str], config: str
) -> None:
    _init_repository(root, env)
    assert fingerprint(root, "git status --porcelain", env) is not None
    (Path(env["HOME"]) / ".gitconfig").write_text(config)
    assert fingerprint(root, "git status --porcelain", env) is None


def test_a_program_named_in_git_dash_c_is_never_fingerprinted(root: Path, env: dict[str, str]) -> None:
    _init_repository(root, env)
    assert take(root, classify("git log --oneline", cwd=".", root=root), command_environment(env)) is not None
    command = classify("git -c diff.external=/bin/true log --oneline", cwd=".", root=root)
    if command.read_only:  # the classifier may already refuse it; the fingerprint must too
        assert take(root, command, command_environment(env)) is None


def test_a_worktree_s_repository_outside_the_root_is_fingerprinted(root: Path, env: dict[str, str], tmp_path: Path) -> None:
    _init_repository(root, env)
    worktree = tmp_path / "linked"
    _git(root, env, "worktree", "add", "-q", "-b", "side", str(worktree))
    assert (worktree / ".git").is_file()
    before = fingerprint(worktree, "git log --oneline main", env)
    assert before is not None
    (root / "src" / "app.py").write_text("changed in the main worktree\n")
    _git(root, env, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qam", "two")
    assert fingerprint(worktree, "git log --oneline main", env) != before


def test_what_cannot_be_fingerprinted_is_none(root: Path, env: dict[str, str]) -> None:
    from ledger_spec import Category, Command, FileTarget

    unparsable = Command("cat 'src/app.py", "cat src/app.py", Category.READ, FileTarget("src/app.py"))
    assert take(root, unparsable, env) is None
    computed = Command("$TOOL src/app.py", "cat src/app.py", Category.READ, FileTarget("src/app.py"))
    assert take(root, computed, env) is None
    assert take(root / "missing", classify("cat src/app.py", cwd=".", root=root), env) is None
