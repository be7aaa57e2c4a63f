"""Classifier cases that kill the surviving mutants of its small modules (issue 13).

`mutation-survivors.md` names, for each surviving mutant of the streams, programs, git, search,
listing, awk and hazards modules, the test here that kills it. A mutant there that classifies a
writer or a clock reader as a read, or names other lines than a read prints, would make a stale
Reuse possible; the tests of the three real misses found on the way (git stash's `--output` and
relative dates, gawk's PROCINFO, a git config longer than the part searched) say so.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from ledger_impl import classify
from ledger_spec import WHOLE_FILE, Category, FileTarget, TreeTarget
from ledger_spec import lines as spec_lines

ROOT = "/testbed"  # lexical classification: the directory need not exist


def c(command: str, cwd: str = "."):
    return classify(command, cwd=cwd, root=ROOT)


def _tree(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"" for p in sorted(root.rglob("*"))}


def _run_changes_the_tree(command: str, root: pathlib.Path) -> bool:
    """Run `command` with bash in `root` (a temporary directory) and say whether any file changed."""
    (root / "a.py").write_text("b\na\na\nc\n")
    (root / "b.py").write_text("x\n")
    before = _tree(root)
    subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, timeout=30,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"})
    return _tree(root) != before


# --- streams.py ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["uniq -c a.py", "tac a.py", "cat a.py | tac", "cat a.py | tr a-z A-Z",
                                     "cat a.py | tr -d a"])
def test_stream_tools_on_one_input_are_reads_that_change_nothing(command, tmp_path):
    # Issue 13 (mutation run of streams.py): `uniq` with one operand, tac and tr were never
    # classified; the mutants made them `edit` or `run` (reuse lost).
    result = classify(command, root=tmp_path)
    assert result.read_only and result.target is not None, result
    assert not _run_changes_the_tree(command, tmp_path)


@pytest.mark.parametrize("command", ["uniq a.py out.txt", "uniq -c a.py out.txt"])
def test_uniq_with_an_output_operand_writes_and_is_an_edit(command, tmp_path):
    assert c(command).category is Category.EDIT
    assert _run_changes_the_tree(command, tmp_path)


@pytest.mark.parametrize("command", ["uniq a.py b.py c.py", "cat a.py | tr --no-such-option a b", "tac -s x a.py",
                                     "cat a.py | tac --separator=x"])
def test_stream_tool_forms_the_parsers_do_not_know_are_not_reads(command):
    # `uniq IN OUT EXTRA` is refused by uniq, but the classifier does not model the refusal: any
    # second operand keeps it an edit. tr and tac accept no option their parsers do not list.
    result = c(command)
    assert not result.read_only and result.target is None, result


# --- programs.py ----------------------------------------------------------------------------------

TEST_RUNS = [
    "python -m pytest", "python3 -m django test", "python -m django test auth", "pypy3 -m unittest",
    "python manage.py test", "python x/run_tests.py", "bin/test", "/usr/local/bin/pytest -x",
    "timeout 60 pytest", "timeout -s KILL 60 pytest", "timeout --signal KILL 60 python -m pytest -q",
    "timeout -k 5 60 python -m pytest", "timeout --kill-after 5 60 pytest", "timeout --foreground 60 pytest",
    "timeout -s KILL -k 5 60 python manage.py test", "timeout 60 python manage.py test app",
]
NOT_TEST_RUNS = [
    "python -m django runserver", "python -m django", "python -m django check test", "python -m pip install x",
    "python -m", "python -c unittest", "python bench.py pytest", "python manage.py runserver", "python manage.py",
    "python manage.py migrate test",
    "./manage.py test", "python setup.py test", "timeout 60", "timeout 60 make", "timeout 60 python manage.py runserver",
    "timeout -s KILL 60", "timeout -s", "timeout 60 python -m django runserver", "timeout --foreground 60 ./build.sh test",
]


@pytest.mark.parametrize("command", TEST_RUNS)
def test_test_suite_runs_are_tests(command):
    # Issue 13 (mutation run of programs.py): only the commonest spellings were tested, so the
    # `-m` length check, django's `test` subcommand and timeout's options with an argument
    # (`-s KILL`, `-k 5`) were never exercised.
    assert c(command).category is Category.TEST


@pytest.mark.parametrize("command", NOT_TEST_RUNS)
def test_programs_that_are_not_test_suites_are_runs(command):
    assert c(command).category is Category.RUN


@pytest.mark.parametrize("command,category", [("timeout --preserve-status 60 pytest", "test"),
                                              ("timeout -v --foreground 60 python -m pytest", "test"),
                                              ("timeout --preserve-status 60 make", "run")])
def test_timeout_option_scanning_ends(command, category):
    # A flag without an argument is stepped over one word at a time; a mutant that stopped
    # stepping hung here, so the classifier runs in a subprocess with a timeout.
    code = f"from ledger_impl import classify; print(classify({command!r}, root='/testbed').category.value)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == category


@pytest.mark.parametrize("command,category", [
    ("perl -i -pe 's/a/b/' a.py", Category.EDIT), ("perl -i.bak -pe 's/a/b/' a.py", Category.EDIT),
    ("perl -ne 'print' a.py", Category.RUN), ("perl -e 'print 1'", Category.RUN), ("perl a.pl", Category.RUN),
])
def test_perl_in_place_is_an_edit_and_anything_else_a_run(command, category):
    # perl's code can do anything: never a read. `-i` says it edits its operands.
    assert c(command).category is category
    assert not c(command).read_only


# --- git.py ---------------------------------------------------------------------------------------


def _repository(path: pathlib.Path) -> pathlib.Path:
    """A repository in `path` with one commit and one stash entry, git config kept out."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "a.py").write_text("a\n")
    user = ["-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", *user, "add", "-A"], cwd=path, check=True, env=env)
    subprocess.run(["git", *user, "commit", "-qm", "x"], cwd=path, check=True, env=env)
    (path / "a.py").write_text("b\n")
    subprocess.run(["git", *user, "stash", "-q"], cwd=path, check=True, env=env)
    return path


