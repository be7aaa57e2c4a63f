"""Replaying a counterexample, in this process or in a sandboxed worker, and loading detectors.

`replay(counterexample, detector_factory)` materializes the counterexample's workspace in a
fresh temporary directory, runs its steps through a `Runtime` with the oracle checking each
one (`ledger_properties.oracle`), and says whether the recorded violation happened again, exactly
(`Counterexample.mismatch`). The test suite and the hunt's minimizer use it directly.

A counterexample file is code: its steps are shell commands and its `detector` names a Python
module. `ledger replay` therefore runs the replay in a worker process (`python -I -m
ledger_properties.replay`), wrapped by `ledger_properties.sandbox` when bubblewrap works: the worker sees the
host read-only, writes only to its private `/tmp`, has no network, and everything it starts
dies with it. The worker gets the already validated document on stdin and streams its step
records back as JSON lines on a descriptor of its own (a detector that prints cannot corrupt
them).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pathlib
import signal
import subprocess
import sys
from typing import Any, Callable, Final, Sequence

import attrs

from . import sandbox
from .counterexample import Counterexample, CounterexampleError, from_json, to_json
from .oracle import Placement, StepRecord, Violation, fingerprint_line, probe_line, process_tracking_line, run_checked
from .shell_strategies import WorkspaceSetup
from ledger_impl.detectors.protocol import as_detector
from ledger_spec.errors import DetectorFailure, HarnessFailure

DetectorFactory = Callable[[], object]

TRUSTED_DETECTORS: frozenset[str] = frozenset(
    {
        "ledger_impl.detectors:default_detector",
        "ledger_impl.detectors.unsound:events_by_name",
        "ledger_impl.detectors.unsound:optimistic_rules",
        "ledger_impl.detectors.unsound:stat_only",
    }
)
"""Detectors that ship with Ledger: a file may name them without `--trust-detector`."""

INTERRUPT_GRACE = 5.0
"""Seconds an interrupted worker gets to remove its workspace before it is killed."""


class DetectorLoadError(DetectorFailure, ValueError):
    """MODULE:FACTORY that does not give a detector; the message is one line for the user."""


class ReplayWorkerError(HarnessFailure, RuntimeError):
    """The replay worker failed for a reason of its own (not the file, not the detector)."""


# --- detectors --------------------------------------------------------------------------------


def parse_spec(spec: str) -> tuple[str, str]:
    """(module, attribute) of MODULE:FACTORY, or DetectorLoadError if it is not that shape."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute or not all(p.isidentifier() for p in module_name.split(".") + attribute.split(".")):
        raise DetectorLoadError(f"expected MODULE:FACTORY, got {spec!r}")
    return module_name, attribute


