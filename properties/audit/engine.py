"""Replaying one trajectory through a Runtime and judging every step by the ground truth.

Theory of operation, per replayed step:

1. the step becomes a shell command in the copy (`filter.to_command`), or is skipped with its
   reason;
2. `Runtime.step` governs it with the deciding detector (the user's `--detector`, else the
   default), while the other detectors (`witnesses.Witnessed`) report on the same run;
3. the ground truth (`ledger_properties.ground_truth.look`, its own os.walk + lstat + sha256) looks
   at the tree; what `changed()` since the last look is owed by every detector, key by key (a
   directory whose listing alone changed is owed only as "something changed");
4. a Reuse is run again for real between two more looks: a different output or exit status
   is a **stale reuse** (kept with a diff), a changed tree a **classifier violation**, as is a
   read-only command that changed the tree when it ran;
5. the perfect ledger (`rereads.PerfectLedger`) judges whether the read was **redundant**:
   served verbatim or as a sub-range by an earlier read of unchanged content.

While a command's background job lives, a write can land after its step; owed keys then
accumulate until a step with no job around, as in the hunt's oracle.
"""

from __future__ import annotations

import difflib
import time
from pathlib import Path
from typing import Any, Callable

import attrs

from ledger_impl import Runtime, default_detector
from ledger_impl.detectors import RulesDetector
from ledger_impl.execution import run_command
from ledger_spec import Changes

from ..ground_truth import HashCache, Tree, changed, look
from ..ground_truth import owed_by_key as owed
from .filter import OutsideWrite, skip_reason, to_command
from .formats import Skipped, Trajectory
from .rereads import PerfectLedger
from .witnesses import Witnessed

DEFAULT = "default"
RULES = "rules"
DEFAULT_COMMAND_TIMEOUT = 20.0
DEFAULT_TRAJECTORY_TIMEOUT = 1800.0
OUTPUT_LIMIT = 4 * 1024 * 1024  # the Runtime's default, so a re-run sees what a step saw
BYTES_PER_TOKEN = 4  # the usual rough figure for English and code with BPE tokenizers
TIME_LIMIT = "trajectory time limit"


@attrs.frozen
class Settings:
    """How to replay: limits and the detector that decides (a MODULE:FACTORY spec, or None)."""

    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    trajectory_timeout: float = DEFAULT_TRAJECTORY_TIMEOUT
    detector: str | None = None
    detector_path: str | None = None
    skip_outside_writes: bool = False
    probe: bool = True  # the Runtime's probe (issue 19), as shipped; off judges the detector without it
    # Paths no step may write even under /tmp: the user's repository the copy was made from.
    protected: tuple[str, ...] = attrs.field(default=(), converter=tuple)


def detectors_for(settings: Settings) -> tuple[tuple[str, Any], list[tuple[str, Any]]]:
    """The deciding detector and the witnesses: the user's detector decides when given."""
    builtin: list[tuple[str, Any]] = [(DEFAULT, default_detector()), (RULES, RulesDetector())]
    if settings.detector is None:
        return builtin[0], builtin[1:]
    from ..replay import load_factory, make_detector

    factory = load_factory(settings.detector, settings.detector_path)
    return (settings.detector, make_detector(factory, settings.detector)), builtin


def output_diff(reused: str, real: str, limit: int = 60) -> str:
    lines = difflib.unified_diff(reused.splitlines(keepends=True), real.splitlines(keepends=True), "reused", "real", n=2)
    return "".join(line if line.endswith("\n") else line + "\n" for line in list(lines)[:limit])


class _Pending:
    """Changes owed to each detector while a background job may still write."""

    def __init__(self, labels: list[str]) -> None:
        self.labels = labels
        self._clear()

    def _clear(self) -> None:
        self.owed: set[str] = set()
        self.any: set[str] = set()
        self.reported: dict[str, set[str]] = {label: set() for label in self.labels}
        self.unknown: dict[str, bool] = {label: False for label in self.labels}

    def add(self, owed_keys: frozenset[str], changed_keys: frozenset[str], reports: dict[str, Changes]) -> None:
        self.owed |= owed_keys
        self.any |= changed_keys
        for label, report in reports.items():
            self.reported[label] |= report.paths
            self.unknown[label] = self.unknown[label] or report.unknown

    def settle(self) -> dict[str, list[str]]:
        """Each detector's missing keys (only for detectors that did not say "unknown")."""
        misses = {}
        for label, reported in self.reported.items():
            missing = self.owed - reported
            if self.any and not reported and not missing:
                missing = set(self.any)  # only listings changed, and nothing was reported
            if missing and not self.unknown[label]:
                misses[label] = sorted(missing)
        self._clear()
        return misses


