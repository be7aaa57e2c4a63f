"""git's inputs outside the root, asked of `ledger_impl.git_inputs` directly: the configuration
parser on the syntax git accepts, the files git reads and the variables that choose them, the
repository found from a subdirectory or through a `.git` file, and every bound, past which a
git read is never reused. Written for the survivors of the module's operator mutation
(docs/mutation/survivors.md); each test says which change it shows."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ledger_impl import git_inputs
from ledger_impl.git_inputs import BEYOND_LIMITS, RUNS_PROGRAM, config_files, discover, inputs, parse_config


def _git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("GIT_", "XDG_"))}
    return {**environment, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture
def repo(tmp_path: Path, env: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("a\n")
    _git(root, env, "init", "-q", "-b", "main")
    _git(root, env, "add", "-A")
    _git(root, env, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one")
    return root


def _moves(root: Path, env: dict[str, str], change) -> None:  # type: ignore[no-untyped-def]
    before = inputs(str(root), env)
    assert isinstance(before, tuple), before
    assert inputs(str(root), env) == before
    change()
    assert inputs(str(root), env) != before


# -- the parser ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,entries",
    [
        # a value continued on the next line (a key split this way must still be found)
        ("[diff]\n\texternal = \\\n/bin/evil\n", [("diff.external", "/bin/evil")]),
        # an escaped backslash at the end is not a continuation
        ("[a]\n\tk = x\\\\\n\tj = y\n", [("a.k", "x\\"), ("a.j", "y")]),
        # comment and blank lines are skipped, and what follows them is read
        ("[a]\n# one\n; two\n\n\tk = v\n", [("a.k", "v")]),
        # a key on the header's line, and a comment after a header
        ("[a] k = v\n[b] # note\n\tj = w\n", [("a.k", "v"), ("b.j", "w")]),
        # a malformed header ends the section; the next one is read
        ("[a b c]\n\tk = v\n[b]\n\tj = w\n", [("b.j", "w")]),
        # a subsection keeps its case, the section's name is lowered
        ('[DIFF "Foo"]\n\ttextconv = x\n', [("diff.Foo.textconv", "x")]),
        # the old dotted form is lowered whole
        ("[Diff.Foo]\n\ttextconv = x\n", [("diff.foo.textconv", "x")]),
        # a key with no value is the Boolean true
        ("[log]\n\tshowSignature\n", [("log.showsignature", "true")]),
        # an invalid key is skipped, the next one read
        ("[a]\n\t1bad = x\n\tgood = y\n", [("a.good", "y")]),
        # a key before any section is skipped
        ("k = v\n[a]\n\tj = w\n", [("a.j", "w")]),
        # a line that ends with a comment sign is no comment, on its own or after a header
        ("[diff]\n\texternal = /bin/evil ;\n", [("diff.external", "/bin/evil")]),
        ("[diff] external = /bin/evil ;\n", [("diff.external", "/bin/evil")]),
        # a comment sign alone on a line, or alone after a header
        ("[a]\n#\n\tk = v\n[b] ;\n\tj = w\n", [("a.k", "v"), ("b.j", "w")]),
        # a continuation joins exactly what is before the backslash
        ("[a]\n\tk = ab\\\ncd\n", [("a.k", "abcd")]),
    ],
    ids=["continued", "escaped-backslash", "comments", "on-the-header", "malformed-header", "subsection",
         "dotted", "no-value", "bad-key", "no-section", "ends-with-a-comment-sign", "header-then-comment-sign",
         "lone-comment-signs", "continued-mid-word"],
)
def test_the_parser_reads_what_git_reads(text: str, entries: list[tuple[str, str]]) -> None:
    """Pins `ledger_impl/git_inputs.py` lines 105 and 122 (a comment told by the line's last
    sign instead of its first): `external = /bin/evil ;` was skipped as a comment, so a
    program key went unseen and a git read that runs it could be reused."""
    assert parse_config(text) == entries


@pytest.mark.parametrize(
    "value,read",
    [
        ("plain ; comment", "plain"),
        ("plain # comment", "plain"),
        ('"a;b # c" ; comment', "a;b # c"),
        ("a\\tb\\nc\\bd", "a\tb\nc\bd"),
        ('say \\"hi\\"', 'say "hi"'),
        ("ends with \\ ", "ends with \\"),  # the line itself does not end with it
        ('"unterminated', "unterminated"),
    ],
    ids=["semicolon", "hash", "quoted", "escapes", "escaped-quote", "trailing-backslash", "unterminated"],
)
def test_a_value_is_unquoted_as_git_does(value: str, read: str) -> None:
    assert parse_config(f"[a]\n\tk = {value}\n") == [("a.k", read)]


# -- which files, from which variables ----------------------------------------------------


def test_the_system_file_is_read_unless_git_is_told_not_to(tmp_path: Path) -> None:
    common, git_dir = str(tmp_path / "c"), str(tmp_path / "g")
    assert "/etc/gitconfig" in config_files(git_dir, common, {})
    assert "/opt/system.cfg" in config_files(git_dir, common, {"GIT_CONFIG_SYSTEM": "/opt/system.cfg"})
    for word in ("1", "-1", "true", "yes", "on"):
        assert "/etc/gitconfig" not in config_files(git_dir, common, {"GIT_CONFIG_NOSYSTEM": word}), word
    for word in ("0", "false", "maybe"):  # git reads it then (an unknown word is an error it ignores)
        assert "/etc/gitconfig" in config_files(git_dir, common, {"GIT_CONFIG_NOSYSTEM": word}), word


def test_git_config_global_replaces_the_user_files(tmp_path: Path) -> None:
    common, git_dir = str(tmp_path / "c"), str(tmp_path / "g")
    home = {"HOME": "/home/u", "GIT_CONFIG_NOSYSTEM": "1"}
    assert config_files(git_dir, common, {**home, "GIT_CONFIG_GLOBAL": "/g.cfg"})[0] == "/g.cfg"
    assert config_files(git_dir, common, {**home, "GIT_CONFIG_GLOBAL": ""})[0] == os.path.join(common, "config")
    assert config_files(git_dir, common, home)[:2] == ["/home/u/.config/git/config", "/home/u/.gitconfig"]


def test_the_default_xdg_ignore_file_is_an_input(repo: Path, env: dict[str, str]) -> None:
    # XDG_CONFIG_HOME unset: git reads $HOME/.config/git/ignore.
    ignore = Path(env["HOME"]) / ".config" / "git" / "ignore"
    _moves(repo, env, lambda: (ignore.parent.mkdir(parents=True), ignore.write_text("*.log\n")))


def test_a_set_xdg_ignore_file_is_an_input(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    ignore = tmp_path / "xdg" / "git" / "ignore"
    _moves(repo, env, lambda: (ignore.parent.mkdir(parents=True), ignore.write_text("*.log\n")))


def test_an_include_whose_name_sorts_after_the_tilde_is_relative(repo: Path, env: dict[str, str]) -> None:
    # Only `~` and `~/...` are home-relative; `ünicode.inc` sorts after `~` and is not.
    home = Path(env["HOME"])
    (home / ".gitconfig").write_text("[include]\n\tpath = ünicode.inc\n")
    _moves(repo, env, lambda: (home / "ünicode.inc").write_text("[core]\n\tquotePath = false\n"))


def test_a_file_included_twice_does_not_end_the_walk(repo: Path, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    (home / "a.inc").write_text("[core]\n\tquotePath = false\n")
    (home / "b.inc").write_text("[diff]\n\texternal = /bin/false\n")
    (home / ".gitconfig").write_text("[include]\n\tpath = a.inc\n\tpath = a.inc\n\tpath = b.inc\n")
    assert inputs(str(repo), env) == RUNS_PROGRAM


def test_an_unreadable_configuration_file_is_skipped_as_git_skips_it(repo: Path, env: dict[str, str]) -> None:
    (Path(env["HOME"]) / ".gitconfig").mkdir()  # opening it fails
    assert isinstance(inputs(str(repo), env), tuple)


def test_a_count_of_environment_entries_that_is_no_number_gives_none(repo: Path, env: dict[str, str]) -> None:
    assert isinstance(inputs(str(repo), {**env, "GIT_CONFIG_COUNT": "many"}), tuple)


# -- the repository ------------------------------------------------------------------------


def test_a_repository_is_found_from_a_subdirectory(repo: Path, env: dict[str, str]) -> None:
    found = discover(str(repo / "sub"), env)
    assert found == (os.path.realpath(repo / ".git"),) * 2


def test_no_repository_is_none_up_to_the_filesystem_root(tmp_path: Path, env: dict[str, str]) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    if discover("/", env) is not None:
        pytest.skip("the filesystem root is inside a repository here")
    assert discover(str(alone), env) is None


def test_a_git_file_that_cannot_be_read_is_no_repository(tmp_path: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "linked"
    root.mkdir()
    (root / ".git").write_text("gitdir: /somewhere\n")
    real_open = open

    def refusing(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path) == str(root / ".git"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing)
    assert discover(str(root), env) is None


def test_a_worktree_s_own_refs_are_inputs(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    # A linked worktree has refs of its own (bisect, worktree-local refs) under its git dir.
    linked = tmp_path / "linked"
    _git(repo, env, "worktree", "add", "-q", "-b", "side", str(linked))
    git_dir, common = discover(str(linked), env)  # type: ignore[misc]
    assert git_dir != common
    _moves(linked, env, lambda: (Path(git_dir) / "refs" / "bisect").mkdir(parents=True))


def test_a_git_dir_apart_from_its_common_dir_has_its_refs_walked_whatever_the_names(tmp_path: Path, env: dict[str, str]) -> None:
    # GIT_DIR and GIT_COMMON_DIR may name any two directories: the git dir's own refs count
    # whether its path sorts before or after the common one's.
    for git_name, common_name in (("a-git", "z-common"), ("z-git", "a-common")):
        git_dir, common = tmp_path / git_name, tmp_path / common_name
        (git_dir / "refs").mkdir(parents=True)
        (common / "refs").mkdir(parents=True)
        given = {**env, "GIT_DIR": str(git_dir), "GIT_COMMON_DIR": str(common)}
        before = inputs(str(tmp_path), given)
        (git_dir / "refs" / "bisect").mkdir()
        assert inputs(str(tmp_path), given) != before, git_name


def test_a_sibling_worktree_s_head_is_an_input_of_the_main_one(repo: Path, env: dict[str, str], tmp_path: Path) -> None:
    # `git branch` in the main worktree marks the branch checked out in the linked one.
    linked = tmp_path / "linked"
    _git(repo, env, "worktree", "add", "-q", "-b", "side", str(linked))
    _moves(repo, env, lambda: _git(linked, env, "checkout", "-q", "-b", "other"))


# -- the bounds: past each, the read is never reused ---------------------------------------


def test_environment_entries_up_to_the_bound_are_read_and_past_it_refused(repo: Path, env: dict[str, str]) -> None:
    limit = git_inputs._ENVIRONMENT_ENTRIES_LIMIT
    given = {**env, "GIT_CONFIG_COUNT": str(limit)}
    given.update({f"GIT_CONFIG_KEY_{i}": "core.quotePath" for i in range(limit)})
    given.update({f"GIT_CONFIG_VALUE_{i}": "false" for i in range(limit)})
    assert isinstance(inputs(str(repo), given), tuple)
    given[f"GIT_CONFIG_KEY_{limit - 1}"] = "diff.external"
    assert inputs(str(repo), given) == RUNS_PROGRAM, "the last entry read is checked"
    more = {**given, "GIT_CONFIG_COUNT": str(limit + 1), f"GIT_CONFIG_KEY_{limit - 1}": "core.quotePath"}
    assert inputs(str(repo), more) == BEYOND_LIMITS


def test_configuration_files_up_to_the_bound_are_read_and_past_it_refused(repo: Path, env: dict[str, str]) -> None:
    # The files git reads first (XDG, global, the repository's two) count too.
    home = Path(env["HOME"])
    chain = git_inputs._CONFIG_FILES_LIMIT - len(config_files(*discover(str(repo), env), env))  # type: ignore[misc]

    def includes(count: int) -> None:
        (home / ".gitconfig").write_text("".join(f"[include]\n\tpath = {i}.inc\n" for i in range(count)))
        for i in range(count):
            (home / f"{i}.inc").write_text("[core]\n\tquotePath = false\n")

    includes(chain)
    assert isinstance(inputs(str(repo), env), tuple)
    (home / f"{chain - 1}.inc").write_text("[diff]\n\texternal = /bin/false\n")
    assert inputs(str(repo), env) == RUNS_PROGRAM, "the last file read is checked"
    includes(chain + 1)
    assert inputs(str(repo), env) == BEYOND_LIMITS


def test_a_configuration_file_past_its_size_bound_is_refused(repo: Path, env: dict[str, str]) -> None:
    limit = git_inputs._CONFIG_BYTES_LIMIT
    key = "[diff]\n\texternal = /bin/false\n"
    gitconfig = Path(env["HOME"]) / ".gitconfig"
    gitconfig.write_text("#" * (limit - len(key) - 1) + "\n" + key)  # exactly at the bound
    assert gitconfig.stat().st_size == limit
    assert inputs(str(repo), env) == RUNS_PROGRAM, "a file of the bound's size is read whole"
    gitconfig.write_text("#" * (limit - len(key)) + "\n" + key)  # one byte past it
    assert inputs(str(repo), env) == BEYOND_LIMITS


def test_ref_directories_up_to_the_bound_are_stat_ed_and_past_it_refused(repo: Path, env: dict[str, str]) -> None:
    refs = repo / ".git" / "refs"
    present = sum(1 for _ in refs.rglob("*") if _.is_dir()) + 1
    room = git_inputs._REF_DIRECTORIES_LIMIT - present
    for i in range(room):
        (refs / "many" / str(i)).mkdir(parents=True, exist_ok=True)
    # `many` itself is one more: fill to the bound exactly.
    (refs / "many" / str(room - 1)).rmdir()
    assert isinstance(inputs(str(repo), env), tuple)
    _moves(repo, env, lambda: (refs / "many" / "0" / "x").write_text("0" * 40 + "\n"))
    (refs / "many" / str(room - 1)).mkdir()
    assert inputs(str(repo), env) == BEYOND_LIMITS


def test_a_link_among_the_ref_directories_is_not_followed(repo: Path, tmp_path: Path) -> None:
    # The link itself is an entry of its directory, whose identity moves when it changes;
    # following it would walk wherever it points (back up, in circles to the bound).
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deeper").mkdir(parents=True)
    (repo / ".git" / "refs" / "linked").symlink_to(elsewhere)
    walked = git_inputs._ref_directories(str(repo / ".git"))
    assert walked is not None and not [path for path in walked if "linked" in path], walked


def test_worktrees_up_to_the_bound_are_read_and_past_it_refused(repo: Path, env: dict[str, str]) -> None:
    worktrees = repo / ".git" / "worktrees"
    for i in range(git_inputs._WORKTREES_LIMIT):
        (worktrees / f"w{i}").mkdir(parents=True)
    assert isinstance(inputs(str(repo), env), tuple)
    _moves(repo, env, lambda: (worktrees / f"w{git_inputs._WORKTREES_LIMIT - 1}" / "HEAD").write_text("ref: refs/heads/x\n"))
    (worktrees / "one-more").mkdir()
    assert inputs(str(repo), env) == BEYOND_LIMITS
