"""Durable controller state: one small SQLite database per repository.

Where: `<ledger state root>/economizer/<repository>.sqlite3`. The state root is Ledger's own
(`$XDG_STATE_HOME/ledger`, XDG_STATE_HOME defaulting to ~/.local/state, or `--state-dir`),
the one its session databases live in (`<root>/sessions/`), found by the same function; so
`--state-dir D` names the same root for `ledger economize` and `ledger sessions`. Never
inside the workspace the agent works in, unless a user points --state-dir there on purpose.

Rules shared with Ledger's session store, by using its connection (`ledger_impl.store.connect`):
WAL journal (readers never block the one writer), a busy timeout so a second writer waits
rather than failing at once, synchronous=NORMAL (survives any process crash), and explicit
transactions only. Every feed is one `BEGIN IMMEDIATE` transaction per database: read the
state, compute, write the new state and the task's record, commit. A crash before the commit
leaves the previous state; a concurrent writer either waits for the lock or, past the
timeout, gets `StoreBusy` and changes nothing. A task id already fed is refused
(`AlreadyFed`), so a retried hook cannot count a task twice. A feed that spans several
repositories takes every database's lock and stages every write before the first commit
(`transact_all`), so a refusal anywhere writes nothing anywhere.

What differs from the session store, on purpose: a database that cannot be read (not a
database, state JSON that does not decode) is refused with `StateUnreadable` and left as it
is, not set aside and restarted. The session store's discarded state only costs reuse; the
economizer's holds the skills, budget and tool history learned over many tasks, which a
user should get to inspect or move aside themselves.

Tables: `meta(key, value)` holds the controller state as one JSON document (small: a window of
8 trajectories and a few skills); `tasks(idx, task_id UNIQUE, record)` one row per fed task.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import re
import sqlite3
from typing import Any, Callable, Sequence

from economizer_spec.params import Params
from ledger_impl.state_directory import resolve
from ledger_impl.store import connect

from .bounded import BoundedMatcher
from .codec import BadInput, record_to_json
from .controller import Controller, from_json, to_json
from ledger_spec.errors import UnreadableState, UsageError

BUSY_TIMEOUT_MS = 5000
"""How long a writer waits for another writer's transaction: a feed takes milliseconds, so
5 s only runs out when something holds the lock abnormally long, which deserves an error.
(The session store waits 30 s: a hook must not fail an agent's call for a slow neighbour,
whereas a feed is run by hand or by a batch that can retry.)"""

ECONOMIZER_DIR = "economizer"
"""The economizer's folder under Ledger's state root, beside `sessions/`."""


class StoreBusy(UnreadableState, RuntimeError):
    pass


class AlreadyFed(UsageError, ValueError):
    pass


class StateUnreadable(UnreadableState, RuntimeError):
    """The stored state cannot be read; the database is left exactly as it was."""


def database_path(repository: str, state_dir: pathlib.Path | None = None) -> pathlib.Path:
    """`<state_dir or Ledger's state root>/economizer/<owner>__<name>.sqlite3`."""
    if not repository or not re.fullmatch(r"[\w.-]+(/[\w.-]+)?", repository):
        raise BadInput(f"repository name {repository!r} is not owner/name")
    root = resolve(state_dir)
    return root / ECONOMIZER_DIR / (repository.replace("/", "__") + ".sqlite3")


class Store(contextlib.AbstractContextManager["Store"]):
    def __init__(self, repository: str, state_dir: pathlib.Path | None = None, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self.repository = repository
        self.path = database_path(repository, state_dir)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._readable():  # a file that is not a database fails here, unchanged
            self.connection = connect(self.path, busy_timeout_ms / 1000)
        try:
            with self._readable():
                self.connection.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self.connection.execute(
                    "CREATE TABLE IF NOT EXISTS tasks (idx INTEGER PRIMARY KEY, task_id TEXT UNIQUE NOT NULL, record TEXT NOT NULL)"
                )
        except BaseException:
            self.connection.close()
            raise

    @contextlib.contextmanager
    def _readable(self) -> Any:
        """Turn a database or a state document that cannot be read into `StateUnreadable`
        (a lock held past the timeout stays `StoreBusy`: the state itself is fine)."""
        try:
            yield
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                raise StoreBusy(f"state database {self.path} is locked by another writer ({error})") from None
            raise StateUnreadable(f"economizer state {self.path} cannot be read ({error}); left as it is") from None
        except (sqlite3.DatabaseError, ValueError, KeyError, TypeError) as error:
            if isinstance(error, AlreadyFed):
                raise
            raise StateUnreadable(f"economizer state {self.path} cannot be read ({type(error).__name__}: {error}); left as it is") from None

    def close(self) -> None:
        self.connection.close()

    def __exit__(self, *exc: object) -> None:  # `with Store(...)`: AbstractContextManager enters
        self.close()

    def load(
        self,
        catalog: tuple[str, ...] = ("bash",),
        core: tuple[str, ...] = ("bash",),
        params: Params | None = None,
        matcher: BoundedMatcher | None = None,
    ) -> Controller:
        with self._readable():
            row = self.connection.execute("SELECT value FROM meta WHERE key='state'").fetchone()
            if row is None:
                return Controller(self.repository, catalog, core, params or Params(), matcher)
            return from_json(json.loads(row[0]), matcher)

    def has_state(self) -> bool:
        """Whether a feed ever committed here. A feed that failed after creating the file
        leaves empty tables, which is no state at all (and is not deleted: another feeder
        may be about to commit into the same file)."""
        with self._readable():
            return self.connection.execute("SELECT 1 FROM meta WHERE key='state'").fetchone() is not None

    def records(self) -> list[dict[str, Any]]:
        with self._readable():
            return [json.loads(r[0]) for r in self.connection.execute("SELECT record FROM tasks ORDER BY idx")]

    def begin(self) -> None:
        """Take the write lock (`BEGIN IMMEDIATE`), or raise `StoreBusy` past the timeout."""
        with self._readable():
            self.connection.execute("BEGIN IMMEDIATE")

    def stage(self, work: Callable[[Controller], Any], **load_args: Any) -> Any:
        """Inside the open transaction: run `work` on the stored controller and write the new
        state and task rows, uncommitted. Returns what `work` returned."""
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
        return result

    def commit(self) -> None:
        self.connection.execute("COMMIT")

    def rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")

    def transaction(self, work: Callable[[Controller], Any], **load_args: Any) -> Any:
        """Run `work` on the stored controller inside one write transaction; commit its result.

        `work` may raise: nothing is written then. Returns what `work` returned."""
        return transact_all([(self, work, load_args)])[0]

    def fed_ids(self) -> set[str]:
        return {r[0] for r in self.connection.execute("SELECT task_id FROM tasks")}


def transact_all(jobs: Sequence[tuple[Store, Callable[[Controller], Any], dict[str, Any]]]) -> list[Any]:
    """Run each job's work on its store, all or nothing: every write lock is taken and every
    write staged before the first commit, so a busy database, refused input or a crash in
    any job leaves every database as it was. Locks are taken in repository order, so two
    feeds of overlapping repositories cannot each hold one lock and wait for the other.

    Only a failure between two commits (a crash, a full disk) can still leave one database
    fed and another not; a retry is then refused for the fed one (`AlreadyFed`), not double
    counted. Returns the works' results in the order of `jobs`."""
    order = sorted(range(len(jobs)), key=lambda i: jobs[i][0].repository)
    results: dict[int, Any] = {}
    begun: list[Store] = []
    try:
        for i in order:
            store, work, load_args = jobs[i]
            store.begin()
            begun.append(store)
            results[i] = store.stage(work, **load_args)
        for store in begun:
            store.commit()
    except BaseException:
        for store in begun:
            store.rollback()
        raise
    return [results[i] for i in range(len(jobs))]


def fed_budget(
    repository: str, state_dir: pathlib.Path | None = None, adjust: Callable[[Params], Params] = lambda p: p
) -> tuple[int | None, Params]:
    """The guard's budget B and the parameters from the repository's fed history; (None,
    defaults) before any feed committed. Reading never creates a repository's database.
    `adjust` changes the stored parameters for this reading only (a CLI's guard setting)."""
    if not database_path(repository, state_dir).is_file():
        return None, adjust(Params())
    with Store(repository, state_dir) as store:
        if not store.has_state():  # a feed created the file and failed
            return None, adjust(Params())
        controller = store.load()
    controller.params = adjust(controller.params)
    return controller.budget(), controller.params