def load_factory(spec: str, search_path: str | pathlib.Path | None = None, *, search_cwd: bool = False) -> DetectorFactory:
    """The factory named by MODULE:FACTORY, checked by building one detector from it.

    `search_path` is put first on sys.path (a user's detector usually lives next to their
    project, not in an installed package). The current directory is searched only with
    `search_cwd`, which `ledger check-detector` asks for (the user typed the name there); a
    replay never does, so a file cannot pick up a module that happens to lie where it is run.
    """
    module_name, attribute = parse_spec(spec)
    entries = [str(pathlib.Path(search_path).resolve())] if search_path is not None else []
    if search_cwd:
        entries.append(str(pathlib.Path.cwd()))
    for entry in reversed(entries):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        raise DetectorLoadError(f"module {module_name!r} not found ({error.name} is missing)") from None
    except Exception as error:  # noqa: BLE001 - the user's module failed while importing
        raise DetectorLoadError(f"importing {module_name!r} failed: {type(error).__name__}: {error}") from None
    factory: Any = module
    for part in attribute.split("."):
        if not hasattr(factory, part):
            raise DetectorLoadError(f"module {module_name!r} has no attribute {attribute!r}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise DetectorLoadError(f"{spec} is not callable (got {type(factory).__name__})")
    detector = make_detector(factory, spec)
    check_detector(detector, spec)
    close = getattr(detector, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()
    return factory  # type: ignore[no-any-return]


def make_detector(factory: DetectorFactory, spec: str = "the factory") -> object:
    """Call `factory()`, turning any exception into a one-line DetectorLoadError."""
    try:
        return factory()
    except Exception as error:  # noqa: BLE001 - the user's factory raised
        raise DetectorLoadError(f"{spec}() raised {type(error).__name__}: {error}") from None


def check_detector(detector: object, spec: str = "the factory") -> None:
    """Raise DetectorLoadError unless `detector` speaks the detector protocol: a callable
    `changes_since`, or callable `before` and `after` (`ledger_impl.detectors.protocol`)."""
    try:
        as_detector(detector)
    except TypeError:
        raise DetectorLoadError(
            f"{spec}() returned a {type(detector).__name__}, not a detector "
            "(no callable changes_since, nor callable before and after)"
        ) from None


# --- replay in this process -------------------------------------------------------------------


def _unrendered(record: StepRecord, placement: Placement) -> StepRecord:
    """`record` with the workspace's directories put back as @ROOT@/@OUTSIDE@ in what it printed,
    so that outputs compare equal across fresh temporary directories."""

    def clean(value: object) -> object:
        if isinstance(value, str):
            return placement.unrender(value)
        if isinstance(value, (list, tuple)):
            return [clean(item) for item in value]
        if isinstance(value, dict):
            return {key: clean(item) for key, item in value.items()}
        return value

    violation = record.violation
    if violation is not None:
        violation = attrs.evolve(
            violation,
            expected=clean(dict(violation.expected)),
            observed=clean(dict(violation.observed)),
            message=placement.unrender(violation.message),
        )
    return attrs.evolve(record, output=placement.unrender(record.output), violation=violation)


def run_recorded(
    setup: WorkspaceSetup,
    templates: Sequence[str],
    detector: object,
    policy: object | None = None,
    on_record: Callable[[StepRecord], None] | None = None,
) -> list[StepRecord]:
    """Run `templates` in a fresh workspace, checking every step, with outputs unrendered; stop
    after the first violation other than a missed change (as the hunt does)."""
    return run_checked(setup, templates, detector, policy, on_record, present=_unrendered)  # type: ignore[arg-type]


@attrs.frozen
class ReplayResult:
    """The checked steps of a replay, and whether they reproduce the counterexample exactly."""

    counterexample: Counterexample
    records: tuple[StepRecord, ...]

    @property
    def violation(self) -> Violation | None:
        """The first violation of the recorded property, wherever it happened."""
        return next((r.violation for r in self.records if r.violation is not None and r.violation.property == self.property), None)

    @property
    def mismatch(self) -> str | None:
        """Why this replay is not an exact reproduction, or None."""
        return self.counterexample.mismatch(self.records)

    @property
    def reproduced(self) -> bool:
        return self.mismatch is None

    @property  # defined last: inside the class body the name `property` is this one from here on
    def property(self) -> str:
        return self.counterexample.property


AS_RECORDED: Final = "as recorded"  # `replay`'s default: each switch as the file's `found_by` says


def replay(
    counterexample: Counterexample,
    detector_factory: DetectorFactory,
    on_record: Callable[[StepRecord], None] | None = None,
    *,
    fingerprint: bool | None = None,
    probe: bool | None = None,
    process_tracking: str | None = AS_RECORDED,
) -> ReplayResult:
    """Run the counterexample's steps in a fresh temporary repository, every step checked.

    `fingerprint` turns the Runtime's observation fingerprint on or off, `probe` its probe;
    by default each is set as it was when the counterexample was found (`found_by.fingerprint`,
    `found_by.probe`; off for files older than the line). `process_tracking` likewise
    (`found_by.process_tracking`; absent: the best available); None asks for the best available."""
    if fingerprint is None:
        fingerprint = bool(counterexample.found_by.get("fingerprint", False))
    if probe is None:
        probe = bool(counterexample.found_by.get("probe", False))
    if process_tracking == AS_RECORDED:
        process_tracking = counterexample.found_by.get("process_tracking")
    with fingerprint_line(fingerprint), probe_line(probe), process_tracking_line(process_tracking):
        records = run_recorded(
            counterexample.setup.workspace(), counterexample.commands, make_detector(detector_factory), on_record=on_record
        )
    return ReplayResult(counterexample, tuple(records))


# --- replay in a worker process ---------------------------------------------------------------


def record_to_json(record: StepRecord) -> dict[str, Any]:
    return attrs.asdict(record)


def record_from_json(data: dict[str, Any]) -> StepRecord:
    violation = data.get("violation")
    fields = {**data, "changes": tuple(data.get("changes", ())), "violation": Violation(**violation) if violation else None}
    return StepRecord(**fields)


def worker_argv(*, sandboxed: bool, search_path: pathlib.Path | None = None) -> list[str]:
    """The command that starts a replay worker; wrapped in the sandbox when asked.

    The sandbox's `/tmp` is private, so what the worker must read and may live under the host's
    `/tmp` (the detector's --path, this interpreter, this package) is bound read-only.
    """
    # -I: no PYTHON* variables, no user site, and neither the current directory nor the
    # script's directory on sys.path.
    argv = [sys.executable, "-I", "-m", "ledger_properties.replay"]
    if not sandboxed:
        return argv
    needed = [search_path, pathlib.Path(sys.prefix), pathlib.Path(__file__).resolve().parent.parent]
    readable = [path for path in needed if path is not None and path.resolve().is_relative_to("/tmp")]
    return sandbox.wrap(argv, writable=[], workdir=pathlib.Path("/"), readable=readable)


def replay_in_worker(
    counterexample: Counterexample,
    detector: str,
    *,
    search_path: str | pathlib.Path | None = None,
    sandboxed: bool = True,
    on_record: Callable[[StepRecord], None] | None = None,
) -> ReplayResult:
    """Replay in a separate (by default sandboxed) process; the detector is imported there.

    Raises DetectorLoadError if the worker cannot build the detector, ReplayWorkerError if it
    fails otherwise, sandbox.SandboxUnavailable if a sandbox is asked for and cannot be made.
    A KeyboardInterrupt stops the worker (its workspace removed, its processes killed) and
    propagates.
    """
    if sandboxed and not sandbox.available():
        raise sandbox.SandboxUnavailable("bubblewrap (bwrap) is not installed or cannot create namespaces here")
    path = pathlib.Path(search_path).resolve() if search_path is not None else None
    job = json.dumps({"counterexample": to_json(counterexample), "detector": detector, "path": str(path) if path else None}).encode()
    env = dict(os.environ)
    if sandboxed:
        env["TMPDIR"] = "/tmp"  # the sandbox's private /tmp; the host's TMPDIR is read-only there
    # The protocol pipe: the worker writes JSON lines on LEDGER_REPLAY_FD; we read them here.
    read_end, write_end = os.pipe()
    records: list[StepRecord] = []
    final: dict[str, Any] | None = None
    try:
        process = subprocess.Popen(
            worker_argv(sandboxed=sandboxed, search_path=path),
            stdin=subprocess.PIPE,
            env={**env, "LEDGER_REPLAY_FD": str(write_end)},
            pass_fds=(write_end,),
            start_new_session=True,
        )
    except OSError as error:
        os.close(read_end)
        os.close(write_end)
        raise ReplayWorkerError(f"cannot start the replay worker: {error}") from None
    os.close(write_end)
    try:
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(job)
            process.stdin.close()
        with os.fdopen(read_end, "rb") as lines:
            for line in lines:
                message = json.loads(line)
                if "record" in message:
                    record = record_from_json(message["record"])
                    records.append(record)
                    if on_record is not None:
                        on_record(record)
                else:
                    final = message
        process.wait()
    finally:
        _stop(process)
    if final is None:
        raise ReplayWorkerError(f"the replay worker ended without a result (exit status {process.returncode})")
    if final.get("detector_error"):
        raise DetectorLoadError(final["detector_error"])
    if final.get("error"):
        raise ReplayWorkerError(final["error"])
    return ReplayResult(counterexample, tuple(records))


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Ask the worker to clean up (SIGTERM), then kill its process group, and reap it."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(INTERRUPT_GRACE)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _terminated(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # unwinds through checked_session, which removes the workspace


def worker_main() -> int:
    """The worker: read the job on stdin, replay, write JSON lines to LEDGER_REPLAY_FD."""
    signal.signal(signal.SIGTERM, _terminated)
    channel = os.fdopen(int(os.environ.pop("LEDGER_REPLAY_FD")), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever the detector or a library prints goes to stderr, not the channel

    def send(message: dict[str, Any]) -> None:
        channel.write(json.dumps(message) + "\n")
        channel.flush()

    try:
        job = json.loads(sys.stdin.read())
        counterexample = from_json(job["counterexample"])
        factory = load_factory(job["detector"], job["path"])
        replay(counterexample, factory, on_record=lambda record: send({"record": record_to_json(record)}))
        send({"done": True})
    except DetectorLoadError as error:
        send({"detector_error": str(error)})
    except KeyboardInterrupt:
        return 130
    except (CounterexampleError, Exception) as error:  # noqa: BLE001 - reported to the parent, one line
        send({"error": f"{type(error).__name__}: {error}".replace("\n", " ")})
    return 0


if __name__ == "__main__":
    sys.exit(worker_main())
