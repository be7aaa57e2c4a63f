"""The safety oracle: run commands through a `Runtime` in a real repository and check each step.

Four properties are checked at every step (their names are the `property` field of a
counterexample file):

  reuse-is-fresh              a Reuse returns the bytes and exit status that running the command
                              right now prints (the oracle runs it for real)
  read-only-changes-nothing   a command the classifier calls read-only leaves contents and
                              metadata (all of lstat but atime) of every path untouched
  detector-covers-changes     every path that really changed is in the detector's report, or
                              the report says unknown
  spec-agrees                 `ledger_spec`, fed the same events, reaches the same verdict (and
                              reused output) and the same state as the Runtime's ledger

The ground truth is `ledger_properties.ground_truth`, which shares no code with the detectors it
judges: every entry lstat'ed, every regular file hashed (through a `HashCache` that re-hashes
any file whose identity or timestamps moved, or that changed too recently to be trusted),
`.git/` included.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Iterator, Mapping

import attrs

import ledger_spec
from ledger_impl.execution import command_environment, run_command
from ledger_impl.probe.dependencies import CTIME_SLACK_NS
from ledger_impl.runtime import Runtime
from ledger_impl.runtime import Step as RuntimeStep
from ledger_spec import Policy

from . import ground_truth, sweeper
from .ground_truth import HashCache, Tree, owed_by_key
from .shell_strategies import (
    GROUP_FILE, GROUP_NAME, OUTSIDE_PLACEHOLDER, OWNER_NAMES, PASSWD_FILE, ROOT_PLACEHOLDER, SESSION_FILES, START_FILE,
    START_MORE, ZONE_FILE, ZONEINFO, ZONES, WorkspaceSetup, passwd_line,
)
from .spec_driver import drive_step
from .strategies import Step

REUSE_IS_FRESH = "reuse-is-fresh"
READ_ONLY_CHANGES_NOTHING = "read-only-changes-nothing"
DETECTOR_COVERS_CHANGES = "detector-covers-changes"
SPEC_AGREES = "spec-agrees"
PROPERTIES: tuple[str, ...] = (REUSE_IS_FRESH, READ_ONLY_CHANGES_NOTHING, DETECTOR_COVERS_CHANGES, SPEC_AGREES)

# How long a step may run: far above any command the grammar draws, low enough that a hung
# command (a pager, a read from stdin) does not stall the hunt.
STEP_TIMEOUT = 20.0
OUTPUT_LIMIT = 1 << 20
# How long teardown waits for killed background jobs to be gone (SIGKILL takes effect at once,
# unless a process is stuck in the kernel).
BACKGROUND_GRACE = 2.0

GIT_ENVIRONMENT: dict[str, str] = {
    "GIT_AUTHOR_NAME": "Ledger Hunt",
    "GIT_AUTHOR_EMAIL": "hunt@example.invalid",
    "GIT_COMMITTER_NAME": "Ledger Hunt",
    "GIT_COMMITTER_EMAIL": "hunt@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "LC_ALL": "C.UTF-8",
}


FINGERPRINT_LINE: contextvars.ContextVar[bool] = contextvars.ContextVar("FINGERPRINT_LINE", default=True)
"""Whether checked sessions run the Runtime with the observation fingerprint (as shipped).
Off, the detector and classifier are judged alone: the defense-in-depth measurement and the
replay of counterexamples found before the fingerprint existed."""


PROBE_LINE: contextvars.ContextVar[bool] = contextvars.ContextVar("PROBE_LINE", default=True)
"""Whether checked sessions run the Runtime with the probe (`ledger_impl.probe`, as shipped).
Off: the replay of counterexamples found before the probe existed, which show what it closes."""


@contextlib.contextmanager
def _switched(line: contextvars.ContextVar[Any], enabled: object) -> Iterator[None]:
    token = line.set(enabled)
    try:
        yield
    finally:
        line.reset(token)


PROCESS_TRACKING_LINE: contextvars.ContextVar[str | None] = contextvars.ContextVar("PROCESS_TRACKING_LINE", default=None)
"""How checked sessions follow a command's descendants (`ledger_impl.descendants`): None for the
best available (as shipped), or "session", the fallback where no cgroup can be made: the replay
of counterexamples that show what only a cgroup closes."""


def process_tracking_line(how: str | None) -> contextlib.AbstractContextManager[None]:
    """Run the checked sessions opened inside with this process tracking."""
    return _switched(PROCESS_TRACKING_LINE, how)


def probe_line(enabled: bool) -> contextlib.AbstractContextManager[None]:
    """Run the checked sessions opened inside with the probe on or off."""
    return _switched(PROBE_LINE, enabled)


def fingerprint_line(enabled: bool) -> contextlib.AbstractContextManager[None]:
    """Run the checked sessions opened inside with the fingerprint on or off."""
    return _switched(FINGERPRINT_LINE, enabled)


@contextlib.contextmanager
def hunt_environment() -> Iterator[None]:
    """Fixed git identity and dates, no user config, and this interpreter's `python3` first.

    The Runtime runs commands with the inherited environment, so the hunt sets it here and
    restores it after: without it `git stash` needs a user identity and `python3` might be a
    slow version-manager shim.
    """
    saved = dict(os.environ)
    os.environ.update(GIT_ENVIRONMENT)
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@attrs.frozen
class Placement:
    """Where a workspace was materialized: the root and the directory outside it."""

    root: pathlib.Path
    outside: pathlib.Path

    def render(self, template: str) -> str:
        """A command template with its placeholders replaced by this placement's directories."""
        return template.replace(ROOT_PLACEHOLDER, str(self.root)).replace(OUTSIDE_PLACEHOLDER, str(self.outside))

    def unrender(self, text: str) -> str:
        """Text with this placement's directories put back as placeholders (for stored files)."""
        return text.replace(str(self.root), ROOT_PLACEHOLDER).replace(str(self.outside), OUTSIDE_PLACEHOLDER)


