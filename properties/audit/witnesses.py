"""Several detectors watching the same run: one decides, the others only report.

The Runtime accepts one detector. To count the misses of `default`, `rules` and a user's
detector on one replay (running every command three times would change what later commands
see), `Witnessed` hands every `before`/`after` call to all of them and returns the deciding
detector's report; the others' reports are kept for the audit. A witness that raises reports
"unknown", exactly as the Runtime treats a failing detector; the deciding detector's own
exceptions reach the Runtime unchanged.
"""

from __future__ import annotations

import pathlib
from typing import Any

from ledger_spec import Changes


class Witnessed:
    """A detector that is `decider` for the Runtime, with `witnesses` reporting alongside."""

    def __init__(self, decider: tuple[str, Any], witnesses: list[tuple[str, Any]]) -> None:
        self.decider_name, self._decider = decider
        self._all = [decider, *witnesses]
        self._reports: dict[str, list[Changes]] = {label: [] for label, _ in self._all}
        self._failed: set[str] = set()

    @property
    def name(self) -> str:
        return str(getattr(self._decider, "name", type(self._decider).__name__))

    @property
    def labels(self) -> list[str]:
        return [label for label, _ in self._all]

    def before(self, root: pathlib.Path, command: str) -> None:
        for label, detector in self._all[1:]:
            try:
                detector.before(root, command)
            except Exception:  # noqa: BLE001 - a witness that fails reports unknown
                self._failed.add(label)
        try:
            self._decider.before(root, command)
        except Exception:
            self._reports[self.decider_name].append(Changes(unknown=True))
            raise

    def after(self, root: pathlib.Path, command: str, exit_code: int) -> Changes:
        for label, detector in self._all[1:]:
            try:
                report = detector.after(root, command, exit_code)
                if not isinstance(report, Changes) or label in self._failed:
                    report = Changes(unknown=True)
            except Exception:  # noqa: BLE001
                report = Changes(unknown=True)
            self._failed.discard(label)
            self._reports[label].append(report)
        try:
            report = self._decider.after(root, command, exit_code)
        except Exception:
            self._reports[self.decider_name].append(Changes(unknown=True))
            raise
        self._reports[self.decider_name].append(report if isinstance(report, Changes) else Changes(unknown=True))
        return report

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
