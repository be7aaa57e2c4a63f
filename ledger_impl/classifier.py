"""Classify a shell command: normalized text, category, and for read-only commands the target.

Reuse withholds an execution, so this module errs one way only. A command is read-only when
every program in it is a tool from the tables below, invoked only with options they list, with
no redirection that writes, no substitution, variable or background job. Anything else is an
edit (the text shows what it writes), a test run, or a run (effects unknown). Parse failures
are `unknown`. Nothing here raises: an internal error also yields `unknown`.

`normalized` must make two commands equal only when they print the same bytes on exit 0 (the
spec serves a failed run only to the identical raw text). Three rules keep that true:

- words are rendered canonically (quotes, escapes and spacing do not matter), but an unquoted
  glob stays a glob, since the shell expands `*.py` and not `'*.py'`;
- a file path is replaced by its key only in the single-file forms whose output never contains
  the path (`cat`, `cat -n`, `nl -ba`, `head -n`, `tail -n`, `sed -n` without `F`, awk NR ranges)
  and only when, on disk, the file exists as a readable regular file: error messages quote
  the path as typed, and a pipeline can exit 0 after its first command failed;
- everything else keeps its spelling and gets the working directory prefixed (`cd src && `),
  because listings and searches print paths as typed, relative to where they ran.
"""

from __future__ import annotations

import glob
import os
import posixpath
import re
from dataclasses import dataclass, field, replace

from ledger_spec import (
    NL_NUMBERED,
    NUMBERED,
    PLAIN,
    WHOLE_FILE,
    Category,
    Command,
    FileTarget,
    LineRange,
    TreeTarget,
)

from . import shell
from .shell import Redirect, SimpleCommand, Word

# --- what one simple command does ---------------------------------------------------------

READS, FILTER, NEUTRAL, CD, EDIT, TEST, RUN = "reads", "filter", "neutral", "cd", "edit", "test", "run"


@dataclass
class Effect:
    """What one simple command does, as the classifier understands it.

    kind READS reads files or a tree; FILTER only transforms stdin; NEUTRAL prints its own
    arguments or the directory (echo, pwd); CD changes directory; EDIT/TEST/RUN as categories.
    """

    kind: str
    search: bool = False  # a listing or search rather than a read
    files: list[Word] = field(default_factory=list)  # file operands read
    trees: list[Word] = field(default_factory=list)  # directories read recursively or listed
    tree: bool = False  # output depends on more than the single file named
    view: str | None = None  # for a single-file read: the view
    lines: LineRange = WHOLE_FILE
    path_free: bool = False  # output never contains a path as typed
    stream_slice: tuple[int, int | None] | None = None  # for a FILTER: output lines a..b of stdin
    rewrite: dict[int, str] = field(default_factory=dict)  # word index -> canonical replacement
    repository: bool = False  # output depends on the git repository, which must lie in the root


def _run() -> Effect:
    return Effect(RUN)


class _Options:
    """A getopt-like scan of GNU-style options that permutes operands, as GNU tools do.

    `short` lists flags without an argument, `short_arg` flags that take one; `long`/`long_arg`
    likewise for long options (without the leading dashes). Any other option makes `ok` False.
    """

    def __init__(
        self,
        args: list[Word],
        short: str = "",
        short_arg: str = "",
        long: frozenset[str] = frozenset(),
        long_arg: frozenset[str] = frozenset(),
        numeric: bool = False,
    ) -> None:
        self.flags: list[tuple[str, str | None]] = []
        self.operands: list[tuple[int, Word]] = []
        self.ok = True
        i = 0
        only_operands = False
        while i < len(args):
            word = args[i]
            text = word.text
            if only_operands or not text.startswith("-") or text == "-":
                self.operands.append((i, word))
                i += 1
                continue
            if text == "--":
                only_operands = True
                i += 1
                continue
            if text.startswith("--"):
                name, eq, value = text[2:].partition("=")
                if name in long_arg:
                    if not eq:
                        if i + 1 >= len(args):
                            self.ok = False
                            return
                        value = args[i + 1].text
                        i += 1
                    self.flags.append((name, value))
                elif name in long and not eq:
                    self.flags.append((name, None))
                else:
                    self.ok = False
                    return
                i += 1
                continue
            body = text[1:]
            if numeric and body.isdigit():
                self.flags.append(("#", body))
                i += 1
                continue
            j = 0
            while j < len(body):
                c = body[j]
                if c in short_arg:
                    value = body[j + 1 :]
                    if not value:
                        if i + 1 >= len(args):
                            self.ok = False
                            return
                        value = args[i + 1].text
                        i += 1
                    self.flags.append((c, value))
                    break
                if c in short:
                    self.flags.append((c, None))
                    j += 1
                    continue
                if numeric and c.isdigit():
                    k = j
                    while k < len(body) and body[k].isdigit():
                        k += 1
                    self.flags.append(("#", body[j:k]))
                    j = k
                    continue
                self.ok = False
                return
            i += 1

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.flags)

    def values(self, *names: str) -> list[str]:
        return [value for name, value in self.flags if name in names and value is not None]


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


# cat ------------------------------------------------------------------------------------


def _cat(args: list[Word]) -> Effect:
    o = _Options(
        args,
        short="nbsvETAeu",
        long=frozenset(
            {"number", "number-nonblank", "squeeze-blank", "show-all", "show-ends", "show-tabs", "show-nonprinting"}
        ),
    )
    if not o.ok:
        return _run()
    flags = sorted({"n" if name == "number" else name for name, _ in o.flags if name != "u"})
    view = PLAIN if not flags else NUMBERED if flags == ["n"] else "cat-" + "".join(flags)
    return _reader(o, view, WHOLE_FILE, path_free=True)


