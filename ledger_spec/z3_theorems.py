"""The theorems about the counter scheme, govern and range reuse, checked with Z3.

Positive theorems hold for traces of any length. Each is either

* an **inductive invariant**: the base case `initial(s) and not inv(s)` and the inductive step
  `inv(pre) and environment and T(pre, e, post) and not inv(post)` are both unsatisfiable; or
* a **step property**: `environment and T(pre, e, post) and not P(pre, e, post)` is unsatisfiable
  for an arbitrary pre-state, so it holds at every step of every trace whatever came before.

Statements about "every key" or "every observation" are proved for one arbitrary key or one
arbitrary observation index (a fresh constant the solver may choose freely). Nothing in the
encoding singles any key or index out, so the proof generalizes to all of them, and the checks
stay quantifier-free and fast.

Negative theorems are bounded model checks from the initial state with an unsound detector:
Z3 must find a concrete trace in which govern reuses an observation whose file no longer holds
the content it was recorded with. The model is read back as an `AbstractTrace`, which
`ledger_properties.counterexample` turns into a replayable shell session.
"""

from __future__ import annotations

import time
from typing import Callable, Literal

import attrs
import z3

from .values import READ_ONLY, Category, Verdict
from .z3_model import (
    KEY,
    SPEC,
    AbstractTrace,
    Event,
    FileTerms,
    LineRangeTerms,
    State,
    Variant,
    can_serve,
    current,
    current_file,
    current_tree,
    decide,
    environment,
    in_categories,
    initial,
    key_set,
    read_lines,
    read_trace,
    reuse_possible,
    report_is_empty,
    serve_lines,
    transition,
    VERDICT_TERM,
    CATEGORY_TERM,
)

Status = Literal["proved", "counterexample", "unknown"]
Kind = Literal["positive", "negative"]

CHECK_TIMEOUT_MS: int = 10_000
"""Longest one solver call may take. A check that runs out is reported 'unknown', which counts
as a failure: a proof that does not finish is not a proof, and `ledger prove` must not hang."""

NEGATIVE_TRACE_LENGTH: int = 3
"""Steps in the bounded search for a stale reuse: observe, change unnoticed, reuse. No shorter
trace can show one, and the shortest witness makes the most readable counterexample."""


@attrs.frozen
class TheoremResult:
    name: str
    kind: Kind
    status: Status
    seconds: float
    model_text: str = ""
    statement: str = ""
    trace: AbstractTrace | None = None

    @property
    def as_expected(self) -> bool:
        """A positive theorem must be proved; a negative one must yield its model."""
        return self.status == ("proved" if self.kind == "positive" else "counterexample")

    @property
    def summary(self) -> str:
        """One line for a summary table."""
        if self.kind == "positive":
            return {"proved": "proved", "counterexample": "NOT proved: Z3 found a counterexample",
                    "unknown": "NOT proved: solver gave up"}[self.status]
        return {"counterexample": "counterexample found, as expected",
                "proved": "NO counterexample: the unsound detector was not caught",
                "unknown": "solver gave up"}[self.status]


@attrs.frozen
class Theorem:
    name: str
    statement: str
    kind: Kind
    checker: Callable[[Variant], tuple[Status, str, AbstractTrace | None]]

    def check(self, variant: Variant = SPEC) -> TheoremResult:
        started = time.perf_counter()
        status, model_text, trace = self.checker(variant)
        return TheoremResult(
            name=self.name,
            kind=self.kind,
            status=status,
            seconds=time.perf_counter() - started,
            model_text=model_text,
            statement=self.statement,
            trace=trace,
        )


# --- solver plumbing ----------------------------------------------------------------------


def solve(constraints: list[z3.BoolRef]) -> tuple[z3.CheckSatResult, z3.ModelRef | None, str]:
    """Check `constraints` within `CHECK_TIMEOUT_MS`; the result, the model if sat, the reason
    if unknown. Every theorem of `ledger_spec` (here and in `z3_overlap`) asks Z3 through this."""
    solver = z3.Solver()
    solver.set("timeout", CHECK_TIMEOUT_MS)
    solver.add(*constraints)
    result = solver.check()
    reason = solver.reason_unknown() if result == z3.unknown else ""
    return result, (solver.model() if result == z3.sat else None), reason


