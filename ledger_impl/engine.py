"""The step logic both drivers share: `Runtime` (runs commands itself) and `DurableSession`
(governs commands an agent runs, across hook processes).

Theory of operation. One step of either driver is, in order:

1. classify once: the command text becomes a `ledger_spec.Command` (category, normalized
   spelling, target), resolved against the root and the environment the command runs with;
2. poll: record in the ledger every change made since the last step (background jobs, an
   editor, another process), or unknown scope when nothing can vouch for the workspace;
3. fingerprint (`observation_fingerprint`): what a read's output depends on outside the
   counters' view, taken with stat calls, or None when it cannot be reused (with the reason,
   `fingerprint_and_refusal`, when that is a bound of Ledger's: the driver shows it);
4. govern (`first_reuse`): the spec's decision, tried with each candidate fingerprint (with
   the probe on: one per confirmed probe whose traced dependencies hold, newest first);
5. start: the command is stamped with the counters at its start (a Reuse ends the step here:
   nothing runs);
6. finish: its result is recorded as an observation only if it is the whole truth and the
   fingerprint did not move while it ran.

Both drivers ask their detector the one question of `ledger_impl.detectors.protocol`: what
changed since the baseline its last report handed back.

What each driver still owns:
- `Runtime`: running the command (bash in the root, or the harness's executor), the
  detector's reports just before and after it (its baseline kept in memory), background jobs
  and their unknown scope, and the probe run in process (`ProbeGuard`); start and finish are
  one `Ledger.advance`.
- `DurableSession`: the stored state (one SQLite transaction per hook call), the poll against
  the baseline stored with it, pending rows (their expiry, through spec
  `expire`; a call id decided twice; the `may_write` a read inherits from an earlier writer
  under its id), and the probe queued for after the agent's answer; start and finish are the
  spec's `start` and `finish`, one hook call apart.

No driver refuses a Reuse on its own: every refusal is a rule of spec `govern`, where the
proofs and the differential see it. No Reuse while a writer is in flight
(`ledger_spec.writers_in_flight`); and what a hook knows of its call travels as a
`ledger_spec.Request`: a call id still in flight is never served, an agent's rendered output
serves only the same command, and a call the agent runs anyway gets the Nudge naming the
result instead of a Reuse.
"""

from __future__ import annotations

import os
from typing import Iterable, Mapping

import attrs

from ledger_spec import ANY_CALL, STEADY, Changes, Command, Decision, Fingerprint, Request, Reuse
from ledger_spec.degraded import Degraded

from . import fingerprint as fingerprints
from .ledger import Ledger

# What is recorded when nothing can say which keys changed: every observation goes stale.
UNKNOWN_SCOPE = Changes(unknown=True)


def observation_fingerprint(
    root: os.PathLike[str] | str, command: Command, environment: Mapping[str, str], *, enabled: bool = True
) -> Fingerprint | None:
    """The fingerprint govern and the observation use: only a read with a target has one that
    matters (None: never reused). `enabled=False` (the Runtime measuring the other lines alone)
    gives the steady value the spec defaults to, except for a read that may reach a
    repository outside the root (a `.git` file), which nothing else covers: never reused."""
    return fingerprint_and_refusal(root, command, environment, enabled=enabled)[0]


def fingerprint_and_refusal(
    root: os.PathLike[str] | str, command: Command, environment: Mapping[str, str], *, enabled: bool = True
) -> tuple[Fingerprint | None, Degraded | None]:
    """`observation_fingerprint`, and, when a read has none because its inputs could not all
    be found (a bound of Ledger's, `fingerprint.take_or_refusal`), why: the driver shows it."""
    if not enabled:
        outside = command.read_only and fingerprints.repository_outside_the_root(root, command)
        return (None if outside else STEADY), None
    if not command.read_only or command.target is None:
        return None, None
    found = fingerprints.take_or_refusal(root, command, environment)
    return (None, found) if isinstance(found, Degraded) else (found, None)


def first_reuse(
    ledger: Ledger, command: Command, candidates: Iterable[Fingerprint | None], last: Fingerprint | None,
    request: Request = ANY_CALL,
) -> tuple[Decision, Fingerprint | None]:
    """Govern `command` (asked as `request`) with the first candidate fingerprint under which
    a stored result serves it (a Reuse; for a call never withheld, the Nudge naming that
    result); failing that, with `last`. Returns the decision and the fingerprint it was made
    with."""
    served = attrs.evolve(request, withhold=True)
    for now in candidates:
        decision = ledger.govern(command, now, served)
        if isinstance(decision, Reuse):
            # A call the agent runs anyway is asked again as it is: it gets the Nudge instead.
            return (decision if served == request else ledger.govern(command, now, request)), now
    return ledger.govern(command, last, request), last