def _reader(o: _Options, view: str, lines: LineRange, path_free: bool, search: bool = False) -> Effect:
    """Effect of a tool that reads its operands, or stdin when it has none."""
    operands = [w for _, w in o.operands]
    if not operands or operands == [Word((("-", False),))]:
        return Effect(FILTER, view=view, lines=lines, search=search)
    if len(operands) == 1 and not operands[0].has_glob:
        return Effect(READS, files=operands, view=view, lines=lines, path_free=path_free, search=search,
                      rewrite={o.operands[0][0]: ""})
    return Effect(READS, files=operands, tree=True, search=search)


# head / tail ------------------------------------------------------------------------------

_COUNT = re.compile(r"^-?\d+$")


def _head(args: list[Word]) -> Effect:
    o = _Options(args, short="qvz", short_arg="nc", long=frozenset({"quiet", "silent", "verbose", "zero-terminated"}),
                 long_arg=frozenset({"lines", "bytes"}), numeric=True)
    if not o.ok:
        return _run()
    count = (o.values("n", "lines", "#") or ["10"])[-1]
    if o.has("c", "bytes") or o.has("z", "zero-terminated") or not _COUNT.match(count):
        view, lines = "head:" + " ".join(f"{n}={v}" for n, v in o.flags), WHOLE_FILE
    elif count.startswith("-"):
        view, lines = f"head-all-but-{count[1:]}", WHOLE_FILE
    else:
        n = int(count)
        view, lines = PLAIN, LineRange(1, n) if n >= 1 else LineRange(1, 0)
    effect = _reader(o, view, lines, path_free=not o.has("v", "verbose"))
    if effect.kind == FILTER and view == PLAIN:
        effect.stream_slice = (1, lines.end)
    return effect


def _tail(args: list[Word]) -> Effect:
    o = _Options(args, short="qvz", short_arg="nc", long=frozenset({"quiet", "silent", "verbose", "zero-terminated"}),
                 long_arg=frozenset({"lines", "bytes"}), numeric=True)
    if not o.ok:
        return _run()  # includes -f/--follow, which never ends
    count = (o.values("n", "lines", "#") or ["10"])[-1]
    if o.has("c", "bytes") or o.has("z", "zero-terminated"):
        view, lines = "tail:" + " ".join(f"{n}={v}" for n, v in o.flags), WHOLE_FILE
    elif count.startswith("+") and count[1:].isdigit():
        view, lines = PLAIN, LineRange(max(1, int(count[1:])), None)
    elif count.lstrip("-").isdigit():
        view, lines = f"tail-{count.lstrip('-')}", WHOLE_FILE
    else:
        return _run()
    effect = _reader(o, view, lines, path_free=not o.has("v", "verbose"))
    if effect.kind == FILTER and view == PLAIN:
        effect.stream_slice = (lines.start, None)
    return effect


# sed -------------------------------------------------------------------------------------

_SED_SIMPLE = frozenset("=dDgGhHlnNpPxz{}")
_SED_RANGE = re.compile(r"^\s*(\d+)\s*(?:,\s*(\d+|\$|\+\d+)\s*)?p\s*;?\s*$")


def sed_script_is_safe(script: str) -> bool:
    """Whether a sed script only prints: no w/W/e/r/R/F commands, no s///w or s///e.

    Scans the script the way GNU sed reads it (addresses, commands, s and y with their
    delimiters and escapes, a/i/c text up to the end of the line). Anything it does not
    recognise makes the script unsafe.
    """
    i, n = 0, len(script)

    def skip_delimited(pos: int, delim: str) -> int:
        """Index just past the next unescaped `delim` at or after `pos`, or -1."""
        while pos < n:
            c = script[pos]
            if c == "\\":
                pos += 2
                continue
            if c == delim:
                return pos + 1
            if c == "\n" and delim != "\n":
                return -1
            pos += 1
        return -1

    def skip_address(pos: int) -> int:
        if pos < n and script[pos].isdigit():
            while pos < n and (script[pos].isdigit() or script[pos] == "~"):
                pos += 1
            return pos
        if pos < n and script[pos] == "$":
            return pos + 1
        if pos < n and script[pos] in "/\\":
            if script[pos] == "\\":
                if pos + 1 >= n:
                    return -1
                delim, pos = script[pos + 1], pos + 2
            else:
                delim, pos = "/", pos + 1
            pos = skip_delimited(pos, delim)
            while pos != -1 and pos < n and script[pos] in "IM":
                pos += 1
            return pos
        return pos

    while i < n:
        c = script[i]
        if c in " \t\n;":
            i += 1
            continue
        start = i
        i = skip_address(i)
        if i == -1:
            return False
        if i != start and i < n and script[i] == ",":
            i += 1
            if i < n and script[i] in "+~":
                i += 1
                while i < n and script[i].isdigit():
                    i += 1
            else:
                i = skip_address(i)
                if i == -1:
                    return False
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return i == start  # an address without a command
        c = script[i]
        i += 1
        if c in _SED_SIMPLE:
            continue
        if c in "qQlL":
            while i < n and (script[i].isdigit() or script[i] in " \t"):
                i += 1
            continue
        if c in ":btT":
            while i < n and script[i] not in ";\n":
                i += 1
            continue
        if c in "aic":
            # Text to the end of the line; a trailing backslash continues it.
            while i < n and script[i] != "\n":
                if script[i] == "\\":
                    i += 1
                i += 1
            continue
        if c == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        if c in "sy":
            if i >= n or script[i] in "\n\\":
                return False
            delim = script[i]
            i = skip_delimited(i + 1, delim)
            if i == -1:
                return False
            i = skip_delimited(i, delim)
            if i == -1:
                return False
            if c == "s":
                while i < n and script[i] not in ";\n}":
                    if script[i] not in "gpiImM0123456789 \t":
                        return False  # w and e write and execute; anything else is unknown
                    i += 1
            continue
        return False  # e, w, W, r, R, F, v and anything unrecognised
    return True


