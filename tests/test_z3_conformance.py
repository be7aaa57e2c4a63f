"""The Z3 encoding is the machine `ledger_spec.state` describes, on random sessions.

A proof about a different machine would prove nothing, so this runs the same abstract events
through `ledger_spec` and through `ledger_spec.z3_model.transition` (solved, then read back by
model evaluation) and requires the same counters, observation log size, interventions,
currentness of every observation and verdict at every step. The range-reuse encoding is
compared with `ledger_spec.lines` the same way.
"""

from __future__ import annotations

import attrs
import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger_spec import (
    INITIAL,
    FileTarget,
    LineRange,
    Nudge,
    Policy,
    Reuse,
    TreeTarget,
    can_serve,
    current,
    interventions,
    serve_lines,
    split_lines,
)
from ledger_spec import z3_model as zm
from ledger_properties.spec_driver import replay_spec
from ledger_properties.strategies import DEFAULT_KEYS, Step, line_ranges, policies, sessions

# Pure computation over the spec, which tracing by coverage slows 1.8-2.3 times: not traced (see
# [tool.coverage.run] in pyproject.toml).
pytestmark = pytest.mark.no_cover

KEYS: dict[str, z3.ExprRef] = {key: z3.Const(f"conformance.{key}", zm.KEY) for key in DEFAULT_KEYS}


def event_for(step: Step, decision: object, observations: tuple) -> zm.Event:
    """The Z3 event of one scripted step. The detector is complete by construction (what it
    reports is what changed); govern's data-dependent inputs come from the spec's decision."""
    command, target = step.command, step.command.target
    reported = zm.key_set([KEYS[key] for key in sorted(step.changes.paths)])
    reuse_from = observations.index(decision.observation) if isinstance(decision, Reuse) else 0
    return zm.Event(
        category=zm.CATEGORY_TERM[command.category],
        has_target=z3.BoolVal(target is not None),
        tree=z3.BoolVal(isinstance(target, TreeTarget)),
        key=KEYS[target.key] if isinstance(target, FileTarget) else KEYS[DEFAULT_KEYS[0]],
        changed=reported,
        reported=reported,
        unknown=z3.BoolVal(step.changes.unknown),
        names_keys=z3.BoolVal(bool(step.changes.paths)),
        reuse_from=z3.IntVal(reuse_from),
        serves=z3.BoolVal(isinstance(decision, Reuse)),
        nudge_ok=z3.BoolVal(isinstance(decision, Nudge)),
        # The scripted sessions run under the spec's steady fingerprint: always taken, equal.
        fingerprinted=z3.BoolVal(True),
        fingerprint=z3.IntVal(0),
        recorded_fingerprinted=z3.BoolVal(True),
        recorded_fingerprint=z3.IntVal(0),
        outside_changed=z3.BoolVal(False),
        # Sequential steps asked with the default request: withheld if served, no name running.
        withhold=z3.BoolVal(True),
        name_running=z3.BoolVal(False),
    )


def run_both(script: list[Step], policy: Policy, variant: zm.Variant = zm.SPEC) -> list[str]:
    """Run `script` through the spec and the encoding; return every disagreement found."""
    spec_states, decisions, events = [INITIAL], [], []
    for before, step, decision, after in replay_spec(script, policy):
        decisions.append(decision)
        events.append(event_for(step, decision, before.observations))
        spec_states.append(after)

    z3_states = [zm.State.fresh(f"s{index}") for index in range(len(script) + 1)]
    solver = z3.Solver()
    # Distinct paths are distinct keys; without this the model could merge two files.
    solver.add(z3.Distinct(*KEYS.values()))
    solver.add(zm.initial(z3_states[0]), z3_states[0].cap == policy.intervention_cap)
    for pre, event, post in zip(z3_states, events, z3_states[1:]):
        solver.add(zm.transition(variant, pre, event, post))
    assert solver.check() == z3.sat, "the transition relation has no run for a legal session"
    model = solver.model()

    def value(term: z3.ExprRef) -> object:
        evaluated = model.eval(term, model_completion=True)
        if z3.is_int_value(evaluated):
            return evaluated.as_long()
        if z3.is_true(evaluated) or z3.is_false(evaluated):
            return z3.is_true(evaluated)
        return str(evaluated)

    problems = []
    for index, step in enumerate(script):
        pre, post, spec = z3_states[index], z3_states[index + 1], spec_states[index + 1]
        where = f"step {index} ({step.command.text!r}, {step.changes})"
        verdict = value(zm.decide(variant, pre, events[index]))
        if verdict != str(zm.VERDICT_TERM[decisions[index].verdict]):
            problems.append(f"{where}: verdict z3={verdict} spec={decisions[index].verdict.value}")
        pairs = {
            "G": (value(post.total), spec.total),
            "W": (value(post.wildcard), spec.wildcard),
            "observations": (value(post.observations), len(spec.observations)),
            "interventions": (value(post.interventions), interventions(spec)),
            **{f"L[{key}]": (value(post.local[term]), spec.local(key)) for key, term in KEYS.items()},
        }
        for number, observation in enumerate(spec.observations):
            z3_current = value(zm.current(variant, post, post.observation(number)))
            pairs[f"current(observation {number} from step {observation.step})"] = (z3_current, current(observation, spec))
        for name, (encoded, specified) in pairs.items():
            if encoded != specified:
                problems.append(f"{where}: {name} z3={encoded} spec={specified}")
    return problems


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=sessions(max_steps=25), policy=policies(vary_budget=False))
def test_encoding_agrees_with_spec_at_every_step(script: list[Step], policy: Policy) -> None:
    assert run_both(script, policy) == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=sessions(max_steps=25, read_only_changes=True), policy=policies(vary_budget=False))