def _render(model: z3.ModelRef, watch: dict[str, z3.ExprRef]) -> str:
    rendered = []
    for label, term in watch.items():
        value = model.eval(term, model_completion=True)
        rendered.append(f"  {label} = {value}")
    return "\n".join(rendered)


def _refute(
    phases: list[tuple[str, list[z3.BoolRef], dict[str, z3.ExprRef]]],
) -> tuple[Status, str, None]:
    """Each phase's constraints state a violation; the theorem is proved if none is satisfiable."""
    for phase, constraints, watch in phases:
        result, model, reason = solve(constraints)
        if result == z3.sat:
            assert model is not None
            return "counterexample", f"{phase} fails:\n{_render(model, watch)}", None
        if result == z3.unknown:
            return "unknown", f"{phase}: solver gave up ({reason})", None
    return "proved", "", None


def _state_watch(label: str, state: State, key: z3.ExprRef | None = None) -> dict[str, z3.ExprRef]:
    watch: dict[str, z3.ExprRef] = {f"{label}.G": state.total, f"{label}.W": state.wildcard}
    if key is not None:
        watch[f"{label}.L[k]"] = state.local[key]
        watch[f"{label}.V[k]"] = state.version[key]
    return watch


def _event_watch(event: Event, key: z3.ExprRef | None = None) -> dict[str, z3.ExprRef]:
    watch: dict[str, z3.ExprRef] = {
        "event.category": event.category,
        "event.has_target": event.has_target,
        "event.tree": event.tree,
        "event.unknown": event.unknown,
        "event.reports_nothing": report_is_empty(event),
        "event.serves": event.serves,
        "event.nudge_ok": event.nudge_ok,
        "event.withhold": event.withhold,
        "event.name_running": event.name_running,
    }
    if key is not None:
        watch["k in event.reported"] = event.reported[key]
        watch["k in event.changed"] = event.changed[key]
        watch["event.key == k"] = event.key == key
    return watch


def _inductive(
    variant: Variant,
    invariant: Callable[[State], z3.BoolRef],
    watch: Callable[[State, Event, State], dict[str, z3.ExprRef]],
) -> tuple[Status, str, None]:
    base = State.fresh("s0")
    pre, event, post = State.fresh("pre"), Event.fresh("e"), State.fresh("post")
    return _refute(
        [
            ("base case", [initial(base), z3.Not(invariant(base))], _state_watch("s0", base)),
            (
                "inductive step",
                [
                    invariant(pre),
                    environment(variant, pre, event),
                    transition(variant, pre, event, post),
                    z3.Not(invariant(post)),
                ],
                watch(pre, event, post),
            ),
        ]
    )


def _step_property(
    variant: Variant,
    prop: Callable[[State, Event, State], z3.BoolRef],
    watch: Callable[[State, Event, State], dict[str, z3.ExprRef]],
    assume: Callable[[State, Event], z3.BoolRef] = lambda pre, event: z3.BoolVal(True),
) -> tuple[Status, str, None]:
    pre, event, post = State.fresh("pre"), Event.fresh("e"), State.fresh("post")
    constraints = [
        assume(pre, event),
        environment(variant, pre, event),
        transition(variant, pre, event, post),
        z3.Not(prop(pre, event, post)),
    ]
    return _refute([("every step", constraints, watch(pre, event, post))])


# --- counters -----------------------------------------------------------------------------

_ANY_KEY = z3.Const("k", KEY)
_ANY_OBSERVATION = z3.Int("j")


def _counters_watch(pre: State, event: Event, post: State) -> dict[str, z3.ExprRef]:
    return {**_state_watch("pre", pre, _ANY_KEY), **_event_watch(event, _ANY_KEY), **_state_watch("post", post, _ANY_KEY)}