def _sed(args: list[Word]) -> Effect:
    o = _Options(
        args,
        short="nErsuzi",
        short_arg="efl",
        long=frozenset({"quiet", "silent", "regexp-extended", "separate", "unbuffered", "null-data", "posix",
                        "in-place"}),
        long_arg=frozenset({"expression", "file", "line-length"}),
    )
    if not o.ok:
        # -i with a suffix (-i.bak) or --in-place=SUF lands here; it still edits in place.
        if any(w.text.startswith(("-i", "--in-place")) for w in args):
            return Effect(EDIT)
        return _run()
    if o.has("i", "in-place"):
        return Effect(EDIT)
    if o.has("f", "file"):
        return _run()  # the script lives in another file
    scripts = o.values("e", "expression")
    operands = o.operands
    if not scripts:
        if not operands:
            return _run()
        scripts = [operands[0][1].text]
        if not operands[0][1].static:
            return _run()
        operands = operands[1:]
    script = "\n".join(scripts)
    if not sed_script_is_safe(script):
        return _run()  # may write (w, s///w) or execute (e, s///e)
    quiet = o.has("n", "quiet", "silent")
    view, lines = "sed", WHOLE_FILE
    match = _SED_RANGE.match(script) if quiet and len(scripts) == 1 and not o.has("z", "null-data") else None
    stream_slice = None
    if match:
        first = int(match.group(1))
        last = match.group(2)
        if first >= 1:
            view = PLAIN
            if last is None:
                lines = LineRange(first, first)
            elif last == "$":
                lines = LineRange(first, None)
            elif last.startswith("+"):
                lines = LineRange(first, first + int(last[1:]))
            else:
                lines = LineRange.from_sed(first, int(last))
            stream_slice = (lines.start, lines.end)
    inner = _Options([], "")
    inner.operands = operands
    effect = _reader(inner, view, lines, path_free=True)
    if effect.kind == FILTER:
        effect.stream_slice = stream_slice
    return effect


# awk -------------------------------------------------------------------------------------

_AWK_NR = re.compile(
    r"^\s*NR\s*(>=|>|==)\s*(\d+)\s*(?:&&\s*NR\s*(<=|<)\s*(\d+)\s*)?(?:\{\s*print(?:\s+\$0)?\s*;?\s*\})?\s*$"
)
# `@` also covers gawk's indirect calls (`f = "sys" "tem"; @f("...")`).
# ARGV/ARGC can name another file to read; systime/strftime/rand print the clock or chance.
_AWK_UNSAFE = re.compile(r"system|getline|\||@|close\s*\(|ARGV|ARGC|systime|strftime|srand|rand")
_AWK_PRINT = re.compile(r"\b(print|printf)\b([^;}\n]*)")
_AWK_PATHS = re.compile(r"FILENAME|ARGV|ENVIRON|PROCINFO")


def awk_program_is_safe(program: str) -> bool:
    """Whether an awk program only prints to stdout: no system(), pipes, getline or `print >`."""
    program = program.replace("\\\n", " ")  # a line continuation would hide `> "file"`
    if _AWK_UNSAFE.search(program.replace("||", "  ")):
        return False
    for match in _AWK_PRINT.finditer(program):
        if ">" in match.group(2):
            return False  # print > "file" and print >> "file" write; a comparison is refused too
    return True


def _awk_range(program: str) -> LineRange | None:
    match = _AWK_NR.match(program)
    if not match:
        return None
    op, a, op2, b = match.groups()
    a = int(a)
    first = a + 1 if op == ">" else a
    if op == "==":
        if op2:
            return None
        return LineRange(max(a, 1), a) if a >= 1 else LineRange(1, 0)
    if op2 is None:
        return LineRange(max(first, 1), None)
    last = int(b) - (1 if op2 == "<" else 0)
    first = max(first, 1)
    return LineRange(first, max(last, first - 1))


def _awk(args: list[Word]) -> Effect:
    o = _Options(args, short_arg="Fv", long_arg=frozenset({"field-separator", "assign"}))
    if not o.ok or not o.operands:
        return _run()
    program_word = o.operands[0][1]
    if not program_word.static:
        return _run()
    program = program_word.text
    if not awk_program_is_safe(program):
        return _run()
    operands = o.operands[1:]
    if any("=" in w.text for _, w in operands):
        return _run()  # awk treats var=value operands as assignments
    lines = _awk_range(program) if not o.flags else None
    # awk ends every record it prints with a newline, even where the file has none, so its
    # output is not the PLAIN view; it gets a view of its own, served only to itself.
    view = "awk-lines" if lines is not None else "awk"
    inner = _Options([], "")
    inner.operands = operands
    path_free = not _AWK_PATHS.search(program)
    return _reader(inner, view, lines or WHOLE_FILE, path_free=path_free)


# nl, wc ----------------------------------------------------------------------------------


def _nl(args: list[Word]) -> Effect:
    o = _Options(args, short_arg="b", long_arg=frozenset({"body-numbering"}))
    if not o.ok:
        return _run()
    styles = o.values("b", "body-numbering")
    if styles and styles[-1] != "a":
        return _run()
    view = NL_NUMBERED if styles else "nl"
    return _reader(o, view, WHOLE_FILE, path_free=True)


