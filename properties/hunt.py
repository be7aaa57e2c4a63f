"""The safety hunt: a Hypothesis state machine driving real shell commands through a `Runtime`.

`make_hunt(detector_factory, profile)` builds a `RuleBasedStateMachine` class: each run
materializes a fresh git repository from `workspaces()`, then applies rules that read, re-read
(so that Reuse happens), edit through every idiom of `ledger_properties.shell_strategies`, write a
python script and run it later. Every step goes through `ledger_properties.oracle.CheckedSession`,
which checks the four safety properties; a violation raises, Hypothesis shrinks the run, and
the `ViolationLog` keeps the last failing run per property (Hypothesis replays the minimal
example last, so the last one is the shrunk one).

`run_hunt` runs the machine under a profile's budget, replays and minimizes each failing run
(`minimize` keeps only runs it replayed itself), and writes each as a counterexample file
through `ledger_properties.counterexample`. `ledger check-detector` and `ledger verify` call it.

Whose fault is an exception: the detector under test is called by the Runtime, which turns
its exceptions into `Step.detector_error` (counted in `HuntReport.detector_errors`); its
factory is wrapped so that a raise there is a `DetectorFailed`. Any other exception out of
`run_hunt` is the harness's own.
"""

from __future__ import annotations

import collections
import contextlib
import pathlib
import random
import posixpath
import shlex
import time
from typing import Callable, Final, Mapping, Sequence

import attrs
import hypothesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from ledger_spec import Policy

from .counterexample import dump_into, from_run, to_json
from .oracle import (
    DETECTOR_COVERS_CHANGES,
    PROPERTIES,
    REUSE_IS_FRESH,
    FINGERPRINT_LINE,
    PROBE_LINE,
    CheckedSession,
    StepRecord,
    Violation,
    checked_session,
    fingerprint_line,
    first_violation,
    hunt_environment,
    probe_line,
)
from .profiles import Profile, default_workers, profile as named_profile
from .replay import run_recorded
from .shell_strategies import (
    DEFAULT_POOL,
    DESCENDANT_IDIOMS,
    DETECTOR_READ_IDIOMS,
    EDIT_IDIOMS,
    FINGERPRINT_CLASS_IDIOMS,
    PROBE_CLASS_EDIT_IDIOMS,
    PROBE_CLASS_READ_IDIOMS,
    READ_IDIOMS,
    RUN_TOOL_SCRIPT,
    SESSION_FILES,
    SPELLINGS,
    WorkspaceSetup,
    edit_commands,
    read_commands,
    tool_scripts,
    workspaces,
)
from .sweeper import sweeping
from ledger_spec.errors import DetectorFailure, PropertyViolation

DetectorFactory = Callable[[], object]


class DetectorFailed(DetectorFailure):
    """The detector under test could not be made: its factory raised."""


@attrs.frozen
class GuardedFactory:
    """A detector factory whose exceptions become DetectorFailed (the detector's fault, not the
    harness's). A class, not a closure, so that a parallel hunt can send it to its workers."""

    factory: DetectorFactory

    def __call__(self) -> object:
        try:
            return self.factory()
        except Exception as error:  # noqa: BLE001 - the user's factory; named, never swallowed
            raise DetectorFailed(f"the detector factory raised {type(error).__name__}: {error}") from error


class HuntViolation(PropertyViolation, AssertionError):
    """A safety property failed; one subclass per property so Hypothesis shrinks each apart."""


class StaleReuse(HuntViolation):
    pass


class ReadOnlyWrote(HuntViolation):
    pass


class DetectorMissedChange(HuntViolation):
    pass


class SpecDisagrees(HuntViolation):
    pass


_EXCEPTIONS: dict[str, type[HuntViolation]] = {
    "reuse-is-fresh": StaleReuse,
    "read-only-changes-nothing": ReadOnlyWrote,
    "detector-covers-changes": DetectorMissedChange,
    "spec-agrees": SpecDisagrees,
}


