"""The values the specification talks about: commands, targets, changes, records, verdicts.

Every value is a frozen attrs class validated at construction, so a malformed value fails
where it is built with a message naming the field, not later inside a transition.
"""

from __future__ import annotations

import enum
import posixpath
from typing import Final, Hashable

import attrs


class Category(enum.Enum):
    """What a command does, as far as govern is concerned."""

    READ = "read"  # prints (part of) one or more files, changes nothing
    SEARCH = "search"  # searches or lists a tree, changes nothing
    TEST = "test"  # runs a test suite: may be flaky, never withheld
    EDIT = "edit"  # changes files in a way the command text shows
    RUN = "run"  # runs a program whose effects the text does not show
    UNKNOWN = "unknown"  # could not be parsed or is not supported


READ_ONLY = frozenset({Category.READ, Category.SEARCH})

# Views whose output has exactly one line per file line, so that a stored range can be sliced
# to serve a narrower one. `cat -n` keeps a missing final newline; `nl -ba` adds one, so the
# two are different views even though their middle lines agree.
PLAIN = "plain"
NUMBERED = "numbered"
NL_NUMBERED = "nl-numbered"
SLICEABLE_VIEWS = frozenset({PLAIN, NUMBERED, NL_NUMBERED})


def check_key(key: str) -> str:
    r"""Return `key` if it is a normalized POSIX path relative to the root, else raise.

    pre: isinstance(key, str)
    post: __return__ == key
    post: not __return__.startswith("/") and "\x00" not in __return__
    raises: ValueError
    """
    if not isinstance(key, str) or not key:
        raise ValueError(f"a file key must be a non-empty string, got {key!r}")
    if "\x00" in key:
        raise ValueError(f"a file key cannot contain NUL: {key!r}")
    if key.startswith("/") or posixpath.normpath(key) != key or key == "." or key.startswith("../") or key == "..":
        raise ValueError(f"a file key must be a normalized path inside the root, got {key!r}")
    return key


def _valid_key(instance: object, attribute: attrs.Attribute, value: str) -> None:
    check_key(value)


@attrs.frozen
class LineRange:
    """Lines `start..end` of a file, 1-based and inclusive; `end=None` runs to the end of file.

    `end == start - 1` is the empty range (`awk 'NR>=5 && NR<=4'` prints nothing). Use
    `LineRange.from_sed` for sed addresses, where a reversed pair selects one line.
    """

    start: int = attrs.field()
    end: int | None = attrs.field(default=None)

    @start.validator
    def _check_start(self, attribute: attrs.Attribute, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"a line range starts at line 1 or later, got start={value!r}")

    @end.validator
    def _check_end(self, attribute: attrs.Attribute, value: int | None) -> None:
        if value is None:
            return
        if not isinstance(value, int) or isinstance(value, bool) or value < self.start - 1:
            raise ValueError(
                f"a line range ends at or after start - 1 (the empty range), "
                f"got start={self.start}, end={value!r}"
            )

    @classmethod
    def from_sed(cls, first: int, last: int) -> "LineRange":
        """`sed -n 'FIRST,LASTp'`: when LAST < FIRST, sed prints line FIRST alone.

        pre: first >= 1 and last >= 0
        post: __return__.start == first
        post: __return__.end == max(first, last)
        post: not __return__.is_empty
        """
        return cls(first, max(first, last))

    @property
    def is_empty(self) -> bool:
        return self.end is not None and self.end < self.start

    def covers(self, other: "LineRange") -> bool:
        """Whether every line of `other` lies in this range (the empty range lies anywhere).

        post: implies(other.is_empty, __return__)
        post: implies(__return__ and not other.is_empty, other.start >= self.start)
        post: implies(self.end is None and other.start >= self.start, __return__)
        """
        if other.is_empty:
            return True
        if other.start < self.start:
            return False
        if self.end is None:
            return True
        return other.end is not None and other.end <= self.end


WHOLE_FILE: LineRange = LineRange(1, None)


@attrs.frozen
class FileTarget:
    """A read of one file in root: its key, the lines shown, and how they are shown."""

    key: str = attrs.field(validator=_valid_key)
    lines: LineRange = attrs.field(default=WHOLE_FILE, validator=attrs.validators.instance_of(LineRange))
    view: str = attrs.field(default=PLAIN, validator=attrs.validators.instance_of(str))


@attrs.frozen
class TreeTarget:
    """A read whose output may depend on many files: a search, a listing, a repository query.

    `scope` is the directory key it looks under ("." for the whole root). It is descriptive:
    currentness of a tree target checks the global counter, never the scope, because a
    listing or a search can see any file below it, including ones created after the fact.
    """

    scope: str = attrs.field(default=".")

    @scope.validator
    def _check_scope(self, attribute: attrs.Attribute, value: str) -> None:
        if value != ".":
            check_key(value)


Target = FileTarget | TreeTarget


@attrs.frozen
class Command:
    """A command as the classifier understands it.

    `text` is what the agent typed; `normalized` is a canonical spelling such that two commands
    with equal `normalized` print the same bytes when run against the same files and exit 0.
    Only read-only categories carry a target; a read-only command without one (for example a
    file outside the root) is never served from a stored result.
    """

    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    normalized: str = attrs.field(validator=attrs.validators.instance_of(str))
    category: Category = attrs.field(validator=attrs.validators.instance_of(Category))
    target: Target | None = attrs.field(default=None)

    @target.validator
    def _check_target(self, attribute: attrs.Attribute, value: Target | None) -> None:
        if value is not None and not isinstance(value, (FileTarget, TreeTarget)):
            raise TypeError(f"a target is a FileTarget, a TreeTarget or None, got {value!r}")
        if value is not None and self.category not in READ_ONLY:
            raise ValueError(f"only read-only commands carry a target; {self.category.value} got one")

    @property
    def read_only(self) -> bool:
        return self.category in READ_ONLY


