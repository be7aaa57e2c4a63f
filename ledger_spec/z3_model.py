"""The reference semantics of `ledger_spec.state` as Z3 terms, for proofs over unbounded traces.

What is encoded
---------------
* **keys**: an uninterpreted sort `Key`, so a proof holds for any set of files, not a sample.
* **state** (`State`): the counters `G`, `W` and `L` (an array `Key -> Int`), a *content version*
  per key `V` (ghost: it advances whenever a command really changes the file, whatever the
  detector says), the observation log as arrays indexed by observation number (each entry has
  the counter snapshot the spec takes plus the content versions it was recorded under), and the
  governance counters (interventions so far, withheld executions so far, the cap).
* **event** (`Event`): one step. The command's category, whether it carries a target and of
  which kind, the keys the command *really* changed (`changed`), the detector's report
  (`reported` keys and `unknown`), and the abstract inputs of govern that depend on data the
  counters do not model: which stored observation would serve the command (`reuse_from`,
  `serves`) and whether the history-based nudge rules fire (`nudge_ok`).
* **transition**: `transition(variant, pre, event, post)` is a Boolean term, the relation the
  proofs quantify over. It is `post == successor(variant, pre, event)` component by component,
  where `successor` follows `ledger_spec.state.advance` after `govern`: the real changes of the
  step advance `V`; a non-empty report is recorded (`G += 1`, `L[k] += 1` for reported `k`,
  `W += 1` if unknown) unless the step was withheld (see `record_report_when_withheld`); an
  executed read-only command with a target whose report is empty appends an observation with a
  snapshot of the counters; a withheld step counts as withheld.
* **environment** (`environment`): what the proofs assume of the world rather than of the ledger:
  the detector behaves as the variant says (`complete`: every really changed key is reported,
  or the report is unknown), and the fingerprint is complete (below).
* **fingerprint**: everything outside the counters' view (programs, environment, the root's
  identity, git's configuration) is one ghost version `O` that any step may advance
  (`outside_changed`, after govern decided). An event carries the fingerprint taken now, for
  govern, and the one its observation records; each may be None (`fingerprinted` false). A
  complete fingerprint equals `O` when taken, and the runtime records one only if `O` did not
  move while the command ran. An observation keeps the fingerprint and, as a ghost, the `O` its
  output was produced under.

`Variant` names every rule the encoding has; `SPEC` is the specification and each entry of
`BROKEN_VARIANTS` changes exactly one rule, so a theorem that fails only on the broken variant
shows it constrains that rule. The govern tables (`REUSABLE`, `WITHHOLDING`, `INTERVENING`, the
nudgeable categories) are imported from `ledger_spec.state`, not restated.

The conformance test (tests/test_z3_conformance.py) runs random sessions through this encoding
and through `ledger_spec.state` and requires equal counters, currentness and verdicts at every
step: a proof about a different machine would prove nothing.
"""

from __future__ import annotations

from typing import Literal, Sequence

import attrs
import z3

from .state import INTERVENING, NUDGEABLE_ANY_TIME, NUDGEABLE_IN_SHORT_LOOP, REUSABLE, WITHHOLDING
from .values import READ_ONLY, Category, Verdict

# --- sorts --------------------------------------------------------------------------------

KEY: z3.SortRef = z3.DeclareSort("Key")
"""File keys. Uninterpreted: a proof may not assume anything about how many there are."""

LINE: z3.SortRef = z3.DeclareSort("Line")
"""One line of a file as a view prints it (text, final newline or not, line number)."""

CATEGORY, _CATEGORY_CONSTANTS = z3.EnumSort("Category", [category.name for category in Category])
VERDICT, _VERDICT_CONSTANTS = z3.EnumSort("Verdict", [verdict.name for verdict in Verdict])
CATEGORY_TERM: dict[Category, z3.ExprRef] = dict(zip(Category, _CATEGORY_CONSTANTS))
VERDICT_TERM: dict[Verdict, z3.ExprRef] = dict(zip(Verdict, _VERDICT_CONSTANTS))
CATEGORY_OF_TERM: dict[str, Category] = {str(term): category for category, term in CATEGORY_TERM.items()}
VERDICT_OF_TERM: dict[str, Verdict] = {str(term): verdict for verdict, term in VERDICT_TERM.items()}

