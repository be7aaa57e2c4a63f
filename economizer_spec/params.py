"""Every threshold of TokenEconomizer's controller, by name, in one value.

The paper (seeds/001, Sec. 3 and Appendices F-I) fixes some values exactly and leaves others
open (its Table 4 of hyperparameters is not in the text we have). Each field says which:
**paper** means the value is stated in the text; **chosen** means we picked it, with the reason.
The evaluation's sensitivity grid varies kappa, beta, c and lambda around these defaults.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

import attrs

GuardRule = Literal["kappa", "conformal"]
GUARD_RULES: tuple[GuardRule, ...] = ("kappa", "conformal")


def _positive_int(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"Params.{attribute.name} must be a positive integer, got {value!r}")


def _fraction(value: object) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Fraction)):
        raise TypeError(f"expected a number, got {value!r}")
    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)


def _non_negative(instance: object, attribute: attrs.Attribute, value: Fraction) -> None:
    if value < 0:
        raise ValueError(f"Params.{attribute.name} must be >= 0, got {value}")


def _open_unit_interval(instance: object, attribute: attrs.Attribute, value: Fraction) -> None:
    if not 0 < value < 1:
        raise ValueError(f"Params.{attribute.name} must be in (0, 1), got {value}")


def _guard_rule(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if value not in GUARD_RULES:
        raise ValueError(f"Params.{attribute.name} must be one of {', '.join(GUARD_RULES)}, got {value!r}")


def _unit_interval(instance: object, attribute: attrs.Attribute, value: Fraction) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"Params.{attribute.name} must be in [0, 1], got {value}")


@attrs.frozen
class Params:
    """Thresholds are exact `Fraction`s so that the spec and the incremental implementation
    compute identical supports and budgets; a float rounding difference at a boundary
    (support exactly 0, turns exactly kappa*B) would otherwise make them disagree."""

    # --- micro-skills -----------------------------------------------------------------
    confirmations: int = attrs.field(default=3, validator=_positive_int)
    """c. Chosen: 3. Two agreeing tasks can be one recurring module (the paper's example (e));
    three spread over a window of 8 is the smallest count that is not mostly coincidence."""
    contradiction_weight: Fraction = attrs.field(default=Fraction(5), converter=_fraction, validator=_non_negative)
    """lambda. Paper: 5. One contradiction outweighs more decayed confirmations than any
    window can hold (sum of decay^k < 1/(1-decay) = 10 at decay 0.9, and a window holds 8)."""
    decay: Fraction = attrs.field(default=Fraction(9, 10), converter=_fraction, validator=_unit_interval)
    """Per-task decay of a confirmation's weight. Chosen: 0.9, so a confirmation 7 tasks old
    (a window's length) still counts about half. Contradictions do not decay: the paper says
    support is *decayed confirmations* minus lambda times contradictions."""
    need_gate: Fraction = attrs.field(default=Fraction(1, 4), converter=_fraction, validator=_unit_interval)
    """A confirmed skill is injected only while needed/exercised >= need_gate. Chosen: 1/4.
    One manual line (~20 tokens) is billed on each of ~35 turns (~700 tokens per task), while
    the waste it prevents is several commands and their outputs (thousands of tokens), so a
    skill pays for itself when it is needed in about one exercised task in four."""
    proposer_first: int = attrs.field(default=4, validator=_positive_int)
    """Paper: the proposer is called after task 4 ..."""
    proposer_period: int = attrs.field(default=5, validator=_positive_int)
    """... and every 5 tasks thereafter (after tasks 4, 9, 14, ...)."""
    proposer_window: int = attrs.field(default=8, validator=_positive_int)
    """Paper: each call sees digests of the 8 most recent tasks."""
    max_proposals: int = attrs.field(default=4, validator=_positive_int)
    """Paper: at most 4 candidates per call. Chosen: extra proposals are dropped in order, each
    with a reason, rather than rejecting the whole call."""
    min_citations: int = attrs.field(default=2, validator=_positive_int)
    """Paper: a candidate must cite at least 2 window tasks on which its confirm detector
    matches. The controller checks the match itself; a citation it cannot verify is dropped."""
    manual_budget: int = attrs.field(default=600, validator=_positive_int)
    """Characters the rendered manual may take, header included. Chosen: 600 (~150 tokens):
    the manual is billed on every turn, so it must stay a few lines."""

    # --- tool pruning ------------------------------------------------------------------
    unused_streak: int = attrs.field(default=3, validator=_positive_int)
    """Paper: an unprotected, never-called tool uncalled for 3 consecutive tasks is masked."""
    reaudit_period: int = attrs.field(default=10, validator=_positive_int)
    """R. Chosen: 10. Every task whose 1-based index is a multiple of R loads the full catalog
    (no judge call). 10 keeps a wrongly masked tool out of at most 9 tasks, while each re-audit
    costs the full catalog's schemas on one task in ten."""

    # --- failure-loop guard ---------------------------------------------------------------
    guard_rule: GuardRule = attrs.field(default="kappa", validator=_guard_rule)
    """Which threshold the forced rule uses. "kappa" (the paper's, the default): turns >=
    kappa * B. "conformal" (issue 24): turns >= the conformal stop point T for `alpha`
    (`economizer_spec.conformal`), and no stop of any kind before T, so the probability of
    stopping a passed run is at most alpha when the stream is exchangeable. B is then T."""
    alpha: Fraction = attrs.field(default=Fraction(1, 20), converter=_fraction, validator=_open_unit_interval)
    """The conformal guard's false-stop rate. Chosen default: 0.05 (a stop point needs 19
    passed runs); used only when guard_rule is "conformal"."""
    kappa: Fraction = attrs.field(default=Fraction(5, 2), converter=_fraction, validator=_non_negative)
    """Paper: 2.5. The forced stop needs turns >= kappa * B and the strict stall rule."""
    budget_percentile: int = attrs.field(default=90)
    """Chosen: the 90th percentile (nearest rank) of the repository's passed turn counts. The
    paper says "a high percentile rather than the maximum" so one long success cannot
    inflate B; nearest rank keeps B an observed turn count with no interpolation."""
    beta: Fraction = attrs.field(default=Fraction(1, 5), converter=_fraction, validator=_non_negative)
    """Budget margin. Chosen: 0.2, so B = ceil(p90 * (1 + beta))."""
    min_passed_for_budget: int = attrs.field(default=3, validator=_positive_int)
    """Chosen: B exists only once 3 earlier tasks of the repository passed; a percentile of one
    or two runs is that run. Without B there is no forced stop (the judge may still act)."""
    judge_interval: int = attrs.field(default=5, validator=_positive_int)
    """Paper: the trace judge is consulted at most once every 5 turns ..."""
    judge_interval_step: int = attrs.field(default=5, validator=_positive_int)
    """... the interval grows by 5 after each productive verdict ..."""
    judge_interval_max: int = attrs.field(default=20, validator=_positive_int)
    """... up to 20."""
    judge_confidence: Fraction = attrs.field(default=Fraction(7, 10), converter=_fraction, validator=_unit_interval)
    """Chosen: a stuck verdict counts only with confidence >= 0.7; the judge prompt asks for
    high confidence only on a clear dead end, so a hesitant "stuck" spares the agent."""
    stall_edits_one_file: int = attrs.field(default=4, validator=_positive_int)
    """Paper: edit churn is >= 4 edits to one file ..."""
    stall_distinct_files: int = attrs.field(default=3, validator=_positive_int)
    """... or edits to >= 3 files;"""
    stall_error_outputs: int = attrs.field(default=6, validator=_positive_int)
    """Paper: dense error output is >= 6 error outputs;"""
    stall_repeat_share: Fraction = attrs.field(default=Fraction(1, 5), converter=_fraction, validator=_unit_interval)
    """Paper: repetition is >= 20% of failing outputs repeating an earlier signature."""
    trigger_error_outputs: int = attrs.field(default=3, validator=_positive_int)
    """Chosen: the looser trigger that lets the judge be consulted opens at 3 error outputs with
    at least one repeated signature (half the strict rule's density, plus actual repetition)."""
    redirect_grace: int = attrs.field(default=5, validator=_positive_int)
    """Chosen: after a redirect the guard waits this many turns before it may stop, so the
    redirect can take effect (one minimum judge interval). See guard.py for why."""

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.budget_percentile <= 100:
            raise ValueError(f"Params.budget_percentile must be in 1..100, got {self.budget_percentile}")
        if self.judge_interval_max < self.judge_interval:
            raise ValueError("Params.judge_interval_max must be >= judge_interval")
