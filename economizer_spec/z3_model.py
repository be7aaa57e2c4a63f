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

`Variant` names each rule; `SPEC` is the specification and each entry of `BROKEN` changes
exactly one rule, so each theorem is shown to constrain the rule it is about
(tests/test_economizer_z3.py). The conformance test evaluates these terms on random concrete
inputs and compares them with `guard.guard_step` and `tools.mask`: a proof about a different
machine would prove nothing.
"""

from __future__ import annotations

import attrs
import z3

ACTION, (CONTINUE, REDIRECT, STOP) = z3.EnumSort("GuardAction", ["continue", "redirect", "stop"])
ACTION_NAME = {"continue": CONTINUE, "redirect": REDIRECT, "stop": STOP}


@attrs.frozen
class Variant:
    name: str = "spec"
    judge_before_forced: bool = False
    """Broken: the judge is asked before the forced rule, so a 'productive' verdict vetoes it."""
    stop_without_redirect: bool = False
    """Broken: the forced rule stops at once, with no redirect first."""
    redirect_twice: bool = False
    """Broken: a stuck verdict after a redirect redirects again instead of stopping."""
    mask_core: bool = False
    """Broken: the unused-streak rule forgets that core tools are protected."""
    judge_masks_called: bool = False
    """Broken: the judge's 'drop' applies to tools that were called before."""
    forget_called: bool = False
    """Broken: `ever_called` holds only for the last task's calls."""
    reaudit_keeps_mask: bool = False
    """Broken: a re-audit still applies the unused-streak mask."""
    streak_off_by_one: bool = False
    """Broken: a tool is masked only once its streak exceeds the threshold."""


SPEC = Variant()
BROKEN: tuple[Variant, ...] = (
    Variant("judge-before-forced", judge_before_forced=True),
    Variant("stop-without-redirect", stop_without_redirect=True),
    Variant("redirect-twice", redirect_twice=True),
    Variant("mask-core", mask_core=True),
    Variant("judge-masks-called", judge_masks_called=True),
    Variant("forget-called", forget_called=True),
    Variant("reaudit-keeps-mask", reaudit_keeps_mask=True),
    Variant("streak-off-by-one", streak_off_by_one=True),
)


# --- the guard -----------------------------------------------------------------------------------


@attrs.frozen
class GuardInputs:
    t: z3.ArithRef
    budget: z3.ArithRef
    has_budget: z3.BoolRef
    kappa: z3.ArithRef
    stall: z3.BoolRef
    trigger: z3.BoolRef
    due: z3.BoolRef
    stuck: z3.BoolRef
    confident: z3.BoolRef
    stopped: z3.BoolRef
    redirected: z3.BoolRef
    redirect_turn: z3.ArithRef
    grace: z3.ArithRef

    @staticmethod
    def fresh(prefix: str) -> "GuardInputs":
        return GuardInputs(
            z3.Int(f"{prefix}t"), z3.Int(f"{prefix}B"), z3.Bool(f"{prefix}has_B"), z3.Real(f"{prefix}kappa"),
            z3.Bool(f"{prefix}stall"), z3.Bool(f"{prefix}trigger"), z3.Bool(f"{prefix}due"), z3.Bool(f"{prefix}stuck"),
            z3.Bool(f"{prefix}confident"), z3.Bool(f"{prefix}stopped"), z3.Bool(f"{prefix}redirected"),
            z3.Int(f"{prefix}redirect_turn"), z3.Int(f"{prefix}grace"),
        )

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
        z3.If(z3.Or(z3.Not(g.redirected), variant.redirect_twice), REDIRECT, STOP),
        CONTINUE,
    )
    ask_judge = z3.And(g.trigger, g.due)
    forced_answer = z3.If(z3.Or(g.redirected, variant.stop_without_redirect), STOP, REDIRECT)
    if variant.judge_before_forced:
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
class ToolInputs:
    core: z3.BoolRef
    ever_called: z3.BoolRef
    streak: z3.ArithRef
    unused: z3.ArithRef
    reaudit: z3.BoolRef
    judge_answered: z3.BoolRef
    judge_drop: z3.BoolRef
    called_now: z3.BoolRef

    @staticmethod
    def fresh(prefix: str) -> "ToolInputs":
        return ToolInputs(
            z3.Bool(f"{prefix}core"), z3.Bool(f"{prefix}ever_called"), z3.Int(f"{prefix}streak"), z3.Int(f"{prefix}unused"),
            z3.Bool(f"{prefix}reaudit"), z3.Bool(f"{prefix}judge_answered"), z3.Bool(f"{prefix}judge_drop"),
            z3.Bool(f"{prefix}called_now"),
        )

    def well_formed(self) -> z3.BoolRef:
        return z3.And(self.streak >= 0, self.unused >= 1)


def masked(x: ToolInputs, variant: Variant = SPEC) -> z3.BoolRef:
    threshold = x.streak > x.unused if variant.streak_off_by_one else x.streak >= x.unused
    protected = z3.BoolVal(False) if variant.mask_core else x.core
    by_streak = z3.And(z3.Not(protected), z3.Not(x.ever_called), threshold)
    judge_called_ok = z3.BoolVal(True) if variant.judge_masks_called else z3.Not(x.ever_called)
    by_judge = z3.And(z3.Not(x.core), judge_called_ok, z3.Not(threshold), x.judge_answered, x.judge_drop)
    if variant.reaudit_keeps_mask:
        return z3.Or(by_streak, z3.And(z3.Not(x.reaudit), by_judge))
    return z3.And(z3.Not(x.reaudit), z3.Or(by_streak, by_judge))


def tool_post(x: ToolInputs, variant: Variant = SPEC) -> tuple[z3.BoolRef, z3.ArithRef]:
    """(ever_called, streak) after the task."""
    called = x.called_now if variant.forget_called else z3.Or(x.ever_called, x.called_now)
    return called, z3.If(x.called_now, 0, x.streak + 1)
