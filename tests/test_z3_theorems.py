"""Every Z3 theorem: proved for the spec, and failing for a transition relation with one rule
broken, so each proof is shown to depend on the rule it claims to be about."""

from __future__ import annotations

import attrs
import pytest

from ledger_spec.values import Category, Verdict
from ledger_spec.z3_model import BROKEN_VARIANTS, SPEC
from ledger_spec.z3_theorems import THEOREMS, THEOREMS_BY_NAME, stale_reuse_search

# The overlap theorems reason about a timeline of commands in flight, not the transition
# relation, so the relation's broken variants cannot break them: `tests/test_z3_overlap.py`
# breaks them instead (stamped at the end, or with an incomplete detector).
OVERLAP = {
    "overlap-freshness-file", "overlap-freshness-tree", "overlap-induction-file", "overlap-induction-tree",
    "stale-if-stamped-at-end",
}
# The same for the probe's model of a read and its dependency set: `tests/test_z3_probe.py`.
PROBE = {"reuse-on-traced-dependencies-fresh", "stale-reuse-if-trace-incomplete", "stale-reuse-if-probe-not-deterministic"}
# The same for the answer rule of a Reuse by reference: `tests/test_z3_context.py`.
CONTEXT = {
    "reference-only-to-a-result-held-in-full", "stale-reference-if-epoch-ignored", "stale-reference-if-cut-delivery-counts",
}
OWN_MODELS = OVERLAP | PROBE | CONTEXT
POSITIVE = [theorem for theorem in THEOREMS if theorem.kind == "positive" and theorem.name not in OWN_MODELS]
NEGATIVE = [theorem for theorem in THEOREMS if theorem.kind == "negative" and theorem.name not in OWN_MODELS]


@pytest.mark.parametrize("theorem", POSITIVE, ids=lambda theorem: theorem.name)
def test_positive_theorem_is_proved_for_the_spec(theorem) -> None:
    result = theorem.check(SPEC)
    print(f"{result.name}: {result.status} in {result.seconds:.2f}s")
    assert result.status == "proved", result.model_text
    assert result.as_expected


# Each theorem, and the broken rules that must make its proof fail. Every broken variant
# appears at least once (checked below).
BREAKS: dict[str, list[str]] = {
    "counters-never-decrease": ["reset-locals-on-unknown"],
    "local-le-global": ["global-only-on-unknown"],
    "wildcard-le-global": ["wildcard-without-global"],
    "frame": ["bump-all-locals-on-unknown", "file-checks-only-global"],
    "freshness-file": ["forget-wildcard-on-unknown", "file-ignores-wildcard", "forget-local-on-reported-key"],
    "freshness-tree": ["tree-checks-only-wildcard", "global-only-on-unknown", "wildcard-without-global"],
    "govern-reuse-read-only": ["reuse-applies-to-test"],
    "govern-allow-nudge-execute": ["nudge-withholds"],
    "govern-reuse-as-requested": ["reuse-ignores-request"],
    "intervention-cap": ["reuse-not-counted-toward-cap"],
    "range-reuse-exact": ["slice-off-by-one"],
    "reuse-fingerprint-unchanged": ["reuse-ignores-fingerprint"],
}


@pytest.mark.parametrize(
    ("theorem_name", "variant_name"),
    [(theorem, variant) for theorem, variants in BREAKS.items() for variant in variants],
)
def test_broken_variant_makes_the_theorem_fail(theorem_name: str, variant_name: str) -> None:
    result = THEOREMS_BY_NAME[theorem_name].check(BROKEN_VARIANTS[variant_name])
    print(f"{theorem_name} on {variant_name}: {result.status}\n{result.model_text}")
    assert result.status == "counterexample"
    assert not result.as_expected
    assert result.model_text  # the model is shown, not just the verdict


def test_every_theorem_and_every_broken_variant_is_exercised() -> None:
    assert set(BREAKS) == {theorem.name for theorem in POSITIVE}
    assert {variant for variants in BREAKS.values() for variant in variants} == set(BROKEN_VARIANTS)


def test_broken_variants_differ_from_the_spec_in_exactly_one_rule() -> None:
    rules = [field.name for field in attrs.fields(type(SPEC)) if field.name != "name"]
    for variant in BROKEN_VARIANTS.values():
        changed = [rule for rule in rules if getattr(variant, rule) != getattr(SPEC, rule)]
        assert len(changed) == 1, (variant.name, changed)


@pytest.mark.parametrize("theorem", NEGATIVE, ids=lambda theorem: theorem.name)
def test_negative_theorem_yields_a_stale_reuse_trace(theorem) -> None:
    result = theorem.check(SPEC)
    print(f"{result.name}: {result.status} in {result.seconds:.2f}s\n{result.model_text}")
    assert result.status == "counterexample"
    assert result.as_expected
    trace = result.trace
    assert trace is not None
    violation = trace.steps[trace.violation_step]
    assert violation.verdict is Verdict.REUSE
    served = trace.steps[violation.reused_step]
    assert served.category is Category.READ and served.target == violation.target
    # Between the observation and its reuse the file really changed, unreported.
    between = trace.steps[violation.reused_step + 1 : trace.violation_step]
    assert any(violation.target in step.changed and violation.target not in step.reported for step in between)
    assert not any(step.unknown for step in between)


def test_omitted_key_trace_reports_some_key() -> None:
    trace = THEOREMS_BY_NAME["stale-reuse-if-detector-omits-key"].check(SPEC).trace
    assert trace is not None
    assert any(step.reported and set(step.changed) - set(step.reported) for step in trace.steps)


def test_opaque_trace_reports_nothing_for_an_opaque_command() -> None:
    trace = THEOREMS_BY_NAME["stale-reuse-if-opaque-reported-unchanged"].check(SPEC).trace
    assert trace is not None
    silent = [step for step in trace.steps if step.changed and not step.reported and not step.unknown]
    assert silent and all(step.category in (Category.RUN, Category.UNKNOWN) for step in silent)


def test_no_stale_reuse_with_a_complete_detector() -> None:
    """The bounded search is not rigged: with the spec's detector it finds nothing."""
    status, text, trace = stale_reuse_search(SPEC)
    assert status == "proved", text
    assert trace is None


def test_negative_theorem_fails_when_the_ledger_would_catch_it() -> None:
    """A ledger whose file targets depend on G notices every recorded report, so the
    'omits a key' detector (which reports something) no longer leads to stale reuse."""
    result = THEOREMS_BY_NAME["stale-reuse-if-detector-omits-key"].check(BROKEN_VARIANTS["file-checks-only-global"])
    assert result.status == "proved"
    assert not result.as_expected
