"""A hunt spread over worker processes that share one Hypothesis example database.

Theory of operation. A hunt step is dominated by starting real processes (bash, git, python)
and walking the tree, so one Python process keeps one core busy at best. `run_in_workers`
shares a hunt's runs out to N processes (spawned, so no lock held by a thread of the parent,
such as rich's progress refresher, is inherited). Each worker runs the state machine in
batches of `BATCH_EXAMPLES` runs, each batch with its own seed derived from the hunt's seed,
the worker's index and the batch's index: the hunt is repeatable for a given number of
workers.

Every batch opens the same `DirectoryBasedExampleDatabase`. Hypothesis saves each failing
example there and replays every saved example before generating new ones, so a violation that
one worker found is replayed (and shrunk further) by each other worker at its next batch. The
first violation's time is written to a file all workers read (`ViolationLog.shared_clock`):
once the shrink budget counted from it is spent, every worker stops, not just the finder.

Workers report progress through one small file each (rewritten at most twice per interval at
which the parent reads them, and once at the end), which the parent sums for `on_step`.
The parent then keeps the smallest failing run per property and minimizes it as a
single-process hunt does.
"""

from __future__ import annotations

import collections
import gc
import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import multiprocessing.process
import pathlib
import random
import shutil
import signal
import tempfile
import threading
import time
import types
from typing import Callable

import attrs
import hypothesis
from hypothesis.database import DirectoryBasedExampleDatabase

from .hunt import FailingRun, HuntJob, ViolationLog, run_machine
from ledger_impl import descendants
from ledger_spec.errors import HarnessFailure

# Runs per batch: small enough that a failure saved by one worker reaches the others soon,
# large enough that Hypothesis's per-run bookkeeping and the batch's start stay negligible.
BATCH_EXAMPLES = 10
# How often the parent sums the workers' progress files, in seconds.
PROGRESS_INTERVAL = 0.5


@attrs.frozen
class WorkerResult:
    """What one worker did: runs, steps, and the failing runs its log kept."""

    examples: int
    steps: int
    found: tuple[FailingRun, ...]
    detector_errors: dict[str, int] = attrs.field(factory=dict)  # Step.detector_error -> steps


