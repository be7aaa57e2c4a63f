"""The durable store of a session: one SQLite database per workspace root, outside the root.

Theory of operation. Every hook call is its own process; the store is what they share.
- One database file per root (named by a hash of the root's real path) in the state
  directory, in WAL mode so readers never block the writer.
- Every call that changes state runs inside one `BEGIN IMMEDIATE` transaction (the write lock
  is taken before anything is read), with a busy timeout: concurrent processes queue instead of
  losing each other's updates, and a process killed at any instant leaves either the whole
  transaction or none of it.
- The ledger and the stat index are written in the same transaction, so a baseline can never
  be newer than the ledger it belongs to.
- The ledger is stored as its spec-level state (`ledger_spec.State`, frozen values) in the
  plain encoding of `ledger_impl.state_codec`, one row per log entry and per shared value
  (`ledger_impl.state_rows`), so a call writes what it added, not the whole session again;
  each row carries a checksum. Never pickled: what a row means is fixed by the
  format number (`SCHEMA_VERSION`), not by the code that wrote it, so an upgrade of Ledger keeps
  the sessions. A new format comes with a migration from the one before (`MIGRATIONS`); the
  format is documented in `docs/internals/session-store.md`.
- What cannot be shown intact (an unknown schema version, a failed integrity check, a checksum
  mismatch, a row that does not decode) is discarded, never trusted, and a note says so. An
  empty ledger can only cost reuse: with no observations, nothing is reused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import sqlite3
import time
from collections.abc import Callable, Iterator

import attrs

from ledger_spec.state import State

from ledger_impl import state_codec, state_rows
from ledger_impl.state_directory import check_outside, resolve
from ledger_impl.state_rows import RowDelta
from ledger_impl.state_rows import Row

SCHEMA_VERSION = 5
BUSY_TIMEOUT_S = 30.0
DATABASE_SUFFIX = ".sqlite"
DISCARDED_INFIX = ".discarded-"  # a database set aside for inspection: `<name>.sqlite.discarded-<ns>`

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    policy TEXT NOT NULL,        -- the Policy the ledger was kept under (state_codec)
    header BLOB NOT NULL,        -- (step, calls in flight, log lengths), state_codec JSON (state_rows)
    header_sum TEXT NOT NULL,    -- SHA-256 of header, hex
    revision TEXT NOT NULL,      -- random, new at every save: names what the rows hold
    stat_index BLOB,             -- checksummed inside (see detectors.stat_index.encode)
    steps INTEGER NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS shared_values (
    number INTEGER PRIMARY KEY,  -- in the order first written: entries name values by it
    value BLOB NOT NULL,         -- a command or a fingerprint, state_codec JSON
    value_sum TEXT NOT NULL      -- SHA-256 of value, hex
);
CREATE TABLE IF NOT EXISTS log_entries (
    log TEXT NOT NULL,           -- modifications | observations | history
    position INTEGER NOT NULL,   -- its index in that log
    value BLOB NOT NULL,         -- the entry, state_codec JSON naming shared values by number
    value_sum TEXT NOT NULL,     -- SHA-256 of value, hex
    PRIMARY KEY (log, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (
    call_id TEXT PRIMARY KEY,
    command TEXT NOT NULL,       -- as proposed, for display (the ledger's state holds the call)
    total_at_start INTEGER NOT NULL,
    may_write INTEGER NOT NULL,
    started_at REAL NOT NULL,
    abandoned INTEGER NOT NULL DEFAULT 0  -- declared abandoned (unknown scope already recorded)
);
CREATE TABLE IF NOT EXISTS probes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- named by its observation's fingerprint, never reused
    call_id TEXT NOT NULL,
    command TEXT NOT NULL,       -- the read's normalized command (candidates for a decision)
    target_key TEXT,             -- its file target's key (range reuse across commands), or NULL
    cwd TEXT NOT NULL,           -- where the agent ran it, relative to the root
    started_ns INTEGER NOT NULL, -- when it was decided (time.time_ns()), before the agent ran it
    rendering TEXT NOT NULL,     -- how the agent showed its output (ledger_impl.probe.rendering)
    step INTEGER,                -- its observation's step, once recorded
    status TEXT NOT NULL,        -- running | pending | probing | confirmed | refused | stale
    reason TEXT,                 -- why refused
    record BLOB                  -- a confirmed probe's TracedRecord (state_codec JSON, UTF-8)
);
CREATE INDEX IF NOT EXISTS probes_by_command ON probes (command, status);
CREATE INDEX IF NOT EXISTS probes_by_key ON probes (target_key, status);
CREATE TABLE IF NOT EXISTS context (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    value TEXT NOT NULL,         -- the agent's ledger_spec.context.Context, state_codec JSON
    value_sum TEXT NOT NULL      -- SHA-256 of value in UTF-8, hex
);
CREATE TABLE IF NOT EXISTS notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    text TEXT NOT NULL,
    shown INTEGER NOT NULL DEFAULT 0
);
"""


