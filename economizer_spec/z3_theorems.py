"""Theorems about the guard and tool pruning, checked with Z3 (`ledger economize prove`).

Each theorem is a step property (its negation together with the well-formedness of the
inputs is unsatisfiable, so it holds at every step whatever came before) or an inductive
invariant (base case and inductive step both unsatisfiable, so it holds on every trace). All
are quantifier-free over integers, reals and Booleans; each takes milliseconds.
"""

from __future__ import annotations

import time
from typing import Callable, Literal

import attrs
import z3

from .z3_model import (
    REDIRECT,
    SPEC,
    STOP,
    GuardInputs,
    ToolInputs,
    Variant,
    forced,
    guard_action,
    guard_post,
    in_grace,
    masked,
    tool_post,
)

Status = Literal["proved", "counterexample", "unknown"]
CHECK_TIMEOUT_MS = 10_000


@attrs.frozen
class TheoremResult:
    name: str
    status: Status
    seconds: float
    statement: str
    model_text: str = ""

    @property
    def as_expected(self) -> bool:
        return self.status == "proved"


def _refute(*claims: z3.BoolRef) -> tuple[Status, str]:
    """'proved' if the conjunction of `claims` (assumptions and a negated goal) is unsat."""
    solver = z3.Solver()
    solver.set("timeout", CHECK_TIMEOUT_MS)
    solver.add(*claims)
    answer = solver.check()
    if answer == z3.unsat:
        return "proved", ""
    if answer == z3.sat:
        return "counterexample", str(solver.model())
    return "unknown", solver.reason_unknown()


@attrs.frozen
class Theorem:
    name: str
    statement: str
    negation: Callable[[Variant], list[z3.BoolRef]]
    """Every query whose unsatisfiability is the proof (several for an induction)."""

    def check(self, variant: Variant = SPEC) -> TheoremResult:
        start = time.perf_counter()
        status: Status = "proved"
        model = ""
        for query in self.negation(variant):
            status, model = _refute(query)
            if status != "proved":
                break
        return TheoremResult(self.name, status, time.perf_counter() - start, self.statement, model)


def _forced_stop_not_vetoable(v: Variant) -> list[z3.BoolRef]:
    g = GuardInputs.fresh("")
    ready = z3.And(g.well_formed(), z3.Not(g.stopped), z3.Not(in_grace(g)), forced(g), g.redirected)
    return [z3.And(ready, guard_action(g, v) != STOP)]


def _judge_cannot_change_forced(v: Variant) -> list[z3.BoolRef]:
    g = GuardInputs.fresh("")
    h = attrs.evolve(g, stuck=z3.Bool("other_stuck"), confident=z3.Bool("other_confident"), due=z3.Bool("other_due"), trigger=z3.Bool("other_trigger"))
    ready = z3.And(g.well_formed(), z3.Not(g.stopped), z3.Not(in_grace(g)), forced(g))
    return [z3.And(ready, guard_action(g, v) != guard_action(h, v))]


def _stop_needs_redirect(v: Variant) -> list[z3.BoolRef]:
    """Inductive: stopped -> redirected. Base: the initial state is neither."""
    g = GuardInputs.fresh("")
    stopped_post, redirected_post, _ = guard_post(g, guard_action(g, v))
    invariant = z3.Implies(g.stopped, g.redirected)
    return [z3.And(g.well_formed(), invariant, stopped_post, z3.Not(redirected_post)),
            z3.And(g.well_formed(), z3.Not(g.stopped), z3.Not(g.redirected), guard_action(g, v) == STOP)]


def _one_redirect(v: Variant) -> list[z3.BoolRef]:
    g = GuardInputs.fresh("")
    return [z3.And(g.well_formed(), g.redirected, guard_action(g, v) == REDIRECT)]


def _core_never_masked(v: Variant) -> list[z3.BoolRef]:
    x = ToolInputs.fresh("")
    return [z3.And(x.well_formed(), x.core, masked(x, v))]


def _called_never_masked(v: Variant) -> list[z3.BoolRef]:
    """Inductive over tasks: once called, `ever_called` stays true, and it is never masked."""
    x = ToolInputs.fresh("")
    called_post, _ = tool_post(x, v)
    return [z3.And(x.well_formed(), x.ever_called, masked(x, v)),
            z3.And(x.well_formed(), z3.Or(x.ever_called, x.called_now), z3.Not(called_post))]


