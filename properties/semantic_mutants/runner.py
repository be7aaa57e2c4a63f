"""Apply each mutant in a temporary copy of the tree, run its tests there, report a verdict.

The working tree is never patched: the files git knows (tracked, and untracked but not
ignored) are copied once into a temporary directory, and each patch is applied there, its
tests run with that copy first on `sys.path`, and the patch reversed before the next. Bytecode
is never written, so a reversed file cannot be shadowed by the mutant's cached bytecode.
A patch that no longer applies is an error, never a skip: the catalog then lies about the code.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final, Iterable

import attrs

from .catalog import Mutant, applies, patch_digest, tests_digest

KILLED: Final = "killed"
SURVIVED: Final = "survived"
EQUIVALENT: Final = "equivalent"
NOT_APPLIED: Final = "does not apply"
TEST_ERROR: Final = "test error"
PER_MUTANT_TIMEOUT: Final = 600.0


@attrs.frozen
class Verdict:
    id: str
    verdict: str
    seconds: float
    detail: str = ""


def copy_tree(source: Path, destination: Path) -> None:
    """The files git sees in `source` (its index plus untracked files not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=source, capture_output=True, check=True,
    ).stdout.decode().split("\0")
    for name in filter(None, listed):
        origin = source / name
        if not origin.is_file():
            continue  # deleted in the work tree but still in the index
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(origin, target, follow_symlinks=False)


def _environment(tree: Path) -> dict[str, str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), environment.get("PYTHONPATH")]))
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return environment


