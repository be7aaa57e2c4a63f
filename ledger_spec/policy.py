"""Every threshold govern and inform use, by name, in one value.

The paper behind Ledger fixed these by hand and did not publish them; here each one has a
default, a reason, and a test at its boundary, so a harness can tune them knowingly.
"""

from __future__ import annotations

import fnmatch
from typing import Literal

import attrs

ReuseMode = Literal["full", "reference"]


def _non_negative(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"Policy.{attribute.name} must be a non-negative integer, got {value!r}")


def _positive(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"Policy.{attribute.name} must be a positive integer, got {value!r}")


def _patterns(value: object) -> tuple[str, ...]:
    # A bare string is a sequence of characters; taking it as one pattern per character
    # would silently mark nearly every file transient.
    if isinstance(value, str):
        raise TypeError(f"transient_patterns is a sequence of globs, not a single string: {value!r}")
    return tuple(value)  # type: ignore[arg-type]


DEFAULT_TRANSIENT_PATTERNS: tuple[str, ...] = (
    ".git/",
    "__pycache__/",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    "*.pyc",
    "*.pyo",
    "*.orig",
    "*.rej",
    "*.swp",
    "*~",
    ".coverage",
    ".coverage.*",
)


@attrs.frozen
class Policy:
    """The knobs of govern and inform. Every field is validated; defaults are conservative."""

    intervention_cap: int = attrs.field(default=200, validator=_non_negative)
    """Most Reuse + Nudge verdicts per task. Past it every command is allowed: a harness that
    keeps intervening in a loop it cannot break is better off stepping aside. 0 turns govern off."""

    nudge_cooldown: int = attrs.field(default=3, validator=_non_negative)
    """Fewest steps between two nudges. A note on every step trains the model to ignore it."""

    short_loop_window: int = attrs.field(default=4, validator=_non_negative)
    """A command repeated within this many steps of its last run, with nothing but transient
    files changed since, is nudged. 0 disables short-loop nudges."""

    range_reuse: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    """Serve a line range from a current observation of a wider range of the same file and view.
    Off, only an identical normalized command is reused."""

    transient_patterns: tuple[str, ...] = attrs.field(
        default=DEFAULT_TRANSIENT_PATTERNS, converter=lambda value: _patterns(value)
    )
    """Files that are noise to the agent: caches, backups, swap files. They are left out of the
    view and do not break a 'nothing changed' Nudge. They still advance counters, because a
    listing or a search over the tree can see them; they never make a Reuse possible."""

    reuse_mode: ReuseMode = attrs.field(
        default="full", validator=attrs.validators.in_(("full", "reference"))
    )
    """'full' returns the stored output byte for byte; 'reference' returns a short note naming
    the earlier step, which saves tokens when the earlier output is still in the context."""

    view_budget: int = attrs.field(default=2000, validator=_positive)
    """Most characters in the inform view. It is appended to every prompt, so it must stay small."""

    view_recent_modifications: int = attrs.field(default=8, validator=_non_negative)
    """How many recently modified files the view lists, newest first."""

    stored_output_limit: int = attrs.field(default=64 * 1024 * 1024, validator=_non_negative)
    """Most bytes (UTF-8) of stored outputs kept for Reuse. Past it the least recently used
    (recorded or served) observation's output is dropped, so memory stays bounded however long
    the session; a stale observation's output is dropped at once. 0 keeps nothing (no Reuse)."""

    @transient_patterns.validator
    def _check_patterns(self, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
        for pattern in value:
            if not isinstance(pattern, str) or not pattern or pattern == "/":
                raise ValueError(f"a transient pattern is a non-empty glob, got {pattern!r}")

    def is_transient(self, key: str) -> bool:
        """Whether `key` matches one of `transient_patterns` (see `matches_transient`)."""
        return matches_transient(key, self.transient_patterns)


def matches_transient(key: str, patterns: tuple[str, ...]) -> bool:
    """Whether `key` matches a transient pattern.

    A pattern ending in '/' names a directory: it matches the directory's own key (detectors
    report a created directory by its key) and every key below it. Any other pattern matches
    the file name, or the whole key if it has a '/'.
    A module function rather than only a method so CrossHair can check it without building
    a Policy.

    post: implies(not patterns, not __return__)
    post: implies(all(p.endswith("/") for p in patterns) and not any(c in key for c in "*?[") and key + "/" in patterns, __return__)
    post: implies(key in patterns and "/" not in key and not any(c in key for c in "*?["), __return__)
    """
    parts = key.split("/")
    name = parts[-1]
    for pattern in patterns:
        if pattern.endswith("/"):
            directory = pattern[:-1]
            if any(fnmatch.fnmatchcase(part, directory) for part in parts):
                return True
        elif "/" in pattern:
            if fnmatch.fnmatchcase(key, pattern):
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False
