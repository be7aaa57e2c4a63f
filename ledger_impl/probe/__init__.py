"""The probe: one more run of a read, sandboxed, traced and with the clock moved, before its
output may ever be served (issue 19).

`probe(...)` reruns the command the agent just ran (`sandbox`: read-only host and workspace,
private /tmp, no network, own PID namespace), under strace (`trace`) and libfaketime
(`clock`). Its result says whether the output can be served and, if so, what it depends on
(`dependencies`):

  servable   the probe printed exactly the agent's output and exit status, the trace is
             complete, every executed program was reachable by the moved clock, and no
             dependency is of a kind that cannot be revalidated;
  otherwise  `reason` says why (output differs: time-dependent or non-deterministic; timed
             out; failed to start; static executable; pseudo-filesystem, ...), and the
             observation is kept without a servable output.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Final, Mapping

import attrs

from ledger_spec.degraded import Cause, Degraded, Effect

from . import clock, dependencies, sandbox, trace
from .dependencies import DependencySet

DEFAULT_PROBE_TIMEOUT: Final = 30.0
TRACE_LIMIT: Final = 64 * 1024 * 1024  # a trace larger than this is not read whole: incomplete


@attrs.frozen
class ProbeResult:
    servable: bool
    # Why not servable (None when servable): a Degraded when the probe itself could not do its
    # job, text when it did and found the read not servable.
    reason: str | Degraded | None
    dependencies: DependencySet | None = None
    output: str | None = None  # what the probe printed (None if it did not run)
    exit_code: int | None = None

    @property
    def degraded(self) -> Degraded | None:
        """Why the probe could not do its job, if it could not (vs. the read is not servable)."""
        return self.reason if isinstance(self.reason, Degraded) else None


def unavailable() -> Degraded | None:
    """Why the probe cannot run on this machine (and so no read is reused), or None."""
    missing = sandbox.missing_tools()
    return Degraded(Cause.PROBE_UNAVAILABLE, (missing,), Effect.NUDGE_ONLY) if missing else None


def _trace_directory(root: Path) -> Path:
    """A fresh directory for the trace, never inside the workspace."""
    for base in (tempfile.gettempdir(), "/var/tmp", "/dev/shm"):
        resolved = os.path.realpath(base)
        if resolved != os.fspath(root) and not resolved.startswith(os.fspath(root) + "/"):
            return Path(tempfile.mkdtemp(prefix="ledger-probe-", dir=resolved))
    raise OSError("no temporary directory outside the workspace")


def probe(
    root: Path,
    command: str,
    environment: Mapping[str, str],
    expected_output: str,
    expected_exit: int,
    *,
    started_ns: int | None = None,
    timeout: float = DEFAULT_PROBE_TIMEOUT,
    output_limit: int = 4 * 1024 * 1024,
    rendering: Callable[[str], str] | None = None,
    workdir: Path | None = None,
) -> ProbeResult:
    """Rerun `command` in `root` as the probe and judge it against what the agent saw.
    `started_ns` is when the agent's run started (time.time_ns()): an outside dependency
    changed since then cannot be trusted. `rendering`: how the agent showed the output it saw
    (an agent that strips it), applied to the probe's before they are compared. `workdir`:
    where the agent ran it, inside `root` (`root` by default)."""
    missing = unavailable()
    if missing is not None:
        return ProbeResult(False, missing)
    started = time.time_ns() if started_ns is None else started_ns
    root = Path(os.path.realpath(root))
    try:
        directory = _trace_directory(root)
    except OSError as error:
        return ProbeResult(False, Degraded(Cause.PROBE_NO_TRACE_DIRECTORY, (str(error),), Effect.NOT_SERVED))
    try:
        ran = sandbox.run(root, command, directory, environment, timeout, output_limit, workdir)
        try:
            with open(directory / sandbox.TRACE_FILE, "rb") as handle:
                raw = handle.read(TRACE_LIMIT + 1)
        except OSError:
            raw = b""
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if ran.timed_out:
        return ProbeResult(False, f"the probe ran over its {timeout:g} s bound and was killed", output=ran.output)
    traced = trace.parse(raw[:TRACE_LIMIT].decode("ascii", "replace"), os.fspath(root))
    if not ran.launched or not traced.started:
        started = Degraded(Cause.PROBE_FAILED_TO_START, (ran.output.strip()[:200],), Effect.NOT_SERVED)
        return ProbeResult(False, started, output=ran.output)
    if len(raw) > TRACE_LIMIT:
        return ProbeResult(False, "the trace is too large to read whole", output=ran.output)
    if ran.truncated:
        return ProbeResult(False, "the probe's output was truncated", output=ran.output)
    talked = dependencies.socket_reason(traced.accesses)
    if talked is not None:  # before the outputs are compared: refused its socket, the probe's differs
        return ProbeResult(False, talked, output=ran.output, exit_code=ran.exit_code)
    shown = ran.output if rendering is None else rendering(ran.output)
    if shown != expected_output or ran.exit_code != expected_exit:
        return ProbeResult(
            False, "the probe printed something else (time-dependent or not deterministic)",
            output=ran.output, exit_code=ran.exit_code,
        )
    if traced.incomplete is not None:
        return ProbeResult(False, f"the trace is incomplete: {traced.incomplete}", output=ran.output, exit_code=ran.exit_code)
    extra: list[trace.Access] = []
    for program in traced.executed:
        interpreter = clock.interpreter_of_script(program)
        if interpreter is not None:
            extra.append(trace.Access(interpreter, "execve", True))
        for executable in (program, interpreter):
            unreachable = clock.clock_unreachable(executable) if executable else None
            if unreachable is not None:
                return ProbeResult(False, unreachable, output=ran.output, exit_code=ran.exit_code)
    found = dependencies.collect((*traced.accesses, *extra), os.fspath(root), started)
    if found.never is not None:
        return ProbeResult(False, found.never, found, ran.output, ran.exit_code)
    return ProbeResult(True, None, found, ran.output, ran.exit_code)
