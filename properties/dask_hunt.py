"""A hunt whose workers run as tasks on a Dask (`distributed`) cluster.

Theory of operation. It is `parallel.run_in_workers` with the pool replaced by a scheduler:
the hunt's runs are split into one share per task, and each task runs `parallel.run_worker`
on its share, in batches that each replay the shared example database first. What the
workers share lives on storage every machine sees: the `DirectoryBasedExampleDatabase`
(given by the user; a failure one worker saves there is replayed by the others at their next
batch), and beside it a directory for this hunt alone, holding each task's progress file,
the first violation's time (so that every worker stops when the shrink budget is spent) and
a stop file the client writes on Ctrl-C or on an error.

A task does not hunt in the Dask worker's own process: the hunt sets environment variables,
signal handlers and temporary directories for its commands, which would leak into the
worker's other threads. The task starts one child interpreter (`python -m
ledger_properties.dask_hunt`) and waits for it, killing it when the stop file appears. The job is
pickled on the client and unpickled only in that child, after the client's `sys.path` entries
that exist there are appended to its own, so a detector module found through `--path` need not be
importable by the Dask worker itself (only by the child, at the same path).
"""

from __future__ import annotations

import collections
import concurrent.futures
import os
import pathlib
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from typing import TYPE_CHECKING, Callable

import attrs

from ledger_spec.errors import Unavailable

from .hunt import FailingRun, HuntJob
from .parallel import PROGRESS_INTERVAL, WorkerResult, _progress, run_worker, shares

if TYPE_CHECKING:
    import distributed

STOP_FILE = "stop"
# How often a task looks for the stop file while its child hunts, in seconds.
STOP_POLL = 0.5
# Seconds a child is given to unwind (kill its commands, remove its workspace) after SIGTERM.
STOP_GRACE = 10.0


# Seconds to wait for the scheduler to answer before giving up with one line.
CONNECT_TIMEOUT = 30.0


class SchedulerUnavailable(Unavailable, RuntimeError):
    """The scheduler could not be reached, or has no worker to run the hunt on."""


def connect(address: str) -> "distributed.Client":
    """A client of the scheduler at `address` (not made the default one: nothing else in this
    process submits to it), or SchedulerUnavailable after CONNECT_TIMEOUT."""
    from distributed import Client

    try:
        return Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except OSError as error:
        raise SchedulerUnavailable(f"cannot reach the Dask scheduler at {address}: {error}") from None


def cluster_threads(client: "distributed.Client") -> int:
    """The threads of the workers connected now: how many tasks the cluster runs at once."""
    return sum(worker["nthreads"] for worker in client.scheduler_info()["workers"].values())


class ClusterExecutor(concurrent.futures.Executor):
    """A `concurrent.futures` executor on a Dask cluster (for `ledger audit --scheduler`);
    `shutdown` also closes the client it was made from."""

    def __init__(self, client: "distributed.Client") -> None:
        self.client = client
        self._inner = client.get_executor()

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        return self._inner.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._inner.shutdown(wait=wait)
        self.client.close()


def default_database() -> pathlib.Path:
    """The example database a cluster hunt shares unless told otherwise: beside Ledger's state
    (`$XDG_STATE_HOME/ledger`), which must then be on storage the workers see too."""
    from ledger_impl import state_directory

    return state_directory.default() / "hunt-examples"


