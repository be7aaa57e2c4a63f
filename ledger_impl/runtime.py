"""The Runtime a harness embeds: every command goes through govern, runs (or is reused), and
the detector's report is recorded.

Each step starts in root, as in mini-swe-agent: a `cd` does not carry over.

Four things keep Reuse honest beyond the ledger's own rules:
- before a Reuse or a Nudge is returned, the detector is asked for changes made since its last report
  (by a background job, an editor, another process); any change is recorded and govern asked
  again, so a write between two steps cannot be served stale. The detector is asked through
  the one protocol every driver speaks (`ledger_impl.detectors.protocol`): changes since the
  baseline its last report handed back, which the Runtime keeps in memory; a detector written
  to the `before`/`after` contract is put behind it by `Bracketed`;
- while a process a command left in the background is alive, and at the first step after it
  exits, the workspace is treated as changing in unknown ways; every descendant counts, also
  one that left bash's process group or session (`ledger_impl.descendants`);
- a result that is not the whole truth (bash never started, timed out, truncated, left a
  background job) is never recorded as an observation;
- the observation fingerprint (`ledger_impl.fingerprint`) is taken before a read runs and again
  after; only if the two agree is it recorded, and govern gets a fresh one at every decision,
  so a change the detector cannot see (a program shadowed on PATH, the root recreated, git's
  configuration outside the root) still prevents a stale Reuse.

Whatever interrupts a step (an exception, KeyboardInterrupt) kills everything the command
started; `close()` kills the background jobs the Runtime's commands left running.
"""

from __future__ import annotations

import functools
import math
import os
import time
from pathlib import Path
from typing import Callable, Mapping

import attrs

from ledger_spec import STEADY, Allow, Changes, Command, Decision, Fingerprint, Policy, Reuse
from ledger_spec.degraded import Degraded, reported

from .classifier import classify
from .detectors import default_detector
from .detectors.protocol import After, Before, Moment, ReportFailed, as_detector
from . import descendants
from .descendants import Descendants
from .engine import UNKNOWN_SCOPE, fingerprint_and_refusal, first_reuse
from .execution import Completed, command_environment, run_command
from .ledger import Ledger
from .probe import DEFAULT_PROBE_TIMEOUT
from .probe.guard import ProbeGuard