def _wc(args: list[Word]) -> Effect:
    o = _Options(args, short="lwcmL", long=frozenset({"lines", "words", "bytes", "chars", "max-line-length"}))
    if not o.ok:
        return _run()
    view = "wc-" + "".join(sorted({name[0] for name, _ in o.flags}))
    return _reader(o, view, WHOLE_FILE, path_free=False)


# grep / rg -------------------------------------------------------------------------------

_GREP_LONG = frozenset(
    {
        "recursive", "dereference-recursive", "line-number", "ignore-case", "no-ignore-case", "files-with-matches",
        "files-without-match", "count", "word-regexp", "line-regexp", "invert-match", "with-filename",
        "no-filename", "only-matching", "quiet", "silent", "no-messages", "extended-regexp", "fixed-strings",
        "basic-regexp", "perl-regexp", "byte-offset", "initial-tab", "null", "null-data", "text", "binary",
        "no-group-separator",
    }
)
_GREP_LONG_ARG = frozenset(
    {
        "regexp", "include", "exclude", "exclude-dir", "max-count", "context", "after-context", "before-context",
        "color", "colour", "binary-files", "directories", "devices", "label", "group-separator",
    }
)


def _grep(args: list[Word]) -> Effect:
    o = _Options(args, short="rRnilLcwxvhHoqsEFGPbTZzaIUu", short_arg="eABCmdD",
                 long=_GREP_LONG, long_arg=_GREP_LONG_ARG, numeric=True)
    if not o.ok:
        return _run()  # includes -f/--file and --exclude-from, which read other files
    for value in o.values("color", "colour"):
        if value not in ("never", "auto"):
            return _run()  # forced colour is not what the agent would see anyway
    operands = o.operands
    if not o.has("e", "regexp"):
        if not operands:
            return _run()
        operands = operands[1:]
    if o.has("R", "dereference-recursive"):
        return _run()  # follows symbolic links, possibly out of the root, where no detector looks
    recursive = o.has("r", "recursive") or "recurse" in o.values("d", "directories")
    if recursive:
        trees = [w for _, w in operands] or [Word((("."
                                                    , False),))]
        return Effect(READS, search=True, trees=trees, tree=True)
    inner = _Options([], "")
    inner.operands = operands
    effect = _reader(inner, "grep", WHOLE_FILE, path_free=False, search=True)
    return effect


def _rg(args: list[Word]) -> Effect:
    o = _Options(args, short="nNilcwvoqsSFuUH", short_arg="eABCmtTg",  # not -L: follows links
                 long=frozenset({"line-number", "no-line-number", "ignore-case", "smart-case", "files-with-matches",
                                 "count", "word-regexp", "invert-match", "only-matching", "fixed-strings", "hidden",
                                 "no-ignore", "no-heading", "heading", "with-filename", "no-filename", "files"}),
                 long_arg=frozenset({"regexp", "type", "type-not", "glob", "iglob", "max-count", "context",
                                     "after-context", "before-context", "color"}))
    if not o.ok or any(v != "never" for v in o.values("color")):
        return _run()
    operands = [w for _, w in o.operands]
    if not (o.has("e", "regexp") or o.has("files")):
        if not operands:
            return _run()
        operands = operands[1:]
    return Effect(READS, search=True, trees=operands or [Word(((".", False),))], tree=True)


# find / ls / tree-wide tools ----------------------------------------------------------------

_FIND_NO_ARG = frozenset(
    "-print -print0 -prune -o -or -a -and -not ! ( ) -empty -true -false -quit -depth -xdev -mount -noleaf "
    "-readable -writable -executable -nouser -nogroup -daystart -ls".split()
)
_FIND_ONE_ARG = frozenset(
    "-name -iname -path -ipath -wholename -iwholename -type -xtype -maxdepth -mindepth -size -mtime -mmin "
    "-ctime -cmin -regex -iregex -regextype -perm -user -group -uid -gid -links -inum -lname -ilname "
    "-printf".split()
)
_FIND_FILE_ARG = frozenset({"-newer", "-samefile", "-cnewer"})
_FIND_AGE_TESTS = frozenset({"-mmin", "-mtime", "-cmin", "-ctime"})
_FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})


def _find(args: list[Word]) -> Effect:
    i = 0
    while i < len(args) and args[i].text in ("-L", "-H", "-P"):
        if args[i].text == "-L":
            return _run()  # follows symbolic links, possibly out of the root
        i += 1
    trees: list[Word] = []
    while i < len(args) and not args[i].text.startswith("-") and args[i].text not in ("(", "!", ")"):
        trees.append(args[i])
        i += 1
    files: list[Word] = []
    while i < len(args):
        token = args[i].text
        if token in _FIND_WRITES:
            return Effect(EDIT)
        if token in _FIND_NO_ARG:
            i += 1
        elif token in _FIND_ONE_ARG and i + 1 < len(args):
            if token == "-printf" and ("%A" in args[i + 1].text or "%a" in args[i + 1].text):
                return _run()  # access times change whenever anything reads a file
            if token in _FIND_AGE_TESTS:
                return _run()  # "changed in the last 5 minutes" changes answer as time passes
            i += 2
        elif token in _FIND_FILE_ARG and i + 1 < len(args):
            files.append(args[i + 1])
            i += 2
        else:
            return _run()  # -exec, -execdir, -ok, access-time tests, anything unknown
    return Effect(READS, search=True, trees=trees or [Word(((".", False),))], files=files, tree=True)


_LS_SHORT = "aAbBcCdfFgGhHiklmnNopqQrRsStvxXZ1"  # not -L: it follows every symbolic link
_LS_LONG = frozenset(
    {"all", "almost-all", "escape", "directory", "classify", "no-group", "human-readable", "si", "inode",
     "numeric-uid-gid", "literal", "hide-control-chars", "quote-name", "recursive", "reverse",
     "size", "group-directories-first", "full-time", "context"}
)
_LS_LONG_ARG = frozenset({"color", "sort", "time-style", "format", "indicator-style", "ignore", "hide", "width",
                          "block-size", "quoting-style"})


