"""The answer rule's theorem (`ledger_spec.z3_context`): proved for the rule, and failing when
either of its tests is dropped."""

from __future__ import annotations

import pytest

from ledger_spec import z3_context
from ledger_spec.z3_theorems import THEOREMS_BY_NAME


def test_a_reference_only_points_at_a_result_held_in_full() -> None:
    assert z3_context.check() == ("proved", "")
    assert THEOREMS_BY_NAME["reference-only-to-a-result-held-in-full"].check().as_expected


def test_the_invariant_proves_it_for_sequences_of_every_length() -> None:
    assert z3_context.check_inductive() == ("proved", "")


@pytest.mark.parametrize("rule", z3_context.RULES)
def test_without_a_test_of_the_rule_the_induction_fails(rule: str) -> None:
    status, text = z3_context.check_inductive(dropped=rule)
    assert status == "counterexample" and "-> reference" in text


@pytest.mark.parametrize("rule", z3_context.RULES)
def test_dropping_a_test_of_the_rule_lets_z3_find_a_stale_reference(rule: str) -> None:
    status, text = z3_context.check(dropped=rule)
    assert status == "counterexample"
    assert "-> reference" in text  # the sequence is shown, with the reference it serves


def test_the_shortest_stale_reference_needs_three_events() -> None:
    """Deliver, new epoch, answer: no shorter sequence shows one, so the bound is not vacuous."""
    assert z3_context.check(dropped="epoch-test", length=2)[0] == "proved"
    assert z3_context.check(dropped="epoch-test", length=3)[0] == "counterexample"


@pytest.mark.parametrize("name", ["stale-reference-if-epoch-ignored", "stale-reference-if-cut-delivery-counts"])
def test_the_negative_theorems_are_registered_and_hold(name: str) -> None:
    result = THEOREMS_BY_NAME[name].check()
    assert result.kind == "negative" and result.as_expected and result.model_text
