"""The classifier: categories, targets, normalization, and that its read-only verdicts are true.

Views are checked against the real tools: the lines a target names, cut from the file, must be
exactly what the command prints, including where the file lacks a final newline.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from ledger_impl import classify
from ledger_impl.classifier import awk_program_is_safe, sed_script_is_safe
from ledger_spec import NL_NUMBERED, NUMBERED, PLAIN, WHOLE_FILE, Category, FileTarget, LineRange, TreeTarget
from ledger_spec import lines as spec_lines

ROOT = "/testbed"  # lexical classification: the directory need not exist


def c(command: str, cwd: str = "."):
    return classify(command, cwd=cwd, root=ROOT)


# --- idioms and their targets ----------------------------------------------------------------

FILE_READS = [
    ("cat a.py", FileTarget("a.py", WHOLE_FILE, PLAIN)),
    ("cat -n a.py", FileTarget("a.py", WHOLE_FILE, NUMBERED)),
    ("nl -ba a.py", FileTarget("a.py", WHOLE_FILE, NL_NUMBERED)),
    ("head -n 20 a.py", FileTarget("a.py", LineRange(1, 20), PLAIN)),
    ("head -20 a.py", FileTarget("a.py", LineRange(1, 20), PLAIN)),
    ("head a.py", FileTarget("a.py", LineRange(1, 10), PLAIN)),
    ("head -n 0 a.py", FileTarget("a.py", LineRange(1, 0), PLAIN)),
    ("tail -n +5 a.py", FileTarget("a.py", LineRange(5, None), PLAIN)),
    ("sed -n '5,10p' a.py", FileTarget("a.py", LineRange(5, 10), PLAIN)),
    ("sed -n '5,3p' a.py", FileTarget("a.py", LineRange.from_sed(5, 3), PLAIN)),
    ("sed -n '10p' a.py", FileTarget("a.py", LineRange(10, 10), PLAIN)),
    ("sed -n '10,$p' a.py", FileTarget("a.py", LineRange(10, None), PLAIN)),
    ("sed -n '10,+5p' a.py", FileTarget("a.py", LineRange(10, 15), PLAIN)),
    ("sed -n '10,+0p' a.py", FileTarget("a.py", LineRange(10, 10), PLAIN)),
    ("cat -n a.py | sed -n '5,10p'", FileTarget("a.py", LineRange(5, 10), NUMBERED)),
    ("cat -n a.py | head -n 7", FileTarget("a.py", LineRange(1, 7), NUMBERED)),
    ("nl -ba a.py | sed -n '5,10p'", FileTarget("a.py", LineRange(5, 10), NL_NUMBERED)),
    ("sed -n '5,20p' a.py | head -n 3", FileTarget("a.py", LineRange(5, 7), PLAIN)),
    ("cd /testbed && sed -n '1,20p' src/a.py", FileTarget("src/a.py", LineRange(1, 20), PLAIN)),
    ("cd src && cat a.py 2>/dev/null", FileTarget("src/a.py", WHOLE_FILE, PLAIN)),
]


@pytest.mark.parametrize("command,target", FILE_READS)
def test_single_file_reads_name_their_file_lines_and_view(command, target):
    result = c(command)
    assert result.category is Category.READ
    assert result.target == target


@pytest.mark.parametrize(
    "command,view",
    [("tail -n 20 a.py", "tail-20"), ("wc -l a.py", "wc-l"), ("head -c 100 a.py", None), ("grep -n x a.py", "grep"),
     ("awk 'NR>=3 && NR<=5' a.py", "awk-lines"), ("grep -n x a.py | head", "pipeline"),
     # Issue 13 (mutation run of views.py): options that change what is printed, each once.
     ("cat -b a.py", "cat-b"), ("cat -v a.py", "cat-v"), ("cat -A a.py", "cat-A"), ("head -n 1K a.py", "head:n=1K"),
     ("head -n -12 a.py", "head-all-but-12"), ("tail -c 100 a.py", "tail:c=100"), ("tail -20 a.py", "tail-20"),
     ("nl a.py", "nl"), ("wc --lines a.py", "wc-l"),
     # sed without -n prints every line and the range again: never the range's lines alone.
     ("sed '5,10p' a.py", "sed")],
)
def test_other_single_file_reads_have_views_that_are_never_sliced(command, view):
    """Pins a mutant of `ledger_impl/classifier/sed.py` that no test had caught and that made a
    stale Reuse possible (line 162: `quiet and ...` -> `or`): `sed '5,10p'` without `-n`, which
    prints every line and the range again, got the range view, so a stored range could have
    served it. Listed in `scripts/mutation_survivors.json`."""
    result = c(command)
    assert result.read_only and isinstance(result.target, FileTarget)
    assert result.target.view not in (PLAIN, NUMBERED, NL_NUMBERED)
    if view is not None:
        assert result.target.view == view


@pytest.mark.parametrize(
    "command,scope,category",
    [
        ("grep -rn foo src", "src", Category.SEARCH),
        ("grep -rn 'def x' --include=*.py .", ".", Category.SEARCH),
        ("grep -rli foo --include='*.py' src", "src", Category.SEARCH),
        ("rg -n --sort path foo src", "src", Category.SEARCH),
        ("find . -name '*.py' -type f", ".", Category.SEARCH),
        ("find src -name '*.py' | head -20", "src", Category.SEARCH),
        ("ls -l", ".", Category.SEARCH),  # `ls -la` at the root reads its parent: no target
        ("ls -la src", ".", Category.SEARCH),  # src and src/.., the root
        ("ls -R src", "src", Category.SEARCH),
        ("git diff", ".", Category.SEARCH),
        ("git status", ".", Category.SEARCH),
        ("git log --oneline -5", ".", Category.SEARCH),
        ("git show HEAD", ".", Category.SEARCH),
        ("cat a.py b.py", ".", Category.READ),
        ("cat a.py && cat b.py", ".", Category.READ),
        ("echo '== a ==' && cat a.py", ".", Category.READ),
        ("grep -n x a.py b.py", ".", Category.SEARCH),
        ("cat *.py", ".", Category.READ),
        ("wc -l a.py b.py", ".", Category.READ),
        ("cd /testbed && grep -rn foo . 2>/dev/null | head -5", ".", Category.SEARCH),
    ],
)
def test_tree_reads(command, scope, category):
    result = c(command)
    assert result.category is category
    assert result.target == TreeTarget(scope)


@pytest.mark.parametrize(
    "command,view",
    [("od -c a.py", "od:c"), ("od -An -tx1 a.py", "od:A=n t=x1"), ("cd src && od -c ../a.py", "od:c")],
)
def test_od_reads_one_file_in_a_view_of_its_own(command, view):
    # The read idiom added by following CONTRIBUTING.md: od never prints the path, so the key
    # replaces it; its bytes view is not line-sliceable.
    result = c(command)
    assert result.category is Category.READ
    assert result.target == FileTarget("a.py", WHOLE_FILE, view)


@pytest.mark.parametrize("command", ["nl -bt a.py", "nl -b n a.py", "nl -bA a.py", "nl -ba -bt a.py"])
def test_nl_numbering_other_than_every_line_is_not_reusable(command):
    # `-bt` numbers only non-empty lines and `-bA` is refused by nl: neither is the nl-numbered view.
    assert c(command).target is None


@pytest.mark.parametrize("command", ["od -w8 a.py", "od a.py +10", "od +10", "od --traditional a.py"])
def test_od_forms_it_does_not_know_are_not_reusable(command):
    assert c(command).target is None or c(command).target == TreeTarget(".")


# --- normalization ---------------------------------------------------------------------------

EQUIVALENT = [
    ("cat  a.py", "cat ./a.py", "cat 'a.py'", 'cat "a.py"', "cat a\\.py", "cd src && cat ../a.py", "cd /testbed && cat a.py"),
    ("sed -n '1,5p' a.py", 'sed -n "1,5p" a.py', "sed -n 1,5p ./a.py", "cd /testbed && sed -n '1,5p' /testbed/a.py"),
    ("cat -n a.py | sed -n '3,4p'", "cat -n ./a.py|sed -n 3,4p"),
    ("grep -rn foo src", "grep  -rn 'foo' src", "cd /testbed && grep -rn foo src"),
    ("cd src && ls", "cd ./src && ls", "cd /testbed/src && ls", "cd /testbed && cd src && ls"),
    ("head a.py", "head ./a.py"),  # head prints no path without -v
    ("nl -ba a.py", "nl -ba ./a.py"), ("od -c a.py", "od -c ./a.py"),  # nor do nl and od
]


@pytest.mark.parametrize("group", EQUIVALENT)
def test_spellings_of_one_command_normalize_alike(group):
    results = [c(command) for command in group]
    assert len({r.normalized for r in results}) == 1, [r.normalized for r in results]
    assert len({r.target for r in results}) == 1


DISTINCT = [
    ("grep -rn foo ./src", "grep -rn foo src"),  # paths are printed as typed
    ("grep -n foo ./a.py", "grep -n foo a.py"),  # grep quotes the path in its binary-file notice
    ("wc -l ./a.py", "wc -l a.py"),  # wc prints the name
    ("cd src && grep -rn foo .", "grep -rn foo ."),
    ("cd src && ls", "ls"),
    ("grep -rn foo --include=*.py .", "grep -rn foo '--include=*.py' ."),  # only one is a glob
    ("cat a.py", "cat -n a.py"),
    ("ls src", "ls -la src"),
    ("head -v ./a.py", "head -v a.py"),  # `==> ./a.py <==` names the path as typed
    ("tail -v ./a.py", "tail -v a.py"),
]


@pytest.mark.parametrize("first,second", DISTINCT)
def test_commands_whose_output_may_differ_stay_distinct(first, second):
    a, b = c(first), c(second)
    assert (a.normalized, a.target) != (b.normalized, b.target)


# --- nothing that can write is read-only -------------------------------------------------------

WRITERS = [
    "cat a.py > b.py", "cat a.py >> b.py", "echo x > a.py", "grep x a.py > out.txt", "ls &> listing",
    "cat a.py | tee b.py", "sed -i 's/a/b/' a.py", "sed -i.bak 's/a/b/' a.py", "sed --in-place=.orig s/a/b/ a.py",
    "sed -n 'w out' a.py", "sed -n '1,5w out' a.py", "sed 's/a/b/w out' a.py", "sed -n '1e date' a.py",
    "sed 's/a/date/e' a.py", "sed -n 'r other' a.py", "awk '{print > \"x\"}' a.py", "awk '{print | \"sh\"}' a.py",
    "awk 'BEGIN{system(\"rm -rf x\")}'", "awk '{f=\"sys\" \"tem\"; @f(\"rm x\")}' a.py", "awk -i inplace '{print}' a.py",
    "sort -o a.py a.py", "sort --output=a.py a.py", "uniq a.py b.py", "find . -delete", "find . -name x -exec rm {} \\;",
    "find . -exec grep -l x {} +", "find . -fprint out", "find . -name '*.py' | xargs grep x", "xargs rm < list",
    "python fix.py", "python - <<'EOF'\nopen('a','w')\nEOF", "cat $(rm a.py)", "cat `touch b`", "cat <(rm x)",
    "cat a.py; rm a.py", "cat a.py && mv a.py b.py", "cat a.py & ", "cat $FILE", "cat ~/x", "cat {a,b}.py",
    "git checkout a.py", "git stash", "git diff --output=x", "mv a b", "cp a b", "rm -rf x", "touch a", "mkdir -p d",
    "ln -s a b", "chmod +x a", "patch -p1 < fix.diff", "git apply fix.diff", "tee < a.py b.py", "cat a.py 1<>b",
    "perl -pi -e 's/a/b/' a.py", "dd if=a of=b", "ls -la > /tmp/out", "LC_ALL=C cat a.py", "x=1; cat a.py",
    "(cat a.py)", "{ cat a.py; }", "for f in *.py; do cat $f; done", "cat <<EOF > f\n$(rm x)\nEOF", "tail -f log",
    "ls -lu", "find . -printf '%A'", "find . -amin -5", "cd src; cat a.py", "git -c core.pager=x log", "make",
]


@pytest.mark.parametrize("command", WRITERS)
def test_commands_that_can_write_or_execute_are_not_read_only(command):
    result = c(command)
    assert not result.read_only, result
    assert result.target is None


@pytest.mark.parametrize(
    "command,category",
    [
        ("sed -i 's/a/b/' a.py", Category.EDIT), ("sed -i.bak 's/a/b/' a.py", Category.EDIT),
        ("sed --no-such-option p a.py", Category.RUN), ("cat > f.py <<'EOF'\nx=1\nEOF", Category.EDIT),
        ("mv a b", Category.EDIT), ("git checkout a.py", Category.EDIT), ("find . -delete", Category.EDIT),
        ("pytest tests/ -x", Category.TEST), ("python -m pytest -q", Category.TEST), ("tox -e py", Category.TEST),
        ("python -m unittest discover", Category.TEST), ("./runtests.py", Category.TEST),
        ("cd /testbed && python tests/runtests.py queries", Category.TEST), ("python manage.py test", Category.TEST),
        ("timeout 300 python -m pytest x", Category.TEST), ("python reproduce.py", Category.RUN),
        ("pip install -e .", Category.RUN), ("python -c 'print(1)'", Category.RUN), ("echo hi", Category.RUN),
        ("cat > t.py <<'EOF'\nx\nEOF\npython t.py", Category.RUN),
    ],
)
def test_categories(command, category):
    assert c(command).category is category


# --- outside the root -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command,cwd",
    [("cat /etc/passwd", "."), ("cat ../x.py", "."), ("cd /tmp && cat x.py", "."), ("cd .. && ls", "."),
     ("grep -rn x /usr/lib", "."), ("cat ../../x", "src"), ("ls ../*", "."), ("ls .*", "."), ("cat a.py", "../up")],
)
def test_reads_outside_the_root_have_no_target(command, cwd):
    result = c(command, cwd=cwd)
    assert result.target is None


@pytest.mark.parametrize(
    "command,cwd",
    [("ls -la", "."), ("ls -al .", "."), ("ls -a -l", "."), ("ls -lat", "."), ("ls --all -s", "."),
     ("ls -fl", "."), ("cd src && ls -la ..", "."), ("ls -la src .", ".")],
)
def test_a_listing_that_shows_the_parent_of_the_root_has_no_target(command, cwd):
    # `..` of the root is outside the workspace; its link count and mtime change when anything
    # is made next to the root (counterexamples/classifier-ls-la-shows-the-parent-of-the-root.json).
    result = c(command, cwd=cwd)
    assert result.category is Category.SEARCH
    assert result.target is None


@pytest.mark.parametrize("command", ["ls -la src", "ls -a", "ls -A -l", "ls -la src/pkg", "ls -ld ."])
def test_a_listing_whose_parent_entries_stay_inside_keeps_its_target(command):
    assert isinstance(c(command).target, TreeTarget)


@pytest.mark.parametrize(
    "command",
    ["find . -mmin -5", "find src -mtime 0 -name '*.py'", "find . -cmin -1", "find . -ctime +2",
     "git log --relative-date", "git log --date=relative -3", "git log --date=human",
     "git log --pretty='%h %ar %s'", "git log -1 --format=%cr", "git show -s --format=%ah",
     "git log --since=yesterday", "git log --until='2 hours ago'", "git log --after=2.weeks"],
)
def test_reads_whose_output_moves_with_the_clock_are_not_reusable(command):
    # No file changes when "3 minutes ago" becomes "4 minutes ago", so no detector can report
    # it: such a read must never be served from storage.
    result = c(command)
    assert result.target is None or not result.read_only


@pytest.mark.parametrize("command", ["git log --oneline -5", "git log --format='%h %an %s'", "find . -newer a.py"])
def test_reads_pinned_to_files_or_absolute_data_stay_reusable(command):
    assert c(command).target is not None


@pytest.mark.parametrize(
    "command",
    [
        # stdout sent elsewhere: what is printed is not the file (an empty output stored as
        # the file's content was served to later reads)
        "cat a.py > /dev/null", "cat a.py >/dev/null 2>&1", "cat a.py &> /dev/null", "head -n 3 a.py >/dev/null",
        "grep -rn foo . > /dev/null",
        # awk that writes through a line continuation, reads another file, or reads the clock
        "awk '{ print \"x\" \\\n> \"/tmp/pwn\" }' a.py", "awk 'BEGIN{ARGV[1]=\"/etc/passwd\"} {print}' a.py",
        "awk '{print systime()}' a.py", "awk '{print strftime()}' a.py", "awk 'BEGIN{srand()} {print rand()}' a.py",
        # random order
        "sort -R a.py", "sort --random-sort a.py",
        # relative dates and reflog times
        "git log --date relative", "git log --date human -3", "git log --date=auto:relative",
        "git blame --date relative a.py", "git show 'HEAD@{5 minutes ago}'",
        # options that follow symbolic links out of the root
        "grep -R foo .", "grep --dereference-recursive foo .", "find -L . -name '*.py'", "find . -follow -name x",
        "rg -L foo", "ls -L", "ls --dereference", "diff -r src tests",
        # git operands outside the root
        "git diff /etc/hostname a.py",
    ],
)
def test_reads_that_are_not_a_pure_function_of_their_target_are_not_reusable(command):
    result = c(command)
    assert result.target is None or not result.read_only, result


def test_a_glob_that_reaches_through_a_symlink_out_of_the_root_has_no_target(tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "data").write_text("secret\n")
    (root / "link").symlink_to(outside)
    (root / "src").mkdir()
    (root / "src" / "data").write_text("inside\n")
    assert classify("cat l*/data", root=root).target is None
    assert classify("cat */data", root=root).target is None
    assert classify("cat s*/data", root=root).target is not None


def test_git_reads_have_no_target_when_the_repository_is_above_the_root(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    root = tmp_path / "ws"
    root.mkdir()
    assert classify("git log --oneline", root=root).target is None
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert classify("git log --oneline", root=root).target is not None


def test_without_a_root_absolute_paths_are_outside():
    assert classify("cat /testbed/a.py").target is None
    assert classify("cat a.py").target == FileTarget("a.py")


def test_symlink_escaping_the_root_has_no_target(tmp_path):
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    outside = tmp_path / "secret.txt"
    outside.write_text("x\n")
    (root / "link.txt").symlink_to(outside)
    (root / "outdir").symlink_to(tmp_path)
    (root / "a.py").write_text("a\n")
    (root / "alias.py").symlink_to(root / "a.py")
    assert classify("cat link.txt", root=root).target is None
    assert classify("cat outdir/secret.txt", root=root).target is None
    assert classify("cd outdir && ls", root=root).target is None
    assert classify("grep -rn x outdir", root=root).target is None
    # A link inside the root reads its target's key.
    assert classify("cat alias.py", root=root).target == FileTarget("a.py")
    assert classify("cd src && cat ../a.py", root=root).target == FileTarget("a.py")


def test_on_disk_a_missing_file_or_directory_falls_back_to_a_spelled_tree_target(tmp_path):
    # The error message quotes the path as typed and a pipeline can still exit 0, so such a
    # read keeps its spelling and depends on the whole tree (creating the file changes it).
    (tmp_path / "d").mkdir()
    for command in ("cat missing.py", "cat d", "cat -n ./missing.py | head -5"):
        result = classify(command, root=tmp_path)
        assert result.target == TreeTarget("."), command
    assert classify("cat ./missing.py", root=tmp_path).normalized != classify("cat missing.py", root=tmp_path).normalized


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["", "   \n", "# only a comment", "if", "cat 'unterminated", "cat a.py |", "&& ls", "cat a\x00b", "cat a.py )", "cat a.py ||",
     "cat <<EOF\nno end"],
)
def test_unparsable_or_empty_input_is_unknown(command):
    result = c(command)
    assert result.category is Category.UNKNOWN
    assert result.target is None


def test_quoted_heredocs_parse():
    command = "cat > f.py << 'EOF'\nprint(\"it's $HOME `x`\")\nEOF\necho done"
    assert c(command).category is Category.EDIT


def test_huge_non_utf8_and_non_string_input_never_crash():
    assert c("cat " + "a" * 2_000_000).category is Category.UNKNOWN
    assert c("cat \udcff.py").category in (Category.READ, Category.UNKNOWN)
    assert classify(b"cat a.py").category is not None  # type: ignore[arg-type]
    assert c("(" * 5000 + ")" * 5000).category in (Category.UNKNOWN, Category.RUN)


# --- the tools' own behaviour backs the views ---------------------------------------------------

CONTENT_VARIANTS = {
    "newline-at-end": "".join(f"line {i}\n" for i in range(1, 31)),
    "no-newline-at-end": "".join(f"line {i}\n" for i in range(1, 30)) + "line 30",
    "blank-lines": "a\n\n\nb\n\\:\n\tc\r\n" * 4,
}

VIEW_COMMANDS = [
    "cat a.txt", "cat -n a.txt", "nl -ba a.txt", "head -n 7 a.txt", "head -n 0 a.txt", "head a.txt", "tail -n +25 a.txt",
    "sed -n '5,9p' a.txt", "sed -n '9,5p' a.txt", "sed -n '28,$p' a.txt", "sed -n '30p' a.txt", "sed -n '25,40p' a.txt",
    "sed -n '10,+5p' a.txt", "sed -n '28,+5p' a.txt", "cat -n a.txt | sed -n '4,+2p'",
    "cat -n a.txt | sed -n '3,6p'", "cat -n a.txt | head -n 4", "nl -ba a.txt | sed -n '27,35p'",
    "nl -ba a.txt | head -n 2", "sed -n '5,20p' a.txt | head -n 3", "cat a.txt | head -n 3", "cat a.txt | tail -n +29",
    # Issue 13 (mutation run of views.py): the edges of head and tail counts, repeated options
    # (the last one counts), and cat's long and ignored options.
    "head -n 1 a.txt", "tail -n +1 a.txt", "tail -n +0 a.txt", "head -n 5 -n 7 a.txt", "tail -n 5 -n +3 a.txt",
    "cat --number a.txt", "cat -u a.txt", "cat -un a.txt",
]


def _render_view(content: str, view: str) -> str:
    lines = spec_lines.split_lines(content)
    if view == PLAIN:
        return content
    if view == NUMBERED:
        return "".join(f"{i:6d}\t{line}" for i, line in enumerate(lines, 1))
    assert view == NL_NUMBERED
    return "".join(f"{i:6d}\t{line}" + ("" if line.endswith("\n") else "\n") for i, line in enumerate(lines, 1))


@pytest.mark.parametrize("variant", sorted(CONTENT_VARIANTS))
@pytest.mark.parametrize("command", VIEW_COMMANDS)
def test_sliceable_views_match_the_real_tools(tmp_path, variant, command):
    content = CONTENT_VARIANTS[variant]
    if variant == "blank-lines" and command.startswith("nl"):
        content = content.replace("\\:\n", "x\n")  # nl treats \: lines as page delimiters
    (tmp_path / "a.txt").write_text(content)
    result = classify(command, root=tmp_path)
    target = result.target
    assert isinstance(target, FileTarget) and target.view in (PLAIN, NUMBERED, NL_NUMBERED)
    full = _render_view(content, target.view)
    expected = spec_lines.serve(WHOLE_FILE, full, target.lines)
    actual = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, check=True).stdout.decode()
    assert actual == expected


AWK_RANGE_COMMANDS = ["awk 'NR==5' a.txt", "awk 'NR>=25' a.txt", "awk 'NR>27' a.txt", "awk 'NR>=3 && NR<=6' a.txt",
                      "awk 'NR>3 && NR<6' a.txt", "awk 'NR==0' a.txt", "awk 'NR==31' a.txt",
                      "awk 'NR>=29 && NR<=40 {print}' a.txt"]


@pytest.mark.parametrize("variant", sorted(CONTENT_VARIANTS))
@pytest.mark.parametrize("command", AWK_RANGE_COMMANDS)
def test_awk_line_ranges_name_exactly_the_lines_awk_prints(tmp_path, variant, command):
    # Issue 13: `NR==a`, `NR>=a` and `NR>a` were never tested, so an off-by-one survived.
    content = CONTENT_VARIANTS[variant]
    (tmp_path / "a.txt").write_text(content)
    target = classify(command, root=tmp_path).target
    assert isinstance(target, FileTarget) and target.view == "awk-lines"
    # awk ends every record it prints with a newline, even the last one of a file without it.
    wanted = spec_lines.serve(WHOLE_FILE, content, target.lines)
    expected = wanted + ("\n" if wanted and not wanted.endswith("\n") else "")
    actual = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, check=True).stdout.decode()
    assert actual == expected


def test_sed_plus_range_is_not_served_past_its_last_line(tmp_path):
    # Issue 13: with a target one line too long, `10,+5p` on a 30-line file seemed to cover
    # line 16, and `16,20p` was then served the empty slice.
    from ledger_impl import Runtime

    (tmp_path / "f").write_text("".join(f"line {i}\n" for i in range(1, 31)))
    with Runtime(tmp_path) as runtime:
        runtime.step("sed -n '10,+5p' f")
        step = runtime.step("sed -n '16,20p' f")
    assert step.output == "".join(f"line {i}\n" for i in range(16, 21))


def test_awk_adds_a_final_newline_so_it_is_not_the_plain_view(tmp_path):
    (tmp_path / "a.txt").write_text("a\nb")
    out = subprocess.run(["awk", "NR>=1 && NR<=2", "a.txt"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert out == "a\nb\n"
    assert classify("awk 'NR>=1 && NR<=2' a.txt", root=tmp_path).target.view != PLAIN


# --- read-only verdicts leave the tree as it was --------------------------------------------------


def _tree_state(root: pathlib.Path) -> dict[str, tuple]:
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = pathlib.Path(dirpath) / name
            st = os.lstat(path)
            content = path.read_bytes() if path.is_file() and not path.is_symlink() else os.readlink(path) if path.is_symlink() else b""
            state[str(path.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_nlink, content)
    return state


SOUNDNESS_COMMANDS = [
    "cat a.py", "cat -n a.py | sed -n '1,3p'", "nl -ba a.py", "head -n 2 a.py", "tail -n 2 a.py", "sed -n '2,3p' a.py",
    "awk 'NR>=1 && NR<=2' a.py", "grep -rn foo .", "grep -rn foo --include=*.py src", "grep -l foo a.py src/b.py",
    "find . -name '*.py'", "find . -type f | head", "ls -la src", "ls -l", "ls -R", "wc -l a.py", "git status", "git diff",
    "git log --oneline", "cd src && cat b.py", "cat a.py | grep foo | sort | uniq -c", "sed -n '/foo/p;=' a.py",
    "sort a.py", "cut -d' ' -f1 a.py", "diff a.py src/b.py", "grep -c foo a.py 2>/dev/null", "cat *.py",
    "od -c a.py", "od -An -tx1 src/b.py",
]


def test_commands_classified_read_only_change_nothing(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "a.py").write_text("foo = 1\nbar = 2\nfoo()\n")
    (tmp_path / "src" / "b.py").write_text("import foo\n")
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env=env)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "add", "-A"], cwd=tmp_path, check=True, env=env)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"], cwd=tmp_path,
                   check=True, env=env)
    for command in SOUNDNESS_COMMANDS:
        result = classify(command, root=tmp_path)
        assert result.read_only and result.target is not None, command
        before = _tree_state(tmp_path)
        subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, env=env, timeout=30)
        assert _tree_state(tmp_path) == before, command


# --- the script scanners ----------------------------------------------------------------------


@pytest.mark.parametrize("script", ["1,5p", "$p", "/foo/p", "s/a/b/g", "s|a|b|gp", "/x/,/y/{p;=}", "y/ab/cd/", "10q",
                                    "s/w/e/", "/[w]/p", "\\,w,p", "1~2p", ":a;N;ba", "/a/a text w here",
                                    # Issue 13 (mutation run of sed.py): each form once.
                                    "s/a\\/b/c/", "1a w out", "1a x\\\nw out", "# w here\np", "s/a/b/I", "s/a/b/2",
                                    "//p", "/x/Ip", "\\%x%p", "1!p", "1 p", "/x/bw;p;:w", "s/a\tb/c/"])
def test_sed_scripts_that_only_print_are_safe(script):
    """The other side of the `a`/`i`/`c` text and comment mutants that
    `test_sed_scripts_that_write_read_or_execute_are_unsafe` pins (`ledger_impl/classifier/sed.py`
    lines 101-104 and 107): `1a w out` and `# w here` only print, the `w` being text or comment."""
    assert sed_script_is_safe(script)


@pytest.mark.parametrize("script", ["w out", "1,5w out", "s/a/b/w out", "s/a/b/gw out", "s/a/b/e", "e date", "r x",
                                    "R x", "W x", "F", "1e", "/x/!w y", "s/a/b", "v;w x", "{w x\n}",
                                    # Issue 13: `a` text ends at the newline, after which `w` is a command.
                                    "1a xy\nw out",
                                    # sed refuses these (unterminated, no command): not "only prints" either.
                                    "s/gp", "s/a\n/b/", "1,", "1", "\\", "/x/", "s/a\\", '" w out', "y/a/b", "1,/abc", "1+3p",
                                    # a comment ends at the newline too
                                    "# x\nw out"])
def test_sed_scripts_that_write_read_or_execute_are_unsafe(script):
    """Pins mutants of `ledger_impl/classifier/sed.py` that took a writer for a read and that no
    test had caught: lines 101, 102, 103, 104, the loop over `a`/`i`/`c` text (its test, the
    backslash test, the steps), which skipped two characters at a time and jumped the newline
    (`1a xy` then `w out`); line 107, a comment's `script[i] != "\\n"` -> `<`, `==`, `>=`,
    `not i < n`, which swallowed the newline (`# x` then `w out`). Listed in
    `scripts/mutation_survivors.json`."""
    assert not sed_script_is_safe(script)


@pytest.mark.parametrize("script,safe", [("q5", True), ("p;/abcI", False), ("p;\\", False), ("/abcp", False), ("p;/a\n/p", False), ("y/a/b;", False)])
def test_sed_scanning_ends(script, safe):
    # Issue 13: mutants of the scanner's loops that stop advancing hung here; a subprocess with a
    # timeout turns a hang into a failure instead of a stuck suite.
    code = f"from ledger_impl.classifier import sed_script_is_safe; print(sed_script_is_safe({script!r}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == str(safe)


@pytest.mark.parametrize("program,safe", [("NR>=1 && NR<=5", True), ("{print $1}", True), ("/x/ {print NR\": \"$0}", True),
                                          ("{print > \"f\"}", False), ("{print $1 >> f}", False), ("{print | \"sh\"}", False),
                                          ("BEGIN{system(\"x\")}", False), ("{getline l < \"f\"}", False),
                                          ("NR > 5 || NR < 2", True)])
def test_awk_programs(program, safe):
    assert awk_program_is_safe(program) is safe


# --- hazard classes (issue 8 part 2; the rules live in ledger_impl/classifier/hazards.py) ------


@pytest.mark.parametrize(
    "command",
    ["head -v a.py", "head -v -n 3 a.py", "head --verbose a.py", "tail -v -n +2 a.py", "cat a.py | head -v -n 2",
     "cat -n a.py | tail -v -n +2", "head -n 2 -v a.py | head -n 1"],
)
def test_views_that_add_headers_are_never_sliceable(command):
    # `head -v` prints `==> a.py <==` first: a slice of `cat a.py` is not its output.
    result = c(command)
    assert result.read_only
    assert not (isinstance(result.target, FileTarget) and result.target.view in (PLAIN, NUMBERED, NL_NUMBERED))


def test_a_header_view_is_never_served_from_the_plain_view(tmp_path):
    from ledger_impl import Runtime

    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    with Runtime(tmp_path) as runtime:
        runtime.step("cat a.txt")
        step = runtime.step("head -v -n 2 a.txt")
    assert step.output == "==> a.txt <==\none\ntwo\n"


@pytest.mark.parametrize("command", ["cat x=~/f", "cat a=b:~/f", "grep -n x y=~/f", "wc -l PATH=~/bin:~/x"])
def test_tilde_after_an_assignment_equals_or_colon_is_dynamic(command):
    # bash expands `x=~/f` to `x=$HOME/f`: the file read lies outside the root.
    assert c(command).target is None


@pytest.mark.parametrize("command", ["cat 'x=~/f'", "cat x=\\~/f"])
def test_a_quoted_tilde_stays_literal(command):
    assert c(command).target is not None


@pytest.mark.parametrize(
    "command",
    ["printf '%(%s)T\\n' -1 && cat a.py", "printf '%(%H:%M)T' && cat a.py", "echo $SECONDS && cat a.py",
     "echo $EPOCHSECONDS; cat a.py", "echo $RANDOM && cat a.py", "date && cat a.py", "time cat a.py",
     "cat a.py && date +%s", "echo ${EPOCHREALTIME} && cat a.py"],
)
def test_clock_readers_are_run(command):
    result = c(command)
    assert result.target is None or not result.read_only, result


@pytest.mark.parametrize(
    "command",
    ["ls -lF", "ls -lp src", "ls -l --classify", "ls -l --file-type", "ls -l --indicator-style=slash",
     "ls -l --indicator-style=classify", "ls -gF", "find . -xtype l", "find . -executable", "find . -readable",
     "find . -writable -name x", "find . -printf '%Y %p\\n'", "find . -printf '%y%Y\\n'"],
)
def test_options_that_inspect_symlink_targets_count_as_following_links(command):
    result = c(command)
    assert result.target is None or not result.read_only, result


@pytest.mark.parametrize("command", ["ls -F", "ls -p", "find . -type l", "find . -printf '%y %p\\n'"])
def test_options_that_show_only_the_link_itself_stay_reusable(command):
    assert c(command).target is not None


@pytest.mark.parametrize("command", ["git describe --dirty", "git describe --always --dirty=-x", "git describe --broken"])
def test_git_reads_that_refresh_the_index_are_not_read_only(command):
    assert not c(command).read_only


def _repo(path: pathlib.Path) -> pathlib.Path:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "add", "-A"], cwd=path, check=True, env=env)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"], cwd=path,
                   check=True, env=env)
    return path


def test_git_describe_dirty_really_rewrites_the_index(tmp_path):
    # Why the rule exists: even with GIT_OPTIONAL_LOCKS=0, `describe --dirty` refreshes and
    # writes .git/index after a stat-only change.
    root = _repo(tmp_path)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0"}
    os.utime(root / "a.txt", ns=(1, 1))
    before = os.stat(root / ".git" / "index").st_mtime_ns
    subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root, check=True, env=env, capture_output=True)
    assert os.stat(root / ".git" / "index").st_mtime_ns != before


@pytest.mark.parametrize(
    "setting",
    ["[diff]\n\texternal = /bin/true\n", "[core]\n\tfsmonitor = /bin/true\n", "[diff \"x\"]\n\ttextconv = cat\n",
     "[include]\n\tpath = ../elsewhere\n", "[core]\n\tpager = cat\n"],
)
def test_git_reads_in_a_repository_configured_to_run_programs_are_not_reusable(tmp_path, setting):
    root = _repo(tmp_path)
    assert classify("git diff", root=root).target is not None
    with open(root / ".git" / "config", "a") as handle:
        handle.write(setting)
    for command in ("git diff", "git status", "git log -p", "git show HEAD", "git blame a.txt"):
        result = classify(command, root=root)
        assert result.target is None or not result.read_only, (command, setting)


@pytest.mark.parametrize(
    "command",
    ["git blame --contents=/etc/hostname a.py", "git log --ignore-revs-file=/etc/x", "grep -rn x --exclude-dir=../x .",
     "git diff --relative=../up", "ls --hide=/etc/x", "git blame --ignore-revs-file=../revs a.py"],
)
def test_outside_paths_inside_option_values_are_outside(command):
    assert c(command).target is None or not c(command).read_only


# --- the hunt's read grammar ---------------------------------------------------------------------

# Idioms the grammar draws on purpose although they get no reusable target (`run`, or a read
# outside the root): the hunt checks that refusing them is what keeps them from going stale.
NOT_REUSABLE_IDIOMS = {"tilde-word", "ls-long-classify", "find-xtype", "ls-all-long"}


@pytest.mark.parametrize("idiom", sorted(__import__("ledger_properties.shell_strategies").shell_strategies.READ_IDIOM_TABLE))
def test_every_read_idiom_of_the_grammar_is_classified_as_intended(idiom):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from ledger_properties.shell_strategies import ROOT_PLACEHOLDER, read_commands

    @settings(max_examples=5, deadline=None, database=None)
    @given(read_commands(idioms=(idiom,)))
    def check(command: str) -> None:
        result = c(command.replace(ROOT_PLACEHOLDER, ROOT))
        assert result.category is not Category.UNKNOWN, command
        if idiom in NOT_REUSABLE_IDIOMS:
            assert result.target is None or not result.read_only, command
        elif idiom != "outside" and "@OUTSIDE@" not in command:
            assert result.read_only and result.target is not None, command

    check()


def test_every_hazard_counterexample_named_in_the_table_exists():
    from ledger_impl.classifier.hazards import HAZARDS

    directory = pathlib.Path(__file__).resolve().parent.parent / "counterexamples"
    named = [name.split(" ")[0] for h in HAZARDS if h.counterexample for name in h.counterexample.split(", ")]
    assert named and all((directory / name).exists() for name in named), named


def test_a_filter_that_starts_past_its_input_reads_the_empty_range():
    # `sed -n '3,5p'` streams at most three lines, so a filter printing lines 5-6 of that stream
    # prints nothing: the composed range is empty (7..6), never an invalid one that ends
    # before its start - 1. Checked against the real tools as well.
    result = c("sed -n '3,5p' a.py | sed -n '5,6p'")
    assert result.target == FileTarget("a.py", LineRange(7, 6), PLAIN)
    assert result.target.lines.is_empty
    text = "".join(f"line {i}\n" for i in range(1, 11))
    printed = subprocess.run(
        ["bash", "-c", "sed -n '3,5p' | sed -n '5,6p'"], input=text.encode(), capture_output=True, check=True
    ).stdout
    assert printed == b""