KEY_SET: z3.SortRef = z3.SetSort(KEY)

Detector = Literal["complete", "omits-changed-key", "opaque-as-no-change"]
DETECTORS: tuple[Detector, ...] = ("complete", "omits-changed-key", "opaque-as-no-change")

# Categories whose commands run a program the text does not describe: the ones an optimistic
# detector is tempted to report as "no change".
OPAQUE: frozenset[Category] = frozenset({Category.RUN, Category.UNKNOWN})


# --- variants -----------------------------------------------------------------------------


@attrs.frozen
class Variant:
    """Every rule of the encoding, by name. The defaults are `ledger_spec`'s rules."""

    name: str = "spec"
    global_on_keyed_report: bool = True
    """A report naming keys advances G."""
    global_on_unknown_report: bool = True
    """A report of unknown scope advances G."""
    wildcard_on_unknown_report: bool = True
    """A report of unknown scope advances W."""
    local_on_reported_key: bool = True
    """A report advances L[k] for each key k it names."""
    locals_on_unknown_report: Literal["keep", "reset", "bump"] = "keep"
    """What an unknown report does to the L of keys it does not name: the spec keeps them."""
    file_current: Literal["local-and-wildcard", "global", "local"] = "local-and-wildcard"
    """Which counters a file target's currentness compares with its snapshot."""
    tree_current: Literal["global", "wildcard"] = "global"
    """Which counter a tree target's currentness compares with its snapshot."""
    reusable: frozenset[Category] = REUSABLE
    withholding: frozenset[Verdict] = WITHHOLDING
    intervening: frozenset[Verdict] = INTERVENING
    record_report_when_withheld: bool = False
    """Whether a Reuse step records the detector's report (changes made meanwhile by something
    else). `ledger_spec.state.advance` ignores it: nothing ran. So the environment promises
    that nothing changes during a withheld step (the runtime polls the detector before it
    reuses). The conformance test pins this rule to the spec's."""
    slice_end_offset: int = 1
    """Range reuse cuts stored lines [a - s, b - s + offset): 1 is the spec's inclusive end."""
    reuse_checks_fingerprint: bool = True
    """Reuse needs the observation's fingerprint to equal (and both to exist) the one taken now."""
    reuse_honours_request: bool = True
    """Reuse needs the caller to accept a withheld call and no call of its name to be running
    (`ledger_spec.Request`); a call that must run gets the Nudge naming the result instead."""
    detector: Detector = "complete"
    """What the environment's detector may do (an assumption, not a rule of the ledger)."""


SPEC: Variant = Variant()

BROKEN_VARIANTS: dict[str, Variant] = {
    variant.name: variant
    for variant in (
        Variant(name="forget-wildcard-on-unknown", wildcard_on_unknown_report=False),
        Variant(name="file-checks-only-global", file_current="global"),
        Variant(name="file-ignores-wildcard", file_current="local"),
        Variant(name="forget-local-on-reported-key", local_on_reported_key=False),
        Variant(name="global-only-on-unknown", global_on_keyed_report=False),
        Variant(name="wildcard-without-global", global_on_unknown_report=False),
        Variant(name="reset-locals-on-unknown", locals_on_unknown_report="reset"),
        Variant(name="bump-all-locals-on-unknown", locals_on_unknown_report="bump"),
        Variant(name="tree-checks-only-wildcard", tree_current="wildcard"),
        Variant(name="reuse-applies-to-test", reusable=REUSABLE | {Category.TEST}),
        Variant(name="nudge-withholds", withholding=WITHHOLDING | {Verdict.NUDGE}),
        Variant(name="reuse-not-counted-toward-cap", intervening=INTERVENING - {Verdict.REUSE}),
        Variant(name="slice-off-by-one", slice_end_offset=0),
        Variant(name="reuse-ignores-fingerprint", reuse_checks_fingerprint=False),
        Variant(name="reuse-ignores-request", reuse_honours_request=False),
    )
}


# --- state and events ---------------------------------------------------------------------


