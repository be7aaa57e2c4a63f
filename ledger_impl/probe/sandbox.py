"""The probe's sandbox: bubblewrap around strace around `bash -c COMMAND`.

- `--ro-bind / /`: the host is visible and nothing in it can be written, so a command the
  classifier wrongly called read-only changes nothing;
- `--tmpfs /tmp`: a private `/tmp`; the workspace is bound back, read-only too, after it (a
  root under `/tmp` stays visible), and so is the one directory strace writes its trace to,
  which lives outside the workspace and which the command never names;
- `--dev /dev`, `--proc /proc`: a minimal device tree and the procfs of the new PID namespace;
- `--unshare-net`, `--unshare-ipc`, `--unshare-pid`, `--die-with-parent`, `--new-session`: no
  network and no abstract Unix sockets of the host, no System V or POSIX message queues,
  semaphores or shared memory of the host, no view of the host's processes, nothing survives
  the probe, no keystrokes into a terminal. Unix sockets named by a path stay visible through
  the read-only bind (a bind does not stop a `connect`): the tracer refuses every call that
  could reach one (`trace`'s docstring says why that, and not more mounts or a filter);
- `--chdir ROOT`: the command starts where the agent's did;
- inside, `confine` (Landlock): no file opens for writing outside the sandbox's own writable
  places, since a read-only bind does not stop opening a host FIFO or device for writing.

strace runs inside, so bwrap's own mounts are not traced; the clock variables are given to the
traced command only (`strace -E`), not to strace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

from ..descendants import Launch
from ..execution import Completed
from ..execution import _collect as collect_output  # the same bounded, killing wait as the agent's run
from ..fingerprint import SYSTEM_PATH
from . import clock, confine, trace

TRACE_FILE = "trace"


def tool(name: str) -> str | None:
    """`name` on the system's own search path: the command's PATH may shadow it."""
    return shutil.which(name, path=SYSTEM_PATH)


def missing_tools() -> str | None:
    """What the probe needs and this machine lacks, or None."""
    lacking = [name for name in ("bwrap", "strace") if tool(name) is None]
    if not clock.available():
        lacking.append(f"libfaketime ({clock.LIBFAKETIME})")
    return ", ".join(lacking) or None


def writable(root: Path, trace_directory: Path) -> list[str]:
    """Where the probe may open files for writing (`confine`): the trace directory, the
    sandbox's own /dev and its private /tmp, unless the workspace lies beneath /tmp (Landlock
    allows whole trees, and the workspace's FIFOs are the host's)."""
    places = [os.fspath(trace_directory), "/dev"]
    if not (os.fspath(root) + "/").startswith("/tmp/"):
        places.append("/tmp")
    return places


def argv(
    root: Path, command: str, trace_directory: Path, environment: Mapping[str, str], workdir: Path | None = None
) -> list[str]:
    """The probe's command line: `bash -c command` in `workdir` (`root` by default, else a
    directory inside it), sandboxed and traced."""
    root_text = os.fspath(root)
    trace_text = os.fspath(trace_directory)
    line = [
        tool("bwrap") or "bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--ro-bind", root_text, root_text,
        "--bind", trace_text, trace_text, "--dev", "/dev", "--proc", "/proc",
        "--unshare-net", "--unshare-ipc", "--unshare-pid", "--die-with-parent", "--new-session",
        "--chdir", root_text if workdir is None else os.fspath(workdir),
        "--", *confine.prefix(writable(root, trace_directory)),
        tool("strace") or "strace", *trace.STRACE_OPTIONS, "-o", os.path.join(trace_text, TRACE_FILE),
    ]
    for name, value in clock.shifted_environment(environment).items():
        line += ["-E", f"{name}={value}"]
    return line + ["--", "bash", "-c", command]


def run(
    root: Path, command: str, trace_directory: Path, environment: Mapping[str, str], timeout: float, output_limit: int,
    workdir: Path | None = None,
) -> Completed:
    """Run the probe and collect its output the way the agent's run was collected; killed
    (with everything it started) at `timeout` seconds."""
    # Followed as a session: bwrap's --die-with-parent and its own PID namespace already bound
    # everything the probe starts.
    start = Launch(argv(root, command, trace_directory, environment, workdir), None, None)
    try:
        process = subprocess.Popen(
            start.argv,
            cwd="/",
            env=dict(environment),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except (OSError, ValueError) as error:
        return Completed(f"probe could not start: {error}", 127, False, False, None, False)
    try:
        completed = collect_output(process, timeout, output_limit, start)
    except BaseException:
        start.kill(process.pid)
        process.wait()
        raise
    if completed.background is not None:
        completed.background.kill()  # the probe never leaves anything behind
    return completed
