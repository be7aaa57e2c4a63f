"""A persisted detector's stored baseline, read so that absent or damaged is a reason, not an error.

The session's detectors keep their baseline in the session's database between hook processes.
A baseline that is missing (the first call) or cannot be decoded (damaged, another format) must
make the next report unknown scope with a visible reason; it must never raise into the hook.
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")


def read_stored(
    blob: bytes | None,
    decode: Callable[[bytes], T],
    missing: str,
    damaged: type[Exception] | tuple[type[Exception], ...] = ValueError,
) -> tuple[T | None, str | None]:
    """(the decoded baseline, None), or (None, why there is none): `missing` when nothing was
    stored, the decoder's message when `decode` raised one of `damaged`."""
    if blob is None:
        return None, missing
    try:
        return decode(blob), None
    except damaged as error:
        return None, str(error)
