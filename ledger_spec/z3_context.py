"""A reference is only ever served for a result the model holds: checked with Z3.

Theory of operation. The answer rule of `ledger_spec.context` is encoded as a transition
system over a symbolic sequence of `LENGTH` events, each one of

- *deliver(s, full)*: the output of step `s` reached the model (a finished call's result);
- *new epoch*: content may have left the context (compaction, clear, resume, another
  session or owner: `context.attend` turns an owner change into this event);
- *answer(s, full)*: a Reuse of step `s`, answered by reference when the rule holds in the
  state before it, else verbatim, which delivers `s` again (`full`: the agent did not cut it).

The state is the current epoch and, per step, the epoch and fullness of its newest delivery
(arrays over all integers, so every step is covered at once). The claim is stated on the
event sequence itself, not on the state: every reference answer to step `s` at position `i`
is preceded by a full delivery of `s` (a deliver event, or a verbatim answer) with no new epoch
in between. Every position of every sequence up to `LENGTH` events is checked at once (the
claim at a position depends only on its prefix).

`check(dropped=RULE)` drops one test of the rule; Z3 must then find a sequence in which a
reference points at a result the model no longer holds, or never held in full.

`check_inductive()` makes the claim one for sequences of every length. It adds a ghost map
`held`: step -> "a full delivery of it since the last new epoch", which is the claim's
witness read forward (a new epoch empties it; a full delivery of s sets held[s]). Its
invariant, for every step s: the newest delivery's epoch is not in the future, and a full
newest delivery in the current epoch implies held[s]. Z3 shows it holds initially, that one
event of any kind from any state satisfying it keeps it, and that a reference answer is then
only given where held[s]: by induction over the sequence, every reference in every sequence
points at a result held in full.
"""

from __future__ import annotations

from typing import Final, Literal

import z3

Status = Literal["proved", "counterexample", "unknown"]

LENGTH: Final = 8
"""Events in the symbolic sequence: the shortest counterexample needs three (deliver, new epoch,
answer); eight lets any mix of them repeat."""

#: The tests of the answer rule; dropping either must break the proof (tests/test_z3_context.py).
RULES: Final = ("epoch-test", "full-test")

_DELIVER, _NEW_EPOCH, _ANSWER = 0, 1, 2
_KIND_NAMES: Final = {_DELIVER: "deliver", _NEW_EPOCH: "new epoch", _ANSWER: "answer"}


def check(*, dropped: str | None = None, length: int = LENGTH, timeout_ms: int = 10_000) -> tuple[Status, str]:
    """`proved` if every reference in every sequence of `length` events points at a full
    delivery in the current epoch; otherwise `counterexample` with the sequence Z3 found."""
    kind = [z3.Int(f"kind_{i}") for i in range(length)]
    step = [z3.Int(f"step_{i}") for i in range(length)]
    full = [z3.Bool(f"full_{i}") for i in range(length)]
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    epoch: z3.ArithRef = z3.IntVal(0)
    delivered_in = z3.K(z3.IntSort(), z3.IntVal(-1))  # step -> epoch of its newest delivery; -1: none
    delivered_full = z3.K(z3.IntSort(), z3.BoolVal(False))  # step -> was that delivery full
    reference: list[z3.BoolRef] = []
    for i in range(length):
        solver.add(z3.Or(kind[i] == _DELIVER, kind[i] == _NEW_EPOCH, kind[i] == _ANSWER))
        tests = {
            "epoch-test": delivered_in[step[i]] == epoch,
            "full-test": delivered_full[step[i]],
        }
        rule = z3.And(delivered_in[step[i]] >= 0, *(test for name, test in tests.items() if name != dropped))
        reference.append(z3.And(kind[i] == _ANSWER, rule))
        delivers = z3.Or(kind[i] == _DELIVER, z3.And(kind[i] == _ANSWER, z3.Not(reference[i])))
        delivered_in = z3.If(delivers, z3.Store(delivered_in, step[i], epoch), delivered_in)
        delivered_full = z3.If(delivers, z3.Store(delivered_full, step[i], full[i]), delivered_full)
        epoch = z3.If(kind[i] == _NEW_EPOCH, epoch + 1, epoch)
    solver.add(z3.Or(*(z3.And(reference[i], z3.Not(_held(i, kind, step, full, reference))) for i in range(length))))
    result = solver.check()
    if result == z3.unsat:
        return "proved", ""
    if result == z3.sat:
        return "counterexample", _render(solver.model(), kind, step, full, reference)
    return "unknown", str(solver.reason_unknown())