def _snapshots_below_counters(state: State) -> z3.BoolRef:
    """Observation j's snapshot is at most the counters it depends on now."""
    o = state.observation(_ANY_OBSERVATION)
    return z3.Implies(
        o.recorded,
        z3.And(o.total <= state.total, o.wildcard <= state.wildcard, z3.Implies(z3.Not(o.tree), o.local <= state.local[o.key])),
    )


def _check_counters_never_decrease(variant: Variant) -> tuple[Status, str, None]:
    # Step-wise monotonicity holds from any state, so by transitivity along any trace; the
    # inductive half says no counter ever falls below an earlier snapshot of it.
    stepwise = _step_property(
        variant,
        lambda pre, event, post: z3.And(
            post.total >= pre.total, post.wildcard >= pre.wildcard, post.local[_ANY_KEY] >= pre.local[_ANY_KEY]
        ),
        _counters_watch,
    )
    if stepwise[0] != "proved":
        return stepwise
    return _inductive(variant, _snapshots_below_counters, _counters_watch)


def _check_local_le_global(variant: Variant) -> tuple[Status, str, None]:
    return _inductive(
        variant, lambda s: z3.And(0 <= s.local[_ANY_KEY], s.local[_ANY_KEY] <= s.total), _counters_watch
    )


def _check_wildcard_le_global(variant: Variant) -> tuple[Status, str, None]:
    return _inductive(variant, lambda s: z3.And(0 <= s.wildcard, s.wildcard <= s.total), _counters_watch)


def _check_frame(variant: Variant) -> tuple[Status, str, None]:
    # Part 1: a report leaves L[k] alone for every k it does not name.
    counters = _step_property(
        variant,
        lambda pre, event, post: z3.Implies(
            z3.Not(event.reported[_ANY_KEY]), post.local[_ANY_KEY] == pre.local[_ANY_KEY]
        ),
        _counters_watch,
    )
    if counters[0] != "proved":
        return counters

    # Part 2, why per-file counters exist: a known-scope report that does not name a file
    # keeps a current observation of that file current.
    def stays_current(pre: State, event: Event, post: State) -> z3.BoolRef:
        o = pre.observation(_ANY_OBSERVATION)
        untouched = z3.And(z3.Not(event.unknown), z3.Not(event.reported[o.key]))
        return z3.Implies(
            z3.And(o.recorded, z3.Not(o.tree), untouched, current_file(variant, pre, o)),
            current_file(variant, post, post.observation(_ANY_OBSERVATION)),
        )

    def watch(pre: State, event: Event, post: State) -> dict[str, z3.ExprRef]:
        o = pre.observation(_ANY_OBSERVATION)
        return {
            **_counters_watch(pre, event, post),
            "o.key == k": o.key == _ANY_KEY,
            "o.L": o.local,
            "o.W": o.wildcard,
            "o.G": o.total,
            "pre.L[o.key]": pre.local[o.key],
            "post.L[o.key]": post.local[o.key],
            "o.key in event.reported": event.reported[o.key],
        }

    return _step_property(
        variant,
        stays_current,
        watch,
        assume=lambda pre, event: z3.And(0 <= _ANY_OBSERVATION, _ANY_OBSERVATION < pre.observations),
    )


# --- freshness ----------------------------------------------------------------------------


def _fresh_file(variant: Variant, state: State) -> z3.BoolRef:
    """A current file observation's key holds the content version it was recorded with."""
    o = state.observation(_ANY_OBSERVATION)
    return z3.Implies(
        z3.And(o.recorded, z3.Not(o.tree), current_file(variant, state, o)), state.version[o.key] == o.version
    )


def _fresh_tree(variant: Variant, state: State) -> z3.BoolRef:
    """A current tree observation: every key holds the version it held (array equality)."""
    o = state.observation(_ANY_OBSERVATION)
    return z3.Implies(z3.And(o.recorded, o.tree, current_tree(variant, state, o)), state.version == o.versions)


