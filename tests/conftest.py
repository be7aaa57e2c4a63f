"""Suite-wide settings.

Durable sessions choose Watchman by themselves when a `watchman` binary is on PATH, and its
daemon outlives the process that started it. The suite's session tests were written for the
persisted stat index and would leave a daemon behind per temporary state directory, so the
stat index is pinned for every test (and the hook processes they start); the Watchman tests
(`tests/test_watchman_detector.py`) choose Watchman themselves and stop their daemons.
"""

from __future__ import annotations

import pytest

from ledger_impl.detectors import SESSION_DETECTOR_VARIABLE


@pytest.fixture(autouse=True)
def _stat_index_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SESSION_DETECTOR_VARIABLE, "stat-index")