GIT_READS = ["git --no-pager log", "git --no-pager --no-pager status", "git ls-files -o", "git branch", "git branch -a",
             "git branch --list -v", "git stash list", "git stash show", "git stash show -p", "git diff -- a.py"]


@pytest.mark.parametrize("command", GIT_READS)
def test_git_reads_are_searches_of_the_repository(command):
    # Issue 13 (mutation run of git.py): `--no-pager`, `ls-files -o` (not diff's `-o`), and the
    # listing forms of the writers `branch` and `stash` were never classified.
    result = c(command)
    assert result.category is Category.SEARCH
    assert result.target == TreeTarget(".")


@pytest.mark.parametrize("command", GIT_READS)
def test_git_reads_have_no_target_while_the_repository_lies_above_the_root(command, tmp_path):
    # A .git above the root changes where no detector looks: every git read, the listing forms
    # of branch and stash too, depends on the repository.
    root = tmp_path / "ws"
    root.mkdir()
    _repository(tmp_path)
    assert classify(command, root=root).target is None
    assert classify(command, root=tmp_path).target is not None


@pytest.mark.parametrize("command,category", [
    ("git", Category.RUN), ("git --no-pager", Category.RUN), ("git -C src status", Category.RUN),
    ("git fetch", Category.RUN), ("git diff -ofile", Category.RUN), ("git log -ofile", Category.RUN),
    ("git show -ofile", Category.RUN), ("git diff --ext-diff", Category.RUN), ("git log -p --textconv", Category.RUN),
    ("git diff --no-index a.py b.py", Category.RUN), ("git diff -Oorder.txt", Category.RUN),
    ("git diff ../x", Category.RUN), ("git log -- ../outside", Category.RUN), ("git log -- src/../../x", Category.RUN),
    ("git branch new", Category.EDIT), ("git branch -d old", Category.EDIT), ("git branch -a new", Category.EDIT),
    ("git stash pop", Category.EDIT), ("git --no-pager stash", Category.EDIT), ("git --no-pager checkout a.py", Category.EDIT),
    # Writers whose arguments look like a listing's: `git tag list` makes a tag named `list`,
    # `git am` applies patches from stdin, `git worktree list` is kept an edit like every worktree.
    ("git tag list", Category.EDIT), ("git am", Category.EDIT), ("git add -v", Category.EDIT),
    ("git worktree list", Category.EDIT), ("git remote show origin", Category.RUN),
])
def test_git_forms_that_write_run_programs_or_leave_the_root_are_not_reads(command, category):
    """Pins two mutants of `ledger_impl/classifier/git.py` that took a writer for a read and that
    no test had caught: line 70, `sub == "branch"` -> `sub <= "branch"` (`git am` sorts before
    `branch`, has no argument, and became a read; it applies patches from stdin); line 72,
    `sub == "stash"` -> `sub >= "stash"` (`git tag list` makes a tag named `list`). Listed in
    `scripts/mutation_survivors.json`."""
    result = c(command)
    assert result.category is category
    assert result.target is None


