"""Reference specification of Ledger's execution state: pure values and total functions, no I/O.

`ledger_impl` and every property in `properties/` are checked against this package.
"""

from .lines import can_serve, consistent, reaches_end_of_file, serve as serve_lines, split_lines
from .policy import DEFAULT_TRANSIENT_PATTERNS, Policy
from .state import (
    INITIAL,
    State,
    advance,
    conclude,
    current,
    first_invalidation,
    govern,
    interventions,
    modify,
    observe,
    run,
    serve,
)
from .values import (
    NL_NUMBERED,
    NO_CHANGES,
    NUMBERED,
    PLAIN,
    READ_ONLY,
    SLICEABLE_VIEWS,
    WHOLE_FILE,
    Allow,
    Category,
    Changes,
    Command,
    CommandRecord,
    Decision,
    FileTarget,
    LineRange,
    Modification,
    Nudge,
    Observation,
    Reuse,
    Target,
    TreeTarget,
    Verdict,
    check_key,
)
from .view import render

__all__ = [name for name in dir() if not name.startswith("_")]