def _reaudit_masks_nothing(v: Variant) -> list[z3.BoolRef]:
    x = ToolInputs.fresh("")
    return [z3.And(x.well_formed(), x.reaudit, masked(x, v))]


def _streak_masks(v: Variant) -> list[z3.BoolRef]:
    x = ToolInputs.fresh("")
    due = z3.And(z3.Not(x.core), z3.Not(x.ever_called), x.streak >= x.unused, z3.Not(x.reaudit))
    return [z3.And(x.well_formed(), due, z3.Not(masked(x, v)))]


def _call_resets_streak(v: Variant) -> list[z3.BoolRef]:
    x = ToolInputs.fresh("")
    _, streak_post = tool_post(x, v)
    return [z3.And(x.well_formed(), x.called_now, streak_post != 0)]


# --- the conformal stop point's rank (economizer_spec.conformal) ---------------------------------
# The exchangeability step (the new run's rank among n + 1 is uniform, so P(L > L_(k)) <=
# (n + 1 - k)/(n + 1)) is probability, checked exactly on small streams by the tests; what Z3
# proves here is the arithmetic of the rank for every n and every rational alpha.


def ceiling_rank(k: z3.ArithRef, size: z3.ArithRef, alpha: z3.ArithRef) -> z3.BoolRef:
    """k = ceil(size * (1 - alpha)), as two inequalities."""
    return z3.And(z3.ToReal(k) - 1 < size * (1 - alpha), size * (1 - alpha) <= z3.ToReal(k))


def conformal_queries(rank: Callable[[z3.ArithRef, z3.ArithRef, z3.ArithRef], z3.BoolRef] = ceiling_rank) -> dict[str, list[z3.BoolRef]]:
    """The negated goals for a rank rule (the conformal one by default; tests pass broken ones)."""
    n, k = z3.Ints("n k")
    alpha = z3.Real("alpha")
    size = z3.ToReal(n) + 1
    base = z3.And(n >= 1, alpha > 0, alpha < 1, rank(k, size, alpha))
    goals = {
        "bound": z3.Implies(k <= n, z3.And(k >= 1, size - z3.ToReal(k) <= alpha * size)),
        "minimal": size - (z3.ToReal(k) - 1) > alpha * size,
        "enough": z3.Implies(k > n, alpha * size < 1),
    }
    return {name: [z3.And(base, z3.Not(goal))] for name, goal in goals.items()}


THEOREMS: tuple[Theorem, ...] = (
    Theorem("guard-forced-stop", "after a redirect, turns >= kappa*B under the strict stall rule stops (past the grace)", _forced_stop_not_vetoable),
    Theorem("guard-judge-cannot-veto", "when the forced rule applies, the decision is the same whatever the judge would say", _judge_cannot_change_forced),
    Theorem("guard-redirect-before-stop", "a task is only ever stopped after it was redirected (inductive)", _stop_needs_redirect),
    Theorem("guard-one-redirect", "a redirected task is never redirected again", _one_redirect),
    Theorem("prune-core-never-masked", "a core tool is never masked", _core_never_masked),
    Theorem("prune-called-never-masked", "a tool ever called stays called and is never masked (inductive)", _called_never_masked),
    Theorem("prune-reaudit-loads-all", "a re-audit task masks nothing", _reaudit_masks_nothing),
    Theorem("prune-streak-masks", "an unprotected never-called tool with streak >= threshold is masked outside re-audits", _streak_masks),
    Theorem("prune-call-resets-streak", "a call resets the unused streak to 0", _call_resets_streak),
    Theorem("conformal-rank-bound", "k = ceil((n+1)(1-alpha)) <= n is a rank (>= 1) with (n+1-k)/(n+1) <= alpha", lambda v: conformal_queries()["bound"]),
    Theorem("conformal-rank-minimal", "rank k-1 would leave (n+1-(k-1))/(n+1) > alpha: no lower stop point keeps the bound", lambda v: conformal_queries()["minimal"]),
    Theorem("conformal-needs-enough-runs", "when k > n even the largest passed count breaks the bound (1/(n+1) > alpha): no stop point", lambda v: conformal_queries()["enough"]),
)


def run_all(variant: Variant = SPEC) -> list[TheoremResult]:
    return [theorem.check(variant) for theorem in THEOREMS]
