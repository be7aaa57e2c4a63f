"""Tools that read their operands, or stdin, as one stream: sort, uniq, cut, tr, tac."""

from __future__ import annotations

from ..shell import Word
from .effect import EDIT, FILTER, RUN, Effect, Options, stream_tool


def sort(args: list[Word]) -> Effect:
    o = Options(args, short="bdfgiMhnrsuVcCz", short_arg="ktS",  # not -R: random order
                 long=frozenset({"reverse", "unique", "numeric-sort", "version-sort", "human-numeric-sort",
                                 "ignore-case", "stable", "general-numeric-sort"}),
                 long_arg=frozenset({"key", "field-separator", "buffer-size"}))
    if not o.ok:
        return RUN  # -o/--output writes, -T/--compress-program/--files0-from are refused too
    return stream_tool(o)


def uniq(args: list[Word]) -> Effect:
    o = Options(args, short="cdDiuz", short_arg="fsw", long=frozenset({"count", "repeated", "unique", "ignore-case"}))
    if not o.ok:
        return RUN
    if len(o.operands) >= 2:
        return EDIT  # uniq INPUT OUTPUT writes OUTPUT
    return stream_tool(o)


def cut(args: list[Word]) -> Effect:
    o = Options(args, short="sz", short_arg="bcdf", long=frozenset({"complement", "only-delimited"}),
                 long_arg=frozenset({"delimiter", "fields", "characters", "bytes"}))
    return stream_tool(o) if o.ok else RUN


def tr(args: list[Word]) -> Effect:
    o = Options(args, short="cCdst")
    return FILTER if o.ok else RUN  # tr only reads stdin; its operands are sets


def simple_filter(args: list[Word]) -> Effect:
    o = Options(args)
    return stream_tool(o) if o.ok else RUN