@pytest.mark.parametrize("command", ["git stash show --output=out.txt", "git stash show --stat --output=out.txt",
                                     "git stash list --output=out.txt"])
def test_git_stash_listings_that_write_a_file_are_not_reads(command, tmp_path):
    # Found while reading git.py for its mutants: `stash list` and `stash show` take log and diff
    # options, and `--output` writes a file. They were classified as reads, so the file written
    # went unreported and a later read of it could be served stale.
    root = _repository(tmp_path)
    assert not classify(command, root=root).read_only
    before = set(os.listdir(root))
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True, env=env)
    assert set(os.listdir(root)) - before == {"out.txt"}


@pytest.mark.parametrize("command", ["git stash list --date=relative", "git stash list --format='%cr %s'",
                                     "git stash list --since=yesterday", "git stash show --ext-diff",
                                     "git stash show --no-index a.py b.py", "git stash show -p -- ../x"])
def test_git_stash_listings_that_read_the_clock_or_run_programs_are_not_reusable(command, tmp_path):
    # `git stash list --date=relative` prints `stash@{0 seconds ago}`: its output moves with the
    # clock, and no detector can report that. Also found while reading git.py.
    root = _repository(tmp_path)
    result = classify(command, root=root)
    assert result.target is None or not result.read_only, result


def test_git_stash_list_with_a_relative_date_really_moves_with_the_clock(tmp_path):
    root = _repository(tmp_path)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    out = subprocess.run(["git", "stash", "list", "--date=relative"], cwd=root, capture_output=True, text=True,
                         check=True, env=env).stdout
    assert " ago}" in out


@pytest.mark.parametrize("unknown_for_opaque", [True, False])
def test_the_rules_detector_does_not_miss_the_file_git_stash_show_writes(tmp_path, unknown_for_opaque):
    # The rules detector trusts the classifier's reads to write nothing: with `stash show
    # --output` read as a read, the file it wrote went unreported in either mode.
    from ledger_impl.detectors import RulesDetector

    root = _repository(tmp_path)
    detector = RulesDetector(unknown_for_opaque)
    command = "git stash show -p --output=out.txt"
    detector.before(root, command)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    code = subprocess.run(["bash", "-c", command], cwd=root, capture_output=True, env=env).returncode
    changes = detector.after(root, command, code)
    assert (root / "out.txt").exists()
    assert changes.unknown or "out.txt" in changes.paths


# --- search.py ------------------------------------------------------------------------------------

SEARCHES = [
    ("grep --color=never x a.py", FileTarget("a.py", view="grep")),
    ("grep --colour=auto x a.py", FileTarget("a.py", view="grep")),
    ("grep -e x a.py", FileTarget("a.py", view="grep")), ("grep --regexp=x -e y a.py", FileTarget("a.py", view="grep")),
    ("grep -e x a.py b.py", TreeTarget(".")), ("grep --directories=skip x a.py", FileTarget("a.py", view="grep")),
    ("grep -d recurse x src", TreeTarget("src")), ("grep --directories=recurse -n x src", TreeTarget("src")),
    ("grep -r x", TreeTarget(".")), ("grep -rn x src tests", TreeTarget(".")), ("grep -rn -e x src", TreeTarget("src")),
    ("rg --sort path --color=never x", TreeTarget(".")), ("rg --files --sort=path", TreeTarget(".")),
    ("rg --files -j1 src", TreeTarget("src")), ("rg --sort modified -e x src", TreeTarget("src")),
    ("rg --regexp x --threads 1 src", TreeTarget("src")), ("rg --sortr=path x", TreeTarget(".")),
    ("rg -j 1 x src tests", TreeTarget(".")), ("grep -5 x a.py", FileTarget("a.py", view="grep")),
    ("grep -n -3 x a.py", FileTarget("a.py", view="grep")),
]


