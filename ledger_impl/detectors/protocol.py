"""The one detector protocol: what changed under a root since a baseline.

Theory of operation. Every driver of the engine (the `Runtime`, a `DurableSession` in a hook
process, `ledger serve`, `ledger check-detector` and the audit through the Runtime) asks its
detector one question:

    changes_since(root, baseline, moment=None) -> (changes, new baseline, why unknown)

- `baseline` is the bytes the previous report handed back, stored by the driver where its
  state lives: in memory (the Runtime), beside the ledger in SQLite (a session). None means
  there is none, and the report is then unknown scope.
- The third value is a typed `Degraded` when the report is unknown scope for a reason the
  detector can name (a damaged or missing baseline, a restarted service), else None.
- `moment` says where a driver that runs the command itself stands: None for a poll between
  commands (all a session ever sends), `Before(command)` just before `command` runs, and
  `After(command, exit_code)` just after. A detector that holds a baseline may answer a
  `Before` with no report at all: the same baseline and no changes (`deferred`), so that
  everything since is reported by the next call and no scan is spent. A detector that reads
  the command's text resolves it at `Before`, while its paths still name what they did.

A detector that keeps its baseline in its own memory and follows the bracket contract of
DESIGN.md's "Edit detector" (`before(root, command)`, then `after(root, command, exit_code) ->
Changes`, each report covering everything since the previous one) is what users write, and
what the event, snapshot, rules and channel detectors are. `Bracketed` is the one adapter that
puts such a detector behind the protocol: its baselines are tokens naming the adapter and the
number of reports it gave, and a baseline that is not the latest token means some report in
between went to another caller, so the report is unknown scope. `as_detector` gives the
protocol's face of any detector a driver is handed.
"""

from __future__ import annotations

import os
import pathlib
import secrets
from typing import Any, Protocol, Union, runtime_checkable

import attrs

from ledger_spec.degraded import Cause, Degraded, reported
from ledger_spec.errors import DetectorFailure
from ledger_spec.values import Changes

from .baseline import unusable

# What a `Bracketed` detector's `before`/`after` are shown for a poll between commands: a
# no-op never executed, so that a detector that parses command text sees nothing to report.
BETWEEN_STEPS = ":"
TOKEN_PREFIX = b"ledger-bracketed:"

# (what changed, the baseline the next call should pass, why the report is unknown scope).
Report = tuple[Changes, Union[bytes, None], Union[Degraded, None]]


@attrs.frozen
class Before:
    """The report is taken just before `command` runs (and may be deferred)."""

    command: str


@attrs.frozen
class After:
    """The report is taken just after `command` finished with `exit_code`."""

    command: str
    exit_code: int


Moment = Union[Before, After, None]


@runtime_checkable
class Detector(Protocol):
    """What every driver asks of its detector."""

    name: str

    def changes_since(self, root: os.PathLike[str] | str, baseline: bytes | None, moment: Moment = None) -> Report: ...


def deferred(baseline: bytes) -> Report:
    """No report: the next call from `baseline` reports everything since it."""
    return Changes(), baseline, None


class ReportFailed(DetectorFailure):
    """A bracketed detector's own call raised: which call (`before`, `after`), and what."""

    def __init__(self, call: str, error: Exception) -> None:
        super().__init__(f"{call}: {error!r}")
        self.call = call
        self.error = error


class Tokens:
    """The baselines an in-memory detector hands out: a random nonce and a report count, so
    that no baseline of another object, process or run can be taken for the latest."""

    def __init__(self, prefix: bytes = TOKEN_PREFIX) -> None:
        self._prefix = prefix + secrets.token_hex(16).encode() + b":"
        self._reports = 0

    def latest(self) -> bytes:
        return self._prefix + str(self._reports).encode()

    def issue(self) -> bytes:
        self._reports += 1
        return self.latest()


