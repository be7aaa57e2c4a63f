"""The probe's theorem (`ledger_spec.z3_probe`): proved from its assumptions and the rules the
implementation keeps, and failing when any one of them is dropped."""

from __future__ import annotations

import pytest

from ledger_spec import z3_probe
from ledger_spec.z3_theorems import THEOREMS_BY_NAME


def test_reuse_on_traced_dependencies_is_proved_fresh() -> None:
    assert z3_probe.check() == ("proved", "")
    assert THEOREMS_BY_NAME["reuse-on-traced-dependencies-fresh"].check().as_expected


@pytest.mark.parametrize("assumption", ["trace_complete", "deterministic"])
def test_without_an_assumption_z3_finds_a_stale_reuse(assumption: str) -> None:
    status, text = z3_probe.check(**{assumption: False})
    assert status == "counterexample" and "stale" in text


@pytest.mark.parametrize("rule", z3_probe.RULES)
def test_dropping_a_rule_of_the_implementation_breaks_the_proof(rule: str) -> None:
    assert z3_probe.check(dropped=rule)[0] == "counterexample"


@pytest.mark.parametrize("name", ["stale-reuse-if-trace-incomplete", "stale-reuse-if-probe-not-deterministic"])
def test_the_negative_theorems_are_registered_and_hold(name: str) -> None:
    result = THEOREMS_BY_NAME[name].check()
    assert result.kind == "negative" and result.as_expected and result.trace is None
