"""What one simple command does, as the classifier understands it, and the option scanner
every tool parser uses."""

from __future__ import annotations

import enum

import attrs

from ledger_spec import WHOLE_FILE, LineRange

from ..shell import Word


class Kind(enum.Enum):
    """What one simple command does.

    READS reads files or a tree; FILTER only transforms stdin; NEUTRAL prints its own arguments
    or the directory (echo, pwd); CD changes directory; EDIT, TEST and RUN as the categories.
    """

    READS = "reads"
    FILTER = "filter"
    NEUTRAL = "neutral"
    CD = "cd"
    EDIT = "edit"
    TEST = "test"
    RUN = "run"


def _words(values: object) -> tuple[Word, ...]:
    return tuple(values)  # type: ignore[arg-type]


@attrs.frozen
class Effect:
    """One simple command's effect: its kind, what it reads, and for a single-file read the
    view and lines it prints."""

    kind: Kind
    search: bool = False  # a listing or search rather than a read
    files: tuple[Word, ...] = attrs.field(default=(), converter=_words)  # file operands read
    trees: tuple[Word, ...] = attrs.field(default=(), converter=_words)  # directories read or listed
    tree: bool = False  # output depends on more than the single file named
    view: str | None = None  # for a single-file read: the view
    lines: LineRange = WHOLE_FILE
    path_free: bool = False  # output never contains a path as typed
    stream_slice: tuple[int, int | None] | None = None  # for a FILTER: output lines a..b of stdin
    operand_index: int | None = None  # for a single-file read: the argument that names the file
    repository: bool = False  # output depends on the git repository, which must lie in the root


RUN = Effect(Kind.RUN)
EDIT = Effect(Kind.EDIT)
TEST = Effect(Kind.TEST)
NEUTRAL = Effect(Kind.NEUTRAL)
FILTER = Effect(Kind.FILTER)
DOT = Word(((".", False),))
STDIN = Word((("-", False),))


def _argument(args: list[Word], i: int, attached: str | None) -> tuple[str, int] | None:
    """The argument of the option at `args[i]` and where the scan stands: the text `attached`
    to it (`-n5`, `--lines=5`, `--lines=`), else the next word. None: there is none."""
    if attached is not None:
        return attached, i
    if i + 1 >= len(args):
        return None
    return args[i + 1].text, i + 1


class Options:
    """A getopt-like scan of GNU-style options that permutes operands, as GNU tools do.

    `short` lists flags without an argument, `short_arg` flags that take one; `long`/`long_arg`
    likewise for long options (without the leading dashes). Any other option makes `ok` False.
    `operands` holds (argument index, word) pairs; every word after `--` is an operand.
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
                    taken = _argument(args, i, value if eq else None)
                    if taken is None:
                        self.ok = False
                        return
                    value, i = taken
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
                    taken = _argument(args, i, body[j + 1 :] or None)
                    if taken is None:
                        self.ok = False
                        return
                    value, i = taken
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


def reader(o: Options, view: str, lines: LineRange, path_free: bool, search: bool = False) -> Effect:
    """Effect of a tool that reads its operands, or stdin when it has none."""
    operands = [w for _, w in o.operands]
    if not operands or operands == [STDIN]:
        return Effect(Kind.FILTER, view=view, lines=lines, search=search)
    if len(operands) == 1 and not operands[0].has_glob:
        return Effect(Kind.READS, files=operands, view=view, lines=lines, path_free=path_free, search=search,
                      operand_index=o.operands[0][0])
    return Effect(Kind.READS, files=operands, tree=True, search=search)


def stream_tool(o: Options) -> Effect:
    """A tool that reads its operands (or stdin) as one stream: never a single-file view."""
    if not o.operands:
        return FILTER
    return Effect(Kind.READS, files=[w for _, w in o.operands], tree=True)
