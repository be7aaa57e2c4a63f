"""The Runtime a harness embeds: every command goes through govern, runs (or is reused), and
the detector's report is recorded.

Each step starts in root, as in mini-swe-agent: a `cd` does not carry over.

Three things keep Reuse honest beyond the ledger's own rules:
- before a Reuse is returned, the detector is asked for changes made since its last report
  (by a background job, an editor, another process); any change is recorded and govern asked
  again, so a write between two steps cannot be served stale;
- while a process a command left in the background is alive, and at the first step after it
  exits, the workspace is treated as changing in unknown ways;
- a result that is not the whole truth (timed out, truncated, left a background job) is never
  recorded as an observation.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import attrs

from ledger_spec import Changes, Command, Policy, Reuse

from .classifier import classify
from .detectors import default_detector
from .execution import Completed, group_alive, kill_group, run_command
from .ledger import Ledger

DEFAULT_TIMEOUT = 120.0
DEFAULT_OUTPUT_LIMIT = 4 * 1024 * 1024
UNKNOWN_SCOPE = Changes(unknown=True)
# What the detector is shown when it is polled for changes made between steps: a no-op that
# is never executed, so a detector that parses command text sees nothing to report.
BETWEEN_STEPS = ":"
# Runs a command somewhere else and returns (output, exit_code): see `Runtime.step`.
Executor = Callable[[str], tuple[str, int]]


@attrs.frozen
class Step:
    """The result of one `Runtime.step`, as the agent sees it, plus what the ledger recorded."""

    verdict: str  # 'allow' | 'reuse' | 'nudge'
    output: str
    exit_code: int
    note: str | None
    index: int
    command: Command
    changes: Changes  # the detector's report for this command (empty when reused)
    changes_before: tuple[Changes, ...]  # recorded before govern: background jobs, outside writes
    detector_error: str | None = None  # why the detector could not report (recorded as unknown)
    # False when the output is not the whole truth: the command timed out, its output was
    # truncated, or it left a job running. Such a result is never recorded as an observation.
    complete: bool = True


class Runtime:
    """Governs and runs commands in `root`, keeping the execution ledger."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        detector: object | None = None,
        policy: Policy | None = None,
        *,
        task: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
    ) -> None:
        path = Path(root)
        if not path.is_dir():
            raise ValueError(f"Runtime root must be an existing directory: {root!r}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        if output_limit < 0:
            raise ValueError(f"output_limit must be non-negative, got {output_limit!r}")
        self.root = path.resolve()
        self.detector = detector if detector is not None else default_detector()
        self.policy = policy if policy is not None else Policy()
        self.ledger = Ledger(self.policy)
        self.task = task
        self.timeout = timeout
        self.output_limit = output_limit
        self._background: set[int] = set()

    def classify(self, command: str) -> Command:
        return classify(command, cwd=".", root=self.root)

    def step(self, command: str, run: Executor | None = None) -> Step:
        """Govern `command`, run it unless reused, record what happened.

        `run(command) -> (output, exit_code)` executes it elsewhere (a container, a remote
        shell) instead of bash in root; the detector still brackets the call."""
        if not isinstance(command, str):
            raise TypeError(f"a command is a string, got {type(command).__name__}")
        classified = self.classify(command)
        before: list[Changes] = []
        if self._background:
            # Anything may have been written while they ran, including just before they exited.
            self._background = {group for group in self._background if group_alive(group)}
            self._record_before(UNKNOWN_SCOPE, before)
        decision = self.ledger.govern(classified)
        errors: list[str] = []
        if isinstance(decision, Reuse):
            pending = self._detect(BETWEEN_STEPS, None, errors)
            if not pending.empty:
                self._record_before(pending, before)
                decision = self.ledger.govern(classified)
        index = self.ledger.step
        if isinstance(decision, Reuse):
            self.ledger.advance(classified, decision, "", decision.exit_status, Changes())
            return Step(
            "reuse", decision.output, decision.exit_status, decision.note, index, classified, Changes(), tuple(before)
        )

        completed = None

        def execute() -> int:
            nonlocal completed
            if run is None:
                completed = run_command(command, self.root, self.timeout, self.output_limit)
            else:
                completed = _run_elsewhere(run, command, self.output_limit)
            return completed.exit_code

        changes = self._detect(command, execute, errors)
        assert completed is not None
        if completed.background_group is not None:
            self._background.add(completed.background_group)
        recorded = classified if completed.complete else _unobservable(classified)
        self.ledger.advance(recorded, decision, completed.output, completed.exit_code, changes)
        note = getattr(decision, "note", None)
        error = "; ".join(errors) or None
        return Step(
            decision.verdict.value, completed.output, completed.exit_code, note, index, classified, changes, tuple(before), error,
            completed.complete,
        )

    @property
    def background_jobs(self) -> frozenset[int]:
        """Process groups that commands left running and that were alive at the last step."""
        return frozenset(self._background)

    def stop_background(self) -> None:
        """Kill every process group a command left running (a harness ending a session)."""
        for group in self._background:
            kill_group(group)
        self._background = set()

    def close(self) -> None:
        """Release the detector's resources (an inotify instance is a per-user, limited one)."""
        close = getattr(self.detector, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def view(self) -> str:
        """The inform view, to append to the agent's next prompt."""
        return self.ledger.render(self.task)

    def _detect(self, command: str, run: Callable[[], int] | None, errors: list[str]) -> Changes:
        """The detector's report around `run` (or, with no `run`, of what changed since its last
        report). A detector that fails cannot prove anything unchanged: its report becomes
        "unknown scope", the command still runs, and the error is kept for the Step."""
        failed = False
        try:
            self.detector.before(self.root, command)
        except Exception as error:  # a user's detector may raise anything
            errors.append(f"{self.detector_name}.before: {error!r}")
            failed = True
        exit_code = run() if run is not None else 0
        try:
            changes = self.detector.after(self.root, command, exit_code)
        except Exception as error:
            errors.append(f"{self.detector_name}.after: {error!r}")
            return UNKNOWN_SCOPE
        if not isinstance(changes, Changes):
            errors.append(f"{self.detector_name}.after returned {type(changes).__name__}, not a Changes")
            return UNKNOWN_SCOPE
        return UNKNOWN_SCOPE if failed else changes

    @property
    def detector_name(self) -> str:
        return str(getattr(self.detector, "name", type(self.detector).__name__))

    def _record_before(self, changes: Changes, before: list[Changes]) -> None:
        self.ledger.modify(changes)
        before.append(changes)


def _run_elsewhere(run: Executor, command: str, output_limit: int) -> Completed:
    """The harness's own execution as a Completed; an output over the limit is kept whole for
    the agent but marked truncated, so it is never recorded as an observation."""
    output, exit_code = run(command)
    if not isinstance(output, str) or isinstance(exit_code, bool) or not isinstance(exit_code, int):
        raise TypeError(f"run must return (str, int), got ({type(output).__name__}, {type(exit_code).__name__})")
    return Completed(output, exit_code, False, len(output.encode("utf-8", "surrogateescape")) > output_limit, None)


def _unobservable(command: Command) -> Command:
    """The same command with no target, so that an incomplete output is never served again."""
    return attrs.evolve(command, target=None)
