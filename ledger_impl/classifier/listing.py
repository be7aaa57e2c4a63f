"""Listings and tree-wide reads: find, ls, diff."""

from __future__ import annotations

from dataclasses import replace

from ..shell import Word
from .effect import DOT, EDIT, RUN, Effect, Kind, Options
from .hazards import FIND_AGE_TESTS, FIND_TARGET_FORMATS, FIND_TARGET_TESTS, ls_inspects_targets


# find / ls / tree-wide tools ----------------------------------------------------------------

_FIND_NO_ARG = frozenset(
    "-print -print0 -prune -o -or -a -and -not ! ( ) -empty -true -false -quit -depth -xdev -mount -noleaf "
    "-nouser -nogroup -daystart -ls".split()
)
_FIND_ONE_ARG = frozenset(
    "-name -iname -path -ipath -wholename -iwholename -type -maxdepth -mindepth -size -mtime -mmin "
    "-ctime -cmin -regex -iregex -regextype -perm -user -group -uid -gid -links -inum -lname -ilname "
    "-printf".split()
)
_FIND_FILE_ARG = frozenset({"-newer", "-samefile", "-cnewer"})
_FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})


def find(args: list[Word]) -> Effect:
    i = 0
    while i < len(args) and args[i].text in ("-L", "-H", "-P"):
        if args[i].text == "-L":
            return RUN  # follows symbolic links, possibly out of the root
        i += 1
    trees: list[Word] = []
    while i < len(args) and not args[i].text.startswith("-") and args[i].text not in ("(", "!", ")"):
        trees.append(args[i])
        i += 1
    files: list[Word] = []
    while i < len(args):
        token = args[i].text
        if token in _FIND_WRITES:
            return EDIT
        if token in FIND_TARGET_TESTS:
            return RUN  # stats what a symbolic link points to, possibly outside the root
        if token in _FIND_NO_ARG:
            i += 1
        elif token in _FIND_ONE_ARG and i + 1 < len(args):
            if token == "-printf" and ("%A" in args[i + 1].text or "%a" in args[i + 1].text):
                return RUN  # access times change whenever anything reads a file
            if token == "-printf" and FIND_TARGET_FORMATS.search(args[i + 1].text):
                return RUN  # %Y: the type of what a symbolic link points to
            if token in FIND_AGE_TESTS:
                return RUN  # "changed in the last 5 minutes" changes answer as time passes
            i += 2
        elif token in _FIND_FILE_ARG and i + 1 < len(args):
            files.append(args[i + 1])
            i += 2
        else:
            return RUN  # -exec, -execdir, -ok, access-time tests, anything unknown
    return Effect(Kind.READS, search=True, trees=trees or [DOT], files=files, tree=True)


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


def ls(args: list[Word]) -> Effect:
    o = Options(args, short=_LS_SHORT, short_arg="wIT", long=_LS_LONG, long_arg=_LS_LONG_ARG)
    if not o.ok:
        return RUN  # includes -u and --time=atime: access times change on every read
    if any(v not in ("never", "auto") for v in o.values("color")):
        return RUN
    if ls_inspects_targets(o.flags):
        return RUN  # `link -> target/`: the target's type, possibly outside the root
    trees = [w for _, w in o.operands] or [DOT]
    shows_parent = o.has("a", "f", "all") and not o.has("d", "directory")
    if shows_parent and any(name not in _LS_NAMES_ONLY for name, _ in o.flags):
        # The `..` line describes each listed directory's parent, which for the root lies
        # outside the workspace, where no detector looks: read it as an operand too.
        trees += [replace(w, segments=w.segments + (("/..", False),)) for w in list(trees)]
    return Effect(Kind.READS, search=True, trees=trees, tree=True)


def diff(args: list[Word]) -> Effect:
    # Not -r: a recursive diff follows symbolic links, possibly out of the root.
    o = Options(args, short="uqNbBwiyctsaTp", short_arg="UCxX",
                 long=frozenset({"brief", "new-file", "unified", "ignore-all-space", "text",
                                 "ignore-space-change", "ignore-blank-lines", "report-identical-files"}),
                 long_arg=frozenset({"color", "exclude"}), numeric=False)
    if not o.ok or len(o.operands) != 2 or any(v != "never" for v in o.values("color")):
        return RUN
    return Effect(Kind.READS, trees=[w for _, w in o.operands], tree=True)