@attrs.frozen
class ObservationTerms:
    """One entry of the observation log, as terms."""

    recorded: z3.BoolRef
    tree: z3.BoolRef
    key: z3.ExprRef
    local: z3.ArithRef
    wildcard: z3.ArithRef
    total: z3.ArithRef
    version: z3.ArithRef  # V[key] when recorded (file targets)
    versions: z3.ArrayRef  # all of V when recorded (tree targets)
    fingerprinted: z3.BoolRef  # a fingerprint was recorded (not None)
    fingerprint: z3.ArithRef  # the recorded fingerprint
    outside: z3.ArithRef  # ghost: O when its output was produced


@attrs.frozen
class State:
    """The ledger state plus the ghost content versions, as Z3 terms."""

    total: z3.ArithRef  # G
    wildcard: z3.ArithRef  # W
    local: z3.ArrayRef  # L: Key -> Int
    version: z3.ArrayRef  # V: Key -> Int, ghost
    observations: z3.ArithRef  # how many observations were recorded
    obs_recorded: z3.ArrayRef  # Int -> Bool
    obs_tree: z3.ArrayRef  # Int -> Bool
    obs_key: z3.ArrayRef  # Int -> Key
    obs_local: z3.ArrayRef  # Int -> Int
    obs_wildcard: z3.ArrayRef  # Int -> Int
    obs_total: z3.ArrayRef  # Int -> Int
    obs_version: z3.ArrayRef  # Int -> Int
    obs_versions: z3.ArrayRef  # Int -> (Key -> Int)
    outside: z3.ArithRef  # O, ghost: the version of everything outside the counters' view
    obs_fingerprinted: z3.ArrayRef  # Int -> Bool
    obs_fingerprint: z3.ArrayRef  # Int -> Int
    obs_outside: z3.ArrayRef  # Int -> Int, ghost
    interventions: z3.ArithRef
    withheld: z3.ArithRef
    cap: z3.ArithRef

    @classmethod
    def fresh(cls, prefix: str) -> "State":
        """A state of unconstrained constants named `prefix.<field>`."""
        int_to = lambda sort: z3.ArraySort(z3.IntSort(), sort)  # noqa: E731
        versions = z3.ArraySort(KEY, z3.IntSort())
        sorts = {
            "total": z3.IntSort(),
            "wildcard": z3.IntSort(),
            "local": versions,
            "version": versions,
            "observations": z3.IntSort(),
            "obs_recorded": int_to(z3.BoolSort()),
            "obs_tree": int_to(z3.BoolSort()),
            "obs_key": int_to(KEY),
            "obs_local": int_to(z3.IntSort()),
            "obs_wildcard": int_to(z3.IntSort()),
            "obs_total": int_to(z3.IntSort()),
            "obs_version": int_to(z3.IntSort()),
            "obs_versions": int_to(versions),
            "outside": z3.IntSort(),
            "obs_fingerprinted": int_to(z3.BoolSort()),
            "obs_fingerprint": int_to(z3.IntSort()),
            "obs_outside": int_to(z3.IntSort()),
            "interventions": z3.IntSort(),
            "withheld": z3.IntSort(),
            "cap": z3.IntSort(),
        }
        return cls(**{name: z3.Const(f"{prefix}.{name}", sort) for name, sort in sorts.items()})

    def fields(self) -> dict[str, z3.ExprRef]:
        return {field.name: getattr(self, field.name) for field in attrs.fields(type(self))}

    def observation(self, index: z3.ArithRef | int) -> ObservationTerms:
        return ObservationTerms(
            recorded=self.obs_recorded[index],
            tree=self.obs_tree[index],
            key=self.obs_key[index],
            local=self.obs_local[index],
            wildcard=self.obs_wildcard[index],
            total=self.obs_total[index],
            version=self.obs_version[index],
            versions=self.obs_versions[index],
            fingerprinted=self.obs_fingerprinted[index],
            fingerprint=self.obs_fingerprint[index],
            outside=self.obs_outside[index],
        )