# Flags under which `ls` prints names only (and sorts by name), so a `..` entry is just "..".
_LS_NAMES_ONLY = frozenset("aAfdC1xmFpQbBNqrRvH") | frozenset(
    {"all", "almost-all", "classify", "quote-name", "escape", "literal", "hide-control-chars", "recursive",
     "reverse", "directory", "color", "indicator-style", "quoting-style", "ignore", "hide",
     "width", "group-directories-first"}
)


def _ls(args: list[Word]) -> Effect:
    o = _Options(args, short=_LS_SHORT, short_arg="wIT", long=_LS_LONG, long_arg=_LS_LONG_ARG)
    if not o.ok:
        return _run()  # includes -u and --time=atime: access times change on every read
    if any(v not in ("never", "auto") for v in o.values("color")):
        return _run()
    trees = [w for _, w in o.operands] or [Word(((".", False),))]
    shows_parent = o.has("a", "f", "all") and not o.has("d", "directory")
    if shows_parent and any(name not in _LS_NAMES_ONLY for name, _ in o.flags):
        # The `..` line describes each listed directory's parent, which for the root lies
        # outside the workspace, where no detector looks: read it as an operand too.
        trees += [replace(w, segments=w.segments + (("/..", False),)) for w in list(trees)]
    return Effect(READS, search=True, trees=trees, tree=True)


def _diff(args: list[Word]) -> Effect:
    # Not -r: a recursive diff follows symbolic links, possibly out of the root.
    o = _Options(args, short="uqNbBwiyctsaTp", short_arg="UCxX",
                 long=frozenset({"brief", "new-file", "unified", "ignore-all-space", "text",
                                 "ignore-space-change", "ignore-blank-lines", "report-identical-files"}),
                 long_arg=frozenset({"color", "exclude"}), numeric=False)
    if not o.ok or len(o.operands) != 2 or any(v != "never" for v in o.values("color")):
        return _run()
    return Effect(READS, trees=[w for _, w in o.operands], tree=True)


def _sort(args: list[Word]) -> Effect:
    o = _Options(args, short="bdfgiMhnrsuVcCz", short_arg="ktS",  # not -R: random order
                 long=frozenset({"reverse", "unique", "numeric-sort", "version-sort", "human-numeric-sort",
                                 "ignore-case", "stable", "general-numeric-sort"}),
                 long_arg=frozenset({"key", "field-separator", "buffer-size"}))
    if not o.ok:
        return _run()  # -o/--output writes, -T/--compress-program/--files0-from are refused too
    return _stream_tool(o)


def _stream_tool(o: _Options) -> Effect:
    if not o.operands:
        return Effect(FILTER)
    return Effect(READS, files=[w for _, w in o.operands], tree=True)


def _uniq(args: list[Word]) -> Effect:
    o = _Options(args, short="cdDiuz", short_arg="fsw", long=frozenset({"count", "repeated", "unique", "ignore-case"}))
    if not o.ok:
        return _run()
    if len(o.operands) >= 2:
        return Effect(EDIT)  # uniq INPUT OUTPUT writes OUTPUT
    return _stream_tool(o)


def _cut(args: list[Word]) -> Effect:
    o = _Options(args, short="sz", short_arg="bcdf", long=frozenset({"complement", "only-delimited"}),
                 long_arg=frozenset({"delimiter", "fields", "characters", "bytes"}))
    return _stream_tool(o) if o.ok else _run()


def _tr(args: list[Word]) -> Effect:
    o = _Options(args, short="cCdst")
    return Effect(FILTER) if o.ok else _run()  # tr only reads stdin; its operands are sets


def _simple_filter(args: list[Word]) -> Effect:
    o = _Options(args)
    return _stream_tool(o) if o.ok else _run()


# git --------------------------------------------------------------------------------------

_GIT_READS = frozenset({"status", "diff", "log", "show", "blame", "ls-files", "rev-parse", "shortlog", "describe"})
_GIT_EDITS = frozenset({"apply", "checkout", "restore", "stash", "reset", "add", "commit", "mv", "rm", "clean",
                        "cherry-pick", "revert", "merge", "rebase", "am", "switch", "pull", "init", "clone",
                        "tag", "branch", "worktree"})


# Output that moves with the clock: relative or human dates, and limits such as "yesterday".
_GIT_CLOCK_OPTIONS = ("--relative-date", "--date=relative", "--date=human", "--since", "--until", "--after",
                      "--before", "--max-age", "--min-age")
_GIT_CLOCK_PLACEHOLDERS = re.compile(r"%[ac][rh]")  # %ar %cr (relative), %ah %ch (human)


def _git_reads_the_clock(text: str, previous: str) -> bool:
    """Whether an argument makes git's output move with the clock. `previous` is the argument
    before it, for options given as two words (`--date relative`)."""
    if text.startswith(_GIT_CLOCK_OPTIONS) or _GIT_CLOCK_PLACEHOLDERS.search(text) or "@{" in text:
        return True  # `HEAD@{5 minutes ago}` picks a commit by time
    if text.startswith("--date=") or previous == "--date":
        return any(word in text for word in ("relative", "human"))
    return False


