"""Durable controller state: one small SQLite database per repository.

Where: `$XDG_STATE_HOME/ledger/economizer/<repository>.sqlite3` (XDG_STATE_HOME defaults to
~/.local/state), or `<state-dir>/<repository>.sqlite3`: never inside the workspace the agent
works in, unless a user points --state-dir there on purpose.

Conventions shared with Ledger's session store: WAL journal (readers never block the one
writer), `busy_timeout` so a second writer waits rather than failing at once, and every feed
is one `BEGIN IMMEDIATE` transaction: read the state, compute, write the new state and the
task's record, commit. A crash before the commit leaves the previous state; a concurrent
writer either waits for the lock or, past the timeout, gets `StoreBusy` and changes nothing.
A task id already fed is refused (`AlreadyFed`), so a retried hook cannot count a task twice.

Tables: `meta(key, value)` holds the controller state as one JSON document (small: a window of
8 trajectories and a few skills); `tasks(idx, task_id UNIQUE, record)` one row per fed task.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import sqlite3
from typing import Any, Callable

from economizer_spec.params import Params

from .codec import BadInput, record_to_json
from .controller import Controller, from_json, to_json

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another writer's transaction: a feed takes milliseconds, so
5 s only runs out when something holds the lock abnormally long, which deserves an error."""


class StoreBusy(RuntimeError):
    pass


class AlreadyFed(ValueError):
    pass


def default_state_dir() -> pathlib.Path:
    base = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(base) / "ledger" / "economizer"


def database_path(repository: str, state_dir: pathlib.Path | None = None) -> pathlib.Path:
    if not repository or not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", repository):
        raise BadInput(f"repository name {repository!r} is not owner/name")
    return (state_dir or default_state_dir()) / (repository.replace("/", "__") + ".sqlite3")


class Store(contextlib.AbstractContextManager["Store"]):
    def __init__(self, repository: str, state_dir: pathlib.Path | None = None, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self.repository = repository
        self.path = database_path(repository, state_dir)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(self.path, isolation_level=None, timeout=busy_timeout_ms / 1000)
        self.connection.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute("PRAGMA synchronous=NORMAL")
        self.connection.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self.connection.execute(
            "CREATE TABLE IF NOT EXISTS tasks (idx INTEGER PRIMARY KEY, task_id TEXT UNIQUE NOT NULL, record TEXT NOT NULL)"
        )

    def close(self) -> None:
        self.connection.close()

    def __exit__(self, *exc: object) -> None:  # `with Store(...)`: AbstractContextManager enters
        self.close()

    def load(self, catalog: tuple[str, ...] = ("bash",), core: tuple[str, ...] = ("bash",), params: Params | None = None) -> Controller:
        row = self.connection.execute("SELECT value FROM meta WHERE key='state'").fetchone()
        if row is None:
            return Controller(self.repository, catalog, core, params or Params())
        return from_json(json.loads(row[0]))

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(r[0]) for r in self.connection.execute("SELECT record FROM tasks ORDER BY idx")]

    def transaction(self, work: Callable[[Controller], Any], **load_args: Any) -> Any:
        """Run `work` on the stored controller inside one write transaction; commit its result.

        `work` may raise: nothing is written then. Returns what `work` returned."""
        try:
            self.connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise StoreBusy(f"state database {self.path} is locked by another writer ({error})") from None
        try:
            controller = self.load(**load_args)
            before = controller.index
            result = work(controller)
            for record in controller.records:
                if record.index <= before:
                    continue
                try:
                    self.connection.execute(
                        "INSERT INTO tasks (idx, task_id, record) VALUES (?, ?, ?)",
                        (record.index, record.task_id, json.dumps(record_to_json(record), default=str)),
                    )
                except sqlite3.IntegrityError:
                    raise AlreadyFed(f"task {record.task_id} was already fed to {self.repository}") from None
            self.connection.execute(
                "INSERT INTO meta (key, value) VALUES ('state', ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (json.dumps(to_json(controller)),),
            )
            self.connection.execute("COMMIT")
            return result
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise

    def fed_ids(self) -> set[str]:
        return {r[0] for r in self.connection.execute("SELECT task_id FROM tasks")}