@attrs.frozen
class Event:
    """One step's inputs, as Z3 terms."""

    category: z3.ExprRef
    has_target: z3.BoolRef
    tree: z3.BoolRef  # the target is a tree target (else a file target)
    key: z3.ExprRef  # the file target's key
    changed: z3.ArrayRef  # keys the command really changed (a set)
    reported: z3.ArrayRef  # keys the detector reported (a set)
    unknown: z3.BoolRef  # the detector reported unknown scope
    names_keys: z3.BoolRef  # `reported` is not empty; tied to it by `transition`
    reuse_from: z3.ArithRef  # the observation govern would serve the command from
    serves: z3.BoolRef  # that observation's stored output answers this command
    nudge_ok: z3.BoolRef  # the history-based nudge rules fire (repeat, cooldown, window)
    fingerprinted: z3.BoolRef  # a fingerprint could be taken now (for govern)
    fingerprint: z3.ArithRef  # the fingerprint taken now
    recorded_fingerprinted: z3.BoolRef  # the observation of this step records a fingerprint
    recorded_fingerprint: z3.ArithRef  # the fingerprint it records
    outside_changed: z3.BoolRef  # O advanced during this step (after govern)
    withhold: z3.BoolRef  # the caller accepts a stored result in place of running (`Request.withhold`)
    name_running: z3.BoolRef  # a call of the name this one runs under is in flight (`Request.call`)

    @classmethod
    def fresh(cls, prefix: str) -> "Event":
        return cls(
            category=z3.Const(f"{prefix}.category", CATEGORY),
            has_target=z3.Bool(f"{prefix}.has_target"),
            tree=z3.Bool(f"{prefix}.tree"),
            key=z3.Const(f"{prefix}.key", KEY),
            changed=z3.Const(f"{prefix}.changed", KEY_SET),
            reported=z3.Const(f"{prefix}.reported", KEY_SET),
            unknown=z3.Bool(f"{prefix}.unknown"),
            names_keys=z3.Bool(f"{prefix}.names_keys"),
            reuse_from=z3.Int(f"{prefix}.reuse_from"),
            serves=z3.Bool(f"{prefix}.serves"),
            nudge_ok=z3.Bool(f"{prefix}.nudge_ok"),
            fingerprinted=z3.Bool(f"{prefix}.fingerprinted"),
            fingerprint=z3.Int(f"{prefix}.fingerprint"),
            recorded_fingerprinted=z3.Bool(f"{prefix}.recorded_fingerprinted"),
            recorded_fingerprint=z3.Int(f"{prefix}.recorded_fingerprint"),
            outside_changed=z3.Bool(f"{prefix}.outside_changed"),
            withhold=z3.Bool(f"{prefix}.withhold"),
            name_running=z3.Bool(f"{prefix}.name_running"),
        )


def key_set(members: Sequence[z3.ExprRef]) -> z3.ArrayRef:
    """The finite set of `members` as a Z3 set term."""
    result = z3.EmptySet(KEY)
    for member in members:
        result = z3.SetAdd(result, member)
    return result


def in_categories(category: z3.ExprRef, categories: frozenset[Category]) -> z3.BoolRef:
    return z3.Or([category == CATEGORY_TERM[c] for c in sorted(categories, key=lambda c: c.name)] or [z3.BoolVal(False)])


def in_verdicts(verdict: z3.ExprRef, verdicts: frozenset[Verdict]) -> z3.BoolRef:
    return z3.Or([verdict == VERDICT_TERM[v] for v in sorted(verdicts, key=lambda v: v.name)] or [z3.BoolVal(False)])


def names_keys_matches(event: Event) -> z3.BoolRef:
    """`names_keys` says whether `reported` is empty. Set equality keeps this quantifier-free;
    a separate Boolean lets a model of a concrete run evaluate every counter to a number."""
    return event.names_keys == (event.reported != z3.EmptySet(KEY))


def report_is_empty(event: Event) -> z3.BoolRef:
    """`Changes.empty`: no keys and not unknown."""
    return z3.And(z3.Not(event.unknown), z3.Not(event.names_keys))


# --- queries ------------------------------------------------------------------------------


def current_file(variant: Variant, state: State, observation: ObservationTerms) -> z3.BoolRef:
    local_holds = state.local[observation.key] == observation.local
    wildcard_holds = state.wildcard == observation.wildcard
    if variant.file_current == "global":
        return state.total == observation.total
    if variant.file_current == "local":
        return local_holds
    return z3.And(local_holds, wildcard_holds)


