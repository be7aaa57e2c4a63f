"""Every listed class the Runtime must get right, played once, whatever the hunt's budget drew.

The safety hunt draws its steps at random: a class that needs two particular reads of one file
(`cat -n`, then `cat -n -E`) or a change of one variable between two reads meets its reads only
now and then in a `ci` budget of forty runs, and a bug in it survived `ledger verify`
(`scripts/verify_under_mutants.py`). Each case here is a short session with one such class,
checked step by step by the same oracle (`CheckedSession`: every Reuse run again for real and
compared). A case names the lines it runs with: "shipped" (fingerprint and probe on), or
"fingerprint" (the probe off): a class that both lines cover must be covered by each, since
either may be the one that is wrong. The hook path has its own sweep (`hook_hunt.SWEEP`).

Steps: ("step", command) runs a command; ("environment", name, value) changes a variable of the
session's environment between two commands, as an agent harness that sets variables per call does;
("pause", seconds) lets time pass between two commands (a background job finishes meanwhile).

A case runs with the default detector unless `DETECTORS` names another: a rule of the Runtime's
own that every shipped sensor masks (they all report a background job's last write at the next
poll) is checked with the rules detector, which sees nothing between steps, so that the rule
alone stands between the job and a stale Reuse.
"""

from __future__ import annotations

import time
from typing import Callable, Final

from ledger_impl.detectors import RulesDetector, default_detector

from .oracle import Violation, checked_session, fingerprint_line, hunt_environment, probe_line
from .shell_strategies import OUTSIDE_PLACEHOLDER, WorkspaceSetup
from .sweeper import sweeping

SweepStep = tuple[str, ...]
LINES: Final = {"shipped": (True, True), "fingerprint": (True, False)}  # (fingerprint, probe)

SETUP: Final = WorkspaceSetup(
    files={"a.txt": "alpha 1\n\tbeta 2  \ngamma 3\n", "b.txt": "beta\n"}, outside={}, environment={"TZ": "UTC"}
)
# A tail first on PATH that prints a line of its own, then runs the system's (found by `command
# -v` with the shadow's directory left out of PATH).
SHADOW_TAIL: Final = (
    f"real=$(PATH=${{PATH#*:}} command -v tail) && printf '#!/bin/sh\\necho shadowed tail\\nexec %s \"$@\"\\n' \"$real\" "
    f"> {OUTSIDE_PLACEHOLDER}/bin/tail && chmod +x {OUTSIDE_PLACEHOLDER}/bin/tail"
)

# `cat` served by a version manager (PATH: @OUTSIDE@/shims first; shims/cat -> versions/current/cat,
# `current` a link to a version directory). Version "a" is the system's cat, except that when a
# flag file exists it removes it, switches `current` to "b" and runs "b", which prints a line of
# its own first: a program switched by another process while a read ran, in one deterministic step.
VERSIONS: Final = f"{OUTSIDE_PLACEHOLDER}/versions"
SWITCHABLE_CAT: Final = (
    f"mkdir -p {VERSIONS}/a {VERSIONS}/b {OUTSIDE_PLACEHOLDER}/shims && "
    f"printf '#!/bin/sh\\necho cat version b\\nexec /bin/cat \"$@\"\\n' > {VERSIONS}/b/cat && "
    f"printf '#!/bin/sh\\nif [ -e {OUTSIDE_PLACEHOLDER}/switch-once ]; then rm -f {OUTSIDE_PLACEHOLDER}/switch-once; "
    f"ln -sfn b {VERSIONS}/current; exec {VERSIONS}/b/cat \"$@\"; fi\\nexec /bin/cat \"$@\"\\n' > {VERSIONS}/a/cat && "
    f"chmod +x {VERSIONS}/a/cat {VERSIONS}/b/cat && ln -sfn a {VERSIONS}/current && "
    f"ln -sfn {VERSIONS}/current/cat {OUTSIDE_PLACEHOLDER}/shims/cat"
)

CASES: Final[dict[str, tuple[str, tuple[SweepStep, ...]]]] = {
    # `-E` marks line ends, `-T` shows tabs, `-A` both: never the plain numbered view's lines.
    "cat -n with a flag that changes its lines": ("shipped", tuple(
        ("step", command) for command in ("cat -n a.txt", "cat -n -E a.txt", "cat -n -T a.txt", "cat -n -A a.txt"))),
    # The probe refuses this one too; the fingerprint's rule (a shadowed line tool serves only
    # verbatim repeats) must hold by itself.
    "a line tool shadowed on PATH, then a narrower read": ("fingerprint", (
        ("step", SHADOW_TAIL), ("step", "tail -n +1 a.txt"), ("step", "tail -n +2 a.txt"))),
    # The fingerprint taken after the run differs from the one before: the output may be the
    # other version's, and must not be served once the first version is back.
    "a program switched while the read ran, and back": ("fingerprint", (
        ("step", SWITCHABLE_CAT), ("environment", "PATH", f"{OUTSIDE_PLACEHOLDER}/shims:@PATH@"),
        ("step", f"touch {OUTSIDE_PLACEHOLDER}/switch-once"), ("step", "cat b.txt"),
        ("step", f"ln -sfn a {VERSIONS}/current"), ("step", "cat b.txt"))),
    "a new value of TZ between two listings": ("fingerprint", (
        ("step", "ls -l a.txt"), ("step", "ls -l a.txt"), ("environment", "TZ", "Asia/Tokyo"), ("step", "ls -l a.txt"))),
    # The listing runs while the job sleeps; the job makes a file and exits between the two
    # listings. The step after it exits is unknown scope by the Runtime's rule, whatever the
    # detector saw; a listing's fingerprint does not hold the root's entries, so that rule is
    # all that stands. (A listing slower than the job's sleep sees the file itself: the case
    # then proves nothing, but never fails a correct Runtime.)
    "a background job's last write, with a detector that sees nothing between steps": ("fingerprint", (
        ("step", "(sleep 1; touch written-late.txt) &"), ("step", "ls"), ("pause", "2"), ("step", "ls"))),
}
DETECTORS: Final[dict[str, Callable[[], object]]] = {
    "a background job's last write, with a detector that sees nothing between steps": RulesDetector,
}


def run_case(
    lines: str, steps: tuple[SweepStep, ...], setup: WorkspaceSetup = SETUP,
    detector: Callable[[], object] = default_detector,
) -> tuple[int, Violation | None]:
    """(commands run, the first violation or None) of one case."""
    fingerprint, probe = LINES[lines]
    run = 0
    with fingerprint_line(fingerprint), probe_line(probe), checked_session(setup, detector()) as session:
        for step in steps:
            kind, *rest = step
            if kind == "step":
                run += 1
                record = session.step(rest[0])
                if record.violation is not None:
                    return run, record.violation
            elif kind == "environment":
                session.set_environment(rest[0], rest[1])
            elif kind == "pause":
                time.sleep(float(rest[0]))
            else:
                raise ValueError(f"unknown sweep step {step!r}")
    return run, None


def run_runtime_sweep() -> tuple[int, list[tuple[str, Violation]]]:
    """Every case once: (commands run, the violations with their case's name)."""
    found: list[tuple[str, Violation]] = []
    commands = 0
    with hunt_environment(), sweeping():
        for name, (lines, steps) in CASES.items():
            run, violation = run_case(lines, steps, detector=DETECTORS.get(name, default_detector))
            commands += run
            if violation is not None:
                found.append((name, violation))
    return commands, found
