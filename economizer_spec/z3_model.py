"""The guard's decision and the tool-pruning rules as Z3 terms, for proofs over all inputs.

What is encoded
---------------
* **guard** (`GuardInputs`, `guard_action`): one decision of `guard.guard_step`, with the facts
  it reads as free variables: turn t, budget B (and whether it exists), kappa, whether the
  strict stall rule and the trigger hold, whether the judge is due, the judge's verdict
  (stuck, confident) and the guard's own state (stopped, redirected, the redirect's turn,
  the grace). The counters themselves are abstracted into the two Booleans `stall` and
  `trigger`: the theorems are about what the guard does with them, for every value. The
  successor state (`guard_post`) is what `guard_step` stores.
* **pruning** (`ToolInputs`, `masked`, `tool_post`): one arbitrary tool before one task: core,
  ever called, streak, whether the task is a re-audit, whether the judge answered and said
  drop; and its update after the task (called during it or not).

`Fault` names each rule that can be broken; `SPEC` is the specification and each entry of
`BROKEN` breaks exactly one rule, so each theorem is shown to constrain the rule it is about
(tests/test_economizer_z3.py). The conformance test evaluates these terms on random concrete
inputs and compares them with `guard.guard_step` and `tools.mask`: a proof about a different
machine would prove nothing.
"""

from __future__ import annotations

import enum
from typing import Callable, TypeVar

import attrs
import z3

ACTION, (CONTINUE, REDIRECT, STOP) = z3.EnumSort("GuardAction", ["continue", "redirect", "stop"])
ACTION_NAME = {"continue": CONTINUE, "redirect": REDIRECT, "stop": STOP}


class Fault(enum.Enum):
    """One rule of the encoding broken on purpose (the value names the broken variant)."""

    JUDGE_BEFORE_FORCED = "judge-before-forced"  # the judge is asked first: 'productive' vetoes the forced rule
    STOP_WITHOUT_REDIRECT = "stop-without-redirect"  # the forced rule stops at once, with no redirect first
    REDIRECT_TWICE = "redirect-twice"  # a stuck verdict after a redirect redirects again instead of stopping
    MASK_CORE = "mask-core"  # the unused-streak rule forgets that core tools are protected
    JUDGE_MASKS_CALLED = "judge-masks-called"  # the judge's 'drop' applies to tools that were called before
    FORGET_CALLED = "forget-called"  # `ever_called` holds only for the last task's calls
    REAUDIT_KEEPS_MASK = "reaudit-keeps-mask"  # a re-audit still applies the unused-streak mask
    STREAK_OFF_BY_ONE = "streak-off-by-one"  # a tool is masked only once its streak exceeds the threshold


@attrs.frozen
class Variant:
    """The encoding with the rules in `broken` changed; `SPEC` changes none."""

    name: str = "spec"
    broken: frozenset[Fault] = frozenset()

    def breaks(self, fault: Fault) -> bool:
        return fault in self.broken


SPEC = Variant()
BROKEN: tuple[Variant, ...] = tuple(Variant(fault.value, frozenset({fault})) for fault in Fault)


# --- free inputs ------------------------------------------------------------------------------

Real = z3.ArithRef
"""A real-valued input (z3 has one term class for integers and reals; the name tells `_fresh`)."""

# The Z3 constant an input field is declared as, by its annotation (a string under
# `from __future__ import annotations`).
_DECLARE: dict[str, Callable[[str], z3.ExprRef]] = {"z3.BoolRef": z3.Bool, "z3.ArithRef": z3.Int, "Real": z3.Real}

InputsT = TypeVar("InputsT", bound="_Inputs")


class _Inputs:
    """Free inputs of a rule: one Z3 constant per attrs field."""

    @classmethod
    def fresh(cls: type[InputsT], prefix: str) -> InputsT:
        """Each field a fresh constant named `prefix` + the field's name."""
        fields = attrs.fields(cls)  # type: ignore[arg-type]
        return cls(*(_DECLARE[str(field.type)](prefix + field.name) for field in fields))


# --- the guard -----------------------------------------------------------------------------------


