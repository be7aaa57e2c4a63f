"""Reuse on observed dependencies equals a fresh run, given the probe's two assumptions.
Checked with Z3.

Theory of operation. A world maps every path (an uninterpreted sort) to a content version;
a command's output is `out(world, clock)`. Four moments: the agent's run (`w0`, `c0`), the
probe (`wp`, `cp`, the clock moved), the recording of the dependency set `D` (its inside
paths' counters, its outside paths' identities in world `ws`), and a later decision (`w1`,
`c1`). What the implementation guarantees, as constraints:

- the probe printed what the agent saw: `out(wp, cp) == out(w0, c0)`;
- an outside dependency did not change between the probe and the recording (its ctime is
  before the command started: `ledger_impl.probe.dependencies`): `ws[p] == wp[p]`;
- the detector is complete (as for every counter theorem): an inside path whose content
  moved after the probe moved its counter or W;
- govern served: the dependencies hold (`ledger_spec.dependencies.holds`): counters of inside
  paths and W unchanged, identities of outside paths unchanged; an identity changes when the
  content does, so an unchanged identity is modeled as an unchanged version.

The two assumptions the safety claim rests on, stated for the worlds and clocks involved (the
universal statements imply these instances, so proving from the instances is proving from them):

- the trace is complete: a world that agrees with the probe's on every path of `D` gives the
  same output at the probe's clock;
- the probe is deterministic: a run whose clock moved printed the same, so the output does not
  depend on the clock.

Positive theorem: `out(w1, c1) == out(w0, c0)`, the Reuse prints what running would.
Negative theorems: drop either assumption and Z3 finds a stale Reuse.
"""

from __future__ import annotations

from typing import Final, Literal

import z3

Status = Literal["proved", "counterexample", "unknown"]

_PATH = z3.DeclareSort("Path")
_WORLD = z3.ArraySort(_PATH, z3.IntSort())


# Rules of the implementation the proof needs; dropping any one must make it fail
# (tests/test_z3_probe.py): the ctime rule, and each clause of `dependencies.holds`.
RULES: Final = ("outside-unchanged-since-start", "wildcard-unchanged", "inside-counters-unchanged", "outside-identities-unchanged")


def _constraints(
    *, trace_complete: bool, deterministic: bool, dropped: str | None = None
) -> tuple[list[z3.BoolRef], z3.BoolRef]:
    """The model's constraints (without the rule `dropped`) and the claim
    `out(w1, c1) == out(w0, c0)`."""
    out = z3.Function("out", _WORLD, z3.IntSort(), z3.IntSort())
    w0, wp, ws, w1 = (z3.Array(name, _PATH, z3.IntSort()) for name in ("w0", "wp", "ws", "w1"))
    c0, cp, c1 = z3.Ints("c0 cp c1")
    traced = z3.Array("D", _PATH, z3.BoolSort())
    inside = z3.Array("inside", _PATH, z3.BoolSort())
    local_recorded = z3.Array("L_recorded", _PATH, z3.IntSort())
    local_now = z3.Array("L_now", _PATH, z3.IntSort())
    wildcard_recorded, wildcard_now = z3.Ints("W_recorded W_now")
    p = z3.Const("p", _PATH)
    rules = {
        # Outside dependencies: unchanged from the probe to the recording (the ctime rule).
        "outside-unchanged-since-start": z3.ForAll([p], z3.Implies(z3.And(traced[p], z3.Not(inside[p])), ws[p] == wp[p])),
        # govern served: every dependency holds. An identity (stat data plus a content hash)
        # changes when the content does, so equal identities are modeled as equal versions.
        "wildcard-unchanged": wildcard_now == wildcard_recorded,
        "inside-counters-unchanged": z3.ForAll(
            [p], z3.Implies(z3.And(traced[p], inside[p]), local_now[p] == local_recorded[p])
        ),
        "outside-identities-unchanged": z3.ForAll([p], z3.Implies(z3.And(traced[p], z3.Not(inside[p])), w1[p] == ws[p])),
    }
    constraints: list[z3.BoolRef] = [rule for name, rule in rules.items() if name != dropped]
    constraints += [
        cp != c0,  # the clock was moved
        out(wp, cp) == out(w0, c0),  # the probe printed what the agent saw
        # Inside dependencies: the counters are recorded after the probe, and the detector is
        # complete.
        z3.ForAll(
            [p],
            z3.Implies(
                z3.And(inside[p], w1[p] != wp[p]),
                z3.Or(local_now[p] != local_recorded[p], wildcard_now != wildcard_recorded),
            ),
        ),
    ]
    if trace_complete:
        for world in (w0, w1):
            agrees = z3.ForAll([p], z3.Implies(traced[p], world[p] == wp[p]))
            constraints.append(z3.Implies(agrees, out(world, cp) == out(wp, cp)))
    if deterministic:
        constraints += [out(w1, c1) == out(w1, cp), out(w0, c0) == out(w0, cp)]
    return constraints, out(w1, c1) == out(w0, c0)


def check(
    *, trace_complete: bool = True, deterministic: bool = True, dropped: str | None = None, timeout_ms: int = 10_000
) -> tuple[Status, str]:
    """`proved` if the claim follows; otherwise `counterexample` with the model's text."""
    constraints, claim = _constraints(trace_complete=trace_complete, deterministic=deterministic, dropped=dropped)
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*constraints, z3.Not(claim))
    result = solver.check()
    if result == z3.unsat:
        return "proved", ""
    if result == z3.sat:
        return "counterexample", "a stale Reuse: out(w1, c1) != out(w0, c0) with every dependency holding"
    return "unknown", str(solver.reason_unknown())