@attrs.frozen
class FailingRun:
    """A run that violated a property: the starting workspace, the steps up to the violation."""

    setup: WorkspaceSetup
    steps: tuple[StepRecord, ...]
    violation: Violation


# How long Hypothesis may shrink after the first violation, per profile. Shrinking reruns
# whole sessions on a real filesystem; past this budget the remaining runs are skipped and the
# smallest failing run seen so far is kept.
SHRINK_SECONDS: dict[str, float] = {"ci": 15.0, "dev": 60.0, "thorough": 180.0}


# A crash of the oracle or the Runtime is not a detector's violation and is not worth
# shrinking (each attempt runs a session): after this many, every further run is skipped, which
# still leaves Hypothesis room to tell distinct crashes apart.
CRASHES_TO_SHOW = 5


class ViolationLog:
    """The smallest failing run per property, and counters for the progress display.

    In a parallel hunt each worker has its own log; `shared_clock` is a file all of them see,
    holding the time (`time.monotonic()`, one clock for every process of the machine) of the
    first violation any worker found, so that every worker stops once the shrink budget is
    spent, not only the one that found it.
    """

    def __init__(
        self,
        on_step: Callable[[int, int], None] | None = None,
        shrink_seconds: float = 40.0,
        shared_clock: pathlib.Path | None = None,
    ) -> None:
        self.last: dict[str, FailingRun] = {}
        self.examples = 0
        self.steps = 0
        self.on_step = on_step
        self.shrink_seconds = shrink_seconds
        self.shared_clock = shared_clock
        self.first_violation_at: float | None = None
        self.crashes = 0
        self.first_crash: Exception | None = None
        self.detector_errors: collections.Counter[str] = collections.Counter()

    def record(self, run: FailingRun) -> None:
        """Keep `run` if it is the smallest failing run of its property so far.

        Hypothesis only tries candidates smaller than its current best, but with several
        properties failing the calls interleave, so the size is compared here.
        """
        if self.first_violation_at is None:
            self.first_violation_at = time.monotonic()
            if self.shared_clock is not None and not self.shared_clock.exists():
                self.shared_clock.write_text(repr(self.first_violation_at))
        kept = self.last.get(run.violation.property)
        if kept is None or _size(run) <= _size(kept):
            self.last[run.violation.property] = run

    def out_of_time(self) -> bool:
        """Whether the shrink budget is spent (counted from the first violation of any worker)."""
        if self.first_violation_at is None and self.shared_clock is not None:
            try:
                self.first_violation_at = float(self.shared_clock.read_text())
            except (OSError, ValueError):
                pass  # no violation yet, or its time is being written: look again next run
        return self.first_violation_at is not None and time.monotonic() - self.first_violation_at > self.shrink_seconds

    def count_step(self, record: StepRecord | None = None) -> None:
        self.steps += 1
        error = getattr(record, "detector_error", None)
        if error:
            self.detector_errors[error] += 1
        if self.on_step is not None:
            self.on_step(self.examples, self.steps)


def _size(run: FailingRun) -> tuple[int, int]:
    return (len(run.steps), sum(len(record.template) for record in run.steps))


@attrs.frozen
class Grammar:
    """The knobs of the command grammar a hunt draws from."""

    read_idioms: Sequence[str] = DETECTOR_READ_IDIOMS
    edit_idioms: Sequence[str] = EDIT_IDIOMS
    pool: Sequence[str] = DEFAULT_POOL
    spellings: Sequence[str] = SPELLINGS
    session_files: bool = False
    """Give every other run `SESSION_FILES` as its environment: a start file that sources
    another, and a zone file, outside the root (what the `start-file` and `zone-file` idioms
    edit). Off, the session's environment stays the machine's."""


