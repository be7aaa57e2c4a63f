"""CrossHair over the spec's PEP 316 contracts, through the same entry point `ledger verify` uses."""

from __future__ import annotations

import pytest

from ledger_spec.contracts import CONTRACT_TARGETS, check_contracts


def test_crosshair_finds_no_counterexample_to_any_spec_contract() -> None:
    failures = check_contracts(per_condition_timeout=2.0)
    assert failures == [], "\n".join(failures)


def test_the_contract_pass_covers_lines_values_and_transient_patterns() -> None:
    assert "ledger_spec.lines" in CONTRACT_TARGETS
    assert "ledger_spec.values" in CONTRACT_TARGETS
    assert "ledger_spec.policy.matches_transient" in CONTRACT_TARGETS


def test_a_broken_contract_is_reported(tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Guards against a pass that reads as green because CrossHair never looked at anything.
    module = tmp_path / "broken_contract_probe.py"
    module.write_text(
        "def halve(n: int) -> int:\n"
        '    """\n'
        "    post: __return__ * 2 == n\n"
        '    """\n'
        "    return n // 2\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    failures = check_contracts(per_condition_timeout=1.0, targets=("broken_contract_probe",))
    assert any("halve" in failure for failure in failures), failures


def test_an_unimportable_target_is_a_failure_not_silence() -> None:
    failures = check_contracts(per_condition_timeout=1.0, targets=("ledger_spec.no_such_module",))
    assert failures


@pytest.mark.parametrize("timeout", [0.0, -1.0])
def test_a_non_positive_timeout_is_rejected(timeout: float) -> None:
    with pytest.raises(ValueError, match="per_condition_timeout"):
        check_contracts(per_condition_timeout=timeout)