@pytest.mark.parametrize("command,target", SEARCHES)
def test_searches_name_what_they_search(command, target):
    # Issue 13 (mutation run of search.py): the pattern given by `-e` (so every operand is a
    # file), `--color=never`, `-d recurse`, a recursive grep without a directory, grep's
    # numeric context (`-5`) and rg's `--files` were never classified.
    result = c(command)
    assert result.category is Category.SEARCH
    assert result.target == target


@pytest.mark.parametrize("command", ["grep --color=always x a.py", "grep --colour=always -r x src", "grep --color x a.py",
                                     "grep", "grep -e", "rg", "rg --color=auto x", "rg --color always x src", "rg -e",
                                     "rg --color=yes x",
                                     "grep -R x src", "grep -rR x src", "grep --no-such-option x a.py"])
def test_searches_with_forced_colour_or_no_pattern_are_not_reusable_reads(command):
    # rg's colour is refused for every value but `never`, one it does not know (`yes`) too.
    result = c(command)
    assert result.target is None and not result.read_only, result


@pytest.mark.parametrize("command", ["rg x", "rg -n alpha src", "rg --files", "rg --sort none x", "rg --sort accessed x",
                                     "rg -j2 x", "rg --threads 4 x src", "rg -c x"])
def test_an_rg_search_without_an_order_is_not_reusable(command):
    # rg searches files on several threads and prints each file's matches when its thread is
    # done: the order of files differs from run to run (seen by the hook-path hunt: a served
    # `rg -n alpha` listed docs/notes.md before a.txt, a run then after). Sorted by path, by a
    # time only a change moves, or on one thread, the order is the directory's.
    result = c(command)
    assert result.target is None and not result.read_only, result


def test_a_grep_of_stdin_reads_no_file():
    # The pattern is the only operand: grep reads stdin, here a file through a pipe.
    assert c("cat a.py | grep x").target == FileTarget("a.py", view="pipeline")
    assert c("cat a.py | grep -e x").target == FileTarget("a.py", view="pipeline")
    assert c("grep x").category is Category.RUN


# --- listing.py -----------------------------------------------------------------------------------

LISTINGS = [
    ("find", TreeTarget(".")), ("find -H . -name x", TreeTarget(".")), ("find -P src -name x", TreeTarget("src")),
    ("find src tests -name x", TreeTarget(".")), ("find src ! -name x", TreeTarget("src")),
    ("find ! -name x", TreeTarget(".")), ("find src \\( -name a -o -name b \\)", TreeTarget("src")),
    ("find . -newer a.py", TreeTarget(".")), ("find src -samefile a.py", TreeTarget(".")),
    ("find src -cnewer src/a.py", TreeTarget(".")),
    ("find . -maxdepth 1 -type f", TreeTarget(".")), ("find src -empty -print", TreeTarget("src")),
    ("find . -printf '%p %s\\n'", TreeTarget(".")),
    ("find . -regex '.*%a'", TreeTarget(".")), ("find . -regex '.*%Y'", TreeTarget(".")),
    ("find . -newer a.py -name '*.py'", TreeTarget(".")),
    # a quoted `*` is part of a name: its `..` entry is the root, not a pattern
    ("ls -la 'sr*'", TreeTarget(".")),
    ("find . -name '%a*'", TreeTarget(".")), ("find . -name '*%Y*'", TreeTarget(".")),  # -printf's formats only
    ("ls --color=never", TreeTarget(".")), ("ls --color=auto src", TreeTarget("src")),
    ("ls -l --indicator-style=none", TreeTarget(".")), ("ls -a", TreeTarget(".")), ("ls -a1", TreeTarget(".")),
    ("ls -aC src", TreeTarget("src")), ("ls -ald src", TreeTarget("src")), ("ls -a --directory -l src", TreeTarget("src")),
    ("ls -fl src", TreeTarget(".")), ("ls --all -l src", TreeTarget(".")), ("ls -lA", TreeTarget(".")),
    ("diff a.py b.py", TreeTarget(".")), ("diff -u a.py b.py", TreeTarget(".")),
    ("diff --color=never a.py b.py", TreeTarget(".")), ("diff -U3 --exclude=x a.py b.py", TreeTarget(".")),
]