def shares(total: int, workers: int) -> list[int]:
    """`total` runs split into at most `workers` nonzero shares that differ by one at most."""
    count = max(1, min(workers, total))
    return [total // count + (1 if index < total % count else 0) for index in range(count)]


def batch_seed(seed: int, worker: int, batch: int) -> int:
    """The seed of one batch of one worker, a pure function of the hunt's seed."""
    return random.Random(f"{seed}/{worker}/{batch}").randrange(2**32)


class WorkerDied(HarnessFailure, RuntimeError):
    """A hunt worker ended without a result (killed, out of memory, a crash in C code): the
    harness's own failure, reported as such rather than waited on forever."""


def run_in_workers(
    job: HuntJob,
    workers: int,
    on_step: Callable[[int, int], None] | None = None,
    database: pathlib.Path | None = None,
) -> tuple[int, int, list[FailingRun], dict[str, int]]:
    """Run `job`'s budget across `workers` processes; return (runs, steps, failing runs, the
    detector's errors with the number of steps each cost).

    `database` is the example database directory to share (and keep); by default a temporary
    one is used and removed afterwards. An exception raised in a worker is raised here; a
    worker that dies without answering raises `WorkerDied`.
    """
    shared = pathlib.Path(tempfile.mkdtemp(prefix="ledger-hunt-shared-"))
    examples_dir = database if database is not None else shared / "examples"
    try:
        parts = shares(job.max_examples, workers)
        started = _start_workers(
            [(attrs.evolve(job, max_examples=part), index, shared, examples_dir) for index, part in enumerate(parts)]
        )
        try:
            results = _collect(started, shared, on_step)
        finally:
            # Ctrl-C reaches only this process (the workers ignore it, see `_start_workers`):
            # the workers are stopped here, whatever they were doing.
            _stop(started)
    finally:
        # On Ctrl-C the workers may still be writing progress files while the directory is
        # removed; removal is retried until they are gone, so no directory is left behind.
        for _ in range(50):
            shutil.rmtree(shared, ignore_errors=True)
            if not shared.exists():
                break
            time.sleep(0.1)
    return (
        sum(result.examples for result in results),
        sum(result.steps for result in results),
        [run for result in results for run in result.found],
        dict(sum((collections.Counter(result.detector_errors) for result in results), collections.Counter())),
    )


Started = list[tuple[multiprocessing.process.BaseProcess, multiprocessing.connection.Connection]]


def _start_workers(arguments: list[tuple[HuntJob, int, pathlib.Path, pathlib.Path]]) -> Started:
    """One spawned process per share, each answering on a pipe of its own.

    A terminal's Ctrl-C goes to the whole process group, and a worker still starting up (importing
    Python's site module) would die of it with a fatal-error traceback on the user's terminal. A
    child inherits an ignored SIGINT through fork and exec (not a blocked one: spawning resets the
    mask), so SIGINT is ignored for the instant of each `start`. The parent must not lose a Ctrl-C
    meanwhile, so while the workers start, SIGINT is blocked in this thread (a signal sent to the
    process then waits instead of being delivered) and handled by a handler that only notes it;
    once every worker is started, a noted Ctrl-C stops them and is raised.
    """
    context = multiprocessing.get_context("spawn")
    started: Started = []
    noted: list[int] = []
    if threading.current_thread() is not threading.main_thread():  # signal.signal needs the main thread
        return _start_each(context, arguments, started, lambda start: start())

    def note(signum: int, frame: object) -> None:
        noted.append(signum)

    def ignoring_sigint(start: Callable[[], None]) -> None:
        # Ignoring a signal discards it even while pending: a Ctrl-C waiting since the last start
        # is noted first.
        if signal.SIGINT in signal.sigpending():
            noted.append(signal.SIGINT)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            start()
        finally:
            signal.signal(signal.SIGINT, note)

    previous = signal.signal(signal.SIGINT, note)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        try:
            _start_each(context, arguments, started, ignoring_sigint)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending Ctrl-C is noted now
            signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)
        if noted:
            raise KeyboardInterrupt
    except BaseException:
        _stop(started)
        raise
    return started


def _start_each(
    context: multiprocessing.context.BaseContext,
    arguments: list[tuple[HuntJob, int, pathlib.Path, pathlib.Path]],
    started: Started,
    starting: Callable[[Callable[[], None]], None],
) -> Started:
    for worker_arguments in arguments:
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=_worker_main, args=(sender, *worker_arguments), daemon=True)  # type: ignore[attr-defined]
        starting(process.start)
        sender.close()  # the child holds the only writer: its death reads as EOF here
        started.append((process, receiver))
    return started


def _collect(started: Started, shared: pathlib.Path, on_step: Callable[[int, int], None] | None) -> list[WorkerResult]:
    """Each worker's result, in worker order, watching both its pipe and its liveness."""
    results: dict[int, WorkerResult] = {}
    waiting = {receiver: (index, process) for index, (process, receiver) in enumerate(started)}
    while waiting:
        for ready in multiprocessing.connection.wait(list(waiting), timeout=PROGRESS_INTERVAL):
            index, process = waiting.pop(ready)  # type: ignore[arg-type]
            try:
                outcome, value = ready.recv()  # type: ignore[union-attr]
            except EOFError:
                process.join(5)
                raise WorkerDied(
                    f"hunt worker {index} ended without a result (exit code {process.exitcode})"
                ) from None
            if outcome == "raised":
                raise value
            results[index] = value
        if on_step is not None:
            on_step(*_progress(shared))
    return [results[index] for index in range(len(started))]


def _stop(started: Started) -> None:
    """SIGTERM, raised as KeyboardInterrupt in the worker, unwinds its hunt the way Ctrl-C does
    (the running command's process group killed, its workspace removed); SIGKILL after a grace
    period for one that does not stop."""
    for process, receiver in started:
        if process.is_alive():
            process.terminate()
    for process, receiver in started:
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join()
        receiver.close()
        if process.pid is not None:  # killed, or stopped during its exit: its atexit removals did not run
            descendants.remove_markers_of(process.pid)


