"""The whole-file and line-range views: cat, head, tail, nl, wc."""

from __future__ import annotations

import re

import attrs

from ledger_spec import NL_NUMBERED, NUMBERED, PLAIN, WHOLE_FILE, LineRange

from ..shell import Word
from .effect import RUN, Effect, Kind, Options, reader
from .hazards import HEADER_FLAGS


# cat ------------------------------------------------------------------------------------


def cat(args: list[Word]) -> Effect:
    o = Options(
        args,
        short="nbsvETAeu",
        long=frozenset(
            {"number", "number-nonblank", "squeeze-blank", "show-all", "show-ends", "show-tabs", "show-nonprinting"}
        ),
    )
    if not o.ok:
        return RUN
    flags = sorted({"n" if name == "number" else name for name, _ in o.flags if name != "u"})
    view = PLAIN if not flags else NUMBERED if flags == ["n"] else "cat-" + "".join(flags)
    return reader(o, view, WHOLE_FILE, path_free=True)


# head / tail ------------------------------------------------------------------------------

_COUNT = re.compile(r"^-?\d+$")


def head(args: list[Word]) -> Effect:
    o = Options(args, short="qvz", short_arg="nc", long=frozenset({"quiet", "silent", "verbose", "zero-terminated"}),
                 long_arg=frozenset({"lines", "bytes"}), numeric=True)
    if not o.ok:
        return RUN
    count = (o.values("n", "lines", "#") or ["10"])[-1]
    if o.has("c", "bytes") or o.has("z", "zero-terminated") or not _COUNT.match(count):
        view, lines = "head:" + " ".join(f"{n}={v}" for n, v in o.flags), WHOLE_FILE
    elif count.startswith("-"):
        view, lines = f"head-all-but-{count[1:]}", WHOLE_FILE
    else:
        n = int(count)
        view, lines = PLAIN, LineRange(1, n) if n >= 1 else LineRange(1, 0)
    if o.has(*HEADER_FLAGS):
        view = f"head-verbose:{view}"  # `==> FILE <==` first: never a slice of another view
    effect = reader(o, view, lines, path_free=not o.has(*HEADER_FLAGS))
    if effect.kind is Kind.FILTER and view == PLAIN:
        effect = attrs.evolve(effect, stream_slice=(1, lines.end))
    return effect


def tail(args: list[Word]) -> Effect:
    o = Options(args, short="qvz", short_arg="nc", long=frozenset({"quiet", "silent", "verbose", "zero-terminated"}),
                 long_arg=frozenset({"lines", "bytes"}), numeric=True)
    if not o.ok:
        return RUN  # includes -f/--follow, which never ends
    count = (o.values("n", "lines", "#") or ["10"])[-1]
    if o.has("c", "bytes") or o.has("z", "zero-terminated"):
        view, lines = "tail:" + " ".join(f"{n}={v}" for n, v in o.flags), WHOLE_FILE
    elif count.startswith("+") and count[1:].isdigit():
        view, lines = PLAIN, LineRange(max(1, int(count[1:])), None)
    elif count.lstrip("-").isdigit():
        view, lines = f"tail-{count.lstrip('-')}", WHOLE_FILE
    else:
        return RUN
    if o.has(*HEADER_FLAGS):
        view = f"tail-verbose:{view}"  # `==> FILE <==` first: never a slice of another view
    effect = reader(o, view, lines, path_free=not o.has(*HEADER_FLAGS))
    if effect.kind is Kind.FILTER and view == PLAIN:
        effect = attrs.evolve(effect, stream_slice=(lines.start, None))
    return effect


# nl, wc ----------------------------------------------------------------------------------


def nl(args: list[Word]) -> Effect:
    o = Options(args, short_arg="b", long_arg=frozenset({"body-numbering"}))
    if not o.ok:
        return RUN
    styles = o.values("b", "body-numbering")
    if styles and styles[-1] != "a":
        return RUN
    view = NL_NUMBERED if styles else "nl"
    return reader(o, view, WHOLE_FILE, path_free=True)


def wc(args: list[Word]) -> Effect:
    o = Options(args, short="lwcmL", long=frozenset({"lines", "words", "bytes", "chars", "max-line-length"}))
    if not o.ok:
        return RUN
    view = "wc-" + "".join(sorted({name[0] for name, _ in o.flags}))
    return reader(o, view, WHOLE_FILE, path_free=False)



def od(args: list[Word]) -> Effect:
    """od: a byte dump of one file, in a view named by its format options. It never prints the
    path. An operand starting with `+` may be an offset rather than a file: refused."""
    o = Options(args, short="bcdfiloxsv", short_arg="AjNt",
                long_arg=frozenset({"address-radix", "skip-bytes", "read-bytes", "format"}))
    if not o.ok or any(w.text.startswith("+") for _, w in o.operands):
        return RUN
    view = "od:" + " ".join(name if value is None else f"{name}={value}" for name, value in o.flags)
    return reader(o, view, WHOLE_FILE, path_free=True)
