"""awk: a program that only prints is a read; its `NR` comparisons are line ranges."""

from __future__ import annotations

import re

from ledger_spec import WHOLE_FILE, LineRange

from ..shell import Word
from .effect import RUN, Effect, Options, reader


# awk -------------------------------------------------------------------------------------

_AWK_NR = re.compile(
    r"^\s*NR\s*(>=|>|==)\s*(\d+)\s*(?:&&\s*NR\s*(<=|<)\s*(\d+)\s*)?(?:\{\s*print(?:\s+\$0)?\s*;?\s*\})?\s*$"
)
# `@` also covers gawk's indirect calls (`f = "sys" "tem"; @f("...")`).
# ARGV/ARGC can name another file to read; systime/strftime/rand print the clock or chance,
# and gawk's PROCINFO the process id ("pid", "ppid", "pgrpid"), new at every run.
_AWK_UNSAFE = re.compile(r"system|getline|\||@|close\s*\(|ARGV|ARGC|systime|strftime|srand|rand|PROCINFO")
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


def awk(args: list[Word]) -> Effect:
    o = Options(args, short_arg="Fv", long_arg=frozenset({"field-separator", "assign"}))
    if not o.ok or not o.operands:
        return RUN
    program_word = o.operands[0][1]
    if not program_word.static:
        return RUN
    program = program_word.text
    if not awk_program_is_safe(program):
        return RUN
    operands = o.operands[1:]
    if any("=" in w.text for _, w in operands):
        return RUN  # awk treats var=value operands as assignments
    lines = _awk_range(program) if not o.flags else None
    # awk ends every record it prints with a newline, even where the file has none, so its
    # output is not the PLAIN view; it gets a view of its own, served only to itself.
    view = "awk-lines" if lines is not None else "awk"
    inner = Options([], "")
    inner.operands = operands
    path_free = not _AWK_PATHS.search(program)
    return reader(inner, view, lines or WHOLE_FILE, path_free=path_free)