def make_hunt(
    detector_factory: DetectorFactory,
    profile: Profile,
    *,
    log: ViolationLog | None = None,
    grammar: Grammar = Grammar(),
    policy: Policy | None = None,
    stale_reads_only: bool = False,
) -> type[RuleBasedStateMachine]:
    """A state-machine class hunting violations with detectors made by `detector_factory`.

    With `stale_reads_only`, a missed change does not fail the run by itself (it is still
    checked, and still reported if the run fails otherwise): the hunt then looks for the stale
    Reuse a miss leads to, instead of stopping at the first miss. For documenting a detector's
    failure mode; a detector check keeps it off.
    """
    violation_log = log if log is not None else ViolationLog()

    class SafetyHunt(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self._exit = contextlib.ExitStack()
            self.session: CheckedSession | None = None
            self.setup: WorkspaceSetup | None = None
            self.reads: list[str] = []
            self.pool: list[str] = list(grammar.pool)
            self.edit_idioms: list[str] = list(grammar.edit_idioms)
            # A missed change is reported at the end of the run, unless the run goes on to a
            # stale Reuse, the graver outcome it usually leads to: Hypothesis then shrinks
            # both, and the counterexample files show the stale read, not just the miss.
            self.missed: FailingRun | None = None
            self.raised = False

        @initialize(setup=workspaces(), data=st.data())
        def start(self, setup: WorkspaceSetup, data: st.DataObject) -> None:
            # Out of shrink budget, or the hunt's own code keeps crashing: the run is skipped
            # (invalid), so shrinking ends quickly. A crash is raised as found, unshrunk.
            hypothesis.assume(not violation_log.out_of_time() and violation_log.crashes < CRASHES_TO_SHOW)
            violation_log.examples += 1
            if grammar.session_files and data.draw(st.booleans(), "start and zone files"):
                setup = attrs.evolve(setup, environment={**setup.environment, **SESSION_FILES})
            self.setup = setup
            # Swarm testing: each run works on a few files with a few edit idioms, so that a
            # read, an edit and a re-read of the same file (what a stale Reuse needs) are
            # likely, and idioms that mask each other (an unknown-scope step resets
            # everything) are often absent.
            self.pool = data.draw(st.lists(st.sampled_from(grammar.pool), min_size=1, max_size=3, unique=True), "pool")
            self.edit_idioms = data.draw(
                st.lists(st.sampled_from(grammar.edit_idioms), min_size=1, max_size=5, unique=True), "edit idioms"
            )
            try:
                self.session = self._exit.enter_context(checked_session(setup, detector_factory(), policy))
            except Exception as crash:
                violation_log.crashes += 1
                violation_log.first_crash = violation_log.first_crash or crash
                raise

        @rule(data=st.data())
        def read(self, data: st.DataObject) -> None:
            command = data.draw(read_commands(pool=self.pool, idioms=grammar.read_idioms, spellings=grammar.spellings))
            self.reads.append(command)
            self._step(command)

        @precondition(lambda self: bool(self.reads))
        @rule(data=st.data())
        def read_again(self, data: st.DataObject) -> None:
            """Repeat an earlier read: the only way Reuse gets a chance to be wrong."""
            self._step(data.draw(st.sampled_from(self.reads)))

        @rule(data=st.data())
        def edit(self, data: st.DataObject) -> None:
            contents = self._contents()
            self._step(
                data.draw(edit_commands(pool=self.pool, idioms=self.edit_idioms, contents=contents, spellings=grammar.spellings))
            )

        @rule(data=st.data())
        def edit_another_way(self, data: st.DataObject) -> None:
            """Any idiom on any file: what the run's swarm subset leaves out still happens."""
            contents = self._contents()
            self._step(
                data.draw(edit_commands(pool=grammar.pool, idioms=grammar.edit_idioms, contents=contents, spellings=grammar.spellings))
            )

        @rule(data=st.data())
        def write_tool_script(self, data: st.DataObject) -> None:
            self._step(data.draw(tool_scripts(pool=self.pool)))

        @rule()
        def run_tool_script(self) -> None:
            self._step(RUN_TOOL_SCRIPT)

        def _contents(self) -> dict[str, str]:
            """Current text of the pool's files, so a drawn patch can apply."""
            assert self.session is not None
            root = self.session.placement.root
            contents = {}
            for key in grammar.pool:
                try:
                    contents[key] = (root / key).read_text("utf-8")
                except (OSError, UnicodeDecodeError):
                    pass
            return contents

        def _step(self, template: str) -> None:
            assert self.session is not None and self.setup is not None
            try:
                record = self.session.step(template)
            except Exception as crash:
                violation_log.crashes += 1
                violation_log.first_crash = violation_log.first_crash or crash
                raise
            violation_log.count_step(record)
            if record.violation is None:
                return
            run = FailingRun(self.setup, tuple(self.session.records), record.violation)
            if record.violation.property == DETECTOR_COVERS_CHANGES:
                self.missed = self.missed or run
                return
            violation_log.record(run)
            self.raised = True
            raise _EXCEPTIONS[record.violation.property](record.violation.message)

        def teardown(self) -> None:
            self._exit.close()
            if self.missed is not None and not self.raised and not stale_reads_only:
                violation_log.record(self.missed)
                raise DetectorMissedChange(self.missed.violation.message)

    SafetyHunt.__name__ = SafetyHunt.__qualname__ = "SafetyHunt"
    return SafetyHunt


def hunt_settings(profile: Profile, **overrides: object) -> settings:
    """Hypothesis settings for a hunt: the profile's budget, no deadline, no example database
    unless one is passed (a parallel hunt shares one between its workers)."""
    values: dict[str, object] = dict(
        max_examples=profile.hunt_examples,
        stateful_step_count=profile.hunt_steps,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=True,
        print_blob=False,
        verbosity=hypothesis.Verbosity.quiet,
    )
    values.update(overrides)
    return settings(**values)  # type: ignore[arg-type]


FULL_GRAMMAR = Grammar(
    read_idioms=READ_IDIOMS + PROBE_CLASS_READ_IDIOMS,
    edit_idioms=EDIT_IDIOMS + FINGERPRINT_CLASS_IDIOMS + DESCENDANT_IDIOMS + PROBE_CLASS_EDIT_IDIOMS,
    session_files=True,
)
"""Every read idiom, including those with an open classifier fault, and every edit, including
those outside the root that only the fingerprint covers, background writers that leave bash's
process group or session, the clock edges, start files and zone file only the probe sees: what `ledger verify` hunts
(with the fingerprint and the probe on, as shipped)."""

TRACED_ONLY: Final = "traced-only"
"""The second hunt configuration of issue 19: the enumerated fingerprint off, the probe on, so
Reuse rests on the traced set alone (`run_verify_hunt(configuration=TRACED_ONLY)`)."""


def run_verify_hunt(
    profile: Profile | str | None = None,
    seed: int | None = None,
    out_dir: str | pathlib.Path | None = None,
    workers: int | None = 1,
    scheduler: str | None = None,
    database: str | pathlib.Path | None = None,
    configuration: str = "shipped",
) -> "HuntReport":
    """The hunt `ledger verify` runs: the default detector, the full grammar; as shipped, or
    `TRACED_ONLY` (the enumerated fingerprint off, Reuse on the probe's traced set alone); on a
    Dask cluster with `scheduler` (see `run_hunt`)."""
    from ledger_impl.detectors import default_detector

    if configuration not in ("shipped", TRACED_ONLY):
        raise ValueError(f"unknown hunt configuration {configuration!r}")
    return run_hunt(
        default_detector, profile, seed, out_dir, detector="ledger_impl.detectors:default_detector",
        grammar=FULL_GRAMMAR, command="ledger verify", workers=workers, scheduler=scheduler, database=database,
        fingerprint=configuration != TRACED_ONLY,
    )


# --- minimizing -------------------------------------------------------------------------------

# After Hypothesis, the failing run is cut down step by step by replaying it: cheaper and
# more thorough than shrinking the whole state machine on a real filesystem.
MINIMIZE_SECONDS: dict[str, float] = {"ci": 60.0, "dev": 120.0, "thorough": 300.0}
# Replays of a failing run before it is called unconfirmed (flaky) and dropped.
CONFIRM_ATTEMPTS = 3


def minimize(
    run: FailingRun, detector_factory: DetectorFactory, budget_seconds: float = 60.0, policy: Policy | None = None
) -> FailingRun | None:
    """The smallest variant of `run` (fewer steps, fewer setup files) that still violates its
    property, found by removing chunks of steps and then single files, while the budget lasts.

    Every run it returns is one it replayed itself (outputs as a replay of the file will see
    them); None if `run` itself does not fail again when replayed.
    """
    prop = run.violation.property
    deadline = time.monotonic() + budget_seconds

    def attempt(setup: WorkspaceSetup, templates: list[str]) -> FailingRun | None:
        records = run_recorded(setup, templates, detector_factory(), policy)
        violation = first_violation(records, prop)
        if violation is None:
            return None
        return FailingRun(setup, tuple(records[: violation.step + 1]), violation)

    # A run with a background writer depends on timing, which a loaded machine stretches: it is
    # confirmed if any of a few replays fails again.
    replayed = None
    for _ in range(CONFIRM_ATTEMPTS):
        replayed = attempt(run.setup, [record.template for record in run.steps])
        if replayed is not None:
            break
    if replayed is None:
        return None
    best = replayed
    chunk = max(1, len(best.steps) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        templates = [record.template for record in best.steps]
        start = len(templates) - chunk
        shrunk = False
        while start >= 0 and time.monotonic() < deadline:
            candidate = templates[:start] + templates[start + chunk :]
            found = attempt(best.setup, candidate) if candidate else None
            if found is not None:
                best, templates, shrunk = found, [record.template for record in found.steps], True
            start -= chunk
        if not shrunk:
            chunk //= 2
    for key in sorted(best.setup.files):
        if time.monotonic() >= deadline:
            break
        files = {k: v for k, v in best.setup.files.items() if k != key}
        found = attempt(attrs.evolve(best.setup, files=files), [record.template for record in best.steps])
        if found is not None and len(found.steps) <= len(best.steps):
            best = found
    return best


def escalate(
    run: FailingRun, detector_factory: DetectorFactory, budget_seconds: float = 30.0, policy: Policy | None = None
) -> FailingRun | None:
    """Turn a missed change into the stale read it allows, if it does: read each missed file
    just before the step that changed it and again just after, and see whether the second read
    is served stale. A stale read is what a user needs to see to believe the miss matters."""
    if run.violation.property != DETECTOR_COVERS_CHANGES:
        return None
    deadline = time.monotonic() + budget_seconds
    templates = [record.template for record in run.steps]
    at = run.violation.step
    for key in run.violation.observed.get("missing", []):  # type: ignore[union-attr]
        if time.monotonic() >= deadline or str(key).startswith(".git"):
            continue
        # A file read shows a changed file; a listing shows a created or deleted one.
        directory = posixpath.dirname(str(key)) or "."
        for read in (f"cat {shlex.quote(str(key))}", f"ls -l {shlex.quote(directory)}"):
            candidate = templates[:at] + [read] + templates[at : at + 1] + [read]
            records = run_recorded(run.setup, candidate, detector_factory(), policy)
            violation = first_violation(records, REUSE_IS_FRESH)
            if violation is not None:
                return FailingRun(run.setup, tuple(records[: violation.step + 1]), violation)
    return None


# --- running a hunt --------------------------------------------------------------------------


@attrs.frozen
class HuntReport:
    """What a hunt did: the counterexamples it found (documents, and files if written)."""

    detector: str
    profile: str
    seed: int
    examples: int
    steps: int
    seconds: float
    counterexamples: tuple[Mapping[str, object], ...]  # each a file's JSON document
    files: tuple[pathlib.Path, ...]
    unconfirmed: int = 0  # failing runs that did not fail again when replayed (flaky), not written
    detector_errors: Mapping[str, int] = attrs.field(factory=dict)  # Step.detector_error -> steps

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds if self.seconds > 0 else 0.0

    @property
    def found(self) -> bool:
        return bool(self.counterexamples)


def run_hunt(
    detector_factory: DetectorFactory,
    profile: Profile | str | None = None,
    seed: int | None = None,
    out_dir: str | pathlib.Path | None = None,
    *,
    detector: str | None = None,
    grammar: Grammar = Grammar(),
    command: str = "",
    on_step: Callable[[int, int], None] | None = None,
    max_examples: int | None = None,
    stale_reads_only: bool = False,
    workers: int | None = 1,
    database: str | pathlib.Path | None = None,
    fingerprint: bool = True,
    scheduler: str | None = None,
    probe: bool = True,
) -> HuntReport:
    """Hunt violations for detectors made by `detector_factory` under `profile`'s budget.

    `detector` names the factory as MODULE:FACTORY in the files written; `seed` makes the run
    repeatable for a given number of `workers` (one is drawn and reported when not given);
    `max_examples` overrides the profile's number of runs. With `workers` > 1 the runs are
    shared out to that many processes (see `parallel`); the factory must then be importable
    by reference, as a MODULE:FACTORY factory is. `database` is a Hypothesis example database
    directory: failing examples stored there by an earlier hunt are replayed first.
    `fingerprint=False` runs the Runtime without the observation fingerprint, `probe=False`
    without the probe; both off judge the detector and classifier alone. With `scheduler` (a
    Dask scheduler's address) the workers are tasks on that cluster (see `dask_hunt`), `workers`
    is the number of tasks (None: one per thread of the cluster) and `database` is on storage
    the workers share (default: beside Ledger's state). Locally, `workers=None` means one per core.
    """
    with fingerprint_line(fingerprint), probe_line(probe), sweeping():
        return _run_hunt(
            detector_factory, profile, seed, out_dir, detector=detector, grammar=grammar, command=command,
            on_step=on_step, max_examples=max_examples, stale_reads_only=stale_reads_only, workers=workers,
            database=database, scheduler=scheduler,
        )


def _run_hunt(
    detector_factory: DetectorFactory,
    profile: Profile | str | None,
    seed: int | None,
    out_dir: str | pathlib.Path | None,
    *,
    detector: str | None,
    grammar: Grammar,
    command: str,
    on_step: Callable[[int, int], None] | None,
    max_examples: int | None,
    stale_reads_only: bool,
    workers: int | None,
    database: str | pathlib.Path | None,
    scheduler: str | None,
) -> HuntReport:
    chosen = profile if isinstance(profile, Profile) else named_profile(profile)
    seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
    detector_factory = GuardedFactory(detector_factory)
    name = detector or f"{getattr(detector_factory.factory, '__module__', '?')}:{getattr(detector_factory.factory, '__qualname__', '?')}"
    budget = max_examples if max_examples is not None else chosen.hunt_examples
    shrink_seconds = SHRINK_SECONDS.get(chosen.name, 60.0)
    job = HuntJob(
        detector_factory, chosen, seed, budget, grammar, stale_reads_only, shrink_seconds, FINGERPRINT_LINE.get(),
        PROBE_LINE.get(),
    )
    if scheduler is None and workers is None:
        workers = default_workers()
    started = time.monotonic()
    try:
        if scheduler is not None:
            from .dask_hunt import default_database, run_on_scheduler

            examples, steps, found, detector_errors = run_on_scheduler(
                job, scheduler, pathlib.Path(database) if database is not None else default_database(), on_step, workers
            )
        elif workers is not None and workers > 1:
            from .parallel import run_in_workers

            examples, steps, found, detector_errors = run_in_workers(
                job, workers, on_step, pathlib.Path(database) if database is not None else None
            )
        else:
            log = ViolationLog(on_step, shrink_seconds)
            examples_db = DirectoryBasedExampleDatabase(str(database)) if database is not None else None
            run_machine(job, log, examples_db)
            examples, steps, found, detector_errors = log.examples, log.steps, list(log.last.values()), dict(log.detector_errors)
    except BaseExceptionGroup as group:  # type: ignore[name-defined]
        failed, _ = group.split(DetectorFailed)
        if failed is None:
            raise
        while isinstance(failed, BaseExceptionGroup):  # type: ignore[name-defined]
            failed = failed.exceptions[0]
        raise failed from group  # the detector's fault is named as such, whatever else broke
    minimize_seconds = MINIMIZE_SECONDS.get(chosen.name, 60.0)
    minimized = [minimize(run, detector_factory, minimize_seconds) for run in _smallest_per_property(found)]
    runs = [run for run in minimized if run is not None]
    if runs and not any(run.violation.property == REUSE_IS_FRESH for run in runs):
        stale = [found for run in runs if (found := escalate(run, detector_factory)) is not None]
        runs += [run for run in (minimize(found, detector_factory, minimize_seconds) for found in stale[:1]) if run is not None]
    seconds = time.monotonic() - started
    found_by = {
        "tool": "hypothesis", "seed": seed, "profile": chosen.name, "command": command,
        "fingerprint": FINGERPRINT_LINE.get(), "probe": PROBE_LINE.get(),
    }
    counterexamples = [from_run(run.setup, run.steps, run.violation, detector=name, found_by=found_by) for run in runs]
    files: tuple[pathlib.Path, ...] = ()
    if out_dir is not None and counterexamples:
        files = tuple(dump_into(counterexample, out_dir) for counterexample in counterexamples)
    return HuntReport(
        name, chosen.name, seed, examples, steps, seconds,
        tuple(to_json(counterexample) for counterexample in counterexamples), files,
        unconfirmed=minimized.count(None), detector_errors=detector_errors,
    )


@attrs.frozen
class HuntJob:
    """One hunt's parameters, as a worker process receives them."""

    detector_factory: DetectorFactory
    profile: Profile
    seed: int
    max_examples: int
    grammar: Grammar
    stale_reads_only: bool
    shrink_seconds: float
    fingerprint: bool = True  # the Runtime's observation fingerprint on (as shipped) or off
    probe: bool = True  # the Runtime's probe on (as shipped) or off


def run_machine(job: HuntJob, log: ViolationLog, database: object | None = None) -> None:
    """Run the hunt's state machine once under `job`'s budget; violations land in `log`.

    A crash of the hunt's own code is raised: it must never read as "no violation".
    """
    machine = hypothesis.seed(job.seed)(
        make_hunt(job.detector_factory, job.profile, log=log, grammar=job.grammar, stale_reads_only=job.stale_reads_only)
    )
    with hunt_environment(), fingerprint_line(job.fingerprint), probe_line(job.probe), sweeping():
        try:
            run_state_machine_as_test(
                machine, settings=hunt_settings(job.profile, max_examples=job.max_examples, database=database)
            )
        except HuntViolation:
            pass  # the log holds the minimized runs
        except BaseExceptionGroup as group:  # type: ignore[name-defined]
            # Several distinct failures: violations are in the log; anything else is a crash
            # of the hunt itself, which must never read as "no violation".
            _, crashes = group.split(HuntViolation)
            if crashes is not None:
                raise crashes
        except hypothesis.errors.Flaky:
            if log.first_crash is not None:
                raise log.first_crash  # its replay was skipped, with every run after a few crashes
            if not log.last:
                raise  # a failure that did not recur, and that no violation explains


def _smallest_per_property(runs: Sequence[FailingRun]) -> list[FailingRun]:
    """One failing run per property, the smallest (workers may each have found one)."""
    kept: dict[str, FailingRun] = {}
    for run in runs:
        prop = run.violation.property
        if prop not in kept or _size(run) < _size(kept[prop]):
            kept[prop] = run
    return list(kept.values())


__all__ = [
    "PROPERTIES",
    "DetectorFailed",
    "FailingRun",
    "GuardedFactory",
    "Grammar",
    "HuntJob",
    "HuntReport",
    "ViolationLog",
    "hunt_settings",
    "make_hunt",
    "run_hunt",
    "run_machine",
    "run_verify_hunt",
    "FULL_GRAMMAR",
]
