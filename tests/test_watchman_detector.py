"""The Watchman-backed session detector, against the real `watchman` binary (no mocks).

Each test gets a daemon of its own (its socket, state and log in a temporary state directory,
outside the watched tree) and stops it at the end. What must hold: changes are reported by
key; every answer that cannot vouch for everything since the stored clock (no clock, a daemon
killed or stopped, a recrawl, a watch started over, a damaged baseline) is unknown scope, with
the reason; and nothing is ever written into the root.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from ledger_impl.detectors import SESSION_DETECTOR_VARIABLE, session_detector, watchman
from ledger_impl.detectors.baseline import unusable
from ledger_spec.degraded import Cause
from ledger_impl.detectors.stat_index import StatIndex
from ledger_impl.service.resident import ResidentWatchman
from ledger_impl.session import DurableSession
from ledger_properties import ground_truth
from ledger_properties.counterexample import load
from ledger_properties.replay import replay

pytestmark = pytest.mark.skipif(
    not watchman.available(), reason="no watchman binary on PATH (.ci/run installs Debian's watchman package)"
)


@pytest.fixture
def layout(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """A git workspace `parent/ws` (with `.git`, where Watchman would put its cookies if it
    watched the root) and a state directory beside `parent`."""
    root = tmp_path / "parent" / "ws"
    (root / "src").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "src" / "b.txt").write_text("beta\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root, tmp_path / "state"


@pytest.fixture
def durable(layout: tuple[pathlib.Path, pathlib.Path]):
    detector = watchman.WatchmanIndex(layout[1])
    yield detector
    detector.daemon.shutdown()


@pytest.fixture(params=["durable", "resident"])
def index(request, layout: tuple[pathlib.Path, pathlib.Path]):
    """The index as a hook process uses it (the baseline encoded into the blob), and as `ledger
    serve` does (`ResidentWatchman`: the baseline in memory, directories looked at only where
    inotify says they changed): every test below holds for both."""
    durable = watchman.WatchmanIndex(layout[1])
    detector = durable if request.param == "durable" else ResidentWatchman(durable)
    yield detector
    durable.daemon.shutdown()
    if request.param == "resident":
        detector.close()


def poll(index: watchman.WatchmanIndex | ResidentWatchman, root: pathlib.Path, blob: bytes | None):
    changes, new_blob, problem = index.changes_since(root, blob)
    return changes, new_blob, problem


def gone(pid: int) -> None:
    """Wait until the killed daemon `pid` has exited (a kill is delivered asynchronously)."""
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"watchman {pid} still alive")


def started(index: watchman.WatchmanIndex | ResidentWatchman, root: pathlib.Path) -> bytes:
    """A baseline after the first (unknown-scope) call and one quiet call."""
    changes, blob, problem = poll(index, root, None)
    assert changes.unknown and problem == unusable(Cause.BASELINE_MISSING, "Watchman clock")
    changes, blob, problem = poll(index, root, blob)
    assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)
    assert blob is not None
    return blob


def test_changes_are_reported_by_key(index, layout):
    root, _ = layout
    blob = started(index, root)
    (root / "src" / "b.txt").write_text("BETA\n")
    changes, blob, _ = poll(index, root, blob)
    assert not changes.unknown and {"src/b.txt", "src"} <= changes.paths and "a.txt" not in changes.paths
    (root / "a.txt").rename(root / "c.txt")
    changes, blob, _ = poll(index, root, blob)
    assert {"a.txt", "c.txt"} <= changes.paths
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    changes, blob, _ = poll(index, root, blob)
    assert ".git/index" in changes.paths  # a VCS directory inside the root is watched like any other
    changes, blob, _ = poll(index, root, blob)  # the object directories git made, reported once more
    changes, blob, problem = poll(index, root, blob)
    assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)


def test_a_new_hard_link_reports_every_name(index, layout):
    # `ln` raises an event for the new name only; the old name's link count and ctime change too.
    root, _ = layout
    blob = started(index, root)
    os.link(root / "src" / "b.txt", root / "hard.txt")
    changes, blob, _ = poll(index, root, blob)
    assert {"hard.txt", "src/b.txt"} <= changes.paths
    (root / "hard.txt").unlink()  # the other name's link count drops back, with no event of its own
    changes, blob, _ = poll(index, root, blob)
    assert {"hard.txt", "src/b.txt"} <= changes.paths


def test_a_hard_link_to_a_symbolic_link_reports_both_names(index, layout):
    root, _ = layout
    os.symlink("a.txt", root / "link")
    blob = started(index, root)
    os.link(root / "link", root / "link2", follow_symlinks=False)
    changes, blob, _ = poll(index, root, blob)
    assert {"link", "link2"} <= changes.paths


def test_links_are_counted_on_disk_after_a_lost_baseline(index, layout):
    """Watchman's own link count of an old name goes stale when a new link is made (no event
    for it). A baseline taken afresh (after an unknown-scope answer, which keeps none) must
    still know the old name is linked: the dev-profile hunt lost one that way under load."""
    root, _ = layout
    blob = started(index, root)
    os.link(root / "a.txt", root / "x.txt")
    _, blob, _ = poll(index, root, blob)
    _, blob, _ = poll(index, root, None)  # a new baseline, from a Watchman view where a.txt has one link
    (root / "tmp").write_text("replaced\n")
    os.replace(root / "tmp", root / "x.txt")  # as `sed -i x.txt` does: a.txt loses its second name
    changes, blob, _ = poll(index, root, blob)
    assert "a.txt" in changes.paths and "x.txt" in changes.paths


def test_the_hunts_hard_link_counterexample_is_fixed():
    """Found by `ledger check-detector` (dev profile) before links were tracked; the file
    reproduces against `unsound.watchman_by_name` (tests/test_counterexamples.py)."""
    path = pathlib.Path(__file__).parent.parent / "counterexamples" / "watchman-by-name-detector-covers-changes-d4b01bc6ba.json"
    result = replay(load(path), watchman.make)
    assert result.violation is None, result.violation


def test_a_name_watchman_does_not_report_still_reports_its_directory(index, layout):
    """A name Watchman knows as deleted, created and deleted again before its thread looks (git
    taking and rolling back a lock file), is not reported at all; its directory's mtime moved.
    The daemon is paused to make that ordering certain."""
    root, _ = layout
    blob = started(index, root)
    lock = root / "src" / "index.lock"
    lock.write_text("1")
    _, blob, _ = poll(index, root, blob)
    lock.unlink()
    _, blob, _ = poll(index, root, blob)
    pid = index.daemon.pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        lock.write_text("2")
        lock.unlink()
    finally:
        os.kill(pid, signal.SIGCONT)
    changes, blob, _ = poll(index, root, blob)
    assert "src" in changes.paths, "the directory's listing changed"


def test_a_new_directory_is_reported_again_once_then_not(index, layout):
    root, _ = layout
    blob = started(index, root)
    (root / "new").mkdir()
    changes, blob, _ = poll(index, root, blob)
    assert "new" in changes.paths
    changes, blob, _ = poll(index, root, blob)  # first seen after the query: reported once more
    assert changes.paths == {"new"}
    changes, blob, problem = poll(index, root, blob)
    assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)


def test_the_roots_own_metadata_is_compared(index, layout):
    root, _ = layout
    blob = started(index, root)
    os.chmod(root, 0o700)
    changes, blob, _ = poll(index, root, blob)
    assert changes.unknown or changes.paths, "a chmod of the root must not read as nothing changed"


def test_nothing_is_written_into_the_root(index, layout):
    root, _ = layout
    before = ground_truth.look(root)
    blob = started(index, root)
    for _ in range(3):
        _, blob, _ = poll(index, root, blob)
    after = ground_truth.look(root)
    assert after.nodes == before.nodes  # the root's and .git's mtimes included: no cookie landed there
    assert not list((root.parent).glob(".watchman-cookie-*")), "cookies are removed once seen"


def test_a_killed_daemon_is_unknown_scope_then_recovers(index, layout):
    root, _ = layout
    blob = started(index, root)
    pid = index.daemon.pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    gone(pid)
    (root / "a.txt").write_text("written while no daemon watched\n")
    changes, blob, problem = poll(index, root, blob)  # a new daemon answers: its clock is not ours
    assert changes.unknown and problem == unusable(Cause.WATCHMAN_FRESH_INSTANCE)
    assert index.daemon.pid() != pid
    changes, blob, problem = poll(index, root, blob)
    assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)


def test_an_unreachable_daemon_is_unknown_scope(index, layout, monkeypatch):
    root, _ = layout
    blob = started(index, root)
    pid = index.daemon.pid()
    os.kill(pid, signal.SIGKILL)
    gone(pid)
    monkeypatch.setenv("PATH", "/nonexistent")  # no binary to start a new one with
    changes, new_blob, problem = poll(index, root, blob)
    assert changes.unknown and new_blob is None and "no watchman binary" in str(problem)
    monkeypatch.undo()
    changes, _, problem = poll(index, root, new_blob)  # no baseline kept: unknown once more
    assert changes.unknown and problem == unusable(Cause.BASELINE_MISSING, "Watchman clock")


def test_a_daemon_that_does_not_answer_is_unknown_scope(index, layout, monkeypatch):
    root, _ = layout
    blob = started(index, root)
    pid = index.daemon.pid()
    monkeypatch.setattr(watchman, "ANSWER_TIMEOUT_S", 0.5)
    os.kill(pid, signal.SIGSTOP)
    try:
        changes, new_blob, problem = poll(index, root, blob)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert changes.unknown and new_blob is None and "did not answer" in str(problem)


def test_a_recrawl_is_unknown_scope(index, layout):
    root, _ = layout
    blob = started(index, root)
    index.daemon.commands(["debug-recrawl", str(root.parent)])
    changes, blob, problem = poll(index, root, blob)
    assert changes.unknown and "Recrawled" in str(problem)
    changes, blob, problem = poll(index, root, blob)  # the same warning again: nothing new lost
    assert (changes.unknown, problem) == (False, None)


def test_a_watch_started_over_is_a_fresh_instance(index, layout):
    root, _ = layout
    blob = started(index, root)
    watchman.WatchmanIndex(layout[1]).forget(root)  # the same daemon, as another process
    (root / "a.txt").write_text("written while unwatched\n")
    changes, _, problem = poll(index, root, blob)
    assert changes.unknown and problem == unusable(Cause.WATCHMAN_FRESH_INSTANCE)


@pytest.mark.parametrize(
    "damage",
    [
        lambda blob: blob[:-5],
        lambda blob: blob.replace(b'"format": 1', b'"format": 99'),
        lambda blob: json.dumps({**json.loads(blob), "root": "/elsewhere"}).encode(),
        lambda blob: json.dumps({**json.loads(blob), "links": {"x": [1, 2]}}).encode(),
        lambda blob: json.dumps({k: v for k, v in json.loads(blob).items() if k != "dirs"}).encode(),
    ],
)
def test_a_damaged_baseline_is_unknown_scope(durable, layout, damage):
    root, _ = layout
    blob = started(durable, root)
    changes, new_blob, problem = poll(durable, root, damage(blob))
    assert changes.unknown and "baseline" in str(problem) and new_blob is not None


def test_a_state_directory_inside_the_root_is_refused(layout):
    root, _ = layout
    with pytest.raises(ValueError, match="inside the workspace"):
        watchman.WatchmanIndex(root / ".ledger").changes_since(root, None)
    assert not (root / ".ledger").exists()


def test_sessions_choose_watchman_when_it_is_on_path(layout, monkeypatch):
    _, state = layout
    monkeypatch.delenv(SESSION_DETECTOR_VARIABLE)
    assert isinstance(session_detector(state), watchman.WatchmanIndex)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert isinstance(session_detector(state), StatIndex)
    monkeypatch.setenv(SESSION_DETECTOR_VARIABLE, "watchman")
    assert isinstance(session_detector(state), watchman.WatchmanIndex)
    monkeypatch.setenv(SESSION_DETECTOR_VARIABLE, "inotify")
    with pytest.raises(ValueError, match="choose one of"):
        session_detector(state)


def test_a_durable_session_reuses_and_sees_edits_through_watchman(layout, monkeypatch):
    root, state = layout
    monkeypatch.delenv(SESSION_DETECTOR_VARIABLE)
    try:
        with DurableSession.open(root, state_dir=state) as session:
            assert session.detector.name == "watchman"
            assert session.decide("cat a.txt", call_id="1").verdict == "allow"
            session.record("1", "alpha\n", 0)
            session.run_queued_probes()  # what the hook's detached probe does after the answer
            served = session.decide("cat a.txt", call_id="2")
            assert (served.verdict, served.output) == ("reuse", "alpha\n")
            (root / "a.txt").write_text("changed\n")
            assert session.decide("cat a.txt", call_id="3").verdict == "allow"
            session.record("3", "changed\n", 0)
            os.kill(watchman.Daemon(state / "watchman").pid(), signal.SIGKILL)
            again = session.decide("cat a.txt", call_id="4")
            assert again.verdict == "allow" and "fresh instance" in str(again.degraded)
    finally:
        watchman.Daemon(state / "watchman").shutdown()


def test_a_hook_process_starting_the_daemon_returns_at_once(layout, monkeypatch):
    """The daemon a hook starts must not inherit the hook's stdout: the agent reads it to EOF."""
    root, state = layout
    monkeypatch.delenv(SESSION_DETECTOR_VARIABLE)
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "cat a.txt"},
               "tool_use_id": "t1", "cwd": str(root)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ledger_cli.main", "hook", "claude", "--root", str(root), "--state-dir", str(state)],
            input=json.dumps(payload), capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 0 and "internal error" not in done.stdout + done.stderr
        assert watchman.Daemon(state / "watchman").pid() is not None, "the hook did not start Watchman"
    finally:
        watchman.Daemon(state / "watchman").shutdown()