@pytest.mark.parametrize("command,target", LISTINGS)
def test_listings_name_the_tree_they_list(command, target):
    # Issue 13 (mutation run of listing.py): find's -H/-P, several starting points, a test that
    # opens with `!` or `(`, the file-argument tests; ls's colour and indicator values and the
    # `..` rule under -a; diff's options: none was classified before.
    result = c(command)
    assert result.read_only
    assert result.target == target


@pytest.mark.parametrize("command", [
    # find: links followed, arguments missing, access times, the type of a link's target, writes
    "find -H -L . -name x", "find -P -L src", "find . -newer", "find . -samefile", "find . -name", "find . -printf",
    "find . -printf '%a %p'", "find . -type f -printf '%A@'", "find . -printf '%Y'", "find . -fls out",
    "find . -fprint0 out", "find . -fprintf out %p", "find . -mtime 1", "find . -exec ls {} \\;", "find . -ok rm {} \\;",
    # ls: forced colour, a long listing's indicators, access times
    "ls --color=always", "ls --color", "ls -lF", "ls -l --indicator-style=slash", "ls -lu", "ls --time=atime",
    # diff: not exactly two operands, colour, recursion
    "diff a.py", "diff a.py b.py c.py", "diff --color=always a.py b.py", "diff --color=yes a.py b.py", "diff -r a b",
    "diff -5 a.py b.py",
])
def test_listing_forms_that_write_follow_links_or_read_the_clock_are_not_reusable(command):
    result = c(command)
    assert result.target is None and not result.read_only, result


@pytest.mark.parametrize("command", ["find . -newer", "find . -samefile", "find . -cnewer", "find . -name", "find . -printf",
                                     "find src -type"])
def test_find_tests_missing_their_argument_are_runs(command):
    # find refuses them; the parser says `run` rather than failing on the missing word (which
    # would make the command `unknown`).
    assert c(command).category is Category.RUN


def test_find_compared_with_a_file_outside_the_root_has_no_target():
    """Pins a mutant of `ledger_impl/classifier/listing.py` that took a read outside the root for
    one inside and that no test had caught (line 55: `files.append(args[i + 1])` -> `args[i + 0]`,
    `args[i - 1]`): `find . -newer ../x` got the target `.`, though it reads ../x's mtime, where no
    detector looks. Listed in `scripts/mutation_survivors.json`."""
    assert c("find . -newer ../x").target is None
    assert c("find . -newer a.py").target == TreeTarget(".")


@pytest.mark.parametrize("command", ["ls -la --indicator-style=none", "ls -a -s", "ls -a --full-time", "ls -al -i",
                                     "ls -fl", "ls --all --size"])
def test_a_listing_that_describes_the_parent_of_the_root_has_no_target(command):
    # `..` at the root describes the root's parent, where no detector looks (its size, times and
    # link count change with anything made next to the root).
    result = c(command)
    assert result.category is Category.SEARCH and result.target is None


@pytest.mark.parametrize("command", ["find . -fls out", "find . -fprint0 out", "find . -delete", "find . -newer a.py -delete",
                                     "find . -name x -fprint out"])
def test_find_actions_that_write_are_edits(command):
    """Pins a mutant of `ledger_impl/classifier/listing.py` that took a writer for a read (line 56:
    `i += 2` -> `i += 3` after `-newer FILE`): the next word was skipped, so `find . -newer a.py
    -delete` would have become a read. `test_listings_name_the_tree_they_list` killed it first.
    Listed in `scripts/mutation_survivors.json`."""
    assert c(command).category is Category.EDIT


