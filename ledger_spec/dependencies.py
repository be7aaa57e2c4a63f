"""Observed dependencies: what a probed read's output rests on, and when it still holds.

A read that passed its probe (`ledger_impl.probe`) carries a dependency set: the keys inside
the root its trace touched, whether it listed a directory there, and each outside path with
the identity it had. It may serve again only while every dependency is unchanged:

- an inside key `k`: `L[k]` is what it was when the set was recorded, and so is `W` (a
  change of unknown scope may have touched any key);
- a listed directory inside the root depends on every key below it, which no per-key
  counter names: `G` is what it was;
- an outside path: its identity now equals the recorded one.

The observation's fingerprint names the probe (`ledger_impl.probe.guard`): the runtime
passes govern a fingerprint naming only a probe whose set holds by `holds`, so the
observation's `reusable` (fingerprint equality) includes this rule. The safety claim that
rests on it, proved in `z3_probe`: if the trace is complete (the output is a function of the
traced paths' contents) and the probe deterministic (moving the clock did not change the
output, so time does not), a Reuse whose dependencies hold prints what a fresh run would.
"""

from __future__ import annotations

from typing import Hashable, Mapping

import attrs


@attrs.frozen
class Counters:
    """G, W and the L of each inside key, when a dependency set was recorded or now."""

    total: int
    wildcard: int
    locals: tuple[tuple[str, int], ...]


@attrs.frozen
class Dependencies:
    inside: frozenset[str]
    listed_inside: bool
    outside: tuple[tuple[str, Hashable], ...]  # path, identity when recorded
    never: str | None = None  # a dependency that cannot be revalidated: never holds


def holds(dependencies: Dependencies, recorded: Counters, now: Counters, outside_now: Mapping[str, Hashable]) -> bool:
    """Whether every dependency is unchanged: `now` holds the counters of the same keys as
    `recorded`, `outside_now` each outside path's identity now."""
    if dependencies.never is not None:
        return False
    if now.wildcard != recorded.wildcard:
        return False
    if dependencies.listed_inside and now.total != recorded.total:
        return False
    if dict(now.locals) != dict(recorded.locals):
        return False
    return all(outside_now.get(path) == identity for path, identity in dependencies.outside)