@attrs.frozen
class GuardInputs(_Inputs):
    t: z3.ArithRef
    budget: z3.ArithRef
    has_budget: z3.BoolRef
    kappa: Real
    stall: z3.BoolRef
    trigger: z3.BoolRef
    due: z3.BoolRef
    stuck: z3.BoolRef
    confident: z3.BoolRef
    stopped: z3.BoolRef
    redirected: z3.BoolRef
    redirect_turn: z3.ArithRef
    grace: z3.ArithRef

    def well_formed(self) -> z3.BoolRef:
        return z3.And(self.t >= 1, self.grace >= 1, self.kappa >= 0, self.budget >= 0,
                      z3.Implies(self.redirected, z3.And(self.redirect_turn >= 1, self.redirect_turn < self.t)))


def forced(g: GuardInputs) -> z3.BoolRef:
    return z3.And(g.has_budget, z3.ToReal(g.t) >= g.kappa * z3.ToReal(g.budget), g.stall)


def in_grace(g: GuardInputs) -> z3.BoolRef:
    return z3.And(g.redirected, g.t - g.redirect_turn < g.grace)


def guard_action(g: GuardInputs, variant: Variant = SPEC) -> z3.ExprRef:
    stuck = z3.And(g.stuck, g.confident)
    judged = z3.If(
        stuck,
        z3.If(z3.Or(z3.Not(g.redirected), variant.breaks(Fault.REDIRECT_TWICE)), REDIRECT, STOP),
        CONTINUE,
    )
    ask_judge = z3.And(g.trigger, g.due)
    forced_answer = z3.If(z3.Or(g.redirected, variant.breaks(Fault.STOP_WITHOUT_REDIRECT)), STOP, REDIRECT)
    if variant.breaks(Fault.JUDGE_BEFORE_FORCED):
        body = z3.If(ask_judge, judged, z3.If(forced(g), forced_answer, CONTINUE))
    else:
        body = z3.If(forced(g), forced_answer, z3.If(ask_judge, judged, CONTINUE))
    return z3.If(g.stopped, STOP, z3.If(in_grace(g), CONTINUE, body))


def guard_post(g: GuardInputs, action: z3.ExprRef) -> tuple[z3.BoolRef, z3.BoolRef, z3.ArithRef]:
    """(stopped, redirected, redirect_turn) after the decision."""
    return (
        action == STOP,
        z3.Or(g.redirected, action == REDIRECT),
        z3.If(action == REDIRECT, g.t, g.redirect_turn),
    )


# --- tool pruning -----------------------------------------------------------------------------------


@attrs.frozen
class ToolInputs(_Inputs):
    core: z3.BoolRef
    ever_called: z3.BoolRef
    streak: z3.ArithRef
    unused: z3.ArithRef
    reaudit: z3.BoolRef
    judge_answered: z3.BoolRef
    judge_drop: z3.BoolRef
    called_now: z3.BoolRef

    def well_formed(self) -> z3.BoolRef:
        return z3.And(self.streak >= 0, self.unused >= 1)


def masked(x: ToolInputs, variant: Variant = SPEC) -> z3.BoolRef:
    threshold = x.streak > x.unused if variant.breaks(Fault.STREAK_OFF_BY_ONE) else x.streak >= x.unused
    protected = z3.BoolVal(False) if variant.breaks(Fault.MASK_CORE) else x.core
    by_streak = z3.And(z3.Not(protected), z3.Not(x.ever_called), threshold)
    judge_called_ok = z3.BoolVal(True) if variant.breaks(Fault.JUDGE_MASKS_CALLED) else z3.Not(x.ever_called)
    by_judge = z3.And(z3.Not(x.core), judge_called_ok, z3.Not(threshold), x.judge_answered, x.judge_drop)
    if variant.breaks(Fault.REAUDIT_KEEPS_MASK):
        return z3.Or(by_streak, z3.And(z3.Not(x.reaudit), by_judge))
    return z3.And(z3.Not(x.reaudit), z3.Or(by_streak, by_judge))


def tool_post(x: ToolInputs, variant: Variant = SPEC) -> tuple[z3.BoolRef, z3.ArithRef]:
    """(ever_called, streak) after the task."""
    called = x.called_now if variant.breaks(Fault.FORGET_CALLED) else z3.Or(x.ever_called, x.called_now)
    return called, z3.If(x.called_now, 0, x.streak + 1)