def _freshness_watch(variant: Variant) -> Callable[[State, Event, State], dict[str, z3.ExprRef]]:
    return lambda pre, event, post: _freshness_terms(variant, pre, event, post)


def _freshness_terms(variant: Variant, pre: State, event: Event, post: State) -> dict[str, z3.ExprRef]:
    o, after = pre.observation(_ANY_OBSERVATION), post.observation(_ANY_OBSERVATION)
    return {
        "j (observation)": _ANY_OBSERVATION,
        "pre.observations": pre.observations,
        "o.recorded": after.recorded,
        "o.tree": after.tree,
        "o.L (snapshot)": after.local,
        "o.W (snapshot)": after.wildcard,
        "o.G (snapshot)": after.total,
        "pre.L[o.key]": pre.local[o.key],
        "pre.W": pre.wildcard,
        "pre.G": pre.total,
        "post.L[o.key]": post.local[after.key],
        "post.W": post.wildcard,
        "post.G": post.total,
        "o.version": after.version,
        "pre.V[o.key]": pre.version[o.key],
        "post.V[o.key]": post.version[after.key],
        **_event_watch(event, after.key),
        "verdict": decide(variant, pre, event),
    }


def _check_freshness_file(variant: Variant) -> tuple[Status, str, None]:
    return _inductive(
        variant, lambda s: z3.And(_snapshots_below_counters(s), _fresh_file(variant, s)), _freshness_watch(variant)
    )


def _check_freshness_tree(variant: Variant) -> tuple[Status, str, None]:
    return _inductive(
        variant, lambda s: z3.And(_snapshots_below_counters(s), _fresh_tree(variant, s)), _freshness_watch(variant)
    )


# --- fingerprint --------------------------------------------------------------------------


def _fingerprint_matches_outside(state: State, index: z3.ArithRef) -> z3.BoolRef:
    """Observation `index`, if it recorded a fingerprint, recorded the O its output was
    produced under."""
    o = state.observation(index)
    return z3.Implies(z3.And(o.recorded, o.fingerprinted), o.fingerprint == o.outside)


def _fingerprint_watch(pre: State, event: Event, post: State) -> dict[str, z3.ExprRef]:
    stored = pre.observation(event.reuse_from)
    return {
        **_event_watch(event),
        "pre.O": pre.outside,
        "event.fingerprinted": event.fingerprinted,
        "event.fingerprint": event.fingerprint,
        "event.outside_changed": event.outside_changed,
        "stored.fingerprinted": stored.fingerprinted,
        "stored.fingerprint": stored.fingerprint,
        "stored.O": stored.outside,
        "verdict": decide(SPEC, pre, event),
    }


def _check_reuse_fingerprint_unchanged(variant: Variant) -> tuple[Status, str, None]:
    invariant = _inductive(variant, lambda s: _fingerprint_matches_outside(s, _ANY_OBSERVATION), _fingerprint_watch)
    if invariant[0] != "proved":
        return invariant

    def reuse_sees_what_it_recorded(pre: State, event: Event, post: State) -> z3.BoolRef:
        stored = pre.observation(event.reuse_from)
        return z3.Implies(
            decide(variant, pre, event) == VERDICT_TERM[Verdict.REUSE],
            z3.And(stored.fingerprinted, stored.fingerprint == event.fingerprint, stored.outside == pre.outside),
        )

    return _step_property(
        variant,
        reuse_sees_what_it_recorded,
        _fingerprint_watch,
        assume=lambda pre, event: _fingerprint_matches_outside(pre, event.reuse_from),
    )


# --- govern -------------------------------------------------------------------------------


def _govern_watch(variant: Variant) -> Callable[[State, Event, State], dict[str, z3.ExprRef]]:
    return lambda pre, event, post: _govern_terms(variant, pre, event, post)


