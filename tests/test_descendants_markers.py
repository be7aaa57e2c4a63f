"""The join markers' directory outlives a process that is killed while a launch waits on one
(no atexit handler runs); whoever ended the process removes it by the pid it is named after."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ledger_impl import descendants

pytestmark = pytest.mark.skipif(descendants.available() != descendants.CGROUP,
                                reason="join markers are made only for a launch into a cgroup (root, or a delegated subtree)")

KILLED_WITH_A_LAUNCH_PENDING = r"""
import os, signal
from ledger_impl import descendants
launch = descendants.launch("true")
print(launch.argv[5], launch.argv[4], sep="\n", flush=True)  # the marker, the cgroup's procs
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_process_killed_with_a_launch_pending_leaves_its_markers_and_they_are_removed_by_its_pid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    environment = {**os.environ, "TMPDIR": str(tmp_path)}
    killed = subprocess.run([sys.executable, "-c", KILLED_WITH_A_LAUNCH_PENDING], env=environment,
                            capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    marker, procs = killed.stdout.split()
    Path(procs).parent.rmdir()  # the cgroup it made for the launch, empty: the command never ran
    left = Path(marker).parent
    assert left.parent == tmp_path and left.is_dir()
    other = tmp_path / "ledger-join-1-unrelated"  # another process's: not removed
    other.mkdir()
    pid = int(left.name.split("-")[2])
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again; the cached one comes back after
    descendants.remove_markers_of(pid)
    assert not left.exists() and other.is_dir()
