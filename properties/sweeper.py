"""Removing finished hunt workspaces off the hunt's critical path.

A hunt run materializes a fresh git repository and removes it when its session closes. On a
disk mounted with online discard (this project's machines) removing a directory costs
milliseconds of waiting, not of CPU (3.8 ms per `rmdir` measured, against 0.01 ms per
`unlink`), and a run's workspace holds about twenty directories (git's object fan-out): 30-90
ms per run, more than a whole step. Nothing looks at a workspace once its session is closed
(every check of the run is done by then, and the next run has a directory of its own), so the
removal may overlap the next run.

Closing a run's session waits as well: the kernel takes up to 18 ms to release an inotify
instance holding many watches, and killed background jobs are waited for. `remove()` takes the
closing with the directory, and the thread closes before it removes. A closed session's
background jobs can only write into its own workspace, which nothing reads any more.

`sweeping()` starts one background thread that closes and removes what is handed to it by
`remove()`; leaving the block waits until every one of them is done, whether the block ends
normally, by an exception or by Ctrl-C, so a hunt still leaves nothing behind when it returns;
a closing that raised is raised there. Outside such a block `remove()` closes and removes at
once, as before.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import queue
import shutil
import threading
from typing import Callable, Iterator

Closing = Callable[[], None]
"""What must happen before a directory is removed (a session's close): run, then removed."""

_ACTIVE: contextvars.ContextVar["Sweeper | None"] = contextvars.ContextVar("ledger_hunt_sweeper", default=None)


class Sweeper:
    """One thread closing and removing directories in the order they were handed over."""

    def __init__(self) -> None:
        self._pending: queue.SimpleQueue[tuple[str, Closing | None] | None] = queue.SimpleQueue()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ledger-hunt-sweeper", daemon=True)
        self._thread.start()

    def remove(self, directory: str | os.PathLike[str], closing: Closing | None = None) -> None:
        self._pending.put((os.fspath(directory), closing))

    def _run(self) -> None:
        while (item := self._pending.get()) is not None:
            try:
                _close_and_remove(*item)
            except Exception as failure:  # raised by finish(), in the hunt's thread
                self._failure = self._failure or failure

    def finish(self) -> None:
        """Wait until everything handed over is closed and removed, then raise the first
        closing that failed. Interrupted while waiting, the rest is done by the caller's thread
        before the interruption goes on, so that no directory outlives the hunt (the thread is
        a daemon, which exit would cut short)."""
        self._pending.put(None)
        try:
            while self._thread.is_alive():
                self._thread.join(0.1)
        except BaseException:
            while (item := _take(self._pending)) is not None:
                with contextlib.suppress(Exception):
                    _close_and_remove(*item)
            self._thread.join(5.0)  # the one it may be removing (a fraction of a second)
            raise
        if self._failure is not None:
            raise self._failure


def _close_and_remove(directory: str, closing: Closing | None) -> None:
    try:
        if closing is not None:
            closing()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _take(pending: "queue.SimpleQueue[tuple[str, Closing | None] | None]") -> tuple[str, Closing | None] | None:
    try:
        return pending.get_nowait()
    except queue.Empty:
        return None


@contextlib.contextmanager
def sweeping() -> Iterator[None]:
    """Hand workspace closings and removals inside the block to a background thread (the one
    already active, if an enclosing block started it); wait for all of them at the block's end."""
    if _ACTIVE.get() is not None:
        yield
        return
    sweeper = Sweeper()
    token = _ACTIVE.set(sweeper)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
        sweeper.finish()


def remove(directory: str | os.PathLike[str], closing: Closing | None = None) -> None:
    """Run `closing` (if any), then remove `directory` and everything under it: in the
    background inside `sweeping()`, at once outside it."""
    sweeper = _ACTIVE.get()
    if sweeper is None:
        _close_and_remove(os.fspath(directory), closing)
    else:
        sweeper.remove(directory, closing)
