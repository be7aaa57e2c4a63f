"""Issue 13, the mutation run of the classifier's larger modules (sed.py, effect.py, command.py).

Each test here was written for mutants that survived `tests/test_classifier.py`, or for a real
miss the survivors pointed at; `mutation-survivors.md` names the mutants each one kills. The sed
scanner's verdicts are checked against the real GNU sed where it matters: a script the scanner
calls safe must never create a file when sed runs it.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys

import pytest

from ledger_impl import classify
from ledger_impl.classifier import sed_script_is_safe
from ledger_impl.classifier.effect import Kind, Options, reader, stream_tool
from ledger_impl.classifier.sed import sed as sed_effect
from ledger_impl.shell import Word
from ledger_spec import WHOLE_FILE, Category, FileTarget, LineRange, TreeTarget

ROOT = "/testbed"  # lexical classification: the directory need not exist


def c(command: str, cwd: str = "."):
    return classify(command, cwd=cwd, root=ROOT)


def _gnu_sed() -> bool:
    if shutil.which("sed") is None:
        return False
    version = subprocess.run(["sed", "--version"], capture_output=True, text=True)
    return version.returncode == 0 and "GNU sed" in version.stdout


needs_gnu_sed = pytest.mark.skipif(not _gnu_sed(), reason="the scanner follows GNU sed's grammar")


def _sed_creates_a_file(tmp_path, script: str) -> bool:
    """Run `sed -n SCRIPT f` in a directory of its own; whether anything besides f appeared."""
    work = tmp_path / "sed-run"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    (work / "f").write_text("a\n[/]\nx\n")
    try:
        subprocess.run(["sed", "-n", "-e", script, "f"], cwd=work, capture_output=True, timeout=5)
    except subprocess.TimeoutExpired:
        pass  # a script that loops forever still had its chance to open its files
    return {p.name for p in work.iterdir()} != {"f"}


# --- sed: scripts that write or run a command --------------------------------------------------------
#
# Each of these writes a file or runs a command when GNU sed runs it (the oracle test below runs
# each); the scanner must call each unsafe. The first two groups were real misses, fixed: the
# scanner called them safe, so `sed -n ':x w out' f` was a read with a file target of f and a
# Reuse would not have written `out`.

WRITERS = [
    # GNU sed ends a label (`:x`, `bx`, `tx`, `Tx`) at a blank as well as at `;` or a newline,
    # and reads what follows as the next command. The scanner skipped to the `;` or newline.
    ":x w out", ": x w out", "bx w out\n:x", "b\tx w out\n:x", "tx\tw out\n:x", "Tx w out\n:x", ":a\nbx w out\n:x",
    "bx\tw out\n:x",
    # In an address or an `s` pattern a bracket expression hides the delimiter: the scanner
    # ended `/[/a]/w out` at the second `/` and read `a]/w out` as `a` text.
    "/[/a]/w out", "/[/#]/w out", "\\%[%#]%w out", "/[]/#]/w out", "/[^]/#]/w out", "/[[:alpha:]/#]/w out",
    "/[[./.]#]/w out", "/[[=/=]#]/w out", "/[[/]#/w out", "/x/,/[/a]/w out", "/[/i]/w out", "/[/c]/w out",
    # `a`, `i` and `c` text ends at the newline whatever its last character.
    "1a X\nw out", "1i A.\nw out", "1c 0\nw out",
    # The commands after an `s` or `y` command are scanned.
    "s/a/b/;w out", "y/a/b/;w out", "s/a/b/g\nw out",
    # After `addr,+` without a number, sed reads the next character as the command: `w` here.
    "1,+wp", "1,~wp",
    # sed opens every `w` file when it reads the script, even one after a `q`.
    "q;w out", "5q\nw out",
    # A backslash in `a` text escapes one character only.
    "1a x\\y\nw out",
    # A comment ends at the newline, whatever its length.
    "#x\nw out", "#xyz\nw out",
    # An `e` flag runs the pattern space wherever it stands among the flags.
    "s/a/touch out/ge", "s/a/touch out/1e", "s/a/touch out/pe",
]


@pytest.mark.parametrize("script", WRITERS)
def test_more_scripts_that_write_or_run_a_command_are_unsafe(script):
    """Pins seven mutants of `ledger_impl/classifier/sed.py` that took a writer for a read (a
    Reuse would not have written the file) and that no test had caught: line 106, after `addr,+`
    or `addr,~` `i += 1` -> `+= 2` (`1,+wp`: without a number sed reads `w` as the command and
    writes `p`); line 124, `continue` -> `break` after `q`/`Q`/`l`/`L` (`q;w out`: sed opens every
    `w` file when it reads the script); line 136, in `a`/`i`/`c` text `== "\\"` -> `<=` (`1i A.`
    then `w out`: the newline skipped); line 137, after a backslash in text `i += 1` -> `+= 2`;
    line 142, in a comment `i += 1` -> `+= 2` (the comment jumped the newline); line 158, in the
    flags `i += 1` -> `+= 2` (`s/a/touch out/ge`: a command run taken for a read); line 159,
    `continue` -> `break` after `s`/`y` (`s/a/b/;w out`). Listed in `scripts/mutation_survivors.json`."""
    assert not sed_script_is_safe(script)


@needs_gnu_sed
@pytest.mark.parametrize("script", WRITERS)
def test_gnu_sed_really_writes_or_runs_a_command_for_each_of_them(tmp_path, script):
    """The two real misses found reading the sed scanner against GNU sed 4.9 for its mutation run,
    checked against the real sed: a label ends at a blank (`sed -n ':x w out' f` writes `out`),
    and a bracket expression hides the regex delimiter (`/[/a]/w out` writes `out`); both were
    reads with a file target, so a Reuse would not have written `out`.
    (docs/mutation/survivors.md)"""
    assert _sed_creates_a_file(tmp_path, script)


@pytest.mark.parametrize("script", [
    # labels hold any character but a blank or `;`, and end there
    ":x;p", "bx;p;:x", ":a\nN\nba", "b end\np\n:end", "/x/bw;p;:w", "b\np", "tx p\n:x", ":x.1\np", "bx-1;p;:x-1",
    ":a#b\np",
    # bracket expressions (the fix made these reusable: they were refused)
    "/[/]/p", "s/[/]/x/", "s/[/]/x/g;p", "/[[:alpha:]/]/p", "\\%[%]%p", "/[^]/]/p", "/[]/]/p", "s|[|]|x|", "s/a/[/;p",
    "y/[/]/;p", "s[a[b[", "/[\\]/p", "/[\t]/p", "/[[:alpha:]]/p", "/[[:alpha:]x]/p", "/[[.-.]]/p", "/[^a]/p", "/[]]/p",
    "/[^]]/p", "/[A.]/p", "/[a.]/p", "\\][a]]p",
    # an escape in a regex is two characters
    "/\\n/p", "s/\\./x/", "/a\\//p", "s/\\t/ /g",
    # `#` after a `y` starts a comment; a tab inside `a`/`i` text is text
    "y/a/b/#c", "y/a/b/ #c", "1a x\tw out", "1i \tw out", "#\tw out",
    # `q` and `Q` take an exit code
    "q5", "Q 1", "5q 3;p", "Q\t2",
])
def test_more_scripts_that_only_print_are_safe(script):
    assert sed_script_is_safe(script)


@pytest.mark.parametrize("script", [
    # an unterminated bracket expression ("unterminated address regex")
    "/[[", "/[a[", "\\#[", "\\#w out[:", "/[a/p", "/[a\n]/p", "/[[:alpha:]/p", "/[[:a/]/p", "/[[.]/]/p", "/[]/p", "/[^/p",
    "/[[:\n:]]/p",
    # a newline inside an `s` or `y` part ("unterminated `s' command")
    " ;y \n", "y/a\n/b/", "p;s/a\n/b/", "s\ta\n\tb\t",
    # an address followed by no command sed knows; a command right after a quit code
    "1\x7fp", "1\u00e9p", "$\u00e9p", "q1w", "Q 12w",
    # a range with no first address; an address cut short after its backslash
    ",p", ",5p", ":c\t\\", "1,+3",
    # an `s` or `y` with no delimiter
    "s", "p;y\n",
])
def test_scripts_sed_refuses_are_unsafe(script):
    # sed refuses each of these: not "only prints" either.
    assert not sed_script_is_safe(script)


@pytest.mark.parametrize("script,safe", [("\\%[:/ax[:", False)])
def test_sed_scanning_of_brackets_ends(script, safe):
    # A mutant that lets an unterminated class inside a bracket restart the scan hung here; a
    # subprocess with a timeout turns a hang into a failure (as test_sed_scanning_ends does).
    code = f"from ledger_impl.classifier import sed_script_is_safe; print(sed_script_is_safe({script!r}))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == str(safe)


# --- sed: the scanner against the real tool ----------------------------------------------------

_PIECES = ["/", "[", "]", "^", "\\", ":", "#", "w out", " ", "a", ";", "\n", "p", "s", "x", "b", "}", "{", "!", "1",
           ",", "y", "I", "$", "=", "t", "[:alpha:]", ".", "*", "\t", "c", "i", "q", "%", "W out"]


@needs_gnu_sed
def test_no_script_the_scanner_calls_safe_makes_sed_write(tmp_path):
    # Scripts drawn from the pieces of sed's grammar that end or hide a part (delimiters,
    # brackets, labels, text, comments) around a writing command; a fixed seed, so a failure
    # names the same script every run. 1,000 draws give about 300 scripts the scanner calls safe
    # (after the fix, 110,000 draws of two such alphabets run against sed 4.9, 28,955 of them
    # scanner-safe, created no file).
    rng = random.Random(13)
    safe = 0
    for _ in range(1000):
        script = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 9)))
        if sed_script_is_safe(script):
            safe += 1
            assert not _sed_creates_a_file(tmp_path, script), script
    assert safe > 50  # the draw must reach the scanner's safe side to say anything


# --- effect.py: the option scanner -----------------------------------------------------------------


def _words(*texts: str) -> list[Word]:
    return [Word(((text, False),)) for text in texts]


def test_an_option_that_needs_an_argument_at_the_end_of_the_words_is_refused():
    # `head a.py -n`: the argument is missing, so the scan fails (and the command is not a read)
    # rather than reading past the last word.
    scan = Options(_words("a.py", "-n"), short_arg="n")
    assert not scan.ok
    assert c("head a.py -n").category is Category.RUN


def test_a_long_option_that_needs_an_argument_at_the_end_is_refused():
    # `head a.py --lines`: head refuses it; read as `head a.py`, it would be the first 10 lines.
    assert not Options(_words("a.py", "--lines"), long_arg=frozenset({"lines"})).ok
    assert c("head a.py --lines").category is Category.RUN


def test_a_lone_dash_is_an_operand_so_a_read_of_a_file_and_stdin_is_not_a_single_file_read():
    # `cat a.py -` prints a.py and then stdin: never a view of a.py alone.
    assert [w.text for _, w in Options(_words("a.py", "-"), short="n").operands] == ["a.py", "-"]
    result = c("cat a.py -")
    assert result.category is Category.READ
    assert not isinstance(result.target, FileTarget)


def test_an_unknown_option_that_sorts_before_the_double_dash_is_refused_not_taken_for_it():
    # `-,` and `-+` sort before `--`; they are unknown options, never the end of the options.
    for word in ("-,", "-+"):
        scan = Options(_words(word, "a.py"), short="n")
        assert not scan.ok
    assert c("cat -, a.py").category is Category.RUN


def test_the_words_after_a_double_dash_are_the_operands():
    # `cat -- a.py` reads a.py alone: `--` is neither an operand nor the end of the words.
    assert [w.text for _, w in Options(_words("--", "a.py", "-n"), short="n").operands] == ["a.py", "-n"]
    assert c("cat -- a.py").target == FileTarget("a.py", WHOLE_FILE, "plain")


def test_a_lone_dash_after_a_pipe_is_stdin():
    # `cat a.py | cat -` prints a.py through a filter: the lone dash is stdin, not a file "-".
    assert c("cat a.py | cat -").target == FileTarget("a.py", WHOLE_FILE, "pipeline")


def test_digits_at_the_end_of_an_option_cluster_are_a_number():
    # `grep -n3`: -n and a context of 3 lines.
    assert Options(_words("-n3"), short="n", numeric=True).flags == [("n", None), ("#", "3")]
    assert c("grep -n3 foo a.py").category is Category.SEARCH


def test_a_listing_of_the_working_directory_is_scoped_to_it():
    # `ls` alone lists `.`, a literal name: in src, its scope is src, not the whole root.
    assert c("cd src && ls").target == TreeTarget("src")


def test_a_number_is_an_option_only_for_tools_that_take_one():
    # `cat -5` is no cat option (cat refuses it); `grep -3n` is a context of 3 lines and -n.
    assert not Options(_words("-5", "a.py"), short="n").ok
    assert c("cat -5 a.py").category is Category.RUN
    assert Options(_words("-3n"), short="n", numeric=True).flags == [("#", "3"), ("n", None)]
    assert c("grep -3n foo a.py").category is Category.SEARCH


def test_a_read_of_several_files_or_of_a_glob_is_a_tree_read_without_a_view():
    # The command layer serves a view only from a single-file read (`tree` False, one file).
    for words in (_words("a.py", "b.py"), [Word((("*.py", True),))]):
        effect = reader(Options(words), "plain", WHOLE_FILE, path_free=True)
        assert effect.kind is Kind.READS and effect.tree and effect.view is None
    single = reader(Options(_words("a.py")), "plain", WHOLE_FILE, path_free=True)
    assert not single.tree and single.view == "plain"


def test_a_stream_tool_with_operands_reads_a_tree():
    # `sort a.py b.py` prints a merge of its operands: never a view of one file.
    effect = stream_tool(Options(_words("a.py")))
    assert effect.kind is Kind.READS and effect.tree and effect.view is None
    assert stream_tool(Options([])).kind is Kind.FILTER


# --- command.py: the whole command ------------------------------------------------------------------


def test_input_that_is_neither_text_nor_bytes_is_classified_from_its_repr():
    # os.fsdecode refuses an int; the classifier must fall back to its repr, never raise.
    assert classify(12345).text == "12345"  # type: ignore[arg-type]


def test_two_reads_in_separate_statements_are_never_a_single_file_read():
    # `cat a.py; cat b.py` prints both files: a file target of a.py would serve a.py alone.
    result = c("cat a.py; cat b.py")
    assert result.category is Category.READ
    assert result.target == TreeTarget(".")


def test_a_cd_at_the_very_end_is_followed_and_a_cd_before_an_or_is_not():
    # A final `cd` changes nothing printed; `cd src || cat a.py` runs cat where cd failed, in
    # the starting directory, so following the cd would name src/a.py: it is refused.
    assert c("cat a.py && cd src").category is Category.READ
    assert c("cd src || cat a.py").category is Category.RUN


def test_several_reads_share_the_root_as_their_scope():
    # `ls src && cat a.py` also prints a.py, outside src: scoped to src, an edit of a.py would
    # leave the stored output in place.
    assert c("ls src && cat a.py").target == TreeTarget(".")
    assert c("ls src").target == TreeTarget("src")


def test_a_quoted_option_value_with_glob_characters_is_a_literal_path():
    # A path-like option value is checked against the root (hazards.option_value_path). The shell
    # never expands a quoted `'--include=/testbed/.*rc'`: grep gets the pattern as written, so it
    # is a literal path inside the root and the search keeps its scope (as a glob, a component
    # that starts with a dot would have been refused).
    assert c("grep -rn foo '--include=/testbed/.*rc' src").target == TreeTarget("src")


def test_a_read_run_outside_the_root_keeps_its_category():
    # The working directory is outside the root, so there is no target; the command is still a read.
    result = c("cat a.py", cwd="../up")
    assert result.category is Category.READ
    assert result.target is None


def test_a_working_directory_that_sorts_before_the_dot_still_prefixes_the_normalized_text():
    # `+d` and `+e` sort before `.`; the directory decides which a.py is printed, so each of
    # the four spellings is a different command.
    normalized = {c("cat a.py; cat b.py", cwd=cwd).normalized for cwd in (".", "+d", "+e", "src")}
    assert len(normalized) == 4


# --- command.py: working directories and normalized text ---------------------------------------------


@pytest.mark.parametrize("command", ["sed -n '0,5p' a.py", "sed -n '0p' a.py"])
def test_a_sed_range_from_line_zero_is_never_a_line_range(command):
    # sed refuses line 0 outside `0,/re/`: its output is an error, never lines of the file.
    result = c(command)
    assert isinstance(result.target, FileTarget) and result.target.view == "sed"


def test_a_sed_script_from_a_variable_is_run():
    # The script is known only when the shell runs: it may write. The command layer refuses
    # dynamic words before sed's parser sees them; the parser refuses them too.
    assert c('sed -n "${N}p" a.py').category is Category.RUN
    script = Word((("${N}p", False),), dynamic=True, source='"${N}p"')
    assert sed_effect([*_words("-n"), script, *_words("a.py")]).kind is Kind.RUN


def test_a_one_line_slice_of_a_range_keeps_its_line():
    # `sed -n '5,10p' a.py | head -n 1` prints line 5: a range of one line, not an empty one.
    assert c("sed -n '5,10p' a.py | head -n 1").target == FileTarget("a.py", LineRange(5, 5), "plain")


def test_a_tree_scope_is_a_directory_never_a_file_read_among_other_commands():
    # `cat +a.py && echo done` is no file target (two commands): its scope is the root, never
    # the file, even for a name that sorts before `.`.
    assert c("cat +a.py && echo done").target == TreeTarget(".")


def test_the_root_itself_is_never_a_file_target_and_an_odd_name_is_one():
    # `cat .` reads the root directory (an error), never a file; `+a.py` sorts before `.` but
    # is a file like any other.
    assert c("cat .").target == TreeTarget(".")
    assert c("cat +a.py").target == FileTarget("+a.py", WHOLE_FILE, "plain")


@pytest.mark.parametrize("command,category", [
    # A program fed a here-document runs it: never the neutral "reads only its text" of a filter.
    ("sh <<'EOF' && cat a.py\nrm -rf x\nEOF", Category.RUN),
    # echo ignores its input, but the shell fails before echo when a.py is missing.
    ("echo x < a.py; cat b.py", Category.RUN),
    ("pytest < a.py", Category.TEST),
    # An unquoted here-document runs its command substitutions.
    ("cat <<EOF && cat a.py\n$(touch x)\nEOF", Category.RUN),
    # The file read depends on a variable: unknown.
    ('cat < "$F"', Category.RUN),
])
def test_input_redirections_keep_what_the_command_does(command, category):
    assert c(command).category is category


def test_an_internal_error_is_unknown_never_raised():
    # A root that is no path makes the workspace fail inside the classifier: the command is
    # unknown, and the layer above goes on.
    assert classify("cat a.py", root=object()).category is Category.UNKNOWN  # type: ignore[arg-type]


@pytest.mark.parametrize("command", ["cd src | cat && cat a.py", "cd - && cat a.py", "cd && cat a.py",
                                     "cd src other && cat a.py"])
def test_a_cd_whose_directory_is_not_known_for_sure_is_run(command):
    # A cd inside a pipeline runs in a subshell; `cd -` and a bare `cd` go where the shell's
    # state says; `cd a b` fails. Following any of them would name the wrong file.
    assert c(command).category is Category.RUN


@pytest.mark.parametrize(
    "first,second",
    [("cat a.py | grep x | sort", "cat a.py | grep y | sort"),  # every filter of a pipeline counts
     ("cd src && grep -n x a.py", "grep -n x a.py"),  # the output shows the path as typed
     ("cd src && cat a.py b.py", "cat a.py b.py"),  # the directory decides which files are read
     # ... with the same tree target: one normalized text would serve src's files for lib's
     ("cd src && cat a.py b.py", "cd lib && cat a.py b.py"), ("cd src && grep -n x a.py", "cd lib && grep -n x a.py"),
     ("cat a.py || cat b.py", "cat a.py && cat b.py"),  # `||` prints b.py only when a.py fails
     ("cat 'a b.py'", "cat a b.py"),  # one file with a blank in its name, or two files
     ("ls && cat a.py b.py", "ls && cat c.py d.py"),  # no command is folded away but cd
     ("cd /tmp && cat a.py", "cat a.py")],  # a directory outside the root is not the root
)
def test_commands_that_print_different_things_normalize_differently(first, second):
    assert c(first).normalized != c(second).normalized