def replay(
    trajectory: Trajectory,
    workspace: Path,
    settings: Settings,
    *,
    on_step: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Replay `trajectory` in `workspace` (a throwaway copy) and return its result record."""
    workspace = workspace.resolve()
    started = time.monotonic()
    decider, witnesses = detectors_for(settings)
    detector = Witnessed(decider, witnesses)
    result = _empty_result(trajectory, detector.labels)
    cache = HashCache()
    truth = look(workspace, cache)
    perfect = PerfectLedger()
    pending = _Pending(detector.labels)
    runtime = Runtime(workspace, detector, timeout=settings.command_timeout, output_limit=OUTPUT_LIMIT, probe=settings.probe)
    try:
        for item in trajectory.items:
            if on_step is not None:
                on_step(item.index)
            step = item.index + 1  # results number steps from 1, as every report does
            if time.monotonic() - started > settings.trajectory_timeout:
                result["status"] = "timed out"
                _skip(result, step, TIME_LIMIT)
                continue
            try:
                command = "" if isinstance(item, Skipped) else to_command(item, trajectory.recorded_root, workspace, settings.protected)
                reason = skip_reason(item, command, workspace, settings.protected)
            except OutsideWrite:
                if not settings.skip_outside_writes:
                    raise
                reason = "writes outside workspace"
            if reason is not None:
                _skip(result, step, reason)
                continue
            truth = _run_step(step, command, runtime, detector, truth, cache, perfect, pending, result)
    finally:
        runtime.stop_background()
        runtime.close()
    result["seconds"] = round(time.monotonic() - started, 3)
    return result


def _run_step(
    index: int, command: str, runtime: Runtime, detector: Witnessed, truth: Tree, cache: HashCache,
    perfect: PerfectLedger, pending: _Pending, result: dict[str, Any],
) -> Tree:
    workspace = runtime.root
    jobs_before = runtime.background_jobs
    step = runtime.step(command)
    writer_around = bool(jobs_before or runtime.background_jobs)
    now = look(workspace, cache)
    keys = changed(truth, now)
    reports = detector.take()
    pending.add(owed(truth, now, keys), keys, reports)
    unknown = [label for label, report in reports.items() if report.unknown]
    for label in unknown:
        result["unknown"][label] += 1
    category = step.command.category.value
    result["replayed"] += 1
    result["categories"][category] = result["categories"].get(category, 0) + 1
    result["verdicts"][step.verdict] += 1
    record: dict[str, Any] = {"step": index, "command": command[:300], "category": category, "verdict": step.verdict,
                              "bytes": len(step.output.encode()), "redundant": None, "misses": [], "stale": False,
                              "violation": False, "changed": len(keys), "unknown": unknown,
                              "exit": step.exit_code, "excerpt": excerpt(step.output)}
    output, exit_code, complete = step.output, step.exit_code, step.complete
    stale = False
    if step.verdict == "reuse":
        before = now
        real = run_command(command, workspace, runtime.timeout, OUTPUT_LIMIT)
        now = look(workspace, cache)
        rerun_changed = changed(before, now)
        if rerun_changed:
            record["violation"] = True
            result["violations"].append({"step": index, "command": command, "changed": sorted(rerun_changed)[:20]})
        if not real.complete:
            result["oracle_inconclusive"] += 1
        elif (real.output, real.exit_code) != (step.output, step.exit_code):
            stale = record["stale"] = True
            result["stale"].append({"step": index, "command": command, "reused_exit": step.exit_code,
                                    "real_exit": real.exit_code, "diff": output_diff(step.output, real.output)})
        output, exit_code, complete = real.output, real.exit_code, real.complete
        keys = keys | rerun_changed
    elif step.command.read_only and keys and not writer_around:
        record["violation"] = True
        result["violations"].append({"step": index, "command": command, "changed": sorted(keys)[:20]})
    if not writer_around:
        for label, missing in pending.settle().items():
            record["misses"].append(label)
            result["misses"][label].append({"step": index, "command": command[:300], "missing": missing[:20]})
    redundant = perfect.judge(step.command, output, exit_code) if complete else None
    perfect.advance(keys)
    if complete:
        perfect.observe(step.command, output, exit_code)
    size = len(output.encode())
    if redundant is not None:
        record["redundant"] = redundant
        result["redundant"][redundant] += 1
        result["redundant"]["bytes"] += size
    if step.verdict == "reuse" and not stale:
        result["reused"]["count"] += 1
        result["reused"]["bytes"] += size
    if redundant is not None or (step.verdict == "reuse" and not stale):
        result["perfect"] += 1
    result["timeline"].append(record)
    return now


EXCERPT_LINES, EXCERPT_CHARS = 6, 400


def excerpt(output: str) -> str:
    """The start of what the agent got back, as the report shows it: a few lines, a few hundred
    characters, with a marker when more was cut."""
    lines = output.splitlines(keepends=True)
    shown = "".join(lines[:EXCERPT_LINES])[:EXCERPT_CHARS]
    return shown + ("\n[...]" if len(shown) < len(output) else "")


def _skip(result: dict[str, Any], index: int, reason: str) -> None:
    result["skipped"][reason] = result["skipped"].get(reason, 0) + 1
    result["timeline"].append({"step": index, "category": "skipped", "reason": reason})


def _empty_result(trajectory: Trajectory, labels: list[str]) -> dict[str, Any]:
    return {
        "name": trajectory.name,
        "instance_id": trajectory.instance_id,
        "format": trajectory.format,
        "source": trajectory.source,
        "status": "done",
        "error": None,
        "steps": len(trajectory.items),
        "replayed": 0,
        "skipped": {},
        "categories": {},
        "verdicts": {"allow": 0, "reuse": 0, "nudge": 0},
        "redundant": {"verbatim": 0, "sub-range": 0, "bytes": 0},
        "reused": {"count": 0, "bytes": 0},
        "perfect": 0,
        "stale": [],
        "oracle_inconclusive": 0,
        "violations": [],
        "detectors": labels,
        "misses": {label: [] for label in labels},
        "unknown": {label: 0 for label in labels},
        "timeline": [],
        "seconds": 0.0,
    }
