"""Several detectors watching the same run: one decides, the others only report.

The Runtime accepts one detector. To count the misses of `default`, `rules` and a user's
detector on one replay (running every command three times would change what later commands
see), `Witnessed` asks each of them every question the Runtime asks (`changes_since`, the one
detector protocol; a `before`/`after` detector through its adapter) and returns the deciding
detector's report; the others' reports are kept for the audit, each with its own baseline. A
witness that raises reports "unknown", exactly as the Runtime treats a failing detector; the
deciding detector's own exceptions reach the Runtime unchanged. A detector's first report,
which has no baseline to compare with, is not kept: the Runtime ignores it too, before the
first command runs.
"""

from __future__ import annotations

import os
from typing import Any

from ledger_impl.detectors.protocol import Moment, Report, as_detector
from ledger_spec import Changes


class Witnessed:
    """A detector that is `decider` for the Runtime, with `witnesses` reporting alongside."""

    def __init__(self, decider: tuple[str, Any], witnesses: list[tuple[str, Any]]) -> None:
        self.decider_name, self._decider = decider
        self._all = [decider, *witnesses]
        self._speakers = {label: as_detector(detector) for label, detector in self._all}
        self._baselines: dict[str, bytes | None] = {label: None for label, _ in witnesses}
        self._reports: dict[str, list[Changes]] = {label: [] for label, _ in self._all}
        self._started: set[str] = set()

    @property
    def name(self) -> str:
        return str(getattr(self._decider, "name", type(self._decider).__name__))

    @property
    def labels(self) -> list[str]:
        return [label for label, _ in self._all]

    def changes_since(self, root: os.PathLike[str] | str, baseline: bytes | None, moment: Moment = None) -> Report:
        for label, _ in self._all[1:]:
            try:
                changes, self._baselines[label], _ = self._speakers[label].changes_since(
                    root, self._baselines[label], moment
                )
                if not isinstance(changes, Changes):
                    changes = Changes(unknown=True)
            except Exception:  # noqa: BLE001 - a witness that fails reports unknown
                changes = Changes(unknown=True)
            self._keep(label, changes)
        try:
            report = self._speakers[self.decider_name].changes_since(root, baseline, moment)
        except Exception:
            self._reports[self.decider_name].append(Changes(unknown=True))
            raise
        changes = report[0]
        self._keep(self.decider_name, changes if isinstance(changes, Changes) else Changes(unknown=True))
        return report

    def _keep(self, label: str, changes: Changes) -> None:
        if label in self._started:
            self._reports[label].append(changes)
        else:
            self._started.add(label)

    def take(self) -> dict[str, Changes]:
        """Each detector's reports since the last call, merged into one."""
        merged = {}
        for label, reports in self._reports.items():
            paths: set[str] = set()
            for report in reports:
                paths |= report.paths
            merged[label] = Changes(frozenset(paths), any(r.unknown for r in reports))
            reports.clear()
        return merged

    def close(self) -> None:
        for _, detector in self._all:
            close = getattr(detector, "close", None)
            if callable(close):
                close()
