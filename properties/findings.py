"""Which read a counterexample makes stale: the sentence a finding of `ledger check-detector` adds.

A stale-reuse finding (`reuse-is-fresh`) is itself the stale read: the violating step was served
an old output of the file it reads. A detector miss (`detector-covers-changes`) or a read-only
command that wrote (`read-only-changes-nothing`) is a stale read waiting to happen: the latest
earlier read of a file the step changed unseen would be served stale if run again after it. When
the run has no such read, the finding names the file and says that any read of it before that
step would be. Steps are numbered from 1, as everywhere a user sees them.
"""

from __future__ import annotations

import shlex
from typing import Any

import attrs

from ledger_impl.classifier import classify
from ledger_spec.values import Category, FileTarget

from .counterexample import Counterexample
from .oracle import DETECTOR_COVERS_CHANGES, READ_ONLY_CHANGES_NOTHING, REUSE_IS_FRESH

_READS = (Category.READ, Category.SEARCH)


@attrs.frozen
class StaleRead:
    """A read served stale (`served`), or one that would be if run again after `after_step`."""

    file: str  # the file whose change the ledger did not see; for a tree read, the directory it covers
    step: int | None  # the read's step (1-based); None: this run has no read of `file` before the change
    command: str  # the read's command, or an example read of `file` when `step` is None
    served: bool  # True: the run served this read stale; False: it would be, run again after `after_step`
    after_step: int | None  # the step whose change went unseen (1-based), if known
    after_command: str | None
    tree: bool = False  # a listing or a search of `file` (a directory), not a read of one file

    def sentence(self) -> str:
        after = f"step {self.after_step} (`{self.after_command}`)" if self.after_step is not None else "an earlier step"
        if self.served:
            what = f"listing or search of {self.file}" if self.tree else f"read of {self.file}"
            return f"step {self.step} `{self.command}` was served a stale {what}, changed unseen by {after}"
        if self.step is not None:
            return (f"step {self.step} `{self.command}` would be served stale if run again after {after}, "
                    f"whose change to {self.file} the ledger did not see")
        return (f"a read of {self.file} before {after} (e.g. `{self.command}`), run again after it, would be served "
                f"stale: the ledger did not see that step change {self.file} (this run has no such read)")

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "sentence": self.sentence()}


def _reads_file(command: str, key: str) -> bool:
    target = classify(command).target
    return isinstance(target, FileTarget) and target.key == key


def _last_change_before(counterexample: Counterexample, index: int) -> int | None:
    """The latest step before `index` that is not a read (0-based), or None."""
    return next((i for i in range(index - 1, -1, -1) if classify(counterexample.steps[i].command).category not in _READS), None)


def stale_read(counterexample: Counterexample) -> StaleRead | None:
    """The read `counterexample` makes stale, or None when its property is not about staleness."""
    ce, index = counterexample, counterexample.violation.step
    command = ce.steps[index].command
    if ce.property == REUSE_IS_FRESH:
        target = classify(command).target
        change = _last_change_before(ce, index)
        return StaleRead(
            file=target.key if isinstance(target, FileTarget) else getattr(target, "scope", "."),
            step=index + 1, command=command, served=True,
            after_step=None if change is None else change + 1,
            after_command=None if change is None else ce.steps[change].command,
            tree=not isinstance(target, FileTarget),
        )
    evidence = ce.observed.evidence
    unseen = evidence.get("missing") if ce.property == DETECTOR_COVERS_CHANGES else evidence.get("changed")
    if ce.property not in (DETECTOR_COVERS_CHANGES, READ_ONLY_CHANGES_NOTHING) or not unseen:
        return None
    files = [str(key) for key in unseen]
    for earlier in range(index - 1, -1, -1):
        read = ce.steps[earlier].command
        hit = next((key for key in files if _reads_file(read, key)), None)
        if hit is not None:
            return StaleRead(hit, earlier + 1, read, False, index + 1, command)
    return StaleRead(files[0], None, f"cat {shlex.quote(files[0])}", False, index + 1, command)


__all__ = ["StaleRead", "stale_read"]