def _git(args: list[Word]) -> Effect:
    i = 0
    while i < len(args) and args[i].text in ("--no-pager",):
        i += 1
    if i >= len(args):
        return _run()
    sub = args[i].text
    rest = args[i + 1 :]
    if sub in _GIT_READS:
        previous = ""
        for word in rest:
            text = word.text
            # --output writes a file; external diff and textconv drivers run programs;
            # --no-index compares arbitrary paths outside the repository.
            if text.startswith(("--output", "--ext-diff", "--textconv", "--no-index", "-O", "--open-files")):
                return _run()
            if text.startswith("-o") and sub in ("diff", "log", "show"):
                return _run()
            if _git_reads_the_clock(text, previous):
                return _run()
            if not text.startswith("-") and (text.startswith("/") or ".." in text.split("/")):
                return _run()  # a path outside the root: git falls back to --no-index
            previous = text
        return Effect(READS, search=True, trees=[Word(((".", False),))], tree=True, repository=True)
    if sub in ("branch",) and all(w.text in ("-a", "-l", "--list", "-v", "-vv", "-r", "--all", "--show-current")
                                  for w in rest):
        return Effect(READS, search=True, trees=[Word(((".", False),))], tree=True, repository=True)
    if sub == "stash" and rest and rest[0].text in ("list", "show"):
        return Effect(READS, search=True, trees=[Word(((".", False),))], tree=True, repository=True)
    if sub in _GIT_EDITS:
        return Effect(EDIT)
    return _run()


# everything else --------------------------------------------------------------------------

EDIT_COMMANDS = frozenset(
    {"mv", "cp", "rm", "rmdir", "touch", "mkdir", "ln", "chmod", "chown", "chgrp", "truncate", "install",
     "patch", "tee", "dd", "unlink", "shred"}
)
NEUTRAL_COMMANDS = frozenset({"echo", "printf", "pwd", "true", ":"})
INTERPRETERS = re.compile(r"^(python[\d.]*|pypy[\d.]*)$")
TEST_RUNNERS = frozenset({"pytest", "py.test", "tox", "nox", "nosetests"})
TEST_MODULES = frozenset({"pytest", "unittest", "tox", "nose", "nox", "django"})
TEST_SCRIPTS = re.compile(r"(^|/)(runtests\.py|run_tests\.py|bin/test|manage\.py)$")

TOOLS = {
    "cat": _cat, "head": _head, "tail": _tail, "sed": _sed, "awk": _awk, "gawk": _awk, "mawk": _awk,
    "nl": _nl, "wc": _wc, "grep": _grep, "egrep": _grep, "fgrep": _grep, "rg": _rg, "find": _find, "ls": _ls,
    "diff": _diff, "sort": _sort, "uniq": _uniq, "cut": _cut, "tr": _tr, "tac": _simple_filter,
    "git": _git,
}


def _is_test(name: str, args: list[Word]) -> bool:
    base = posixpath.basename(name)
    if base in TEST_RUNNERS:
        return True
    texts = [w.text for w in args]
    if INTERPRETERS.match(base):
        if len(texts) >= 2 and texts[0] == "-m" and texts[1] in TEST_MODULES:
            return texts[1] != "django" or "test" in texts[2:3]
        if texts and TEST_SCRIPTS.search(texts[0]):
            return not texts[0].endswith("manage.py") or "test" in texts[1:2]
        return False
    return bool(TEST_SCRIPTS.search(name)) and not name.endswith("manage.py")


def effect_of(command: SimpleCommand) -> Effect:
    """What one simple command does, ignoring its redirections."""
    if command.compound is not None or command.assignments:
        return _run()
    if not command.words:
        return Effect(NEUTRAL)  # only redirections, judged by the caller
    if any(w.executes or w.dynamic for w in command.words):
        return _run()
    name = command.name
    if name is None or command.words[0].has_glob:
        return _run()
    args = command.args
    if name == "cd":
        return Effect(CD, files=args)
    if name == "timeout":
        # `timeout [options] DURATION COMMAND...`: a test run under a time limit is still a test.
        rest = [w.text for w in args]
        while rest and rest[0].startswith("-"):
            rest = rest[2:] if rest[0] in ("-s", "-k", "--signal", "--kill-after") else rest[1:]
        if len(rest) >= 2 and _is_test(rest[1], args[len(args) - len(rest) + 2 :]):
            return Effect(TEST)
        return _run()
    if name in NEUTRAL_COMMANDS:
        return Effect(NEUTRAL)
    if _is_test(name, args):
        return Effect(TEST)
    if name in TOOLS:
        return TOOLS[name](args)
    if name in EDIT_COMMANDS:
        return Effect(EDIT)
    if name == "perl" and any(w.text.startswith("-i") or (w.text.startswith("-") and "i" in w.text[1:2])
                              for w in args):
        return Effect(EDIT)
    return _run()


# --- paths ---------------------------------------------------------------------------------


