"""Replay real agent trajectories through the Runtime, with an oracle for every Reuse.

Usage:
    python scripts/replay_corpus.py [CORPUS.jsonl] [--limit N] [--repos a,b] [--cache DIR]
                                    [--json OUT] [--timeout S] [--jobs N] [--sandbox auto|on|off]

For each trajectory of the corpus (default ../shared/corpus/mini-swe-agent-deepseek.jsonl):

1. **Materialize** the task's project: the sdist of a fixed release of its PyPI package
   (`PROJECTS` below: a version near the era of the benchmark tasks, not the task's exact
   commit; fidelity to the recording does not matter, only that agents' reads, searches and
   edits land on a real project of the right shape). The sdist is fetched once with
   `pip download --no-deps --no-binary :all:` into `--cache` and unpacked for every trajectory
   into a fresh temporary directory, then `git init` + commit so that git commands work.
2. **Rewrite** each command: the agents worked in `/testbed`; every literal `/testbed` in a
   command becomes the workspace's absolute path. Nothing else is changed.
3. **Skip** (counted by reason) package installs, network use, process control (`kill`,
   `pkill` could hit the replay itself), and commands that may write outside the workspace or
   /tmp: a command whose writes the RulesDetector can list is judged by those keys (it names
   nothing outside the root); for any other command, an absolute path other than the workspace,
   /tmp and a few harmless names, or a `../../..` escape, means skip.
4. **Replay** the rest in order through `Runtime(workspace)` (default detector), cwd the
   workspace, HOME a temporary directory, `--timeout` seconds per command (so a full test
   suite cannot take the run hostage).
5. **Oracle**: at every Reuse, a ground-truth snapshot (every file hashed), the command run for
   real, a second snapshot. A change to the tree is a *classifier violation*; a different output
   or exit status is a *stale reuse* (trajectory, step, command and a diff are kept).
6. **Perfect ledger**: per-key versions from ground-truth snapshots. A snapshot is taken after
   every step that is not a read-only command the runtime executed (a read-only command's
   purity is what the classifier tests establish, and a full snapshot of a Django checkout costs
   about 1.5 s). A step is *perfectly reusable* when it is an inspection command (every program
   in `INSPECTION_TOOLS`, no file redirection, or classified read-only), an earlier completed
   run of the same normalized command printed the same output and exit status, and nothing it
   depends on changed since (the file's version for a file target, any change at all otherwise);
   or it reads a line range inside an earlier range of the same file and view, file unchanged.
   Every Reuse the oracle confirmed also counts (a perfect ledger reuses at least that), so the
   share reuses / perfect is at most 100%.

With `--sandbox auto` (the default) and root privileges, the replay runs in private mount, PID
and network namespaces where `/` is read-only and only /tmp and the output directories are
writable: the skip rules are the first line of defence, the namespaces the second.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import difflib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ledger_impl import Runtime, classify  # noqa: E402 - after the path set-up, to run from a checkout
from ledger_impl import shell  # noqa: E402
from ledger_impl.detectors import RulesDetector  # noqa: E402
from ledger_impl.execution import kill_group, run_command  # noqa: E402
from ledger_impl.tree_snapshot import Snapshot, ground_truth_snapshot, observable_diff  # noqa: E402
from ledger_spec import FileTarget  # noqa: E402
from ledger_spec.values import READ_ONLY, SLICEABLE_VIEWS  # noqa: E402

DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "mini-swe-agent-deepseek.jsonl"
DEFAULT_CACHE = Path.home() / ".cache" / "ledger-corpus"
CORPUS_ROOT = "/testbed"
DEFAULT_TIMEOUT = 20.0
# The oracle re-runs a reused command with the same output cap as the Runtime's default.
OUTPUT_LIMIT = 4 * 1024 * 1024
SANDBOX_MARKER = "LEDGER_REPLAY_SANDBOXED"

# task_repo -> (PyPI name, release). One fixed release per project, chosen in the middle of the
# span of SWE-bench Lite/Verified instances of that repository (the instance number does not
# give a version). The first eight are the repositories the corpus holds today.
PROJECTS: dict[str, tuple[str, str]] = {
    "django/django": ("Django", "4.0.10"),
    "sqlfluff/sqlfluff": ("sqlfluff", "1.4.5"),
    "pvlib/pvlib-python": ("pvlib", "0.9.5"),
    "pydicom/pydicom": ("pydicom", "2.3.1"),
    "pylint-dev/astroid": ("astroid", "2.15.8"),
    "marshmallow-code/marshmallow": ("marshmallow", "3.19.0"),
    "astropy/astropy": ("astropy", "5.3.4"),
    "pyvista/pyvista": ("pyvista", "0.38.6"),
    "sympy/sympy": ("sympy", "1.11.1"),
    "psf/requests": ("requests", "2.28.2"),
    "pytest-dev/pytest": ("pytest", "7.2.2"),
    "scikit-learn/scikit-learn": ("scikit-learn", "1.2.2"),
    "matplotlib/matplotlib": ("matplotlib", "3.6.3"),
    "sphinx-doc/sphinx": ("Sphinx", "5.3.0"),
    "pylint-dev/pylint": ("pylint", "2.15.10"),
    "pydata/xarray": ("xarray", "2022.12.0"),
    "mwaskom/seaborn": ("seaborn", "0.12.2"),
    "pallets/flask": ("Flask", "2.2.3"),
}

# -- skip rules ------------------------------------------------------------------------------

_START = r"(?:^|[\s;&|(`])"  # a program name starts a word
INSTALL_PATTERN = re.compile(
    r"\bpip[\d.]*['\"]?\s*,?\s*['\"]?(?:install|uninstall|download)\b"
    r"|\bsetup\.py\s+(?:install|develop|build_ext|build|bdist\w*|sdist|egg_info)\b"
    rf"|{_START}(?:conda|mamba|micromamba|apt|apt-get|dpkg|yum|dnf|apk|brew|poetry|pipx|easy_install)\s"
    rf"|{_START}uv\s+(?:pip|add|sync)\b"
)
NETWORK_PATTERN = re.compile(
    rf"{_START}(?:curl|wget|ssh|scp|rsync|nc|ncat|telnet|ftp|sftp)\s"
    r"|\bgit\s+(?:clone|fetch|pull|push|ls-remote|submodule)\b"
)
# Process control: the replay is a process too, and `pkill -f python` would end it.
PROCESS_PATTERN = re.compile(rf"{_START}(?:kill|pkill|killall|sudo|su|reboot|shutdown|systemctl|service)\s")
_ABSOLUTE_PATH = re.compile(r"(?<![\w./~$-])/(?:[\w.+@-]+(?:/[\w.+@*-]*)*|(?=[\s'\";)|&*]|$))")
_DEEP_ESCAPE = re.compile(r"\.\./\.\./\.\.")
# Absolute names agents write that never receive a write here.
HARMLESS_PATHS = frozenset(
    {"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/usr/bin/env", "/bin/bash", "/bin/sh",
     "/usr/bin/python", "/usr/bin/python3", "/usr/bin/bash"}
)
WRITABLE_PREFIXES = ("/tmp",)


def rewrite_command(command: str, workspace: Path) -> str:
    """The command as it would read had the agent worked in `workspace` instead of /testbed."""
    return command.replace(CORPUS_ROOT, str(workspace))


def skip_reason(command: str, workspace: Path) -> str | None:
    """Why `command` (already rewritten) must not be replayed, or None to replay it."""
    if INSTALL_PATTERN.search(command):
        return "package install"
    if NETWORK_PATTERN.search(command):
        return "network"
    if PROCESS_PATTERN.search(command):
        return "process control"
    if classify(command, root=workspace).category in READ_ONLY:
        return None  # the classifier's read-only verdict is what its tests check against real runs
    if _writes_listed_inside(command, workspace):
        return None
    if _DEEP_ESCAPE.search(command):
        return "may write outside workspace"
    allowed = (str(workspace),) + WRITABLE_PREFIXES
    for match in _ABSOLUTE_PATH.finditer(command):
        path = match.group(0).rstrip("/") or "/"
        if path in HARMLESS_PATHS:
            continue
        if any(path == prefix or path.startswith(prefix + "/") for prefix in allowed):
            continue
        return "may write outside workspace"
    return None


def _writes_listed_inside(command: str, workspace: Path) -> bool:
    """Whether the RulesDetector can list every key `command` writes: it raises "unknown" for a
    write outside the root and for anything it cannot see into, so a definite report means
    every write lands inside the workspace. It only reads the tree; nothing is run."""
    detector = RulesDetector()
    try:
        detector.before(workspace, command)
        return not detector.after(workspace, command, 0).unknown
    except Exception:  # noqa: BLE001 - unsure means skip
        return False


# -- the perfect ledger ----------------------------------------------------------------------

# Programs that only print what they read when given no file-writing redirection. Independent
# of the classifier, so that a read the classifier calls `run` still counts as a re-read.
INSPECTION_TOOLS = frozenset(
    {"cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "find", "ls", "wc", "nl", "sort", "uniq",
     "cut", "tr", "diff", "file", "stat", "tree", "du", "echo", "printf", "pwd", "true", "cd", "awk",
     "sed", "less", "more", "column", "comm", "basename", "dirname", "realpath", "readlink", "xargs",
     "git"}
)
_WRITING_FLAGS = re.compile(r"(^|\s)(-i\S*|--in-place\S*|-exec\S*|-delete|-ok|-fprint\S*)(\s|$)")
_GIT_INSPECTION = frozenset({"status", "diff", "log", "show", "blame", "ls-files", "grep", "rev-parse"})


def is_inspection(command: str) -> bool:
    """Whether `command` is made only of inspection programs, with no file-writing redirect."""
    try:
        script = shell.parse(command)
    except shell.ShellSyntaxError:
        return False
    commands = script.commands()
    if not commands:
        return False
    for simple in commands:
        if simple.compound is not None or any(r.writes_file for r in simple.redirects):
            return False
        name = simple.name
        if name not in INSPECTION_TOOLS or _WRITING_FLAGS.search(simple.text):
            return False
        args = [w.text for w in simple.args]
        if name == "git" and not (args and args[0] in _GIT_INSPECTION):
            return False
        if name == "xargs" and not (args and os.path.basename(args[-1] if len(args) == 1 else args[0]) in
                                    ("grep", "cat", "wc", "head", "ls")):
            return False
    return True


def program_skeleton(command: str) -> str:
    """The programs of a command, in order, for grouping missed reuses: 'cat | grep'."""
    try:
        script = shell.parse(command)
        names = [c.name or "?" for c in script.commands() if c.name != "cd"]
    except shell.ShellSyntaxError:
        names = command.split()[:1]
    if not names:
        return "<empty>"
    return " | ".join(names[:4])


@dataclass
class _Observation:
    normalized: str
    file_key: str | None
    lines: Any
    view: str | None
    version: int  # the file's version for a file target, else the tree version
    output: str
    exit_code: int


class PerfectLedger:
    """Ground truth of what could have been reused: per-key versions from full snapshots."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.snapshot: Snapshot = ground_truth_snapshot(workspace)
        self.versions: collections.Counter[str] = collections.Counter()
        self.tree_version = 0
        self.observations: list[_Observation] = []

    def advance(self, snapshot: Snapshot) -> frozenset[str]:
        """Record the changes between the last snapshot and `snapshot`; return them."""
        changed = observable_diff(self.snapshot, snapshot)
        for key in changed:
            self.versions[key] += 1
        if changed:
            self.tree_version += 1
        self.snapshot = snapshot
        return changed

    def resnapshot(self) -> frozenset[str]:
        return self.advance(ground_truth_snapshot(self.workspace))

    def _dependency_version(self, command: Any) -> tuple[str | None, int]:
        target = command.target
        if isinstance(target, FileTarget):
            return target.key, self.versions[target.key]
        return None, self.tree_version

    def reusable(self, command: Any, output: str, exit_code: int) -> bool:
        """Whether an earlier observation could have served `command`, whose true output is given."""
        if not (command.category in READ_ONLY or is_inspection(command.text)):
            return False
        key, version = self._dependency_version(command)
        target = command.target
        for seen in self.observations:
            if seen.normalized == command.normalized and seen.file_key == key and seen.version == version:
                if seen.output == output and seen.exit_code == exit_code:
                    return True
            if (
                isinstance(target, FileTarget)
                and seen.file_key == target.key
                and seen.view == target.view
                and target.view in SLICEABLE_VIEWS
                and seen.version == version
                and seen.exit_code == 0
                and seen.lines.covers(target.lines)
            ):
                return True
        return False

    def observe(self, command: Any, output: str, exit_code: int) -> None:
        """Remember a completed run of `command` (call after `advance` for its step)."""
        if not (command.category in READ_ONLY or is_inspection(command.text)):
            return
        key, version = self._dependency_version(command)
        target = command.target
        self.observations.append(
            _Observation(
                command.normalized,
                key,
                target.lines if isinstance(target, FileTarget) else None,
                target.view if isinstance(target, FileTarget) else None,
                version,
                output,
                exit_code,
            )
        )