def test_encoding_agrees_with_spec_when_reads_report_changes(script: list[Step], policy: Policy) -> None:
    """Reads whose step reported changes are not observed; a reused step's report follows
    `advance`'s rule."""
    assert run_both(script, policy) == []


def test_conformance_check_catches_an_encoding_that_forgets_the_wildcard() -> None:
    """The comparison can fail: a broken encoding disagrees on a two-step session."""
    from ledger_spec import Category, Changes, Command

    read = Command("cat a.py", "cat a.py", Category.READ, FileTarget("a.py"))
    opaque = Command("run x", "run x", Category.RUN)
    script = [Step(read, "x\n", 0, Changes()), Step(opaque, "", 0, Changes(unknown=True))]
    assert run_both(script, Policy()) == []
    problems = run_both(script, Policy(), zm.BROKEN_VARIANTS["forget-wildcard-on-unknown"])
    assert any(problem.endswith("W z3=0 spec=1") for problem in problems), problems
    assert any("current(observation 0" in problem for problem in problems), problems


def test_conformance_check_catches_a_file_target_that_checks_only_global() -> None:
    from ledger_spec import Category, Changes, Command

    read = Command("cat a.py", "cat a.py", Category.READ, FileTarget("a.py"))
    edit = Command("edit b", "edit b", Category.EDIT)
    script = [Step(read, "x\n", 0, Changes()), Step(edit, "", 0, Changes({"b.py"})), Step(read, "x\n", 0, Changes())]
    assert run_both(script, Policy()) == []
    problems = run_both(script, Policy(), zm.BROKEN_VARIANTS["file-checks-only-global"])
    assert any("current(observation 0" in problem for problem in problems), problems


def test_the_rule_for_a_reused_steps_report_matches_the_spec() -> None:
    """Whether a reused step's report (changes made meanwhile) is recorded: the encoding must
    follow `advance`, and a session with such a report tells the two rules apart."""
    from ledger_spec import Category, Changes, Command

    read = Command("cat a.py", "cat a.py", Category.READ, FileTarget("a.py"))
    script = [Step(read, "x\n", 0, Changes()), Step(read, "x\n", 0, Changes({"b.py"}))]
    assert run_both(script, Policy()) == []
    flipped = attrs.evolve(zm.SPEC, record_report_when_withheld=not zm.SPEC.record_report_when_withheld)
    assert any(" G z3=" in problem for problem in run_both(script, Policy(), flipped))


# --- range reuse --------------------------------------------------------------------------


def _range_terms(lines: LineRange) -> zm.LineRangeTerms:
    return zm.LineRangeTerms(
        z3.IntVal(lines.start),
        z3.IntVal(lines.start if lines.end is None else lines.end),
        z3.BoolVal(lines.end is None),
    )


def _evaluate_range_reuse(text: str, stored: LineRange, requested: LineRange, variant: zm.Variant) -> tuple[bool, str | None]:
    """can_serve and the served text, computed by the Z3 encoding on a concrete file."""
    file_lines = split_lines(text)
    line_values = {line: z3.Const(f"line.{index}", zm.LINE) for index, line in enumerate(dict.fromkeys(file_lines))}
    by_value = {str(term): line for line, term in line_values.items()}
    array = z3.K(z3.IntSort(), z3.Const("line.absent", zm.LINE))
    for number, line in enumerate(file_lines, start=1):
        array = z3.Store(array, number, line_values[line])
    file = zm.FileTerms(array, z3.IntVal(len(file_lines)), z3.BoolVal(text == "" or text.endswith("\n")))
    stored_terms, requested_terms = _range_terms(stored), _range_terms(requested)
    output = zm.read_lines(file, stored_terms)
    servable = z3.is_true(z3.simplify(zm.can_serve(stored_terms, file, output, requested_terms)))
    if not servable:
        return False, None
    served = zm.serve_lines(variant, stored_terms, output, requested_terms)
    length = z3.simplify(served.length).as_long()
    return True, "".join(by_value[str(z3.simplify(served.lines[index]))] for index in range(length))


def _read(text: str, lines: LineRange) -> str:
    """What a real read of `lines` prints: the reference for both encodings."""
    file_lines = split_lines(text)
    end = len(file_lines) if lines.end is None else lines.end
    return "".join(file_lines[lines.start - 1 : max(lines.start - 1, end)])


texts = st.lists(st.sampled_from(("p\n", "q\n", "\n", "r\r\n", "s")), max_size=8).map("".join)


@settings(max_examples=150, deadline=None)
@given(text=texts, stored=line_ranges(max_line=9), requested=line_ranges(max_line=9))
def test_range_encoding_agrees_with_spec_lines(text: str, stored: LineRange, requested: LineRange) -> None:
    output = _read(text, stored)
    servable, served = _evaluate_range_reuse(text, stored, requested, zm.SPEC)
    assert servable == can_serve(stored, output, requested)
    if servable:
        assert served == serve_lines(stored, output, requested)
        assert served == _read(text, requested)


def test_range_encoding_check_catches_the_off_by_one_slice() -> None:
    text, stored, requested = "p\nq\nr\n", LineRange(1, 3), LineRange(2, 3)
    assert _evaluate_range_reuse(text, stored, requested, zm.SPEC) == (True, "q\nr\n")
    assert _evaluate_range_reuse(text, stored, requested, zm.BROKEN_VARIANTS["slice-off-by-one"]) == (True, "q\n")
