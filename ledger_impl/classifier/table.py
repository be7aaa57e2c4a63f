"""The one table of programs the classifier knows, and `effect_of`, which consults it.

Each entry maps a program name to its parser: a function from the arguments (after quote
removal) to an `Effect`. A program not in the table is `run`. Adding a read idiom means adding
its parser here, one grammar entry in `properties/shell_strategies.py` and one test (see
CONTRIBUTING.md).
"""

from __future__ import annotations

from typing import Callable

from ..shell import SimpleCommand, Word
from . import awk, git, hazards, listing, programs, search, sed, streams, views
from .effect import NEUTRAL, RUN, TEST, Effect

Parser = Callable[[list[Word]], Effect]

TOOLS: dict[str, Parser] = {
    # file views: whole files and line ranges
    "cat": views.cat, "head": views.head, "tail": views.tail, "nl": views.nl, "wc": views.wc, "od": views.od,
    "sed": sed.sed, "awk": awk.awk, "gawk": awk.awk, "mawk": awk.awk,
    # searches
    "grep": search.grep, "egrep": search.grep, "fgrep": search.grep, "rg": search.rg,
    # listings and tree-wide reads
    "find": listing.find, "ls": listing.ls, "diff": listing.diff,
    # streams
    "sort": streams.sort, "uniq": streams.uniq, "cut": streams.cut, "tr": streams.tr, "tac": streams.simple_filter,
    # the repository
    "git": git.git,
    # not inspection tools
    "cd": programs.cd, "timeout": programs.timeout, "perl": programs.perl,
    **{name: programs.neutral for name in programs.NEUTRAL_COMMANDS},
    **{name: programs.edits for name in programs.EDIT_COMMANDS},
}


def effect_of(command: SimpleCommand) -> Effect:
    """What one simple command does, ignoring its redirections."""
    if command.compound is not None or command.assignments:
        return RUN
    if not command.words:
        return NEUTRAL  # only redirections, judged by the caller
    if any(w.executes or w.dynamic for w in command.words):
        return RUN
    name = command.name
    if name is None or command.words[0].has_glob:
        return RUN
    if hazards.reads_the_clock(name, [w.text for w in command.args]):
        return RUN
    if programs.is_test(name, command.args):
        return TEST
    parser = TOOLS.get(name)
    return parser(command.args) if parser is not None else RUN