def session_environment(placement: "Placement", extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a checked session's commands run with: the hunt's, plus a HOME and a
    directory first on PATH of its own, both outside the root, so that the grammar can edit
    git's global configuration and shadow a program on PATH without touching the machine's.

    `extra` (a setup's `environment`) is set on top, its placeholders rendered; an extra PATH
    goes in front of the session's, which keeps the programs the commands need findable."""
    environment = dict(os.environ)
    environment.pop("GIT_CONFIG_GLOBAL", None)
    environment.pop("XDG_CONFIG_HOME", None)
    environment["HOME"] = str(placement.outside / "home")
    environment["PATH"] = f"{placement.outside / 'bin'}{os.pathsep}{environment.get('PATH', '')}"
    for name, value in (extra or {}).items():
        rendered = placement.render(value)
        environment[name] = f"{rendered}{os.pathsep}{environment['PATH']}" if name == "PATH" else rendered
    return environment


def materialize(setup: WorkspaceSetup, parent: pathlib.Path) -> Placement:
    """Write `setup` under `parent` (`ws/` a git repository with one commit, `outside/`)."""
    root = parent / "ws"
    outside = parent / "outside"
    for base, files in ((root, setup.files), (outside, setup.outside)):
        base.mkdir(parents=True, exist_ok=True)
        for key, text in files.items():
            path = base / key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
    (outside / "home").mkdir(exist_ok=True)
    (outside / "bin").mkdir(exist_ok=True)
    _write_session_files(setup.environment, outside)
    written = time.monotonic()
    if setup.git:
        # An empty template: no sample hooks, fewer files to hash at every step. The first
        # commit starts no `git maintenance run --auto` (a process of its own, which a
        # repository this small never needs): the steps' own commits still do.
        initial_commit = ["-c", "maintenance.auto=false", "commit", "-q", "--allow-empty", "-m", "initial"]
        for args in (["init", "-q", "-b", "main", "--template="], ["add", "-A"], initial_commit):
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env={**os.environ, **GIT_ENVIRONMENT})
    if setup.environment:
        # A variable may name a file written above that every command reads (a start file, a
        # zone, a passwd database): written within the probe's ctime slack of the first
        # command's start, it would count as changed while it ran, and no first read would serve.
        time.sleep(max(0.0, written + 2 * CTIME_SLACK_NS / 1e9 - time.monotonic()))
    return Placement(root.resolve(), outside.resolve())


def _write_session_files(environment: Mapping[str, str], outside: pathlib.Path) -> None:
    """The start files, the zone file and the user databases of `SESSION_FILES`, those
    `environment` names, written under `outside` (the `start-file`, `zone-file` and
    `passwd-name` idioms rewrite them)."""
    names = {name for name, value in SESSION_FILES.items() if environment.get(name) == value}
    if "BASH_ENV" in names:
        (outside / START_FILE).write_text(f". {shlex.quote(str(outside.resolve() / START_MORE))}\n")
        (outside / START_MORE).write_text("")
    if "TZ" in names:
        shutil.copyfile(pathlib.Path(ZONEINFO, ZONES[0]), outside / ZONE_FILE)
    if "NSS_WRAPPER_PASSWD" in names:
        uid, gid = str(os.getuid()), str(os.getgid())
        (outside / PASSWD_FILE).write_text(passwd_line(OWNER_NAMES[0], uid, gid) + "\n")
        (outside / GROUP_FILE).write_text(f"{GROUP_NAME}:x:{gid}:\n")


@attrs.frozen
class Violation:
    """A property that failed at step `step` (0-based), with what was expected and observed."""

    property: str
    step: int
    command: str
    expected: Mapping[str, object]
    observed: Mapping[str, object]
    message: str


@attrs.frozen
class StepRecord:
    """What one checked step did: the command as typed, the verdict and what the agent saw."""

    index: int
    template: str
    command: str
    verdict: str
    output: str
    exit_code: int
    note: str | None
    category: str
    changes: tuple[str, ...]
    unknown: bool
    violation: Violation | None
    detector_error: str | None = None  # the Runtime's Step.detector_error: why the detector could not report


class CheckedSession:
    """A Runtime over a materialized workspace, with every step checked against the oracle."""

    def __init__(
        self, placement: Placement, detector: object, policy: Policy | None = None, environment: Mapping[str, str] | None = None
    ) -> None:
        self.placement = placement
        self.policy = policy if policy is not None else Policy()
        self.environment = session_environment(placement, environment)
        self.runtime = Runtime(
            placement.root, detector, self.policy, timeout=STEP_TIMEOUT, output_limit=OUTPUT_LIMIT,
            environment=self.environment, fingerprint=FINGERPRINT_LINE.get(), probe=PROBE_LINE.get(),
            process_tracking=PROCESS_TRACKING_LINE.get(),
        )
        self.spec_state: ledger_spec.State = ledger_spec.INITIAL
        self.hashes = HashCache(ground_truth.racy_window_for(placement.root))
        self.truth: Tree = self._look()
        self.records: list[StepRecord] = []
        # Changes seen by the ground truth but not yet owed by the detector: while a background
        # writer may be alive, a write can land after `after()` returned and is owed at the
        # next step, so coverage is checked only at a step with no such writer around.
        self._owed: set[str] = set()
        self._reported: set[str] = set()
        self._unknown = False
        self._changed_any: set[str] = set()

    def set_environment(self, name: str, value: str | None) -> None:
        """Change one variable between two commands (its placeholders rendered; @PATH@: the
        session's PATH), as an agent harness that sets variables per call does: the commands
        and the oracle's own runs use it."""
        if value is None:
            self.environment.pop(name, None)
        else:
            self.environment[name] = self.placement.render(value).replace("@PATH@", self.environment.get("PATH", ""))
        self.runtime.environment = dict(self.environment)

    def _look(self) -> Tree:
        return ground_truth.look(self.placement.root, self.hashes)

    # The oracle needs to know when a write may still land outside any step: the Runtime's
    # background jobs as of its last step.
    def _background(self) -> frozenset[object]:
        return frozenset(getattr(self.runtime, "background_jobs", ()) or ())

    def step(self, template: str) -> StepRecord:
        index = len(self.records)
        command = self.placement.render(template)
        background_before = self._background()
        step = self.runtime.step(command)
        background_after = self._background()
        launched = background_after - background_before
        now = self._look()
        changed = ground_truth.changed(self.truth, now)
        owed = owed_by_key(self.truth, now, changed)
        self.truth = now

        violation = self._check_spec(index, command, step, launched)
        if violation is None and step.verdict == "reuse":
            violation = self._check_reuse(index, command, step)
        writer_around = bool(background_before or background_after)
        if violation is None and step.command.read_only and step.verdict != "reuse" and not writer_around and changed:
            violation = Violation(
                READ_ONLY_CHANGES_NOTHING,
                index,
                command,
                {"changed": []},
                {"changed": sorted(changed), "category": step.command.category.value},
                f"{command!r} is classified {step.command.category.value} but changed {sorted(changed)}",
            )
        if violation is None:
            violation = self._check_coverage(index, command, step, changed, owed, writer_around)

        reports = list(step.changes_before) + [step.changes]
        record = StepRecord(
            index=index,
            template=template,
            command=command,
            verdict=step.verdict,
            output=step.output,
            exit_code=step.exit_code,
            note=step.note,
            category=step.command.category.value,
            changes=tuple(sorted(set().union(*(r.paths for r in reports)))),
            unknown=any(r.unknown for r in reports),
            violation=violation,
            detector_error=step.detector_error,
        )
        self.records.append(record)
        return record

    def _check_spec(self, index: int, command: str, step: RuntimeStep, launched: frozenset[int]) -> Violation | None:
        def recorded(_proposal: RuntimeStep, _decision: ledger_spec.Decision) -> Step:
            # The Runtime records an incomplete result (never launched, timed out, truncated,
            # left a background job) without its target, so that it is never served; the spec
            # is fed the same, with the fingerprint the Runtime recorded.
            incomplete = bool(launched) or "\n[ledger] timed out after" in step.output or "\n[ledger] output truncated:" in step.output
            recorded_command = attrs.evolve(step.command, target=None) if incomplete else step.command
            if step.recorded is not None and step.recorded.target is None:
                recorded_command = step.recorded
            return Step(recorded_command, step.output, step.exit_code, step.changes)

        transition = drive_step(
            self.spec_state,
            step,
            self.policy,
            recorded,
            fingerprint=step.fingerprint,
            recorded_fingerprint=step.recorded_fingerprint,
            changes_before=step.changes_before,
        )
        decision = transition.decision
        expected: dict[str, object] = {"verdict": decision.verdict.value}
        observed: dict[str, object] = {"verdict": step.verdict}
        if isinstance(decision, ledger_spec.Reuse) and step.verdict == "reuse":
            expected.update(output=decision.output, exit_code=decision.exit_status)
            observed.update(output=step.output, exit_code=step.exit_code)
        if expected != observed:
            return Violation(SPEC_AGREES, index, command, expected, observed, f"spec says {expected}, runtime did {observed}")
        self.spec_state = transition.after
        ledger_state = self.runtime.ledger.snapshot()
        if ledger_state != transition.after:
            return Violation(
                SPEC_AGREES,
                index,
                command,
                {"state": _state_summary(transition.after)},
                {"state": _state_summary(ledger_state)},
                "the runtime's ledger and the spec fed the same events hold different states",
            )
        return None

    def _check_reuse(self, index: int, command: str, step: RuntimeStep) -> Violation | None:
        before = self._look()
        fresh = run_command(
            command, self.placement.root, STEP_TIMEOUT, OUTPUT_LIMIT, command_environment(self.environment)
        )
        after = self._look()
        self.truth = after
        changed = ground_truth.changed(before, after)
        if changed:
            return Violation(
                READ_ONLY_CHANGES_NOTHING,
                index,
                command,
                {"changed": []},
                {"changed": sorted(changed), "category": step.command.category.value},
                f"running the reused command {command!r} for real changed {sorted(changed)}",
            )
        if fresh.output != step.output or fresh.exit_code != step.exit_code:
            return Violation(
                REUSE_IS_FRESH,
                index,
                command,
                {"output": fresh.output, "exit_code": fresh.exit_code},
                {"output": step.output, "exit_code": step.exit_code},
                f"{command!r} was reused ({step.note}) but running it now prints something else",
            )
        return None

    def _check_coverage(
        self, index: int, command: str, step: RuntimeStep, changed: frozenset[str], owed: frozenset[str], writer_around: bool
    ) -> Violation | None:
        self._owed |= owed
        self._changed_any |= changed
        for report in (*step.changes_before, step.changes):
            self._reported |= report.paths
            self._unknown = self._unknown or report.unknown
        if writer_around:
            return None
        missing = self._owed - self._reported
        if self._changed_any and not self._reported and not missing:
            missing = frozenset(self._changed_any)  # only listings changed, and nothing was reported
        unknown = self._unknown
        self._owed, self._reported, self._unknown, self._changed_any = set(), set(), False, set()
        if missing and not unknown:
            return Violation(
                DETECTOR_COVERS_CHANGES,
                index,
                command,
                {"changed": sorted(changed | missing)},
                {"reported": sorted(step.changes.paths), "unknown": False, "missing": sorted(missing)},
                f"after {command!r} the detector did not report {sorted(missing)}",
            )
        return None

    def close(self) -> None:
        """Kill the background jobs left, then wait briefly until they are gone, so that no
        writer outlives us or writes into the workspace while it is removed.

        They are not waited for first: every check of the run is done by the time it closes
        (a step with a writer around defers only the coverage check, which a closing run never
        makes), so letting a sleeping writer finish only cost time, up to its whole sleep.
        """
        jobs = self._background()
        for job in jobs:
            job.kill()  # type: ignore[attr-defined]
        deadline = time.monotonic() + BACKGROUND_GRACE
        for job in jobs:
            while job.alive() and time.monotonic() < deadline:  # type: ignore[attr-defined]
                time.sleep(0.002)
        self.runtime.close()


def _state_summary(state: ledger_spec.State) -> dict[str, object]:
    return {
        "step": state.step,
        "total": state.total,
        "wildcard": state.wildcard,
        "observations": len(state.observations),
        "history": [r.verdict.value for r in state.history],
    }


def workspace_base() -> str:
    """Where a hunt makes its workspaces: the temporary directory, except that the default /tmp
    becomes /var/tmp. The probe's sandbox has a private /tmp into which only the root is bound
    back, so under /tmp the directory outside the root (git's config, the shadowed programs,
    the start and zone files) would be hidden from it: a read that depends on it would then
    never be served for that reason alone, and the hunt would not test its traced set. An
    explicit TMPDIR is kept."""
    base = tempfile.gettempdir()
    under_tmp = base == "/tmp" or base.startswith("/tmp/")
    if under_tmp and "TMPDIR" not in os.environ and os.access("/var/tmp", os.W_OK | os.X_OK):
        return "/var/tmp"
    return base


@contextlib.contextmanager
def checked_session(setup: WorkspaceSetup, detector: object, policy: Policy | None = None) -> Iterator[CheckedSession]:
    """A CheckedSession in a fresh temporary directory, removed (background jobs killed) after."""
    parent = pathlib.Path(tempfile.mkdtemp(prefix="ledger-hunt-", dir=workspace_base()))
    session: CheckedSession | None = None
    try:
        placement = materialize(setup, parent)
        session = CheckedSession(placement, detector, policy, setup.environment)
        yield session
    finally:
        # In the background during a hunt: nothing looks at the session or its workspace again.
        sweeper.remove(parent, session.close if session is not None else None)


def run_checked(
    setup: WorkspaceSetup,
    templates: list[str] | tuple[str, ...],
    detector: object,
    policy: Policy | None = None,
    on_record: "Callable[[StepRecord], None] | None" = None,
    present: "Callable[[StepRecord, Placement], StepRecord] | None" = None,
) -> list[StepRecord]:
    """Run `templates` in a fresh workspace, checking every step; stop after the first violation
    other than a missed change (a miss is reported and the run goes on, as the hunt does).
    `present`, if given, turns each record into what the caller keeps (before `on_record`)."""
    records: list[StepRecord] = []
    with hunt_environment(), checked_session(setup, detector, policy) as session:
        for template in templates:
            record = session.step(template)
            if present is not None:
                record = present(record, session.placement)
            records.append(record)
            if on_record is not None:
                on_record(record)
            if record.violation is not None and record.violation.property != DETECTOR_COVERS_CHANGES:
                break
    return records


def first_violation(records: list[StepRecord], prop: str) -> Violation | None:
    """The first violation of `prop` among `records`, if any."""
    for record in records:
        if record.violation is not None and record.violation.property == prop:
            return record.violation
    return None