def test_the_runtime_detector_reports_and_cleans_up(layout):
    """`make()` (what `ledger check-detector` loads): reports since the baseline it handed
    back, then a close that stops its daemon and removes its state directory."""
    root, _ = layout
    detector = watchman.make()
    state, daemon = detector.state_dir, detector.daemon
    try:
        _, blob, _ = detector.changes_since(root, None)
        unchanged, blob, _ = detector.changes_since(root, blob)
        assert unchanged.paths == frozenset()
        (root / "a.txt").write_text("edited\n")
        assert "a.txt" in detector.changes_since(root, blob)[0].paths
    finally:
        detector.close()
    assert not state.exists()
    with pytest.raises(watchman.WatchmanError):
        daemon.commands(["version"], spawn=False)


def test_the_resident_index_trusts_only_its_own_latest_token(layout):
    """`ledger serve` stores a token instead of the baseline: a token of another process (a
    restart) or an older one of its own (a transaction rolled back after the report) must be
    unknown scope; a real baseline that the in-process fallback hook wrote is used as stored."""
    root, state = layout
    durable = watchman.WatchmanIndex(state)
    resident, restarted = ResidentWatchman(durable), ResidentWatchman(durable)
    try:
        token = started(resident, root)
        _, newer, _ = poll(resident, root, token)
        changes, _, problem = poll(resident, root, token)
        assert changes.unknown and problem == unusable(Cause.WRITTEN_ELSEWHERE)
        (root / "a.txt").write_text("while restarting\n")
        changes, _, problem = poll(restarted, root, newer)
        assert changes.unknown and problem == unusable(Cause.SERVICE_RESTARTED)
        hook_blob = started(durable, root)  # the fallback hook: the resident's token is no baseline to it
        (root / "src" / "b.txt").write_text("by the agent\n")
        changes, token, problem = poll(restarted, root, hook_blob)
        assert (changes.unknown, problem) == (False, None) and "src/b.txt" in changes.paths
        changes, _, problem = poll(restarted, root, token)
        assert (changes.paths, changes.unknown, problem) == (frozenset(), False, None)
    finally:
        resident.close()
        restarted.close()
        durable.daemon.shutdown()