# -- the replay loop -------------------------------------------------------------------------


@dataclass
class ReplayResult:
    """Counts and findings of one or more replayed trajectories."""

    trajectories: int = 0
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    skipped: collections.Counter[str] = field(default_factory=collections.Counter)
    stale: list[dict[str, Any]] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    missed: collections.Counter[str] = field(default_factory=collections.Counter)
    missed_examples: dict[str, str] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)
    per_repo: collections.Counter[str] = field(default_factory=collections.Counter)
    seconds: float = 0.0

    def merge(self, other: "ReplayResult") -> None:
        self.trajectories += other.trajectories
        self.counts.update(other.counts)
        self.skipped.update(other.skipped)
        self.stale.extend(other.stale)
        self.violations.extend(other.violations)
        self.missed.update(other.missed)
        for pattern, example in other.missed_examples.items():
            self.missed_examples.setdefault(pattern, example)
        self.failures.extend(other.failures)
        self.per_repo.update(other.per_repo)
        self.seconds += other.seconds

    def to_json(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it rebuilds a Counter from (key, value) pairs, counting pairs.
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for name in ("counts", "skipped", "missed", "per_repo"):
            data[name] = dict(data[name].most_common())
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ReplayResult":
        result = cls(**{k: v for k, v in data.items() if k not in ("counts", "skipped", "missed", "per_repo")})
        for name in ("counts", "skipped", "missed", "per_repo"):
            setattr(result, name, collections.Counter(data.get(name, {})))
        return result


def _output_diff(reused: str, real: str) -> str:
    lines = difflib.unified_diff(
        reused.splitlines(keepends=True), real.splitlines(keepends=True), "reused", "real", n=2
    )
    return "".join(list(lines)[:60])


def _complete(output: str) -> bool:
    return "\n[ledger] timed out after" not in output and "\n[ledger] output truncated:" not in output


def _missed_reason(step: Any, rt: Runtime) -> str:
    command = step.command
    if command.category not in READ_ONLY:
        return f"classified {command.category.value}"
    if command.target is None:
        return "read-only without target"
    if step.verdict == "nudge":
        return "nudged, not reused"
    return "ledger saw a change since"


def replay(
    commands: list[str],
    workspace: Path,
    *,
    instance_id: str = "",
    detector: object | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> ReplayResult:
    """Replay `commands` (as recorded, /testbed-relative) in `workspace`, with the oracle."""
    workspace = workspace.resolve()
    result = ReplayResult(trajectories=1)
    started = time.perf_counter()
    rt = Runtime(workspace, detector=detector, timeout=timeout)
    perfect = PerfectLedger(workspace)
    try:
        for index, recorded in enumerate(commands):
            command = rewrite_command(recorded, workspace)
            reason = skip_reason(command, workspace)
            if reason is not None:
                result.skipped[reason] += 1
                continue
            result.counts["commands"] += 1
            step = rt.step(command)
            result.counts[step.verdict] += 1
            output, exit_code = step.output, step.exit_code
            stale_here = False
            if step.verdict == "reuse":
                before = ground_truth_snapshot(workspace)
                if before.entries != perfect.snapshot.entries:
                    perfect.advance(before)  # a background job wrote since the last snapshot
                real = run_command(command, workspace, timeout, OUTPUT_LIMIT)
                after = ground_truth_snapshot(workspace)
                changed = observable_diff(before, after)
                if changed:
                    result.violations.append(
                        {"instance_id": instance_id, "step": index, "command": recorded,
                         "changed": sorted(changed)[:10]}
                    )
                if not real.complete:
                    result.counts["oracle inconclusive"] += 1
                elif (real.output, real.exit_code) != (step.output, step.exit_code):
                    stale_here = True
                    result.stale.append(
                        {"instance_id": instance_id, "step": index, "command": recorded,
                         "reused_exit": step.exit_code, "real_exit": real.exit_code,
                         "diff": _output_diff(step.output, real.output)}
                    )
                output, exit_code = real.output, real.exit_code
            reusable = perfect.reusable(step.command, output, exit_code)
            confirmed_reuse = step.verdict == "reuse" and not stale_here
            if reusable or confirmed_reuse:
                result.counts["perfect reusable"] += 1
            if reusable and step.verdict != "reuse":
                pattern = f"{program_skeleton(command)} [{_missed_reason(step, rt)}]"
                result.missed[pattern] += 1
                result.missed_examples.setdefault(pattern, recorded[:200])
            if step.verdict == "reuse":
                perfect.advance(after)
            elif step.command.category not in READ_ONLY or not _complete(step.output) or rt._background:
                # Anything but an executed read-only command may have changed the tree.
                perfect.resnapshot()
            if _complete(output):
                perfect.observe(step.command, output, exit_code)
    finally:
        for group in list(rt._background):
            kill_group(group)
    result.seconds = time.perf_counter() - started
    return result


# -- materializing a project -----------------------------------------------------------------


def sdist_path(cache: Path, task_repo: str, download: bool = True) -> Path:
    """The cached sdist of `task_repo`'s release, downloaded with pip if absent."""
    name, version = PROJECTS[task_repo]
    cache.mkdir(parents=True, exist_ok=True)
    found = _find_sdist(cache, name, version)
    if found is None and download:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name, "-q",
             f"{name}=={version}", "-d", str(cache)],
            check=True,
        )
        found = _find_sdist(cache, name, version)
    if found is None:
        raise FileNotFoundError(f"no sdist of {name}=={version} in {cache}")
    return found


