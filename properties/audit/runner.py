"""Running many trajectories: jobs, any `concurrent.futures.Executor`, resumable result files.

A `Job` is a plain picklable value and `audit_job` a module-level function, so any executor
that runs functions elsewhere can run them: the local process pool `-j N` uses, or a cluster's
(Dask's `distributed.Client().get_executor()`, Ray's `ray.util.ActorPool`-backed executors).
Each job materializes its copy on the machine that runs it, so the repository path in the job
must be readable there:

    from concurrent.futures import ProcessPoolExecutor
    from ledger_properties.audit import runner
    jobs = runner.plan(["traj.jsonl"], repo="/src/project", commit="abc123")
    results = runner.run(jobs, ProcessPoolExecutor(4), results_dir=Path("audit-results"))

`audit_job` replays in a child process (`python -m ledger_properties.audit.worker`), inside bubblewrap
when the job says so: the child gets its own HOME and environment, a hard time limit, and a
crash in it fails one trajectory, not the audit. Each finished trajectory is written to
`results_dir/<key>.json`; a later run with the same jobs skips those (resume). Totals are
computed from results sorted by trajectory name, so they are the same whatever the executor
and whatever order results arrive in.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from .engine import Settings
from .filter import OutsideWrite, certain_escape
from .formats import InputError, Trajectory, load
from .workspace import GIT_ENVIRONMENT, Base, base_for, load_mapping, materialize, resolve
from .report_json import SCHEMA

# Time the child gets beyond the trajectory limit to materialize, look and report.
SETUP_GRACE_S = 300.0


@attrs.frozen
class Job:
    """One trajectory to audit: where it is, which base, how."""

    source: str
    name: str
    base: Base
    settings: Settings
    sandbox: bool

    @property
    def key(self) -> str:
        """A file-name-safe identity: the name, and a hash of everything that shapes the result."""
        # The schema too: a result kept by a run that wrote another schema is computed again.
        identity = json.dumps([os.path.abspath(self.source), self.name, attrs.asdict(self.base), attrs.asdict(self.settings),
                               self.sandbox, SCHEMA])
        digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
        return f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', self.name)[:80]}-{digest}"


def plan(
    paths: Iterable[str | os.PathLike[str]],
    *,
    repo: str | None = None,
    commit: str | None = None,
    workspaces: str | os.PathLike[str] | None = None,
    settings: Settings = Settings(),
    sandbox: bool = True,
    skip_outside_writes: bool = False,
) -> list[Job]:
    """The jobs for the trajectories in `paths`, each with its resolved base.

    Raises `InputError` (unreadable or unknown input, no base, a missing commit) or
    `OutsideWrite` (a step that certainly writes outside the workspace) before anything runs.
    """
    trajectories: list[Trajectory] = [t for path in paths for t in load(path)]
    if not trajectories:
        raise InputError("no trajectory given")
    names = [t.name for t in trajectories]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"two trajectories are named {duplicates[0]!r}; rename one of the files")
    if workspaces is not None:
        mapping = load_mapping(workspaces)
        wanted = [base_for(t, mapping) for t in trajectories]
    elif repo is not None and commit is not None:
        wanted = [Base(repo, commit)] * len(trajectories)
    else:
        raise InputError("say where to replay: --repo DIR --base-commit SHA, or --workspaces FILE.jsonl")
    resolved: dict[Base, Base] = {}
    for base in wanted:
        if base not in resolved:
            resolved[base] = resolve(base)
    jobs = []
    for trajectory, base in zip(trajectories, wanted):
        repo_path = resolved[base].repo
        for item in trajectory.items:
            escape = certain_escape(item, trajectory.recorded_root, (repo_path,))
            if escape is not None and not skip_outside_writes:
                raise OutsideWrite(f"{trajectory.name}: {escape}")
        own = attrs.evolve(settings, skip_outside_writes=skip_outside_writes, protected=(repo_path,))
        jobs.append(Job(trajectory.source, trajectory.name, resolved[base], own, sandbox))
    return jobs


def audit_job(job: Job) -> dict[str, Any]:
    """Materialize, replay in a child process, clean up; never raises for one bad trajectory."""
    parent = Path(tempfile.mkdtemp(prefix="ledger-audit-"))
    started = time.monotonic()
    try:
        workspace = materialize(job.base, parent)
        home = parent / "home"
        home.mkdir()
        request = parent / "job.pickle"
        answer = parent / "result.json"
        # The trajectory travels inside the copy's directory: the sandbox's /tmp is private.
        trajectory = next(t for t in load(job.source) if t.name == job.name)
        request.write_bytes(pickle.dumps({"trajectory": trajectory, "workspace": str(workspace), "result": str(answer),
                                          "settings": job.settings}))
        argv = [sys.executable, "-m", "ledger_properties.audit.worker", str(request)]
        if job.sandbox:
            argv = _sandboxed(argv, parent, workspace, [job.base.repo, job.settings.detector_path])
        environment = {**os.environ, **GIT_ENVIRONMENT, "HOME": str(home), "PIP_NO_INDEX": "1", "TMPDIR": "/tmp"}
        environment.pop("VIRTUAL_ENV", None)
        done = subprocess.run(
            argv, cwd=workspace, env=environment, capture_output=True, text=True,
            timeout=job.settings.trajectory_timeout + SETUP_GRACE_S, check=False,
        )
        if done.returncode != 0 or not answer.exists():
            last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            return _failed(job, f"worker failed: {last[:300]}", started)
        result: dict[str, Any] = json.loads(answer.read_text())
    except subprocess.TimeoutExpired:
        return _failed(job, "worker exceeded the trajectory time limit", started)
    except Exception as error:  # noqa: BLE001 - one broken trajectory must not end the audit
        return _failed(job, f"{type(error).__name__}: {error}", started)
    finally:
        _remove_tree(parent)
    result["base"] = attrs.asdict(job.base)
    result["sandboxed"] = job.sandbox
    return result


def _sandboxed(argv: list[str], parent: Path, workspace: Path, readable: list[str | None]) -> list[str]:
    """`argv` in bubblewrap, writable only in `parent`. The copy borrows the source repository's
    objects, a detector may live in a user's directory, and Ledger itself and this interpreter
    may be installed there too (a checkout or a virtual environment under /tmp): such a path
    under /tmp (which the sandbox replaces with an empty one) is bound back read-only."""
    from .. import sandbox

    ledger_code = str(Path(__file__).resolve().parents[2])  # the directory holding `properties`
    needed = [*readable, sys.prefix, ledger_code]
    hidden = sorted({Path(p).resolve() for p in needed if p and str(Path(p).resolve()).startswith("/tmp/")})
    return sandbox.wrap(argv, writable=[parent], workdir=workspace, readable=hidden)


def _failed(job: Job, error: str, started: float) -> dict[str, Any]:
    return {"name": job.name, "source": job.source, "status": "failed", "error": error, "base": attrs.asdict(job.base),
            "sandboxed": job.sandbox, "seconds": round(time.monotonic() - started, 3)}


def _remove_tree(path: Path) -> None:
    """Remove a copy, including directories an agent made read-only."""

    def make_writable_and_retry(function: Callable[[str], Any], name: str, _: Any) -> None:
        try:
            os.chmod(os.path.dirname(name), 0o700)
            os.chmod(name, 0o700)
            function(name)
        except OSError:
            pass

    shutil.rmtree(path, onerror=make_writable_and_retry)


def result_path(results_dir: Path, job: Job) -> Path:
    return results_dir / f"{job.key}.json"


def run(
    jobs: Iterable[Job],
    executor: concurrent.futures.Executor,
    *,
    results_dir: Path | None = None,
    budget_s: float | None = None,
    in_flight: int = 1,
    on_result: Callable[[Job, dict[str, Any], bool], None] | None = None,
) -> list[dict[str, Any]]:
    """Audit `jobs` on `executor`; return every result, sorted by trajectory name.

    Results already in `results_dir` are loaded, not recomputed (`on_result(job, result,
    True)`). At most `in_flight` jobs are submitted at a time, so that once `budget_s` seconds
    have passed no new one starts (running ones finish).
    """
    started = time.monotonic()
    results: list[dict[str, Any]] = []
    todo: list[Job] = []
    for job in jobs:
        saved = result_path(results_dir, job) if results_dir is not None else None
        if saved is not None and saved.exists():
            try:
                result = json.loads(saved.read_text())
            except json.JSONDecodeError:
                result = None  # an interrupted write: redo it
            if result is not None:
                results.append(result)
                if on_result is not None:
                    on_result(job, result, True)
                continue
        todo.append(job)
    if results_dir is not None:
        results_dir.mkdir(parents=True, exist_ok=True)
    pending = list(reversed(todo))
    running: dict[concurrent.futures.Future[dict[str, Any]], Job] = {}
    while pending or running:
        while pending and len(running) < max(in_flight, 1):
            if budget_s is not None and time.monotonic() - started > budget_s:
                pending.clear()
                break
            job = pending.pop()
            running[executor.submit(audit_job, job)] = job
        if not running:
            break
        done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
        for future in done:
            job = running.pop(future)
            result = future.result()
            if results_dir is not None and result.get("status") != "failed":  # a failure is retried on resume
                target = result_path(results_dir, job)
                partial = target.with_suffix(".partial")
                partial.write_text(json.dumps(result))
                partial.replace(target)  # atomic: a resumed run never reads half a file
            results.append(result)
            if on_result is not None:
                on_result(job, result, False)
    return sorted(results, key=lambda r: (str(r.get("name")), str(r.get("source"))))
