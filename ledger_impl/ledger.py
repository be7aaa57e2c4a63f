"""The optimized ledger: `ledger_spec`'s verdicts, view and counters, from indexed state.

The reference specification recounts its logs on every query, so one step costs O(n) or
worse in the number of observations. `Ledger` keeps the same three logs (so `snapshot()` can
hand them to the spec) and, beside them, counters and indexes updated per event, so that
govern, advance and render cost O(1) amortized in the number of observations:

  counters      G, W and L[key] as integers, bumped by `modify`.
  currentness   one `CurrentEpoch` per file key and one for the tree, holding exactly the
                current observations; a change that moves a counter drops the epochs it
                reaches (each observation is dropped at most once).
  reuse         per epoch and recorded fingerprint, the newest observation of each
                (normalized command, target) and a frontier of stored ranges per view; the
                newest of their candidates is the one the spec's newest-first scan would pick.
  memory        the retained outputs in least-recently-used order with their byte total; an
                epoch thrown away drops its members' outputs (they are stale), and past
                `Policy.stored_output_limit` the least recently used output is dropped.
  nudge         the last execution per normalized command, the step of the last nudge, and
                the step of the last change that was not purely transient.
  view          the newest observation per normalized command in recency order, rendered
                newest first only until the character budget runs out; counts for the
                omission marker; bisection for stale reasons; bucketed repeat counts.

`properties/differential.py` checks, on generated sessions, that every decision, counter,
view and snapshot equals the spec's.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

from ledger_spec import Policy, State
from ledger_spec.state import (
    INTERVENING,
    NUDGEABLE_ANY_TIME,
    NUDGEABLE_IN_SHORT_LOOP,
    REUSABLE,
    WITHHOLDING,
)
from ledger_spec.state import serve as spec_serve
from ledger_spec.values import (
    Allow,
    Changes,
    Command,
    CommandRecord,
    Decision,
    FileTarget,
    Fingerprint,
    Modification,
    Nudge,
    Observation,
    Reuse,
    STEADY,
    Verdict,
    check_key,
)

# The view's text must be byte-identical to the spec's, so its line flattening is shared
# rather than copied.
from ledger_spec.view import _one_line

from .ledger_index import CurrentEpoch, ModificationIndex, RepeatCounter


class Ledger:
    """Mutable execution state with the semantics of `ledger_spec.State` under one `Policy`."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy: Policy = policy if policy is not None else Policy()
        self._step = 0
        self._observations: list[Observation] = []
        self._history: list[CommandRecord] = []
        self._modifications = ModificationIndex()
        # counters
        self._total = 0
        self._wildcard = 0
        self._local: dict[str, int] = {}
        # currentness and reuse
        self._file_epochs: dict[str, CurrentEpoch] = {}
        self._tree_epoch = CurrentEpoch(self.policy.range_reuse)
        # memory: retained observations by step, least recently used first, and their position
        self._retained: OrderedDict[int, int] = OrderedDict()  # step -> index in _observations
        self._stored_bytes = 0
        # govern bookkeeping
        self._interventions = 0
        self._last_nudge_step: int | None = None
        self._last_execution: dict[str, CommandRecord] = {}
        self._last_not_only_transient_step: int | None = None
        # view bookkeeping
        self._transient: dict[str, bool] = {}
        # normalized -> (newest observation, its view line up to the status), oldest first
        self._newest_shown: dict[str, tuple[Observation, str]] = {}
        self._latest_modified: dict[str, int] = {}  # non-transient key -> step, oldest first
        self._last_unknown_step: int | None = None
        self._modified_line: str | None = None
        self._modified_line_stale = False
        self._repeats = RepeatCounter()

    # --- counters and plain queries -----------------------------------------------------------

    @property
    def step(self) -> int:
        return self._step

    @property
    def total(self) -> int:
        """G: how many modifications happened."""
        return self._total

    @property
    def wildcard(self) -> int:
        """W: how many modifications had unknown scope."""
        return self._wildcard

    def local(self, key: str) -> int:
        """L[key]: how many modifications reported `key`. Unknown keys have L = 0."""
        check_key(key)
        return self._local.get(key, 0)

    @property
    def stored_bytes(self) -> int:
        """How many bytes of outputs the ledger holds for Reuse."""
        return self._stored_bytes

    @property
    def interventions(self) -> int:
        """How many times govern reused or nudged so far (as recorded by `advance`)."""
        return self._interventions

    def snapshot(self) -> State:
        """The equal `ledger_spec.State`, rebuilt from the logs (O(n); for checks and tools)."""
        return State(
            step=self._step,
            modifications=tuple(self._modifications.log),
            observations=tuple(self._observations),
            history=tuple(self._history),
        )

    def _is_transient(self, key: str) -> bool:
        cached = self._transient.get(key)
        if cached is None:
            cached = self._transient[key] = self.policy.is_transient(key)
        return cached

    def _is_current(self, observation: Observation) -> bool:
        target = observation.command.target
        if isinstance(target, FileTarget):
            return self._local.get(target.key, 0) == observation.local and self._wildcard == observation.wildcard
        return self._total == observation.total

    # --- events -------------------------------------------------------------------------------

    def modify(self, changes: Changes) -> None:
        """Record a detector report (spec `modify`). A report that changed nothing does nothing."""
        if changes.empty:
            return
        step = self._step
        self._modifications.append(Modification(step, changes))
        self._total += 1
        # Any change moves G, so no tree observation is current any more.
        self._drop_epoch(self._tree_epoch)
        self._tree_epoch = CurrentEpoch(self.policy.range_reuse)
        if changes.unknown:
            self._wildcard += 1
            for epoch in self._file_epochs.values():
                self._drop_epoch(epoch)
            self._file_epochs.clear()  # W moved: no file observation is current any more
            self._last_unknown_step = step
            self._last_not_only_transient_step = step
        for key in changes.paths:
            self._local[key] = self._local.get(key, 0) + 1
            dropped = self._file_epochs.pop(key, None)
            if dropped is not None:
                self._drop_epoch(dropped)
            if not self._is_transient(key):
                self._last_not_only_transient_step = step
                # Re-insert so the dict stays in last-modified order (steps never decrease).
                self._latest_modified.pop(key, None)
                self._latest_modified[key] = step
        self._modified_line_stale = True

    def advance(
        self,
        command: Command,
        decision: Decision,
        output: str,
        exit_status: int,
        changes: Changes,
        fingerprint: Fingerprint | None = STEADY,
    ) -> None:
        """One whole step (spec `advance`). For a reused step `output`, `exit_status`, `changes`
        and `fingerprint` are ignored: nothing ran."""
        if isinstance(decision, Reuse):
            served = decision.observation.step
            self._conclude(command, Verdict.REUSE, decision.exit_status, served)
            if served in self._retained:
                self._retained.move_to_end(served)
            self._evict()
            return
        self.modify(changes)
        if command.read_only and changes.empty:
            self._observe(command, output, exit_status, fingerprint)
        self._conclude(command, decision.verdict, exit_status)
        self._evict()

    # --- memory -------------------------------------------------------------------------------

    def _drop(self, step: int) -> Observation:
        """Drop the retained observation of `step`'s output; return the retained version."""
        index = self._retained.pop(step)
        observation = self._observations[index]
        self._observations[index] = observation.dropped()
        self._stored_bytes -= observation.stored_bytes
        return observation

    def _drop_epoch(self, epoch: CurrentEpoch) -> None:
        """An epoch's members went stale: their outputs can never serve again."""
        for step in epoch.members:
            self._drop(step)

    def _evict(self) -> None:
        """Spec `evict`: least recently used outputs go until the total fits the limit."""
        while self._stored_bytes > self.policy.stored_output_limit:
            step = next(iter(self._retained))
            observation = self._drop(step)
            target = observation.command.target
            epoch = self._file_epochs.get(target.key) if isinstance(target, FileTarget) else self._tree_epoch
            assert epoch is not None, "a retained observation is a member of a live epoch"
            epoch.remove(observation)

    def _observe(self, command: Command, output: str, exit_status: int, fingerprint: Fingerprint | None) -> None:
        target = command.target
        if target is None:
            return  # nothing could ever prove it current
        is_file = isinstance(target, FileTarget)
        observation = Observation(
            step=self._step,
            command=command,
            output=output,
            exit_status=exit_status,
            local=self._local.get(target.key, 0) if is_file else 0,
            wildcard=self._wildcard,
            total=self._total,
            fingerprint=fingerprint,
        )
        self._retained[observation.step] = len(self._observations)
        self._stored_bytes += observation.stored_bytes
        self._observations.append(observation)
        if is_file:
            epoch = self._file_epochs.get(target.key)
            if epoch is None:
                epoch = self._file_epochs[target.key] = CurrentEpoch(self.policy.range_reuse)
            epoch.add(observation)
        else:
            self._tree_epoch.add(observation)
        if not (is_file and self._is_transient(target.key)):
            self._newest_shown.pop(command.normalized, None)
            prefix = f"  @{observation.step} {_one_line(command.normalized)} ["
            self._newest_shown[command.normalized] = (observation, prefix)

    def _conclude(self, command: Command, verdict: Verdict, exit_status: int, served_from: int | None = None) -> None:
        record = CommandRecord(self._step, command, verdict, exit_status, served_from)
        self._history.append(record)
        if verdict in INTERVENING:
            self._interventions += 1
        if verdict is Verdict.NUDGE:
            self._last_nudge_step = self._step
        if verdict not in WITHHOLDING:
            self._last_execution[command.normalized] = record
        self._repeats.record(command.normalized)
        self._step += 1

    # --- govern -------------------------------------------------------------------------------

    def govern(self, command: Command, fingerprint: Fingerprint | None = STEADY) -> Decision:
        """Allow, Reuse or Nudge `command`, exactly as spec `govern` would on this state, given
        `fingerprint`, the fingerprint of `command` taken now."""
        if self._interventions >= self.policy.intervention_cap:
            return Allow()
        reuse = self._reuse(command, fingerprint)
        if reuse is not None:
            return reuse
        nudge = self._nudge(command)
        if nudge is not None:
            return nudge
        return Allow()

    def _reuse(self, command: Command, fingerprint: Fingerprint | None) -> Reuse | None:
        target = command.target
        if command.category not in REUSABLE or target is None:
            return None
        # Only observations of the same file (or tree observations, for a tree target) can
        # serve, and the epoch holds exactly the current ones among those.
        epoch = self._file_epochs.get(target.key) if isinstance(target, FileTarget) else self._tree_epoch
        observation = epoch.newest_serving(command, fingerprint) if epoch is not None else None
        if observation is None:
            return None
        served = spec_serve(observation, command, self.policy)
        assert served is not None, "the reuse index chose an observation that cannot serve"
        output, exit_status = served
        if self.policy.reuse_mode == "reference":
            output = f"[ledger] output unchanged since step {observation.step}; see it there.\n"
            note = f"reference to step {observation.step}"
        else:
            note = f"reused from step {observation.step}: nothing it reads has changed since"
        return Reuse(observation=observation, output=output, exit_status=exit_status, note=note)

    def _nudge(self, command: Command) -> Nudge | None:
        policy = self.policy
        in_any_time = command.category in NUDGEABLE_ANY_TIME
        in_short_loop = command.category in NUDGEABLE_IN_SHORT_LOOP and policy.short_loop_window > 0
        if not (in_any_time or in_short_loop):
            return None
        if self._last_nudge_step is not None and self._step - self._last_nudge_step < policy.nudge_cooldown:
            return None
        previous = self._last_execution.get(command.normalized)
        if previous is None:
            return None
        # Modification steps never decrease, so "only transient changes from step p on" is
        # "the last change that was not purely transient happened before p".
        if self._last_not_only_transient_step is not None and self._last_not_only_transient_step >= previous.step:
            return None
        if in_any_time:
            return Nudge(
                f"this test already ran at step {previous.step} (exit {previous.exit_status}) "
                "and nothing but transient files changed since"
            )
        if self._step - previous.step <= policy.short_loop_window:
            return Nudge(
                f"this command already ran at step {previous.step} (exit {previous.exit_status}) "
                "and nothing but transient files changed since"
            )
        return None

    # --- inform -------------------------------------------------------------------------------

    def render(self, task: str = "") -> str:
        """The view, byte-identical to `ledger_spec.render(self.snapshot(), policy, task)`.

        Body lines are produced lazily and only until one does not fit, so the cost depends on
        the budget, not on how many observations there are; the omission marker needs only
        how many lines there would be, which is known from the indexes.
        """
        header = f"[ledger] step {self._step}; interventions {self._interventions}/{self.policy.intervention_cap}"
        if task:
            header += f"\ntask: {_one_line(task)}"
        modified = self._modified()
        body_count = (
            (1 if modified else 0)
            + (1 + len(self._newest_shown) if self._newest_shown else 0)
            + (1 if self._repeats.repeated else 0)
        )
        return _fit_lazily(header, self._body(modified), body_count, self.policy.view_budget)

    def _body(self, modified: str | None) -> Iterator[str | None]:
        if modified:
            yield modified
        if self._newest_shown:
            yield "observations (newest first):"
            for observation, prefix in reversed(self._newest_shown.values()):
                status = "current" if self._is_current(observation) else self._stale_reason(observation)
                yield prefix + status + "]"
        if self._repeats.repeated:
            yield self._repeated_line()

    def _stale_reason(self, observation: Observation) -> str:
        modification = self._modifications.first_invalidation(observation)
        if modification is None:  # pragma: no cover - currentness and the log agree
            return "stale"
        if modification.changes.unknown:
            return f"stale: unknown-scope change at step {modification.step}"
        target = observation.command.target
        if isinstance(target, FileTarget):
            return f"stale: {target.key} changed at step {modification.step}"
        return f"stale: tree changed at step {modification.step}"

    def _modified(self) -> str | None:
        if self._modified_line_stale:
            self._modified_line = self._build_modified_line()
            self._modified_line_stale = False
        return self._modified_line

    def _build_modified_line(self) -> str | None:
        """Spec `_modified_line`: the newest non-transient keys by (step desc, key asc)."""
        latest = self._latest_modified
        if not latest and self._last_unknown_step is None:
            return None
        shown = self.policy.view_recent_modifications
        chosen: list[str] = []
        group: list[str] = []  # keys sharing one step, which the spec orders by key
        group_step: int | None = None
        for key, step in reversed(latest.items()):
            if step != group_step:
                chosen.extend(sorted(group))
                group = []
                if len(chosen) >= shown:
                    break
                group_step = step
            group.append(key)
        chosen.extend(sorted(group))
        parts = [f"{key}@{latest[key]}" for key in chosen[:shown]]
        if len(latest) > shown:
            parts.append(f"+{len(latest) - shown} more")
        if self._last_unknown_step is not None:
            parts.append(f"unknown-scope change@{self._last_unknown_step}")
        return "modified: " + ", ".join(parts)

    def _repeated_line(self) -> str | None:
        """Spec `_repeated_line`, or None once it is certain to exceed the whole budget (then
        it cannot fit and only its existence matters)."""
        budget = self.policy.view_budget
        parts: list[str] = []
        length = len("repeated: ") - 2
        for normalized, count in self._repeats.most_repeated():
            part = f"{_one_line(normalized, 60)} x{count}"
            parts.append(part)
            length += len(part) + 2
            if length > budget:
                return None
        return "repeated: " + "; ".join(parts)


def _fit_lazily(header: str, body: Iterator[str | None], body_count: int, budget: int) -> str:
    """Spec `view._fit` over lazily produced lines; a None line is one longer than the budget."""
    pieces = [header[:budget]]
    length = len(pieces[0])
    for index, line in enumerate(body):
        remaining = body_count - index - 1
        marker = len(f"\n... {remaining} more lines") if remaining else 0
        if line is not None and length + 1 + len(line) + marker <= budget:
            pieces.append(line)
            length += 1 + len(line)
            continue
        omitted = f"\n... {body_count - index} more lines"
        text = "\n".join(pieces)
        return text + omitted if length + len(omitted) <= budget else text
    return "\n".join(pieces)