def check_inductive(*, dropped: str | None = None, timeout_ms: int = 10_000) -> tuple[Status, str]:
    """`proved` if the invariant above holds initially, is kept by every event and implies the
    claim at every reference answer; otherwise `counterexample` with the state and event."""
    epoch = z3.Int("epoch")
    delivered_in = z3.Array("delivered_in", z3.IntSort(), z3.IntSort())
    delivered_full = z3.Array("delivered_full", z3.IntSort(), z3.BoolSort())
    held = z3.Array("held", z3.IntSort(), z3.BoolSort())
    kind, step, full, other = z3.Int("kind"), z3.Int("step"), z3.Bool("full"), z3.Int("other")

    def invariant(delivered_in: z3.ArrayRef, delivered_full: z3.ArrayRef, held: z3.ArrayRef,
                  epoch: z3.ArithRef, s: z3.ArithRef) -> z3.BoolRef:
        current = z3.And(delivered_in[s] >= 0, delivered_in[s] == epoch, delivered_full[s])
        return z3.And(delivered_in[s] <= epoch, z3.Implies(current, held[s]))

    initial = z3.Solver()
    initial.add(z3.Not(invariant(z3.K(z3.IntSort(), z3.IntVal(-1)), z3.K(z3.IntSort(), z3.BoolVal(False)),
                                 z3.K(z3.IntSort(), z3.BoolVal(False)), z3.IntVal(0), other)))
    if initial.check() != z3.unsat:
        return "counterexample", "the invariant does not hold before the first event"
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(z3.Or(kind == _DELIVER, kind == _NEW_EPOCH, kind == _ANSWER))
    # Instances of "the invariant holds for every step" at the two steps the event can touch:
    # weaker than the universal assumption, so an unsat answer still proves the step.
    solver.add(invariant(delivered_in, delivered_full, held, epoch, step))
    solver.add(invariant(delivered_in, delivered_full, held, epoch, other))
    tests = {"epoch-test": delivered_in[step] == epoch, "full-test": delivered_full[step]}
    rule = z3.And(delivered_in[step] >= 0, *(test for name, test in tests.items() if name != dropped))
    reference = z3.And(kind == _ANSWER, rule)
    delivers = z3.Or(kind == _DELIVER, z3.And(kind == _ANSWER, z3.Not(reference)))
    after_in = z3.If(delivers, z3.Store(delivered_in, step, epoch), delivered_in)
    after_full = z3.If(delivers, z3.Store(delivered_full, step, full), delivered_full)
    after_held = z3.If(
        kind == _NEW_EPOCH, z3.K(z3.IntSort(), z3.BoolVal(False)),
        z3.If(z3.And(delivers, full), z3.Store(held, step, True), held),
    )
    after_epoch = z3.If(kind == _NEW_EPOCH, epoch + 1, epoch)
    solver.add(z3.Or(
        z3.And(reference, z3.Not(held[step])),
        z3.Not(invariant(after_in, after_full, after_held, after_epoch, other)),
    ))
    result = solver.check()
    if result == z3.unsat:
        return "proved", ""
    if result == z3.sat:
        model = solver.model()
        name = _KIND_NAMES[model.eval(kind, model_completion=True).as_long()]
        shown = model.eval(reference, model_completion=True)
        return "counterexample", (
            f"from a state satisfying the invariant, {name} step {model.eval(step, model_completion=True)}"
            f"{' -> reference' if z3.is_true(shown) else ''} breaks it or references a result not held"
        )
    return "unknown", str(solver.reason_unknown())


def _held(
    i: int, kind: list[z3.ArithRef], step: list[z3.ArithRef], full: list[z3.BoolRef], reference: list[z3.BoolRef]
) -> z3.BoolRef:
    """The claim for a reference at position `i`, read off the sequence: an earlier full delivery
    of its step (deliver, or a verbatim answer), and no new epoch since."""
    witnesses = []
    for j in range(i):
        delivered = z3.Or(kind[j] == _DELIVER, z3.And(kind[j] == _ANSWER, z3.Not(reference[j])))
        kept = [kind[k] != _NEW_EPOCH for k in range(j + 1, i)]
        witnesses.append(z3.And(delivered, step[j] == step[i], full[j], *kept))
    return z3.Or(*witnesses) if witnesses else z3.BoolVal(False)


def _render(
    model: z3.ModelRef, kind: list[z3.ArithRef], step: list[z3.ArithRef], full: list[z3.BoolRef],
    reference: list[z3.BoolRef],
) -> str:
    lines = []
    for i in range(len(kind)):
        name = _KIND_NAMES[model.eval(kind[i], model_completion=True).as_long()]
        if name == "new epoch":
            lines.append(f"{i}: new epoch")
            continue
        cut = "full" if z3.is_true(model.eval(full[i], model_completion=True)) else "cut"
        answered = ""
        if name == "answer":
            answered = " -> reference" if z3.is_true(model.eval(reference[i], model_completion=True)) else " -> verbatim"
        lines.append(f"{i}: {name} step {model.eval(step[i], model_completion=True)} ({cut}){answered}")
    return "a reference to a result the model does not hold:\n" + "\n".join(lines)
