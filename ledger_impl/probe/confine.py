"""Landlock inside the probe's sandbox: no file opens for writing except where the sandbox's own
writable places are.

bubblewrap binds the host read-only, but a read-only mount does not stop opening a FIFO or a
device for writing: a reader on the host would receive what the probe writes. No mount option
closes that, and neither strace nor a seccomp filter can refuse an open by its path. Landlock
can: the command (and strace, which starts it) may open files for writing only beneath the
directories `argv` allows (the trace directory, the sandbox's own /dev, its private /tmp).
Pipes and sockets made by the processes themselves are on no path and stay usable.

The restriction is made by a small Python program run between bubblewrap and strace (bubblewrap
itself cannot run under Landlock, which forbids mounting); it costs about 10 ms a probe. On a
kernel without Landlock (before 5.13, or not enabled) it runs the command unconfined: a host
FIFO's reader may then receive what a misclassified writer's probe writes, and the read is
still never served (`dependencies._reached_the_host`). `available()` says which case holds.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Final

# Run with `python3 -I -S -c CONFINE ALLOWED... -- PROGRAM ARGS...` (no site, no user paths).
CONFINE: Final = r"""
import ctypes, os, sys
WRITE_FILE = 1 << 1
PATH_BENEATH = 1
libc = ctypes.CDLL(None, use_errno=True)
class Ruleset(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]
class Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]
split = sys.argv.index("--")
allowed, program = sys.argv[1:split], sys.argv[split + 1:]
ruleset = Ruleset(WRITE_FILE)
fd = libc.syscall(444, ctypes.byref(ruleset), ctypes.sizeof(ruleset), 0)
if fd >= 0:
    for path in allowed:
        try:
            parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue
        rule = Beneath(WRITE_FILE, parent)
        if libc.syscall(445, fd, PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            sys.exit(f"landlock_add_rule {path}: errno {ctypes.get_errno()}")
        os.close(parent)
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(446, fd, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        sys.exit(f"landlock_restrict_self: errno {ctypes.get_errno()}")
os.execvp(program[0], program)
"""


@functools.cache
def available() -> bool:
    """Whether this kernel has Landlock (its ABI version answers)."""
    import ctypes  # here, not at the top: every `ledger hook` process imports this module

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.syscall(444, None, 0, 1)) >= 1  # LANDLOCK_CREATE_RULESET_VERSION
    except (OSError, AttributeError):
        return False


def prefix(allowed: list[str]) -> list[str]:
    """The argv that confines what follows it: writes allowed only beneath `allowed`."""
    # The real path: a virtual environment's python may live under /tmp, which the sandbox hides.
    return [os.path.realpath(sys.executable), "-I", "-S", "-c", CONFINE, *allowed, "--"]
