"""Hypothesis properties of the reference spec over abstract sessions and a model file system.

The property definitions live in `ledger_properties.spec_run` so that `ledger verify` runs the same
ones; here each becomes a pytest test, plus the counterpart showing the safety property can fail.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, find, settings
from hypothesis import strategies as st

from ledger_spec import PLAIN, Category, Command, FileTarget, LineRange, Policy
from ledger_properties import spec_run
from ledger_properties.spec_run import PROPERTIES, SpecProperty, as_test, first_stale_reuse, full_reuse_policies
from ledger_properties.world_model import (
    WorldStep,
    blind_to_scripts_detector,
    complete_detector,
    world_sessions,
)

# Pure computation over the spec, which tracing by coverage slows 1.8-2.3 times: not traced (see
# [tool.coverage.run] in pyproject.toml).
pytestmark = pytest.mark.no_cover

# Enough examples to reach Reuse, Nudge and the cap in most runs while the whole file stays
# within a few seconds; `ledger verify` runs the same properties with more.
EXAMPLES_PER_PROPERTY = 50


@pytest.mark.parametrize("prop", PROPERTIES, ids=[prop.name for prop in PROPERTIES])
def test_spec_property_holds(prop: SpecProperty) -> None:
    as_test(prop, max_examples=EXAMPLES_PER_PROPERTY)()


def _read(key: str) -> WorldStep:
    text = f"sed -n '1,$p' {key}"
    return WorldStep(Command(text, text, Category.READ, FileTarget(key, LineRange(1, None), PLAIN)))


SCRIPT_EDIT = WorldStep(Command("python fix.py", "python fix.py", Category.RUN), (("a.py", "y\n"),), opaque=True)


def test_a_detector_blind_to_scripts_serves_a_stale_read() -> None:
    files = {"a.py": "x\n"}
    script = [_read("a.py"), SCRIPT_EDIT, _read("a.py")]
    stale = first_stale_reuse(files, script, Policy(), blind_to_scripts_detector)
    assert stale is not None and "'x\\n'" in stale and "'y\\n'" in stale


def test_the_complete_detector_reruns_the_same_read_after_a_script() -> None:
    files = {"a.py": "x\n"}
    script = [_read("a.py"), SCRIPT_EDIT, _read("a.py")]
    assert first_stale_reuse(files, script, Policy(), complete_detector) is None


def test_a_spec_whose_currentness_ignores_changes_serves_a_stale_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # A deliberately broken ledger semantics, driven through the session driver: with a
    # complete detector, only the spec's own fault can make the repeated read stale.
    from ledger_spec import state

    files = {"a.py": "x\n"}
    script = [_read("a.py"), SCRIPT_EDIT, _read("a.py")]
    monkeypatch.setattr(state, "current", lambda observation, now: True)
    stale = first_stale_reuse(files, script, Policy(), complete_detector)
    assert stale is not None and stale.startswith("step 2:") and "'y\\n'" in stale


def test_hypothesis_finds_stale_reuse_when_the_detector_omits_changes() -> None:
    # The safety property has teeth: the same search, with a wrong detector, must fail it.
    # Generation only: the first stale Reuse found is proof enough, shrinking it is not needed.
    world, policy = find(
        st.tuples(world_sessions(max_steps=12), full_reuse_policies()),
        lambda drawn: first_stale_reuse(drawn[0][0], drawn[0][1], drawn[1], blind_to_scripts_detector) is not None,
        settings=settings(max_examples=2000, database=None, deadline=None, phases=[Phase.generate]),
    )
    files, script = world
    assert first_stale_reuse(files, script, policy, complete_detector) is None
    assert any(step.opaque for step in script)


def test_run_spec_properties_reports_every_property_as_held() -> None:
    results = spec_run.run_spec_properties(max_examples=5, seed=0)
    assert [name for name, _, _ in results] == [prop.name for prop in PROPERTIES]
    assert all(held for _, held, _ in results), results


def test_run_spec_properties_reports_a_violated_property_with_its_message(monkeypatch: pytest.MonkeyPatch) -> None:
    def never_holds(number: int) -> None:
        raise AssertionError("deliberately violated")

    broken = SpecProperty("always fails", st.tuples(st.integers()), never_holds)
    monkeypatch.setattr(spec_run, "PROPERTIES", (broken,))
    [(name, held, message)] = spec_run.run_spec_properties(max_examples=5, seed=0)
    assert (name, held) == ("always fails", False)
    assert "deliberately violated" in message


def test_run_spec_properties_rejects_zero_examples() -> None:
    with pytest.raises(ValueError, match="max_examples"):
        spec_run.run_spec_properties(max_examples=0)
