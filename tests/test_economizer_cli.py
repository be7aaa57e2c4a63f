"""`ledger economize`: feed, show, manual, mask, guard, prove; bad input exits 2, state intact."""

from __future__ import annotations

import json
import pathlib
import sqlite3
import subprocess
import sys

import pytest

from economizer.store import Store
from ledger_cli.main import main


def row(task_id: str, commands: list[tuple[str, str, int]], resolved: bool = True, repo: str = "owner/repo") -> dict:
    return {
        "instance_id": task_id,
        "task_repo": repo,
        "commands": [c for c, _, _ in commands],
        "outputs": [o for _, o, _ in commands],
        "returncodes": [r for _, _, r in commands],
        "resolved": resolved,
        "instance_cost": 0.1,
    }


PASSING = [("python tests/runtests.py app", "OK", 0), ("ls", "", 0)]


def write(path: pathlib.Path, rows: list[dict]) -> pathlib.Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def snapshot(state: pathlib.Path) -> dict:
    """The stored state and task rows (what 'intact' means), or {} if nothing was stored."""
    out = {}
    for db in sorted(state.rglob("*.sqlite3")):
        connection = sqlite3.connect(db)
        out[db.name] = (connection.execute("SELECT value FROM meta").fetchall(), connection.execute("SELECT * FROM tasks").fetchall())
        connection.close()
    return out


@pytest.fixture
def fed(tmp_path: pathlib.Path) -> pathlib.Path:
    state = tmp_path / "state"
    rows = [row(f"owner__repo-{i}", PASSING) for i in range(1, 9)]
    assert main(["economize", "feed", str(write(tmp_path / "a.jsonl", rows)), "--state-dir", str(state)]) == 0
    return state


