"""The hook-path hunt (`ledger_properties.hook_hunt`): real `ledger hook claude|codex|copilot|gemini|qwen` processes, real
commands, and the oracle that re-runs every Reuse.

The oracle must be able to fail: each planted bug below (a patch loaded into the hook
processes only, through a `sitecustomize` module on their PYTHONPATH) is a kind issue 23 lists
as surviving the suite, and the scenario that shows it is checked both ways: with the bug a
Reuse differs from a real run, without it every Reuse matches.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import textwrap
import uuid
from collections.abc import Iterator

import pytest

from ledger_properties.hook_hunt import HookViolation, HookWorld, counterexample, replay, run_hook_hunt, tool_call, write_counterexample
from ledger_properties.oracle import hunt_environment
from ledger_properties.shell_strategies import WorkspaceSetup
from test_interrupt import marked_processes, wait_for

SETUP = WorkspaceSetup(
    {"a.txt": "alpha 1 beta\nbeta 2 gamma\n", "b.txt": "omega\n", "src/app.py": "x = 1\n", "docs/naïve notes.txt": "n\n"},
    {"ext.txt": "out\n"},
)


@pytest.fixture(autouse=True)
def _hunt_environment() -> Iterator[None]:
    with hunt_environment():
        yield


def _planted(directory: pathlib.Path, patch: str) -> dict[str, str]:
    directory.mkdir()
    (directory / "sitecustomize.py").write_text(textwrap.dedent(patch))
    return {"PYTHONPATH": str(directory)}


# (name, agent, the patch, the scenario: ("env", NAME, VALUE) or (HOW, COMMAND))
PLANTED = [
    (
        "claude: an empty result stored as '' where Claude shows a placeholder", "claude",
        "import ledger_impl.agents.claude as c\nc.NO_OUTPUT = ''\n",
        [("plain", "sed -n '50p' a.txt"), ("plain", "sed -n '50p' a.txt")],
    ),
    (
        "claude: an interrupted PostToolUseFailure recorded as exact", "claude",
        """
        import ledger_impl.agents.claude as c
        _real = c._failure
        c._failure = lambda tool, error, interrupted: _real(tool, error, False)
        """,
        [("interrupted", "cat a.txt"), ("plain", "cat a.txt")],
    ),
    (
        "codex: a result without its exit status recorded as exit 0, exact", "codex",
        """
        import ledger_impl.agents.codex as c
        from ledger_impl.agents.hook_session import Outcome
        _real = c._outcome
        c._outcome = lambda tool, response: (Outcome(response["output"], response.get("exit_code", 0))
                                             if isinstance(response, dict) else _real(tool, response))
        """,
        [("interrupted", "grep -n zzz a.txt"), ("plain", "grep -n zzz a.txt")],
    ),
    (
        "copilot: the shell's status line kept in the stored output", "copilot",
        """
        import ledger_impl.agents.copilot as c
        from ledger_impl.agents.hook_session import Outcome
        _real = c._finished
        c._finished = lambda tool, tool_input, payload: Outcome(
            payload["tool_result"]["text_result_for_llm"], _real(tool, tool_input, payload).exit_code)
        """,
        [("plain", "cat a.txt"), ("plain", "cat a.txt")],
    ),
    (
        "session: a rewritten command's output stored under the command decided (issue 19, hook composition)", "claude",
        """
        import ledger_impl.session as s
        _real = s.DurableSession.record
        def _record(self, call_id, output, exit_code, **options):
            options["ran"] = None
            return _real(self, call_id, output, exit_code, **options)
        s.DurableSession.record = _record
        """,
        [("rewritten", "cat a.txt"), ("plain", "cat a.txt")],
    ),
    (
        "fingerprint: the environment compared by variable names only (a TZ change)", "claude",
        "import ledger_impl.fingerprint as f\nf._environment = lambda env: tuple(sorted((k, '') for k in env))\n",
        [("env", "TZ", "UTC"), ("plain", "ls -l"), ("env", "TZ", "Asia/Tokyo"), ("plain", "ls -l")],
    ),
]

FINGERPRINT = next(i for i, planted in enumerate(PLANTED) if planted[0].startswith("fingerprint:"))
STORED = sorted((pathlib.Path(__file__).parent.parent / "counterexamples" / "hook").glob("*.json"))


def _play(world: HookWorld, scenario: list[tuple[str, ...]]) -> list[bool]:
    """Each Reuse's verdict (True: it matched a real run), in order."""
    held = []
    for action in scenario:
        if action[0] == "env":
            world.set_environment(action[1], action[2])
            continue
        check = tool_call(world, action[1], action[0])
        if check is not None:
            held.append(check.held)
    return held


@pytest.mark.parametrize("name, agent, patch, scenario", PLANTED, ids=[p[0].split(":")[0] + str(i) for i, p in enumerate(PLANTED)])
def test_the_oracle_catches_each_planted_bug_and_passes_without_it(
    tmp_path: pathlib.Path, name: str, agent: str, patch: str, scenario: list[tuple[str, ...]]
) -> None:
    world = HookWorld(agent, SETUP, worktree=False, hook_environment=_planted(tmp_path / "plant", patch))
    try:
        assert False in _play(world, scenario), f"{name}: no stale Reuse seen"
    finally:
        world.close()
    clean = HookWorld(agent, SETUP, worktree=False)
    try:
        assert all(_play(clean, scenario)), f"{name}: a Reuse without the bug differs from a real run"
    finally:
        clean.close()


