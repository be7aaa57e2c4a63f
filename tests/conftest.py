"""Suite-wide settings.

Durable sessions choose Watchman by themselves when a `watchman` binary is on PATH, and its
daemon outlives the process that started it. The suite's session tests were written for the
persisted stat index and would leave a daemon behind per temporary state directory, so the
stat index is pinned for every test (and the hook processes they start with this environment);
the Watchman tests (`tests/test_watchman_detector.py`) choose Watchman themselves. The agent
end-to-end tests give the real CLIs an environment of their own, so their hooks do choose
Watchman where it is installed: every daemon started under a test's temporary directory is
stopped when the test ends.

Every project module is imported before the first test. Hypothesis mixes the constants of every
loaded module outside site-packages (test files excepted) into what it generates, so a seeded
test drew differently depending on which modules the tests before it, in its xdist worker,
happened to import: a seeded hunt that found its fault in one run missed it in another. With
every module loaded up front the pool is the same for every test in every worker, and a seeded
test's outcome depends on the code alone.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Iterator

import pytest

from ledger_impl.detectors import SESSION_DETECTOR_VARIABLE
from ledger_impl.detectors.watchman import Daemon

PROJECT_PACKAGES = ("ledger_spec", "ledger_impl", "economizer_spec", "economizer", "ledger_properties", "ledger_cli")


def _import_every_project_module() -> None:
    for package in PROJECT_PACKAGES:
        for module in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
            try:
                importlib.import_module(module.name)
            except ModuleNotFoundError as missing:
                if missing.name is None or missing.name.split(".")[0] in PROJECT_PACKAGES:
                    raise
                # An optional extra that is not installed (mini-swe-agent): its own tests say so.


_import_every_project_module()


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