def checksum(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def database_path(root: os.PathLike[str] | str, state_dir: os.PathLike[str] | str | None = None) -> pathlib.Path:
    """Where the database for `root` lives: `<state_dir>/sessions/<hash>-<basename>.sqlite`."""
    root_r = os.path.realpath(root)
    directory = resolve(state_dir)
    digest = hashlib.sha256(root_r.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(root_r))[:40] or "root"
    return directory / "sessions" / f"{digest}-{name}{DATABASE_SUFFIX}"


@attrs.frozen
class PendingRow:
    call_id: str
    command: str
    total_at_start: int
    may_write: bool
    started_at: float
    abandoned: bool = False


@attrs.frozen
class ProbeRow:
    """One read's probe (see `ledger_impl.session_probe`)."""

    id: int
    call_id: str
    command: str
    target_key: str | None
    cwd: str
    started_ns: int
    rendering: str
    step: int | None
    status: str
    reason: str | None
    record: bytes | None


PROBE_COLUMNS = "id, call_id, command, target_key, cwd, started_ns, rendering, step, status, reason, record"


@attrs.frozen
class StateRow:
    policy: str
    header: str
    header_sum: str
    revision: str
    stat_index: bytes | None
    steps: int
    updated_at: float


class Store:
    """One open database. Use `transaction()` for every read-modify-write."""

    def __init__(self, path: pathlib.Path, connection: sqlite3.Connection, notes: list[str]) -> None:
        self.path = path
        self._db = connection
        self.opening_notes = notes  # what was discarded while opening (also stored as notes)

    @classmethod
    def open(
        cls, root: os.PathLike[str] | str, state_dir: os.PathLike[str] | str | None = None, *, create: bool = True
    ) -> "Store":
        path = database_path(root, state_dir)
        check_outside(root, path.parent)
        if not create and not path.exists():
            raise FileNotFoundError(f"no session database for {os.fspath(root)!r} at {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        notes: list[str] = []
        try:
            connection = connect(path)
            _initialize(connection, os.path.realpath(root))
        except sqlite3.DatabaseError as error:
            # Not a database, or a failed integrity check: keep it aside for inspection, start over.
            aside = path.with_name(f"{path.name}{DISCARDED_INFIX}{time.time_ns()}")
            with contextlib.suppress(OSError):
                os.replace(path, aside)
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.unlink(str(path) + suffix)
            notes.append(f"session state discarded ({error}); moved to {aside.name}")
            connection = connect(path)
            _initialize(connection, os.path.realpath(root))
        store = cls(path, connection, notes)
        for note in notes:
            with store.transaction():
                store.add_note(note)
        return store

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        return write_transaction(self._db)

    def close(self) -> None:
        self._db.close()

    # --- meta ---------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    # --- state --------------------------------------------------------------------------------

    def load_state(self) -> StateRow | None:
        row = self._db.execute(
            "SELECT policy, header, header_sum, revision, stat_index, steps, updated_at FROM state WHERE id = 1"
        ).fetchone()
        if row is None:
            return None
        return StateRow(row[0], _text(row[1]), row[2], row[3], None if row[4] is None else bytes(row[4]), row[5], row[6])

    def load_rows(self) -> list[Row]:
        """Every shared value and log entry of the stored ledger (`ledger_impl.state_rows`)."""
        values = self._db.execute("SELECT number, value, value_sum FROM shared_values").fetchall()
        entries = self._db.execute("SELECT log, position, value, value_sum FROM log_entries").fetchall()
        return [Row(None, number, _text(value), value_sum) for number, value, value_sum in values] + [
            Row(log, position, _text(value), value_sum) for log, position, value, value_sum in entries
        ]

    def save_state(
        self, policy: str, changes: RowDelta, revision: str, stat_index: bytes | None, steps: int
    ) -> None:
        """Write a save's rows (`state_rows.changes`) and the state row under a new `revision`."""
        if changes.rewrites_all:
            self._db.execute("DELETE FROM shared_values")
            self._db.execute("DELETE FROM log_entries")
        self._db.executemany(
            "INSERT OR REPLACE INTO shared_values (number, value, value_sum) VALUES (?, ?, ?)",
            [(row.position, _blob(row.text), row.text_sum) for row in changes.rows if row.log is None],
        )
        self._db.executemany(
            "INSERT OR REPLACE INTO log_entries (log, position, value, value_sum) VALUES (?, ?, ?, ?)",
            [(row.log, row.position, _blob(row.text), row.text_sum) for row in changes.rows if row.log is not None],
        )
        self._db.execute(
            "INSERT OR REPLACE INTO state (id, policy, header, header_sum, revision, stat_index, steps, updated_at)"
            " VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
            (policy, _blob(changes.header), state_rows.checksum(changes.header), revision, stat_index, steps, time.time()),
        )

    def load_context(self) -> tuple[str, str] | None:
        """(value, checksum) of the stored model context, if any (`ledger_impl.context_journal`)."""
        row = self._db.execute("SELECT value, value_sum FROM context WHERE id = 1").fetchone()
        return None if row is None else (row[0], row[1])

    def save_context(self, value: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO context (id, value, value_sum) VALUES (1, ?, ?)",
            (value, checksum(value.encode("utf-8"))),
        )

    # --- pending calls ------------------------------------------------------------------------

    def add_pending(self, row: PendingRow) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO pending VALUES (?, ?, ?, ?, ?, ?)",
            (row.call_id, row.command, row.total_at_start, int(row.may_write), row.started_at, int(row.abandoned)),
        )

    def pending(self) -> list[PendingRow]:
        rows = self._db.execute(
            "SELECT call_id, command, total_at_start, may_write, started_at, abandoned FROM pending ORDER BY started_at"
        ).fetchall()
        return [PendingRow(r[0], r[1], r[2], bool(r[3]), r[4], bool(r[5])) for r in rows]

    def mark_abandoned(self, call_id: str) -> None:
        self._db.execute("UPDATE pending SET abandoned = 1 WHERE call_id = ?", (call_id,))

    def forget_abandoned(self, older_than: float) -> None:
        """Drop abandoned calls started before `older_than`: a record that late is not coming."""
        self._db.execute("DELETE FROM pending WHERE abandoned = 1 AND started_at < ?", (older_than,))

    def remove_pending(self, call_id: str) -> None:
        self._db.execute("DELETE FROM pending WHERE call_id = ?", (call_id,))

    def clear_pending(self) -> None:
        self._db.execute("DELETE FROM pending")

    # --- probes -------------------------------------------------------------------------------

    def add_probe(self, call_id: str, command: str, target_key: str | None, cwd: str, started_ns: int) -> int:
        """A probe row for a read about to run (status 'running'); its id, never used before."""
        cursor = self._db.execute(
            "INSERT INTO probes (call_id, command, target_key, cwd, started_ns, rendering, status)"
            " VALUES (?, ?, ?, ?, ?, 'exact', 'running')",
            (call_id, command, target_key, cwd, started_ns),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def probe(self, probe_id: int) -> ProbeRow | None:
        row = self._db.execute(f"SELECT {PROBE_COLUMNS} FROM probes WHERE id = ?", (probe_id,)).fetchone()
        return None if row is None else _probe_row(row)

    def queue_probe(self, probe_id: int, step: int, rendering: str) -> None:
        self._db.execute(
            "UPDATE probes SET status = 'pending', step = ?, rendering = ? WHERE id = ?", (step, rendering, probe_id)
        )

    def set_probe_status(self, probe_id: int, status: str, reason: str | None = None, record: bytes | None = None) -> None:
        self._db.execute(
            "UPDATE probes SET status = ?, reason = ?, record = ? WHERE id = ?", (status, reason, record, probe_id)
        )

    def forget_probe(self, probe_id: int) -> None:
        self._db.execute("DELETE FROM probes WHERE id = ?", (probe_id,))

    def confirmed_probes(self, command: str, target_key: str | None, limit: int) -> list[ProbeRow]:
        """The newest confirmed probes of `command` (or of any read of `target_key`)."""
        rows = self._db.execute(
            f"SELECT {PROBE_COLUMNS} FROM probes WHERE status = 'confirmed' AND (command = ? OR target_key = ?)"
            " ORDER BY id DESC LIMIT ?",
            (command, target_key, limit),
        ).fetchall()
        return [_probe_row(row) for row in rows]

    def unfinished_probes(self) -> int:
        """How many probes are queued or running."""
        return self._db.execute("SELECT COUNT(*) FROM probes WHERE status IN ('pending', 'probing')").fetchone()[0]

    def refuse_unfinished_probes(self, reason: str) -> int:
        """Every probe not yet run or still running is refused (its runner is gone): how many."""
        cursor = self._db.execute(
            "UPDATE probes SET status = 'refused', reason = ? WHERE status IN ('pending', 'probing')", (reason,)
        )
        return cursor.rowcount

    # --- notes --------------------------------------------------------------------------------

    def add_note(self, text: str) -> None:
        self._db.execute("INSERT INTO notes (at, text) VALUES (?, ?)", (time.time(), text))

    def take_unshown_notes(self) -> list[str]:
        """Notes not yet shown to the agent, marked shown (inside the caller's transaction)."""
        rows = self._db.execute("SELECT id, text FROM notes WHERE shown = 0 ORDER BY id").fetchall()
        if rows:
            self._db.execute("UPDATE notes SET shown = 1 WHERE shown = 0")
        return [text for _, text in rows]

    def notes(self, limit: int = 20) -> list[tuple[float, str]]:
        rows = self._db.execute("SELECT at, text FROM notes ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
        return [(at, text) for at, text in reversed(rows)]


def _blob(text: str) -> bytes:
    # surrogatepass: outputs and names may carry lone surrogates (undecodable bytes), which
    # SQLite's TEXT (strict UTF-8) cannot hold; the checksum is of these same bytes.
    return text.encode("utf-8", "surrogatepass")


def _text(blob: bytes | str) -> str:
    """A stored value's text. Bytes that are not UTF-8 (a damaged row) are replaced, so that
    the row's checksum, not a decoding error, says it is damaged."""
    if isinstance(blob, str):
        return blob  # written as TEXT by hand; its checksum says whether it is what was stored
    try:
        return bytes(blob).decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return bytes(blob).decode("utf-8", "replace")


def connect(path: pathlib.Path, busy_timeout_s: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """A connection under the policy every Ledger state database follows (the session store
    here, the economizer's per-repository store too): explicit transactions, WAL, a busy
    timeout so concurrent writers queue, and a sync level that survives any process crash."""
    # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE), never implicit.
    connection = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None)
    _enter_wal(connection, time.monotonic() + busy_timeout_s)
    # NORMAL in WAL mode survives any process crash; only a power loss may drop the last
    # commits, which rolls ledger and index back together (still consistent).
    connection.execute("PRAGMA synchronous=NORMAL")
    return connection


def _enter_wal(connection: sqlite3.Connection, deadline: float) -> None:
    """Switch to WAL, waiting out other connections that are switching the same new file.

    Converting a database to WAL takes its exclusive lock, and SQLite answers a connection
    that contends for it with "database is locked" at once instead of through the busy
    handler (waiting could deadlock two upgraders). Once one connection has converted the
    file, the mode is stored in it and the pragma only reads. So only the first opening of a
    new store races, and retrying until the busy timeout is what the timeout promises."""
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


@contextlib.contextmanager
def write_transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """`BEGIN IMMEDIATE` ... `COMMIT`, rolled back on any exception: how every Ledger state
    database is written (the write lock is taken before the first read of the transaction)."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


def _initialize(connection: sqlite3.Connection, root: str) -> None:
    """Create the schema (once), or check the existing one; raise DatabaseError if unusable."""
    if connection.execute("PRAGMA quick_check").fetchone()[0] != "ok":
        raise sqlite3.DatabaseError("integrity check failed")
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION or version in MIGRATIONS:
        stored_root = connection.execute("SELECT value FROM meta WHERE key = 'root'").fetchone()
        if stored_root is not None and stored_root[0] != root:
            raise sqlite3.DatabaseError(f"database belongs to {stored_root[0]!r}")
    if version == SCHEMA_VERSION:
        return
    with write_transaction(connection):
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version != 0 and version not in MIGRATIONS and version != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema version {version}, expected {SCHEMA_VERSION}")
        if version == 0:
            _create(connection)
            connection.execute("INSERT OR IGNORE INTO meta VALUES ('root', ?)", (root,))
            connection.execute("INSERT OR IGNORE INTO meta VALUES ('created_at', ?)", (repr(time.time()),))
        while version in MIGRATIONS:
            version = MIGRATIONS[version](connection)
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _create(connection: sqlite3.Connection) -> None:
    # One statement at a time: executescript would commit the open transaction first.
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            connection.execute(statement)


def _from_pickled(connection: sqlite3.Connection) -> int:
    """Format 2 -> 3. Format 2 held the ledger and the pending calls pickled, trusted only by the
    code that wrote them: they cannot be read as values, so they are dropped (a new ledger
    starts: that costs reuse, never correctness) and a note says so; the root and the notes are
    kept."""
    had_state = connection.execute("SELECT COUNT(*) FROM state").fetchone()[0]
    connection.execute("DROP TABLE state")
    connection.execute("DROP TABLE pending")
    _create(connection)
    if had_state:
        connection.execute(
            "INSERT INTO notes (at, text) VALUES (?, ?)",
            (time.time(), "session state written by an earlier Ledger (pickled, format 2) not read; starting a new ledger"),
        )
    return 3


def _with_probes_and_context(connection: sqlite3.Connection) -> int:
    """Format 3 -> 4: the probes table and the table of the model's context are added. The
    ledger is kept as it is: its observations were never probed, so with the probe on (the
    default) none is served (their fingerprints name no probe), and a note says so; with the
    probe off they serve as before. The context starts empty: no delivery is known, so every
    Reuse is answered verbatim until one is recorded."""
    _create(connection)
    if connection.execute("SELECT COUNT(*) FROM state").fetchone()[0]:
        connection.execute(
            "INSERT INTO notes (at, text) VALUES (?, ?)",
            (time.time(), "session state written before the probe (format 3): its stored outputs were never probed, "
                          "so none is served"),
        )
    return 4


def _ledger_in_rows(connection: sqlite3.Connection) -> int:
    """Format 4 -> 5: the ledger, stored until now as one encoded document rewritten whole by
    every call, is split into rows that each call only adds to (`ledger_impl.state_rows`). The
    stored ledger is decoded and written again as rows, so the session keeps everything it
    knew; one that cannot be shown intact (checksum, decoding) is dropped with a note, as at
    any opening. The stat index and the policy are kept as they are."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(state)")}
    if "ledger" not in columns:
        return 5  # made by an earlier step of this migration (format 2's was dropped): already rows
    old = connection.execute("SELECT policy, ledger, ledger_sum, stat_index, steps FROM state WHERE id = 1").fetchone()
    connection.execute("DROP TABLE state")
    _create(connection)
    if old is None:
        return 5
    policy, blob, blob_sum, stat_index, steps = old[0], bytes(old[1]), old[2], old[3], old[4]
    problem = None
    if checksum(blob) != blob_sum:
        problem = "its checksum does not match"
    else:
        try:
            value = state_codec.loads(blob.decode("utf-8", "surrogatepass"))
        except (state_codec.CodecError, UnicodeDecodeError) as error:
            value, problem = None, f"it cannot be read ({error})"
        if problem is None and not isinstance(value, State):
            problem = "it is not a ledger"
    if problem is not None:
        connection.execute(
            "INSERT INTO notes (at, text) VALUES (?, ?)",
            (time.time(), f"session state of format 4 discarded: {problem}; starting a new ledger"),
        )
        return 5
    assert isinstance(value, State)
    rows, _ = state_rows.changes(value, None)
    store = Store(pathlib.Path(), connection, [])
    store.save_state(policy, rows, new_revision(), None if stat_index is None else bytes(stat_index), steps)
    return 5


def new_revision() -> str:
    """A name for what a save wrote, never given twice: a process that holds the ledger it
    saved under this name may trust it for as long as the database names the same."""
    return os.urandom(16).hex()


# Each function moves an open database from its format to the next, inside the opening
# transaction, and returns the format it reached.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], int]] = {
    2: _from_pickled, 3: _with_probes_and_context, 4: _ledger_in_rows,
}


