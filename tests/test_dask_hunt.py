"""Hunts and audits on a Dask cluster: a real `distributed.LocalCluster` of two worker processes
on loopback, driven through `--scheduler` (`ledger_properties.dask_hunt`).

Budgets are a handful of runs; throughput is printed (pytest -s), never asserted.
"""

from __future__ import annotations

import functools
import json
import pathlib
import sys
from collections.abc import Iterator

import attrs
import pytest

distributed = pytest.importorskip("distributed", reason="the `distributed` package (test extra) is not installed")

from ledger_cli.commands import verify  # noqa: E402
from ledger_cli.main import main  # noqa: E402
from ledger_properties import dask_hunt, sandbox  # noqa: E402
from ledger_properties.hunt import Grammar, GuardedFactory, HuntJob  # noqa: E402
from ledger_properties.profiles import profile as named_profile  # noqa: E402

REPO = pathlib.Path(__file__).parent.parent
UNSANDBOXED: tuple[str, ...] = () if sandbox.available() else ("--unsandboxed",)
APPEND_BLIND = "examples.append_blind_detector:make"

sys.path.insert(0, str(REPO))
from examples.append_blind_detector import make as append_blind  # noqa: E402


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """The address of a local cluster: two worker processes of one thread each."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


def _tasks_run(address: str, prefix_name: str = "ledger-hunt") -> int:
    """How many tasks named `prefix_name`-... the scheduler has seen finish: proof that the work
    ran there."""

    def finished(dask_scheduler: object) -> int:
        log = dask_scheduler.transition_log  # type: ignore[attr-defined]
        return len({str(entry[0]) for entry in log if str(entry[0]).startswith(prefix_name) and entry[2] == "memory"})

    with distributed.Client(address, set_as_default=False) as client:
        return int(client.run_on_scheduler(finished))


def test_check_detector_on_a_cluster_writes_a_counterexample_that_replay_replays(
    scheduler: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)  # where a user runs it: examples/ is importable from here
    out, database = tmp_path / "found", tmp_path / "examples"
    before = _tasks_run(scheduler)
    code = main([
        "check-detector", APPEND_BLIND, "--seed", "2", "--max-examples", "10", "--out", str(out), "--json",
        "--scheduler", scheduler, "--database", str(database),
    ])
    summary = json.loads(capsys.readouterr().out)
    print(f"\ncheck-detector append-blind on 2 Dask workers: {summary['seconds']} s, {summary['steps_per_second']} steps/s")
    assert code == 1, summary
    assert _tasks_run(scheduler) - before == 2, "one task per worker thread ran on the cluster"
    stale = [v for v in summary["violations"] if v["property"] == "reuse-is-fresh"]
    assert stale, summary
    path = pathlib.Path(stale[0]["file"])
    assert main(["replay", str(path), "--trust-detector", "--path", str(REPO), *UNSANDBOXED]) == 1
    assert "--- stale (reused)" in capsys.readouterr().out

    # The failing example the workers found is kept in the shared database: a later hunt whose
    # own two runs find nothing replays it first, and fails.
    two_runs = HuntJob(GuardedFactory(append_blind), named_profile("ci"), 7, 2, Grammar(), False, 2.0)
    alone = dask_hunt.run_on_scheduler(two_runs, scheduler, tmp_path / "empty")
    assert not alone[2], "two fresh runs of this seed do not find it by themselves"
    progress: list[tuple[int, int]] = []
    replayed = dask_hunt.run_on_scheduler(two_runs, scheduler, database, lambda runs, steps: progress.append((runs, steps)))
    assert replayed[2], "the stored failure is replayed first"
    assert progress and progress[-1][1] == replayed[1], "the client sums the tasks' progress"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "each hunt's shared directory is removed"


def test_an_exception_in_a_cluster_task_is_raised_on_the_client(scheduler: str, tmp_path: pathlib.Path) -> None:
    broken = GuardedFactory(functools.partial(int, "not a detector"))
    job = HuntJob(broken, named_profile("ci"), 2, 2, Grammar(), False, 2.0)
    with pytest.raises(Exception, match="the detector factory raised ValueError"):
        dask_hunt.run_on_scheduler(job, scheduler, tmp_path / "db")


def test_verify_runs_its_hunt_on_the_cluster(scheduler: str, tmp_path: pathlib.Path) -> None:
    before = _tasks_run(scheduler)
    small = attrs.evolve(
        named_profile("ci"), hunt_examples=2, hunt_steps=5, workers=None, scheduler=scheduler, database=str(tmp_path / "db")
    )
    hunt, traced, overlap, sweep = verify._hunt(small, 3)
    assert hunt.held and traced.held and overlap.held and sweep.held, (hunt, traced, overlap, sweep)
    assert f"on {scheduler}" in hunt.detail and "2 runs" in hunt.detail, hunt.detail
    assert _tasks_run(scheduler) - before == 2


def test_an_unreachable_scheduler_is_one_line_and_exit_2(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(dask_hunt, "CONNECT_TIMEOUT", 1.0)
    monkeypatch.chdir(REPO)
    code = main(["check-detector", APPEND_BLIND, "--max-examples", "1", "--out", str(tmp_path / "o"),
                 "--scheduler", "tcp://127.0.0.1:9", "--database", str(tmp_path / "db")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err and "\n" not in err, err


def test_audit_runs_its_trajectories_on_the_cluster(
    scheduler: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    repo = tmp_path / "project"
    repo.mkdir()
    (repo / "notes.txt").write_text("before\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, env=env, capture_output=True, text=True).stdout.strip()
    trajectories = []
    for name, commands in (("a", ["cat notes.txt", "cat notes.txt"]), ("b", ["echo more >> notes.txt", "cat notes.txt"])):
        trajectories.append(tmp_path / f"{name}.jsonl")
        trajectories[-1].write_text("".join(json.dumps({"command": c}) + "\n" for c in commands))
    report = tmp_path / "report.json"
    before = _tasks_run(scheduler, "audit_job")
    sandboxing = [] if sandbox.available() else ["--no-sandbox"]
    code = main(["audit", *map(str, trajectories), "--repo", str(repo), "--base-commit", base, "--json", str(report),
                 "--scheduler", scheduler, *sandboxing])
    capsys.readouterr()
    assert code == 0
    assert _tasks_run(scheduler, "audit_job") - before == 2, "each trajectory was a task on the cluster"
    totals = json.loads(report.read_text())["totals"]
    assert totals["trajectories"] == 2 and totals["replayed"] == 4 and totals["redundant"]["verbatim"] == 1, totals
