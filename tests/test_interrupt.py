"""Ctrl-C stops a hunt or a replay cleanly: exit 130, no temporary workspace, no process left.

Each test starts the real CLI in a session of its own with a private TMPDIR and a marker in its
environment (inherited by every command it runs), sends SIGINT to the whole process group as a
terminal's Ctrl-C does, then looks for leftovers: files in the private TMPDIR, and any process
still carrying the marker.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import uuid

import pytest

from ledger_properties import sandbox

REPO = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = REPO / "counterexamples" / "z3-stale-reuse-if-opaque-reported-unchanged.json"


def marked_processes(marker: str) -> list[int]:
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in environ and state != "Z":
            found.append(int(entry.name))
    return found


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def hear_ctrl_c() -> None:
    """In the child before exec: SIGINT back to its default disposition. A shell that ignores
    SIGINT (a background job, nohup, some CI launchers) passes the ignore on to pytest and from
    there to every child, and Python keeps an ignored SIGINT ignored; a terminal user's `ledger`
    hears Ctrl-C, so the test's must too, however pytest was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(args: list[str], tmp_path: pathlib.Path, started) -> tuple[int, str, pathlib.Path, str]:
    """Run `ledger ARGS`, Ctrl-C it once `started(private_tmp)` holds; (exit, stderr, tmp, marker)."""
    private = tmp_path / "tmp"
    private.mkdir()
    marker = f"LEDGER_INTERRUPT_TEST={uuid.uuid4().hex}"
    env = {**os.environ, "TMPDIR": str(private), marker.split("=")[0]: marker.split("=")[1]}
    process = subprocess.Popen(
        [sys.executable, "-m", "ledger_cli.main", *args],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=hear_ctrl_c,
    )
    try:
        assert wait_for(lambda: started(private, marker) or process.poll() is not None, 120), "never started"
        assert process.poll() is None, process.communicate()
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, err, private, marker


def test_ctrl_c_stops_a_hunt_with_130_and_leaves_nothing(tmp_path: pathlib.Path) -> None:
    code, err, private, marker = interrupt(
        ["check-detector", "ledger_impl.detectors.unsound:stat_only", "--max-examples", "500", "--seed", "1",
         "--out", str(tmp_path / "out"), "--json"],
        tmp_path,
        # Once a worker has taken a step: the hunt is running (a Ctrl-C in the instant a worker
        # is being spawned can still be lost when the kernel hands it to another thread of the
        # parent; see properties/parallel.py).
        lambda tmp, _: any(tmp.glob("ledger-hunt-*/progress-*")),
    )
    assert code == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert wait_for(lambda: not marked_processes(marker), 5), marked_processes(marker)
    assert list(private.iterdir()) == []


def _slow_counterexample(tmp_path: pathlib.Path) -> pathlib.Path:
    document = json.loads(SAMPLE.read_text())
    document["steps"] = [{"command": "touch started-sleeping; sleep 60"}] + document["steps"]
    document["violation"]["step"] += 1
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(document))
    return path


def test_ctrl_c_stops_an_unsandboxed_replay_with_130_and_leaves_nothing(tmp_path: pathlib.Path) -> None:
    path = _slow_counterexample(tmp_path)
    code, err, private, marker = interrupt(
        ["replay", str(path), "--unsandboxed"], tmp_path, lambda tmp, _: any(tmp.glob("ledger-hunt-*/ws/started-sleeping"))
    )
    assert code == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert wait_for(lambda: not marked_processes(marker), 5), marked_processes(marker)
    assert list(private.iterdir()) == []


@pytest.mark.skipif(not sandbox.available(), reason="bubblewrap (bwrap) is not installed or cannot create namespaces here")
def test_ctrl_c_stops_a_sandboxed_replay_with_130_and_leaves_nothing(tmp_path: pathlib.Path) -> None:
    path = _slow_counterexample(tmp_path)
    code, err, private, marker = interrupt(
        ["replay", str(path)], tmp_path, lambda _, marker: bool(set(marked_processes_named("sleep")) & set(marked_processes(marker)))
    )
    assert code == 130, err
    assert wait_for(lambda: not marked_processes(marker), 5), marked_processes(marker)
    assert list(private.iterdir()) == []


def marked_processes_named(name: str) -> list[int]:
    """Processes called `name` whose parent chain we cannot see from here (the sandbox has its
    own PID namespace): recognized by their command line, the sleep of this test's file."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().split(b"\0")[:2] == [name.encode(), b"60"]:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
