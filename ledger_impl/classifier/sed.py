"""sed: a script that only prints is a read; its `N,Mp` forms are line-range views."""

from __future__ import annotations

import re

import attrs

from ledger_spec import PLAIN, WHOLE_FILE, LineRange

from ..shell import Word
from .effect import EDIT, RUN, Effect, Kind, Options, reader


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

    def skip_bracket(pos: int) -> int:
        """Index just past the bracket expression that opens at `pos`, or -1 (unterminated).

        Inside one a backslash is literal and `]` first (or right after `^`) is a member;
        `[:`, `[.` and `[=` open a class, collating symbol or equivalence class that runs to
        the matching `:]`, `.]` or `=]`. GNU sed refuses a newline anywhere in it.
        """
        pos += 1
        if pos < n and script[pos] == "^":
            pos += 1
        if pos < n and script[pos] == "]":
            pos += 1
        while pos < n and script[pos] != "\n":
            if script[pos] == "]":
                return pos + 1
            if script[pos] == "[" and pos + 1 < n and script[pos + 1] in ".:=":
                close = script.find(script[pos + 1] + "]", pos + 2)
                if close == -1 or "\n" in script[pos + 2 : close]:
                    return -1
                pos = close + 2
                continue
            pos += 1
        return -1

    def skip_delimited(pos: int, delim: str, regex: bool = False) -> int:
        """Index just past the next unescaped `delim` at or after `pos`, or -1. In a `regex`
        (an address, an `s` pattern) `delim` does not end it inside a bracket expression."""
        while pos < n:
            c = script[pos]
            if c == "\\":
                pos += 2
                continue
            if regex and c == "[" and delim != "[":
                pos = skip_bracket(pos)
                if pos == -1:
                    return -1
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
            pos = skip_delimited(pos, delim, regex=True)
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
            # GNU sed skips blanks before a label and ends it at a blank, `;` or a newline:
            # in `:x w out` the `w` is a command.
            while i < n and script[i] in " \t":
                i += 1
            while i < n and not script[i].isspace() and script[i] != ";":
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
            i = skip_delimited(i + 1, delim, regex=c == "s")
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


def sed(args: list[Word]) -> Effect:
    o = Options(
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
            return EDIT
        return RUN
    if o.has("i", "in-place"):
        return EDIT
    if o.has("f", "file"):
        return RUN  # the script lives in another file
    scripts = o.values("e", "expression")
    operands = o.operands
    if not scripts:
        if not operands:
            return RUN
        scripts = [operands[0][1].text]
        if not operands[0][1].static:
            return RUN
        operands = operands[1:]
    script = "\n".join(scripts)
    if not sed_script_is_safe(script):
        return RUN  # may write (w, s///w) or execute (e, s///e)
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
    inner = Options([], "")
    inner.operands = operands
    effect = reader(inner, view, lines, path_free=True)
    if effect.kind is Kind.FILTER:
        effect = attrs.evolve(effect, stream_slice=stream_slice)
    return effect

