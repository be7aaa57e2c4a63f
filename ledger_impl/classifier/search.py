"""Searches: grep and rg."""

from __future__ import annotations

from typing import Final

from ledger_spec import WHOLE_FILE

from ..shell import Word
from .effect import DOT, RUN, Effect, Kind, Options, reader


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


def grep(args: list[Word]) -> Effect:
    o = Options(args, short="rRnilLcwxvhHoqsEFGPbTZzaIUu", short_arg="eABCmdD",
                 long=_GREP_LONG, long_arg=_GREP_LONG_ARG, numeric=True)
    if not o.ok:
        return RUN  # includes -f/--file and --exclude-from, which read other files
    for value in o.values("color", "colour"):
        if value not in ("never", "auto"):
            return RUN  # forced colour is not what the agent would see anyway
    operands = o.operands
    if not o.has("e", "regexp"):
        if not operands:
            return RUN
        operands = operands[1:]
    if o.has("R", "dereference-recursive"):
        return RUN  # follows symbolic links, possibly out of the root, where no detector looks
    recursive = o.has("r", "recursive") or "recurse" in o.values("d", "directories")
    if recursive:
        trees = [w for _, w in operands] or [DOT]
        return Effect(Kind.READS, search=True, trees=trees, tree=True)
    inner = Options([], "")
    inner.operands = operands
    effect = reader(inner, "grep", WHOLE_FILE, path_free=False, search=True)
    return effect


# rg searches files on several threads and prints each file's matches as its thread finishes,
# so the order of files differs from run to run: a repeat is the same output only when rg sorts
# (by path, or by a time only a change moves; `accessed` moves with every read) or runs on one
# thread, which walks the directories in their own order.
_RG_ORDERS: Final = frozenset({"path", "modified", "created"})


def rg(args: list[Word]) -> Effect:
    o = Options(args, short="nNilcwvoqsSFuUH", short_arg="eABCmtTgj",  # not -L: follows links
                 long=frozenset({"line-number", "no-line-number", "ignore-case", "smart-case", "files-with-matches",
                                 "count", "word-regexp", "invert-match", "only-matching", "fixed-strings", "hidden",
                                 "no-ignore", "no-heading", "heading", "with-filename", "no-filename", "files"}),
                 long_arg=frozenset({"regexp", "type", "type-not", "glob", "iglob", "max-count", "context",
                                     "after-context", "before-context", "color", "sort", "sortr", "threads"}))
    if not o.ok or any(v != "never" for v in o.values("color")):
        return RUN
    sorted_ = bool(o.values("sort", "sortr")) and all(v in _RG_ORDERS for v in o.values("sort", "sortr"))
    one_thread = bool(o.values("j", "threads")) and all(v == "1" for v in o.values("j", "threads"))
    if not (sorted_ or one_thread):
        return RUN
    operands = [w for _, w in o.operands]
    if not (o.has("e", "regexp") or o.has("files")):
        if not operands:
            return RUN
        operands = operands[1:]
    return Effect(Kind.READS, search=True, trees=operands or [DOT], tree=True)