def current_tree(variant: Variant, state: State, observation: ObservationTerms) -> z3.BoolRef:
    if variant.tree_current == "wildcard":
        return state.wildcard == observation.wildcard
    return state.total == observation.total


def current(variant: Variant, state: State, observation: ObservationTerms) -> z3.BoolRef:
    """`ledger_spec.state.current`, for a recorded observation."""
    return z3.If(observation.tree, current_tree(variant, state, observation), current_file(variant, state, observation))


def reuse_possible(variant: Variant, pre: State, event: Event) -> z3.BoolRef:
    """`_reuse` finds a current observation that serves the command.

    Which stored output serves which command (same normalized text, or a range slice) is data
    the counters do not model, so `serves` is an input; but it can only name a recorded
    observation of the same kind of target and, for a file target, the same key.
    """
    index = event.reuse_from
    stored = pre.observation(index)
    same_target = z3.And(stored.tree == event.tree, z3.Implies(z3.Not(event.tree), stored.key == event.key))
    fingerprint_equal = z3.And(stored.fingerprinted, event.fingerprinted, stored.fingerprint == event.fingerprint)
    return z3.And(
        fingerprint_equal if variant.reuse_checks_fingerprint else z3.BoolVal(True),
        in_categories(event.category, variant.reusable),
        event.has_target,
        0 <= index,
        index < pre.observations,
        stored.recorded,
        current(variant, pre, stored),
        event.serves,
        same_target,
    )


def decide(variant: Variant, pre: State, event: Event) -> z3.ExprRef:
    """`ledger_spec.state.govern`: past the cap Allow; else Reuse (when the request allows it),
    else Nudge (the history rules, or a stored result that serves a call that must run), else
    Allow. A call whose name is running is never served."""
    nudgeable = in_categories(event.category, NUDGEABLE_ANY_TIME | NUDGEABLE_IN_SHORT_LOOP)
    serving = z3.And(reuse_possible(variant, pre, event), z3.Not(event.name_running))
    honoured = z3.And(event.withhold, z3.Not(event.name_running)) if variant.reuse_honours_request else z3.BoolVal(True)
    return z3.If(
        pre.interventions >= pre.cap,
        VERDICT_TERM[Verdict.ALLOW],
        z3.If(
            z3.And(reuse_possible(variant, pre, event), honoured),
            VERDICT_TERM[Verdict.REUSE],
            z3.If(
                z3.Or(serving, z3.And(nudgeable, event.nudge_ok)),
                VERDICT_TERM[Verdict.NUDGE],
                VERDICT_TERM[Verdict.ALLOW],
            ),
        ),
    )


# --- transition ---------------------------------------------------------------------------


def _counted(condition: z3.BoolRef) -> z3.ArithRef:
    return z3.If(condition, z3.IntVal(1), z3.IntVal(0))