def _govern_terms(variant: Variant, pre: State, event: Event, post: State) -> dict[str, z3.ExprRef]:
    return {
        **_event_watch(event),
        "verdict": decide(variant, pre, event),
        "pre.interventions": pre.interventions,
        "pre.withheld": pre.withheld,
        "cap": pre.cap,
        "post.interventions": post.interventions,
        "post.withheld": post.withheld,
    }


def _check_reuse_only_read_only(variant: Variant) -> tuple[Status, str, None]:
    def prop(pre: State, event: Event, post: State) -> z3.BoolRef:
        stored = pre.observation(event.reuse_from)
        return z3.Implies(
            decide(variant, pre, event) == VERDICT_TERM[Verdict.REUSE],
            z3.And(
                in_categories(event.category, READ_ONLY),
                event.has_target,
                stored.recorded,
                event.reuse_from < pre.observations,
                current(variant, pre, stored),
                # withheld: counted as such, and nothing is observed since nothing ran
                post.withheld == pre.withheld + 1,
                post.observations == pre.observations,
            ),
        )

    return _step_property(variant, prop, _govern_watch(variant))


def _check_allow_nudge_execute(variant: Variant) -> tuple[Status, str, None]:
    def prop(pre: State, event: Event, post: State) -> z3.BoolRef:
        verdict = decide(variant, pre, event)
        observable = z3.And(in_categories(event.category, READ_ONLY), event.has_target, report_is_empty(event))
        ran = z3.And(
            post.withheld == pre.withheld,
            post.total == pre.total + z3.If(report_is_empty(event), 0, 1),
            z3.Implies(observable, post.observations == pre.observations + 1),
        )
        allowed = z3.Or(verdict == VERDICT_TERM[Verdict.ALLOW], verdict == VERDICT_TERM[Verdict.NUDGE])
        return z3.Implies(allowed, ran)

    return _step_property(variant, prop, _govern_watch(variant))


def _check_reuse_as_requested(variant: Variant) -> tuple[Status, str, None]:
    def prop(pre: State, event: Event, post: State) -> z3.BoolRef:
        verdict = decide(variant, pre, event)
        serving = z3.And(reuse_possible(variant, pre, event), pre.interventions < pre.cap)
        return z3.And(
            z3.Implies(verdict == VERDICT_TERM[Verdict.REUSE], z3.And(event.withhold, z3.Not(event.name_running))),
            # A stored result that serves a call the agent must run is named in a Nudge: it runs.
            z3.Implies(
                z3.And(serving, z3.Not(event.withhold), z3.Not(event.name_running)),
                verdict == VERDICT_TERM[Verdict.NUDGE],
            ),
        )

    return _step_property(variant, prop, _govern_watch(variant))


def _check_intervention_cap(variant: Variant) -> tuple[Status, str, None]:
    return _inductive(
        variant,
        lambda s: z3.And(0 <= s.withheld, s.withheld <= s.interventions, s.interventions <= s.cap),
        _govern_watch(variant),
    )


# --- range reuse --------------------------------------------------------------------------


def _check_range_reuse(variant: Variant) -> tuple[Status, str, None]:
    file = FileTerms.fresh("file")
    stored, requested = LineRangeTerms.fresh("stored"), LineRangeTerms.fresh("requested")
    stored_output = read_lines(file, stored)
    served = serve_lines(variant, stored, stored_output, requested)
    expected = read_lines(file, requested)
    i = z3.Int("line")
    wrong_line = z3.And(0 <= i, i < expected.length, served.lines[i] != expected.lines[i])
    watch = {
        "file.length": file.length,
        "file.final_newline": file.final_newline,
        "stored.start": stored.start,
        "stored.end": stored.end,
        "stored.to_end": stored.to_end,
        "requested.start": requested.start,
        "requested.end": requested.end,
        "requested.to_end": requested.to_end,
        "stored output lines": stored_output.length,
        "served lines": served.length,
        "expected lines": expected.length,
        "first wrong line index": i,
    }
    return _refute(
        [
            (
                "serve(stored, requested) == read(requested)",
                [
                    file.length >= 0,
                    stored.valid(),
                    requested.valid(),
                    can_serve(stored, file, stored_output, requested),
                    z3.Or(served.length != expected.length, wrong_line),
                ],
                watch,
            )
        ]
    )


