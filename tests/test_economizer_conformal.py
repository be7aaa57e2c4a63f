"""The conformal guard: its order statistic checked exhaustively on small streams, its bound
through the real guard (spec and implementation) on exchangeable streams, and its wiring."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Callable, Sequence

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from economizer.controller import Controller
from economizer.guard import Guard
from economizer_spec import conformal
from economizer_spec import guard as rules
from economizer_spec.guard import GuardDigest, RedirectText, Verdict
from economizer_spec.params import Params
from economizer_spec.trajectory import Step, Trajectory

ALPHAS = [Fraction(1, 20), Fraction(1, 10), Fraction(1, 7), Fraction(1, 5), Fraction(1, 4), Fraction(1, 3), Fraction(1, 2), Fraction(2, 3)]


def false_stop_probability(values: Sequence[int], point: Callable[[Sequence[int]], int | None]) -> Fraction:
    """Exact P(the next run is stopped) when the n + 1 values arrive in a uniformly random
    order: each value is the last one (the new run) with probability 1/(n+1), the others
    are the earlier passed runs; the new run is stopped iff it reaches the stop point."""
    hits = 0
    for i, last in enumerate(values):
        t = point(values[:i] + values[i + 1 :])
        hits += t is not None and last >= t
    return Fraction(hits, len(values))


def with_rank(offset: int) -> Callable[[Fraction], Callable[[Sequence[int]], int | None]]:
    """A stop point at rank k + offset (k the conformal rank; k = n when k does not exist)."""
    def for_alpha(alpha: Fraction) -> Callable[[Sequence[int]], int | None]:
        def point(earlier: Sequence[int]) -> int | None:
            k = conformal.conformal_rank(len(earlier), alpha) or len(earlier)
            k += offset
            return sorted(earlier)[k - 1] + 1 if 1 <= k <= len(earlier) else None
        return point
    return for_alpha


def multisets(max_size: int, values: int) -> list[tuple[int, ...]]:
    return [m for size in range(2, max_size + 1) for m in itertools.combinations_with_replacement(range(1, values + 1), size)]


SMALL = multisets(9, 4)  # every multiset of 2..9 turn counts drawn from 1..4 (ties included)


@pytest.mark.parametrize("alpha", ALPHAS, ids=str)
def test_the_bound_holds_on_every_small_stream(alpha: Fraction) -> None:
    for values in SMALL:
        assert false_stop_probability(values, lambda earlier: conformal.stop_point(earlier, alpha)) <= alpha, values


@pytest.mark.parametrize("alpha", ALPHAS, ids=str)
def test_the_order_statistic_is_the_lowest_that_keeps_the_bound(alpha: Fraction) -> None:
    """One rank lower (and, below `min_passed`, any stop at all) breaks the bound on a stream of
    distinct counts, so the choice cannot be improved, nor the wait for enough passed runs
    shortened. Seen failing with k = floor((n+1)(1-alpha)) and with a stop from n = 1 on."""
    lower = with_rank(-1)(alpha)
    earliest = with_rank(0)(alpha)  # k = n where the conformal rank does not exist yet
    for size in range(2, 30):
        distinct = tuple(range(1, size + 1))
        n = size - 1
        if conformal.conformal_rank(n, alpha) is None:
            assert conformal.stop_point(distinct[:-1], alpha) is None
            assert false_stop_probability(distinct, earliest) > alpha, n
        elif conformal.conformal_rank(n, alpha) > 1:
            assert false_stop_probability(distinct, lower) > alpha, n


@pytest.mark.parametrize("alpha, n", [(Fraction(1, 20), 19), (Fraction(1, 10), 9), (Fraction(1, 5), 4), (Fraction(1, 2), 1)])
def test_stop_points_need_enough_passed_runs(alpha: Fraction, n: int) -> None:
    assert conformal.min_passed(alpha) == n
    assert conformal.stop_point(list(range(1, n)), alpha) is None
    assert conformal.stop_point(list(range(1, n + 1)), alpha) == n + 1  # the largest, plus one


# --- through the guard, spec and implementation ------------------------------------------------

LOOP = Step("sed -i 's/x/y/' a.py && python -m pytest tests/test_a.py", "FAILED tests/test_a.py::t - AssertionError: 1 != 2", 1)
"""One turn of a failure loop: an edit of the same file and the same failing test each time,
so the strict stall rule holds from turn 6 on and every run is a stop candidate."""


def stuck(digest: GuardDigest) -> Verdict:
    return Verdict(True, 1, "worst case: always stuck")


def writer(digest: GuardDigest) -> RedirectText:
    return RedirectText("try something else")


def stopped(length: int, b: int | None, params: Params) -> bool:
    trajectory = (LOOP,) * length
    spec = rules.run_guard(trajectory, b, params, stuck, writer)
    guard = Guard(params, b, stuck, writer)
    impl = []
    for step in trajectory:
        impl.append(guard.observe(step))
        if impl[-1].action == "stop":
            break
    assert impl == list(spec.decisions)
    return spec.stop is not None


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(1, 30), min_size=2, max_size=7), alpha=st.sampled_from(ALPHAS[2:]))
def test_false_stop_rate_on_exchangeable_streams_is_at_most_alpha(lengths: list[int], alpha: Fraction) -> None:
    """Passed runs that all loop, with a judge that always says stuck: the worst case for
    false stops. Over every ordering of the stream (each run last in turn) the exact share of
    new passed runs stopped is <= alpha. Seen failing with the judge's stop not held back
    before T (spec and implementation) and with T = L_(k) instead of L_(k) + 1."""
    params = Params(guard_rule="conformal", alpha=alpha)
    hits = 0
    for i, length in enumerate(lengths):
        earlier = lengths[:i] + lengths[i + 1 :]
        hits += stopped(length, rules.budget(earlier, params), params)
    assert Fraction(hits, len(lengths)) <= alpha


def test_the_judge_cannot_stop_before_the_stop_point() -> None:
    params = Params(guard_rule="conformal", alpha=Fraction(1, 5))
    assert not stopped(30, None, params)  # no stop point: never stopped, however stuck
    assert not stopped(30, 31, params)
    assert stopped(31, 31, params)
    assert stopped(30, None, Params())  # the kappa rule lets a stuck judge stop with no B


def test_controller_budget_is_the_stop_point_under_the_conformal_rule() -> None:
    params = Params(guard_rule="conformal", alpha=Fraction(1, 5))
    controller = Controller("o/r", ("bash",), ("bash",), params)
    passes = [Trajectory(f"t{i}", (Step("ls"),) * turns, True) for i, turns in enumerate([9, 3, 7, 5])]
    budgets = []
    for trajectory in passes:
        budgets.append(controller.budget())
        controller.feed(trajectory, _controllers())
    assert budgets == [None, None, None, None]
    assert controller.budget() == rules.budget([9, 3, 7, 5], params) == 10


def _controllers():
    from economizer.protocols import default_controllers

    return default_controllers()


@pytest.mark.parametrize("bad", [{"guard_rule": "median"}, {"alpha": 0}, {"alpha": 1}])
def test_bad_guard_settings_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        Params(**bad)


# --- the command line --------------------------------------------------------------------------


def _rows(lengths: list[int]) -> list[dict]:
    from tests.test_economizer_cli import row

    return [row(f"owner__repo-{i}", [("ls", "", 0)] * n) for i, n in enumerate(lengths, 1)]


def test_feed_and_guard_with_the_conformal_rule(tmp_path, capsys) -> None:
    """Four passed runs give a stop point at alpha 0.2 (none at the default 0.05); the rule is
    stored with the state; `guard` then stops a loop only from T on."""
    import json

    from ledger_cli.main import main
    from tests.test_economizer_cli import row, write

    state = tmp_path / "state"
    runs = write(tmp_path / "runs.jsonl", _rows([9, 3, 7, 5]))
    assert main(["economize", "feed", str(runs), "--state-dir", str(state), "--guard", "conformal", "--alpha", "0.2"]) == 0
    capsys.readouterr()
    assert main(["economize", "show", "owner/repo", "--state-dir", str(state), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["guard"] == {"rule": "conformal", "alpha": "1/5", "kappa": "5/2"} and shown["budget"] == 10
    assert main(["economize", "show", "owner/repo", "--state-dir", str(state), "--json", "--alpha", "0.05"]) == 0
    assert json.loads(capsys.readouterr().out)["budget"] is None  # 4 passed runs are too few for 0.05
    loop = [(LOOP.command, LOOP.output, 1)]
    for turns, action in [(9, "continue"), (10, "redirect"), (14, "continue"), (15, "stop")]:  # the last step's signal
        partial = write(tmp_path / f"p{turns}.jsonl", [row("owner__repo-99", loop * turns, resolved=False)])
        assert main(["economize", "guard", "owner/repo", str(partial), "--state-dir", str(state)]) == 0
        assert json.loads(capsys.readouterr().out)["action"] == action, turns
    assert main(["economize", "guard", "owner/repo", str(partial), "--state-dir", str(state), "--guard", "kappa"]) == 0
    assert json.loads(capsys.readouterr().out)["action"] == "continue"  # B = 11: kappa*B = 27.5 not reached


def test_a_bad_alpha_is_refused_before_any_write(tmp_path, capsys) -> None:
    from ledger_cli.main import main
    from tests.test_economizer_cli import snapshot, write

    state = tmp_path / "state"
    runs = write(tmp_path / "runs.jsonl", _rows([3, 4]))
    assert main(["economize", "feed", str(runs), "--state-dir", str(state), "--guard", "conformal", "--alpha", "1"]) == 2
    assert "alpha" in capsys.readouterr().err and snapshot(state) == {}


# --- the rank's arithmetic, proved with Z3 ----------------------------------------------------


def test_z3_proves_the_rank_and_refutes_broken_ones() -> None:
    import z3

    from economizer_spec.z3_theorems import _refute, conformal_queries

    assert {name: _refute(*queries)[0] for name, queries in conformal_queries().items()} == {"bound": "proved", "minimal": "proved", "enough": "proved"}

    def floor_rank(k, size, alpha):
        return z3.And(z3.ToReal(k) <= size * (1 - alpha), size * (1 - alpha) < z3.ToReal(k) + 1)

    def one_higher(k, size, alpha):  # ceil + 1: safe but not minimal
        return z3.And(z3.ToReal(k) - 2 < size * (1 - alpha), size * (1 - alpha) <= z3.ToReal(k) - 1)

    assert _refute(*conformal_queries(floor_rank)["bound"])[0] == "counterexample"
    assert _refute(*conformal_queries(one_higher)["minimal"])[0] == "counterexample"


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 500), alpha=st.fractions(Fraction(1, 1000), Fraction(999, 1000)))
@example(n=1, alpha=Fraction(1, 2))  # (n+1)(1-alpha) an integer: where a wrong strictness shows
@example(n=19, alpha=Fraction(1, 20))
def test_the_proved_rank_is_the_one_the_spec_computes(n: int, alpha: Fraction) -> None:
    """The encoding Z3 reasons about holds for the spec's k (or for k = n + 1 when it has none)."""
    import z3

    from economizer_spec.z3_theorems import ceiling_rank

    k = conformal.conformal_rank(n, alpha) or n + 1
    held = z3.simplify(ceiling_rank(z3.IntVal(k), z3.RealVal(n + 1), z3.RealVal(f"{alpha.numerator}/{alpha.denominator}")))
    assert z3.is_true(held), (n, alpha, k)
