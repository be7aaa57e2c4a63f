"""Ledger's errors: one root, `LedgerError`, and one family per way things go wrong.

The spec defines them because every layer may import the spec (the layer rule runs one way),
so the CLI, the harness and the implementation all raise and catch the same classes. A concrete
error subclasses its family and, where callers already catch it by a builtin (`ValueError`,
`RuntimeError`, `AssertionError`), that builtin too. The CLI maps families to exit codes in one
table (`ledger_cli.errors`); docs/reference/errors.md lists both.
"""

from __future__ import annotations


class LedgerError(Exception):
    """The root: anything Ledger raises on purpose. Its message is one line for a user."""


class UsageError(LedgerError):
    """The caller asked for something that cannot be done: a bad argument, a call out of order."""


class InvalidInput(LedgerError):
    """Input data that does not follow its format: a counterexample file, a trajectory, a
    shell command that does not parse, a step that would write outside its workspace."""


class UnreadableState(LedgerError):
    """Stored state that cannot be read (or not now): a damaged index, a locked or corrupt
    store, a settings file that is not what it should be. Reading it again fresh is safe; using
    it is not."""


class DetectorFailure(LedgerError):
    """A change detector could not do its job: it failed to load, to answer, or in time. Ledger
    turns this into "unknown scope" (costing reuse, never correctness) or reports it."""


class Unavailable(LedgerError):
    """Something Ledger needs is not installed or not permitted here (bubblewrap, say)."""


class HarnessFailure(LedgerError):
    """The verification harness itself broke (a worker died): never blamed on what it checks."""


class PropertyViolation(LedgerError):
    """A checked property does not hold: the spec and the implementation diverge, a hunt found
    a stale read. This is a finding, not a malfunction."""


FAMILIES: tuple[type[LedgerError], ...] = (
    UsageError, InvalidInput, UnreadableState, DetectorFailure, Unavailable, HarnessFailure, PropertyViolation,
)

__all__ = ["FAMILIES", "LedgerError", *[family.__name__ for family in FAMILIES]]