# --- awk.py ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["gawk '{print PROCINFO[\"pid\"]}' a.py", "awk 'NR==1 {print PROCINFO[\"ppid\"], $0}' a.py"])
def test_awk_that_prints_its_process_id_is_not_reusable(command):
    # Found while reading awk.py for its mutants: gawk's PROCINFO["pid"] (and "ppid", "pgrpid")
    # differ at every run with nothing on disk changing, so no detector can report the change;
    # PROCINFO was only counted as naming the file's path.
    """A real miss found reading `awk.py` for its mutation run: a program naming gawk's `PROCINFO`
    was a reusable read, but `PROCINFO["pid"]` changes at every run with nothing on disk
    changing, so no detector can report it. (docs/mutation/survivors.md)"""
    result = c(command)
    assert result.target is None or not result.read_only, result


@pytest.mark.parametrize("command,view", [
    ("awk 'NR==3 && NR<5' a.py", "awk"),  # `NR==a` with a second comparison is no range the parser knows
    ("awk -F: 'NR==2' a.py", "awk"), ("awk -v n=1 'NR>=2' a.py", "awk"),  # an option may change what NR counts
    ("awk 'NR==2' a.py", "awk-lines"), ("awk '$1 > 2' a.py", "awk"), ("awk '{print}' -- a.py", "awk"),
])
def test_awk_reads_get_a_line_range_only_for_the_forms_the_parser_knows(command, view):
    # Issue 13 (mutation run of awk.py): an option before the program, `NR==a && NR<b`, and a
    # comparison that is not a redirection were never classified.
    result = c(command)
    assert result.read_only and isinstance(result.target, FileTarget)
    assert result.target.view == view


@pytest.mark.parametrize("command", ["awk", "awk -F", "awk --no-such '{print}' a.py", "awk '{print}' x=1 a.py",
                                     "awk '{print}' a.py n=2", "awk '{print $1 > 2}' a.py", "awk 'BEGIN{print 1}'"])
def test_awk_forms_that_are_not_reads_of_files(command):
    # `x=1` as an operand is an assignment awk runs, not a file; `print $1 > 2` writes a file `2`.
    result = c(command)
    assert not result.read_only and result.target is None, result


def test_awk_programs_naming_the_file_keep_its_spelling():
    # FILENAME prints the path as typed, so `./a.py` and `a.py` differ; without it they do not.
    assert c("awk '{print FILENAME}' ./a.py").normalized != c("awk '{print FILENAME}' a.py").normalized
    assert c("awk 'NR==2' ./a.py").normalized == c("awk 'NR==2' a.py").normalized


@pytest.mark.parametrize("content", ["".join(f"line {i}\n" for i in range(1, 11)),
                                     "".join(f"line {i}\n" for i in range(1, 10)) + "line 10"],
                         ids=["newline-at-end", "no-newline-at-end"])
@pytest.mark.parametrize("program", ["NR==1", "NR>=1", "NR>0", "NR>=0", "NR>=1 && NR<=3", "NR>0 && NR<3", "NR>=0 && NR<2",
                                     "NR>=5 && NR<=3", "NR>5 && NR<6", "NR>=4 && NR<=4"])
def test_awk_line_ranges_at_the_first_line_and_when_empty_match_real_awk(tmp_path, content, program):
    # Issue 13 (mutation run of awk.py): the ranges were tested away from line 1 and never
    # empty, so `max(first, 1)` -> `max(first, 2)` and an empty range widened to one line
    # survived: a target naming other lines than awk prints, served from another read.
    (tmp_path / "a.txt").write_text(content)
    command = f"awk '{program}' a.txt"
    target = classify(command, root=tmp_path).target
    assert isinstance(target, FileTarget) and target.view == "awk-lines"
    wanted = spec_lines.serve(WHOLE_FILE, content, target.lines)
    expected = wanted + ("\n" if wanted and not wanted.endswith("\n") else "")  # awk ends every record
    actual = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, check=True).stdout.decode()
    assert actual == expected