def _worker_main(
    sender: multiprocessing.connection.Connection,
    job: HuntJob,
    index: int,
    shared: pathlib.Path,
    examples_dir: pathlib.Path,
) -> None:  # pragma: no cover - runs in the worker
    _stop_cleanly_on_terminate()  # SIGINT stays ignored, as inherited: only the parent answers Ctrl-C
    try:
        answer: tuple[str, object] = ("returned", run_worker(job, index, shared, examples_dir))
    except KeyboardInterrupt:
        _ignore_stop_signals()  # stopped by the parent, which is no longer waiting for an answer
        return
    except BaseException as error:  # the parent re-raises it, as a pool would
        answer = ("raised", error)
    try:
        try:
            sender.send(answer)
        except Exception as unpicklable:
            sender.send(("raised", RuntimeError(f"hunt worker {index} failed: {answer[1]!r} ({unpicklable})")))
    except KeyboardInterrupt:
        pass  # stopped while answering: the parent is no longer waiting for the answer
    finally:
        sender.close()
        _ignore_stop_signals()


def _ignore_stop_signals() -> None:
    """Nothing is left to unwind: a SIGTERM from `_stop` now could only interrupt the
    interpreter's own exit (an atexit removal of a temporary directory), which then printed a
    KeyboardInterrupt traceback into the user's output and left the directory."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, signal.SIG_IGN)


def _stop_cleanly_on_terminate() -> None:
    """SIGTERM from `_stop`, raised as KeyboardInterrupt, unwinds the worker's hunt the way
    Ctrl-C does: the running command's process group killed, its workspace removed."""

    def interrupt(signum: int, frame: types.FrameType | None) -> None:
        # Raised inside a garbage-collector callback (Hypothesis keeps one), the exception could
        # not propagate: Python would print it as "ignored" and the worker would run on. Raise
        # it again just after the callback instead.
        callbacks = {getattr(callback, "__code__", None) for callback in gc.callbacks}
        while frame is not None:
            if frame.f_code in callbacks:
                signal.setitimer(signal.ITIMER_REAL, 0.01)
                return
            frame = frame.f_back
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGALRM, interrupt)


def run_worker(job: HuntJob, index: int, shared: pathlib.Path, examples_dir: pathlib.Path) -> WorkerResult:
    """One worker's share of the hunt, in batches that each replay the shared database first."""
    database = DirectoryBasedExampleDatabase(str(examples_dir))
    shared.mkdir(parents=True, exist_ok=True)
    progress = ProgressFile(shared / f"progress-{index}")
    log = ViolationLog(progress.write, job.shrink_seconds, shared_clock=shared / "first-violation")
    remaining = job.max_examples
    batch = 0
    while remaining > 0 and not log.out_of_time():
        size = min(BATCH_EXAMPLES, remaining)
        try:
            run_machine(attrs.evolve(job, seed=batch_seed(job.seed, index, batch), max_examples=size), log, database)
        except hypothesis.errors.Unsatisfiable:
            # Every run of the batch was skipped because another worker's violation spent
            # the shrink budget: nothing was checked, nothing is lost.
            if not log.out_of_time():
                raise
        remaining -= size
        batch += 1
    progress.write(log.examples, log.steps, final=True)
    return WorkerResult(log.examples, log.steps, tuple(log.last.values()), dict(log.detector_errors))


class ProgressFile:
    """A worker's counts for the parent's progress display, written at most every half
    `PROGRESS_INTERVAL` (the parent reads them no more often) and once at the end.

    Rewriting the file at every step cost a worker 5-7% of its time on this machine's disk; the
    counts in `WorkerResult` are kept in memory and never read from this file.
    """

    def __init__(self, path: pathlib.Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self._written_at: float | None = None

    def write(self, examples: int, steps: int, *, final: bool = False) -> None:
        now = self.clock()
        if final or self._written_at is None or now - self._written_at >= PROGRESS_INTERVAL / 2:
            self.path.write_text(f"{examples} {steps}")
            self._written_at = now


def _progress(shared: pathlib.Path) -> tuple[int, int]:
    examples = steps = 0
    for path in shared.glob("progress-*"):
        try:
            done, taken = path.read_text().split()
            examples, steps = examples + int(done), steps + int(taken)
        except (OSError, ValueError):
            continue  # being written: counted at the next look
    return examples, steps