@attrs.frozen
class Changes:
    """What a detector reports after a command: the keys it changed, or that it cannot tell.

    Creation, deletion, rename and metadata changes all count. `unknown=True` means something
    may have changed beyond `paths`; `Changes()` means the command changed nothing.
    """

    paths: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    unknown: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))

    @paths.validator
    def _check_paths(self, attribute: attrs.Attribute, value: frozenset[str]) -> None:
        for key in value:
            check_key(key)

    @property
    def empty(self) -> bool:
        return not self.paths and not self.unknown


NO_CHANGES: Changes = Changes()


Fingerprint = Hashable
"""What a read's output depends on outside the counters' view (the program that runs, the
environment, the root's identity, git's configuration, ...), as one comparable value. The
specification never looks inside: it only compares two fingerprints for equality. `None` means
"could not be fingerprinted": such a read is never reused."""

STEADY: Final[Fingerprint] = "steady"
"""The fingerprint of a world in which nothing outside the counters' view ever changes: the
default of every event that carries a fingerprint, so that sessions which do not model one
behave exactly as they did before fingerprints existed."""


@attrs.frozen
class Observation:
    """The completed result of a read-only command, with the counters it was recorded under.

    `fingerprint` is the fingerprint taken when it was recorded. `retained` turns False, and
    `output` empty, once the ledger has dropped the stored output (the observation went stale,
    or the stored-output budget evicted it); a dropped observation never serves a Reuse.
    """

    step: int
    command: Command
    output: str
    exit_status: int
    local: int  # L[key] for a file target, 0 for a tree target
    wildcard: int  # W
    total: int  # G
    fingerprint: Fingerprint | None = STEADY
    retained: bool = True

    @property
    def stored_bytes(self) -> int:
        """What keeping this observation's output costs, in UTF-8 bytes."""
        return len(self.output.encode("utf-8", "surrogatepass")) if self.retained else 0

    def dropped(self) -> "Observation":
        """The same observation without its output."""
        return attrs.evolve(self, output="", retained=False)


@attrs.frozen
class Pending:
    """A command that started and has not finished: what it is, the decision it runs under,
    and its stamp, taken at its start: `started_at` is G then (the length of the modification
    log, whose prefix gives every counter at the start) and `fingerprint` the fingerprint then.
    `call` names it among the commands in flight (a tool call id). `may_write`: while it holds,
    writes of this call may still land, so govern neither reuses nor nudges (`ledger_spec.state`);
    True for a command that is not read-only (or a read the caller cannot tell from an earlier
    writer under the same call name), and cleared only when the call is given up on (`expire`).
    A state stored before the field existed decodes it from the command."""

    call: Hashable
    command: Command
    decision: "Allow | Nudge"
    started_at: int
    fingerprint: Fingerprint | None = STEADY
    may_write: bool = attrs.field(default=attrs.Factory(lambda self: not self.command.read_only, takes_self=True))


@attrs.frozen
class Modification:
    """A change event as recorded: at which step, which keys, and whether its scope is unknown."""

    step: int
    changes: Changes


class Verdict(enum.Enum):
    """What govern decided for a command: run it, serve a stored result, or run it with a note."""

    ALLOW = "allow"
    REUSE = "reuse"
    NUDGE = "nudge"


@attrs.frozen
class Allow:
    verdict: Verdict = attrs.field(default=Verdict.ALLOW, init=False)


@attrs.frozen
class Reuse:
    """Withhold execution and return `output` (the stored result, sliced if a range was asked)."""

    observation: Observation
    output: str
    exit_status: int
    note: str
    verdict: Verdict = attrs.field(default=Verdict.REUSE, init=False)


@attrs.frozen
class Nudge:
    """Run the command, and attach `note` saying why it looks redundant."""

    note: str
    verdict: Verdict = attrs.field(default=Verdict.NUDGE, init=False)


Decision = Allow | Reuse | Nudge


@attrs.frozen
class Request:
    """What the caller of govern says about the one call it asks for, beyond its command.

    `call`: the name the command will run under (a tool call id); None for a sequential step.
    While a call of that name is still running, nothing is served: a later result could belong
    to either call.
    `same_command_only`: the stored outputs are an agent's rendering of what ran (stripped,
    reformatted), not the command's bytes, so no other command's lines may be cut from them;
    only an observation of the same command serves (a Reuse with `Policy.range_reuse` off).
    `withhold`: the agent accepts a stored result in place of running the call. False for a
    call it must run whatever the answer (a file tool whose read its edits require, a command
    sent to the background): where a Reuse would be answered, a Nudge naming the step whose
    result is unchanged is, and the call runs.
    """

    call: Hashable | None = None
    same_command_only: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    withhold: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))


ANY_CALL: Final[Request] = Request()
"""A sequential step that may be answered in any way the rules allow."""


@attrs.frozen
class CommandRecord:
    """One governed command: what it was, the verdict, and its exit status."""

    step: int
    command: Command
    verdict: Verdict
    exit_status: int
    served_from: int | None = None  # for a Reuse: the step of the observation it served
    started_at: int = 0  # G when the command started (when it was decided, for a Reuse)
