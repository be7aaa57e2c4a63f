"""Run untrusted commands under bubblewrap: read-only `/`, chosen writable paths, no network.

Theory of operation: a counterexample file, or a repository being audited, is code written by
someone else. Everything it runs is started through `wrap(...)`, which builds one `bwrap`
command line:

- `--ro-bind / /`: the whole host is visible but nothing in it can be written;
- `--dev /dev`, `--proc /proc`: a minimal private device tree and a procfs of the new PID
  namespace, so processes outside are invisible;
- `--tmpfs /tmp`: a private, empty `/tmp` that vanishes with the sandbox;
- `--bind P P` for each writable path, *after* the tmpfs so that a path under `/tmp` is still
  the host's directory;
- `--unshare-net` (unless `network=True`): only a loopback with nothing behind it;
- `--unshare-pid` + `--die-with-parent`: killing bwrap (or its parent) kills every process the
  sandbox started, so an interrupted replay leaves nothing running;
- `--new-session`: the sandboxed code cannot push keystrokes into the caller's terminal.

`available()` answers whether bwrap is installed *and* can create these namespaces here (a
container without user namespaces has the binary but cannot use it); the answer is cached.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from ledger_spec.errors import Unavailable

__all__ = ["SandboxUnavailable", "available", "bwrap_path", "wrap"]


class SandboxUnavailable(Unavailable, RuntimeError):
    """bubblewrap is missing or cannot create namespaces on this machine."""


def bwrap_path() -> str | None:
    """The bwrap executable on PATH, or None."""
    return shutil.which("bwrap")


@functools.cache
def available() -> bool:
    """True if bwrap is installed and a trial sandbox runs and can write only where allowed."""
    if bwrap_path() is None:
        return False
    with tempfile.TemporaryDirectory(prefix="ledger-sandbox-probe-") as probe:
        workdir = Path(probe)
        try:
            argv = wrap(["/bin/sh", "-c", "echo ok > probe"], writable=[workdir], workdir=workdir)
            done = subprocess.run(argv, capture_output=True, timeout=20, check=False)
        except (OSError, subprocess.SubprocessError, SandboxUnavailable):
            return False
        return done.returncode == 0 and (workdir / "probe").read_text() == "ok\n"


def wrap(
    argv: Sequence[str],
    *,
    writable: Sequence[Path],
    workdir: Path,
    network: bool = False,
    readable: Sequence[Path] = (),
) -> list[str]:
    """The argv that runs `argv` in a fresh sandbox, starting in `workdir`.

    Each path in `writable` must exist; it is bound read-write at the same place. Everything
    else is read-only, and `/tmp` is private: a path under the host's `/tmp` that must be seen
    (a module to import) is listed in `readable` and bound read-only.
    """
    executable = bwrap_path()
    if executable is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed")
    if not argv:
        raise ValueError("wrap needs a command to run")
    command = [
        executable,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
    ]
    for option, paths in (("--ro-bind", readable), ("--bind", writable)):
        for path in paths:
            resolved = Path(path).resolve()
            if not resolved.exists():
                raise ValueError(f"a path bound into the sandbox must exist: {path}")
            command += [option, str(resolved), str(resolved)]
    if not network:
        command.append("--unshare-net")
    command += [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
        "--chdir", str(Path(workdir).resolve()),
        "--",
        *argv,
    ]
    return command
