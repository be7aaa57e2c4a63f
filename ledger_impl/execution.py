"""Running one shell command the way an agent harness does, with limits that always hold.

bash runs in its own session so that a timeout can kill everything it started. stdout and
stderr share one pipe, so the text is interleaved exactly as the agent would see it. We stop
reading when bash exits rather than at end of file: a background child that keeps the pipe
open must not hang the step (it is reported as still running instead).
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from pathlib import Path
from typing import Mapping

import attrs

from . import descendants as tracking
from .descendants import Descendants

TIMEOUT_EXIT_CODE = 124  # what coreutils `timeout` returns, so agents recognize it
LAUNCH_FAILURE_EXIT_CODE = 127


@attrs.frozen
class Completed:
    """What running a command produced, and whether it is the whole of it."""

    output: str
    exit_code: int
    timed_out: bool
    truncated: bool
    background: Descendants | None  # what the command started, when some of it outlived bash
    launched: bool = True  # False: bash never started (missing root, NUL in the command, ...)

    @property
    def complete(self) -> bool:
        """Whether the output is everything a command that really ran printed, and it finished."""
        return self.launched and not (self.timed_out or self.truncated or self.background is not None)


def decode(data: bytes) -> str:
    """Bytes as the agent sees them: UTF-8, with undecodable bytes replaced.

    The same bytes always decode to the same text, which is all Reuse needs.
    """
    return data.decode("utf-8", errors="replace")


def command_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment commands run in: `base` (the caller's by default), minus what makes
    reads impure.

    `git status` refreshes `.git/index` unless optional locks are off, and porcelain
    `git diff` does so even then unless diff.autoRefreshIndex is false; either would make a
    read-only command write (their output is the same without the refresh). CDPATH makes `cd`
    print; pagers would wait for a terminal.
    """
    environment = dict(os.environ if base is None else base)
    environment.pop("CDPATH", None)
    environment.update(GIT_OPTIONAL_LOCKS="0", PAGER="cat", GIT_PAGER="cat", MANPAGER="cat")
    try:
        count = int(environment.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        count = 0
    environment[f"GIT_CONFIG_KEY_{count}"] = "diff.autoRefreshIndex"
    environment[f"GIT_CONFIG_VALUE_{count}"] = "false"
    environment["GIT_CONFIG_COUNT"] = str(count + 1)
    return environment


def run_command(
    command: str, cwd: Path, timeout: float, output_limit: int, env: Mapping[str, str] | None = None,
    *, process_tracking: str | None = None,
) -> Completed:
    """Run `command` with bash in `cwd`; at most `output_limit` bytes kept, `timeout` seconds;
    `env` as `command_environment()` builds it by default; its descendants followed as
    `process_tracking` says (`ledger_impl.descendants`: the best available by default).

    Whatever interrupts the wait (KeyboardInterrupt, any exception) kills everything the command
    started before it propagates: nothing it started is left running untimed.
    """
    start = tracking.launch(command, tracking=process_tracking)
    try:
        process = subprocess.Popen(
            start.argv,
            cwd=cwd,
            env=dict(env) if env is not None else command_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except (OSError, ValueError) as error:  # ValueError: NUL in the command
        start.abandon()
        return Completed(f"ledger: could not start bash: {error}\n", LAUNCH_FAILURE_EXIT_CODE, False, False, None, False)
    try:
        return _collect(process, timeout, output_limit, start)
    except BaseException:
        start.kill(process.pid)
        process.wait()
        start.descendants(process.pid).release()
        raise


# Without a descriptor that wakes the wait when bash exits (`os.pidfd_open`, Linux 5.3+), the
# wait for output is cut into slices this long, so that an exit is noticed while a background
# job holds the pipe open.
POLL_SLICE = 0.05


def _collect(process: subprocess.Popen[bytes], timeout: float, output_limit: int, start: tracking.Launch) -> Completed:
    assert process.stdout is not None
    group = process.pid
    pipe = process.stdout
    os.set_blocking(pipe.fileno(), False)
    chunks: list[bytes] = []
    kept = 0
    dropped = 0
    deadline = time.monotonic() + timeout
    timed_out = False
    # Readable once bash has exited: the wait ends then, not at the end of a slice (a step that
    # leaves a job in the background cost up to a whole slice), nor after the sleeps of
    # `Popen.wait(timeout)` once the pipe is closed.
    exit_descriptor = _exit_descriptor(process.pid)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(pipe, selectors.EVENT_READ)
            if exit_descriptor is not None:
                selector.register(exit_descriptor, selectors.EVENT_READ)
            open_pipe = True
            while True:
                exited = process.poll() is not None
                remaining = deadline - time.monotonic()
                if remaining <= 0 and not exited:
                    timed_out = True
                    start.kill(group)
                    process.wait()
                    exited = True
                if open_pipe:
                    wait = max(remaining, 0) if exit_descriptor is not None else min(POLL_SLICE, max(remaining, 0))
                    events = selector.select(timeout=0 if exited else wait)
                    readable = any(key.fileobj is pipe for key, _ in events)
                    data = _read_available(pipe) if readable else None
                    if data is not None:
                        if data == b"":
                            selector.unregister(pipe)
                            open_pipe = False
                        room = max(0, output_limit - kept)
                        chunks.append(data[:room])
                        kept += min(len(data), room)
                        dropped += max(0, len(data) - room)
                        if data:
                            continue
                if exited:
                    break
                if not open_pipe:
                    if exit_descriptor is not None:
                        selector.select(timeout=max(remaining, 0.001))  # only the exit is left to wait for
                    else:
                        try:
                            process.wait(timeout=max(remaining, 0.001))
                        except subprocess.TimeoutExpired:
                            pass
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM turned into an exception): the command runs in a session
        # of its own, which the terminal's signal never reaches, so it is killed here.
        start.kill(group)
        process.wait()
        pipe.close()
        raise
    finally:
        if exit_descriptor is not None:
            os.close(exit_descriptor)
    pipe.close()
    exit_code = process.returncode if not timed_out else TIMEOUT_EXIT_CODE
    text = decode(b"".join(chunks))
    if dropped:
        text += f"\n[ledger] output truncated: {dropped} more bytes not shown\n"
    if timed_out:
        text += f"\n[ledger] timed out after {timeout:g} s; the command and its children were killed\n"
    # Only now, bash having exited, has the wrapper said whether it joined the cgroup.
    left = start.descendants(group)
    if timed_out:
        start.kill(group)
    if timed_out or not left.alive():
        left.release()
        return Completed(text, exit_code, timed_out, bool(dropped), None)
    return Completed(text, exit_code, timed_out, bool(dropped), left)


def _exit_descriptor(pid: int) -> int | None:
    """A descriptor that becomes readable when process `pid` exits, where the system has one."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:  # pragma: no cover - not Linux
        return None
    try:
        return int(opener(pid))
    except OSError:  # a kernel before 5.3, or a sandbox that refuses it
        return None


def _read_available(pipe: object) -> bytes | None:
    try:
        return os.read(pipe.fileno(), 1 << 16)  # type: ignore[attr-defined]
    except BlockingIOError:
        return None
