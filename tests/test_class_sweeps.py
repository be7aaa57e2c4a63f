"""The class sweeps of `ledger verify`: every listed class played once, on the Runtime and through the hooks.

Each sweep must hold as shipped and must fail with a bug planted in the class it plays; the
semantic mutants they catch with `ledger verify` are recorded by scripts/verify_under_mutants.py.
"""

from __future__ import annotations

import pathlib

import pytest

from ledger_properties import hook_hunt, runtime_sweep
from ledger_properties.oracle import hunt_environment


def test_the_runtime_sweep_holds_as_shipped() -> None:
    commands, found = runtime_sweep.run_runtime_sweep()
    assert not found, found
    assert commands >= len(runtime_sweep.CASES)


def test_the_runtime_sweep_sees_an_environment_compared_by_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Semantic mutant 001's bug: the environment cache keyed by variable names, so a new value
    of TZ leaves the fingerprint as it was. The random hunt keeps a run's environment fixed."""
    import ledger_impl.fingerprint as fingerprint

    kept: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}
    monkeypatch.setattr(fingerprint, "_environment", lambda env: kept.setdefault(tuple(sorted(env)), tuple(sorted(env.items()))))
    _, found = runtime_sweep.run_runtime_sweep()
    assert [name for name, _ in found] == ["a new value of TZ between two listings"], found


def test_the_runtime_sweep_sees_unknown_scope_kept_only_while_a_job_lives(monkeypatch: pytest.MonkeyPatch) -> None:
    """Semantic mutant 082's bug: the jobs are pruned before the step asks whether any was
    running, so the step after a job exits is not unknown scope and its last write is missed.
    Every shipped sensor reports that write at the next poll; the rules detector does not."""
    import ledger_impl.runtime as runtime

    still_alive = runtime._still_alive
    original_step = runtime.Runtime.step

    def pruned_first(self, command, run=None):  # type: ignore[no-untyped-def]
        self._background = still_alive(self._background)
        return original_step(self, command, run)

    monkeypatch.setattr(runtime.Runtime, "step", pruned_first)
    _, found = runtime_sweep.run_runtime_sweep()
    assert [name for name, _ in found] == [
        "a background job's last write, with a detector that sees nothing between steps"
    ], found


def test_an_environment_step_changes_what_the_commands_and_the_oracle_run_with() -> None:
    from ledger_impl.detectors import default_detector
    from ledger_properties.oracle import checked_session

    with hunt_environment(), checked_session(runtime_sweep.SETUP, default_detector()) as session:
        outputs = [session.step("echo $TZ").output]
        session.set_environment("TZ", "Asia/Tokyo")
        outputs.append(session.step("echo $TZ").output)
        session.set_environment("TZ", None)
        outputs.append(session.step("echo ${TZ-unset}").output)
    assert outputs == ["UTC\n", "Asia/Tokyo\n", "unset\n"]


def test_the_hook_sweep_holds_as_shipped() -> None:
    calls, found = hook_hunt.run_class_sweep()
    assert not found, [(name, violation) for name, violation, _ in found]
    assert calls >= 2 * len(hook_hunt.SWEEP)


def test_a_sweep_step_of_an_unknown_kind_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown sweep step"):
        runtime_sweep.run_case("shipped", (("teleport", "a.txt"),))



def test_a_sweep_failure_is_a_counterexample_that_replays_with_the_bug_only(tmp_path: pathlib.Path) -> None:
    """Semantic mutant 056's bug, loaded into every hook process (an empty result stored as ''
    where Claude shows a placeholder), is found by its class, and the class's counterexample
    replays the stale Reuse with the bug planted and serves nothing stale without it."""
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text("import ledger_impl.agents.claude as c\nc.NO_OUTPUT = ''\n")
    with hunt_environment():
        agent, steps = hook_hunt.SWEEP["an empty result"]
        world = hook_hunt.HookWorld(agent, hook_hunt.SWEEP_SETUP, False, {"PYTHONPATH": str(plant)})
        try:
            violation = hook_hunt.sweep_world(world, steps)
            assert violation is not None
            document = hook_hunt.counterexample(world, violation, {"tool": "class sweep"})
        finally:
            world.close()
        with_bug = hook_hunt.replay(document, {"PYTHONPATH": str(plant)})
        without = hook_hunt.replay(document)
    assert [check.held for check in with_bug] == [False]
    assert [check.held for check in without] == [True]


PLANT_079 = """
import importlib.util, sys
spec = importlib.util.find_spec("ledger_impl.session")
source = open(spec.origin).read()
line = "inherited = earlier is not None and earlier.may_write"
assert line in source
module = importlib.util.module_from_spec(spec)
sys.modules["ledger_impl.session"] = module
exec(compile(source.replace(line, "inherited = False"), spec.origin, "exec"), module.__dict__)
"""


def test_the_hook_sweep_sees_a_read_under_a_writer_id_that_forgets_the_writer(tmp_path: pathlib.Path) -> None:
    """Semantic mutant 079's bug, loaded into every hook process: a call id decided again for a
    read loses the earlier writer's may-write flag, so a read made while that writer may still
    run is stored and served. Its class finds it; as shipped the class holds."""
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(PLANT_079)
    name = "a writer's id decided again for a read, the writer still running"
    agent, steps = hook_hunt.SWEEP[name]
    found = []
    with hunt_environment():
        for environment in ({"PYTHONPATH": str(plant)}, None):
            world = hook_hunt.HookWorld(agent, hook_hunt.SWEEP_SETUP, False, environment)
            try:
                found.append(hook_hunt.sweep_world(world, steps))
            finally:
                world.close()
    with_bug, without = found
    assert with_bug is not None and with_bug.property == hook_hunt.HOOK_REUSE_IS_FRESH, with_bug
    assert without is None, without