def _probe_row(row: tuple) -> ProbeRow:  # type: ignore[type-arg]
    return ProbeRow(*row[:10], None if row[10] is None else bytes(row[10]))


@attrs.frozen
class SessionSummary:
    """What `ledger sessions list|show` says about one database, read without changing it."""

    path: pathlib.Path
    root: str | None  # None if the database cannot be read
    steps: int
    pending: int
    abandoned: int
    updated_at: float | None
    size: int  # bytes, with the WAL
    problem: str | None = None

    @property
    def ident(self) -> str:
        return self.path.name.split("-", 1)[0]


def sessions_dir(state_dir: os.PathLike[str] | str | None = None) -> pathlib.Path:
    return resolve(state_dir) / "sessions"


def summarize(path: pathlib.Path) -> SessionSummary:
    """Read one database without writing to it (a read-only connection)."""
    size = sum(p.stat().st_size for p in (path, pathlib.Path(str(path) + "-wal")) if p.exists())
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION:
                raise sqlite3.DatabaseError(f"schema version {version}, expected {SCHEMA_VERSION}")
            root = connection.execute("SELECT value FROM meta WHERE key = 'root'").fetchone()
            state = connection.execute("SELECT steps, updated_at FROM state WHERE id = 1").fetchone()
            pending, abandoned = connection.execute(
                "SELECT COUNT(*) - COALESCE(SUM(abandoned), 0), COALESCE(SUM(abandoned), 0) FROM pending"
            ).fetchone()
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        return SessionSummary(path, None, 0, 0, 0, None, size, f"unreadable: {error}")
    return SessionSummary(
        path,
        None if root is None else root[0],
        0 if state is None else state[0],
        pending,
        abandoned,
        None if state is None else state[1],
        size,
    )


def read_state(path: pathlib.Path) -> tuple[StateRow | None, list[Row], list[tuple[float, str]]]:
    """The state row, the ledger's rows and the latest notes of a database, read without
    writing to it (in one read transaction: the rows are those of the state row)."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    try:
        store = Store(path, connection, [])
        connection.execute("BEGIN")
        return store.load_state(), store.load_rows(), store.notes()
    finally:
        connection.close()


def list_sessions(state_dir: os.PathLike[str] | str | None = None) -> list[SessionSummary]:
    directory = sessions_dir(state_dir)
    if not directory.is_dir():
        return []
    return [summarize(path) for path in sorted(directory.glob(f"*{DATABASE_SUFFIX}"))]


def discarded_databases(state_dir: os.PathLike[str] | str | None = None) -> list[pathlib.Path]:
    return sorted(sessions_dir(state_dir).glob(f"*{DATABASE_SUFFIX}{DISCARDED_INFIX}*"))


def remove_database(path: pathlib.Path) -> None:
    """Delete a database with its WAL and shared-memory files."""
    for candidate in (path, pathlib.Path(str(path) + "-wal"), pathlib.Path(str(path) + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            candidate.unlink()