def _find_sdist(cache: Path, name: str, version: str) -> Path | None:
    wanted = {name.lower().replace("-", "_"), name.lower().replace("_", "-"), name.lower()}
    for path in sorted(cache.iterdir()):
        stem = path.name
        for suffix in (".tar.gz", ".zip", ".tar.bz2"):
            if stem.endswith(suffix):
                stem = stem[: -len(suffix)]
                break
        else:
            continue
        if stem.lower() in {f"{n}-{version}" for n in wanted}:
            return path
    return None


def extract_data(archive: tarfile.TarFile, destination: Path) -> None:
    """Extract only plain files, directories and links that stay inside `destination`, owned by
    us (git refuses a repository owned by another user): the "data" filter of Python 3.11.4+,
    checked by hand on older 3.11 releases, which lack extraction filters."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(destination, filter="data")
        return
    root = destination.resolve()
    members = []
    for member in archive.getmembers():
        target = (root / member.name).resolve()
        if not target.is_relative_to(root) or not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
            raise tarfile.TarError(f"refusing archive member {member.name!r}")
        if member.issym() or member.islnk():
            base = target.parent if member.issym() else root
            if os.path.isabs(member.linkname) or not (base / member.linkname).resolve().is_relative_to(root):
                raise tarfile.TarError(f"refusing link {member.name!r} -> {member.linkname!r}")
        member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
        member.mode = (member.mode & 0o755) | (0o600 if member.isfile() else 0o700)
        members.append(member)
    archive.extractall(destination, members=members, numeric_owner=True)


def materialize(sdist: Path, parent: Path) -> Path:
    """Unpack `sdist` into `parent/testbed`, as a git repository with one commit."""
    workspace = parent / "testbed"
    unpack = parent / "unpack"
    unpack.mkdir()
    if sdist.name.endswith(".zip"):
        with zipfile.ZipFile(sdist) as archive:
            archive.extractall(unpack)
    else:
        with tarfile.open(sdist) as archive:
            extract_data(archive, unpack)
    tops = list(unpack.iterdir())
    (tops[0] if len(tops) == 1 and tops[0].is_dir() else unpack).rename(workspace)
    shutil.rmtree(unpack, ignore_errors=True)
    git = ["git", "-c", "user.name=replay", "-c", "user.email=replay@localhost", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    subprocess.run(git + ["add", "-A", "-f"], cwd=workspace, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "sdist"], cwd=workspace, check=True)
    return workspace


def replay_trajectory(trajectory: dict[str, Any], cache: str, timeout: float) -> dict[str, Any]:
    """Materialize, replay and clean up one trajectory (runs in a worker process)."""
    parent = Path(tempfile.mkdtemp(prefix="ledger-replay-"))
    home = parent / "home"
    home.mkdir()
    os.environ.update(
        HOME=str(home), PIP_NO_INDEX="1", GIT_AUTHOR_NAME="agent", GIT_AUTHOR_EMAIL="agent@localhost",
        GIT_COMMITTER_NAME="agent", GIT_COMMITTER_EMAIL="agent@localhost",
    )
    os.environ.pop("VIRTUAL_ENV", None)
    try:
        workspace = materialize(sdist_path(Path(cache), trajectory["task_repo"], download=False), parent)
        result = replay(trajectory["commands"], workspace, instance_id=trajectory["instance_id"], timeout=timeout)
        result.per_repo[trajectory["task_repo"]] += 1
    except Exception as error:  # noqa: BLE001 - one broken trajectory must not end the run
        result = ReplayResult()
        result.failures.append({"instance_id": trajectory["instance_id"], "error": repr(error)[:500]})
    finally:
        _remove_tree(parent)
    return result.to_json()


def _remove_tree(path: Path) -> None:
    def make_writable_and_retry(function: Any, name: str, _: Any) -> None:
        try:
            os.chmod(os.path.dirname(name), 0o700)
            os.chmod(name, 0o700)
            function(name)
        except OSError:
            pass

    shutil.rmtree(path, onerror=make_writable_and_retry)


# -- the command line ------------------------------------------------------------------------


def load_trajectories(path: Path, limit: int | None, repos: set[str] | None) -> list[dict[str, Any]]:
    """Trajectories of known projects, in corpus order, filtered by repository name."""
    chosen = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            trajectory = json.loads(line)
            repo = trajectory["task_repo"]
            if repo not in PROJECTS:
                continue
            if repos and repo not in repos and repo.split("/")[-1] not in repos:
                continue
            chosen.append(trajectory)
    if limit is not None:
        chosen = _spread(chosen, limit)
    return chosen


def _spread(trajectories: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Up to `limit` trajectories taken round-robin over repositories, so that a limit covers
    several projects rather than the first one in the file."""
    by_repo: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for trajectory in trajectories:
        by_repo[trajectory["task_repo"]].append(trajectory)
    queues = [collections.deque(v) for v in by_repo.values()]
    chosen: list[dict[str, Any]] = []
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.popleft())
    return chosen


