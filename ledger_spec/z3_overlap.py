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
from typing import Callable

import z3

from .z3_theorems import TheoremResult, solve

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


def _verdict(violation: list[z3.BoolRef], describe: Callable[[z3.ModelRef], str]) -> tuple[str, str]:
    """'proved' when the constraints stating a violation are unsatisfiable; otherwise the
    counterexample Z3 found, described by `describe`, or why the solver gave up."""
    result, model, reason = solve(violation)
    if result == z3.unsat:
        return "proved", ""
    if model is not None:
        return "counterexample", describe(model)
    return "unknown", reason


def _check(goal_holds_when: z3.BoolRef, world: dict[str, z3.ExprRef], complete_detector: bool = True) -> tuple[str, str]:
    terms = {name: world[name] for name in ("s", "t", "e", "D")}
    for function in ("V", "L", "W"):
        for moment in ("s", "t", "e", "D"):
            terms[f"{function}({moment})"] = world[function](world[moment])
    stale = world["V"](world["t"]) != world["V"](world["D"])  # the served content is stale
    return _verdict(
        [*_axioms(world, complete_detector), goal_holds_when, stale],
        lambda model: "\n".join(f"  {label} = {model.eval(term, model_completion=True)}" for label, term in terms.items()),
    )


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


def run_overlap_induction() -> list[TheoremResult]:
    return [check_overlap_induction("file"), check_overlap_induction("tree")]


# --- the same claim by induction over starts, reads, ends, changes and reports --------------
#
# A transition system for one arbitrary key `k` and one arbitrary read (nothing singles either
# out, so the proof covers every key and every read). Every step is one event, in any order and
# any number: `change` (some command, running or not, really changes `k`: its version moves and
# it is *dirty*, changed but not yet reported), `report` (the detector reports a set of keys or
# unknown scope: G moves, L moves if `k` is named, W if unknown, and naming `k` or unknown
# clears its dirty flag), and, for the tracked read, `start` (stamped with the counters now),
# `read` (it sees `k`'s version now), `finish` (its observation keeps its stamp and what it saw).
# Other commands in flight appear only through changes and reports. A Reuse is decided after
# the detector was polled: nothing is dirty. The invariant says that while nothing reached the
# read since its stamp, the key holds the version it held at the start, the read saw that
# version, and so does the observation; it is proved inductive (base case and step), and then
# implies freshness at every decision. Stamped at the end instead, the step fails.

_START, _READ, _FINISH, _CHANGE, _REPORT = range(5)


def _induction_state(tag: str) -> dict[str, z3.ExprRef]:
    ints = ("G", "W", "L", "V", "sG", "sW", "sL", "Vs", "seen", "oG", "oW", "oL", "oV")
    bools = ("dirty", "active", "read_done", "exists")
    state: dict[str, z3.ExprRef] = {name: z3.Int(f"{name}_{tag}") for name in ints}
    state.update({name: z3.Bool(f"{name}_{tag}") for name in bools})
    return state


def _reached(target: str, state: dict[str, z3.ExprRef], prefix: str) -> z3.BoolRef:
    """Whether a report since the stamp `prefix` (s: the read's, o: the observation's) reached
    the key: L or W moved for a file target, G for a tree target."""
    if target == "file":
        return z3.Or(state["L"] != state[prefix + "L"], state["W"] != state[prefix + "W"])
    return state["G"] != state[prefix + "G"]


def _induction_invariant(target: str, x: dict[str, z3.ExprRef]) -> z3.BoolRef:
    untouched_since_start = z3.And(z3.Not(_reached(target, x, "s")), z3.Not(x["dirty"]))
    return z3.And(
        z3.Implies(x["active"], z3.And(x["sG"] <= x["G"], x["sW"] <= x["W"], x["sL"] <= x["L"])),
        z3.Implies(x["exists"], z3.And(x["oG"] <= x["G"], x["oW"] <= x["W"], x["oL"] <= x["L"])),
        z3.Implies(z3.Not(x["active"]), z3.Not(x["read_done"])),
        z3.Implies(z3.And(x["active"], untouched_since_start), x["V"] == x["Vs"]),
        z3.Implies(z3.And(x["active"], x["read_done"], untouched_since_start), x["seen"] == x["Vs"]),
        z3.Implies(
            z3.And(x["exists"], z3.Not(_reached(target, x, "o")), z3.Not(x["dirty"])), x["V"] == x["oV"]
        ),
    )


