"""Why Ledger runs degraded: a typed value, rendered to text in one place.

A detector that cannot trust its fast path still reports every change, by a slower way (a full
snapshot diff) or by saying "unknown scope"; a probe that cannot run leaves reads unserved;
either costs reuse, never correctness. What the user is told is a `Degraded`: a `Cause` from a
fixed list, the details its wording needs, and the `Effect`. `text()` is the only place the
sentence is made (`str()` is the same text); the runtime, the session, the hooks and the service
carry the value and render it only where a user reads it (the state view, a hook's reply, the
service's status). `tests/test_degraded.py` fails on a degraded reason assembled elsewhere.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

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
    # The probe (ledger_impl.probe): it could not do its job, so the read it judges is not served.
    PROBE_UNAVAILABLE = "the probe needs {0}"
    PROBE_NO_TRACE_DIRECTORY = "the probe has no place for its trace: {0}"
    PROBE_FAILED_TO_START = "the probe failed to start: {0}"
    PROBE_EXECUTABLE_UNREADABLE = "cannot read the executable {0}"
    PROBE_STATIC_EXECUTABLE = "statically linked executable {0}: the moved clock cannot reach it"
    # A read's fingerprint (ledger_impl.fingerprint) past one of Ledger's bounds: that read only.
    INPUTS_UNKNOWN = "git's inputs here are not all known ({0})"
    # A session detector's stored baseline could not be used (`changes_since`): the report is
    # unknown scope, and the session says why unless nothing was observed yet.
    BASELINE_MISSING = "no stored {0}"
    BASELINE_UNREADABLE = "the stored {0} cannot be used ({1})"
    BASELINE_OF_ANOTHER_ROOT = "the stored {0} is for {1}, not {2}"
    NO_PARENT_TO_WATCH = "the root has no parent directory to watch"
    ROOT_UNLISTABLE = "the root cannot be listed: {0}"
    WATCHMAN_FAILED = "watchman: {0}"
    WATCHMAN_FRESH_INSTANCE = "watchman: fresh instance (the daemon or its watch started over)"
    WATCHMAN_WARNING = "watchman warns: {0}"
    SERVICE_RESTARTED = "the service (re)started"
    WRITTEN_ELSEWHERE = "the stored state was written outside this service since its last call"
    # Accounts given in their own words, which say their effect themselves. (The two spellings
    # render alike; they differ only so that the members stay distinct.)
    SESSION_NOTES = "{0}"  # the durable session's notes (lost state, refused probes, ...), joined
    DETECTOR_REPORTED = "{0!s}"  # a user's detector whose `degraded` is a string


class Effect(enum.Enum):
    """What the detector does about it."""

    EVERY_COMMAND_FULL_DIFF = "every command runs a full snapshot diff"  # from now on
    ONE_FULL_DIFF = "full snapshot diff"  # this report only
    UNKNOWN_SCOPE = "watches rebuilt, scope unknown"  # this report says "something may have changed"
    NUDGE_ONLY = "reads are not reused (Nudge only)"  # no probe here: no read is ever served
    NOT_SERVED = "its output is not served"  # this read only
    SINCE_LAST_CALL_UNKNOWN = "changes since the last call unknown"  # a session detector's report
    AS_STATED = ""  # the cause's own words say it


@attrs.frozen
class Degraded:
    cause: Cause
    details: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    effect: Effect = Effect.EVERY_COMMAND_FULL_DIFF

    def __attrs_post_init__(self) -> None:
        self.cause.value.format(*self.details)  # every placeholder has its detail, now rather than when shown

    def text(self) -> str:
        cause = self.cause.value.format(*self.details)
        return f"{cause}: {self.effect.value}" if self.effect.value else cause

    __str__ = text


def from_notes(notes: Sequence[str | Degraded]) -> Degraded | None:
    """The session's notes as one degraded reason (None when there are none)."""
    texts = [str(note) for note in notes]
    return Degraded(Cause.SESSION_NOTES, ("; ".join(texts),), Effect.AS_STATED) if texts else None


def reported(degraded: object) -> Degraded | None:
    """A detector's `degraded` attribute as a typed reason: Ledger's detectors give a `Degraded`;
    a user's may give its own words (a non-empty string), kept as they are."""
    if isinstance(degraded, Degraded):
        return degraded
    if isinstance(degraded, str) and degraded:
        return Degraded(Cause.DETECTOR_REPORTED, (degraded,), Effect.AS_STATED)
    return None


__all__ = ["Cause", "Degraded", "Effect", "from_notes", "reported"]
