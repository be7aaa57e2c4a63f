"""Overlapping commands: an observation stamped with the counters at its command's start stays
fresh under any interleaving of starts, ends, changes and reports. Checked with Z3.

Theory of operation. Time is the integers. For one arbitrary key `k`:
- `V(x)` is the content version `k` holds at time `x`; any write, by any command, at any moment,
  is a change of `V`.
- `L(x)`, `W(x)`, `G(x)` count the reports recorded up to time `x` that name `k`, that have
  unknown scope, and all reports. They never decrease, and `G` moves at least as much as `L` and
  `W` over any interval (every report advances `G`).
- A read starts at `s`, reads `k` at some `t` in its execution, ends at `e`, and is served again
  at a decision `D` after its end: `s <= t <= e <= D`.
- The detector is complete and polled before every Reuse: if `k`'s content at `D` differs from
  its content at any earlier `x`, a report naming `k` (or of unknown scope) was recorded in
  between.
Other commands running at the same time appear only through `V` and the counters, with no
constraint on when they start, write, end or are recorded, so the theorems hold for every
interleaving of any number of them.

Positive theorems: stamped at the start, a current file observation (`L` and `W` unchanged
since `s`) or tree observation (`G` unchanged since `s`) still holds what the read saw.
Negative theorem: stamped at the end, it may not; Z3 must find the interleaving (a write lands
after the read saw `k` and is reported before the read ends).
"""

from __future__ import annotations

import time

import z3

from .z3_theorems import CHECK_TIMEOUT_MS, TheoremResult

_INT = z3.IntSort()


def _world() -> dict[str, z3.ExprRef]:
    names = ("V", "L", "W", "G")
    world: dict[str, z3.ExprRef] = {name: z3.Function(name, _INT, _INT) for name in names}
    world.update({name: z3.Int(name) for name in ("s", "t", "e", "D")})
    return world


def _axioms(w: dict[str, z3.ExprRef], complete_detector: bool = True) -> list[z3.BoolRef]:
    x, y = z3.Ints("x y")
    V, L, W, G = w["V"], w["L"], w["W"], w["G"]
    s, t, e, D = w["s"], w["t"], w["e"], w["D"]
    axioms = [
        s <= t,
        t <= e,
        e <= D,
        # Counters never decrease; G moves with every report, so at least as much as L and W.
        z3.ForAll([x, y], z3.Implies(x <= y, z3.And(L(x) <= L(y), W(x) <= W(y))), patterns=[z3.MultiPattern(L(x), L(y))]),
        z3.ForAll([x, y], z3.Implies(x <= y, z3.And(G(y) - G(x) >= L(y) - L(x), G(y) - G(x) >= W(y) - W(x)))),
    ]
    if complete_detector:  # polled before the decision at D
        axioms.append(z3.ForAll([x], z3.Implies(z3.And(x <= D, V(x) != V(D)), z3.Or(L(D) > L(x), W(D) > W(x)))))
    return axioms


def _check(goal_holds_when: z3.BoolRef, world: dict[str, z3.ExprRef], complete_detector: bool = True) -> tuple[str, str]:
    solver = z3.Solver()
    solver.set("timeout", CHECK_TIMEOUT_MS)
    solver.add(*_axioms(world, complete_detector))
    solver.add(goal_holds_when)
    solver.add(world["V"](world["t"]) != world["V"](world["D"]))  # the served content is stale
    result = solver.check()
    if result == z3.unsat:
        return "proved", ""
    if result == z3.sat:
        model = solver.model()
        terms = {name: world[name] for name in ("s", "t", "e", "D")}
        for function in ("V", "L", "W"):
            for moment in ("s", "t", "e", "D"):
                terms[f"{function}({moment})"] = world[function](world[moment])
        text = "\n".join(f"  {label} = {model.eval(term, model_completion=True)}" for label, term in terms.items())
        return "counterexample", text
    return "unknown", solver.reason_unknown()


def _result(name: str, statement: str, kind: str, check: tuple[str, str], started: float) -> TheoremResult:
    status, model_text = check
    return TheoremResult(
        name=name, kind=kind, status=status, seconds=time.perf_counter() - started,  # type: ignore[arg-type]
        model_text=model_text, statement=statement,
    )


def check_overlap_file(stamp: str = "s", *, complete_detector: bool = True) -> TheoremResult:
    """A file observation stamped at `stamp` ('s' start, 'e' end) and current at D is fresh.
    `complete_detector=False` drops the detector's obligation (for the tests: must fail)."""
    started, w = time.perf_counter(), _world()
    current = z3.And(w["L"](w["D"]) == w["L"](w[stamp]), w["W"](w["D"]) == w["W"](w[stamp]))
    if stamp == "s":
        return _result(
            "overlap-freshness-file",
            "stamped at its command's start, a current file observation holds what the read saw, "
            "under any interleaving of other commands",
            "positive",
            _check(current, w, complete_detector),
            started,
        )
    return _result(
        "stale-if-stamped-at-end",
        "stamped at its command's end, a file observation can look current while a write that "
        "overlapped the read changed it (Z3 must find the interleaving)",
        "negative",
        _check(current, w),
        started,
    )


def check_overlap_tree(stamp: str = "s") -> TheoremResult:
    """A tree observation stamped at the start (G unchanged since) and current at D is fresh,
    for an arbitrary key. `stamp='e'` (for the tests: must fail) stamps it at the end."""
    started, w = time.perf_counter(), _world()
    current = w["G"](w["D"]) == w["G"](w[stamp])
    return _result(
        "overlap-freshness-tree",
        "stamped at its command's start, a current tree observation sees every key as the read "
        "saw it, under any interleaving of other commands",
        "positive",
        _check(current, w),
        started,
    )


def run_overlap_theorems() -> list[TheoremResult]:
    return [check_overlap_file("s"), check_overlap_tree(), check_overlap_file("e")]
