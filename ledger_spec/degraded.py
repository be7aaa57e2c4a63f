"""Why a detector runs degraded: a typed value, rendered to text in one place.

A detector that cannot trust its fast path still reports every change, by a slower way (a full
snapshot diff) or by saying "unknown scope"; either costs reuse, never correctness. What it
tells the user is a `Degraded`: a `Cause` from a fixed list, the details its wording needs, and
the `Effect`. `text()` is the only place the sentence is made.
"""

from __future__ import annotations

import enum

import attrs


class Cause(enum.Enum):
    """What made events untrustworthy; the value is the wording, `{0}`, `{1}` the details."""

    NO_INOTIFY = "inotify is not available"
    NO_INSTANCE = "no inotify instance ({0})"
    EVENTS_UNTRUSTED = "inotify events are not trusted"
    DIRECTORY_UNWATCHABLE = "cannot watch {0} ({1}; fs.inotify.max_user_watches?)"
    FILE_UNWATCHABLE = "cannot watch the file {0} ({1}; fs.inotify.max_user_watches?)"
    DIRECTORY_ALIASED = "one directory is reachable as {0} and {1}"
    MOUNTS_CHANGED = "the mount table changed (a mount raises no inotify event)"
    EVENTS_UNACCOUNTED = "inotify events could not account for the changes"
    REPLACED_WHILE_WATCHING = "files kept being replaced while the detector added their watches"
    QUEUE_OVERFLOW = "the inotify queue overflowed"
    MARKER_LATE = "the detector's own marker event did not arrive in time"
    ROOT_WATCH_GONE = "the root's watch is gone (the root was deleted or moved)"
    ROOT_CHANGED = "the root itself changed (metadata, deleted or moved)"
    ROOT_REPLACED = "the root or one of its ancestors was replaced"


class Effect(enum.Enum):
    """What the detector does about it."""

    EVERY_COMMAND_FULL_DIFF = "every command runs a full snapshot diff"  # from now on
    ONE_FULL_DIFF = "full snapshot diff"  # this report only
    UNKNOWN_SCOPE = "watches rebuilt, scope unknown"  # this report says "something may have changed"


@attrs.frozen
class Degraded:
    cause: Cause
    details: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    effect: Effect = Effect.EVERY_COMMAND_FULL_DIFF

    def __attrs_post_init__(self) -> None:
        self.cause.value.format(*self.details)  # every placeholder has its detail, now rather than when shown

    def text(self) -> str:
        return f"{self.cause.value.format(*self.details)}: {self.effect.value}"


__all__ = ["Cause", "Degraded", "Effect"]
