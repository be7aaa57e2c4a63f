"""Two live bugs of issue 23, on real repositories in temporary directories.

1. The classifier's git-config check read the process's own environment, not the environment
   the Runtime runs commands with: a configured program the Runtime's HOME names went unseen,
   and a GIT_DIR in the harness's environment refused reads the commands never see.
2. Every git read in a linked worktree (`.git` is a file) was refused. It is now reusable where
   the fingerprint covers it, and re-run when anything it depends on outside the root moves:
   the worktree's own HEAD and index, the main repository's config, another worktree's HEAD.

The detector is blind throughout: the changes below all happen outside the root (in the main
repository's git dir), so only the fingerprint can stop a stale Reuse.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from ledger_impl import Runtime
from ledger_impl.classifier import classify
from ledger_impl.detectors.unsound import blind
from ledger_impl.execution import command_environment, run_command
from ledger_spec import Category


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }


def _git(cwd: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def main_repo(tmp_path: Path, env: dict[str, str]) -> Path:
    main = tmp_path / "main"
    main.mkdir()
    (main / "a.txt").write_text("one\n")
    (main / "b.txt").write_text("two\n")
    _git(main, env, "init", "-q", "-b", "main")
    _git(main, env, "add", "-A")
    _git(main, env, "commit", "-qm", "first")
    return main


@pytest.fixture
def linked(tmp_path: Path, main_repo: Path, env: dict[str, str]) -> Path:
    worktree = tmp_path / "linked"
    _git(main_repo, env, "worktree", "add", "-q", "-b", "side", str(worktree))
    assert (worktree / ".git").is_file()
    return worktree


# -- 1: the Runtime's environment, not the process's -----------------------------------------


def test_a_program_configured_in_the_runtime_s_home_makes_a_git_read_run(
    tmp_path: Path, main_repo: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (Path(env["HOME"]) / ".gitconfig").write_text("[diff]\n\texternal = /bin/true\n")
    clean_home = tmp_path / "clean-home"
    clean_home.mkdir()
    monkeypatch.setenv("HOME", str(clean_home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(clean_home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    runtime = Runtime(main_repo, blind(), environment=env, probe=False)
    try:
        assert runtime.step("git status").command.category is Category.RUN
        assert classify("git status", root=main_repo, environment=command_environment(env)).category is Category.RUN
        # The process's own (clean) environment alone proves nothing about the Runtime's.
        assert classify("git status", root=main_repo).category is Category.SEARCH
    finally:
        runtime.close()


def test_git_variables_of_the_harness_s_own_process_do_not_refuse_the_runtime_s_reads(
    main_repo: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_DIR", "/nonexistent/elsewhere")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'diff.external=/bin/true'")
    runtime = Runtime(main_repo, blind(), environment=env, probe=False)
    try:
        first, again = runtime.step("git status"), runtime.step("git status")
        assert first.command.category is Category.SEARCH
        assert again.verdict == "reuse"
    finally:
        runtime.close()


# -- 2: linked worktrees ---------------------------------------------------------------------


def _fresh(root: Path, command: str, env: dict[str, str]) -> str:
    return run_command(command, root, 30, 1 << 20, command_environment(env)).output


def _change_between(root: Path, env: dict[str, str], read: str, change: Callable[[], None]) -> None:
    """The read is reused when nothing moved, and run again (with the fresh output) after
    `change`: allowed or nudged (the detector saw nothing, so it looks like a loop), never reused."""
    runtime = Runtime(root, blind(), environment=env, probe=False)
    try:
        first = runtime.step(read)
        assert first.command.category in (Category.READ, Category.SEARCH)
        assert runtime.step(read).verdict == "reuse"
        change()
        after = runtime.step(read)
        assert after.verdict != "reuse", "a change outside the root was served stale"
        assert after.output == _fresh(root, read, env)
        assert after.output != first.output, "the change must show in the read, or the test proves nothing"
        assert runtime.step(read).verdict == "reuse"
    finally:
        runtime.close()


def test_the_worktree_s_own_head_moving_reruns_the_read(linked: Path, env: dict[str, str]) -> None:
    # A branch that exists already and names the same commit: only the worktree's HEAD moves.
    _git(linked, env, "branch", "other")
    _change_between(linked, env, "git status", lambda: _git(linked, env, "symbolic-ref", "HEAD", "refs/heads/other"))


def test_the_worktree_s_own_index_moving_reruns_the_read(linked: Path, env: dict[str, str]) -> None:
    # The file is in the root but the detector is blind, so only the index (outside) tells.
    # Its new content is b.txt's, whose blob exists: staging it writes the index and no object.
    (linked / "a.txt").write_text("two\n")
    _change_between(linked, env, "git diff --cached --stat", lambda: _git(linked, env, "add", "a.txt"))


def test_the_main_repository_s_config_moving_reruns_the_read(linked: Path, main_repo: Path, env: dict[str, str]) -> None:
    (linked / "new.txt").write_text("untracked\n")
    _change_between(linked, env, "git status", lambda: _git(main_repo, env, "config", "status.short", "true"))


def test_a_commit_in_the_main_worktree_reruns_a_log_of_its_branch(linked: Path, main_repo: Path, env: dict[str, str]) -> None:
    def commit_in_main() -> None:
        (main_repo / "a.txt").write_text("changed in main\n")
        _git(main_repo, env, "commit", "-qam", "second")

    _change_between(linked, env, "git log --oneline main", commit_in_main)


def test_another_worktree_switching_branch_reruns_a_branch_listing(linked: Path, main_repo: Path, env: dict[str, str]) -> None:
    _git(main_repo, env, "branch", "spare")
    # `git branch` marks with `+` the branches checked out in other worktrees: it reads their HEADs.
    _change_between(linked, env, "git branch --list", lambda: _git(main_repo, env, "checkout", "-q", "spare"))


@pytest.mark.parametrize("value", ["0", "false", "no"])
def test_a_system_config_git_still_reads_is_fingerprinted(tmp_path: Path, main_repo: Path, env: dict[str, str], value: str) -> None:
    # GIT_CONFIG_NOSYSTEM is a Boolean: "0" or "false" leaves the system file in, and git reads it.
    system = tmp_path / "system.cfg"
    system.write_text("[user]\n\tname = t\n")
    env = {**env, "GIT_CONFIG_NOSYSTEM": value, "GIT_CONFIG_SYSTEM": str(system)}
    (main_repo / "new.txt").write_text("untracked\n")
    _change_between(main_repo, env, "git status", lambda: system.write_text("[status]\n\tshort = true\n"))


@pytest.mark.parametrize(
    "config",
    ["[diff]\n\texternal = /bin/true\n", '[diff "py"]\n\ttextconv = cat\n', '[diff "py"]\n\tcommand = /bin/true\n',
     "[core]\n\tfsmonitor = true\n", "[core]\n\tpager = less\n"],
    ids=["external", "textconv", "command", "fsmonitor", "pager"],
)
def test_a_program_in_the_repository_s_config_makes_a_git_read_run(main_repo: Path, env: dict[str, str], config: str) -> None:
    environment = command_environment(env)
    assert classify("git diff", root=main_repo, environment=environment).category is not Category.RUN
    with (main_repo / ".git" / "config").open("a") as handle:
        handle.write(config)
    assert classify("git diff", root=main_repo, environment=environment).category is Category.RUN


def test_with_the_fingerprint_off_a_worktree_s_git_read_is_never_reused(linked: Path, env: dict[str, str]) -> None:
    # The fingerprint is what covers a repository outside the root; the first line alone
    # (detector and classifier) cannot, so without it such a read always runs. The probe, a line
    # of its own that traces git's reads, is off too.
    runtime = Runtime(linked, blind(), environment=env, fingerprint=False, probe=False)
    try:
        steps = [runtime.step(read) for read in ("git status", "git status", "cat a.txt", "cat a.txt")]
        assert [step.verdict for step in steps[:2]] == ["allow", "nudge"]
        assert steps[3].verdict == "reuse", "a plain file read is still reused"
    finally:
        runtime.close()
