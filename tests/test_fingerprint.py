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

import attrs
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


# -- issue 23, semantic mutants: one input at a time, each change alone must move the fingerprint


def _write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def _rewrite_in_place(path: Path, text: str) -> None:
    """Same inode, new bytes (an editor that writes through the file, `cp` over it)."""
    with open(path, "r+") as handle:
        handle.seek(0)
        handle.truncate()
        handle.write(text)


def _moves(root: Path, env: dict[str, str], command: str, change, changed_env=None) -> None:
    before = fingerprint(root, command, env)
    assert before is not None
    assert fingerprint(root, command, env) == before
    change()
    assert fingerprint(root, command, changed_env or env) != before


@pytest.mark.parametrize("variable", ["TZ", "LC_ALL", "GIT_CONFIG_GLOBAL"])
def test_a_variable_s_new_value_alone_moves_the_fingerprint(root: Path, env: dict[str, str], variable: str) -> None:
    # An environment cache keyed by the names alone would answer the old value's tuple.
    first, second = {**env, variable: "one"}, {**env, variable: "two"}
    _moves(root, first, "ls -l src", lambda: None, changed_env=second)


@pytest.mark.parametrize("variable,command", [("RIPGREP_CONFIG_PATH", "rg line src"), ("BASH_ENV", "cat src/app.py")])
def test_a_file_read_at_start_rewritten_moves_the_fingerprint(
    root: Path, env: dict[str, str], tmp_path: Path, variable: str, command: str
) -> None:
    config = _write(tmp_path / "read-at-start", "# nothing\n")
    env[variable] = str(config)
    _moves(root, env, command, lambda: config.write_text("--max-count=1\n" if variable.startswith("RIP") else "cat() { :; }\n"))


def test_the_root_recreated_moves_a_listing_of_the_root(root: Path, env: dict[str, str]) -> None:
    # A listing of the root has no path chain: only the root's own identity tells it is new.
    # The old root is kept (moved aside) so that the new one cannot get its inode number back.
    def recreate() -> None:
        root.rename(root.with_name("work.old"))
        root.mkdir()

    _moves(root, env, "ls", recreate)


def test_a_directory_on_the_path_made_unreadable_moves_the_fingerprint(root: Path, env: dict[str, str]) -> None:
    _moves(root, env, "cat src/app.py", lambda: (root / "src").chmod(0o311))


@pytest.mark.parametrize("how", ["rewritten", "symlink-target-rewritten"])
def test_a_program_rewritten_in_place_moves_the_fingerprint(root: Path, env: dict[str, str], tmp_path: Path, how: str) -> None:
    real = _write(tmp_path / "tools" / "grep", "#!/bin/sh\nexec /bin/grep \"$@\"\n", 0o755)
    shadow = tmp_path / "shadow-bin"
    shadow.mkdir()
    if how == "rewritten":
        shutil.move(real, shadow / "grep")
        real = shadow / "grep"
    else:
        (shadow / "grep").symlink_to(real)
    env["PATH"] = f"{shadow}:{env['PATH']}"
    _moves(root, env, "grep -n line src/app.py", lambda: _rewrite_in_place(real, "#!/bin/sh\necho no match here\n"))


@pytest.mark.parametrize("wrapper", ["env", "timeout 5", "nice"])
def test_a_program_run_through_a_wrapper_is_fingerprinted(root: Path, env: dict[str, str], tmp_path: Path, wrapper: str) -> None:
    shadow = tmp_path / "shadow-bin"
    shadow.mkdir()
    env["PATH"] = f"{shadow}:{env['PATH']}"
    _moves(root, env, f"{wrapper} grep -n line src/app.py",
           lambda: _write(shadow / "grep", "#!/bin/sh\necho shadowed\n", 0o755))


def test_git_named_by_its_path_is_fingerprinted_as_git(root: Path, env: dict[str, str]) -> None:
    _init_repository(root, env)
    git = shutil.which("git", path=env["PATH"])
    assert git is not None
    _moves(root, env, f"{git} status", lambda: _write(Path(env["HOME"]) / ".gitconfig", "[status]\n\tshort = true\n"))