# --- negative theorems --------------------------------------------------------------------


def stale_reuse_search(variant: Variant, aim: Callable[[Event], z3.BoolRef] | None = None) -> tuple[Status, str, AbstractTrace | None]:
    """Search traces of NEGATIVE_TRACE_LENGTH steps from the initial state, over two files, for
    a Reuse of a file observation whose file no longer holds its recorded content.

    The detector is `variant.detector`. `aim` narrows each step further (for instance: a step
    that really changed something reported at least one key, so that "omits a key" is not the
    "says nothing" case). 'counterexample' means a stale reuse was found; 'proved' that none
    exists within the bound.
    """
    names = ("a", "b")
    keys = {name: z3.Const(f"key.{name}", KEY) for name in names}
    universe = key_set(list(keys.values()))
    states = [State.fresh(f"s{index}") for index in range(NEGATIVE_TRACE_LENGTH + 1)]
    events = [Event.fresh(f"e{index}") for index in range(NEGATIVE_TRACE_LENGTH)]
    constraints: list[z3.BoolRef] = [z3.Distinct(*keys.values()), initial(states[0])]
    for pre, event, post in zip(states, events, states[1:]):
        constraints += [
            environment(variant, pre, event),
            transition(variant, pre, event, post),
            # A small, concrete world: two files, file targets only, a classifier that gives
            # every read-only command a target.
            z3.Or([event.key == key for key in keys.values()]),
            z3.IsSubset(event.changed, universe),
            z3.IsSubset(event.reported, universe),
            z3.Not(event.tree),
            event.has_target == in_categories(event.category, READ_ONLY),
            # Tidy witnesses: reads are plain file reads about which the detector says
            # nothing, and the advisory nudge never fires (the replay's runtime decides that).
            z3.Implies(in_categories(event.category, READ_ONLY), z3.And(event.category == CATEGORY_TERM[Category.READ], report_is_empty(event))),
            z3.Not(event.nudge_ok),
            # The smallest witness: of the two files, at most one changes unreported per step.
            z3.Not(z3.And([z3.And(event.changed[key], z3.Not(event.reported[key])) for key in keys.values()])),
        ]
        if aim is not None:
            constraints.append(aim(event))
    last, final = states[-2], events[-1]
    stored = last.observation(final.reuse_from)
    constraints += [
        decide(variant, last, final) == VERDICT_TERM[Verdict.REUSE],
        last.version[stored.key] != stored.version,
    ]
    result, model, reason = solve(constraints)
    if result == z3.unsat:
        return "proved", f"no stale reuse within {NEGATIVE_TRACE_LENGTH} steps", None
    if result == z3.unknown:
        return "unknown", f"solver gave up ({reason})", None
    assert model is not None
    trace = read_trace(model, variant, keys, states, events, violation_step=NEGATIVE_TRACE_LENGTH - 1)
    return "counterexample", trace.describe(), trace


def _some_key_reported(event: Event) -> z3.BoolRef:
    # An edit the detector noticed in part: it reported something, just not everything.
    return z3.Implies(event.changed != z3.EmptySet(KEY), event.reported != z3.EmptySet(KEY))


def _check_omitted_key(variant: Variant) -> tuple[Status, str, AbstractTrace | None]:
    return stale_reuse_search(attrs.evolve(variant, detector="omits-changed-key"), _some_key_reported)


def _check_opaque_no_change(variant: Variant) -> tuple[Status, str, AbstractTrace | None]:
    return stale_reuse_search(attrs.evolve(variant, detector="opaque-as-no-change"))


# --- the list -----------------------------------------------------------------------------

