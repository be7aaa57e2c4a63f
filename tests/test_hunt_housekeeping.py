"""The hunt's housekeeping, made cheaper without changing what a run checks: sessions are
closed and workspaces removed in the background but never left behind, a closing run kills
its background writers instead of waiting for them, and a worker's progress file is
rewritten only as often as the parent reads it."""

from __future__ import annotations

import contextlib
import pathlib
import tempfile
import threading
import time
from typing import Callable

import pytest

from ledger_impl.detectors import default_detector
from ledger_properties import sweeper
from ledger_properties.oracle import checked_session, hunt_environment
from ledger_properties.parallel import PROGRESS_INTERVAL, ProgressFile
from ledger_properties.shell_strategies import WorkspaceSetup

SETUP = WorkspaceSetup({"a.txt": "alpha\n", "src/app.py": "x = 1\n"}, {"ext.txt": "out\n"})


def _tree(parent: pathlib.Path, name: str) -> pathlib.Path:
    root = parent / name
    for index in range(5):
        (root / f"d{index}" / "e").mkdir(parents=True)
        (root / f"d{index}" / "e" / "f").write_text("x")
    return root


def _failing_close() -> None:
    raise OSError("the detector could not be closed")


def test_outside_a_sweeping_block_a_directory_is_removed_at_once(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path, "w")
    sweeper.remove(root)
    assert not root.exists()


def test_every_directory_handed_over_is_gone_when_the_block_ends(tmp_path: pathlib.Path) -> None:
    roots = [_tree(tmp_path, f"w{index}") for index in range(6)]
    with sweeper.sweeping():
        for root in roots:
            sweeper.remove(root)
    assert not any(root.exists() for root in roots)


def test_a_block_ended_by_an_exception_still_leaves_nothing(tmp_path: pathlib.Path) -> None:
    roots = [_tree(tmp_path, f"w{index}") for index in range(6)]
    with pytest.raises(KeyboardInterrupt):
        with sweeper.sweeping():
            for root in roots:
                sweeper.remove(root)
            raise KeyboardInterrupt
    assert not any(root.exists() for root in roots)


def test_a_closing_runs_before_its_directory_is_removed_and_by_the_end_of_the_block(tmp_path: pathlib.Path) -> None:
    roots = [_tree(tmp_path, f"w{index}") for index in range(4)]
    closed: list[tuple[str, bool, bool]] = []

    def closing(root: pathlib.Path) -> sweeper.Closing:
        # Which thread closed, and whether the directory was still there when it did.
        return lambda: closed.append((root.name, root.exists(), threading.current_thread() is threading.main_thread()))

    with sweeper.sweeping():
        for root in roots:
            sweeper.remove(root, closing(root))
    assert closed == [(root.name, True, False) for root in roots]
    assert not any(root.exists() for root in roots)


def test_a_closing_that_fails_in_the_background_is_raised_at_the_end_of_the_block(tmp_path: pathlib.Path) -> None:
    roots = [_tree(tmp_path, f"w{index}") for index in range(3)]
    closed: list[str] = []
    with pytest.raises(OSError, match="could not be closed"):
        with sweeper.sweeping():
            sweeper.remove(roots[0], lambda: closed.append("first"))
            sweeper.remove(roots[1], _failing_close)
            sweeper.remove(roots[2], lambda: closed.append("last"))
    assert closed == ["first", "last"], "a failed closing does not stop the others"
    assert not any(root.exists() for root in roots), "a directory whose closing failed is still removed"


def test_outside_a_sweeping_block_a_closing_runs_at_once_and_its_directory_goes_even_if_it_fails(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path, "w")
    with pytest.raises(OSError):
        sweeper.remove(root, _failing_close)
    assert not root.exists()


def test_an_interrupted_wait_closes_and_removes_the_rest_itself(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The sweeping thread is held up and the wait for it is interrupted (a second Ctrl-C): the
    # waiting thread closes and removes what is left before the interruption goes on.
    release = threading.Event()
    monkeypatch.setattr(sweeper.Sweeper, "_run", lambda self: release.wait())
    held = sweeper.Sweeper()
    roots = [_tree(tmp_path, f"w{index}") for index in range(3)]
    closed: list[str] = []
    held.remove(roots[0])
    for root in roots[1:]:
        held.remove(root, lambda name=root.name: closed.append(name))

    def interrupted(timeout: float | None = None) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(held._thread, "join", interrupted)
    with pytest.raises(KeyboardInterrupt):
        held.finish()
    release.set()
    assert closed == [root.name for root in roots[1:]]
    assert not any(root.exists() for root in roots)


def test_a_hunt_workspace_is_removed_by_the_end_of_the_block(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cgroup join markers' directory is made under TMPDIR too, and is gone once no command
    # waits on a marker.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    with hunt_environment(), sweeper.sweeping():
        for _ in range(3):
            with checked_session(SETUP, default_detector()) as session:
                session.step("cat a.txt")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("closing", [contextlib.nullcontext, sweeper.sweeping], ids=["at-once", "in-the-background"])
def test_closing_a_run_kills_a_sleeping_writer_instead_of_waiting_for_it(
    tmp_path: pathlib.Path, closing: Callable[[], contextlib.AbstractContextManager[None]]
) -> None:
    # A hunt closes its runs in the background (inside `sweeping()`), a replay at once: either
    # way the writer is killed and the detector released by the end of the block.
    late = tmp_path / "late"
    with hunt_environment(), closing():
        with checked_session(SETUP, default_detector()) as session:
            session.step(f"(sleep 0.5; echo x > {late}) &")
            groups = session._background()
            assert groups, "the writer is tracked as a background job"
    assert all(not job.alive() for job in groups)
    assert session.runtime.detector._inotify is None, "the detector's inotify instance is released"
    time.sleep(1.0)  # past the writer's sleep: it would have written by now had it lived
    assert not late.exists()



class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_rewritten_at_most_twice_per_read_interval_and_at_the_end(tmp_path: pathlib.Path) -> None:
    clock = _Clock()
    progress = ProgressFile(tmp_path / "progress-0", clock)
    progress.write(1, 1)
    assert (tmp_path / "progress-0").read_text() == "1 1", "the first step is written at once"
    progress.write(1, 2)
    assert (tmp_path / "progress-0").read_text() == "1 1"
    clock.now += PROGRESS_INTERVAL / 2
    progress.write(2, 30)
    assert (tmp_path / "progress-0").read_text() == "2 30"
    progress.write(2, 31, final=True)
    assert (tmp_path / "progress-0").read_text() == "2 31"
