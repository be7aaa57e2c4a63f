"""Suite-wide settings.

Durable sessions choose Watchman by themselves when a `watchman` binary is on PATH, and its
daemon outlives the process that started it. The suite's session tests were written for the
persisted stat index and would leave a daemon behind per temporary state directory, so the
stat index is pinned for every test (and the hook processes they start with this environment);
the Watchman tests (`tests/test_watchman_detector.py`) choose Watchman themselves. The agent
end-to-end tests give the real CLIs an environment of their own, so their hooks do choose
Watchman where it is installed: every daemon started under a test's temporary directory is
stopped when the test ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from ledger_impl.detectors import SESSION_DETECTOR_VARIABLE
from ledger_impl.detectors.watchman import Daemon


@pytest.fixture(autouse=True)
def _stat_index_sessions(request: pytest.FixtureRequest) -> Iterator[None]:
    # os.environ directly, not the monkeypatch fixture: requesting it here would set it up
    # before every test's own fixtures and so undo its patches only after their teardown.
    previous = os.environ.get(SESSION_DETECTOR_VARIABLE)
    os.environ[SESSION_DETECTOR_VARIABLE] = "stat-index"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(SESSION_DETECTOR_VARIABLE, None)
        else:
            os.environ[SESSION_DETECTOR_VARIABLE] = previous
        tmp_path = request.node.funcargs.get("tmp_path") if hasattr(request.node, "funcargs") else None
        if tmp_path is not None:
            for pid_file in tmp_path.rglob("watchman/pid"):
                Daemon(pid_file.parent).shutdown()
