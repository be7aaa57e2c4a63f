"""Detectors: how a micro-skill is tested against a finished trajectory without a model call.

A detector is one of
* `Regex(pattern, target)`: the pattern is searched in each line of the commands, of the
  outputs, or of both (`target`), and matches if any line matches;
* `Builtin(name)`: a named predicate from `trajectory.BUILTINS` (repro_written, importerror,
  badarg, ran_tests);
* `CommandResult(command, exit_zero, output)`: some step whose command matches `command`,
  whose exit status is zero (True), non-zero (False) or anything (None), and whose output
  matches `output` (if given). This is the built-in the digest-mining proposer uses for
  "a test invocation that passed": the paper's example (c) shows why matching the command
  alone is not enough (its pytest skill was "confirmed" by failing pytest runs).

Regexes come from a proposer, a model, so they are untrusted input. A regex is *admissible*
only if it compiles and passes a static check that rules out the shapes that backtrack
catastrophically (`admission_error` returns the reason otherwise):
* no back-references (matching with them is NP-hard in general);
* no unbounded repeat whose body can itself repeat or branch ambiguously: `(a+)+`,
  `(\\w+\\s?)*`, `(a|ab)*` are rejected; `(?:foo|bar)+` (branches start with distinct
  literals) and `(?:ab)+` are accepted;
* at most `MAX_UNBOUNDED_REPEATS` unbounded repeats in all, and at most `MAX_PATTERN_LENGTH`
  characters, which bounds the polynomial blow-up of patterns like `.*a.*b.*c`.
Matching is line by line with each line cut at `LINE_LIMIT` characters, so the text one
search sees is bounded too. The implementation adds a wall-clock bound on top (it evaluates
detectors in a worker it can kill): what a static check cannot see, a timeout still stops,
and the regex is then rejected with its reason, never run unbounded.
"""

from __future__ import annotations

import re
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Literal, Union

import attrs

from .trajectory import BUILTINS, Step

Target = Literal["commands", "outputs", "all"]

MAX_PATTERN_LENGTH = 300
MAX_UNBOUNDED_REPEATS = 4
LINE_LIMIT = 2000
"""Characters of one line a regex is searched in. Error lines, commands and test summaries
fit; a minified blob past 2,000 characters carries no operational fact a skill could test."""


@attrs.frozen
class Regex:
    pattern: str
    target: Target = "all"


@attrs.frozen
class Builtin:
    name: str


@attrs.frozen
class CommandResult:
    command: str
    exit_zero: bool | None = None
    output: str | None = None


Detector = Union[Regex, Builtin, CommandResult]


def _first_literals(items: list) -> set[int] | None:
    """The literal a branch must start with, or None if it may start with anything else."""
    if items and items[0][0] == sre_constants.LITERAL:
        return {items[0][1]}
    return None


def _can_vary(items: list) -> bool:
    """Whether a subpattern contains a repeat or a branch (so its width or path can vary)."""
    for op, av in items:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT):
            return True
        if op == sre_constants.BRANCH:
            return True
        if op == sre_constants.SUBPATTERN and _can_vary(list(av[-1])):
            return True
        if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT) and _can_vary(list(av[1])):
            return True
    return False


def _branch_is_deterministic(branches: list) -> bool:
    seen: set[int] = set()
    for branch in branches:
        first = _first_literals(list(branch))
        if first is None or first & seen:
            return False
        seen |= first
    return True


def _walk(items: list, unbounded_count: list[int]) -> str | None:
    for op, av in items:
        if op in (sre_constants.GROUPREF, sre_constants.GROUPREF_EXISTS):
            return "back-references are not allowed"
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT):
            low, high, body = av
            body = list(body)
            if high == sre_constants.MAXREPEAT:
                unbounded_count[0] += 1
                if op != sre_constants.POSSESSIVE_REPEAT and _ambiguous_body(body):
                    return "nested or ambiguous repetition can backtrack catastrophically"
            error = _walk(body, unbounded_count)
            if error:
                return error
        elif op == sre_constants.SUBPATTERN:
            error = _walk(list(av[-1]), unbounded_count)
            if error:
                return error
        elif op == sre_constants.BRANCH:
            for branch in av[1]:
                error = _walk(list(branch), unbounded_count)
                if error:
                    return error
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            error = _walk(list(av[1]), unbounded_count)
            if error:
                return error
        elif op == sre_constants.ATOMIC_GROUP:
            error = _walk(list(av), unbounded_count)
            if error:
                return error
    return None


def _ambiguous_body(body: list) -> bool:
    """An unbounded repeat's body is ambiguous if it can match in more than one way."""
    for op, av in body:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            return True
        if op == sre_constants.BRANCH and not _branch_is_deterministic(av[1]):
            return True
        if op == sre_constants.SUBPATTERN and _ambiguous_body(list(av[-1])):
            return True
    return False


def regex_error(pattern: object) -> str | None:
    """Why `pattern` is not an admissible detector regex, or None if it is."""
    if not isinstance(pattern, str):
        return f"a regex must be a string, got {type(pattern).__name__}"
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"regex longer than {MAX_PATTERN_LENGTH} characters"
    try:
        re.compile(pattern)
        parsed = sre_parse.parse(pattern)
    except (re.error, OverflowError, RecursionError) as error:
        return f"regex does not compile: {error}"
    count = [0]
    error = _walk(list(parsed), count)
    if error:
        return error
    if count[0] > MAX_UNBOUNDED_REPEATS:
        return f"more than {MAX_UNBOUNDED_REPEATS} unbounded repeats"
    return None


def admission_error(detector: object) -> str | None:
    """Why a detector may not be run, or None if it may."""
    if isinstance(detector, Regex):
        if detector.target not in ("commands", "outputs", "all"):
            return f"unknown regex target {detector.target!r}"
        return regex_error(detector.pattern)
    if isinstance(detector, Builtin):
        return None if detector.name in BUILTINS else f"unknown built-in predicate {detector.name!r}"
    if isinstance(detector, CommandResult):
        for pattern in (detector.command, detector.output):
            if pattern is not None:
                error = regex_error(pattern)
                if error:
                    return error
        return None
    return f"not a detector: {detector!r}"


def patterns_of(detector: Detector) -> tuple[str, ...]:
    if isinstance(detector, Regex):
        return (detector.pattern,)
    if isinstance(detector, CommandResult):
        return tuple(p for p in (detector.command, detector.output) if p is not None)
    return ()


def _search_lines(compiled: re.Pattern[str], text: str) -> bool:
    return any(compiled.search(line[:LINE_LIMIT]) for line in text.splitlines())


def matches(detector: Detector, steps: tuple[Step, ...]) -> bool:
    """Whether an admissible detector matches a trajectory. Total on admissible detectors."""
    if isinstance(detector, Builtin):
        return BUILTINS[detector.name](steps)
    if isinstance(detector, Regex):
        compiled = re.compile(detector.pattern)
        for step in steps:
            if detector.target in ("commands", "all") and _search_lines(compiled, step.command):
                return True
            if detector.target in ("outputs", "all") and _search_lines(compiled, step.output):
                return True
        return False
    command = re.compile(detector.command)
    output = re.compile(detector.output) if detector.output is not None else None
    for step in steps:
        if detector.exit_zero is not None and (step.returncode == 0) != detector.exit_zero:
            continue
        if not _search_lines(command, step.command):
            continue
        if output is None or _search_lines(output, step.output):
            return True
    return False