@pytest.mark.parametrize("how", ["exported function", "program earlier on PATH"])
def test_a_tail_that_is_not_the_system_s_allows_only_verbatim_repeats(
    root: Path, env: dict[str, str], tmp_path: Path, how: str
) -> None:
    # bash runs the function (or the shadowing program) instead of the system's tail: range
    # reuse, which applies the real tail's semantics, must not answer another spelling from it.
    # The fingerprint is judged alone, as in `_served_stale`: the probe would also refuse.
    if how == "exported function":
        env["BASH_FUNC_tail%%"] = "() {  echo function tail; command tail \"$@\"\n}"
    else:
        _write(tmp_path / "shadow-bin" / "tail", "#!/bin/sh\necho shadowed tail\nexec /usr/bin/tail \"$@\"\n", 0o755)
        env["PATH"] = f"{tmp_path / 'shadow-bin'}:{env['PATH']}"
    runtime = Runtime(root, blind(), environment=env, probe=False)
    try:
        runtime.step("tail -n +5 src/app.py")
        narrower = runtime.step("tail -n +10 src/app.py")
        assert narrower.verdict != "reuse" and narrower.output == fresh(root, "tail -n +10 src/app.py", env)
    finally:
        runtime.close()


def _home(env: dict[str, str]) -> Path:
    return Path(env["HOME"])


