"""The workspaces a service holds: one open session per root, each driven by its own thread.

A session's SQLite connection and its inotify detector belong to the thread that made them,
and a workspace's calls must not interleave anyway (the session's own transaction would
serialize them), so every workspace has one worker thread: calls for one root queue behind
each other, calls for different roots run side by side. Between calls the worker drains the
inotify queue every `DRAIN_EVERY_S`, so a long idle spell cannot overflow it.

The detector (`service_detector`) follows the hook path's choice: Watchman when a `watchman`
binary is on PATH (its own daemon under the state directory, the same one the in-process hook
queries, so both read one clock; the baseline held in memory, see `resident`), else the
resident inotify detector; `$LEDGER_SESSION_DETECTOR`
forces one (`watchman`, or `stat-index` for inotify: the service has no use for a stat index).
Why Watchman first: the inotify detector also watches every file's inode (hard links), one
watch per file against the user's `fs.inotify.max_user_watches`; on a large tree that limit is
reached and the detector degrades, visibly but slowly, to a full diff at every call. Watchman
watches directories only.

The probe (`ledger_impl.session_probe`) runs on a second thread per workspace, with its own
connection to the store: a record call queues it and the call's answer goes back at once; the
probe then runs with that call's environment, and a later call for the same root never waits
for it. A probe left queued or running by an earlier service (restarted, killed) never
confirms: the first session this service opens for a root refuses them.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ledger_impl.detectors import prefers_watchman, watchman
from ledger_impl.session import DurableSession
from ledger_spec.degraded import Degraded, reported

from .resident import ResidentDetector, ResidentWatchman

T = TypeVar("T")
DRAIN_EVERY_S = 1.0


def service_detector(state_dir: str | None) -> ResidentDetector | ResidentWatchman:
    """The detector of one served workspace (see the module docstring)."""
    return ResidentWatchman(watchman.WatchmanIndex(state_dir)) if prefers_watchman() else ResidentDetector()


class Workspace:
    """One root: its session and detector, opened by (and used only from) its worker thread."""

    def __init__(self, root: str, state_dir: str | None) -> None:
        self.root = root
        self.calls = 0
        self.last_degraded: Degraded | None = None
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"ledger-ws-{os.path.basename(root)}")
        self.detector = service_detector(state_dir)
        self._session: DurableSession | None = None
        self._state_dir = state_dir
        self._prober = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"ledger-probe-{os.path.basename(root)}")
        self._probe_session: DurableSession | None = None  # the prober thread's own connection
        self._closing = False

    def call(self, job: Callable[[DurableSession], T], environ: Mapping[str, str]) -> T:
        """Run `job` on the session in the worker thread, with `environ` as the agent's environment;
        the probes it queued run afterwards on the prober thread."""
        def run() -> T:
            if self._session is None:
                self._session = DurableSession.open(self.root, state_dir=self._state_dir, detector=self.detector)
                self._session.refuse_unfinished_probes("queued by an earlier service, which ended before running them")
            # The calling agent's, not the service's: the programs PATH resolves and the variables
            # its tools read are the agent's, as in the hook process that the call replaces.
            self._session.environment = environ
            self.calls += 1
            try:
                return job(self._session)
            finally:
                for probe_id in self._session.queued_probes:
                    self._prober.submit(self._probe, probe_id, environ)
                self._session.queued_probes.clear()

        return self._worker.submit(run).result()

    def _probe(self, probe_id: int, environ: Mapping[str, str]) -> None:
        """On the prober thread: one queued probe, its verdict stored (a refusal as a note)."""
        if self._closing:
            return
        if self._probe_session is None:
            # Never polls (the probe's verdict needs no detector report): the detector stays the worker's.
            self._probe_session = DurableSession.open(self.root, state_dir=self._state_dir, detector=self.detector)
        self._probe_session.run_probe(probe_id, environ)

    @property
    def degraded(self) -> Degraded | None:
        """Why the detector is not at its best, if it says (Watchman reports unknown scope instead)."""
        return reported(getattr(self.detector, "degraded", None))

    def drain(self) -> None:
        self._worker.submit(self.detector.drain)

    def settle_probes(self) -> None:
        """Wait until every probe queued so far has stored its verdict (for tests and shutdown)."""
        self._prober.submit(lambda: None).result()

    def close(self) -> None:
        self._closing = True  # the probes still queued do not run: they stay unconfirmed

        def close_probe_session() -> None:  # on its own thread: SQLite's connections are per thread
            if self._probe_session is not None:
                self._probe_session.close()

        self._prober.submit(close_probe_session)
        self._prober.shutdown(wait=True)

        def shut() -> None:
            if self._session is not None:
                self._session.close()
            self.detector.close()

        self._worker.submit(shut).result()
        self._worker.shutdown(wait=True)


class Workspaces:
    """Every workspace the service serves, opened on first use."""

    def __init__(self, state_dir: str | None) -> None:
        self._state_dir = state_dir
        self._by_root: dict[str, Workspace] = {}
        self._lock = threading.Lock()

    def get(self, root: str) -> Workspace:
        with self._lock:
            workspace = self._by_root.get(root)
            if workspace is None:
                workspace = self._by_root[root] = Workspace(root, self._state_dir)
            return workspace

    def all(self) -> list[Workspace]:
        with self._lock:
            return list(self._by_root.values())

    def summary(self) -> list[dict[str, Any]]:
        return [{"root": w.root, "calls": w.calls, "detector": w.detector.name, "degraded": None if w.degraded is None else w.degraded.text()}
                for w in self.all()]

    def close(self) -> None:
        for workspace in self.all():
            workspace.close()