class _Workspace:
    """Maps words to keys: inside the root, resolving `.`, `..` and (on disk) symbolic links."""

    def __init__(self, root: str | os.PathLike[str] | None) -> None:
        self.root: str | None = None
        self.real_root: str | None = None
        if root is not None:
            self.root = os.path.normpath(os.path.abspath(os.fspath(root)))
            if os.path.isdir(self.root):
                self.real_root = os.path.realpath(self.root)

    def cd(self, cwd: str | None, word: Word) -> str | None:
        """The logical working directory after `cd word`, as a key ('.' for root), or None if outside."""
        if cwd is None or not word.static or not word.text:
            return None
        text = word.text
        if text.startswith("/"):
            if self.root is None:
                return None
            rel = posixpath.normpath(text)
            if rel != self.root and not rel.startswith(self.root.rstrip("/") + "/"):
                return None
            text, base = posixpath.relpath(rel, self.root), "."
        else:
            base = cwd
        joined = posixpath.normpath(posixpath.join(base, text))
        if joined == ".." or joined.startswith("../"):
            return None
        return joined

    def holds_repository(self) -> bool:
        """On disk: whether the root holds its git repository. Lexically: assumed."""
        if self.real_root is None:
            return True
        return os.path.lexists(os.path.join(self.real_root, ".git"))

    def _inside(self, real: str) -> bool:
        assert self.real_root is not None
        return real == self.real_root or real.startswith(self.real_root.rstrip("/") + "/")

    def key(self, cwd: str | None, word: Word) -> str | None:
        """The key a path operand names, '.' for the root itself, None if outside or unknowable."""
        if cwd is None or word.dynamic or word.executes or not word.text:
            return None
        text = word.text
        if word.has_glob and self.real_root is not None:
            # On disk, every match must resolve inside the root: `cat l*/data` can reach
            # through a symbolic link to a directory outside it.
            assert self.root is not None
            pattern = os.path.join(self.root, cwd, text)
            if any(not self._inside(os.path.realpath(match)) for match in glob.glob(pattern)):
                return None
        if word.has_glob:
            # A pattern is checked through its literal prefix; a component that starts with a dot
            # and holds a glob could match `..` and reach outside.
            for component in text.split("/"):
                if component.startswith(".") and any(g in component for g in shell.GLOB_CHARS):
                    return None
            prefix = text.split("/")
            literal = []
            for component in prefix:
                if any(g in component for g in shell.GLOB_CHARS):
                    break
                literal.append(component)
            rest = prefix[len(literal):]
            if ".." in rest:
                return None
            text = "/".join(literal) or ("/" if text.startswith("/") else ".")
        if self.real_root is not None:
            assert self.root is not None
            real = os.path.realpath(os.path.join(self.root, cwd, text))
            if real != self.real_root and not real.startswith(self.real_root.rstrip("/") + "/"):
                return None
            rel = os.path.relpath(real, self.real_root)
            return rel.replace(os.sep, "/")
        if text.startswith("/"):
            if self.root is None:
                return None
            norm = posixpath.normpath(text)
            if norm != self.root and not norm.startswith(self.root.rstrip("/") + "/"):
                return None
            return posixpath.relpath(norm, self.root)
        joined = posixpath.normpath(posixpath.join(cwd, text))
        if joined == ".." or joined.startswith("../"):
            return None
        return joined

    def readable_file(self, cwd: str, word: Word) -> bool:
        """On disk: whether the operand is a readable regular file now. Lexically: assumed."""
        if self.real_root is None:
            return True
        assert self.root is not None
        path = os.path.join(self.root, cwd, word.text)
        return os.path.isfile(path) and os.access(path, os.R_OK)


# --- the whole command ---------------------------------------------------------------------

_PRIORITY = [Category.TEST, Category.RUN, Category.EDIT]


def _unknown(text: str) -> Command:
    return Command(text=text, normalized=text, category=Category.UNKNOWN)


def classify(command: str, cwd: str = ".", root: str | os.PathLike[str] | None = None) -> Command:
    """Classify `command`, run in `cwd` (relative to `root`), into a spec `Command`.

    Never raises: unparsable, unsupported or malformed input is `Category.UNKNOWN`.
    """
    if not isinstance(command, str):
        try:
            command = os.fsdecode(command)  # type: ignore[arg-type]
        except Exception:
            command = repr(command)
    try:
        return _classify(command, cwd, root)
    except shell.ShellSyntaxError:
        return _unknown(command)
    except Exception:  # noqa: BLE001 - the layer must never crash on an agent's command
        return _unknown(command)


def _effective_redirect_kind(effect: Effect, redirects: list[Redirect]) -> Effect:
    if any(r.dynamic or (r.target is not None and (r.target.executes or r.target.dynamic)) for r in redirects):
        return _run()
    if any(r.writes_file for r in redirects):
        return effect if effect.kind in (TEST, RUN) else Effect(EDIT)
    if effect.kind in (READS, FILTER) and any(r.moves_stdout for r in redirects):
        return _run()  # `cat f > /dev/null` prints nothing: that is not f's content
    inputs = [r.reads_file for r in redirects if r.reads_file is not None]
    if inputs:
        if effect.kind not in (FILTER, READS):
            return effect if effect.kind in (TEST, RUN, EDIT) else _run()
        return Effect(READS, search=effect.search, files=effect.files + inputs, trees=effect.trees, tree=True)
    if any(r.op in ("<<", "<<-", "<<<") for r in redirects) and effect.kind == FILTER:
        return Effect(NEUTRAL)  # reads only its here-document, which is part of the text
    return effect