def successor(variant: Variant, pre: State, event: Event) -> State:
    """The state after `event`, as terms over `pre` and `event` (`ledger_spec.state.advance`)."""
    verdict = decide(variant, pre, event)
    ran = z3.Not(in_verdicts(verdict, variant.withholding))
    recorded = z3.Not(report_is_empty(event))
    if not variant.record_report_when_withheld:
        recorded = z3.And(ran, recorded)
    keyed = event.names_keys
    global_advances = z3.And(
        recorded,
        z3.Or(
            z3.And(keyed, z3.BoolVal(variant.global_on_keyed_report)),
            z3.And(event.unknown, z3.BoolVal(variant.global_on_unknown_report)),
        ),
    )
    total = pre.total + _counted(global_advances)
    wildcard = pre.wildcard + _counted(z3.And(recorded, event.unknown, z3.BoolVal(variant.wildcard_on_unknown_report)))

    k = z3.Const("k", KEY)
    reported_bump = _counted(z3.And(event.reported[k], z3.BoolVal(variant.local_on_reported_key)))
    local_after = pre.local[k] + reported_bump
    if variant.locals_on_unknown_report == "reset":
        local_after = z3.If(event.unknown, reported_bump, local_after)
    elif variant.locals_on_unknown_report == "bump":
        local_after = z3.If(z3.And(event.unknown, z3.Not(event.reported[k])), pre.local[k] + 1, local_after)
    local = z3.Lambda([k], z3.If(recorded, local_after, pre.local[k]))
    # `changed` is everything that really changed during the step: the command's own writes if
    # it ran, and whatever else wrote to the workspace meanwhile.
    version = z3.Lambda([k], z3.If(event.changed[k], pre.version[k] + 1, pre.version[k]))

    observes = z3.And(ran, in_categories(event.category, READ_ONLY), event.has_target, report_is_empty(event))
    slot = pre.observations

    def append(log: z3.ArrayRef, value: z3.ExprRef) -> z3.ArrayRef:
        return z3.If(observes, z3.Store(log, slot, value), log)

    return State(
        total=total,
        wildcard=wildcard,
        local=local,
        version=version,
        observations=pre.observations + _counted(observes),
        obs_recorded=append(pre.obs_recorded, z3.BoolVal(True)),
        obs_tree=append(pre.obs_tree, event.tree),
        obs_key=append(pre.obs_key, event.key),
        obs_local=append(pre.obs_local, z3.If(event.tree, z3.IntVal(0), local[event.key])),
        obs_wildcard=append(pre.obs_wildcard, wildcard),
        obs_total=append(pre.obs_total, total),
        obs_version=append(pre.obs_version, version[event.key]),
        obs_versions=append(pre.obs_versions, version),
        outside=pre.outside + _counted(event.outside_changed),
        obs_fingerprinted=append(pre.obs_fingerprinted, event.recorded_fingerprinted),
        obs_fingerprint=append(pre.obs_fingerprint, event.recorded_fingerprint),
        obs_outside=append(pre.obs_outside, pre.outside),
        interventions=pre.interventions + _counted(in_verdicts(verdict, variant.intervening)),
        withheld=pre.withheld + _counted(in_verdicts(verdict, variant.withholding)),
        cap=pre.cap,
    )


def transition(variant: Variant, pre: State, event: Event, post: State) -> z3.BoolRef:
    """The transition relation T(pre, event, post) that the proofs quantify over."""
    expected = successor(variant, pre, event).fields()
    return z3.And([names_keys_matches(event)] + [post_term == expected[name] for name, post_term in post.fields().items()])


def initial(state: State) -> z3.BoolRef:
    """`ledger_spec.state.INITIAL`: no modifications, observations or commands. Content
    versions are arbitrary: the files exist with whatever content they have."""
    return z3.And(
        state.total == 0,
        state.wildcard == 0,
        state.local == z3.K(KEY, z3.IntVal(0)),
        state.observations == 0,
        state.obs_recorded == z3.K(z3.IntSort(), z3.BoolVal(False)),
        state.interventions == 0,
        state.withheld == 0,
        state.cap >= 0,  # Policy.intervention_cap is a non-negative integer
    )


# --- environment --------------------------------------------------------------------------


def detector_complete(event: Event) -> z3.BoolRef:
    """Every key the command really changed is reported, or the report is unknown."""
    return z3.Or(event.unknown, z3.IsSubset(event.changed, event.reported))


def detector_report(detector: Detector, event: Event) -> z3.BoolRef:
    """What a detector of kind `detector` may report for `event`."""
    if detector == "complete":
        return detector_complete(event)
    if detector == "omits-changed-key":
        # Never says "unknown" and never invents a change, but may leave changed keys out.
        return z3.And(z3.Not(event.unknown), z3.IsSubset(event.reported, event.changed))
    if detector == "opaque-as-no-change":
        # Complete for commands whose text shows their edits; "no change" for opaque ones.
        return z3.If(
            in_categories(event.category, OPAQUE),
            report_is_empty(event),
            detector_complete(event),
        )
    raise ValueError(f"unknown detector model {detector!r}; expected one of {DETECTORS}")


def fingerprint_complete(pre: State, event: Event) -> z3.BoolRef:
    """A fingerprint taken now equals O now; one recorded equals O as the command started and
    is recorded only if O did not move while it ran (the runtime takes it before and after)."""
    return z3.And(
        z3.Implies(event.fingerprinted, event.fingerprint == pre.outside),
        z3.Implies(
            event.recorded_fingerprinted,
            z3.And(event.recorded_fingerprint == pre.outside, z3.Not(event.outside_changed)),
        ),
    )