@pytest.mark.parametrize("probe", [False, True], ids=["probe-off", "probe-on"])
@pytest.mark.parametrize("agent, worktree", [("claude", False), ("codex", True), ("copilot", False), ("gemini", False), ("qwen", True)])
def test_reuses_through_the_hooks_match_a_real_run(agent: str, worktree: bool, probe: bool) -> None:
    world = HookWorld(agent, SETUP, worktree=worktree, probe=probe)
    try:
        held = _play(world, [("plain", "cat a.txt"), ("plain", "cat a.txt"), ("plain", "ls docs"),
                             ("env", "LC_ALL", "C"), ("plain", "ls docs"), ("plain", "ls docs")])
    finally:
        world.close()
    assert held == [True, True], "the repeated cat and the repeated ls under the new locale are served, and fresh"


def test_the_random_hunt_finds_a_planted_bug_and_writes_a_file_that_replays_it(tmp_path: pathlib.Path) -> None:
    plant = _planted(tmp_path / "plant", PLANTED[FINGERPRINT][2])  # the environment keyed by names
    found = run_hook_hunt("ci", seed=1, max_examples=3, hook_environment=plant, out_dir=tmp_path / "found")
    print(f"\nhook-path hunt, planted bug: {found.examples} runs, {found.steps} calls, {found.reuses} reuses, {found.seconds:.1f} s")
    assert [violation.property for violation, _ in found.violations] == ["hook-reuse-is-fresh"]
    assert len(found.files) == 1
    assert not all(check.held for check in replay(json.loads(found.files[0].read_text()), plant))


def test_a_counterexample_file_replays_the_stale_reuse_and_only_with_the_bug(tmp_path: pathlib.Path) -> None:
    name, agent, patch, scenario = PLANTED[FINGERPRINT]  # the environment keyed by names: TZ moves, `ls -l` is served
    plant = _planted(tmp_path / "plant", patch)
    world = HookWorld(agent, SETUP, worktree=False, hook_environment=plant)
    try:
        held = _play(world, scenario)
        assert held == [False], name
        violation = HookViolation("hook-reuse-is-fresh", 4, "ls -l", "fresh", "stale", agent)
        path = write_counterexample(counterexample(world, violation, {"seed": 0}), tmp_path / "out")
    finally:
        world.close()
    document = json.loads(path.read_text())
    assert str(world.root) not in path.read_text(), "the file names no directory of the run that wrote it"
    assert [step["event"] for step in document["steps"]].count("call") == 2
    assert [check.held for check in replay(document, plant)] == [False], "the replay serves the stale listing again"
    assert all(check.held for check in replay(document)), "without the bug nothing stale is served"


def test_there_are_stored_hook_counterexamples() -> None:
    assert STORED, "counterexamples/hook/ holds the hook-path files this module replays"


@pytest.mark.parametrize("path", STORED, ids=[path.stem for path in STORED])
def test_a_stored_hook_counterexample_is_stale_with_its_planted_bug_and_fresh_without(
    tmp_path: pathlib.Path, path: pathlib.Path
) -> None:
    """Each file names the planted bug it shows (`found_by.planted`, a prefix of a PLANTED
    name). With it, the recorded stale Reuse comes back exactly; as shipped, nothing stale is
    served. claude-rewritten-command.json is issue 19's hook composition: the bug takes out the
    session's comparison of the reported command with the one decided. With the probe on it is
    fresh even with that bug: the probe reruns the command decided, its output differs from the
    one reported, and the read is never served."""
    document = json.loads(path.read_text())
    patch = next(planted[2] for planted in PLANTED if planted[0].startswith(document["found_by"]["planted"] + ":"))
    plant = _planted(tmp_path / "plant", patch)
    assert [(repr(check.expected), repr(check.served)) for check in replay(document, plant) if not check.held] == [
        (document["violation"]["expected"], document["violation"]["served"])
    ], "with the bug the recorded stale Reuse comes back, exactly"
    assert all(check.held for check in replay(document)), "as shipped nothing stale is served"
    assert all(check.held for check in replay(document, plant, probe=True)), "the probe alone closes it too"


@pytest.mark.skipif(shutil.which("watchman") is None, reason="no watchman binary on PATH (.ci/run installs it)")
def test_closing_a_run_stops_the_watchman_daemon_its_hooks_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGER_SESSION_DETECTOR", "watchman")  # as `ledger verify` runs where it is installed
    marker = f"LEDGER_HOOK_HUNT_TEST={uuid.uuid4().hex}"  # inherited by the daemon the hooks start
    world = HookWorld("claude", SETUP, worktree=False, hook_environment=dict([marker.split("=")]))
    try:
        _play(world, [("plain", "cat a.txt"), ("plain", "cat a.txt")])
        assert marked_processes(marker), "the hooks ran on Watchman, which started a daemon for the session"
    finally:
        world.close()
    assert wait_for(lambda: not marked_processes(marker), 10), "a Watchman daemon outlived the run that started it"
