"""Bounded detector execution: proposer regexes run in a worker process that can be killed.

The static check in `economizer_spec.detectors` rejects the regex shapes known to backtrack
catastrophically, but Python's `re` has no timeout and a polynomial pattern on a long line
can still take minutes. So detectors are evaluated in a separate process: one request per
trajectory (all detectors at once), answered within `timeout` seconds or the worker is
killed and restarted, and every detector of that request that had not finished is reported
as timed out. The caller then rejects (or retires) the skill with that reason; nothing runs
unbounded in the controller's process.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import time
from typing import Sequence

import attrs

from economizer_spec.detectors import Detector, matches
from economizer_spec.trajectory import Step

DEFAULT_TIMEOUT = 5.0
"""Seconds for all detectors on one trajectory. The 322-trajectory corpus evaluates a
handful of detectors per task in milliseconds; 5 s is three orders of magnitude of slack."""


@attrs.frozen
class TimedOut:
    seconds: float

    @property
    def reason(self) -> str:
        return f"detector did not finish within {self.seconds:g}s on a trajectory (catastrophic regex?)"


Outcome = bool | TimedOut


def _serve(connection: multiprocessing.connection.Connection) -> None:  # pragma: no cover - runs in the worker
    while True:
        try:
            request = connection.recv()
        except EOFError:
            return
        detectors, steps = request
        for detector in detectors:
            connection.send(matches(detector, steps))


class BoundedMatcher:
    """Evaluates detectors in a killable worker. Use as a context manager or call close()."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = timeout
        self._context = multiprocessing.get_context("fork")
        self._process: multiprocessing.process.BaseProcess | None = None
        self._connection: multiprocessing.connection.Connection | None = None

    def _start(self) -> multiprocessing.connection.Connection:
        if self._connection is None:
            parent, child = self._context.Pipe()
            self._process = self._context.Process(target=_serve, args=(child,), daemon=True)
            self._process.start()
            child.close()
            self._connection = parent
        return self._connection

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join()
        if self._connection is not None:
            self._connection.close()
        self._process = None
        self._connection = None

    def evaluate(self, detectors: Sequence[Detector], steps: tuple[Step, ...]) -> list[Outcome]:
        if not detectors:
            return []
        connection = self._start()
        connection.send((tuple(detectors), steps))
        results: list[Outcome] = []
        deadline = time.monotonic() + self.timeout
        for _ in detectors:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not connection.poll(remaining):
                self._kill()
                results.extend(TimedOut(self.timeout) for _ in range(len(detectors) - len(results)))
                return results
            results.append(bool(connection.recv()))
        return results

    def close(self) -> None:
        self._kill()

    def __enter__(self) -> "BoundedMatcher":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
