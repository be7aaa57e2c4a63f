"""The limits that "What the guarantee assumes" (docs/safety/claim.md) keeps, each shown happening.

These tests pass while a limit holds: each demonstrates that page's sentence on a real
filesystem with the default detector and the fingerprint on, as shipped. One that starts to
fail means the limit was closed (or moved): update the page's list (and the README's safety
paragraph, which names the limits) with it.
"""

from __future__ import annotations

import mmap
import os
import pathlib
import time

from ledger_impl import Runtime
from ledger_impl.detectors import default_detector
from ledger_impl.execution import command_environment, run_command

# GNU ls prints a time for files modified within half a Gregorian year, and a year beyond it.
HALF_YEAR_SECONDS = 31556952 // 2


def fresh(root: pathlib.Path, command: str) -> str:
    return run_command(command, root, 30, 1 << 20, command_environment()).output


def test_a_listing_just_before_a_file_turns_six_months_old_is_no_longer_a_limit(tmp_path: pathlib.Path) -> None:
    """Closed by the probe (issue 19; README's list of limits to update): `ls -l` prints the
    file's age, nothing on disk changes, and the probe, 400 days later, prints the year, so the
    listing is kept without a servable output. The stale serve itself, with the probe off, is
    `counterexamples/probe-file-time-near-now.json`."""
    old = tmp_path / "old.txt"
    old.write_text("x\n")
    crossing_at = time.time() + 10  # the file turns "six months old" then
    os.utime(old, (crossing_at - HALF_YEAR_SECONDS,) * 2)
    with Runtime(tmp_path, default_detector()) as runtime:
        first = runtime.step("ls -l old.txt")
        again = runtime.step("ls -l old.txt")
    assert first.recorded_fingerprint is None and again.verdict != "reuse"


def _wait_for(condition, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the background job never wrote"
        time.sleep(0.05)


def test_a_setsid_job_escapes_session_tracking_but_its_write_is_seen_once_it_lands(tmp_path: pathlib.Path) -> None:
    """Where no cgroup can be made (`process_tracking="session"`), a job in a session of its own
    is not tracked (a tracked one refuses every Reuse while it lives); its write is still caught
    by the detector poll before the next Reuse. The job waits for a file outside the root, so the
    order does not depend on the machine's speed. With cgroups the job is tracked:
    `tests/test_descendants.py`."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    target = root / "a.txt"
    target.write_text("before\n")
    def wait(name: str) -> str:
        # Bounded (60 s), so that a test stopped half way never leaves a job polling forever.
        return f"i=0; while [ ! -e {outside}/{name} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done"

    with Runtime(root, default_detector(), process_tracking="session") as runtime:
        runtime.step("cat a.txt")
        # bash exits only once the job has its own session: the Runtime looks at bash's session
        # as soon as bash exits, which can be before `setsid` has left it (it would then be
        # tracked, the safe side, and this limit not shown).
        runtime.step(f"setsid sh -c 'touch {outside}/left; {wait('go')}; echo late >> a.txt' > /dev/null 2>&1 < /dev/null & {wait('left')}")
        assert not runtime.background_jobs, "setsid left the session the Runtime tracks"
        while_alive = runtime.step("cat a.txt")
        assert while_alive.verdict == "reuse", "an untracked job does not refuse Reuse"
        (outside / "go").touch()
        _wait_for(lambda: target.read_text() == "before\nlate\n")
        after = runtime.step("cat a.txt")
        assert after.verdict != "reuse" and after.output == "before\nlate\n"
    with Runtime(root, default_detector(), process_tracking="session") as tracked:
        tracked.step("cat a.txt")
        tracked.step(f"({wait('never')}; echo later >> a.txt) > /dev/null 2>&1 &")
        assert tracked.background_jobs
        assert tracked.step("cat a.txt").verdict != "reuse", "a tracked job refuses Reuse while it lives"
        tracked.stop_background()


def test_a_write_through_an_open_shared_map_raises_no_event(tmp_path: pathlib.Path) -> None:
    """A store into a page of a shared mapping that is already writable is no system call: no
    inotify event, and (until writeback) no timestamp moves. The Reuse is stale."""
    target = tmp_path / "a.txt"
    target.write_bytes(b"alpha\n")
    with open(target, "r+b") as handle, mmap.mmap(handle.fileno(), 0) as mapped:
        mapped[0:1] = b"A"  # the first store makes the page writable (and may move mtime)
        with Runtime(tmp_path, default_detector()) as runtime:
            first = runtime.step("cat a.txt")
            assert first.output == "Alpha\n"
            mapped[1:2] = b"L"  # a plain store into the mapped page
            again = runtime.step("cat a.txt")
            now = fresh(tmp_path, "cat a.txt")
    assert now == "ALpha\n"
    assert again.verdict == "reuse" and again.output == "Alpha\n"