class Bracketed:
    """A `before`/`after` detector behind `changes_since`.

    `first` is why the first report for a root is unknown scope (there is no baseline yet:
    the inner detector takes its own at that call); a baseline that is not the latest token
    is unknown scope with `stale` as the reason. A `Before` opens the inner bracket and is
    deferred; the `After` of the same command closes it with the command's exit code. A poll
    brackets the no-op `BETWEEN_STEPS`. An `After` with no open bracket, or a poll while one
    is open (the command's run was interrupted), is unknown scope: nothing bracketed what ran.
    What the inner detector raises is raised again as `ReportFailed`, naming the call."""

    def __init__(
        self,
        inner: Any,
        *,
        first: Degraded | None = None,
        stale: Degraded | None = None,
        tokens: Tokens | None = None,
    ) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", type(inner).__name__))
        self._first = first if first is not None else unusable(Cause.BASELINE_MISSING, f"{self.name} baseline")
        self._stale = stale if stale is not None else unusable(Cause.WRITTEN_ELSEWHERE)
        self._tokens = tokens if tokens is not None else Tokens()
        self._root: str | None = None
        self._open: str | None = None  # the command a `Before` announced, not yet reported

    @property
    def degraded(self) -> Degraded | None:
        """The inner detector's own account of a degraded mode, if it gives one."""
        return reported(getattr(self.inner, "degraded", None))

    def changes_since(self, root: os.PathLike[str] | str, baseline: bytes | None, moment: Moment = None) -> Report:
        root_s = os.path.abspath(os.fspath(root))
        path = pathlib.Path(root_s)
        announced = moment.command if isinstance(moment, Before) else None
        if self._root != root_s:
            # No baseline of the inner detector for this root: the bracket opened now takes it.
            self._open = None
            self._call("before", path, announced if announced is not None else BETWEEN_STEPS)
            self._root, self._open = root_s, announced
            return Changes(unknown=True), self._tokens.issue(), self._first
        current = baseline == self._tokens.latest()
        left_open, self._open = self._open, None
        if left_open is not None and not (isinstance(moment, After) and moment.command == left_open):
            # The bracket of a command whose run never reported (interrupted): what the inner
            # detector saw since is not attributable to anything, so this report is unknown.
            self._call("after", path, left_open, 0)
        if announced is not None:
            self._call("before", path, announced)
            self._open = announced
            if current and left_open is None:
                return deferred(baseline)  # type: ignore[arg-type]
            return Changes(unknown=True), self._tokens.issue(), None if current else self._stale
        if isinstance(moment, After) and left_open == moment.command:
            changes = self._call("after", path, moment.command, moment.exit_code)
            bracketed = True
        else:
            self._call("before", path, BETWEEN_STEPS)
            changes = self._call("after", path, BETWEEN_STEPS, 0)
            # An After with nothing open: the command ran outside any bracket.
            bracketed = left_open is None and moment is None
        token = self._tokens.issue()
        if not current:
            return Changes(unknown=True), token, self._stale
        return (changes if bracketed else Changes(unknown=True)), token, None

    def _call(self, call: str, root: pathlib.Path, command: str, exit_code: int | None = None) -> Changes:
        try:
            if exit_code is None:
                self.inner.before(root, command)
                return Changes()
            changes = self.inner.after(root, command, exit_code)
        except Exception as error:  # a user's detector may raise anything
            raise ReportFailed(call, error) from error
        if not isinstance(changes, Changes):
            raise ReportFailed(call, TypeError(f"returned {type(changes).__name__}, not a Changes"))
        return changes

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


def as_detector(detector: Any) -> Detector:
    """`detector` as the protocol speaks it: itself when it has `changes_since`, `Bracketed`
    around it when it has `before` and `after`; a TypeError otherwise."""
    if callable(getattr(detector, "changes_since", None)):
        return detector  # type: ignore[no-any-return]
    if callable(getattr(detector, "before", None)) and callable(getattr(detector, "after", None)):
        return Bracketed(detector)
    raise TypeError(
        f"a detector has changes_since(root, baseline, moment) or before(root, command) and "
        f"after(root, command, exit_code); {type(detector).__name__} has neither"
    )