def environment(variant: Variant, pre: State, event: Event) -> z3.BoolRef:
    """What the world guarantees: the variant's detector.

    The classifier's correctness is not assumed: a read-only command that did change files
    gets a non-empty report from a complete detector, so it is never observed. It matters for
    the output a Reuse returns, which the real-filesystem properties check.
    """
    guarantees = [detector_report(variant.detector, event), fingerprint_complete(pre, event)]
    if not variant.record_report_when_withheld:
        withheld = in_verdicts(decide(variant, pre, event), variant.withholding)
        guarantees.append(z3.Implies(withheld, event.changed == z3.EmptySet(KEY)))
    return z3.And(guarantees)


# --- range reuse --------------------------------------------------------------------------


@attrs.frozen
class LineRangeTerms:
    """A `LineRange` as terms: `start..end`, or `start..` to the end of file when `to_end`."""

    start: z3.ArithRef
    end: z3.ArithRef
    to_end: z3.BoolRef

    @classmethod
    def fresh(cls, prefix: str) -> "LineRangeTerms":
        return cls(z3.Int(f"{prefix}.start"), z3.Int(f"{prefix}.end"), z3.Bool(f"{prefix}.to_end"))

    def valid(self) -> z3.BoolRef:
        """`LineRange`'s validators: start >= 1 and end >= start - 1."""
        return z3.And(self.start >= 1, z3.Or(self.to_end, self.end >= self.start - 1))

    def is_empty(self) -> z3.BoolRef:
        return z3.And(z3.Not(self.to_end), self.end < self.start)


@attrs.frozen
class FileTerms:
    """A file as its view prints it: lines 1..length, and whether the last ends in a newline."""

    lines: z3.ArrayRef  # Int -> Line, 1-based
    length: z3.ArithRef
    final_newline: z3.BoolRef

    @classmethod
    def fresh(cls, prefix: str) -> "FileTerms":
        return cls(
            z3.Array(f"{prefix}.lines", z3.IntSort(), LINE),
            z3.Int(f"{prefix}.length"),
            z3.Bool(f"{prefix}.final_newline"),
        )


@attrs.frozen
class Output:
    """A read's output as a list of lines: `lines[0..length)`."""

    lines: z3.ArrayRef
    length: z3.ArithRef


def _min(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a <= b, a, b)