def _classify(text: str, cwd: str, root: str | os.PathLike[str] | None) -> Command:
    script = shell.parse(text)
    commands = script.commands()
    if not commands:
        return _unknown(text)
    workspace = _Workspace(root)
    start_cwd: str | None = workspace.cd(".", Word(((cwd, False),))) if cwd not in ("", ".") else "."

    effects = [_effective_redirect_kind(effect_of(c), c.redirects) for c in commands]
    kinds = {e.kind for e in effects}
    background = any(s.background for s in script.statements)
    for category, kind in zip(_PRIORITY, (TEST, RUN, EDIT)):
        if kind in kinds:
            return Command(text=text, normalized=_canonical(script, start_cwd), category=category)
    if background or READS not in kinds:
        # Nothing read, or a job left running: nothing worth serving again.
        return Command(text=text, normalized=_canonical(script, start_cwd), category=Category.RUN)

    # Every command is read-only. Walk the lists to learn each command's working directory;
    # a `cd` is followed only when `&&` guards what comes after it.
    category = Category.SEARCH if any(e.search for e in effects) else Category.READ
    cwds: list[str | None] = []
    position = 0
    cwd_now = start_cwd
    only_and = len(script.statements) == 1 and all(op == "&&" for op in script.statements[0].connectors)
    for s_index, statement in enumerate(script.statements):
        for p_index, pipeline in enumerate(statement.pipelines):
            for command in pipeline.commands:
                effect = effects[position]
                cwds.append(cwd_now)
                if effect.kind == CD:
                    guarded = p_index + 1 < len(statement.pipelines) and statement.connectors[p_index] == "&&"
                    last = s_index == len(script.statements) - 1 and p_index == len(statement.pipelines) - 1
                    if len(pipeline.commands) != 1 or not (guarded or last):
                        return Command(text=text, normalized=_canonical(script, start_cwd), category=Category.RUN)
                    if len(effect.files) != 1 or effect.files[0].text in ("-", "-P", "-L", "-e", "-@"):
                        return Command(text=text, normalized=_canonical(script, start_cwd), category=Category.RUN)
                    cwd_now = workspace.cd(cwd_now, effect.files[0])
                position += 1

    inside = True
    for effect, cwd_here in zip(effects, cwds):
        for word in effect.files + effect.trees:
            if workspace.key(cwd_here, word) is None:
                inside = False
        if effect.kind in (READS, FILTER, NEUTRAL) and cwd_here is None:
            inside = False
        if effect.kind == READS and not effect.files and not effect.trees and cwd_here is None:
            inside = False
        if effect.repository and not workspace.holds_repository():
            inside = False  # a .git above the root changes where no detector looks

    for command, cwd_here in zip(commands, cwds):
        for word in command.words:
            # The shell expands a glob against the directory; it must stay inside the root.
            if word.has_glob and workspace.key(cwd_here, word) is None:
                inside = False

    single = _single_file(script, effects, cwds, workspace) if only_and and inside else None
    if single is not None:
        return Command(text=text, normalized=single[0], category=category, target=single[1])
    normalized = _canonical(script, start_cwd, cwds if only_and else None)
    if not inside:
        return Command(text=text, normalized=normalized, category=category)
    scope = "."
    reading = [(e, c) for e, c in zip(effects, cwds) if e.kind == READS]
    if len(reading) == 1:
        effect, cwd_here = reading[0]
        words = effect.trees + effect.files
        if len(words) == 1 and not words[0].has_glob:
            key = workspace.key(cwd_here, words[0])
            if key is not None and (effect.trees or key == "."):
                scope = key
    return Command(text=text, normalized=normalized, category=category, target=TreeTarget(scope))


def _single_file(
    script: shell.Script, effects: list[Effect], cwds: list[str | None], workspace: _Workspace
) -> tuple[str, FileTarget] | None:
    """`[cd D &&]* READ FILE [| FILTER]*`: the normalized text and file target, or None."""
    statement = script.statements[0]
    position = 0
    for pipeline in statement.pipelines[:-1]:
        if effects[position].kind != CD:
            return None
        position += len(pipeline.commands)
    pipeline = statement.pipelines[-1]
    first = effects[position]
    rest = effects[position + 1 : position + len(pipeline.commands)]
    if first.kind != READS or first.tree or len(first.files) != 1 or first.view is None:
        return None
    if any(e.kind != FILTER for e in rest):
        return None
    if any(w.has_glob for c in pipeline.commands for w in c.words):
        return None  # a glob expands against the directory, which a file target does not track
    cwd = cwds[position]
    assert cwd is not None
    word = first.files[0]
    key = workspace.key(cwd, word)
    if key is None or key == "." or not workspace.readable_file(cwd, word):
        return None
    view, lines = first.view, first.lines
    for effect in rest:
        if view in (PLAIN, NUMBERED, NL_NUMBERED) and effect.stream_slice is not None:
            lines = _compose(lines, effect.stream_slice)
        else:
            view, lines = "pipeline", WHOLE_FILE
    command = pipeline.commands[0]
    if first.path_free:
        # The output cannot show the path, so the key replaces it and the directory is moot.
        words = list(command.words)
        for index, _ in first.rewrite.items():
            words[index + 1] = Word(((key, False),))
        head = " ".join([w.render() for w in words] + [r.render() for r in command.redirects])
        normalized = head + "".join(f" {op} {c.render()}" for op, c in zip(pipeline.operators, pipeline.commands[1:]))
    else:
        normalized = _prefix(cwd) + pipeline.render()
    return normalized, FileTarget(key, lines, view)


def _compose(lines: LineRange, stream: tuple[int, int | None]) -> LineRange:
    """Lines a..b of a stream that shows file lines `lines`, as file lines."""
    a, b = stream
    start = lines.start + a - 1
    ends = [e for e in (lines.end, None if b is None else lines.start + b - 1) if e is not None]
    end = min(ends) if ends else None
    if end is not None and end < start - 1:
        end = start - 1
    return LineRange(start, end)


def _prefix(cwd: str | None) -> str:
    return "" if cwd in (".", None) else f"cd {shell.shlex.quote(cwd)} && "


def _canonical(script: shell.Script, start_cwd: str | None, cwds: list[str | None] | None = None) -> str:
    """Canonical text. With `cwds` (an `&&` chain), each cd is folded into the next command's prefix."""
    if cwds is None or len(script.statements) != 1 or None in cwds:
        prefix = "" if start_cwd == "." else f"cd {shell.shlex.quote(str(start_cwd))} && "
        return prefix + script.render()
    parts: list[str] = []
    position = 0
    for pipeline in script.statements[0].pipelines:
        first = pipeline.commands[0]
        if len(pipeline.commands) == 1 and first.name == "cd" and not first.redirects:
            position += 1
            continue
        parts.append(_prefix(cwds[position]) + pipeline.render())
        position += len(pipeline.commands)
    return " && ".join(parts) if parts else script.render()
