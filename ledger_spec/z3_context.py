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
