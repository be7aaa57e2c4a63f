"""The session store's format: plain values under a format number, no pickle, so an upgrade of
Ledger keeps the sessions, and state from an older format is migrated or refused visibly."""

from __future__ import annotations

import enum
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from stored_databases import DATA, install_stored_database

from ledger_impl import fingerprint, state_codec
from ledger_impl.session import DurableSession
from ledger_impl.state_rows import checksum
from ledger_impl.store import SCHEMA_VERSION, database_path
from ledger_spec import Policy, State
from ledger_spec.errors import UnreadableState
from ledger_spec.values import Category, Command

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


def _call(root: Path, state: Path, command: str, call_id: str, output: str | None = None):  # type: ignore[no-untyped-def]
    with DurableSession.open(root, state_dir=state) as session:
        decision = session.decide(command, call_id=call_id)
        if decision.verdict != "reuse":
            session.record(call_id, output if output is not None else "", 0)
            session.run_queued_probes()
    return decision


def test_a_database_of_the_pickled_format_is_migrated_with_a_note(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = install_stored_database(2, workspace, state)
    decision = _call(workspace, state, "cat a.txt", "n1", "alpha\n")
    assert decision.verdict == "allow", "the pickled observation is never trusted"
    assert "format 2" in str(decision.degraded or "") and "starting a new ledger" in str(decision.degraded or "")
    assert _call(workspace, state, "cat a.txt", "n2").verdict == "reuse", "the migrated store works"
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT COUNT(*) FROM pending").fetchone()[0] == 0, "the pickled pending call is gone"


def test_the_stored_ledger_is_plain_json_with_no_pickle(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    _call(workspace, state, "cat a.txt", "t1", "alpha\n")
    with sqlite3.connect(database_path(workspace, state)) as db:
        (policy,) = db.execute("SELECT policy FROM state").fetchone()
        texts = [row[0] for row in db.execute("SELECT value FROM shared_values UNION ALL SELECT value FROM log_entries")]
        (observation,) = db.execute("SELECT value FROM log_entries WHERE log = 'observations'").fetchone()
    assert state_codec.loads(policy) == Policy()
    assert json.loads(observation.decode("utf-8"))["a"][1]["output"] == "alpha\n"
    assert all(b"\x80" not in text for text in texts), "a pickle starts with the PROTO opcode 0x80"


def test_a_store_survives_an_edit_to_any_python_file_of_the_package(workspace: Path, tmp_path: Path) -> None:
    # The package copied, a session written with it, then every .py file of the copy edited: the
    # next process, running the edited code, still serves the stored read.
    copy = tmp_path / "code"
    for package in ("ledger_spec", "ledger_impl"):
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    program = (
        "import sys; from ledger_impl.session import DurableSession\n"
        "s = DurableSession.open(sys.argv[1], state_dir=sys.argv[2])\n"
        "d = s.decide('cat a.txt', call_id=sys.argv[3])\n"
        "print(d.verdict)\n"
        "d.verdict == 'reuse' or (s.record(sys.argv[3], 'alpha\\n', 0), s.run_queued_probes())\n"
    )
    def run(call_id: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", program, str(workspace), str(tmp_path / "state"), call_id],
            capture_output=True, text=True, env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"}, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert run("t1") == "allow"
    for path in copy.rglob("*.py"):
        path.write_text(path.read_text() + "\n# edited by an upgrade\n")
    assert run("t2") == "reuse"


def test_a_row_that_does_not_decode_is_discarded_with_a_note(workspace: Path, tmp_path: Path) -> None:
    # Intact by its checksum, yet naming a class the format does not have: refused, not trusted.
    state = tmp_path / "state"
    _call(workspace, state, "cat a.txt", "t1", "alpha\n")
    forged = '{"a":["Pickled",{}]}'
    with sqlite3.connect(database_path(workspace, state)) as db:
        db.execute("UPDATE log_entries SET value = ?, value_sum = ? WHERE log = 'observations'", (forged, checksum(forged)))
    decision = _call(workspace, state, "cat a.txt", "t2", "alpha\n")
    assert decision.verdict == "allow"
    assert "discarded" in str(decision.degraded or "") and "cannot be read" in str(decision.degraded or "")


def test_state_kept_under_another_policy_is_refused_by_its_stored_policy(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    _call(workspace, state, "cat a.txt", "t1", "alpha\n")
    with DurableSession.open(workspace, state_dir=state, policy=Policy(nudge_cooldown=7)) as session:
        decision = session.decide("cat a.txt", call_id="t2")
    assert decision.verdict == "allow" and "another policy" in str(decision.degraded or "")


@pytest.mark.parametrize(
    "value",
    [[1, 2], {"k": 1}, object(), {1, 2}],
    ids=["list", "dict", "object", "set"],
)
def test_the_codec_refuses_what_it_cannot_write_exactly(value: object) -> None:
    with pytest.raises(state_codec.CodecError):
        state_codec.dumps(value)


@pytest.mark.parametrize(
    "text",
    ['{"t": 1}', '{"a": ["Command", []]}', '{"e": ["Category", "no-such"]}', '{"x": 1}', "[1]", "not json", '{"b": "zz"}'],
)
def test_the_codec_refuses_text_that_is_not_an_encoding(text: str) -> None:
    with pytest.raises(state_codec.CodecError):
        state_codec.loads(text)


def _stored(value: object, shared: list[object] | None = None) -> str:
    """A stored document whose value is the encoded tree `value`: the envelope is right, so a
    refusal can only come from decoding the value itself (the texts above stop at the envelope)."""
    return json.dumps({"shared": shared or [], "value": value})


@pytest.mark.parametrize(
    "tree",
    [
        {}, {"t": [], "s": []}, [1], [1, 2],  # not a one-key object
        {"a": ["NoSuchClass", {}]}, {"e": ["Category", "no_such_member"]},  # KeyError
        {"a": ["LineRange", {"no_such_field": 1}]}, {"a": ["LineRange", []]},  # TypeError; fields not an object
        {"b": "zz"}, {"e": ["Category"]}, {"a": ["LineRange", {"start": 0}]},  # ValueError
    ],
    ids=["empty", "two-keys", "list-of-one", "list", "class", "member", "field", "fields", "hex", "enum-pair", "validator"],
)
def test_a_malformed_stored_value_is_unreadable_state_never_another_error(tree: object) -> None:
    """Only an `UnreadableState` lets the session discard a stored ledger with a note
    (`trusted_ledger`); any other error out of decoding stops the session from opening at all."""
    with pytest.raises(UnreadableState):
        state_codec.loads(_stored(tree))
    with pytest.raises(UnreadableState):
        state_codec.loads(_stored({"t": [tree]}))  # nested: the inner refusal is passed on as it is


def test_a_value_that_is_not_an_encoding_is_quoted_by_its_first_80_characters() -> None:
    tree = ["x" * 200]
    with pytest.raises(state_codec.CodecError) as refused:
        state_codec.loads(_stored(tree))
    assert str(refused.value) == f"not an encoded value: {str(tree)[:80]}"


@pytest.mark.parametrize("kind", ["x", "A", "", "tt"])
@pytest.mark.parametrize("body", [0, [], ["Category", "READ"], ["LineRange", {"start": 1}]], ids=["int", "list", "enum", "class"])
def test_an_unknown_kind_is_refused_whatever_its_body(kind: str, body: object) -> None:
    """A kind is matched exactly: a tag that sorts near a known one is not read as that one."""
    with pytest.raises(state_codec.CodecError, match="unknown kind"):
        state_codec.loads(_stored({kind: body}, shared=["first"]))


@pytest.mark.parametrize("index", [-1, 2, 3, True, False, "0", 0.0, None])
def test_a_reference_to_no_shared_value_is_refused(index: object) -> None:
    """`{"r": i}` names one of the values written before it; a negative, out-of-range, boolean
    or non-integer index would otherwise read some other value, or escape as an IndexError."""
    with pytest.raises(state_codec.CodecError, match="no shared value"):
        state_codec.loads(_stored({"r": index}, shared=["first", "second"]))
    with pytest.raises(state_codec.CodecError, match="no shared value"):
        state_codec.decode({"r": 0})  # decoded with no shared values at all
    assert state_codec.loads(_stored({"t": [{"r": 1}, {"r": 0}]}, shared=["first", "second"])) == ("second", "first")


def test_a_command_that_occurs_twice_is_written_once_and_named_by_its_index() -> None:
    command = Command(text="cat a.txt", normalized="cat a.txt", category=Category.READ)
    other = Command(text="ls", normalized="ls", category=Category.SEARCH)
    value = (command, other, (command,))
    document = json.loads(state_codec.dumps(value))
    assert document["value"] == {"t": [{"r": 0}, {"r": 1}, {"t": [{"r": 0}]}]}
    assert [item["a"][1]["text"] for item in document["shared"]] == ["cat a.txt", "ls"]
    assert state_codec.loads(state_codec.dumps(value)) == value


def test_a_fingerprint_that_occurs_twice_is_written_once(workspace: Path) -> None:
    """A fingerprint holds the environment and the identities of programs and paths, and the
    same one is stored with an observation and again with its probe's record: written once."""
    command = Command(text="cat a.txt", normalized="cat a.txt", category=Category.READ)
    taken = fingerprint.take(workspace, command, {"PATH": os.environ["PATH"], "TZ": "UTC"})
    assert taken is not None
    value = (taken, (taken, command), taken)
    document = json.loads(state_codec.dumps(value))
    assert document["value"] == {"t": [{"r": 0}, {"t": [{"r": 0}, {"r": 1}]}, {"r": 0}]}
    assert [item["a"][0] for item in document["shared"]] == ["Fingerprint", "Command"]
    assert state_codec.loads(state_codec.dumps(value)) == value


def test_an_enum_other_than_the_stored_ones_is_refused_even_under_their_name() -> None:
    """Written as `{"e": ["Category", "READ"]}`, a foreign enum would read back as the spec's own."""
    foreign = enum.Enum("Category", {"READ": "read"})
    with pytest.raises(state_codec.CodecError, match="cannot store"):
        state_codec.dumps(foreign.READ)
    assert state_codec.loads(state_codec.dumps(Category.READ)) is Category.READ


def test_the_codec_round_trips_the_values_a_session_holds(workspace: Path, tmp_path: Path) -> None:
    values = (None, True, 3, 2.5, "é\udcff", b"\x00\xff", (1, ("x",)), frozenset({"b", "a"}), Policy())
    assert state_codec.loads(state_codec.dumps(values)) == values


def test_the_session_decides_with_the_agent_s_environment_not_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent's HOME configures a program git runs on `git diff` (a resident service serves
    # many agents from its own environment): that makes the read a run, never served.
    root, home, clean = tmp_path / "repo", tmp_path / "agent-home", tmp_path / "service-home"
    for directory in (root, home, clean):
        directory.mkdir()
    (home / ".gitconfig").write_text("[diff]\n\texternal = /bin/true\n")
    for name, value in {"HOME": str(clean), "XDG_CONFIG_HOME": str(clean / ".config"), "GIT_CONFIG_NOSYSTEM": "1"}.items():
        monkeypatch.setenv(name, value)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    agent = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    verdicts = []
    with DurableSession.open(root, state_dir=tmp_path / "state") as session:
        session.environment = agent
        for call_id in ("d1", "d2"):
            decision = session.decide("git diff", call_id=call_id)
            verdicts.append(decision.verdict)
            if decision.verdict != "reuse":
                session.record(call_id, "", 0, ran="git diff")
    assert "reuse" not in verdicts, verdicts


def _format_4_ledger() -> State:
    """The ledger kept in `tests/data/session-format-4.sqlite`, decoded as format 4 stored it."""
    with sqlite3.connect(DATA / "session-format-4.sqlite") as db:
        (blob,) = db.execute("SELECT ledger FROM state").fetchone()
    state = state_codec.loads(bytes(blob).decode("utf-8", "surrogatepass"))
    assert isinstance(state, State) and state.observations, "the kept database holds a read"
    return state


def test_a_database_of_format_4_keeps_its_ledger_as_rows(workspace: Path, tmp_path: Path) -> None:
    """Format 4 rewrote the whole ledger at every call; format 5 keeps it as rows. A session the
    current release wrote is read by the new one with everything it held."""
    state = tmp_path / "state"
    path = install_stored_database(4, workspace, state)
    with DurableSession.open(workspace, state_dir=state) as session:
        assert session.snapshot() == _format_4_ledger()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
        assert db.execute("SELECT COUNT(*) FROM log_entries WHERE log = 'observations'").fetchone()[0] == len(
            _format_4_ledger().observations)
        assert db.execute("SELECT COUNT(*) FROM notes WHERE text LIKE '%discarded%'").fetchone()[0] == 0


def test_a_database_of_format_4_made_before_the_context_table_gains_it(workspace: Path, tmp_path: Path) -> None:
    """The context table came within format 4, so a format-4 database can lack it (the kept
    one does): Ledger at format 4 failed there with "no such table: context" at the first
    delivery. The migration to 5 creates every table the format has."""
    state = tmp_path / "state"
    path = install_stored_database(4, workspace, state)
    with sqlite3.connect(path) as db:
        assert "context" not in {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    with DurableSession.open(workspace, state_dir=state) as session:
        session.context.deliver("s", 0, full=True)
        assert session.context.current().delivered(0) is not None


def test_a_damaged_ledger_of_format_4_is_dropped_by_the_migration_with_a_note(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = install_stored_database(4, workspace, state)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE state SET ledger_sum = ?", ("0" * 64,))
    decision = _call(workspace, state, "cat a.txt", "d1", "alpha\n")
    assert decision.verdict == "allow"
    assert "format 4 discarded: its checksum does not match" in str(decision.degraded or "")
    with DurableSession.open(workspace, state_dir=state) as session:
        assert len(session.snapshot().observations) == 1, "a new ledger, holding only the read after it"


def test_a_database_of_format_3_gains_the_context_table_and_keeps_its_ledger(workspace: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = install_stored_database(4, workspace, state)
    with sqlite3.connect(path) as db:  # as Ledger with format 3 left it: no probes, no context
        db.execute("DROP TABLE probes")
        db.execute("PRAGMA user_version = 3")
    with DurableSession.open(workspace, state_dir=state) as session:
        assert session.snapshot() == _format_4_ledger(), "the ledger of format 3 is kept"
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT COUNT(*) FROM context").fetchone()[0] == 0, "no delivery is known after the migration"
    with DurableSession.open(workspace, state_dir=state) as session:
        session.context.deliver("s", 0, full=True)
        assert session.context.current().delivered(0) is not None, "the migrated table is written and read"


@pytest.mark.parametrize(("category", "may_write"), [(Category.READ, False), (Category.EDIT, True)])
def test_a_pending_call_stored_before_may_write_existed_decodes_it_from_its_command(
    category: Category, may_write: bool
) -> None:
    # A state written before `Pending.may_write` holds pending calls without the field: a
    # writer must still block Reuse after the upgrade, a read must not.
    from ledger_spec import INITIAL, Allow, start

    text = "cat a.py" if category is Category.READ else "edit a.py"
    state = start(INITIAL, "call", Command(text, text, category), Allow())
    document = json.loads(state_codec.dumps(state))

    def without_may_write(value: object) -> object:
        if isinstance(value, dict):
            return {key: without_may_write(item) for key, item in value.items() if key != "may_write"}
        if isinstance(value, list):
            return [without_may_write(item) for item in value]
        return value

    older = json.dumps(without_may_write(document))
    assert "may_write" in state_codec.dumps(state) and "may_write" not in older
    assert state_codec.loads(older).pending[0].may_write is may_write