def _commit(root: Path, env: dict[str, str], message: str) -> None:
    (root / "src" / "app.py").write_text(f"{message}\n")
    _git(root, env, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qam", message)


def _include_if(env: dict[str, str]) -> Path:
    _write(_home(env) / ".gitconfig", '[includeIf "gitdir:/"]\n\tpath = ~/conditional.gitconfig\n')
    return _write(_home(env) / "conditional.gitconfig", "[core]\n\tquotePath = false\n")


def _excludes_file(env: dict[str, str]) -> Path:
    _write(_home(env) / ".gitconfig", "[core]\n\texcludesFile = ~/ignored-globally\n")
    return _write(_home(env) / "ignored-globally", "*.tmp\n")


def _relative_include(env: dict[str, str]) -> Path:
    _write(_home(env) / ".gitconfig", "[include]\n\tpath = relative.gitconfig\n")
    return _write(_home(env) / "relative.gitconfig", "[core]\n\tquotePath = false\n")


def _nested_branch(root: Path, env: dict[str, str]) -> None:
    _commit(root, env, "two")
    _git(root, env, "branch", "feature/x")


# Each row: (what to set up, the one change made outside the counters' view, the read).
_GIT_INPUTS = {
    "includeIf target": (_include_if, lambda root, env, made: made.write_text("[core]\n\tquotePath = true\n"), "git status"),
    "excludes file alone": (_excludes_file, lambda root, env, made: made.write_text("*.log\n"), "git status"),
    "relative include": (_relative_include, lambda root, env, made: made.write_text("[core]\n\tquotePath = true\n"), "git status"),
    "XDG config": (lambda env: None,
                   lambda root, env, made: _write(Path(env["XDG_CONFIG_HOME"]) / "git" / "config", "[status]\n\tshort = true\n"),
                   "git status"),
    "a loose ref in a ref subdirectory": (lambda env: None,
                                          lambda root, env, made: _git(root, env, "update-ref", "refs/heads/feature/x", "HEAD~1"),
                                          "git log --oneline feature/x"),
    "packed-refs": (lambda env: None,
                    lambda root, env, made: (root / ".git" / "packed-refs").write_text(
                        "# pack-refs with: peeled fully-peeled sorted\n" + _git_out(root, env, "rev-parse", "HEAD~1") + " refs/tags/v0\n"),
                    "git log --oneline"),
    "info/exclude": (lambda env: None, lambda root, env, made: _write(root / ".git" / "info" / "exclude", "*.log\n"), "git status"),
    "config.worktree": (lambda env: None, lambda root, env, made: _write(root / ".git" / "config.worktree", "[status]\n\tshort = true\n"),
                        "git status"),
}


def _git_out(root: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("case", sorted(_GIT_INPUTS))
def test_a_git_input_changed_alone_moves_the_fingerprint(root: Path, env: dict[str, str], case: str) -> None:
    setup, change, read = _GIT_INPUTS[case]
    _init_repository(root, env)
    _nested_branch(root, env)
    made = setup(env)
    _moves(root, env, read, lambda: change(root, env, made))


@pytest.mark.parametrize(
    "variables",
    [
        {"GIT_EXTERNAL_DIFF": "/bin/true"},
        {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "diff.external", "GIT_CONFIG_VALUE_0": "/bin/true"},
        {"GIT_CONFIG_PARAMETERS": "'core.fsmonitor=true'"},
    ],
    ids=["GIT_EXTERNAL_DIFF", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"],
)
def test_a_program_given_through_git_s_environment_is_never_fingerprinted(
    root: Path, env: dict[str, str], variables: dict[str, str]
) -> None:
    _init_repository(root, env)
    command = classify("git diff", cwd=".", root=root)
    assert take(root, command, command_environment(env)) is not None
    assert take(root, command, command_environment({**env, **variables})) is None


def test_a_program_named_in_git_dash_c_is_never_fingerprinted_whatever_the_classifier_says(root: Path, env: dict[str, str]) -> None:
    # The fingerprint is a line of defense of its own: it must refuse even a command the
    # classifier (which today makes any `git -c` a run) were to let through.
    from ledger_spec import Category, Command, TreeTarget

    _init_repository(root, env)
    plain = Command("git log --oneline", "git log --oneline", Category.SEARCH, TreeTarget("."))
    assert take(root, plain, command_environment(env)) is not None
    configured = attrs.evolve(plain, text="git -c diff.external=/bin/true log --oneline")
    assert take(root, configured, command_environment(env)) is None


@pytest.mark.parametrize("include", ['[include]\n\tpath = ~/more.gitconfig\n', '[includeIf "gitdir:/"]\n\tpath = ~/more.gitconfig\n',
                                     '[includeIf "onbranch:main"]\n\tpath = more.gitconfig\n'])
def test_a_program_in_an_included_file_is_seen(root: Path, env: dict[str, str], include: str) -> None:
    # The included file's identity alone is not enough: what it sets must be read too.
    _init_repository(root, env)
    _write(_home(env) / ".gitconfig", include)
    included = _write(_home(env) / "more.gitconfig", "[core]\n\tquotePath = false\n")
    assert fingerprint(root, "git status", env) is not None
    included.write_text("[diff]\n\texternal = /bin/true\n")
    assert fingerprint(root, "git status", env) is None


def test_a_program_in_the_worktree_s_own_config_is_seen(root: Path, env: dict[str, str]) -> None:
    _init_repository(root, env)
    _git(root, env, "config", "extensions.worktreeConfig", "true")
    assert fingerprint(root, "git status", env) is not None
    _write(root / ".git" / "config.worktree", "[diff]\n\texternal = /bin/true\n")
    assert fingerprint(root, "git status", env) is None


# -- operator mutation of fingerprint.py (scripts/mutation.py): the survivors of its first run


@pytest.mark.parametrize("wrapper", ["env LC_ALL=C", "timeout 5", "nice"])
def test_the_program_a_wrapper_runs_is_fingerprinted_though_it_is_no_line_tool(
    root: Path, env: dict[str, str], tmp_path: Path, wrapper: str
) -> None:
    """Pins `ledger_impl/fingerprint.py` line 228 (the wrapper's operand taken as the first word
    that is an option): the program a wrapper runs was left out, so rewriting it went unseen
    and a stale Reuse was possible."""
    # `wc` is not one of the line tools every file read fingerprints anyway: only the wrapper's
    # operand, skipped past its options and assignments, brings it in. Rewritten in place, so
    # that no PATH directory changes (a name not found is fingerprinted by those).
    shadow = tmp_path / "shadow-bin"
    program = _write(shadow / "wc", '#!/bin/sh\nexec /usr/bin/wc "$@"\n', 0o755)
    env["PATH"] = f"{shadow}:{env['PATH']}"
    _moves(root, env, f"{wrapper} wc -l src/app.py", lambda: _rewrite_in_place(program, "#!/bin/sh\necho 0\n"))


def test_a_program_after_an_assignment_alone_is_fingerprinted(root: Path, env: dict[str, str], tmp_path: Path) -> None:
    """Pins `ledger_impl/fingerprint.py` line 112 (`continue` -> `break`): the programs after a
    simple command with no words were left out, so one shadowed on PATH went unseen and a
    stale Reuse was possible."""
    # `X=1` is a simple command with no words: the programs after it still count.
    shadow = tmp_path / "shadow-bin"
    shadow.mkdir()
    env["PATH"] = f"{shadow}:{env['PATH']}"
    _moves(root, env, "X=1; wc -l src/app.py", lambda: _write(shadow / "wc", "#!/bin/sh\necho 0\n", 0o755))


def test_a_listing_scope_that_sorts_before_the_dot_is_fingerprinted(root: Path, env: dict[str, str]) -> None:
    # The scope's directory chain is left out only for the root itself (".").
    (root / "+gen").mkdir()
    (root / "+gen" / "a.txt").write_text("a\n")
    taken = fingerprint(root, "ls +gen", env)
    assert taken is not None and [key for key, _ in taken.paths] == ["+gen"]  # type: ignore[attr-defined]


def test_an_ancestor_of_the_root_replaced_moves_the_fingerprint(env: dict[str, str], tmp_path: Path) -> None:
    # The root itself is the same directory, reached through a link where its parent was.
    parent = tmp_path / "parent"
    (parent / "work").mkdir(parents=True)
    (parent / "work" / "a.txt").write_text("a\n")
    root = parent / "work"
    before = fingerprint(root, "cat a.txt", env)
    parent.rename(tmp_path / "moved")
    parent.symlink_to(tmp_path / "moved")
    assert fingerprint(root, "cat a.txt", env) != before


def test_a_dash_c_with_nothing_after_it_is_not_a_crash(root: Path, env: dict[str, str]) -> None:
    # `git diff -c` (a combined diff) ends with `-c`: there is no key=value to read after it.
    _init_repository(root, env)
    assert fingerprint(root, "git diff -c", env) is not None


def test_unparsable_text_in_a_linked_worktree_counts_as_running_git(root: Path, env: dict[str, str], tmp_path: Path) -> None:
    from ledger_impl.fingerprint import repository_outside_the_root
    from ledger_spec import Category, Command, FileTarget

    _init_repository(root, env)
    worktree = tmp_path / "linked"
    _git(root, env, "worktree", "add", "-q", "-b", "side", str(worktree))
    unparsable = Command("cat 'src/app.py", "cat src/app.py", Category.READ, FileTarget("src/app.py"))
    assert repository_outside_the_root(worktree, unparsable)
    assert not repository_outside_the_root(root, unparsable), "a .git directory is inside the root"


def test_a_line_tool_that_cannot_be_identified_allows_only_verbatim_repeats(
    root: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found on PATH, then gone before its identity was taken (removed in between, or a lookup
    # cached within one timestamp tick): the same absent identity on both sides proves nothing
    # about which program runs, so no other spelling may be served.
    import ledger_impl.fingerprint as fingerprints

    identify = fingerprints._followed_identity
    monkeypatch.setattr(
        fingerprints, "_followed_identity",
        lambda path: ("absent", 2) if os.path.basename(path) == "tail" else identify(path),
    )
    taken = fingerprint(root, "tail -n 2 src/app.py", env)
    assert taken is not None and taken.spelling == "tail -n 2 src/app.py"  # type: ignore[attr-defined]