def _overlap(check: str) -> Callable[[Variant], tuple[Status, str, None]]:
    """A theorem of `z3_overlap` (its own timeline model of commands in flight, which holds
    whatever the transition relation variant is), as a `Theorem` checker."""

    def checker(variant: Variant) -> tuple[Status, str, None]:
        from . import z3_overlap  # it builds on this module's result type

        result = {
            "file": lambda: z3_overlap.check_overlap_file("s"),
            "tree": z3_overlap.check_overlap_tree,
            "end-stamp": lambda: z3_overlap.check_overlap_file("e"),
            "induction-file": lambda: z3_overlap.check_overlap_induction("file"),
            "induction-tree": lambda: z3_overlap.check_overlap_induction("tree"),
        }[check]()
        return result.status, result.model_text, None

    return checker


def _probe(**assumptions: bool) -> Callable[[Variant], tuple[Status, str, None]]:
    """A theorem of `z3_probe` (its own model of a probed read and its dependency set, which
    holds whatever the transition relation variant is), as a `Theorem` checker."""

    def checker(variant: Variant) -> tuple[Status, str, None]:
        from . import z3_probe

        status, text = z3_probe.check(**assumptions)
        return status, text, None

    return checker


def _context(dropped: str | None = None) -> Callable[[Variant], tuple[Status, str, None]]:
    """A theorem of `z3_context` (the answer rule of a Reuse by reference, over symbolic event
    sequences; independent of the transition relation variant), as a `Theorem` checker."""

    def checker(variant: Variant) -> tuple[Status, str, None]:
        from . import z3_context

        status, text = z3_context.check(dropped=dropped)
        if dropped is None and status == "proved":
            status, text = z3_context.check_inductive()  # and for sequences of every length
        return status, text, None

    return checker