def render_table(result: ReplayResult) -> str:
    counts = result.counts
    perfect = counts["perfect reusable"]
    share = f"{counts['reuse'] / perfect:.1%}" if perfect else "n/a"
    skipped = ", ".join(f"{reason} {n}" for reason, n in result.skipped.most_common()) or "none"
    by_repo = ", ".join(f"{repo.split('/')[-1]} {n}" for repo, n in result.per_repo.most_common())
    rows = [
        ("trajectories replayed", f"{result.trajectories} ({by_repo})"),
        ("commands replayed", f"{counts['commands']:,}"),
        ("skipped", f"{sum(result.skipped.values()):,} ({skipped})"),
        ("allow", f"{counts['allow']:,}"),
        ("reuse", f"{counts['reuse']:,}"),
        ("nudge", f"{counts['nudge']:,}"),
        ("stale reuses", str(len(result.stale))),
        ("classifier violations", str(len(result.violations))),
        ("oracle inconclusive (re-run timed out or truncated)", str(counts["oracle inconclusive"])),
        ("perfect-ledger reusable", f"{perfect:,}"),
        ("reuse share of perfect", share),
        ("trajectories that failed to set up", str(len(result.failures))),
        ("replay time (sum over trajectories)", f"{result.seconds / 60:.1f} min"),
    ]
    lines = ["| measure | value |", "|---|---:|"] + [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def render_missed(result: ReplayResult, top: int = 12) -> str:
    lines = ["| missed-reuse pattern | count | example |", "|---|---:|---|"]
    for pattern, n in result.missed.most_common(top):
        example = result.missed_examples.get(pattern, "").replace("\n", "\\n").replace("|", "\\|")[:90]
        shown = pattern.replace("|", "\\|")
        lines.append(f"| `{shown}` | {n} | `{example}` |")
    return "\n".join(lines)


def _sandbox_command(argv: list[str], writable: list[Path]) -> list[str]:
    """`argv` wrapped in private mount, PID and network namespaces with `/` read-only."""
    setup = (
        'mount -o remount,bind,ro / || exit 97; '
        'while [ "$1" != "--" ]; do mount --bind "$1" "$1" && mount -o remount,bind,rw "$1" || exit 97; shift; done; '
        'shift; ip link set lo up 2>/dev/null; exec "$@"'
    )
    return (
        ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--mount-proc", "--net",
         "bash", "-c", setup, "sandbox"]
        + [str(p) for p in writable]
        + ["--"]
        + argv
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None, help="at most N trajectories, spread over repositories")
    parser.add_argument("--repos", default="", help="comma-separated task repositories (owner/name or name)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where sdists are kept")
    parser.add_argument("--json", type=Path, default=None, help="write machine-readable results here")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per command")
    parser.add_argument("--jobs", type=int, default=1, help="trajectories replayed in parallel")
    parser.add_argument("--sandbox", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--budget", type=float, default=None, help="start no trajectory after this many minutes")
    args = parser.parse_args(argv)

    repos = {r.strip() for r in args.repos.split(",") if r.strip()} or None
    trajectories = load_trajectories(args.corpus, args.limit, repos)
    if not trajectories:
        print("no trajectories selected", file=sys.stderr)
        return 2
    unavailable = set()
    for repo in sorted({t["task_repo"] for t in trajectories}):
        try:
            sdist_path(args.cache, repo)  # downloads happen here, before the network is cut off
        except (subprocess.CalledProcessError, FileNotFoundError) as error:
            print(f"skipping {repo}: no sdist ({error})", file=sys.stderr)
            unavailable.add(repo)
    trajectories = [t for t in trajectories if t["task_repo"] not in unavailable]

    sandboxed = os.environ.get(SANDBOX_MARKER) == "1"
    want_sandbox = args.sandbox == "on" or (
        args.sandbox == "auto" and os.geteuid() == 0 and shutil.which("unshare") is not None
    )
    if want_sandbox and not sandboxed:
        writable = [Path(tempfile.gettempdir()), args.cache.resolve()]
        if args.json is not None:
            writable.append(args.json.resolve().parent)
        environment = dict(os.environ, **{SANDBOX_MARKER: "1"})
        inner = [sys.executable, str(Path(__file__).resolve())] + (argv if argv is not None else sys.argv[1:])
        return subprocess.run(_sandbox_command(inner, writable), env=environment).returncode

    total = ReplayResult()
    started = time.perf_counter()
    deadline = started + args.budget * 60 if args.budget else None
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs, mp_context=context, max_tasks_per_child=1) as pool:
        pending = collections.deque(trajectories)
        futures: dict[concurrent.futures.Future[dict[str, Any]], str] = {}

        def submit() -> None:
            # Keep only `jobs` trajectories in flight, so that the budget can stop new ones.
            while pending and len([f for f in futures if not f.done()]) < args.jobs:
                if deadline is not None and time.perf_counter() > deadline:
                    pending.clear()
                    return
                t = pending.popleft()
                futures[pool.submit(replay_trajectory, t, str(args.cache), args.timeout)] = t["instance_id"]

        submit()
        reported: set[concurrent.futures.Future[dict[str, Any]]] = set()
        while len(reported) < len(futures):
            done = next(concurrent.futures.as_completed([f for f in futures if f not in reported]))
            reported.add(done)
            one = ReplayResult.from_json(done.result())
            total.merge(one)
            submit()
            if args.json is not None:  # the running total, so an interrupted run still reports
                args.json.write_text(json.dumps(total.to_json(), indent=1) + "\n")
            print(
                f"{futures[done]}: {one.counts['commands']} commands, {one.counts['reuse']} reuse, "
                f"{one.counts['perfect reusable']} perfect, {len(one.stale)} stale, {one.seconds:.0f} s"
                + (f" FAILED {one.failures[0]['error']}" if one.failures else ""),
                flush=True,
            )
    wall = time.perf_counter() - started
    print()
    print(render_table(total))
    print(f"\nwall time: {wall / 60:.1f} min (sandbox: {'on' if sandboxed else 'off'}, jobs {args.jobs})\n")
    print(render_missed(total))
    for stale in total.stale:
        print(f"\nSTALE {stale['instance_id']} step {stale['step']}: {stale['command'][:200]}\n{stale['diff']}")
    for violation in total.violations:
        print(f"\nVIOLATION {violation['instance_id']} step {violation['step']}: {violation['command'][:200]} "
              f"changed {violation['changed']}")
    if total.failures:
        print(f"\nfailed to set up: {total.failures}")
    if args.json is not None:
        data = total.to_json()
        data["wall_seconds"] = wall
        data["sandboxed"] = sandboxed
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    return 1 if total.stale or total.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