def run_tests(tree: Path, tests: Iterable[str], timeout: float = PER_MUTANT_TIMEOUT) -> tuple[int, str]:
    """(pytest's exit status, the tail of its output) for `tests` run in `tree`; -1 on timeout."""
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header", *tests]
    try:
        done = subprocess.run(command, cwd=tree, env=_environment(tree), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:.0f}s"
    lines = (done.stdout + done.stderr).strip().splitlines()
    failed = [line.split(" - ")[0] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return done.returncode, "\n".join(failed or lines[-3:])


def imports_from(tree: Path) -> Path:
    """Where the copy's interpreter finds `ledger_impl`: it must be the copy, or every verdict
    would be about the original tree."""
    probe = [sys.executable, "-c", "import ledger_impl, properties; print(ledger_impl.__file__)"]
    found = subprocess.run(probe, cwd=tree, env=_environment(tree), capture_output=True, text=True, check=True)
    return Path(found.stdout.strip())


def _verdict(mutant: Mutant, status: int, tail: str, seconds: float) -> Verdict:
    if status == 0:
        return Verdict(mutant.id, EQUIVALENT if mutant.equivalent else SURVIVED, seconds)
    if status in (1, -1):
        return Verdict(mutant.id, KILLED, seconds, tail)  # which test failed first, or the timeout
    return Verdict(mutant.id, TEST_ERROR, seconds, tail)  # usage error, nothing collected, ...


def run_mutants(mutants: Iterable[Mutant], source: Path, *, baseline: bool = True) -> list[Verdict]:
    """Every mutant's verdict. With `baseline`, the named tests must first pass unmutated."""
    mutants = list(mutants)
    verdicts: list[Verdict] = []
    with tempfile.TemporaryDirectory(prefix="semantic-mutants-") as scratch:
        tree = Path(scratch) / "tree"
        copy_tree(source, tree)
        if not imports_from(tree).is_relative_to(tree):
            raise RuntimeError("the copy's interpreter imports ledger_impl from elsewhere")
        if baseline:
            tests = sorted({test for mutant in mutants for test in mutant.tests})
            status, tail = run_tests(tree, tests)
            if status != 0:
                raise RuntimeError(f"the named tests fail without any mutant:\n{tail}")
        for mutant in mutants:
            started = time.monotonic()
            problem = applies(mutant, tree)
            if problem is not None:
                verdicts.append(Verdict(mutant.id, NOT_APPLIED, 0.0, problem))
                continue
            subprocess.run(["git", "apply", str(mutant.patch)], cwd=tree, check=True, capture_output=True)
            try:
                status, tail = run_tests(tree, mutant.tests) if mutant.tests else (0, "no test named")
            finally:
                subprocess.run(["git", "apply", "-R", str(mutant.patch)], cwd=tree, check=True, capture_output=True)
            verdicts.append(_verdict(mutant, status, tail, time.monotonic() - started))
            verdict = verdicts[-1]
            first = verdict.detail.splitlines()[0] if verdict.detail else ""
            print(f"{mutant.id} {verdict.verdict:>10} {verdict.seconds:6.1f}s  {mutant.description}  {first}", flush=True)
    return verdicts


def summary(verdicts: list[Verdict]) -> dict[str, object]:
    counts = {name: sum(1 for v in verdicts if v.verdict == name)
              for name in (KILLED, SURVIVED, EQUIVALENT, NOT_APPLIED, TEST_ERROR)}
    scored = counts[KILLED] + counts[SURVIVED] + counts[NOT_APPLIED] + counts[TEST_ERROR]
    score = round(100 * counts[KILLED] / scored, 1) if scored else 0.0
    return {"mutants": len(verdicts), **counts, "score_percent": score}


def tree_state(source: Path) -> tuple[str, bool]:
    """(HEAD's commit, whether tracked files differ from it): taken before the run, since the
    copy the mutants run in is made then."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=source,
                                capture_output=True, text=True).stdout.strip())
    return commit, dirty


def digests(mutants: Iterable[Mutant], tree: Path) -> dict[str, dict[str, str]]:
    """Each mutant's patch and named tests as hashed now (`catalog.patch_digest`,
    `catalog.tests_digest`): recorded with its verdict, so that a verdict whose patch or killing
    test has changed since is known to be stale."""
    return {mutant.id: {"patch_sha256": patch_digest(mutant), "tests_sha256": tests_digest(mutant, tree)}
            for mutant in mutants}


def stale(document: dict[str, object], mutants: Iterable[Mutant], tree: Path) -> list[str]:
    """Why each verdict of the recorded `document` is not about the catalog's mutants as they
    are now: an id added or gone, a patch rewritten, or a killing test changed (or named anew)."""
    recorded = {entry["id"]: entry for entry in document["mutants"]}  # type: ignore[index,union-attr]
    mutants = list(mutants)
    problems = [f"{mutant_id}: not in the catalog any more" for mutant_id in recorded.keys() - {m.id for m in mutants}]
    for mutant in mutants:
        entry = recorded.get(mutant.id)
        if entry is None:
            problems.append(f"{mutant.id}: never run")
            continue
        now = digests([mutant], tree)[mutant.id]
        for key, what in (("patch_sha256", "its patch"), ("tests_sha256", "its killing tests")):
            if entry.get(key) != now[key]:
                problems.append(f"{mutant.id}: {what} changed since the recorded run")
    return problems


def result_document(verdicts: list[Verdict], state: tuple[str, bool], load_before: tuple[float, ...], seconds: float,
                    hashed: dict[str, dict[str, str]] | None = None) -> dict[str, object]:
    """The JSON recorded under benchmarks/results: what ran, on which commit, under what load,
    and (`hashed`, from `digests`) the patch and tests each verdict is about."""
    commit, dirty = state
    hashed = hashed or {}
    after = os.getloadavg()
    return {
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "load": f"1-minute load average {load_before[0]:.2f} before, {after[0]:.2f} after",
        "commit": commit,
        "work_tree_dirty": dirty,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load_average_before": [round(value, 2) for value in load_before],
        "load_average_after": [round(value, 2) for value in after],
        "cpus": os.cpu_count(),
        "wall_seconds": round(seconds, 1),
        "summary": summary(verdicts),
        "mutants": [attrs.asdict(verdict) | {"seconds": round(verdict.seconds, 1)} | hashed.get(verdict.id, {})
                    for verdict in verdicts],
    }


def write_json(document: dict[str, object], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