THEOREMS: tuple[Theorem, ...] = (
    Theorem(
        "counters-never-decrease",
        "every step leaves G, W and every L[k] at least where they were, and no counter falls "
        "below an observation's snapshot of it",
        "positive",
        _check_counters_never_decrease,
    ),
    Theorem("local-le-global", "in every reachable state, 0 <= L[k] <= G for every key k", "positive", _check_local_le_global),
    Theorem("wildcard-le-global", "in every reachable state, 0 <= W <= G", "positive", _check_wildcard_le_global),
    Theorem(
        "frame",
        "a report of keys K leaves L[k] unchanged for every k not in K, so a known-scope report "
        "keeps current every file observation of a key it does not name",
        "positive",
        _check_frame,
    ),
    Theorem(
        "freshness-file",
        "with a complete detector, every current file observation's key holds the content "
        "version it held when the observation was recorded",
        "positive",
        _check_freshness_file,
    ),
    Theorem(
        "freshness-tree",
        "with a complete detector, while a tree observation is current every key holds the "
        "content version it held when the observation was recorded",
        "positive",
        _check_freshness_tree,
    ),
    Theorem(
        "govern-reuse-read-only",
        "Reuse is only returned for a read or search with a target, from a recorded observation "
        "that is current; it counts as withheld and records no observation",
        "positive",
        _check_reuse_only_read_only,
    ),
    Theorem(
        "govern-allow-nudge-execute",
        "Allow and Nudge never withhold: the command runs, its report is recorded, and a read "
        "that changed nothing becomes an observation",
        "positive",
        _check_allow_nudge_execute,
    ),
    Theorem(
        "govern-reuse-as-requested",
        "Reuse is never returned for a call the agent must run or whose name is still running; "
        "a stored result that serves a call that must run is named in a Nudge, and the call runs",
        "positive",
        _check_reuse_as_requested,
    ),
    Theorem(
        "intervention-cap",
        "withheld executions <= interventions <= intervention cap, in every reachable state",
        "positive",
        _check_intervention_cap,
    ),
    Theorem(
        "range-reuse-exact",
        "when can_serve holds, slicing a stored range returns exactly the lines a fresh read "
        "of the requested range prints",
        "positive",
        _check_range_reuse,
    ),
    Theorem(
        "reuse-fingerprint-unchanged",
        "with a complete fingerprint, a Reuse serves an observation whose recorded fingerprint "
        "equals the one taken now, so everything outside the counters' view is as it was when "
        "the stored output was produced",
        "positive",
        _check_reuse_fingerprint_unchanged,
    ),
    Theorem(
        "stale-reuse-if-detector-omits-key",
        "a detector that reports some changed keys but omits another lets govern reuse a "
        "stale read (Z3 must find the trace)",
        "negative",
        _check_omitted_key,
    ),
    Theorem(
        "stale-reuse-if-opaque-reported-unchanged",
        "a detector that reports 'no change' for an opaque command lets govern reuse a stale "
        "read (Z3 must find the trace)",
        "negative",
        _check_opaque_no_change,
    ),
    Theorem(
        "overlap-freshness-file",
        "with a complete detector, a file observation stamped with the counters at its command's "
        "start and still current holds what the read saw, under any interleaving of starts, "
        "ends, writes and reports of other commands",
        "positive",
        _overlap("file"),
    ),
    Theorem(
        "overlap-freshness-tree",
        "the same for a tree observation: stamped at its command's start and still current, it "
        "sees every key as the read saw it, under any interleaving",
        "positive",
        _overlap("tree"),
    ),
    Theorem(
        "overlap-induction-file",
        "by induction over any interleaving of starts, reads, ends, changes and reports (other "
        "commands in flight included): a file observation stamped at its command's start and "
        "current at a decision, after the detector was polled, holds the version the read saw",
        "positive",
        _overlap("induction-file"),
    ),
    Theorem(
        "overlap-induction-tree",
        "the same induction for a tree observation (current while G has not moved)",
        "positive",
        _overlap("induction-tree"),
    ),
    Theorem(
        "stale-if-stamped-at-end",
        "stamped at its command's end instead, a file observation can look current while a write "
        "that overlapped the read changed its file (Z3 must find the interleaving)",
        "negative",
        _overlap("end-stamp"),
    ),
    Theorem(
        "reuse-on-traced-dependencies-fresh",
        "if the probe's trace is complete and the probe deterministic, a Reuse whose traced "
        "dependencies all hold (inside: counters and W unchanged; outside: identity unchanged) "
        "prints what running the command now would",
        "positive",
        _probe(),
    ),
    Theorem(
        "stale-reuse-if-trace-incomplete",
        "with a path the trace missed, a Reuse whose traced dependencies all hold can be stale "
        "(Z3 must find the worlds)",
        "negative",
        _probe(trace_complete=False),
    ),
    Theorem(
        "stale-reuse-if-probe-not-deterministic",
        "with an output that depends on the clock although the moved clock printed the same, "
        "a Reuse can be stale (Z3 must find the clocks)",
        "negative",
        _probe(deterministic=False),
    ),
    Theorem(
        "reference-only-to-a-result-held-in-full",
        "a Reuse answered by reference points at a result of the same step that reached the "
        "model in full (a finished call, or a verbatim answer) with no compaction, clear, resume "
        "or new session since, in every sequence of such events (an inductive invariant; every "
        "sequence of up to 8 events also checked directly)",
        "positive",
        _context(),
    ),
    Theorem(
        "stale-reference-if-epoch-ignored",
        "a rule that ignores the epoch references a result delivered before a compaction "
        "(Z3 must find the sequence)",
        "negative",
        _context("epoch-test"),
    ),
    Theorem(
        "stale-reference-if-cut-delivery-counts",
        "a rule that ignores whether the delivery was cut references a result the model only "
        "saw a preview of (Z3 must find the sequence)",
        "negative",
        _context("full-test"),
    ),
)

THEOREMS_BY_NAME: dict[str, Theorem] = {theorem.name: theorem for theorem in THEOREMS}


def run_all(variant: Variant = SPEC) -> list[TheoremResult]:
    """Check every theorem against `variant` (the specification unless told otherwise)."""
    return [theorem.check(variant) for theorem in THEOREMS]