def test_awk_without_a_program_is_a_run():
    assert c("awk").category is Category.RUN  # not an internal error (`unknown`)


# --- hazards.py -----------------------------------------------------------------------------------

_PROGRAM = "[diff]\n\texternal = /bin/true\n"


@pytest.fixture
def git_home(tmp_path, monkeypatch) -> pathlib.Path:
    """A repository (returned) with a home of its own; no git config from the environment."""
    home = tmp_path / "home"
    home.mkdir()
    for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG", "GIT_DIR",
                 "GIT_CONFIG_COUNT", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(tmp_path / "no-system-config"))
    root = tmp_path / "ws"
    root.mkdir()
    _repository(root)
    assert classify("git status", root=root).target is not None
    return root


def _not_reusable(root: pathlib.Path) -> bool:
    result = classify("git status", root=root)
    return result.target is None or not result.read_only


@pytest.mark.parametrize("where", ["home", "xdg", "xdg-default", "global", "system"])
def test_a_configured_program_in_any_config_file_git_reads_makes_git_reads_run(git_home, monkeypatch, where):
    # Issue 13 (mutation run of hazards.py): only the repository's own .git/config was tested;
    # git also reads ~/.gitconfig, $XDG_CONFIG_HOME/git/config (default ~/.config/git/config),
    # $GIT_CONFIG_GLOBAL instead of those two, and the system file unless GIT_CONFIG_NOSYSTEM.
    home = pathlib.Path(os.environ["HOME"])
    if where == "home":
        path = home / ".gitconfig"
    elif where == "xdg":
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
        path = home / "xdg" / "git" / "config"
    elif where == "xdg-default":
        path = home / ".config" / "git" / "config"
    elif where == "global":
        path = home / "global.cfg"
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(path))
    else:
        path = pathlib.Path(os.environ["GIT_CONFIG_SYSTEM"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_PROGRAM)
    assert _not_reusable(git_home)


@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_the_system_config_is_not_consulted_when_git_does_not_read_it(git_home, monkeypatch, value):
    pathlib.Path(os.environ["GIT_CONFIG_SYSTEM"]).write_text(_PROGRAM)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", value)
    assert not _not_reusable(git_home)


def test_git_config_global_replaces_the_home_config_files(git_home, monkeypatch):
    home = pathlib.Path(os.environ["HOME"])
    (home / ".gitconfig").write_text(_PROGRAM)
    (home / "global.cfg").write_text("[user]\n\tname = a\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "global.cfg"))
    assert not _not_reusable(git_home)
    (home / "global.cfg").write_text(_PROGRAM)
    assert _not_reusable(git_home)


@pytest.mark.parametrize("name,value", [("GIT_CONFIG_PARAMETERS", "'diff.external'='/bin/true'"), ("GIT_CONFIG", "/x"),
                                        ("GIT_DIR", ".git")])
def test_config_from_the_environment_makes_git_reads_run(git_home, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert _not_reusable(git_home)


@pytest.mark.parametrize("key,runs", [("diff.external", True), ("core.fsmonitor", True), ("include.path", True),
                                      ("diff.autoRefreshIndex", False), ("user.name", False)])
def test_config_given_by_count_runs_programs_only_for_the_program_keys(git_home, monkeypatch, key, runs):
    monkeypatch.setenv("GIT_CONFIG_COUNT", "2")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.email")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "a@b")
    monkeypatch.setenv("GIT_CONFIG_KEY_1", key)
    monkeypatch.setenv("GIT_CONFIG_VALUE_1", "/bin/true")
    assert _not_reusable(git_home) is runs


def test_an_empty_config_count_is_no_config(git_home, monkeypatch):
    # The Runtime replaces a count it cannot read by its own one key, written at index 0
    # (execution.command_environment): a KEY_0 left in the environment never reaches git.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "diff.external")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "/bin/true")
    assert not _not_reusable(git_home)


def test_a_config_file_that_cannot_be_read_makes_git_reads_run(git_home):
    (pathlib.Path(os.environ["HOME"]) / ".gitconfig").mkdir()  # open() fails with IsADirectoryError
    assert classify("git status", root=git_home).category is Category.RUN  # judged, not an internal error


@pytest.mark.parametrize("where", ["main-config", "worktree-config"])
def test_a_linked_worktree_s_config_is_followed_through_its_dot_git_file(tmp_path, git_home, where):
    # Issue 23: a `.git` file (a linked worktree) used to make every git read run. git reads
    # the main repository's config and the worktree's own config.worktree: the classifier now
    # reads the same files, so a worktree's read is reusable until one of them names a program.
    other = tmp_path / "other"
    subprocess.run(["git", "-C", str(git_home), "worktree", "add", "-q", str(other)], check=True, capture_output=True)
    assert (other / ".git").is_file()
    assert not _not_reusable(other)
    main_git = git_home / ".git"
    path = main_git / "config" if where == "main-config" else main_git / "worktrees" / "other" / "config.worktree"
    with path.open("a") as handle:
        handle.write(_PROGRAM)
    assert _not_reusable(other)


def test_an_unreadable_dot_git_file_makes_git_reads_run(git_home):
    git_dir = git_home / ".git"
    git_dir.rename(git_home / "moved")
    git_dir.write_text("not a gitdir line\n")
    assert _not_reusable(git_home)


def test_a_program_key_late_in_a_long_config_file_is_seen(git_home):
    (pathlib.Path(os.environ["HOME"]) / ".gitconfig").write_text("# padding\n" * 50_000 + _PROGRAM)
    assert _not_reusable(git_home)


def test_a_config_file_too_long_to_read_whole_makes_git_reads_run(git_home):
    # Found through the survivors `read(1_000_000)` -> `read(999_999)`: only the first million
    # characters of a config file were searched, so a program key after them was missed and
    # the git read stayed reusable. A file longer than that is now not proven: assume it may.
    """A real miss found by the mutation run of `hazards.py` (`read(1_000_000)` survived as 999,999
    and 1,000,001): only the first million characters of a git config file were searched, so a
    program key placed after them left `git diff` a reusable read while git would run that
    program. (docs/mutation/survivors.md)"""
    config = pathlib.Path(os.environ["HOME"]) / ".gitconfig"
    padding = "#" * 99 + "\n"
    config.write_text(padding * 10_000 + _PROGRAM)  # 1,000,000 characters, then the key
    assert _not_reusable(git_home)
    # At the limit exactly, the whole file is read, and one without a key stays reusable.
    config.write_text(padding * 10_000)
    assert len(config.read_text()) == 1_000_000
    assert not _not_reusable(git_home)
    config.write_text(padding * 10_000 + "#")
    assert _not_reusable(git_home)


@pytest.mark.parametrize("command,reusable", [
    ("git log --date iso", True), ("git log --date=iso", True), ("git log --date short -3", True),
    ("git log --date=format:%Y", True), ("git log --date relative", False), ("git show HEAD@{1}", False),
    ("git log --date=auto:human", False),
    ("uptime && cat a.py", False), ("printf x && cat a.py", True), ("printf '%s' x && cat a.py", True),
    ("ls -nF", False), ("ls -oF", False), ("ls -gp", False), ("ls --format=long -F", False),
    ("ls --format=verbose -p", False), ("ls --format=across -F", True), ("ls --format=long --indicator-style=none", True),
    ("true '%(%s)T' && cat a.py", True), ("grep -rn x=/etc/passwd src", True),
    ("git log -1 human.py", True), ("ls -I long -F", True), ("ls --hide=verbose -F src", True),
    ("git log -- human.py", True), ("git show relative", True), ("echo '%(%s)T' && cat a.py", True),
    ("ls --hide=long -F", True), ("ls --hide=verbose -p", True),
    ("grep -rn x --include=a..b .", True), ("grep -rn x --include=src/../../x .", False), ("grep -rn x -e=/etc/x .", False),
])
def test_hazard_rules_at_their_edges(command, reusable):
    # Each hazard rule once on each side: two-word `--date` values, a reflog time, `uptime`,
    # printf without a time format, ls long formats other than -l, a `..` inside a name.
    result = c(command)
    assert (result.read_only and result.target is not None) is reusable, result
