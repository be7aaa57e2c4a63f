"""Exit codes, in one place: what `ledger` returns for each outcome and each family of error.

0 everything checked holds; 1 a property does not hold (a finding); 2 the request cannot be
served (bad usage or input, unreadable state, a failing detector, a missing component), found
before or instead of the work; 3 the harness's own failure; 130 interrupted (Ctrl-C). A status
query answers "not running" with 1.
"""

from __future__ import annotations

from ledger_spec.errors import (
    DetectorFailure,
    HarnessFailure,
    InvalidInput,
    LedgerError,
    PropertyViolation,
    Unavailable,
    UnreadableState,
    UsageError,
)

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2
EXIT_HARNESS_ERROR = 3
EXIT_INTERRUPTED = 130
#: A status query's "no" (`ledger serve status` when no service runs): not a finding, but the
#: same code, as `test -e` and `systemctl is-active` answer no with 1.
EXIT_NOT_RUNNING = 1

EXIT_CODES: dict[type[LedgerError], int] = {
    UsageError: EXIT_USAGE,
    InvalidInput: EXIT_USAGE,
    UnreadableState: EXIT_USAGE,
    DetectorFailure: EXIT_USAGE,
    Unavailable: EXIT_USAGE,
    HarnessFailure: EXIT_HARNESS_ERROR,
    PropertyViolation: EXIT_VIOLATION,
}


def exit_code(error: LedgerError) -> int:
    """The exit code of `error`: its nearest family's in the table (2 for a bare LedgerError)."""
    for cls in type(error).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return EXIT_USAGE


def one_line(error: BaseException) -> str:
    """The first line of `error`'s message, or its class name when it has none."""
    return (str(error).splitlines() or [type(error).__name__])[0]