def test_feed_show_manual_mask(fed: pathlib.Path, capsys) -> None:
    capsys.readouterr()
    assert main(["economize", "show", "owner/repo", "--state-dir", str(fed), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["tasks"] == 8 and shown["budget"] == 3
    skill = shown["skills"]["test-runner-python-tests-runtests-py"]
    assert skill["status"] == "confirmed" and skill["citations"][:2] == ["owner__repo-1", "owner__repo-2"]
    assert main(["economize", "manual", "owner/repo", "--state-dir", str(fed), "--prompt", "Fix it"]) == 0
    assert capsys.readouterr().out.endswith("Fix it\n")
    assert main(["economize", "mask", "owner/repo", "--state-dir", str(fed), "--harness", "codex"]) == 0
    assert capsys.readouterr().out == "\n"  # bash only, and it is core


def test_mask_formats(tmp_path: pathlib.Path, capsys) -> None:
    state = tmp_path / "state"
    rows = [row(f"owner__repo-{i}", PASSING) for i in range(1, 5)]
    assert main(["economize", "feed", str(write(tmp_path / "a.jsonl", rows)), "--state-dir", str(state), "--catalog", "bash,WebFetch,NotebookEdit"]) == 0
    expected = {"claude": '--disallowedTools "NotebookEdit,WebFetch"', "copilot": "--excluded-tools NotebookEdit,WebFetch",
                "codex": '[features]\n"NotebookEdit" = false\n"WebFetch" = false'}
    for harness, text in expected.items():
        capsys.readouterr()
        assert main(["economize", "mask", "owner/repo", "--state-dir", str(state), "--harness", harness]) == 0
        assert capsys.readouterr().out.strip() == text


def test_guard_signal_on_a_prefix(fed: pathlib.Path, tmp_path: pathlib.Path, capsys) -> None:
    loop = [("sed -i 's/a/b/' a.py", "E   AssertionError: 1", 1)] * 30
    capsys.readouterr()
    assert main(["economize", "guard", "owner/repo", str(write(tmp_path / "p.jsonl", [row("x-1", loop, False)])), "--state-dir", str(fed)]) == 0
    assert json.loads(capsys.readouterr().out)["action"] == "stop"  # B = 3: forced redirect at 8, stop at 13


def test_prove(capsys) -> None:
    assert main(["economize", "prove"]) == 0
    assert "all theorems as expected" in capsys.readouterr().out


@pytest.mark.parametrize(
    "bad, message",
    [
        ('{"instance_id": "owner__repo-9"}\n', "missing field"),
        ("not json\n", "not JSON"),
        (json.dumps(row("owner__repo-9", PASSING)).replace('"returncodes": [0, 0]', '"returncodes": [0]') + "\n", "differ in length"),
        (json.dumps(row("owner__repo-1", PASSING)) + "\n", "already fed"),
    ],
)
def test_bad_trajectory_exits_2_and_leaves_state_intact(fed: pathlib.Path, tmp_path: pathlib.Path, capsys, bad: str, message: str) -> None:
    before = snapshot(fed)
    good = json.dumps(row("owner__repo-10", PASSING)) + "\n"
    path = tmp_path / "bad.jsonl"
    path.write_text(good + bad)  # the good line before the bad one is not fed either
    capsys.readouterr()
    assert main(["economize", "feed", str(path), "--state-dir", str(fed)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert snapshot(fed) == before


@pytest.mark.parametrize("pattern", ["(a+)+$", "([a-z]+)*x", "[oops", "(x)\\1"])
def test_catastrophic_regex_from_a_proposer_file_exits_2(fed: pathlib.Path, tmp_path: pathlib.Path, capsys, pattern: str) -> None:
    before = snapshot(fed)
    proposals = tmp_path / "proposals.json"
    proposals.write_text(json.dumps({"skills": [{"id": "bad-one", "injection": "x", "detector": {"scope": "ran_tests", "confirm": pattern}}]}))
    path = write(tmp_path / "more.jsonl", [row("owner__repo-9", PASSING)])
    capsys.readouterr()
    assert main(["economize", "feed", str(path), "--state-dir", str(fed), "--proposals", str(proposals)]) == 2
    err = capsys.readouterr().err
    assert "confirm detector rejected" in err and "bad-one" in err
    assert snapshot(fed) == before


def test_a_locked_database_exits_2_and_leaves_state_intact(fed: pathlib.Path, tmp_path: pathlib.Path, capsys) -> None:
    before = snapshot(fed)
    holder = sqlite3.connect(next(fed.rglob("owner__repo.sqlite3")), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        path = write(tmp_path / "more.jsonl", [row("owner__repo-9", PASSING)])
        capsys.readouterr()
        assert main(["economize", "feed", str(path), "--state-dir", str(fed), "--busy-timeout-ms", "100"]) == 2
        assert "locked by another writer" in capsys.readouterr().err
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert snapshot(fed) == before


def test_a_failed_feed_of_a_new_repository_still_reads_feed_it_first(fed: pathlib.Path, tmp_path: pathlib.Path, capsys) -> None:
    """A feed of a new repository and a locked one fails as a whole; the new one must not then
    show "0 tasks" as if it had been fed, but still ask to be fed first."""
    holder = sqlite3.connect(next(fed.rglob("owner__repo.sqlite3")), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        path = write(tmp_path / "two.jsonl", [row("aaa__new-1", PASSING, repo="aaa/new"), row("owner__repo-9", PASSING)])
        assert main(["economize", "feed", str(path), "--state-dir", str(fed), "--busy-timeout-ms", "100"]) == 2
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    capsys.readouterr()
    for command in ("show", "manual", "mask"):
        assert main(["economize", command, "aaa/new", "--state-dir", str(fed)]) == 2
        assert "feed it first" in capsys.readouterr().err


def test_concurrent_writers_serialize(fed: pathlib.Path, tmp_path: pathlib.Path) -> None:
    paths = [write(tmp_path / f"c{i}.jsonl", [row(f"owner__repo-{20 + i}", PASSING)]) for i in range(3)]
    procs = [
        subprocess.Popen([sys.executable, "-m", "ledger_cli.main", "economize", "feed", str(p), "--state-dir", str(fed)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for p in paths
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    with Store("owner/repo", fed) as store:
        assert store.load().index == 11
        assert sorted(r["index"] for r in store.records()) == list(range(1, 12))


def test_a_crash_inside_the_transaction_writes_nothing(fed: pathlib.Path) -> None:
    before = snapshot(fed)

    def crash(controller):
        controller.index += 100
        raise KeyboardInterrupt

    with Store("owner/repo", fed) as store, pytest.raises(KeyboardInterrupt):
        store.transaction(crash)
    assert snapshot(fed) == before


def test_default_state_dir_is_outside_the_workspace(tmp_path: pathlib.Path, monkeypatch) -> None:
    from economizer.store import database_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert database_path("owner/repo") == tmp_path / "xdg" / "ledger" / "economizer" / "owner__repo.sqlite3"


def test_evaluate_writes_table_and_json(tmp_path: pathlib.Path, capsys) -> None:
    rows = [row(f"owner__repo-{i}", PASSING, resolved=i % 3 != 0) for i in range(1, 11)]
    out = tmp_path / "out.json"
    assert main(["economize", "evaluate", str(write(tmp_path / "c.jsonl", rows)), "--json", str(out), "--no-grid"]) == 0
    table = capsys.readouterr().out
    assert "FALSE STOPS 0" in table and "test-runner-python-tests-runtests-py" in table
    report = json.loads(out.read_text())
    assert report["guard"]["failed_runs"] == 3 and report["guard"]["passed_runs"] == 7
    assert report["skills"]["per_repository"]["owner/repo"]["skills"][0]["citations"][:2] == ["owner__repo-1", "owner__repo-2"]


def test_evaluate_on_a_missing_corpus_exits_2(tmp_path: pathlib.Path, capsys) -> None:
    assert main(["economize", "evaluate", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_a_valid_proposer_file_is_used(tmp_path: pathlib.Path, capsys) -> None:
    proposals = tmp_path / "p.json"
    proposals.write_text(json.dumps({"skills": [{
        "id": "ls-works", "injection": "ls lists files.", "high_stakes": False, "cite": ["owner__repo-1", "owner__repo-2"],
        "detector": {"scope": {"regex": "^ls", "target": "commands"}, "confirm": {"command": "^ls", "exit_zero": True}},
    }]}))
    rows = [row(f"owner__repo-{i}", PASSING) for i in range(1, 5)]
    state = tmp_path / "state"
    assert main(["economize", "feed", str(write(tmp_path / "a.jsonl", rows)), "--state-dir", str(state), "--proposals", str(proposals)]) == 0
    capsys.readouterr()
    assert main(["economize", "manual", "owner/repo", "--state-dir", str(state)]) == 0
    assert "- ls lists files." in capsys.readouterr().out


def test_an_already_fed_task_in_a_second_repository_writes_neither(fed: pathlib.Path, tmp_path: pathlib.Path, capsys) -> None:
    before = snapshot(fed)
    rows = [row("other__repo-1", PASSING, repo="other/repo"), row("owner__repo-3", PASSING)]
    assert main(["economize", "feed", str(write(tmp_path / "two.jsonl", rows)), "--state-dir", str(fed)]) == 2
    assert "already fed" in capsys.readouterr().err
    assert {k: v for k, v in snapshot(fed).items() if v[0]} == before


@pytest.mark.parametrize("command", ["show", "manual", "mask"])
def test_reading_an_unknown_repository_exits_2_and_creates_nothing(tmp_path: pathlib.Path, capsys, command: str) -> None:
    assert main(["economize", command, "never/fed", "--state-dir", str(tmp_path)]) == 2
    assert "feed it first" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert main(["economize", command, "not a repo!", "--state-dir", str(tmp_path)]) == 2


def test_guard_on_a_first_task_needs_no_state(tmp_path: pathlib.Path, capsys) -> None:
    loop = [("sed -i 's/a/b/' a.py", "E   AssertionError: 1", 1)] * 30
    path = write(tmp_path / "p.jsonl", [row("x-1", loop, False)])
    capsys.readouterr()
    assert main(["economize", "guard", "owner/repo", str(path), "--state-dir", str(tmp_path / "s")]) == 0
    assert json.loads(capsys.readouterr().out) == {"action": "continue", "turn": 30}  # no B, judge never stuck
    assert not (tmp_path / "s").exists()


SLOW_LINE = "a" * 2000  # `a*a*a*a*b` searched in one such line backtracks for hours


def test_a_slow_regex_from_a_proposer_file_is_cut_off_exits_2_and_leaves_state_intact(fed: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """A regex the static check admits can still backtrack for hours on a long line: the CLI's
    feed runs detectors in a killable worker, so it ends with one line instead of hanging
    (with the write lock held), and the proposals file is refused like an inadmissible one."""
    before = snapshot(fed)
    proposals = tmp_path / "slow.json"
    proposals.write_text(json.dumps({"skills": [{
        "id": "slow-one", "injection": "x.", "cite": ["owner__repo-9", "owner__repo-8"],
        "detector": {"scope": "ran_tests", "confirm": {"regex": "a*a*a*a*b"}},
    }]}))
    path = write(tmp_path / "next.jsonl", [row("owner__repo-9", [*PASSING, (f"echo {SLOW_LINE}", SLOW_LINE, 0)])])
    done = subprocess.run(
        [sys.executable, "-m", "ledger_cli.main", "economize", "feed", str(path), "--state-dir", str(fed),
         "--proposals", str(proposals), "--detector-timeout-s", "0.5"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert "slow-one" in done.stderr and "did not finish within 0.5s" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert snapshot(fed) == before


@pytest.mark.parametrize("damage", ["bad json", "not a database"])
@pytest.mark.parametrize("command", [["feed", "MORE"], ["show", "owner/repo"], ["manual", "owner/repo"], ["mask", "owner/repo"], ["guard", "owner/repo", "MORE"]])
def test_an_unreadable_state_exits_2_in_one_line_and_is_left_as_it_was(fed: pathlib.Path, tmp_path: pathlib.Path, capsys, damage: str, command: list[str]) -> None:
    database = next(fed.rglob("owner__repo.sqlite3"))
    if damage == "bad json":
        connection = sqlite3.connect(database)
        connection.execute("UPDATE meta SET value = '{not json' WHERE key = 'state'")
        connection.commit()
        connection.close()
    else:
        for leftover in database.parent.glob("owner__repo.sqlite3-*"):
            leftover.unlink()
        database.write_bytes(b"garbage " * 600)
    stored = database.read_bytes()
    more = write(tmp_path / "more.jsonl", [row("owner__repo-9", PASSING)])
    capsys.readouterr()
    assert main(["economize", *[str(more) if a == "MORE" else a for a in command], "--state-dir", str(fed)]) == 2
    err = capsys.readouterr().err
    assert "cannot be read" in err and err.count("\n") == 1 and "Traceback" not in err
    assert database.read_bytes() == stored


def test_a_locked_second_repository_leaves_the_first_unwritten(fed: pathlib.Path, tmp_path: pathlib.Path, capsys) -> None:
    """One feed of two repositories is all or nothing: the second one's lock is taken before
    the first one commits, so a busy second database cannot leave the first one fed. (Locks
    are taken in repository order, so the busy one is named to come second.)"""
    assert main(["economize", "feed", str(write(tmp_path / "o.jsonl", [row("zzz__repo-1", PASSING, repo="zzz/repo")])), "--state-dir", str(fed)]) == 0
    before = snapshot(fed)
    holder = sqlite3.connect(next(fed.rglob("zzz__repo.sqlite3")), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        rows = [row("owner__repo-9", PASSING), row("zzz__repo-2", PASSING, repo="zzz/repo")]
        capsys.readouterr()
        assert main(["economize", "feed", str(write(tmp_path / "two.jsonl", rows)), "--state-dir", str(fed), "--busy-timeout-ms", "100"]) == 2
        assert "locked by another writer" in capsys.readouterr().err
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert snapshot(fed) == before


def test_economizer_and_sessions_share_one_state_root_and_one_connection_policy(tmp_path: pathlib.Path, monkeypatch) -> None:
    """Issue 12 item 4: the economizer's databases sit under Ledger's state root, next to the
    session databases, and `--state-dir D` names that root for both commands."""
    from economizer.store import database_path
    from ledger_impl.store import sessions_dir

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert database_path("owner/repo").parent.parent == sessions_dir().parent == tmp_path / "xdg" / "ledger"
    assert database_path("owner/repo", tmp_path / "d").parent.parent == sessions_dir(tmp_path / "d").parent
    with Store("owner/repo", tmp_path / "d", busy_timeout_ms=1234) as store:
        assert store.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.connection.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert store.connection.execute("PRAGMA busy_timeout").fetchone()[0] == 1234
        assert store.connection.isolation_level is None  # explicit BEGIN IMMEDIATE only



FEEDER = """
import os, signal, sqlite3, sys, pathlib
from economizer.codec import read_jsonl
from economizer.protocols import default_controllers
from economizer.store import Store
state, path, die_at = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
rows = read_jsonl(path.read_text(), str(path))
seen = []
def trace(statement):  # kill -9 this process just before its die_at-th SQL statement runs
    seen.append(statement)
    if len(seen) == die_at:
        os.kill(os.getpid(), signal.SIGKILL)
connect = sqlite3.connect
def traced(*args, **kwargs):
    connection = connect(*args, **kwargs)
    connection.set_trace_callback(trace)
    return connection
sqlite3.connect = traced
for repository, trajectory, _ in rows:
    with Store(repository, state) as store:
        if trajectory.task_id not in store.fed_ids():
            store.transaction(lambda controller: controller.feed(trajectory, default_controllers()))
print(len(seen))
"""


def test_a_feeder_killed_before_any_statement_leaves_a_consistent_state(tmp_path: pathlib.Path) -> None:
    """kill -9 before each SQL statement of a two-task stream in turn (one transaction per
    task): the database is intact, the stored state counts exactly the stored task rows, and
    a second feeder finishes the stream with every task once."""
    path = write(tmp_path / "two.jsonl", [row("owner__repo-1", PASSING), row("owner__repo-2", PASSING, resolved=False)])
    dry = subprocess.run([sys.executable, "-c", FEEDER, str(tmp_path / "dry"), str(path), "0"], capture_output=True, text=True, timeout=120)
    statements = int(dry.stdout)
    assert statements >= 12  # per task: open, fed_ids, BEGIN, SELECT, 2 INSERTs, COMMIT
    for die_at in range(1, statements + 1):
        state = tmp_path / f"state-{die_at}"
        killed = subprocess.run([sys.executable, "-c", FEEDER, str(state), str(path), str(die_at)], capture_output=True, text=True, timeout=120)
        assert killed.returncode == -9, killed.stderr
        database = state / "economizer" / "owner__repo.sqlite3"
        if database.exists():
            connection = sqlite3.connect(database)
            assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            connection.close()
            with Store("owner/repo", state) as store:
                indices = [r["index"] for r in store.records()]
                assert indices == list(range(1, len(indices) + 1))
                assert store.load().index == len(indices), f"killed before statement {die_at}"
        finisher = subprocess.run([sys.executable, "-c", FEEDER, str(state), str(path), "0"], capture_output=True, text=True, timeout=120)
        assert finisher.returncode == 0, finisher.stderr
        with Store("owner/repo", state) as store:
            assert [r["task_id"] for r in store.records()] == ["owner__repo-1", "owner__repo-2"]
            assert store.load().index == 2