def _induction_step(stamp: str, pre: dict[str, z3.ExprRef], post: dict[str, z3.ExprRef]) -> z3.BoolRef:
    """One event between `pre` and `post`; `stamp` 's' stamps the observation at the read's
    start (the spec), 'e' at its end (broken)."""
    kind = z3.Int("kind")
    report_k, report_unknown = z3.Bool("report_names_key"), z3.Bool("report_unknown")
    keep = lambda *names: [post[name] == pre[name] for name in names]  # noqa: E731
    stamps = ("sG", "sW", "sL", "Vs")
    observation = ("oG", "oW", "oL", "oV", "exists")
    counters = ("G", "W", "L")
    end_stamp = {"G": pre["G"], "W": pre["W"], "L": pre["L"]}
    start_stamp = {"G": pre["sG"], "W": pre["sW"], "L": pre["sL"]}
    chosen = start_stamp if stamp == "s" else end_stamp
    events = [
        z3.And(kind == _START, z3.Not(pre["active"]), post["active"], z3.Not(post["read_done"]),
               post["sG"] == pre["G"], post["sW"] == pre["W"], post["sL"] == pre["L"], post["Vs"] == pre["V"],
               *keep("V", "dirty", "seen", *counters, *observation)),
        z3.And(kind == _READ, pre["active"], z3.Not(pre["read_done"]), post["read_done"], post["active"],
               post["seen"] == pre["V"], *keep("V", "dirty", *counters, *stamps, *observation)),
        z3.And(kind == _FINISH, pre["active"], pre["read_done"], z3.Not(post["active"]), z3.Not(post["read_done"]),
               post["exists"], post["oV"] == pre["seen"],
               post["oG"] == chosen["G"], post["oW"] == chosen["W"], post["oL"] == chosen["L"],
               *keep("V", "dirty", *counters)),
        z3.And(kind == _CHANGE, post["V"] != pre["V"], post["dirty"],
               *keep("active", "read_done", "seen", *counters, *stamps, *observation)),
        z3.And(kind == _REPORT,  # a non-empty report: of `k`, of unknown scope, or of other keys
               post["G"] == pre["G"] + 1,
               post["L"] == pre["L"] + z3.If(report_k, 1, 0),
               post["W"] == pre["W"] + z3.If(report_unknown, 1, 0),
               post["dirty"] == z3.And(pre["dirty"], z3.Not(report_k), z3.Not(report_unknown)),
               *keep("V", "active", "read_done", "seen", *stamps, *observation)),
    ]
    return z3.Or(*events)


def _induction_initial(x: dict[str, z3.ExprRef]) -> z3.BoolRef:
    return z3.And(x["G"] == 0, x["W"] == 0, x["L"] == 0, z3.Not(x["dirty"]), z3.Not(x["active"]),
                  z3.Not(x["read_done"]), z3.Not(x["exists"]))


def _every_declaration(model: z3.ModelRef) -> str:
    shown = sorted((str(d), str(model[d])) for d in model.decls())
    return "\n".join(f"  {name} = {value}" for name, value in shown)


def _unsat(constraints: list[z3.BoolRef]) -> tuple[str, str]:
    return _verdict(constraints, _every_declaration)


def check_overlap_induction(target: str = "file", stamp: str = "s") -> TheoremResult:
    """By induction: base case, inductive step, and the invariant implying freshness at a
    decision (detector polled: nothing dirty). `stamp='e'` (for the tests: must fail)."""
    started = time.perf_counter()
    pre, post = _induction_state("pre"), _induction_state("post")
    phases = [
        [_induction_initial(pre), z3.Not(_induction_invariant(target, pre))],
        [_induction_invariant(target, pre), _induction_step(stamp, pre, post), z3.Not(_induction_invariant(target, post))],
        [_induction_invariant(target, pre), pre["exists"], z3.Not(_reached(target, pre, "o")), z3.Not(pre["dirty"]),
         pre["V"] != pre["oV"]],
    ]
    status, text = "proved", ""
    for phase in phases:
        status, text = _unsat(phase)
        if status != "proved":
            break
    name = f"overlap-induction-{target}" if stamp == "s" else f"overlap-induction-{target}-end-stamp"
    return _result(
        name,
        f"by induction over any interleaving of starts, reads, ends, changes and reports: a {target} "
        f"observation stamped at its command's {'start' if stamp == 's' else 'end'} and current at a "
        "decision holds the key's version",
        "positive",
        (status, text),
        started,
    )