def run_on_scheduler(
    job: HuntJob,
    address: str,
    database: pathlib.Path,
    on_step: Callable[[int, int], None] | None = None,
    tasks: int | None = None,
) -> tuple[int, int, list[FailingRun], dict[str, int]]:
    """Run `job`'s budget as Dask tasks on the scheduler at `address`; return (runs, steps,
    failing runs, the detector's errors with the number of steps each cost), as
    `run_in_workers` does.

    `tasks` is the number of shares (default: one per thread of the workers connected now).
    An exception raised in a task is raised here; every other task is then stopped.
    """
    database = database.resolve()
    database.mkdir(parents=True, exist_ok=True)
    shared = database.parent / f".{database.name}-run-{uuid.uuid4().hex[:12]}"
    shared.mkdir()
    try:
        with connect(address) as client:
            count = tasks if tasks is not None else cluster_threads(client)
            if count < 1:
                raise SchedulerUnavailable(f"the Dask scheduler at {address} has no worker")
            search_path = [entry for entry in sys.path if entry]
            futures = [
                client.submit(
                    hunt_task, pickle.dumps((attrs.evolve(job, max_examples=part), index)), str(shared), str(database),
                    search_path, pure=False, key=f"ledger-hunt-{shared.name}-{index}",
                )
                for index, part in enumerate(shares(job.max_examples, count))
            ]
            try:
                while not all(future.done() for future in futures):
                    for future in futures:
                        if future.done() and future.status != "finished":
                            future.result()  # a task's exception is raised here, the others stopped below
                    if on_step is not None:
                        on_step(*_progress(shared))
                    time.sleep(PROGRESS_INTERVAL)
                if on_step is not None:
                    on_step(*_progress(shared))  # the final counts, written before each answer
                results = [_answer(future.result()) for future in futures]
            except BaseException:
                # The tasks see the stop file within STOP_POLL and stop their children.
                (shared / STOP_FILE).touch()
                deadline = time.monotonic() + STOP_GRACE + 5
                while not all(future.done() for future in futures) and time.monotonic() < deadline:
                    time.sleep(STOP_POLL)
                client.cancel(futures)
                raise
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    return (
        sum(result.examples for result in results),
        sum(result.steps for result in results),
        [run for result in results for run in result.found],
        dict(sum((collections.Counter(result.detector_errors) for result in results), collections.Counter())),
    )


def _answer(pickled: bytes) -> WorkerResult:
    outcome, value = pickle.loads(pickled)
    if outcome == "raised":
        raise value
    return value  # type: ignore[no-any-return]


def hunt_task(job_and_index: bytes, shared: str, database: str, search_path: list[str]) -> bytes:
    """What a Dask worker runs: one hunt worker in a child interpreter, stopped when the
    client writes the stop file. Returns the child's pickled ("returned"|"raised", value)."""
    stop = pathlib.Path(shared) / STOP_FILE
    with tempfile.TemporaryDirectory(prefix="ledger-hunt-task-") as scratch:
        answer = pathlib.Path(scratch) / "answer"
        request = pickle.dumps((job_and_index, shared, database, search_path, str(answer)))
        child = subprocess.Popen(
            [sys.executable, "-m", "ledger_properties.dask_hunt"], stdin=subprocess.PIPE, start_new_session=True
        )
        try:
            assert child.stdin is not None
            child.stdin.write(request)
            child.stdin.close()
            while child.poll() is None:
                if stop.exists():
                    _stop(child)
                    return pickle.dumps(("raised", KeyboardInterrupt()))
                time.sleep(STOP_POLL)
        finally:
            if child.poll() is None:
                _stop(child)
        if not answer.exists():
            return pickle.dumps(("raised", RuntimeError(f"hunt task ended without a result (exit code {child.returncode})")))
        return answer.read_bytes()


def _stop(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM unwinds the child's hunt as Ctrl-C would (see `parallel`); SIGKILL if it hangs."""
    child.terminate()
    try:
        child.wait(STOP_GRACE)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _child_main() -> None:  # pragma: no cover - runs in the task's child interpreter
    from .parallel import _stop_cleanly_on_terminate

    job_and_index, shared, database, search_path, answer_path = pickle.loads(sys.stdin.buffer.read())
    # Appended, not prepended: on another machine the client's standard library paths may exist
    # for another Python version, and must not shadow this interpreter's own.
    sys.path.extend(entry for entry in search_path if entry not in sys.path and os.path.isdir(entry))
    _stop_cleanly_on_terminate()
    try:
        job, index = pickle.loads(job_and_index)
        answer: tuple[str, object] = ("returned", run_worker(job, index, pathlib.Path(shared), pathlib.Path(database)))
    except KeyboardInterrupt:
        return  # stopped by the task, which no longer waits for an answer
    except BaseException as error:  # noqa: BLE001 - raised again on the client
        answer = ("raised", error)
    try:
        pickled = pickle.dumps(answer)
    except Exception as unpicklable:  # noqa: BLE001
        pickled = pickle.dumps(("raised", RuntimeError(f"hunt task failed: {answer[1]!r} ({unpicklable})")))
    partial = pathlib.Path(answer_path + ".partial")
    partial.write_bytes(pickled)
    partial.replace(answer_path)


if __name__ == "__main__":  # pragma: no cover
    _child_main()
