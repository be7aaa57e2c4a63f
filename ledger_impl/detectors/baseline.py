"""A persisted detector's stored baseline, read so that absent or damaged is a reason, not an error.

The session's detectors keep their baseline in the session's database between hook processes.
A baseline that is missing (the first call) or cannot be decoded (damaged, another format) must
make the next report unknown scope with a visible reason; it must never raise into the hook.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from ledger_spec.degraded import Cause, Degraded, Effect

T = TypeVar("T")


def unusable(cause: Cause, *details: str) -> Degraded:
    """Why a session detector's report is unknown scope (`changes_since`'s third value)."""
    return Degraded(cause, details, Effect.SINCE_LAST_CALL_UNKNOWN)


def read_stored(
    blob: bytes | None,
    decode: Callable[[bytes], T],
    what: str,
    damaged: type[Exception] | tuple[type[Exception], ...] = ValueError,
) -> tuple[T | None, Degraded | None]:
    """(the decoded baseline, None), or (None, why there is none): nothing was stored, or
    `decode` raised one of `damaged`. `what`: the baseline's name ("stat index")."""
    if blob is None:
        return None, unusable(Cause.BASELINE_MISSING, what)
    try:
        return decode(blob), None
    except damaged as error:
        return None, unusable(Cause.BASELINE_UNREADABLE, what, str(error))
