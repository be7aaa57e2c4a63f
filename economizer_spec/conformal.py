"""The conformal stop point: a guard threshold whose false-stop rate is bounded by alpha.

Theory of operation
-------------------
The paper's forced stop fires at kappa * B, with B a margin over a high percentile of the
passed runs' turn counts. Nothing bounds how often that stops a run that would have passed,
and on other repositories the same kappa stops passed runs (issue 24). Split conformal
prediction gives a threshold with a guarantee instead.

Let L_1..L_n be the turn counts of the passed runs seen so far and L the turn count of the
next run, should it pass. If the n + 1 values are exchangeable (any order of them equally
likely, as when the stream's order is random), the rank of L among them is uniform, ties
broken at random, so for the k-th smallest earlier value L_(k):

    P(L > L_(k)) <= (n + 1 - k) / (n + 1).

Choosing k = ceil((n + 1) * (1 - alpha)) makes the right side at most alpha, and it is the
smallest k that does so for every multiset (with n + 1 distinct values the bound is exact),
so the threshold is as low as the guarantee allows. The guard may stop a run only at a turn
t >= T = L_(k) + 1; a run stopped at turn t had at least t turns, so a passed run is stopped
only if L >= T, that is L > L_(k), which happens with probability at most alpha.

When k > n (fewer than `min_passed(alpha)` passed runs) no order statistic is high enough:
there is no stop point and the guard stops nothing. With alpha = 0.05 that takes 19 passed
runs; a repository with fewer never gets a stop.

`tests/test_economizer_conformal.py` checks both claims exhaustively: over every multiset of
small turn counts and a grid of alphas, the exact probability over all orderings is <= alpha,
and rank k - 1 breaks the bound on some multiset.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence


def conformal_rank(n: int, alpha: Fraction) -> int | None:
    """k = ceil((n + 1)(1 - alpha)), the 1-based rank of the stop point among n passed
    counts, or None when k > n (not enough passed runs for this alpha)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    k = math.ceil((n + 1) * (1 - Fraction(alpha)))
    return k if 1 <= k <= n else None


def min_passed(alpha: Fraction) -> int:
    """The fewest passed runs for which a stop point exists: the smallest n with k <= n."""
    n = 1
    while conformal_rank(n, alpha) is None:
        n += 1
    return n


def stop_point(passed_turns: Sequence[int], alpha: Fraction) -> int | None:
    """T = L_(k) + 1: the first turn at which the guard may stop, or None (no stop at all)."""
    k = conformal_rank(len(passed_turns), alpha)
    if k is None:
        return None
    return sorted(passed_turns)[k - 1] + 1
