"""The incremental controller equals the spec on random streams (and across a JSON reload)."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from economizer_spec.params import Params
from ledger_properties.economizer_differential import compare
from ledger_properties.economizer_strategies import params_strategy, seeded_controllers, streams

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(stream=streams(), params=params_strategy, seed=st.integers(0, 10**6), tool_judge=st.booleans())
def test_spec_and_implementation_agree_on_random_streams(stream, params, seed, tool_judge) -> None:
    assert compare(stream, params, seeded_controllers(seed, tool_judge)) is None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=streams(max_size=10), seed=st.integers(0, 10**6), rule=st.sampled_from(["kappa", "conformal"]))
def test_agreement_survives_a_reload_between_tasks(stream, seed, rule) -> None:
    params = Params(proposer_first=2, proposer_period=2, confirmations=2, guard_rule=rule, alpha=Fraction(1, 3))
    assert compare(stream, params, seeded_controllers(seed), reload=True) is None