def _max(a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
    return z3.If(a >= b, a, b)


def _clamp(value: z3.ArithRef, low: z3.ArithRef, high: z3.ArithRef) -> z3.ArithRef:
    return _max(low, _min(value, high))


def read_lines(file: FileTerms, wanted: LineRangeTerms) -> Output:
    """What reading `wanted` of `file` prints: lines start..min(end, length)."""
    last = z3.If(wanted.to_end, file.length, _min(wanted.end, file.length))
    i = z3.Int("i")
    return Output(z3.Lambda([i], file.lines[wanted.start + i]), _max(z3.IntVal(0), last - wanted.start + 1))


def covers(stored: LineRangeTerms, requested: LineRangeTerms) -> z3.BoolRef:
    """`LineRange.covers`."""
    return z3.Or(
        requested.is_empty(),
        z3.And(
            requested.start >= stored.start,
            z3.Or(stored.to_end, z3.And(z3.Not(requested.to_end), requested.end <= stored.end)),
        ),
    )


def reaches_end_of_file(stored: LineRangeTerms, file: FileTerms, output: Output) -> z3.BoolRef:
    """`lines.reaches_end_of_file`: fewer lines than asked for, or a last line without newline."""
    last_shown = stored.start + output.length - 1
    unterminated = z3.And(output.length > 0, last_shown == file.length, z3.Not(file.final_newline))
    return z3.Or(
        stored.to_end,
        z3.And(
            z3.Not(stored.is_empty()),
            z3.Or(output.length < stored.end - stored.start + 1, unterminated),
        ),
    )


def can_serve(stored: LineRangeTerms, file: FileTerms, output: Output, requested: LineRangeTerms) -> z3.BoolRef:
    """`lines.can_serve`."""
    return z3.Or(
        covers(stored, requested),
        requested.is_empty(),
        z3.And(requested.start >= stored.start, reaches_end_of_file(stored, file, output)),
    )


def serve_lines(variant: Variant, stored: LineRangeTerms, output: Output, requested: LineRangeTerms) -> Output:
    """`lines.serve`: `output[first:last]` with Python's clamping of slice bounds."""
    first = requested.start - stored.start
    last = z3.If(requested.to_end, output.length, requested.end - stored.start + variant.slice_end_offset)
    low = _clamp(first, z3.IntVal(0), output.length)
    high = _clamp(last, z3.IntVal(0), output.length)
    i = z3.Int("i")
    length = z3.If(requested.is_empty(), z3.IntVal(0), _max(z3.IntVal(0), high - low))
    return Output(z3.Lambda([i], output.lines[low + i]), length)


# --- concrete traces (for negative theorems and counterexample files) ---------------------


@attrs.frozen
class AbstractStep:
    """One step of a trace read back from a Z3 model, in the spec's vocabulary."""

    category: Category
    target: str | None  # a key name for a file target, "." for a tree target, None without one
    changed: tuple[str, ...]
    reported: tuple[str, ...]
    unknown: bool
    verdict: Verdict
    reused_step: int | None  # for a Reuse, the step whose observation was served


@attrs.frozen
class AbstractTrace:
    """A whole trace from the initial state, with the step where a stale output was reused."""

    keys: tuple[str, ...]
    steps: tuple[AbstractStep, ...]
    detector: Detector
    violation_step: int

    def describe(self) -> str:
        lines = [f"detector model: {self.detector}; keys: {', '.join(self.keys)}"]
        for index, step in enumerate(self.steps):
            target = "" if step.target is None else f" target={step.target}"
            report = "unknown" if step.unknown else "{" + ", ".join(step.reported) + "}"
            changed = "{" + ", ".join(step.changed) + "}"
            reuse = "" if step.reused_step is None else f" (served from step {step.reused_step + 1})"
            mark = "  <- stale reuse" if index == self.violation_step else ""
            lines.append(
                f"  step {index + 1}: {step.category.value}{target}; really changed {changed}; "
                f"reported {report}; verdict {step.verdict.value}{reuse}{mark}"
            )
        return "\n".join(lines)


def read_trace(
    model: z3.ModelRef,
    variant: Variant,
    keys: dict[str, z3.ExprRef],
    states: Sequence[State],
    events: Sequence[Event],
    violation_step: int,
) -> AbstractTrace:
    """Evaluate a bounded trace (states[i] -[events[i]]-> states[i+1]) in `model`."""

    def value(term: z3.ExprRef) -> z3.ExprRef:
        return model.eval(term, model_completion=True)

    def members(keyset: z3.ArrayRef) -> tuple[str, ...]:
        return tuple(name for name, key in keys.items() if z3.is_true(value(keyset[key])))

    def key_name(term: z3.ExprRef) -> str:
        for name, key in keys.items():
            if z3.is_true(value(term == key)):
                return name
        raise ValueError(f"the model names a key outside the trace's universe: {value(term)}")

    observation_step: dict[int, int] = {}
    steps = []
    for index, (pre, event) in enumerate(zip(states, events)):
        verdict = VERDICT_OF_TERM[str(value(decide(variant, pre, event)))]
        category = CATEGORY_OF_TERM[str(value(event.category))]
        target: str | None = None
        if z3.is_true(value(event.has_target)):
            target = "." if z3.is_true(value(event.tree)) else key_name(event.key)
        reused_step = None
        if verdict is Verdict.REUSE:
            reused_step = observation_step[value(event.reuse_from).as_long()]
        after = states[index + 1]
        before_count = value(pre.observations).as_long()
        if value(after.observations).as_long() > before_count:
            observation_step[before_count] = index
        steps.append(
            AbstractStep(
                category=category,
                target=target,
                changed=members(event.changed),
                reported=members(event.reported),
                unknown=z3.is_true(value(event.unknown)),
                verdict=verdict,
                reused_step=reused_step,
            )
        )
    return AbstractTrace(tuple(keys), tuple(steps), variant.detector, violation_step)
