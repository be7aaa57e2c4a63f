"""The moved clock of the probe run: libfaketime preloaded into every traced process.

A read whose output depends on "now" (a date it prints, a "recent" cut-off such as `ls -l`'s six
months or `find -mtime`, git's relative dates, a configuration that picks a branch by date)
prints something else when the clock has moved, so the probe's output differs from the
agent's and the read is never served. The shift is `CLOCK_SHIFT`, 400 days forward:

- more than a year, so every printed date and year changes, and every "within the last N
  days/months" window of the usual tools (ls's 6 months, find/git ages in days or weeks) is
  crossed;
- not a whole number of weeks or years, so weekday and day-of-year both change;
- far from 2038, so 32-bit `time_t` programs still work.

libfaketime works by preloading: a statically linked program (no PT_INTERP program header)
never loads it and sees the real clock, so a trace that executed one cannot say anything
about time dependence (`clock_unreachable`).
"""

from __future__ import annotations

import os
import struct
from typing import Final, Mapping

from ledger_spec.degraded import Cause, Degraded, Effect

LIBFAKETIME: Final = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
CLOCK_SHIFT: Final = "+400d"
# Files libfaketime itself creates for sharing its state between processes: its own, not the
# command's, dependencies.
_OWN_FILES: Final = ("/dev/shm/sem.", "/dev/shm/faketime_shm_")
_OWN_CONFIG: Final = frozenset({"/etc/faketimerc", "(null)"})
_PT_INTERP: Final = 3
_HEADER_BYTES: Final = 64


def shifted_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """The variables that move the clock of a traced process, on top of `environment`: the
    command's own LD_PRELOAD, if any, still loads after libfaketime."""
    preload = environment.get("LD_PRELOAD", "")
    return {
        "LD_PRELOAD": f"{LIBFAKETIME}:{preload}" if preload else LIBFAKETIME,
        "FAKETIME": CLOCK_SHIFT,
        # Monotonic clocks measure durations (timeouts, sleeps); moving them can stall a wait.
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }


def own_file(path: str) -> bool:
    """Whether `path` is one that libfaketime opens for itself (never a dependency): its
    library, its shared state, its configuration files (`$HOME/.faketimerc`, also looked
    up as `(null)/.faketimerc` when HOME is unset)."""
    return (
        path == LIBFAKETIME
        or any(path.startswith(prefix) for prefix in _OWN_FILES)
        or path in _OWN_CONFIG
        or path.endswith("/.faketimerc")
        or path.endswith("/(null)")
    )


def available() -> bool:
    return os.path.isfile(LIBFAKETIME)


def interpreter_of_script(path: str) -> str | None:
    """The program a `#!` line names: the kernel opens it without a system call the trace
    would show, so it is added to the dependencies by hand."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].strip()
    if not line:
        return None
    return os.fsdecode(line.split()[0])


def clock_unreachable(path: str) -> Degraded | None:
    """Why the moved clock cannot reach the executable `path` (statically linked ELF), or
    None when it can (dynamically linked, a script whose interpreter is checked on its own,
    or not an ELF file)."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(_HEADER_BYTES)
            if header[:4] != b"\x7fELF" or len(header) < 52:
                return None
            wide = header[4] == 2
            order = "<" if header[5] == 1 else ">"
            if wide:
                phoff, = struct.unpack_from(order + "Q", header, 32)
                phentsize, phnum = struct.unpack_from(order + "HH", header, 54)
            else:
                phoff, = struct.unpack_from(order + "I", header, 28)
                phentsize, phnum = struct.unpack_from(order + "HH", header, 42)
            handle.seek(phoff)
            table = handle.read(phentsize * phnum)
    except (OSError, struct.error):
        return Degraded(Cause.PROBE_EXECUTABLE_UNREADABLE, (path,), Effect.NOT_SERVED)
    for index in range(phnum):
        entry = table[index * phentsize : index * phentsize + 4]
        if len(entry) == 4 and struct.unpack(order + "I", entry)[0] == _PT_INTERP:
            return None
    return Degraded(Cause.PROBE_STATIC_EXECUTABLE, (path,), Effect.NOT_SERVED)