DEFAULT_TIMEOUT = 120.0
DEFAULT_OUTPUT_LIMIT = 4 * 1024 * 1024
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
    # Why the detector or the probe runs degraded, or why this read's inputs are not all known (costs reuse).
    degraded: Degraded | None = None
    fingerprint: Fingerprint | None = STEADY  # the fingerprint govern decided with
    recorded_fingerprint: Fingerprint | None = STEADY  # the one an observation of this step holds
    recorded: Command | None = None  # the command as the ledger recorded it (no target: unobservable)


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
        environment: Mapping[str, str] | None = None,
        fingerprint: bool = True,
        probe: bool = True,
        probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
        process_tracking: str | None = None,
    ) -> None:
        """`environment` is what commands run with (the process's own by default);
        `fingerprint=False` turns the enumerated fingerprint off (to measure the other lines
        alone); `probe=False` turns the probe off (`ledger_impl.probe`: no read is rerun,
        traced, or served on its traced dependencies). With the fingerprint off and the probe
        on, Reuse rests on the traced set alone. `process_tracking` is how a command's
        descendants are followed (`ledger_impl.descendants`: "cgroup" or "session"; the best
        available by default)."""
        path = Path(root)
        if not path.is_dir():
            raise ValueError(f"Runtime root must be an existing directory: {root!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
            raise ValueError(f"timeout must be a finite positive number of seconds, got {timeout!r}")
        if output_limit < 0:
            raise ValueError(f"output_limit must be non-negative, got {output_limit!r}")
        self.root = path.resolve()
        self.detector = detector if detector is not None else default_detector()
        self._reports = as_detector(self.detector)
        self._baseline: bytes | None = None  # what the detector's last report handed back
        self._problem: Degraded | None = None  # why this step's report was unknown scope, if it said
        self.policy = policy if policy is not None else Policy()
        self.ledger = Ledger(self.policy)
        self.task = task
        self.timeout = timeout
        self.output_limit = output_limit
        if process_tracking not in (None, descendants.CGROUP, descendants.SESSION):
            raise ValueError(f"process_tracking must be 'cgroup' or 'session', got {process_tracking!r}")
        self._process_tracking = process_tracking
        self._background: set[Descendants] = set()
        self.environment = dict(environment) if environment is not None else None
        self.fingerprint_enabled = fingerprint
        # --- the probe (issue 19): see ledger_impl/probe/guard.py -------------------------
        self.probe = ProbeGuard(self.root, timeout=probe_timeout, cross_command=fingerprint) if probe else None

    def classify(self, command: str) -> Command:
        # The git-config check must read the environment the command will run with.
        return classify(command, cwd=".", root=self.root, environment=command_environment(self.environment))

    def step(self, command: str, run: Executor | None = None) -> Step:
        """Govern `command`, run it unless reused, record what happened.

        `run(command) -> (output, exit_code)` executes it elsewhere (a container, a remote
        shell) instead of bash in root; the detector still brackets the call."""
        if not isinstance(command, str):
            raise TypeError(f"a command is a string, got {type(command).__name__}")
        classified = self.classify(command)
        environment = command_environment(self.environment)
        fingerprint_now = functools.partial(
            fingerprint_and_refusal, self.root, classified, environment, enabled=self.fingerprint_enabled
        )
        before: list[Changes] = []
        self._problem = None
        if self._background:
            # Anything may have been written while they ran, including just before they exited.
            self._background = _still_alive(self._background)
            self._record_before(UNKNOWN_SCOPE, before)
        enumerated, refusal = fingerprint_now()
        decision, now = self._govern(classified, enumerated)
        errors: list[str] = []
        if not isinstance(decision, Allow):
            # Both Reuse and Nudge rest on "nothing changed since": ask the detector first.
            pending = self._detect(None, errors)
            if not pending.empty:
                self._record_before(pending, before)
                enumerated, refusal = fingerprint_now()
                decision, now = self._govern(classified, enumerated)
        index = self.ledger.step
        degraded = self._degraded()
        if isinstance(decision, Reuse):
            self.ledger.advance(classified, decision, "", decision.exit_status, Changes())
            return Step(
                "reuse", decision.output, decision.exit_status, decision.note, index, classified, Changes(),
                tuple(before), None, True, degraded, now, now, classified,
            )

        announced = self._detect(Before(command), errors)
        if not announced.empty:
            self._record_before(announced, before)
        started_ns = time.time_ns()
        if run is None:
            completed = run_command(
                command, self.root, self.timeout, self.output_limit, environment,
                process_tracking=self._process_tracking,
            )
        else:
            completed = _run_elsewhere(run, command, self.output_limit)
        try:
            changes = self._detect(After(command, completed.exit_code), errors)
        except BaseException:
            # Interrupted after the command ran (in the detector): what it left behind dies.
            if completed.background is not None:
                completed.background.kill()
            raise
        if completed.background is not None:
            self._background.add(completed.background)
        after, _ = fingerprint_now()
        # A fingerprint that moved while the command ran says its output may mix both worlds.
        recorded_fingerprint = enumerated if after == enumerated else None
        recorded = classified if completed.complete else _unobservable(classified)
        probe_degraded = None
        if self.probe is not None and completed.complete and changes.empty:
            recorded_fingerprint, probed = self.probe.after_run(
                index, recorded, completed.output, completed.exit_code, recorded_fingerprint, environment,
                started_ns, self.output_limit, self.ledger,
            )
            if probed is not None:
                probe_degraded = probed.degraded
        elif self.probe is not None:
            recorded_fingerprint = None
        self.ledger.advance(recorded, decision, completed.output, completed.exit_code, changes, recorded_fingerprint)
        note = getattr(decision, "note", None)
        error = "; ".join(errors) or None
        return Step(
            decision.verdict.value, completed.output, completed.exit_code, note, index, classified, changes,
            tuple(before), error, completed.complete, degraded or self._degraded() or probe_degraded or refusal, now,
            recorded_fingerprint, recorded,
        )

    @property
    def background_jobs(self) -> frozenset[Descendants]:
        """What commands left running, one entry per command, as of the last step."""
        return frozenset(self._background)

    @property
    def process_tracking(self) -> str:
        """How this Runtime's commands have their descendants followed, and what escapes it."""
        how = self._process_tracking or descendants.available()
        return f"{how}: {descendants.LIMIT[how]}"

    def stop_background(self) -> None:
        """Kill everything commands left running (a harness ending a session)."""
        _stop(self._background)
        self._background = set()

    def _govern(self, command: Command, enumerated: Fingerprint | None) -> tuple[Decision, Fingerprint | None]:
        """The ledger's decision and the fingerprint it was given: the enumerated one, and with
        the probe on, one naming a probed observation whose traced dependencies all hold now,
        newest first, until one can serve (`ProbeGuard.candidates`)."""
        if self.probe is None:
            return self.ledger.govern(command, enumerated), enumerated
        candidates = self.probe.candidates(command, enumerated, self.ledger)
        return first_reuse(self.ledger, command, candidates[:-1], candidates[-1])

    def _degraded(self) -> Degraded | None:
        """The detector's own account of a degraded mode (watch limit, queue overflow, root
        replaced), if it gives one; else why its last report was unknown scope, if it said;
        else the probe's, when it cannot run here."""
        degraded = reported(getattr(self.detector, "degraded", None)) or self._problem
        if degraded is not None:
            return degraded
        return self.probe.degraded if self.probe is not None else None

    def close(self) -> None:
        """Kill the background jobs the Runtime's commands left running, and release the
        detector's resources (an inotify instance is a per-user, limited one)."""
        _stop(self._background)
        self._background.clear()
        close = getattr(self.detector, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def view(self) -> str:
        """The inform view, to append to the agent's next prompt: always valid UTF-8 (a file
        name's undecodable bytes are shown as `\\xNN`), and it says when the detector runs
        degraded."""
        text = self.ledger.render(self.task)
        degraded = self._degraded()
        if degraded:
            text += f"\ndetector degraded: {degraded.text()} (reads are re-run, not reused)"
        return printable(text)

    def _detect(self, moment: Moment, errors: list[str]) -> Changes:
        """The detector's report at `moment` (`Before`/`After` a command, or None: a poll of
        what changed since its last report). A detector that fails cannot prove anything
        unchanged: its report becomes "unknown scope", the command still runs, and the error
        is kept for the Step. The first report, with no baseline to compare with, is unknown
        scope, and costs nothing while the ledger holds no step to make stale."""
        try:
            changes, baseline, problem = self._reports.changes_since(self.root, self._baseline, moment)
        except ReportFailed as failed:
            errors.append(f"{self.detector_name}.{failed}")
            return UNKNOWN_SCOPE
        except Exception as error:  # a user's detector may raise anything
            errors.append(f"{self.detector_name}.changes_since: {error!r}")
            return UNKNOWN_SCOPE
        if not isinstance(changes, Changes):
            errors.append(f"{self.detector_name}.changes_since returned {type(changes).__name__}, not a Changes")
            return UNKNOWN_SCOPE
        first = self._baseline is None and self.ledger.step == 0
        self._baseline = baseline
        if first:
            return Changes()
        if problem is not None:
            self._problem = problem
        return changes

    @property
    def detector_name(self) -> str:
        return str(getattr(self.detector, "name", type(self.detector).__name__))

    def _record_before(self, changes: Changes, before: list[Changes]) -> None:
        self.ledger.modify(changes)
        before.append(changes)


def _still_alive(jobs: set[Descendants]) -> set[Descendants]:
    """The jobs with a live process left; the others are released."""
    alive = set()
    for job in jobs:
        if job.alive():
            alive.add(job)
        else:
            job.release()
    return alive


def _stop(jobs: set[Descendants]) -> None:
    for job in jobs:
        job.kill()


def printable(text: str) -> str:
    """`text` as valid UTF-8: bytes smuggled in by surrogateescape (undecodable file names)
    become `\\xNN`, any other lone surrogate `\\udNNN`."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


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
